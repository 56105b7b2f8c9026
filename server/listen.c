/*
 * The server's listeners: TCP (IPv4 or IPv6) and a unix socket, and
 * the accepting of their connections.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "net.h"
#include "net_int.h"

static void
append_where(struct bft_net *net, const char *what)
{
	size_t len = strlen(net->where);

	snprintf(net->where + len, sizeof net->where - len, "%s%s",
	    len ? " and " : "", what);
}

/* Names c for the log ("ip:port"), and its source address for preauth.h. */
static void
peer_name(struct conn *c, bool is_unix)
{
	struct sockaddr_storage ss;
	char *ip = c->addr;
	int len = sizeof ss;

	if (is_unix) {
		snprintf(c->addr, sizeof c->addr, "unix");
		snprintf(c->peer, sizeof c->peer, "unix#%llu",
		    (unsigned long long)++c->net->unix_seq);
		return;
	}
	if (uv_tcp_getpeername(&c->u.tcp, (struct sockaddr *)&ss, &len) < 0) {
		snprintf(c->addr, sizeof c->addr, "?");
		snprintf(c->peer, sizeof c->peer, "?");
		return;
	}
	if (ss.ss_family == AF_INET6) {
		uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof c->addr);
		snprintf(c->peer, sizeof c->peer, "[%s]:%u", ip,
		    ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
	} else {
		uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof c->addr);
		snprintf(c->peer, sizeof c->peer, "%s:%u", ip,
		    ntohs(((struct sockaddr_in *)&ss)->sin_port));
	}
}

/*
 * Every connection is accepted: closing a connection the server has no
 * room for, rather than not accepting it, keeps the listen backlog from
 * filling with clients that wait forever.
 */
static void
on_connection(uv_stream_t *server, int status)
{
	struct bft_net *net = server->data;
	bool is_unix = server->type == UV_NAMED_PIPE;
	struct conn *c;
	int err;

	if (status < 0) {
		bft_preauth_note(net, NULL, BFT_PA_REFUSED, "accept: %s",
		    uv_strerror(status));
		return;
	}
	c = calloc(1, sizeof *c);
	if (c == NULL) {
		bft_preauth_note(net, NULL, BFT_PA_REFUSED,
		    "accept: out of memory");
		return;
	}
	c->net = net;
	err = is_unix ? uv_pipe_init(net->loop, &c->u.pipe, 0) :
	    uv_tcp_init(net->loop, &c->u.tcp);
	if (err < 0) {
		bft_preauth_note(net, NULL, BFT_PA_REFUSED, "accept: %s",
		    uv_strerror(err));
		free(c);
		return;
	}
	c->u.handle.data = c;
	err = uv_accept(server, &c->u.stream);
	if (err < 0) {
		bft_preauth_note(net, NULL, BFT_PA_REFUSED, "accept: %s",
		    uv_strerror(err));
		bft_net_conn_close(c);
		return;
	}
	peer_name(c, is_unix);
	bft_net_conn_open(c, is_unix);
}

int
bft_net_listen_tcp(struct bft_net *net, const char *host, uint16_t port,
    char *err, size_t errlen)
{
	struct addrinfo hints, *ai = NULL;
	struct sockaddr_storage ss;
	char portstr[8], ip[INET6_ADDRSTRLEN], addr[INET6_ADDRSTRLEN + 16];
	int len = sizeof ss, e;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(portstr, sizeof portstr, "%u", port);
	e = getaddrinfo(host[0] ? host : NULL, portstr, &hints, &ai);
	if (e != 0) {
		snprintf(err, errlen, "cannot resolve %s: %s", host,
		    gai_strerror(e));
		return -1;
	}
	e = uv_tcp_init(net->loop, &net->tcp.u.tcp);
	if (e == 0) {
		net->tcp.open = true;
		net->tcp.u.handle.data = net;
		e = uv_tcp_bind(&net->tcp.u.tcp, ai->ai_addr, 0);
	}
	freeaddrinfo(ai);
	if (e == 0)
		e = uv_listen(&net->tcp.u.stream, SOMAXCONN, on_connection);
	if (e == 0)
		e = uv_tcp_getsockname(&net->tcp.u.tcp, (struct sockaddr *)&ss,
		    &len);
	if (e < 0) {
		snprintf(err, errlen, "cannot listen on %s:%u: %s", host, port,
		    uv_strerror(e));
		return -1;
	}
	if (ss.ss_family == AF_INET6) {
		uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof ip);
		snprintf(addr, sizeof addr, "[%s]:%u", ip,
		    ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
	} else {
		uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
		snprintf(addr, sizeof addr, "%s:%u", ip,
		    ntohs(((struct sockaddr_in *)&ss)->sin_port));
	}
	append_where(net, addr);
	return 0;
}

/*
 * True when path is a socket nobody accepts on: the leftover of a server
 * that was killed.  A live one is left alone, so a second server on the
 * same path fails instead of stealing it.
 */
static bool
stale_socket(const char *path)
{
	struct sockaddr_un sun;
	struct stat sb;
	bool stale;
	int fd;

	if (stat(path, &sb) < 0 || !S_ISSOCK(sb.st_mode))
		return false;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path);
	stale = connect(fd, (struct sockaddr *)&sun, sizeof sun) < 0 &&
	    errno == ECONNREFUSED;
	close(fd);
	return stale;
}

int
bft_net_listen_unix(struct bft_net *net, const char *path, char *err,
    size_t errlen)
{
	char what[sizeof net->unix_path + 8];
	int e;

	if (strlen(path) >= sizeof net->unix_path) {
		snprintf(err, errlen, "unix socket path too long: %s", path);
		return -1;
	}
	if (stale_socket(path))
		unlink(path);
	e = uv_pipe_init(net->loop, &net->unx.u.pipe, 0);
	if (e == 0) {
		net->unx.open = true;
		net->unx.u.handle.data = net;
		e = uv_pipe_bind(&net->unx.u.pipe, path);
	}
	if (e == 0) {
		/* From here on the file is ours to remove at shutdown. */
		snprintf(net->unix_path, sizeof net->unix_path, "%s", path);
		e = uv_listen(&net->unx.u.stream, SOMAXCONN, on_connection);
	}
	if (e < 0) {
		snprintf(err, errlen, "cannot listen on unix socket %s: %s",
		    path, uv_strerror(e));
		return -1;
	}
	snprintf(what, sizeof what, "unix:%s", path);
	append_where(net, what);
	return 0;
}

