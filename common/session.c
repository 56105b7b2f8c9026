/* Blocking sessions with one server (session.h). */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "session.h"

void
bft_hello_fill(const struct bft_config *cfg, unsigned idx, struct bft_msg *m)
{
	memset(m, 0, sizeof *m);
	m->type = BFT_HELLO;
	memcpy(m->cluster_id, cfg->cluster_id, BFT_CLUSTER_ID_LEN);
	m->hello_n = cfg->n;
	m->hello_t = cfg->t;
	m->block_size = cfg->block_size;
	m->nblocks = cfg->nblocks;
	m->server_index = idx;
}

/*
 * send() or recv() of exactly len bytes: 0, or a negative errno
 * (-ECONNRESET at EOF, -ETIMEDOUT when the socket's timeout passed).
 */
static int
io_all(int fd, uint8_t *p, size_t len, bool out)
{
	while (len > 0) {
		ssize_t r = out ? send(fd, p, len, MSG_NOSIGNAL) :
		    recv(fd, p, len, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return -ECONNRESET;
		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ?
			    -ETIMEDOUT : -errno;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

void
bft_session_close(struct bft_session *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	bft_chan_clear(&s->chan);
	free(s->rbuf);
	s->rbuf = NULL;
}

/* A connected socket, or a negative errno with why. */
static int
dial(const struct bft_server_addr *a, unsigned timeout_ms, const char **why)
{
	struct timeval tv = { .tv_sec = timeout_ms / 1000,
	    .tv_usec = (timeout_ms % 1000) * 1000 };
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char port[16];
	int fd, one = 1;

	snprintf(port, sizeof port, "%u", a->port);
	if (getaddrinfo(a->host, port, &hints, &ai) != 0) {
		*why = "cannot resolve the server's host";
		return -EHOSTUNREACH;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fd = -errno;
	} else {
		/* A send timeout bounds connect() too. */
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
			int e = errno == EINPROGRESS ? ETIMEDOUT : errno;

			close(fd);
			fd = -e;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0)
		*why = "cannot connect";
	return fd;
}

int
bft_session_open(struct bft_session *s, const struct bft_config *cfg,
    const struct bft_client_key *key, unsigned idx, unsigned timeout_ms,
    bool hello, struct bft_session_fail *f)
{
	uint8_t ch[BFT_CHAN_CHELLO_LEN], sh[BFT_CHAN_SHELLO_LEN];
	uint8_t fin[BFT_CHAN_FINISH_LEN];
	struct bft_chan_client hs;
	struct bft_msg req, *rep = NULL;
	int r, st;

	memset(s, 0, sizeof *s);
	memset(f, 0, sizeof *f);
	s->fd = -1;
	s->idx = idx;
	s->n = cfg->n;
	s->next_id = 1;
	if ((s->rbuf = malloc(BFT_MAX_FRAME)) == NULL) {
		r = -ENOMEM;
		f->why = "out of memory";
		goto out_close;
	}
	if ((r = dial(&cfg->servers[idx], timeout_ms, &f->why)) < 0)
		goto out_close;
	s->fd = r;
	f->step = BFT_SESS_CHANNEL;
	bft_chan_client_hello(&hs, &key->chan, cfg->server_pk[idx],
	    cfg->cluster_id, idx, (enum bft_chan_mode)cfg->channel, ch);
	if (bft_config_pk_next(cfg, idx) != NULL)
		bft_chan_client_next(&hs, cfg->server_pk_next[idx]);
	if ((r = io_all(s->fd, ch, sizeof ch, true)) != 0 ||
	    (r = io_all(s->fd, sh, sizeof sh, false)) != 0) {
		f->why = "no server hello (closed or timed out)";
		goto out_close;
	}
	st = bft_chan_client_finish(&hs, sh, &s->chan, fin, &f->why);
	if (st != 0) {
		/* A refusal's reason; a reply that is none has only why. */
		f->status = st > 0 ? st : 0;
		r = st > 0 ? -ECONNREFUSED : st;
		goto out_close;
	}
	if ((r = io_all(s->fd, fin, sizeof fin, true)) != 0) {
		f->why = "cannot send the client finish";
		goto out_close;
	}
	if (!hello)
		return 0;
	f->step = BFT_SESS_HELLO;
	if ((rep = malloc(sizeof *rep)) == NULL) {
		r = -ENOMEM;
		f->why = "out of memory";
		goto out_close;
	}
	bft_hello_fill(cfg, idx, &req);
	st = bft_session_call(s, &req, rep, &f->why);
	free(rep);
	if (st < 0)
		return st;		/* closed by the call */
	if (st != BFT_OK) {
		r = -ECONNREFUSED;
		f->status = st;
		f->why = "HELLO refused";
		goto out_close;
	}
	return 0;

out_close:
	bft_session_close(s);
	return r;
}

long
bft_session_seal(struct bft_session *s, struct bft_msg *m,
    struct bft_buf *out)
{
	size_t off = out->len;
	int r;

	m->id = s->next_id++;
	if ((r = bft_wire_encode(m, s->n, out)) != 0 ||
	    (r = bft_chan_seal(&s->chan, out, off)) != 0) {
		out->len = off;
		return r;
	}
	return (long)off;
}

int
bft_session_send_raw(struct bft_session *s, const uint8_t *p, size_t len)
{
	return io_all(s->fd, (uint8_t *)p, len, true);
}

static uint32_t
get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

int
bft_session_recv(struct bft_session *s, struct bft_msg *m, uint8_t *raw,
    size_t *rawlen, const char **why)
{
	uint8_t pre[4];
	uint32_t len;
	int r;

	if ((r = io_all(s->fd, pre, 4, false)) != 0) {
		*why = "no reply (closed or timed out)";
		return r;
	}
	len = get_be32(pre);
	if (len > BFT_MAX_FRAME) {
		*why = "reply frame too long";
		return -EMSGSIZE;
	}
	if ((r = io_all(s->fd, s->rbuf, len, false)) != 0) {
		*why = "reply frame cut short";
		return r;
	}
	if (raw != NULL) {
		memcpy(raw, pre, 4);
		memcpy(raw + 4, s->rbuf, len);
		*rawlen = 4 + (size_t)len;
	}
	if ((r = bft_chan_open(&s->chan, pre, s->rbuf, &len)) != 0) {
		*why = "a reply failed authentication";
		return r;
	}
	return bft_wire_decode(s->rbuf, len, s->n, m, why);
}

int
bft_session_call(struct bft_session *s, struct bft_msg *req,
    struct bft_msg *rep, const char **why)
{
	struct bft_buf out = { 0 };
	long off;
	int r = 0;

	if (s->fd < 0) {
		*why = "not connected";
		return -ENOTCONN;
	}
	if ((off = bft_session_seal(s, req, &out)) < 0) {
		*why = "cannot encode the request";
		r = (int)off;
	} else if ((r = bft_session_send_raw(s, out.data, out.len)) != 0) {
		*why = "send failed";
	}
	bft_buf_free(&out);
	while (r == 0) {
		if ((r = bft_session_recv(s, rep, NULL, NULL, why)) != 0)
			break;
		if (rep->id == req->id && rep->type == (req->type | BFT_ACK))
			return rep->status;
	}
	bft_session_close(s);
	return r;
}

void
bft_session_fail_str(const struct bft_session_fail *f, char *out, size_t len)
{
	switch (f->step) {
	case BFT_SESS_CONNECT:
		snprintf(out, len, "%s", f->why);
		break;
	case BFT_SESS_CHANNEL:
		snprintf(out, len, "channel: %s", f->why);
		break;
	case BFT_SESS_HELLO:
		snprintf(out, len, "HELLO: %s%s%s", f->why,
		    f->status ? ": " : "", f->status ?
		    bft_status_str(f->status) : "");
		break;
	}
}
