/*
 * The event loop thread: request ids, the operation table, rounds,
 * timeouts and the loop's end of the submission queue.  Connections are
 * in conn.c; the callers' side, submitting and waiting, in engine_run.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "conn_int.h"
#include "crypto.h"
#include "error_int.h"


uint8_t
bftblk__op_wire_type(const struct op *op)
{
	if (!op->view)
		return (uint8_t)op->phase;
	switch (op->phase) {
	case PH_COLLECT:	return BFT_VCOLLECT;
	case PH_FILTER:		return BFT_VFILTER;
	case PH_REPAIR:		return BFT_VREPAIR;
	default:		return (uint8_t)op->phase;
	}
}

static void
send_round(struct op *op, unsigned i)
{
	struct bft_msg m;

	memset(&m, 0, offsetof(struct bft_msg, cands));
	m.ncands = 0;
	m.type = bftblk__op_wire_type(op);
	m.id = (uint64_t)op->slot << 32 | op->gen;
	m.block = op->block;
	m.gen = op->view ? op->view_gen : 0;
	if (op->kind == OP_WRITE)
		bftblk__write_build(op, i, &m);
	else if (op->kind == OP_READ)
		bftblk__read_build(op, i, &m);
	op->sent |= 1u << i;
	bftblk__conn_send(&op->cl->lp->conns[i], &m);
}

void
bftblk__round_start(struct op *op, enum op_phase ph)
{
	struct engine_loop *lp = op->cl->lp;

	op->phase = ph;
	op->gen = (uint32_t)++lp->next_gen;
	op->sent = op->replied = op->ok = op->failed = op->fenced = 0;
	op->fail_status = 0;
	op->deadline_ms = uv_now(&lp->loop) + op->cl->p.timeout_ms;
	for (unsigned i = 0; i < op->cl->n; i++)
		if (lp->conns[i].state == C_READY)
			send_round(op, i);
}

/*
 * Slots are free: start waiting operations, oldest first.  An encrypted
 * write on a cached timestamp parks, and so frees its slot, within
 * start_op; the flag keeps that from recursing once per waiting op.
 */
static void
admit_waiting(struct engine_loop *lp)
{
	struct op *next;

	if (lp->admitting)
		return;
	lp->admitting = true;
	while (lp->nactive < MAX_OPS && (next = lp->waithead) != NULL) {
		lp->waithead = next->next;
		if (lp->waithead == NULL)
			lp->waittail = NULL;
		bftblk__engine_start_op(next);
	}
	lp->admitting = false;
}

void
bftblk__op_done(struct op *op, int err, const char *why)
{
	struct engine_loop *lp = op->cl->lp;

	op->err = err;
	op->why = why;
	/* Placed payloads are unchecked until a read decides. */
	if (err && op->kind == OP_READ && op->unchecked)
		memset(read_value(op), 0, bft_ec_value_len(op->cl->p.ec));
	/*
	 * A write that failed after CLOCK may have completed at a few
	 * servers.  Reusing its (num, wid) would put two values under one
	 * timestamp, so this writer takes a new id.
	 */
	if (err && op->kind == OP_WRITE && op->phase != PH_CLOCK)
		bftblk__rotate_writer_id(op->cl);
	/* A parked write comes back: its time runs on. */
	if (!op->parked && op->start_ns != 0) {
		uint64_t ns = uv_hrtime() - op->start_ns;

		bft_prom_observe_atomic(&op->cl->stats.op_ns[op->kind], ns);
		if (op->cl->p.agg != NULL)
			bft_prom_observe_atomic(&op->cl->p.agg->op_ns[op->kind],
			    ns);
		op->start_ns = 0;
	}
	lp->slots[op->slot] = NULL;
	lp->nactive--;
	bftblk__batch_done(op->batch);	/* op may be freed from here on */
	admit_waiting(lp);
}

void
bftblk__rotate_writer_id(struct bft_engine *cl)
{
	bft_random(&cl->writer_id, sizeof cl->writer_id);
	cl->writer_id |= 1;	/* zero marks c0 */
}

static int
status_errno(int status)
{
	switch (status) {
	case BFT_EAUTH:		return EPERM;
	case BFT_EPERM:		return EPERM;
	case BFT_ENOSPC:	return ENOSPC;
	case BFT_ERANGE:	return EINVAL;
	case BFT_EGONE:		return ENOENT;
	/* Internal: the handle may follow a newer generation and retry. */
	case BFT_EFENCED:	return ESTALE;
	default:		return EIO;
	}
}

bool
bftblk__round_note_error(struct op *op, unsigned i, int status)
{
	unsigned n = op->cl->n, t = op->cl->t;

	op->failed |= 1u << i;
	op->fail_status = status;
	if (status == BFT_EFENCED)
		op->fenced |= 1u << i;
	STAT_ADD(op->cl, server[i].error_replies, 1);
	if (n - popcount32(op->failed) >= n - t)
		return false;
	/* One liar's EFENCED is not a reason; t+1 are (predicates.h). */
	if (bft_fenced_proven(op->fenced, t))
		status = BFT_EFENCED;
	bftblk__op_done(op, status_errno(status), bft_status_str(status));
	return true;
}

void
bftblk__engine_start_op(struct op *op)
{
	struct engine_loop *lp = op->cl->lp;
	uint32_t s;

	if (op->start_ns == 0)
		op->start_ns = uv_hrtime();
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
	/* 0: no bound beyond the rounds' own (the unit tests). */
	op->give_up_ms = op->cl->p.io_timeout_ms == 0 ? UINT64_MAX :
	    uv_now(&lp->loop) + op->cl->p.io_timeout_ms;
	switch (op->kind) {
	case OP_WRITE:
		if (!op->resume)	/* a resumed write is counted once */
			STAT_ADD(op->cl, writes, 1);
		bftblk__write_start(op);
		break;
	case OP_READ:
		STAT_ADD(op->cl, reads, 1);
		bftblk__read_start(op);
		break;
	case OP_FLUSH:
		STAT_ADD(op->cl, flushes, 1);
		bftblk__round_start(op, PH_FLUSH);
		break;
	}
}

static void
flush_reply(struct op *op, unsigned i, const struct bft_msg *m)
{
	if (m->status != BFT_OK) {
		bftblk__round_note_error(op, i, m->status);
		return;
	}
	op->ok |= 1u << i;
	if (popcount32(op->ok) >= op->cl->n - op->cl->t)
		bftblk__op_done(op, 0, NULL);
}

/* A reply from server c->idx: find its round, ignore it if stale. */
void
bftblk__engine_dispatch(struct conn *c, const struct bft_msg *m)
{
	struct engine_loop *lp = c->cl->lp;
	uint32_t slot = (uint32_t)(m->id >> 32), bit = 1u << c->idx;
	struct op *op;

	if (m->id == 0) {
		/* A probe's (engine_watch.c, engine_keys.c), of no round. */
		if (m->type == (BFT_STATUS | BFT_ACK) && m->status == BFT_OK)
			bftblk__engine_note_status(c, &m->info);
		return;
	}
	if (slot >= MAX_OPS || (op = lp->slots[slot]) == NULL ||
	    op->gen != (uint32_t)m->id || !(op->sent & bit) ||
	    (op->replied & bit))
		return;
	/* A reply of another type or block is a lie, not an answer. */
	if (m->type != (bftblk__op_wire_type(op) | BFT_ACK) ||
	    (op->kind != OP_FLUSH && m->block != op->block)) {
		STAT_ADD(c->cl, server[c->idx].mismatched, 1);
		bftblk__eng_log(c->cl, BFTBLK_LOG_DEBUG, "server %u: reply %s "
		    "for block %llu does not match its request; ignored",
		    c->idx, bft_msg_type_str(m->type),
		    (unsigned long long)m->block);
		return;
	}
	op->replied |= bit;
	STAT_ADD(op->cl, server[c->idx].replies, 1);
	if (op->kind == OP_WRITE)
		bftblk__write_reply(op, c->idx, m);
	else if (op->kind == OP_READ)
		bftblk__read_reply(op, c->idx, m);
	else
		flush_reply(op, c->idx, m);
}

void
bftblk__engine_note_latency(struct bft_engine *cl, unsigned i, uint64_t ns)
{
	uint64_t *l = &cl->lat_ns[i];

	/* Weight 1/8: a few replies move it, one outlier does not. */
	*l = *l == 0 ? ns : *l - *l / 8 + ns / 8;
}

void
bftblk__engine_conn_ready(struct conn *c)
{
	struct engine_loop *lp = c->cl->lp;

	for (uint32_t s = 0; s < MAX_OPS; s++) {
		struct op *op = lp->slots[s];

		if (op != NULL && !(op->sent & (1u << c->idx)))
			send_round(op, c->idx);
	}
	bftblk__engine_keys_probe(c);
}

/*
 * Every request is idempotent (a STORE resent carries the same ts and
 * nh), so the unanswered ones go out again once the server is back.
 */
void
bftblk__engine_conn_lost(struct conn *c)
{
	struct engine_loop *lp = c->cl->lp;
	uint32_t bit = 1u << c->idx;

	for (uint32_t s = 0; s < MAX_OPS; s++) {
		struct op *op = lp->slots[s];

		if (op != NULL && !(op->replied & bit))
			op->sent &= ~bit;
	}
}

/* Servers sent this round's request that never answered it. */
static void
note_silent(struct op *op)
{
	uint32_t silent = op->sent & ~op->replied;

	for (unsigned i = 0; i < op->cl->n; i++)
		if (silent & (1u << i))
			STAT_ADD(op->cl, server[i].timeouts, 1);
}

/* Appends the servers of mask to buf as "1, 3". */
static void
list_servers(char *buf, size_t len, uint32_t mask)
{
	size_t off = strlen(buf);

	for (unsigned i = 0; mask != 0 && off < len; i++, mask >>= 1) {
		int w;

		if (!(mask & 1))
			continue;
		w = snprintf(buf + off, len - off, "%s%u",
		    buf[off - 1] == ' ' ? "" : ", ", i);
		if (w > 0)
			off += (size_t)w;
	}
}

void
bftblk__op_fail_slow(struct op *op, const char *what)
{
	unsigned n = op->cl->n, need = n - op->cl->t;
	uint32_t all = (1u << n) - 1, silent = all & ~op->replied;
	char who[160] = "";

	if (silent) {
		snprintf(who, sizeof who, "; no answer from server ");
		list_servers(who, sizeof who, silent);
	}
	if (op->failed) {
		size_t off = strlen(who);

		snprintf(who + off, sizeof who - off, "; refused by server ");
		list_servers(who, sizeof who, op->failed);
	}
	bftblk__eng_log(op->cl, BFTBLK_LOG_ERROR, "block %llu: %s: %u of %u "
	    "servers answered, %u needed%s", (unsigned long long)op->block,
	    what, popcount32(op->ok), n, need, who);
	bftblk__op_done(op, EIO, "too few servers answered in time");
}

void
bftblk__engine_tick(struct engine_loop *lp, uint64_t now)
{
	for (uint32_t s = 0; s < MAX_OPS && lp->nactive > 0; s++) {
		struct op *op = lp->slots[s];

		if (op != NULL && now >= op->give_up_ms) {
			STAT_ADD(op->cl, timeouts, 1);
			note_silent(op);
			bftblk__op_fail_slow(op, "no result within io-timeout");
			continue;
		}
		if (op == NULL || now < op->deadline_ms)
			continue;
		/* Not a timeout: a short wait of the 1-round read ran out. */
		if (op->kind == OP_READ && op->phase == PH_COLLECT &&
		    op->fast_wait) {
			bftblk__fast_read_expired(op);
			continue;
		}
		STAT_ADD(op->cl, timeouts, 1);
		note_silent(op);
		if (op->kind == OP_READ && op->phase == PH_FILTER) {
			bftblk__read_timeout(op);
			continue;
		}
		bftblk__op_fail_slow(op, "round timed out");
	}
}

static void
on_tick(uv_timer_t *t)
{
	struct engine_loop *lp = t->data;
	uint64_t now = uv_now(&lp->loop);

	bftblk__engine_tick(lp, now);
	bftblk__engine_watch(lp, now);
	bftblk__engine_keys_watch(lp, now);
}

static void
on_wake(uv_async_t *a)
{
	struct engine_loop *lp = a->data;
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

		bftblk__engine_start_op(op);
		op = next;
	}
}

static void *
loop_main(void *arg)
{
	struct engine_loop *lp = arg;

	uv_run(&lp->loop, UV_RUN_DEFAULT);
	return NULL;
}

static void
close_handle(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

struct bft_engine *
bftblk__engine_new(const struct bft_engine_params *p)
{
	struct bft_engine *cl = calloc(1, sizeof *cl);
	struct engine_loop *lp = calloc(1, sizeof *lp);

	if (cl == NULL || lp == NULL || uv_loop_init(&lp->loop) != 0) {
		free(lp);
		free(cl);
		return NULL;
	}
	cl->p = *p;
	cl->key = *p->key;
	cl->p.key = &cl->key;
	cl->n = p->cfg->n;
	cl->t = p->cfg->t;
	cl->writer_id = p->writer_id;
	cl->lp = lp;
	pthread_mutex_init(&cl->pool_lock, NULL);
	bftblk__block_locks_init(&cl->locks);
	bftblk__coalesce_init(&cl->co);
	pthread_mutex_init(&lp->qlock, NULL);
	uv_async_init(&lp->loop, &lp->wake, on_wake);
	lp->wake.data = lp;
	uv_timer_init(&lp->loop, &lp->tick);
	lp->tick.data = lp;
	uv_timer_start(&lp->tick, on_tick, TICK_MS, TICK_MS);
	uv_check_init(&lp->loop, &lp->flush);
	lp->flush.data = lp;
	uv_check_start(&lp->flush, bftblk__conn_flush_all);
	for (unsigned i = 0; i < cl->n; i++) {
		struct conn *c = &lp->conns[i];

		c->cl = cl;
		c->idx = i;
		uv_timer_init(&lp->loop, &c->retry);
		c->retry.data = c;
	}
	return cl;
}

void
bftblk__engine_free(struct bft_engine *cl)
{
	struct engine_loop *lp = cl->lp;

	/* Before the walk, which would close its handles without freeing. */
	bftblk__eng_metrics_stop(lp->metrics);
	lp->metrics = NULL;
	/* Senders first: the walk closes the sockets they write to. */
	bftblk__conn_tx_stop(lp, cl->n);
	uv_walk(&lp->loop, close_handle, NULL);
	uv_run(&lp->loop, UV_RUN_DEFAULT);
	uv_loop_close(&lp->loop);
	for (unsigned i = 0; i < cl->n; i++) {
		free(lp->conns[i].rbuf);
		bft_buf_free(&lp->conns[i].out);
		bft_buf_free(&lp->conns[i].wbuf);
		bft_chan_clear(&lp->conns[i].chan);
	}
	pthread_mutex_destroy(&lp->qlock);
	bftblk__op_pool_drain(cl);
	pthread_mutex_destroy(&cl->pool_lock);
	bftblk__block_locks_destroy(&cl->locks);
	bftblk__coalesce_destroy(&cl->co);
	bft_wipe(&cl->key, sizeof cl->key);
	free(lp);
	free(cl);
}

struct bft_engine *
bftblk__engine_parent(const struct bft_engine *cl)
{
	return cl->p.parent;
}

uint64_t
bftblk__engine_addr(const struct bft_engine *cl, uint64_t b)
{
	return bft_addr(cl->p.volume_id, b);
}

struct bft_engine *
bftblk__engine_start(const struct bft_engine_params *p)
{
	struct bft_engine *cl = bftblk__engine_new(p);
	struct engine_loop *lp;

	if (cl == NULL)
		return NULL;
	lp = cl->lp;
	for (unsigned i = 0; i < cl->n; i++)
		if (bftblk__conn_resolve(cl, &p->cfg->servers[i],
		    &lp->conns[i].addr) != 0)
			goto out_free;
	if (p->metrics_addr != NULL) {
		char err[256];

		lp->metrics = bftblk__eng_metrics_start(cl, p->metrics_addr,
		    err, sizeof err);
		if (lp->metrics == NULL) {
			bftblk__eng_log(cl, BFTBLK_LOG_ERROR, "metrics=%s: %s",
			    p->metrics_addr, err);
			goto out_free;
		}
		bftblk__eng_log(cl, BFTBLK_LOG_INFO, "metrics on "
		    "http://%s/metrics", bftblk__eng_metrics_where(lp->metrics));
	}
	if (p->senders && bftblk__conn_tx_start(lp, cl->n) != 0) {
		bftblk__eng_log(cl, BFTBLK_LOG_ERROR, "cannot start a sender "
		    "thread per server (senders=off does without)");
		goto out_free;
	}
	for (unsigned i = 0; i < cl->n; i++)
		if (!(p->skip & (1u << i)))
			bftblk__conn_connect(&lp->conns[i]);
	if (pthread_create(&lp->thread, NULL, loop_main, lp) != 0)
		goto out_free;
	/* For top -H and the bench's CPU by thread. */
	(void)pthread_setname_np(lp->thread, "bftblk-loop");
	return cl;

out_free:
	/* Handles are only in the loop; closing it is enough on this path. */
	bftblk__engine_free(cl);
	return NULL;
}

void
bftblk__engine_stop(struct bft_engine *cl)
{
	struct engine_loop *lp;

	if (cl == NULL)
		return;
	lp = cl->lp;
	pthread_mutex_lock(&lp->qlock);
	lp->stopping = true;
	pthread_mutex_unlock(&lp->qlock);
	uv_async_send(&lp->wake);
	pthread_join(lp->thread, NULL);
	bftblk__engine_watch_stop(lp);
	bftblk__engine_free(cl);
}

void
bftblk__eng_log(struct bft_engine *cl, enum bftblk_log_level level,
    const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	cl->p.log(cl->p.log_opaque, level, msg);
}
