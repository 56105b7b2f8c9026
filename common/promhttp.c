/* A minimal HTTP endpoint for Prometheus scrapes (promhttp.h). */
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config.h"
#include "promhttp.h"

struct hconn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	struct bft_promhttp *m;
	struct hconn *prev, *next;
	unsigned open;			/* handles not yet closed */
	bool closing, responded;
	bool shut;			/* the response is out and shut down */
	bool eof;			/* the client has shut down its side */
	uv_write_t wreq;
	uv_shutdown_t sreq;
	struct bft_prom resp;
	size_t len;
	char req[BFT_PROMHTTP_MAX_REQ];
};

struct bft_promhttp {
	uv_loop_t *loop;
	uv_tcp_t listener;
	bft_promhttp_fill_fn *fill;
	void *arg;
	struct hconn *conns;
	unsigned nconns;
	unsigned live;			/* the listener and every connection */
	bool stopping;
	struct bft_promhttp_stats stats;
	char where[INET6_ADDRSTRLEN + 16];
};

static void
release(struct bft_promhttp *m)
{
	if (--m->live == 0 && m->stopping)
		free(m);
}

static void
on_conn_closed(uv_handle_t *hd)
{
	struct hconn *c = hd->data;
	struct bft_promhttp *m = c->m;

	if (--c->open > 0)
		return;
	bft_prom_free(&c->resp);
	free(c);
	release(m);
}

static void
conn_close(struct hconn *c)
{
	struct bft_promhttp *m = c->m;

	if (c->closing)
		return;
	c->closing = true;
	if (c->prev)
		c->prev->next = c->next;
	else
		m->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	m->nconns--;
	uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
	uv_close((uv_handle_t *)&c->timer, on_conn_closed);
}

static void
on_shutdown(uv_shutdown_t *req, int status)
{
	struct hconn *c = req->data;

	/* Reading goes on until the client closes too, or the deadline. */
	c->shut = true;
	if (status < 0 || c->eof)
		conn_close(c);
}

static void
on_written(uv_write_t *req, int status)
{
	struct hconn *c = req->data;

	if (c->closing)
		return;
	c->sreq.data = c;
	if (status < 0 || uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp,
	    on_shutdown) < 0)
		conn_close(c);
}

static void
respond(struct hconn *c, int code, const char *reason, const char *ctype,
    const struct bft_prom *body, bool head)
{
	struct bft_prom *r = &c->resp;
	uv_buf_t b;

	c->responded = true;
	c->len = 0;
	bft_prom_printf(r, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n", code, reason,
	    ctype, body->len);
	if (!head && body->len > 0)
		bft_prom_printf(r, "%.*s", (int)body->len, body->buf);
	if (r->oom) {
		conn_close(c);
		return;
	}
	b = uv_buf_init(r->buf, (unsigned)r->len);
	c->wreq.data = c;
	if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_written) < 0)
		conn_close(c);
}

static void
respond_error(struct hconn *c, int code, const char *reason)
{
	struct bft_prom body = { 0 };

	c->m->stats.bad_requests++;
	bft_prom_printf(&body, "%d %s\n", code, reason);
	respond(c, code, reason, "text/plain; charset=utf-8", &body, false);
	bft_prom_free(&body);
}

/* The head of a request is in c->req[0..end): answers it. */
static void
handle(struct hconn *c, size_t end)
{
	char *line = c->req, *method, *target, *version, *extra, *save;
	struct bft_prom body = { 0 };
	size_t plen;
	bool head;

	c->req[end] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	method = strtok_r(line, " ", &save);
	target = method ? strtok_r(NULL, " ", &save) : NULL;
	version = target ? strtok_r(NULL, " ", &save) : NULL;
	extra = version ? strtok_r(NULL, " ", &save) : NULL;
	if (version == NULL || extra != NULL ||
	    strncmp(version, "HTTP/1.", 7) != 0) {
		respond_error(c, 400, "Bad Request");
		return;
	}
	head = strcmp(method, "HEAD") == 0;
	if (!head && strcmp(method, "GET") != 0) {
		respond_error(c, 405, "Method Not Allowed");
		return;
	}
	plen = strcspn(target, "?");
	if (plen != 8 || strncmp(target, "/metrics", 8) != 0) {
		respond_error(c, 404, "Not Found");
		return;
	}
	c->m->fill(c->m->arg, &body);
	if (body.oom) {
		bft_prom_free(&body);
		respond_error(c, 500, "Internal Server Error");
		return;
	}
	c->m->stats.scrapes++;
	respond(c, 200, "OK", BFT_PROM_CONTENT_TYPE, &body, head);
	bft_prom_free(&body);
}

/* Where the head of the request ends (after its blank line), or 0. */
static size_t
head_end(const char *s, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (s[i] == '\n' && s[i + 1] == '\n')
			return i + 2;
		if (i + 3 < len && memcmp(s + i, "\r\n\r\n", 4) == 0)
			return i + 4;
	}
	return 0;
}

static void
on_alloc(uv_handle_t *hd, size_t hint, uv_buf_t *buf)
{
	struct hconn *c = hd->data;

	(void)hint;
	/* Once answered, whatever else comes is read into the void. */
	if (c->responded)
		c->len = 0;
	/* One byte stays free for handle()'s terminating NUL. */
	*buf = uv_buf_init(c->req + c->len,
	    (unsigned)(sizeof c->req - 1 - c->len));
}

static void
on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct hconn *c = s->data;
	size_t end;

	(void)buf;
	if (c->closing || nread == 0)
		return;
	if (nread < 0) {
		/*
		 * A client may shut down its side right after its request:
		 * the response still goes out before the close.
		 */
		if (nread == UV_EOF && c->responded && !c->shut) {
			c->eof = true;
			uv_read_stop(s);
			return;
		}
		conn_close(c);
		return;
	}
	if (c->responded)
		return;
	c->len += (size_t)nread;
	if ((end = head_end(c->req, c->len)) > 0)
		handle(c, end);
	else if (c->len >= sizeof c->req - 1)
		respond_error(c, 431, "Request Header Fields Too Large");
}

static void
on_deadline(uv_timer_t *t)
{
	struct hconn *c = t->data;

	c->m->stats.timeouts++;
	conn_close(c);
}

static void
on_refused_closed(uv_handle_t *hd)
{
	struct bft_promhttp *m = hd->data;

	free(hd);
	release(m);
}

/* Takes a connection off the backlog only to close it. */
static void
refuse(struct bft_promhttp *m, uv_stream_t *server)
{
	uv_tcp_t *t = malloc(sizeof *t);

	m->stats.refused++;
	if (t == NULL)
		return;
	if (uv_tcp_init(m->loop, t) < 0) {
		free(t);
		return;
	}
	m->live++;
	t->data = m;
	(void)uv_accept(server, (uv_stream_t *)t);
	uv_close((uv_handle_t *)t, on_refused_closed);
}

static void
on_connection(uv_stream_t *server, int status)
{
	struct bft_promhttp *m = server->data;
	struct hconn *c;

	if (status < 0 || m->stopping)
		return;
	if (m->nconns >= BFT_PROMHTTP_MAX_CONNS ||
	    (c = calloc(1, sizeof *c)) == NULL) {
		refuse(m, server);
		return;
	}
	c->m = m;
	if (uv_tcp_init(m->loop, &c->tcp) < 0) {
		free(c);
		refuse(m, server);
		return;
	}
	uv_timer_init(m->loop, &c->timer);
	c->tcp.data = c->timer.data = c;
	c->open = 2;
	m->live++;
	m->nconns++;
	c->next = m->conns;
	if (m->conns)
		m->conns->prev = c;
	m->conns = c;
	if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0 ||
	    uv_timer_start(&c->timer, on_deadline, BFT_PROMHTTP_TIMEOUT_MS,
	    0) < 0 ||
	    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
		conn_close(c);
}

static void
on_listener_closed(uv_handle_t *hd)
{
	release(hd->data);
}

int
bft_promhttp_start(uv_loop_t *loop, const char *addr,
    bft_promhttp_fill_fn *fill, void *arg, struct bft_promhttp **mp,
    char *err, size_t errlen)
{
	struct addrinfo hints, *ai = NULL;
	struct sockaddr_storage ss;
	char host[256], portstr[8], ip[INET6_ADDRSTRLEN];
	struct bft_promhttp *m;
	uint16_t port;
	int len = sizeof ss, e;

	*mp = NULL;
	if (bft_parse_hostport(addr, host, sizeof host, &port) < 0) {
		snprintf(err, errlen, "not HOST:PORT: %s", addr);
		return -EINVAL;
	}
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(portstr, sizeof portstr, "%u", port);
	e = getaddrinfo(host[0] ? host : NULL, portstr, &hints, &ai);
	if (e != 0) {
		snprintf(err, errlen, "cannot resolve %s: %s", host,
		    gai_strerror(e));
		return -EHOSTUNREACH;
	}
	if ((m = calloc(1, sizeof *m)) == NULL) {
		freeaddrinfo(ai);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	m->loop = loop;
	m->fill = fill;
	m->arg = arg;
	m->live = 1;
	m->listener.data = m;
	e = uv_tcp_init(loop, &m->listener);
	if (e < 0) {
		freeaddrinfo(ai);
		free(m);
		snprintf(err, errlen, "cannot listen on %s: %s", addr,
		    uv_strerror(e));
		return e;		/* libuv's errors are negative errnos */
	}
	e = uv_tcp_bind(&m->listener, ai->ai_addr, 0);
	freeaddrinfo(ai);
	if (e == 0)
		e = uv_listen((uv_stream_t *)&m->listener, 16, on_connection);
	if (e == 0)
		e = uv_tcp_getsockname(&m->listener, (struct sockaddr *)&ss,
		    &len);
	if (e < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", addr,
		    uv_strerror(e));
		bft_promhttp_stop(m);
		return e;
	}
	if (ss.ss_family == AF_INET6) {
		uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof ip);
		snprintf(m->where, sizeof m->where, "[%s]:%u", ip,
		    ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
	} else {
		uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
		snprintf(m->where, sizeof m->where, "%s:%u", ip,
		    ntohs(((struct sockaddr_in *)&ss)->sin_port));
	}
	*mp = m;
	return 0;
}

const char *
bft_promhttp_where(const struct bft_promhttp *m)
{
	return m->where;
}

void
bft_promhttp_stats(const struct bft_promhttp *m,
    struct bft_promhttp_stats *out)
{
	*out = m->stats;
}

void
bft_promhttp_stop(struct bft_promhttp *m)
{
	if (m == NULL || m->stopping)
		return;
	m->stopping = true;
	while (m->conns != NULL)
		conn_close(m->conns);
	uv_close((uv_handle_t *)&m->listener, on_listener_closed);
}
