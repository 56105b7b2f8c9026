/*
 * Connections of the server.  Each has a read buffer that holds at most
 * one partial frame between reads, and two output buffers used in turn:
 * replies are encoded into one while the other is being written, so a
 * busy connection costs no allocation per request.
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

#include "byzantine.h"
#include "log.h"
#include "record.h"
#include "wire.h"
#include "net.h"

#define READ_CHUNK	(64u * 1024)
#define RBUF_MAX	(4u + BFT_MAX_FRAME + READ_CHUNK)
/* Stop reading from a client whose replies pile up beyond this. */
#define WQ_HIGH		(8u << 20)
#define WQ_LOW		(WQ_HIGH / 2)
/* Buffers bigger than this are given back once drained. */
#define BUF_KEEP	(1u << 20)

union bft_stream {
	uv_handle_t handle;
	uv_stream_t stream;
	uv_tcp_t tcp;
	uv_pipe_t pipe;
};

struct conn {
	union bft_stream u;
	struct bft_net *net;
	struct conn *prev, *next;
	bool linked;		/* counted in nconns */
	char peer[80];
	uint8_t *rbuf;
	size_t rstart, rend, rcap;
	struct bft_buf out;	/* encoded replies not yet handed to libuv */
	struct bft_buf wbuf;	/* the replies of the write in flight */
	uv_write_t wreq;
	struct bft_byz_conn *byz;	/* test-only lies, or NULL */
	bool writing, reading, paused, hello_ok, closing, close_after_write;
};

struct listener {
	union bft_stream u;
	bool open;
};

struct bft_net {
	uv_loop_t *loop;
	struct bft_handler *h;
	struct bft_byz *byz;		/* --byzantine, or NULL */
	unsigned n, max_conns, nconns;
	struct listener tcp, unx;
	char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char where[BFT_HOST_LEN + sizeof(((struct sockaddr_un *)0)->sun_path)
	    + 32];
	struct conn *conns;
	uint64_t refused, unix_seq;
	bool shut;
	/* One request and one reply at a time: the loop is single-threaded. */
	struct bft_msg req, rep;
};

static void process(struct conn *c);

struct bft_net *
bft_net_new(uv_loop_t *loop, struct bft_handler *h, unsigned max_conns)
{
	struct bft_net *net = calloc(1, sizeof *net);

	if (net == NULL)
		return NULL;
	net->loop = loop;
	net->h = h;
	net->n = h->cfg->n;
	net->max_conns = max_conns ? max_conns : BFT_DEFAULT_MAX_CONNS;
	return net;
}

static size_t
queued(const struct conn *c)
{
	return c->out.len + (c->writing ? c->wbuf.len : 0);
}

static void
on_conn_closed(uv_handle_t *handle)
{
	struct conn *c = handle->data;

	if (c->linked) {
		if (c->prev)
			c->prev->next = c->next;
		else
			c->net->conns = c->next;
		if (c->next)
			c->next->prev = c->prev;
		c->net->nconns--;
	}
	free(c->rbuf);
	bft_buf_free(&c->out);
	bft_buf_free(&c->wbuf);
	free(c);
}

static void
conn_close(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	bft_byz_conn_close(c->byz);
	c->byz = NULL;
	/* libuv cancels a write in flight; its callback runs before ours. */
	uv_close(&c->u.handle, on_conn_closed);
}

static void
conn_fail(struct conn *c, const char *reason)
{
	bft_log("conn %s: closing: %s", c->peer, reason);
	conn_close(c);
}

static void
on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
	struct conn *c = handle->data;
	size_t want;
	uint8_t *p;

	(void)suggested;
	if (c->rstart == c->rend) {
		c->rstart = c->rend = 0;
		/* A big frame is rare; do not keep its buffer per client. */
		if (c->rcap > 4 * READ_CHUNK) {
			free(c->rbuf);
			c->rbuf = NULL;
			c->rcap = 0;
		}
	}
	if (c->rcap - c->rend < READ_CHUNK && c->rstart > 0) {
		memmove(c->rbuf, c->rbuf + c->rstart, c->rend - c->rstart);
		c->rend -= c->rstart;
		c->rstart = 0;
	}
	if (c->rcap - c->rend < READ_CHUNK && c->rcap < RBUF_MAX) {
		want = c->rcap * 2;
		if (want < c->rend + READ_CHUNK)
			want = c->rend + READ_CHUNK;
		if (want < 2 * READ_CHUNK)
			want = 2 * READ_CHUNK;
		if (want > RBUF_MAX)
			want = RBUF_MAX;
		p = realloc(c->rbuf, want);
		if (p != NULL) {
			c->rbuf = p;
			c->rcap = want;
		}
	}
	/* A zero-length buffer makes libuv report UV_ENOBUFS to on_read. */
	*buf = uv_buf_init(c->rbuf ? (char *)c->rbuf + c->rend : NULL,
	    (unsigned)(c->rcap - c->rend));
}

static void
on_written(uv_write_t *req, int status)
{
	struct conn *c = req->data;
	char why[128];

	c->writing = false;
	if (c->closing)
		return;
	if (status < 0) {
		snprintf(why, sizeof why, "write: %s", uv_strerror(status));
		conn_fail(c, why);
		return;
	}
	c->wbuf.len = 0;
	if (c->wbuf.cap > BUF_KEEP)
		bft_buf_free(&c->wbuf);
	if (c->paused && queued(c) <= WQ_LOW) {
		c->paused = false;
		bft_debug("conn %s: replies drained, reading again", c->peer);
	}
	/* Runs the frames left buffered by a pause, then flushes. */
	process(c);
}

/* Hands the encoded replies to libuv unless a write is in flight. */
static void
flush(struct conn *c)
{
	struct bft_buf tmp;
	uv_buf_t b;
	int err;

	if (c->closing || c->writing)
		return;
	if (c->out.len == 0) {
		if (c->close_after_write)
			conn_close(c);
		return;
	}
	tmp = c->wbuf;
	c->wbuf = c->out;
	c->out = tmp;
	c->out.len = 0;
	b = uv_buf_init((char *)c->wbuf.data, (unsigned)c->wbuf.len);
	c->wreq.data = c;
	err = uv_write(&c->wreq, &c->u.stream, &b, 1, on_written);
	if (err < 0) {
		c->wbuf.len = 0;
		bft_log("conn %s: closing: write: %s", c->peer,
		    uv_strerror(err));
		conn_close(c);
		return;
	}
	c->writing = true;
}

static void
stop_reading(struct conn *c)
{
	if (c->reading) {
		uv_read_stop(&c->u.stream);
		c->reading = false;
	}
}

static void
on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = stream->data;
	char why[128];

	(void)buf;
	if (nread == 0 || c->closing)
		return;
	if (nread < 0) {
		if (nread == UV_EOF) {
			/*
			 * A client may shut down its side right after its last
			 * request; it still gets the replies already due.
			 */
			bft_debug("conn %s: closed by peer", c->peer);
			c->close_after_write = true;
			stop_reading(c);
			flush(c);
		} else {
			snprintf(why, sizeof why, "read: %s",
			    uv_strerror((int)nread));
			conn_fail(c, why);
		}
		return;
	}
	c->rend += (size_t)nread;
	process(c);
}

/* Handles the decoded request in net->req; false if c was closed. */
static bool
dispatch(struct conn *c)
{
	struct bft_net *net = c->net;
	char why[128];
	int rc;

	if (net->req.type & BFT_ACK) {
		conn_fail(c, "a reply sent to the server");
		return false;
	}
	if (!c->hello_ok && net->req.type != BFT_HELLO) {
		snprintf(why, sizeof why, "%s before HELLO",
		    bft_msg_type_str(net->req.type));
		conn_fail(c, why);
		return false;
	}
	rc = bft_handle(net->h, c->peer, &net->req, &net->rep);
	if (net->req.type == BFT_HELLO && net->rep.status == BFT_OK &&
	    !c->hello_ok) {
		c->hello_ok = true;
		bft_debug("conn %s: HELLO ok", c->peer);
	}
	if (c->byz != NULL && rc == 0 &&
	    bft_byz_reply(c->byz, &net->req, &net->rep) != BFT_BYZ_SEND)
		return true;
	if (bft_wire_encode(&net->rep, net->n, &c->out) < 0) {
		snprintf(why, sizeof why, "cannot encode %s reply",
		    bft_msg_type_str(net->rep.type));
		conn_fail(c, why);
		return false;
	}
	if (rc) {
		bft_log("conn %s: closing after the reply: %s", c->peer,
		    bft_status_str(net->rep.status));
		c->close_after_write = true;
		stop_reading(c);
	}
	return true;
}

/*
 * Handles every whole frame in the read buffer, in order, until the
 * replies waiting to be written pass WQ_HIGH; the rest stay buffered
 * and reading stops until the client has taken its replies.
 */
static void
process(struct conn *c)
{
	struct bft_net *net = c->net;
	const char *why;
	uint32_t blen;
	int r;

	while (!c->closing && !c->close_after_write) {
		if (!c->paused && queued(c) > WQ_HIGH) {
			bft_debug("conn %s: %zu reply bytes queued, pausing "
			    "reads", c->peer, queued(c));
			c->paused = true;
			stop_reading(c);
		}
		if (c->paused)
			break;
		if (c->rend - c->rstart < 4)
			break;
		r = bft_wire_frame(c->rbuf + c->rstart, c->rend - c->rstart,
		    &blen);
		if (r == 1)
			break;
		if (r < 0) {
			conn_fail(c, "frame length beyond the limit");
			return;
		}
		bft_record_frame(c->rbuf + c->rstart + 4, blen);
		if (bft_wire_decode(c->rbuf + c->rstart + 4, blen, net->n,
		    &net->req, &why) < 0) {
			char msg[160];

			snprintf(msg, sizeof msg, "malformed frame: %s", why);
			conn_fail(c, msg);
			return;
		}
		c->rstart += 4 + (size_t)blen;
		if (!dispatch(c))
			return;
	}
	flush(c);
	if (!c->closing && !c->paused && !c->close_after_write &&
	    !c->reading) {
		if (uv_read_start(&c->u.stream, on_alloc, on_read) == 0)
			c->reading = true;
		else
			conn_fail(c, "cannot start reading");
	}
}

static void
peer_name(struct conn *c, bool is_unix)
{
	struct sockaddr_storage ss;
	char ip[INET6_ADDRSTRLEN];
	int len = sizeof ss;

	if (is_unix) {
		snprintf(c->peer, sizeof c->peer, "unix#%llu",
		    (unsigned long long)++c->net->unix_seq);
		return;
	}
	if (uv_tcp_getpeername(&c->u.tcp, (struct sockaddr *)&ss, &len) < 0) {
		snprintf(c->peer, sizeof c->peer, "?");
		return;
	}
	if (ss.ss_family == AF_INET6) {
		uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof ip);
		snprintf(c->peer, sizeof c->peer, "[%s]:%u", ip,
		    ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
	} else {
		uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
		snprintf(c->peer, sizeof c->peer, "%s:%u", ip,
		    ntohs(((struct sockaddr_in *)&ss)->sin_port));
	}
}

static void
on_connection(uv_stream_t *server, int status)
{
	struct bft_net *net = server->data;
	bool is_unix = server->type == UV_NAMED_PIPE;
	struct conn *c;
	int err;

	if (status < 0) {
		bft_log("accept: %s", uv_strerror(status));
		return;
	}
	c = calloc(1, sizeof *c);
	if (c == NULL) {
		bft_log("accept: out of memory");
		return;
	}
	c->net = net;
	err = is_unix ? uv_pipe_init(net->loop, &c->u.pipe, 0) :
	    uv_tcp_init(net->loop, &c->u.tcp);
	if (err < 0) {
		bft_log("accept: %s", uv_strerror(err));
		free(c);
		return;
	}
	c->u.handle.data = c;
	err = uv_accept(server, &c->u.stream);
	if (err < 0) {
		bft_log("accept: %s", uv_strerror(err));
		conn_close(c);
		return;
	}
	peer_name(c, is_unix);
	/*
	 * Accepting and closing at once, rather than not accepting, keeps
	 * the listen backlog from filling with clients that wait forever.
	 */
	if (net->nconns >= net->max_conns) {
		net->refused++;
		bft_log("conn %s: refused: %u connections open (--max-conns), "
		    "%llu refused so far", c->peer, net->nconns,
		    (unsigned long long)net->refused);
		conn_close(c);
		return;
	}
	if (net->byz != NULL &&
	    (c->byz = bft_byz_conn_new(net->byz, &c->u.stream)) == NULL) {
		bft_log("conn %s: refused: out of memory", c->peer);
		conn_close(c);
		return;
	}
	if (!is_unix)
		uv_tcp_nodelay(&c->u.tcp, 1);
	c->linked = true;
	c->next = net->conns;
	if (net->conns)
		net->conns->prev = c;
	net->conns = c;
	net->nconns++;
	bft_debug("conn %s: connected (%u open)", c->peer, net->nconns);
	process(c);
}

static void
append_where(struct bft_net *net, const char *what)
{
	size_t len = strlen(net->where);

	snprintf(net->where + len, sizeof net->where - len, "%s%s",
	    len ? " and " : "", what);
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

void
bft_net_set_byzantine(struct bft_net *net, struct bft_byz *byz)
{
	net->byz = byz;
}

const char *
bft_net_where(const struct bft_net *net)
{
	return net->where;
}

void
bft_net_shutdown(struct bft_net *net)
{
	struct conn *c;

	if (net->shut)
		return;
	net->shut = true;
	if (net->tcp.open)
		uv_close(&net->tcp.u.handle, NULL);
	if (net->unx.open)
		uv_close(&net->unx.u.handle, NULL);
	if (net->unix_path[0])
		unlink(net->unix_path);
	/* Closing unlinks nothing until the callbacks, so this walk is safe. */
	for (c = net->conns; c != NULL; c = c->next)
		conn_close(c);
}

void
bft_net_free(struct bft_net *net)
{
	free(net);
}
