/*
 * Connections of the server.  Each has a read buffer that holds at most
 * one partial frame between reads, and two output buffers used in turn:
 * replies are encoded into one while the other is being written, so a
 * busy connection costs no allocation per request.
 */
#include <errno.h>
#include <stddef.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "wire.h"
#include "net.h"
#include "net_int.h"
#include "test_hooks.h"

#define process bft_net_process
#define send_reply bft_net_send_reply

static void on_tick(uv_timer_t *t);

struct bft_net *
bft_net_new(uv_loop_t *loop, struct bft_handler *h,
    const struct bft_server_key *key, const struct bft_net_limits *lim)
{
	struct bft_net *net = calloc(1, sizeof *net);

	if (net == NULL)
		return NULL;
	net->loop = loop;
	net->h = h;
	net->key = key;
	net->n = h->cfg->n;
	net->lim = *lim;
	if (net->lim.max_conns == 0)
		net->lim.max_conns = BFT_DEFAULT_MAX_CONNS;
	if (net->lim.max_inflight == 0)
		net->lim.max_inflight = BFT_DEFAULT_MAX_INFLIGHT;
	if (net->lim.handshake_ms == 0)
		net->lim.handshake_ms = BFT_DEFAULT_HANDSHAKE_MS;
	net->max_conns = net->lim.max_conns;
	bft_preauth_init(&net->pa, lim->max_preauth, lim->max_preauth_per_addr);
	bft_quota_init(&net->quotas, h->cfg, key->index,
	    lim->max_client_conns, lim->max_client_stores,
	    lim->store_window_ms);
	uv_timer_init(loop, &net->tick);
	net->tick.data = net;
	net->tick_open = true;
	uv_timer_start(&net->tick, on_tick, 1000, 1000);
	/* Deadlines alone must not keep a stopping server's loop alive. */
	uv_unref((uv_handle_t *)&net->tick);
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
	}
	if (c->slot)
		c->net->nconns--;
	free(c->rbuf);
	bft_buf_free(&c->out);
	bft_buf_free(&c->wbuf);
	bft_chan_clear(&c->chan);
	bft_quota_put(&c->net->quotas, c->client);
	free(c);
}

void
bft_net_conn_close(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	bft_preauth_remove(c);
	bft_test_conn_close(c);
	/* libuv cancels a write in flight; its callback runs before ours. */
	uv_close(&c->u.handle, on_conn_closed);
}

#define conn_close bft_net_conn_close

void
bft_net_conn_fail(struct conn *c, const char *reason)
{
	/* Anyone can cause these before the handshake: not one line each. */
	if (c->hs != HS_DONE)
		bft_preauth_note(c->net, c->addr, BFT_PA_FAILED,
		    "conn %s: closing: %s", c->peer, reason);
	else
		bft_log("conn %s: closing: %s", c->peer, reason);
	conn_close(c);
}

#define conn_fail bft_net_conn_fail

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
	c->nw = 0;
	if (c->wbuf.cap > BUF_KEEP)
		bft_buf_free(&c->wbuf);
	if (c->paused && queued(c) <= WQ_LOW &&
	    c->nout < c->net->lim.max_inflight / 2) {
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
	char why[128];
	uv_buf_t b;
	size_t off;
	int err, n;

	if (c->closing || c->writing)
		return;
	if (c->out.len == 0) {
		if (c->close_after_write)
			conn_close(c);
		return;
	}
	/*
	 * Replies that fit in the socket's buffer are written here: a write
	 * request would cost an epoll_ctl in the next poll for its POLLOUT.
	 * A paused connection takes the request path, whose completion
	 * reads again and runs the frames left buffered.
	 */
	b = uv_buf_init((char *)c->out.data, (unsigned)c->out.len);
	n = c->paused ? UV_EAGAIN : uv_try_write(&c->u.stream, &b, 1);
	if (n < 0 && n != UV_EAGAIN) {
		snprintf(why, sizeof why, "write: %s", uv_strerror(n));
		conn_fail(c, why);
		return;
	}
	off = n > 0 ? (size_t)n : 0;
	c->net->bytes_out += off;
	if (off == c->out.len) {
		c->out.len = 0;
		c->nout = 0;
		if (c->out.cap > BUF_KEEP)
			bft_buf_free(&c->out);
		if (c->close_after_write)
			conn_close(c);
		return;
	}
	tmp = c->wbuf;
	c->wbuf = c->out;
	c->out = tmp;
	c->out.len = 0;
	c->nw = c->nout;
	c->nout = 0;
	b = uv_buf_init((char *)c->wbuf.data + off,
	    (unsigned)(c->wbuf.len - off));
	c->wreq.data = c;
	err = uv_write(&c->wreq, &c->u.stream, &b, 1, on_written);
	if (err < 0) {
		c->wbuf.len = 0;
		snprintf(why, sizeof why, "write: %s", uv_strerror(err));
		conn_fail(c, why);
		return;
	}
	c->writing = true;
	c->net->bytes_out += b.len;
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
			if (c->rend > c->rstart && c->hs != HS_DONE)
				bft_preauth_note(c->net, c->addr, BFT_PA_FAILED,
				    "conn %s: closed by peer in the middle of a "
				    "handshake (%zu bytes unread)", c->peer,
				    c->rend - c->rstart);
			else if (c->rend > c->rstart)
				bft_log("conn %s: closed by peer in the middle "
				    "of a frame (%zu bytes unread)", c->peer,
				    c->rend - c->rstart);
			else
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
	c->net->bytes_in += (size_t)nread;
	process(c);
}

/* A refusal of net->req without asking the handler. */
static void
refuse(struct conn *c, int status)
{
	struct bft_msg *rep = &c->net->rep;

	memset(rep, 0, offsetof(struct bft_msg, ts));
	rep->type = c->net->req.type | BFT_ACK;
	rep->id = c->net->req.id;
	rep->block = c->net->req.block;
	rep->status = status;
}

/*
 * Seals the frame at off in c->out, whose last tail_len bytes are still
 * at tail (bft_wire_encode_head); false (and c closed) on failure.
 */
static bool
queue_frame(struct conn *c, size_t off, const uint8_t *tail, size_t tail_len,
    const char *what)
{
	char why[128];

	if (bft_chan_seal_tail(&c->chan, &c->out, off, tail, tail_len) < 0) {
		c->out.len = off;
		snprintf(why, sizeof why, "cannot seal %s", what);
		conn_fail(c, why);
		return false;
	}
	c->nout++;
	return true;
}

/* Encodes and seals net->rep into c->out; false if c was closed. */
bool
send_reply(struct conn *c)
{
	struct bft_net *net = c->net;
	size_t off = c->out.len, tail_len;
	const uint8_t *tail;
	char why[128];

	/* A fragment goes from the store's buffer straight into the frame. */
	if (bft_wire_encode_head(&net->rep, net->n, &c->out, &tail,
	    &tail_len) < 0) {
		snprintf(why, sizeof why, "cannot encode %s reply",
		    bft_msg_type_str(net->rep.type));
		conn_fail(c, why);
		return false;
	}
	return queue_frame(c, off, tail, tail_len,
	    bft_msg_type_str(net->rep.type));
}

/*
 * A reply the test server held back (test_hooks.h) goes out now, sealed
 * in its turn like any other.  Nothing calls it in the production build,
 * where the compiler drops it.
 */
static void
send_held(void *ctx, const uint8_t *frame, size_t len)
{
	struct conn *c = ctx;
	size_t off = c->out.len;

	if (c->closing)
		return;
	if (bft_buf_append(&c->out, frame, len) < 0) {
		conn_fail(c, "out of memory");
		return;
	}
	if (queue_frame(c, off, NULL, 0, "a held reply"))
		flush(c);
}

/* Handles the decoded request in net->req; false if c was closed. */
static bool
dispatch(struct conn *c)
{
	struct bft_net *net = c->net;
	char why[128];
	uint64_t t0;
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
	if (!bft_role_permits(c->client->role, net->req.type)) {
		refuse(c, BFT_EPERM);
		if (bft_log_sampled(++net->eperm))
			bft_warn("conn %s: %s client %s sent %s: refused (%llu "
			    "so far)", c->peer, bft_role_str(c->client->role),
			    c->client->name, bft_msg_type_str(net->req.type),
			    (unsigned long long)net->eperm);
		return send_reply(c);
	}
	if (net->req.type == BFT_FLUSH)
		return bft_net_flush(c);
	if (net->req.type == BFT_STORE && !bft_quota_admit_store(
	    &net->quotas, c->client, net->h->st, uv_now(net->loop))) {
		refuse(c, BFT_EBUSY);
		if (bft_log_sampled(++net->elimit))
			bft_warn("conn %s: client %s has %u STOREs waiting "
			    "above lc (--max-client-stores): refused (%llu so "
			    "far)",
			    c->peer, c->client->name, net->quotas.max_stores,
			    (unsigned long long)net->elimit);
		return send_reply(c);
	}
	if (net->req.type >= BFT_CLOCK && net->req.type <= BFT_REPAIR)
		atomic_fetch_add_explicit(&net->h->io_requests, 1,
		    memory_order_relaxed);
	t0 = uv_hrtime();
	rc = bft_handle(net->h, c->peer, &net->req, &net->rep);
	bft_prom_observe(&net->handle_ns[net->req.type], uv_hrtime() - t0);
	/* Release 0.2.0 takes only the STATUS_ACK it knows. */
	if (net->req.type == BFT_STATUS && c->chan.peer_level == 0) {
		net->rep.info.release = 0;
		net->rep.info.level = 0;
		net->rep.info.finalized = 0;
	}
	if (net->req.type == BFT_STORE && net->rep.status == BFT_OK)
		bft_quota_note_store(&net->quotas, c->client,
		    net->req.block, &net->req.ts, uv_now(net->loop));
	if (net->req.type == BFT_HELLO && net->rep.status == BFT_OK &&
	    !c->hello_ok) {
		c->hello_ok = true;
		bft_debug("conn %s: HELLO ok", c->peer);
	}
	if (rc == 0 && bft_test_reply_taken(c))
		return true;
	if (!send_reply(c))
		return false;
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
void
process(struct conn *c)
{
	struct bft_net *net = c->net;
	const char *why;
	uint32_t blen, flen;
	int r;

	while (!c->closing && !c->close_after_write) {
		if (!c->paused && (queued(c) > WQ_HIGH ||
		    c->nout + c->nw >= net->lim.max_inflight)) {
			bft_debug("conn %s: %zu reply bytes, %u replies queued, "
			    "pausing reads", c->peer, queued(c),
			    c->nout + c->nw);
			c->paused = true;
			stop_reading(c);
		}
		if (c->paused || c->flush_wait)
			break;
		if (c->hs != HS_DONE) {
			r = bft_handshake_step(c);
			if (r == 1)
				break;
			if (r < 0)
				return;
			continue;
		}
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
		flen = blen;
		if (bft_chan_open(&c->chan, c->rbuf + c->rstart,
		    c->rbuf + c->rstart + 4, &blen) < 0) {
			conn_fail(c, "a frame failed authentication (altered, "
			    "replayed, reordered or dropped in transit)");
			return;
		}
		bft_test_frame(c->rbuf + c->rstart + 4, blen);
		if (bft_wire_decode(c->rbuf + c->rstart + 4, blen, net->n,
		    &net->req, &why) < 0) {
			char msg[160];

			snprintf(msg, sizeof msg, "malformed frame: %s", why);
			conn_fail(c, msg);
			return;
		}
		c->rstart += 4 + (size_t)flen;
		if (!dispatch(c))
			return;
	}
	flush(c);
	if (c->flush_wait)
		stop_reading(c);
	else if (!c->closing && !c->paused && !c->close_after_write &&
	    !c->reading) {
		if (uv_read_start(&c->u.stream, on_alloc, on_read) == 0)
			c->reading = true;
		else
			conn_fail(c, "cannot start reading");
	}
}

/*
 * Takes in c, accepted and named by listen.c: it joins the pool of
 * unauthenticated connections (preauth.h) and its handshake starts.
 */
void
bft_net_conn_open(struct conn *c, bool is_unix)
{
	struct bft_net *net = c->net;

	c->accepted_ms = uv_now(net->loop);
	if (bft_test_conn_open(c, send_held) < 0) {
		bft_preauth_note(net, c->addr, BFT_PA_REFUSED,
		    "conn %s: refused: out of memory", c->peer);
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
	bft_preauth_add(net, c);
	bft_debug("conn %s: connected (%u authenticated, %u not yet)",
	    c->peer, net->nconns, net->pa.count);
	process(c);
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
	if (net->tick_open) {
		net->tick_open = false;
		uv_close((uv_handle_t *)&net->tick, NULL);
	}
	/* Closing unlinks nothing until the callbacks, so this walk is safe. */
	for (c = net->conns; c != NULL; c = c->next)
		conn_close(c);
}

void
bft_net_free(struct bft_net *net)
{
	bft_quota_fini(&net->quotas);
	free(net);
}

/* Closes the connections that missed the handshake deadline. */
static void
on_tick(uv_timer_t *t)
{
	struct bft_net *net = t->data;
	uint64_t now = uv_now(net->loop);
	struct conn *c;
	char why[96];

	bft_preauth_tick(net, now);
	/* Authenticated, and still no HELLO. */
	for (c = net->conns; c != NULL; c = c->next) {
		if (c->closing || c->hello_ok || c->hs != HS_DONE ||
		    now - c->accepted_ms < net->lim.handshake_ms)
			continue;
		snprintf(why, sizeof why, "no handshake and HELLO within %llu "
		    "ms", (unsigned long long)net->lim.handshake_ms);
		conn_fail(c, why);
	}
}

void
bft_net_reload(struct bft_net *net)
{
	struct conn *c;

	bft_quota_reload(&net->quotas);
	for (c = net->conns; c != NULL; c = c->next) {
		if (c->closing || c->client == NULL || c->client->listed)
			continue;
		bft_log("conn %s: client %s was revoked", c->peer,
		    c->client->name);
		conn_close(c);
	}
}
