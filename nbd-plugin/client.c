/*
 * The event loop thread: connections to the servers, request ids, the
 * operation table, timeouts and the submission queue.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>
#include <nbdkit-plugin.h>

#include "crypto.h"
#include "rounds.h"
#include "wire.h"

#define MAX_OPS		1024	/* operations in their rounds at once */
#define TICK_MS		50
#define RBUF_INITIAL	(256u * 1024)

enum conn_state { C_IDLE, C_CONNECTING, C_HELLO, C_READY, C_CLOSING };

struct conn {
	struct bft_client *cl;
	unsigned idx;
	enum conn_state state;
	uv_tcp_t tcp;
	uv_connect_t connect;
	uv_timer_t retry;
	unsigned backoff_ms;
	bool warned;			/* logged this outage already */
	bool refused;			/* HELLO refused: retry slowly */
	struct sockaddr_storage addr;
	uint8_t *rbuf;
	size_t rlen, rcap;
	struct bft_buf out;		/* frames gathered this iteration */
	struct bft_buf wbuf;		/* frames being written */
	uv_write_t wreq;
	bool writing;
};

struct client_loop {
	uv_loop_t loop;
	uv_async_t wake;
	uv_timer_t tick;
	pthread_t thread;
	struct conn conns[BFT_MAX_N];

	pthread_mutex_t qlock;
	struct op *qhead, *qtail;	/* submitted, not yet taken */
	bool stopping;

	struct op *slots[MAX_OPS];
	uint32_t nactive;
	struct op *waithead, *waittail;	/* taken, waiting for a slot */
	uv_check_t flush;
	uint32_t dirty;			/* connections with frames in out */
	uint64_t next_gen;
};

static void conn_connect(struct conn *c);
static void conn_close(struct conn *c, const char *why);

/*
 * Frames for a server are gathered in c->out while the loop runs
 * callbacks, and written with one write per connection per loop
 * iteration (flush_all, a check handle): one syscall and one wakeup of
 * the server for every batch of requests instead of every request.
 */
static void
conn_send(struct conn *c, const struct bft_msg *m)
{
	if (bft_wire_encode(m, c->cl->n, &c->out) != 0) {
		/* Only ENOMEM gets here: the round times out or others answer. */
		nbdkit_error("cannot encode %s", bft_msg_type_str(m->type));
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
	struct bft_buf tmp;
	uv_buf_t b;

	if (c->writing || c->out.len == 0 ||
	    (c->state != C_HELLO && c->state != C_READY))
		return;
	tmp = c->wbuf;
	c->wbuf = c->out;
	c->out = tmp;
	c->out.len = 0;
	b = uv_buf_init((char *)c->wbuf.data, (unsigned)c->wbuf.len);
	c->wreq.data = c;
	if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write) != 0) {
		c->wbuf.len = 0;
		conn_close(c, "write failed");
		return;
	}
	c->writing = true;
}

static void
flush_all(uv_check_t *h)
{
	struct client_loop *lp = h->data;
	uint32_t dirty = lp->dirty;

	lp->dirty = 0;
	for (unsigned i = 0; dirty != 0; i++, dirty >>= 1)
		if (dirty & 1)
			conn_flush(&lp->conns[i]);
}

static void
send_round(struct op *op, unsigned i)
{
	struct bft_msg m;

	memset(&m, 0, offsetof(struct bft_msg, cands));
	m.ncands = 0;
	m.type = (uint8_t)op->phase;
	m.id = (uint64_t)op->slot << 32 | op->gen;
	m.block = op->block;
	if (op->kind == OP_WRITE)
		write_build(op, i, &m);
	else if (op->kind == OP_READ)
		read_build(op, i, &m);
	op->sent |= 1u << i;
	conn_send(&op->cl->lp->conns[i], &m);
}

void
round_start(struct op *op, enum op_phase ph)
{
	struct client_loop *lp = op->cl->lp;

	op->phase = ph;
	op->gen = (uint32_t)++lp->next_gen;
	op->sent = op->replied = op->ok = op->failed = 0;
	op->fail_status = 0;
	op->deadline_ms = uv_now(&lp->loop) + op->cl->p.timeout_ms;
	for (unsigned i = 0; i < op->cl->n; i++)
		if (lp->conns[i].state == C_READY)
			send_round(op, i);
}

static void
batch_signal(struct op_batch *b)
{
	pthread_mutex_lock(&b->lock);
	if (--b->pending == 0)
		pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

static void start_op(struct op *op);

void
op_done(struct op *op, int err, const char *why)
{
	struct client_loop *lp = op->cl->lp;
	struct op *next;

	op->err = err;
	op->why = why;
	/*
	 * A write that failed after CLOCK may have completed at a few
	 * servers.  Reusing its (num, wid) would put two values under one
	 * timestamp, so this writer takes a new id.
	 */
	if (err && op->kind == OP_WRITE && op->phase != PH_CLOCK)
		rotate_writer_id(op->cl);
	lp->slots[op->slot] = NULL;
	lp->nactive--;
	batch_signal(op->batch);	/* op may be freed from here on */

	/* A slot is free: admit the oldest waiting operation. */
	if ((next = lp->waithead) != NULL) {
		lp->waithead = next->next;
		if (lp->waithead == NULL)
			lp->waittail = NULL;
		start_op(next);
	}
}

void
rotate_writer_id(struct bft_client *cl)
{
	bft_random(&cl->writer_id, sizeof cl->writer_id);
	cl->writer_id |= 1;	/* zero marks c0 */
}

static int
status_errno(int status)
{
	switch (status) {
	case BFT_EAUTH:		return EPERM;
	case BFT_ENOSPC:	return ENOSPC;
	case BFT_ERANGE:	return EINVAL;
	default:		return EIO;
	}
}

bool
round_note_error(struct op *op, unsigned i, int status)
{
	unsigned n = op->cl->n, t = op->cl->t;

	op->failed |= 1u << i;
	op->fail_status = status;
	if (n - popcount32(op->failed) >= n - t)
		return false;
	op_done(op, status_errno(status), bft_status_str(status));
	return true;
}

static void
start_op(struct op *op)
{
	struct client_loop *lp = op->cl->lp;
	uint32_t s;

	for (s = 0; s < MAX_OPS && lp->slots[s] != NULL; s++)
		;
	if (s == MAX_OPS) {
		op->next = NULL;
		if (lp->waittail)
			lp->waittail->next = op;
		else
			lp->waithead = op;
		lp->waittail = op;
		return;
	}
	lp->slots[s] = op;
	lp->nactive++;
	op->slot = s;
	op->restarts = 0;
	switch (op->kind) {
	case OP_WRITE:
		atomic_fetch_add(&op->cl->stats.writes, 1);
		write_start(op);
		break;
	case OP_READ:
		atomic_fetch_add(&op->cl->stats.reads, 1);
		read_start(op);
		break;
	case OP_FLUSH:
		atomic_fetch_add(&op->cl->stats.flushes, 1);
		round_start(op, PH_FLUSH);
		break;
	}
}

static void
flush_reply(struct op *op, unsigned i, const struct bft_msg *m)
{
	if (m->status != BFT_OK) {
		round_note_error(op, i, m->status);
		return;
	}
	op->ok |= 1u << i;
	if (popcount32(op->ok) >= op->cl->n - op->cl->t)
		op_done(op, 0, NULL);
}

/* A reply from server c->idx: find its round, ignore it if stale. */
static void
dispatch(struct conn *c, const struct bft_msg *m)
{
	struct client_loop *lp = c->cl->lp;
	uint32_t slot = (uint32_t)(m->id >> 32), bit = 1u << c->idx;
	struct op *op;

	if (slot >= MAX_OPS || (op = lp->slots[slot]) == NULL ||
	    op->gen != (uint32_t)m->id || !(op->sent & bit) ||
	    (op->replied & bit))
		return;
	/* A reply of another type or block is a lie, not an answer. */
	if (m->type != (op->phase | BFT_ACK) ||
	    (op->kind != OP_FLUSH && m->block != op->block)) {
		nbdkit_debug("server %u: reply %s for block %llu does not "
		    "match its request; ignored", c->idx,
		    bft_msg_type_str(m->type), (unsigned long long)m->block);
		return;
	}
	op->replied |= bit;
	if (op->kind == OP_WRITE)
		write_reply(op, c->idx, m);
	else if (op->kind == OP_READ)
		read_reply(op, c->idx, m);
	else
		flush_reply(op, c->idx, m);
}

static void
on_hello_ack(struct conn *c, const struct bft_msg *m)
{
	struct client_loop *lp = c->cl->lp;

	if (m->type != (BFT_HELLO | BFT_ACK) || m->status != BFT_OK) {
		nbdkit_error("server %u refused us: %s (is it a server of "
		    "this cluster?)", c->idx, bft_status_str(m->status));
		c->refused = true;
		conn_close(c, "HELLO refused");
		return;
	}
	c->state = C_READY;
	c->backoff_ms = 0;
	c->refused = false;
	if (c->warned)
		nbdkit_debug("server %u: connected again", c->idx);
	c->warned = false;
	/* Bring the server into every round that started without it. */
	for (uint32_t s = 0; s < MAX_OPS; s++) {
		struct op *op = lp->slots[s];

		if (op != NULL && !(op->sent & (1u << c->idx)))
			send_round(op, c->idx);
	}
}

static void on_closed(uv_handle_t *h);

static void
conn_close(struct conn *c, const char *why)
{
	struct client_loop *lp = c->cl->lp;
	uint32_t bit = 1u << c->idx;

	if (c->state == C_CLOSING || c->state == C_IDLE)
		return;
	/*
	 * Requests on this connection are lost with it.  Every request is
	 * idempotent (a STORE resent carries the same ts and nh), so the
	 * unanswered ones go out again once the server is back.
	 */
	for (uint32_t s = 0; s < MAX_OPS; s++) {
		struct op *op = lp->slots[s];

		if (op != NULL && !(op->replied & bit))
			op->sent &= ~bit;
	}
	c->out.len = 0;		/* lost with the connection, resent later */
	if (!c->warned)
		nbdkit_debug("server %u: connection lost: %s", c->idx, why);
	c->warned = true;
	c->state = C_CLOSING;
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

static void
on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	size_t off = 0;

	(void)buf;
	if (nread < 0) {
		conn_close(c, uv_strerror((int)nread));
		return;
	}
	c->rlen += (size_t)nread;
	while (c->state == C_HELLO || c->state == C_READY) {
		static struct bft_msg m;	/* loop thread only; large */
		const char *why = NULL;
		uint32_t blen;
		int r = bft_wire_frame(c->rbuf + off, c->rlen - off, &blen);

		if (r == 1)
			break;
		if (r < 0) {
			conn_close(c, "oversized frame");
			return;
		}
		if (bft_wire_decode(c->rbuf + off + 4, blen, c->cl->n, &m,
		    &why) != 0) {
			nbdkit_error("server %u sent a malformed frame (%s); "
			    "reconnecting", c->idx, why);
			conn_close(c, why);
			return;
		}
		off += 4 + (size_t)blen;
		if (c->state == C_HELLO)
			on_hello_ack(c, &m);
		else
			dispatch(c, &m);
	}
	if (off > 0 && c->state != C_CLOSING && c->state != C_IDLE) {
		memmove(c->rbuf, c->rbuf + off, c->rlen - off);
		c->rlen -= off;
	}
}

static void
on_connect(uv_connect_t *req, int status)
{
	struct conn *c = req->data;
	const struct bft_config *cfg = c->cl->p.cfg;
	struct bft_msg m;

	if (c->state != C_CONNECTING)
		return;
	if (status != 0) {
		conn_close(c, uv_strerror(status));
		return;
	}
	uv_tcp_nodelay(&c->tcp, 1);
	c->rlen = 0;
	c->state = C_HELLO;
	memset(&m, 0, sizeof m);
	m.type = BFT_HELLO;
	memcpy(m.cluster_id, cfg->cluster_id, BFT_CLUSTER_ID_LEN);
	m.hello_n = cfg->n;
	m.hello_t = cfg->t;
	m.block_size = cfg->block_size;
	m.nblocks = cfg->nblocks;
	m.server_index = c->idx;
	conn_send(c, &m);
	uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void
on_retry(uv_timer_t *t)
{
	conn_connect(t->data);
}

static void
on_closed(uv_handle_t *h)
{
	struct conn *c = h->data;
	struct client_loop *lp = c->cl->lp;

	c->state = C_IDLE;
	if (lp->stopping)
		return;
	atomic_fetch_add(&c->cl->stats.reconnects, 1);
	/* Back off to a second: a restarted server is back within that. */
	c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : 50;
	if (c->backoff_ms > 1000)
		c->backoff_ms = 1000;
	uv_timer_start(&c->retry, on_retry, c->refused ? 5000 : c->backoff_ms,
	    0);
}

static void
conn_connect(struct conn *c)
{
	struct client_loop *lp = c->cl->lp;

	if (lp->stopping || c->state != C_IDLE)
		return;
	uv_tcp_init(&lp->loop, &c->tcp);
	c->tcp.data = c;
	c->connect.data = c;
	c->state = C_CONNECTING;
	if (uv_tcp_connect(&c->connect, &c->tcp,
	    (const struct sockaddr *)&c->addr, on_connect) != 0)
		conn_close(c, "connect failed");
}

static void
on_tick(uv_timer_t *t)
{
	struct client_loop *lp = t->data;
	uint64_t now = uv_now(&lp->loop);

	for (uint32_t s = 0; s < MAX_OPS && lp->nactive > 0; s++) {
		struct op *op = lp->slots[s];

		if (op == NULL || now < op->deadline_ms)
			continue;
		atomic_fetch_add(&op->cl->stats.timeouts, 1);
		if (op->kind == OP_READ && op->phase == PH_FILTER) {
			read_timeout(op);
			continue;
		}
		nbdkit_error("block %llu: only %u of %u servers answered "
		    "within %u ms (need %u)", (unsigned long long)op->block,
		    popcount32(op->ok), op->cl->n, op->cl->p.timeout_ms,
		    op->cl->n - op->cl->t);
		op_done(op, EIO, "too few servers answered in time");
	}
}

static void
on_wake(uv_async_t *a)
{
	struct client_loop *lp = a->data;
	struct op *op;

	pthread_mutex_lock(&lp->qlock);
	op = lp->qhead;
	lp->qhead = lp->qtail = NULL;
	if (lp->stopping) {
		pthread_mutex_unlock(&lp->qlock);
		uv_stop(&lp->loop);
		return;
	}
	pthread_mutex_unlock(&lp->qlock);
	while (op != NULL) {
		struct op *next = op->next;

		start_op(op);
		op = next;
	}
}

static void *
loop_main(void *arg)
{
	struct client_loop *lp = arg;

	uv_run(&lp->loop, UV_RUN_DEFAULT);
	return NULL;
}

static int
resolve(const struct bft_server_addr *a, struct sockaddr_storage *out)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	char port[8];
	int r;

	snprintf(port, sizeof port, "%u", a->port);
	r = getaddrinfo(a->host, port, &hints, &res);
	if (r != 0) {
		nbdkit_error("cannot resolve %s: %s", a->host, gai_strerror(r));
		return -1;
	}
	memcpy(out, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

static void
close_handle(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

struct bft_client *
bft_client_start(const struct bft_client_params *p)
{
	struct bft_client *cl = calloc(1, sizeof *cl);
	struct client_loop *lp = calloc(1, sizeof *lp);

	if (cl == NULL || lp == NULL)
		goto out_free;
	cl->p = *p;
	cl->n = p->cfg->n;
	cl->t = p->cfg->t;
	cl->writer_id = p->writer_id;
	cl->lp = lp;
	pthread_mutex_init(&lp->qlock, NULL);
	if (uv_loop_init(&lp->loop) != 0)
		goto out_free;
	uv_async_init(&lp->loop, &lp->wake, on_wake);
	lp->wake.data = lp;
	uv_timer_init(&lp->loop, &lp->tick);
	lp->tick.data = lp;
	uv_timer_start(&lp->tick, on_tick, TICK_MS, TICK_MS);
	uv_check_init(&lp->loop, &lp->flush);
	lp->flush.data = lp;
	uv_check_start(&lp->flush, flush_all);
	for (unsigned i = 0; i < cl->n; i++) {
		struct conn *c = &lp->conns[i];

		c->cl = cl;
		c->idx = i;
		if (resolve(&p->cfg->servers[i], &c->addr) != 0)
			goto out_loop;
		uv_timer_init(&lp->loop, &c->retry);
		c->retry.data = c;
		conn_connect(c);
	}
	if (pthread_create(&lp->thread, NULL, loop_main, lp) != 0)
		goto out_loop;
	return cl;

out_loop:
	/* Handles are only in the loop; closing it is enough on this path. */
	uv_walk(&lp->loop, close_handle, NULL);
	uv_run(&lp->loop, UV_RUN_DEFAULT);
	uv_loop_close(&lp->loop);
out_free:
	free(lp);
	free(cl);
	return NULL;
}

void
bft_client_stop(struct bft_client *cl)
{
	struct client_loop *lp;

	if (cl == NULL)
		return;
	lp = cl->lp;
	pthread_mutex_lock(&lp->qlock);
	lp->stopping = true;
	pthread_mutex_unlock(&lp->qlock);
	uv_async_send(&lp->wake);
	pthread_join(lp->thread, NULL);
	uv_walk(&lp->loop, close_handle, NULL);
	uv_run(&lp->loop, UV_RUN_DEFAULT);
	uv_loop_close(&lp->loop);
	for (unsigned i = 0; i < cl->n; i++) {
		free(lp->conns[i].rbuf);
		bft_buf_free(&lp->conns[i].out);
		bft_buf_free(&lp->conns[i].wbuf);
	}
	pthread_mutex_destroy(&lp->qlock);
	free(lp);
	free(cl);
}

const struct bft_client_stats *
bft_client_stats(struct bft_client *cl)
{
	return &cl->stats;
}

void
bft_client_submit(struct bft_client *cl, struct op **ops, unsigned nops)
{
	struct client_loop *lp = cl->lp;

	pthread_mutex_lock(&lp->qlock);
	for (unsigned i = 0; i < nops; i++) {
		ops[i]->cl = cl;
		ops[i]->next = NULL;
		if (lp->qtail)
			lp->qtail->next = ops[i];
		else
			lp->qhead = ops[i];
		lp->qtail = ops[i];
	}
	pthread_mutex_unlock(&lp->qlock);
	uv_async_send(&lp->wake);
}

void
bft_batch_init(struct op_batch *b, unsigned pending)
{
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	b->pending = pending;
}

void
bft_batch_wait(struct op_batch *b)
{
	pthread_mutex_lock(&b->lock);
	while (b->pending > 0)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
}

void
bft_batch_destroy(struct op_batch *b)
{
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->lock);
}
