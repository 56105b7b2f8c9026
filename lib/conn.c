/*
 * Connections to the servers: connect and reconnect with backoff, the
 * HELLO exchange, framing of what arrives, and one write per connection
 * per loop iteration for what goes out.  What replies mean is the round
 * machinery's business (engine.c).
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "conn_int.h"
#include "session.h"

/*
 * Frames for a server are gathered in c->out while the loop runs
 * callbacks, and written with one write per connection per loop
 * iteration (bftblk__conn_flush_all, a check handle): one syscall and
 * one wakeup of the server for every batch of requests instead of every
 * request.
 */
void
bftblk__conn_send(struct conn *c, const struct bft_msg *m)
{
	size_t off = c->out.len, tail_len;
	const uint8_t *tail;
	int r;

	/*
	 * A ready connection's sender thread seals what it is handed
	 * (conn_tx.c); without senders, and for the HELLO, the loop seals
	 * it here, a STORE's fragment from op->frags without a copy.
	 */
	if (c->state == C_READY && c->tx.on)
		r = bft_wire_encode(m, c->cl->n, &c->out);
	else if ((r = bft_wire_encode_head(m, c->cl->n, &c->out, &tail,
	    &tail_len)) == 0)
		r = bft_chan_seal_tail(&c->chan, &c->out, off, tail, tail_len);
	if (r != 0) {
		/* Only ENOMEM gets here: the round times out or others answer. */
		c->out.len = off;
		bftblk__eng_log(c->cl, BFTBLK_LOG_ERROR, "cannot encode %s",
		    bft_msg_type_str(m->type));
		return;
	}
	c->cl->lp->dirty |= 1u << c->idx;
	c->last_tx_ms = uv_now(&c->cl->lp->loop);
	c->sent_ns[c->nsent % LAT_RING] = uv_hrtime();
	if (c->nsent++ == c->nrcvd)
		c->wait_ms = c->last_tx_ms;
}

void
bftblk__conn_set_state(struct conn *c, enum conn_state st)
{
	c->state = st;
	c->state_ms = uv_now(&c->cl->lp->loop);
	if (st == C_HANDSHAKE)
		c->nsent = c->nrcvd = 0;
}

/* Handshake messages go out in the clear, ahead of any frame. */
static void
conn_send_raw(struct conn *c, const uint8_t *p, size_t len)
{
	if (bft_buf_append(&c->out, p, len) != 0) {
		bftblk__conn_close(c, "out of memory");
		return;
	}
	c->cl->lp->dirty |= 1u << c->idx;
}

static void conn_flush(struct conn *c);

static void
on_write(uv_write_t *req, int status)
{
	struct conn *c = req->data;

	c->writing = false;
	c->wbuf.len = 0;
	/* A failed write shows up as a closed connection too. */
	if (status == 0 && c->out.len > 0)
		conn_flush(c);
}

static void
conn_flush(struct conn *c)
{
	uv_buf_t b;
	size_t off;
	int n;

	if (c->writing || c->out.len == 0 || (c->state != C_HANDSHAKE &&
	    c->state != C_HELLO && c->state != C_READY))
		return;
	if (c->state == C_READY && c->tx.on) {
		uv_os_fd_t fd;

		if (uv_fileno((uv_handle_t *)&c->tcp, &fd) != 0 ||
		    bftblk__conn_tx_hand(c, fd) != 0)
			bftblk__conn_close(c, "cannot hand frames to the "
			    "sender thread");
		return;
	}
	/*
	 * Most batches fit in the socket's buffer: written here, they need
	 * no write request, whose completion costs an epoll_ctl in the next
	 * poll to drop the POLLOUT it never needed.
	 */
	b = uv_buf_init((char *)c->out.data, (unsigned)c->out.len);
	n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
	if (n == (int)c->out.len) {
		c->out.len = 0;
		return;
	}
	if (n < 0 && n != UV_EAGAIN) {
		bftblk__conn_close(c, "write failed");
		return;
	}
	off = n > 0 ? (size_t)n : 0;
	bft_buf_swap(&c->wbuf, &c->out);
	c->out.len = 0;
	b = uv_buf_init((char *)c->wbuf.data + off,
	    (unsigned)(c->wbuf.len - off));
	c->wreq.data = c;
	if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write) != 0) {
		c->wbuf.len = 0;
		bftblk__conn_close(c, "write failed");
		return;
	}
	c->writing = true;
}

void
bftblk__conn_flush_all(uv_check_t *h)
{
	struct engine_loop *lp = h->data;
	uint32_t dirty = lp->dirty;

	lp->dirty = 0;
	for (unsigned i = 0; dirty != 0; i++, dirty >>= 1)
		if (dirty & 1)
			conn_flush(&lp->conns[i]);
}

static void
on_hello_ack(struct conn *c, const struct bft_msg *m)
{
	if (m->type != (BFT_HELLO | BFT_ACK) || m->status != BFT_OK) {
		bftblk__eng_log(c->cl, BFTBLK_LOG_ERROR, "server %u refused "
		    "us: %s (is it a server of this cluster?)", c->idx,
		    bft_status_str(m->status));
		c->refused = true;
		bftblk__conn_close(c, "HELLO refused");
		return;
	}
	bftblk__conn_set_state(c, C_READY);
	atomic_store(&c->cl->stats.server[c->idx].connected, true);
	STAT_ADD(c->cl, server[c->idx].connects, 1);
	c->backoff_ms = 0;
	c->refused = false;
	if (c->warned)
		bftblk__eng_log(c->cl, BFTBLK_LOG_WARN, "server %u: connected "
		    "again", c->idx);
	c->warned = false;
	bftblk__engine_conn_ready(c);
}

static void on_closed(uv_handle_t *h);

void
bftblk__conn_close(struct conn *c, const char *why)
{
	size_t unsent;
	int err;

	if (c->state == C_CLOSING || c->state == C_IDLE)
		return;
	/*
	 * The engine's teardown closes every handle without going through
	 * here; a connect still pending then fails with UV_ECANCELED, and a
	 * second uv_close would abort the process.
	 */
	if (uv_is_closing((uv_handle_t *)&c->tcp)) {
		bftblk__conn_set_state(c, C_CLOSING);
		return;
	}
	/* The sender lets go of the socket and the channel first. */
	err = bftblk__conn_tx_quiesce(c, &unsent);
	bftblk__engine_conn_lost(c);
	c->out.len = 0;		/* lost with the connection, resent later */
	if (!c->warned)
		bftblk__eng_log(c->cl, BFTBLK_LOG_WARN, "server %u: connection "
		    "lost: %s%s", c->idx, err ? "send: " : "",
		    err ? strerror(err) : why);
	if (unsent > 0)
		bftblk__eng_log(c->cl, BFTBLK_LOG_WARN, "server %u: %.1f MiB "
		    "not yet sent dropped with the connection (requests go "
		    "again once it is back)", c->idx,
		    (double)unsent / (1 << 20));
	c->warned = true;
	bftblk__conn_set_state(c, C_CLOSING);
	bft_chan_clear(&c->chan);
	uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void
on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct conn *c = h->data;

	(void)suggested;
	if (c->rcap - c->rlen < 65536 && c->rcap < 4 + BFT_MAX_FRAME + 65536) {
		size_t ncap = c->rcap ? c->rcap * 2 : RBUF_INITIAL;
		uint8_t *nb = realloc(c->rbuf, ncap);

		if (nb != NULL) {
			c->rbuf = nb;
			c->rcap = ncap;
		}
	}
	*buf = uv_buf_init((char *)c->rbuf + c->rlen,
	    (unsigned)(c->rcap - c->rlen));
}

static int on_server_hello(struct conn *c);

static void
on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	size_t off = 0;

	(void)buf;
	if (nread < 0) {
		bftblk__conn_close(c, uv_strerror((int)nread));
		return;
	}
	c->rlen += (size_t)nread;
	if (c->state == C_HANDSHAKE) {
		if (c->rlen < BFT_CHAN_SHELLO_LEN)
			return;
		if (on_server_hello(c) != 0)
			return;
		off = BFT_CHAN_SHELLO_LEN;
	}
	while (c->state == C_HELLO || c->state == C_READY) {
		/* Large: not on the stack.  Per thread: a process may run
		 * several engines (one per volume handle), each its loop. */
		static _Thread_local struct bft_msg m;
		const char *why = NULL;
		uint32_t blen, flen;
		int r = bft_wire_frame(c->rbuf + off, c->rlen - off, &blen);

		if (r == 1)
			break;
		if (r < 0) {
			bftblk__conn_close(c, "oversized frame");
			return;
		}
		flen = blen;
		if (bft_chan_open(&c->chan, c->rbuf + off, c->rbuf + off + 4,
		    &blen) != 0) {
			bftblk__eng_log(c->cl, BFTBLK_LOG_ERROR, "server %u: a "
			    "frame failed authentication (altered, replayed or "
			    "reordered); reconnecting", c->idx);
			bftblk__conn_close(c, "frame failed authentication");
			return;
		}
		if (bft_wire_decode(c->rbuf + off + 4, blen, c->cl->n, &m,
		    &why) != 0) {
			bftblk__eng_log(c->cl, BFTBLK_LOG_ERROR, "server %u "
			    "sent a malformed frame (%s); reconnecting", c->idx,
			    why);
			bftblk__conn_close(c, why);
			return;
		}
		off += 4 + (size_t)flen;
		/* Any frame shows the link alive; the rest wait from now. */
		if (c->nrcvd < c->nsent && c->nsent - c->nrcvd <= LAT_RING &&
		    c->state == C_READY)
			bftblk__engine_note_latency(c->cl, c->idx, uv_hrtime() -
			    c->sent_ns[c->nrcvd % LAT_RING]);
		if (c->nrcvd < c->nsent && ++c->nrcvd < c->nsent)
			c->wait_ms = uv_now(&c->cl->lp->loop);
		if (c->state == C_HELLO)
			on_hello_ack(c, &m);
		else
			bftblk__engine_dispatch(c, &m);
	}
	if (off > 0 && c->state != C_CLOSING && c->state != C_IDLE) {
		memmove(c->rbuf, c->rbuf + off, c->rlen - off);
		c->rlen -= off;
	}
}

/*
 * The server proved its key: send our finish and, right behind it, the
 * HELLO that checks the cluster's geometry.  Returns 0, or -1 when the
 * connection was closed.
 */
static int
on_server_hello(struct conn *c)
{
	const struct bft_config *cfg = c->cl->p.cfg;
	uint8_t fin[BFT_CHAN_FINISH_LEN];
	const char *why;
	struct bft_msg m;
	int r;

	r = bft_chan_client_finish(&c->hs, c->rbuf, &c->chan, fin, &why);
	if (r != 0) {
		bftblk__eng_log(c->cl, BFTBLK_LOG_ERROR, "server %u: channel "
		    "refused: %s", c->idx, why);
		/* A refusal is deliberate; retrying fast only floods logs. */
		c->refused = true;
		bftblk__conn_close(c, why);
		return -1;
	}
	conn_send_raw(c, fin, sizeof fin);
	bftblk__conn_set_state(c, C_HELLO);
	bft_hello_fill(cfg, c->idx, &m);
	bftblk__conn_send(c, &m);
	return 0;
}

static void
on_connect(uv_connect_t *req, int status)
{
	struct conn *c = req->data;
	const struct bft_engine *cl = c->cl;
	uint8_t ch[BFT_CHAN_CHELLO_LEN];

	if (c->state != C_CONNECTING)
		return;
	if (status != 0) {
		bftblk__conn_close(c, uv_strerror(status));
		return;
	}
	uv_tcp_nodelay(&c->tcp, 1);
	c->rlen = 0;
	bftblk__conn_set_state(c, C_HANDSHAKE);
	bft_chan_client_hello(&c->hs, &cl->p.key->chan,
	    cl->p.cfg->server_pk[c->idx], cl->p.cfg->cluster_id, c->idx,
	    (enum bft_chan_mode)cl->p.cfg->channel, ch);
	if (bft_config_pk_next(cl->p.cfg, c->idx) != NULL)
		bft_chan_client_next(&c->hs, cl->p.cfg->server_pk_next[c->idx]);
	conn_send_raw(c, ch, sizeof ch);
	uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void
on_retry(uv_timer_t *t)
{
	bftblk__conn_connect(t->data);
}

static void
on_closed(uv_handle_t *h)
{
	struct conn *c = h->data;
	struct engine_loop *lp = c->cl->lp;

	bftblk__conn_set_state(c, C_IDLE);
	if (lp->stopping)
		return;
	STAT_ADD(c->cl, reconnects, 1);
	/* Back off to a second: a restarted server is back within that. */
	c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : 50;
	if (c->backoff_ms > 1000)
		c->backoff_ms = 1000;
	uv_timer_start(&c->retry, on_retry, c->refused ? 5000 : c->backoff_ms,
	    0);
}

void
bftblk__conn_connect(struct conn *c)
{
	struct engine_loop *lp = c->cl->lp;

	if (lp->stopping || c->state != C_IDLE)
		return;
	uv_tcp_init(&lp->loop, &c->tcp);
	c->tcp.data = c;
	c->connect.data = c;
	bftblk__conn_set_state(c, C_CONNECTING);
	if (uv_tcp_connect(&c->connect, &c->tcp,
	    (const struct sockaddr *)&c->addr, on_connect) != 0)
		bftblk__conn_close(c, "connect failed");
}

int
bftblk__conn_resolve(struct bft_engine *cl, const struct bft_server_addr *a,
    struct sockaddr_storage *out)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	char port[8];
	int r;

	snprintf(port, sizeof port, "%u", a->port);
	r = getaddrinfo(a->host, port, &hints, &res);
	if (r != 0) {
		bftblk__eng_log(cl, BFTBLK_LOG_ERROR, "cannot resolve %s: %s",
		    a->host, gai_strerror(r));
		return -1;
	}
	memcpy(out, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}
