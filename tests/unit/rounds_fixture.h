/*
 * Shared by the round tests (test_rounds_write.c, test_rounds_read.c):
 * an engine made by bftblk__engine_new, driven by hand through the fake
 * connection layer (fake_conn.h), and n servers that answer honestly
 * because they are the real protocol code, server/handler.c over a real
 * store each in a scratch directory.  A second, smaller copy of
 * Algorithm 5 here could drift from the server and let the engine pass
 * against answers no server gives.  A Byzantine server is the test
 * itself: it takes a request and builds, or alters, the reply.  Keys,
 * genuine timestamps and forgeries come from predicates_fixture.h.
 * Every test gets fresh servers and a fresh engine, for t = 1 and, in
 * the tests listed with BOTH_ROUNDS, t = 2 as well.
 */
#ifndef BFTBLK_TEST_ROUNDS_FIXTURE_H
#define BFTBLK_TEST_ROUNDS_FIXTURE_H

#include <ftw.h>
#include <stdio.h>

#include "predicates_fixture.h"
#include "fake_conn.h"
#include "../../server/handler.h"
#include "../../server/store/store.h"
#include "store_view.h"

#define NBLOCKS		16
#define TIMEOUT_MS	1000
#define WRITER_ID	0x1001u
/* Longer than the 1-round read's wait for fragments, far below TIMEOUT_MS. */
#define PAST_FRAG_WAIT	100

struct fx {
	struct world *w;
	unsigned t, n, q;		/* q = n - t, a quorum */
	uint32_t all;			/* every server's bit */
	struct bft_config cfg;
	struct bft_client_key ck;
	struct bft_server_key sk[BFT_MAX_N];
	struct bft_store *st[BFT_MAX_N];
	struct bft_handler h[BFT_MAX_N];
	char dir[64];
	struct bft_engine *cl;
	struct engine_loop *lp;
};

/* One operation, its buffer, and the batch its submitter would wait on. */
struct run {
	struct op *op;
	struct op_batch b;
	uint8_t *data;
};

/* The tests check what the engine did, through its stats and ops. */
static inline void
quiet_log(void *opaque, enum bftblk_log_level level, const char *msg)
{
	(void)opaque;
	(void)level;
	(void)msg;
}

static inline int
rounds_setup(void **state)
{
	struct bft_engine_params p;
	struct world *w;
	struct fx *f;
	char err[256], path[96];

	if (setup(state) != 0)
		return -1;
	w = *state;
	w->block = BLOCK;	/* make_write()'s MACs are for the tests' block */
	if ((f = calloc(1, sizeof *f)) == NULL)
		return -1;
	f->w = w;
	f->t = w->t;
	f->n = w->n;
	f->q = w->n - w->t;
	f->all = (1u << w->n) - 1;
	bft_random(f->cfg.cluster_id, BFT_CLUSTER_ID_LEN);
	f->cfg.t = f->t;
	f->cfg.n = f->n;
	f->cfg.block_size = BFT_BLOCK_SIZE;
	f->cfg.nblocks = NBLOCKS;
	f->cfg.size = (uint64_t)NBLOCKS * BFT_BLOCK_SIZE;
	memcpy(f->ck.cluster_id, f->cfg.cluster_id, BFT_CLUSTER_ID_LEN);
	f->ck.n = f->n;
	memcpy(f->ck.k, w->k, sizeof f->ck.k);
	memcpy(f->ck.kw, w->kw, BFT_KEY_LEN);
	f->ck.role = BFT_ROLE_RW;
	snprintf(f->dir, sizeof f->dir, "/tmp/test_rounds.XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	for (unsigned i = 0; i < f->n; i++) {
		struct bft_store_identity id = {
			.server_index = i, .n = f->n, .t = f->t,
			.block_size = BFT_BLOCK_SIZE, .nblocks = NBLOCKS,
		};

		memcpy(id.cluster_id, f->cfg.cluster_id, BFT_CLUSTER_ID_LEN);
		memcpy(f->sk[i].cluster_id, f->cfg.cluster_id,
		    BFT_CLUSTER_ID_LEN);
		f->sk[i].index = i;
		memcpy(f->sk[i].k, w->k[i], BFT_KEY_LEN);
		snprintf(path, sizeof path, "%s/s%u", f->dir, i);
		f->st[i] = bft_store_open(path, &id, err, sizeof err);
		if (f->st[i] == NULL)
			fail_msg("bft_store_open: %s", err);
		if (bft_handler_init(&f->h[i], &f->cfg, &f->sk[i], f->st[i],
		    0) != 0)
			return -1;
	}
	p = (struct bft_engine_params){
		.cfg = &f->cfg, .key = &f->ck, .ec = w->ec,
		.timeout_ms = TIMEOUT_MS, .writer_id = WRITER_ID,
		.log = quiet_log,
	};
	if ((f->cl = bftblk__engine_new(&p)) == NULL)
		return -1;
	f->lp = f->cl->lp;
	for (unsigned i = 0; i < f->n; i++)
		f->lp->conns[i].state = C_READY;
	*state = f;
	return 0;
}

static inline int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline int
rounds_teardown(void **state)
{
	struct fx *f = *state;
	unsigned misuse = fake_conn_misuse();

	bftblk__engine_free(f->cl);
	for (unsigned i = 0; i < f->n; i++) {
		bft_handler_fini(&f->h[i]);
		bft_store_close(f->st[i]);
	}
	nftw(f->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	fake_conn_reset();
	*state = f->w;
	free(f);
	teardown(state);
	/* A request to a server that is down, or one the wire refuses. */
	return misuse == 0 ? 0 : -1;
}

#define BOTH_ROUNDS(f) \
	{ #f "/t=1", f, rounds_setup, rounds_teardown, &t_one }, \
	{ #f "/t=2", f, rounds_setup, rounds_teardown, &t_two }
#define T1_ROUNDS(f) \
	{ #f "/t=1", f, rounds_setup, rounds_teardown, &t_one }

static inline struct conn *
conn_of(struct fx *f, unsigned i)
{
	return &f->lp->conns[i];
}

/* Servers in up are connected (C_READY); the rest are down. */
static inline void
set_up(struct fx *f, uint32_t up)
{
	for (unsigned i = 0; i < f->n; i++)
		f->lp->conns[i].state = IN(up, i) ? C_READY : C_IDLE;
}

/*
 * The engine's tick, ms after the loop's time.  The loop never runs, so
 * uv_now stays where bftblk__engine_new left it, and every deadline a
 * round sets is counted from there: tick(f, TIMEOUT_MS) is exactly a
 * round's.
 */
static inline void
tick(struct fx *f, uint64_t ms)
{
	bftblk__engine_tick(f->lp, uv_now(&f->lp->loop) + ms);
}

static inline unsigned long long
stat_of(const atomic_ullong *counter)
{
	return atomic_load(counter);
}

/* Server i's honest answer to req; rep->frag may point into its handler. */
static inline void
honest(struct fx *f, unsigned i, const struct bft_msg *req,
    struct bft_msg *rep)
{
	bft_handle(&f->h[i], "test", req, rep);
}

/*
 * Server i answers its oldest request honestly.  Returns the request's
 * type, or 0 when it had none.
 */
static inline int
serve(struct fx *f, unsigned i)
{
	static struct bft_msg rep;
	const struct bft_msg *req = fake_conn_take(i);

	if (req == NULL)
		return 0;
	honest(f, i, req, &rep);
	fake_conn_deliver(conn_of(f, i), &rep);
	return req->type;
}

/* Takes server i's oldest request, which must be of type, for block. */
static inline const struct bft_msg *
take(unsigned i, uint8_t type, uint64_t block)
{
	const struct bft_msg *req = fake_conn_take(i);

	assert_non_null(req);
	assert_int_equal(req->type, type);
	assert_true(req->block == block);
	return req;
}

/* Server i answers req honestly, whenever the test decides it arrives. */
static inline void
answer(struct fx *f, unsigned i, const struct bft_msg *req)
{
	static struct bft_msg rep;

	honest(f, i, req, &rep);
	assert_int_equal(rep.status, BFT_OK);
	fake_conn_deliver(conn_of(f, i), &rep);
}

/*
 * Server i answers req honestly, except that its fragment has one bit
 * flipped 100 bytes before its end (in the last 4 KiB of its payload):
 * what a liar, or a bad disk, sends.
 */
static inline void
answer_corrupt(struct fx *f, unsigned i, const struct bft_msg *req)
{
	static struct bft_msg rep;
	static uint8_t frag[BFT_MAX_FRAG];

	honest(f, i, req, &rep);
	assert_true(rep.frag_len > 100);
	memcpy(frag, rep.frag, rep.frag_len);
	frag[rep.frag_len - 100] ^= 0x10;
	rep.frag = frag;
	fake_conn_deliver(conn_of(f, i), &rep);
}

/* Whether every server was sent exactly count requests. */
static inline bool
all_sent(struct fx *f, unsigned count)
{
	for (unsigned i = 0; i < f->n; i++)
		if (fake_conn_sent(i) != count)
			return false;
	return true;
}

/* Every server in mask answers its oldest request, in index order. */
static inline void
serve_each(struct fx *f, uint32_t mask)
{
	for (unsigned i = 0; i < f->n; i++)
		if (IN(mask, i))
			serve(f, i);
}

/* The servers in mask answer everything, round after round, until quiet. */
static inline void
serve_all(struct fx *f, uint32_t mask)
{
	bool more = true;

	while (more) {
		more = false;
		for (unsigned i = 0; i < f->n; i++)
			if (IN(mask, i) && serve(f, i) != 0)
				more = true;
	}
}

/* The first count servers, as a mask. */
static inline uint32_t
first(unsigned count)
{
	return (1u << count) - 1;
}

/* A reply to req with only its header filled, for a liar to build on. */
static inline void
reply_to(const struct bft_msg *req, int status, struct bft_msg *rep)
{
	memset(rep, 0, sizeof *rep);
	rep->type = req->type | BFT_ACK;
	rep->id = req->id;
	rep->block = req->block;
	rep->status = status;
}

/* Every request not taken yet is lost in transit. */
static inline void
lose_queued(struct fx *f)
{
	for (unsigned i = 0; i < f->n; i++)
		while (fake_conn_take(i) != NULL)
			;
}

/* Whether every request sent so far has been taken. */
static inline bool
queued_none(struct fx *f)
{
	for (unsigned i = 0; i < f->n; i++)
		if (fake_conn_queued(i) != 0)
			return false;
	return true;
}

/*
 * Starts an op as its submitter would: a read into a buffer filled with
 * 0xaa (so bytes it never wrote show), or a write of value, or with
 * value NULL a write of the zero value (trim).  A read with range_len
 * wants bytes [range_off, range_off + range_len) alone.
 */
static inline void
run_start_range(struct fx *f, struct run *r, enum op_kind kind,
    uint64_t block, const uint8_t *value, uint32_t range_off,
    uint32_t range_len)
{
	r->data = malloc(BFT_BLOCK_SIZE);
	assert_non_null(r->data);
	if (value != NULL)
		memcpy(r->data, value, BFT_BLOCK_SIZE);
	else
		memset(r->data, kind == OP_WRITE ? 0 : 0xaa, BFT_BLOCK_SIZE);
	r->op = bftblk__op_new(f->cl, kind);
	assert_non_null(r->op);
	r->op->block = block;
	r->op->data = r->data;
	r->op->batch = &r->b;
	bftblk__batch_init(&r->b, 1);
	r->op->zero_value = kind == OP_WRITE && value == NULL;
	r->op->range_off = range_off;
	r->op->range_len = range_len;
	if (kind == OP_WRITE)
		assert_int_equal(bftblk__op_prepare_write(r->op), 0);
	bftblk__engine_start_op(r->op);
}

static inline void
run_start(struct fx *f, struct run *r, enum op_kind kind, uint64_t block,
    const uint8_t *value)
{
	run_start_range(f, r, kind, block, value, 0, 0);
}

/* The op finished: its submitter would have been woken. */
static inline bool
run_done(const struct run *r)
{
	return bftblk__batch_left(r->b.pending) == 0;
}

static inline void
run_end(struct run *r)
{
	bftblk__op_free(r->op);
	free(r->data);
}

/* A whole write of value through the engine, every up server honest. */
static inline void
write_all(struct fx *f, uint64_t block, const uint8_t *value)
{
	struct run r;

	run_start(f, &r, OP_WRITE, block, value);
	serve_all(f, f->all);
	assert_true(run_done(&r));
	assert_int_equal(r.op->err, 0);
	assert_true(r.op->committed);
	run_end(&r);
}

/*
 * Another writer's completed write, straight to the servers in mask:
 * STORE and COMPLETE of wr, made by make_write().
 */
static inline void
put_write(struct fx *f, uint32_t mask, uint64_t block, const struct write *wr)
{
	struct bft_msg req, rep;

	for (unsigned i = 0; i < f->n; i++) {
		if (!IN(mask, i))
			continue;
		memset(&req, 0, sizeof req);
		req.type = BFT_STORE;
		req.block = block;
		req.ts = wr->c.ts;
		memcpy(req.nh, wr->h.nh, BFT_HASH_LEN);
		memcpy(req.vec, wr->c.vec, sizeof req.vec);
		memcpy(req.cc, wr->h.cc, sizeof req.cc);
		req.frag = wr->frags[i];
		req.frag_len = f->w->flen;
		honest(f, i, &req, &rep);
		assert_int_equal(rep.status, BFT_OK);
		memset(&req, 0, sizeof req);
		req.type = BFT_COMPLETE;
		req.block = block;
		req.ts = wr->c.ts;
		memcpy(req.nonce, wr->c.nonce, BFT_NONCE_LEN);
		memcpy(req.vec, wr->c.vec, sizeof req.vec);
		honest(f, i, &req, &rep);
		assert_int_equal(rep.status, BFT_OK);
	}
}

/* lc at server i. */
static inline const struct bft_cand *
lc_at(struct fx *f, unsigned i, uint64_t block)
{
	return store_lc(f->st[i], block);
}

/* A random block value. */
static inline uint8_t *
new_value(void)
{
	uint8_t *v = malloc(BFT_BLOCK_SIZE);

	assert_non_null(v);
	bft_random(v, BFT_BLOCK_SIZE);
	return v;
}

#endif
