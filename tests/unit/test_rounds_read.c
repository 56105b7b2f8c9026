/*
 * The read state machine (lib/op_read.c and the 1-round read of
 * lib/op_read_fast.c, with the round machinery of lib/engine.c) driven
 * through a fake transport against real server code (rounds_fixture.h).
 * Every read that succeeds is decoded by the real bftblk__op_finish_read and
 * must give back the value written last, byte for byte: never an older
 * value, a forged one, or bytes of a corrupt fragment.
 */
#include <errno.h>

/* The block the tests read and write; the fixture's writes are its. */
#define BLOCK 5

#include "rounds_fixture.h"

/* r succeeded, and decodes to value. */
static void
assert_read(struct run *r, const uint8_t *value)
{
	assert_true(run_done(r));
	assert_int_equal(r->op->err, 0);
	assert_false(r->op->zero);
	assert_int_equal(bftblk__op_finish_read(r->op), 0);
	assert_memory_equal(r->data, value, BFT_BLOCK_SIZE);
}

/* Whether every byte of p is c. */
static bool
all_bytes(const uint8_t *p, uint8_t c)
{
	for (size_t i = 0; i < BFT_BLOCK_SIZE; i++)
		if (p[i] != c)
			return false;
	return true;
}

/*
 * A block never written: n-t COLLECT answers with no candidate end the
 * read with zeros, without FILTER.  Of the COLLECTs only the first k =
 * t+1 servers' ask for a fragment.
 */
static void
test_never_written_reads_zero(void **state)
{
	struct fx *f = *state;
	const struct bft_msg *req[BFT_MAX_N];
	struct bft_ts ts;
	struct run r;

	run_start(f, &r, OP_READ, BLOCK, NULL);
	for (unsigned i = 0; i < f->n; i++) {
		req[i] = take(i, BFT_COLLECT, BLOCK);
		assert_int_equal(req[i]->want_frag, i <= f->t);
	}
	for (unsigned i = 0; i < f->q; i++) {
		assert_false(run_done(&r));
		answer(f, i, req[i]);
	}
	assert_true(run_done(&r));
	assert_int_equal(r.op->err, 0);
	assert_true(r.op->zero);
	assert_true(all_sent(f, 1));
	assert_int_equal(bftblk__op_finish_read(r.op), 0);
	assert_true(all_bytes(r.data, 0));
	bftblk__op_read_ts(r.op, &ts);
	assert_true(bft_ts_is_zero(&ts));
	run_end(&r);
}

/*
 * The servers agree: n-t answers carry the same candidate, and the k
 * asked for fragments send good ones.  The read is done in one round,
 * with no FILTER sent.
 */
static void
test_fast_read(void **state)
{
	struct fx *f = *state;
	uint8_t *value = new_value();
	struct bft_ts ts;
	struct run r;

	write_all(f, BLOCK, value);
	run_start(f, &r, OP_READ, BLOCK, NULL);
	for (unsigned i = 0; i < f->q; i++) {
		assert_false(run_done(&r));
		serve(f, i);
	}
	assert_read(&r, value);
	assert_true(r.op->fast_done);
	assert_true(all_sent(f, 4));	/* CLOCK, STORE, COMPLETE, COLLECT */
	assert_int_equal(stat_of(&f->cl->stats.fast_reads), 1);
	assert_int_equal(stat_of(&f->cl->stats.fast_read_fallbacks), 0);
	bftblk__op_read_ts(r.op, &ts);
	assert_true(bft_ts_cmp(&ts, &lc_at(f, 0, BLOCK)->ts) == 0);
	run_end(&r);
	free(value);
}

/*
 * Data server 0 sends a corrupt fragment, whose payload the 1-round read
 * has already placed in the block.  With only t good fragments left the
 * read falls back to FILTER, where server 0 lies again, and still returns
 * the value written, every byte of the corrupt payload overwritten.  The
 * next read asks another server for a fragment instead of server 0.
 */
static void
test_corrupt_fragment(void **state)
{
	struct fx *f = *state;
	uint8_t *value = new_value();
	const struct bft_msg *req;
	struct run r;

	write_all(f, BLOCK, value);
	run_start(f, &r, OP_READ, BLOCK, NULL);
	answer_corrupt(f, 0, take(0, BFT_COLLECT, BLOCK));
	serve_each(f, f->all & ~1u);
	assert_false(run_done(&r));
	assert_int_equal(stat_of(&f->cl->stats.fast_read_fallbacks), 1);
	assert_true(f->cl->frag_avoid_until[0] > uv_now(&f->lp->loop));
	/* The direct coder put the corrupt payload in the caller's buffer. */
	if (bft_ec_direct(f->w->ec))
		assert_true(r.op->placed & 1u);
	answer_corrupt(f, 0, take(0, BFT_FILTER, BLOCK));
	serve_all(f, f->all & ~1u);
	assert_read(&r, value);
	assert_false(r.op->fast_done);
	assert_int_equal(stat_of(&f->cl->stats.server[0].bad_fragments), 1);
	run_end(&r);

	run_start(f, &r, OP_READ, BLOCK, NULL);
	for (unsigned i = 0; i < f->n; i++) {
		req = take(i, BFT_COLLECT, BLOCK);
		assert_int_equal(req->want_frag, i >= 1 && i <= f->t + 1);
		answer(f, i, req);
	}
	assert_read(&r, value);
	assert_true(r.op->fast_done);
	run_end(&r);
	free(value);
}

/*
 * The t data servers 0..t-1 answer slower than the others.  Once their
 * reply times show it, the 1-round read asks the fastest servers for
 * fragments instead, and is done, and right, before any slow answer
 * arrives, with no fallback and no tick: it never waited for them.
 * With one slow server's lead below DATA_PREFERENCE_NS, the data servers
 * are asked as before.
 */
static void
test_slow_data_servers(void **state)
{
	struct fx *f = *state;
	uint8_t *value = new_value();
	const struct bft_msg *req[BFT_MAX_N];
	uint32_t slow = first(f->t);
	struct run r;

	write_all(f, BLOCK, value);
	for (unsigned i = 0; i < f->n; i++)
		for (int k = 0; k < 16; k++)
			bftblk__engine_note_latency(f->cl, i,
			    IN(slow, i) ? 2000000 : 200000);
	run_start(f, &r, OP_READ, BLOCK, NULL);
	for (unsigned i = 0; i < f->n; i++) {
		req[i] = take(i, BFT_COLLECT, BLOCK);
		assert_int_equal(req[i]->want_frag,
		    !IN(slow, i) && i <= 2 * f->t);
	}
	for (unsigned i = 0; i < f->n && !run_done(&r); i++)
		if (!IN(slow, i))
			answer(f, i, req[i]);
	assert_read(&r, value);
	assert_true(r.op->fast_done);
	assert_int_equal(popcount32(r.op->replied), f->q);
	assert_int_equal(stat_of(&f->cl->stats.fast_read_fallbacks), 0);
	for (unsigned i = 0; i < f->n; i++)
		if (IN(slow, i))
			answer(f, i, req[i]);
	assert_int_equal(r.op->err, 0);
	assert_memory_equal(r.data, value, BFT_BLOCK_SIZE);
	run_end(&r);

	/* 0.2 ms slower is noise: the data servers' fragments decode by copy. */
	for (unsigned i = 0; i < f->n; i++)
		for (int k = 0; k < 64; k++)
			bftblk__engine_note_latency(f->cl, i,
			    IN(slow, i) ? 400000 : 200000);
	run_start(f, &r, OP_READ, BLOCK, NULL);
	for (unsigned i = 0; i < f->n; i++)
		assert_int_equal(take(i, BFT_COLLECT, BLOCK)->want_frag,
		    i <= f->t);
	run_end(&r);
	lose_queued(f);
	free(value);
}

/*
 * t Byzantine data servers answer first, each with a corrupt fragment
 * and a cross-checksum they made to match it, agreeing with each other.
 * The forged cc never reaches t+1 votes and the corrupt fragments do not
 * hash to the agreed one: the read returns the value written.
 */
static void
test_fast_liars_first(void **state)
{
	struct fx *f = *state;
	uint8_t *value = new_value();
	const struct bft_msg *req[BFT_MAX_N];
	static struct bft_msg rep[BFT_MAX_N];
	static uint8_t frag[BFT_MAX_N][BFT_MAX_FRAG];
	uint8_t cc[BFT_MAX_N][BFT_HASH_LEN];
	uint32_t liars = first(f->t + 1) & ~1u;	/* 1..t: data servers */
	struct run r;

	write_all(f, BLOCK, value);
	run_start(f, &r, OP_READ, BLOCK, NULL);
	for (unsigned i = 0; i < f->n; i++)
		req[i] = take(i, BFT_COLLECT, BLOCK);
	for (unsigned i = 0; i < f->n; i++) {
		if (!IN(liars, i))
			continue;
		honest(f, i, req[i], &rep[i]);
		assert_true(rep[i].has_cc);
		assert_int_equal(rep[i].frag_len, f->w->flen);
		memcpy(frag[i], rep[i].frag, rep[i].frag_len);
		frag[i][rep[i].frag_len / 2] ^= 0x01;
		rep[i].frag = frag[i];
		memcpy(cc, rep[i].cc, sizeof cc);
	}
	for (unsigned i = 0; i < f->n; i++)
		if (IN(liars, i))
			bft_hash(frag[i], f->w->flen, cc[i]);
	for (unsigned i = 0; i < f->n; i++) {
		if (!IN(liars, i))
			continue;
		memcpy(rep[i].cc, cc, (size_t)f->n * BFT_HASH_LEN);
		fake_conn_deliver(conn_of(f, i), &rep[i]);
	}
	assert_false(run_done(&r));
	for (unsigned i = 0; i < f->n && !run_done(&r); i++)
		if (!IN(liars, i))
			answer(f, i, req[i]);
	if (!run_done(&r)) {
		/* Too few good fragments in one round: FILTER decides. */
		tick(f, PAST_FRAG_WAIT);
		serve_all(f, f->all & ~liars);
		lose_queued(f);
	}
	assert_read(&r, value);
	run_end(&r);
	free(value);
}

/*
 * With the last t servers down, a liar among the n-t answers offers a
 * newer candidate it cannot sign, with fragments and cross-checksum of
 * its own.  The reader drops it on arrival and counts it: FILTER carries
 * only the genuine candidate, which the n-t-1 correct servers make safe.
 * Kept, the forgery would be the highest candidate, never safe and never
 * outvoted by n-t older answers, and the read could not finish.
 */
static void
test_forged_candidate_dropped(void **state)
{
	struct fx *f = *state;
	unsigned liar = f->q - 1;
	uint8_t *value = new_value();
	const struct bft_msg *req;
	struct bft_msg rep;
	struct write forged;
	struct run r;

	write_all(f, BLOCK, value);
	set_up(f, first(f->q));
	make_forgery(f->w, 9, 0x55, &forged);
	run_start(f, &r, OP_READ, BLOCK, NULL);
	reply_to(take(liar, BFT_COLLECT, BLOCK), BFT_OK, &rep);
	rep.ncands = 1;
	rep.cands[0] = forged.c;
	rep.has_cc = true;
	memcpy(rep.cc, forged.h.cc, sizeof rep.cc);
	fake_conn_deliver(conn_of(f, liar), &rep);
	assert_int_equal(stat_of(&f->cl->stats.forged_ts), 1);
	assert_int_equal(stat_of(&f->cl->stats.server[liar].forged_ts), 1);
	serve_each(f, first(f->q - 1));
	/* n-t-1 agree; the down servers might yet: the fast path waits. */
	assert_false(run_done(&r));
	tick(f, PAST_FRAG_WAIT);
	for (unsigned i = 0; i < f->q; i++) {
		req = take(i, BFT_FILTER, BLOCK);
		assert_int_equal(req->ncands, 1);
		assert_true(bft_ts_cmp(&req->cands[0].ts,
		    &lc_at(f, 0, BLOCK)->ts) == 0);
		if (i != liar) {
			answer(f, i, req);
			continue;
		}
		reply_to(req, BFT_OK, &rep);
		rep.ts = forged.c.ts;
		memcpy(rep.vec, forged.c.vec, sizeof rep.vec);
		memcpy(rep.cc, forged.h.cc, sizeof rep.cc);
		rep.frag = forged.frags[liar];
		rep.frag_len = f->w->flen;
		fake_conn_deliver(conn_of(f, liar), &rep);
	}
	assert_read(&r, value);
	run_end(&r);
	free_write(f->w, &forged);
	free(value);
}

/*
 * The last t servers missed the newest write.  Answering COLLECT first
 * with the older value they cannot make a read return it: when n-t
 * answers agree on the new value the 1-round read takes it, and when the
 * read goes through FILTER the new value is the one made safe (and the
 * stale servers get it written back).
 */
static void
test_stale_servers_cannot_roll_back(void **state)
{
	struct fx *f = *state;
	uint32_t stale = f->all & ~first(f->q), fresh = first(f->q - f->t);
	uint8_t *old = new_value(), *value = new_value();
	const struct bft_msg *req;
	struct bft_ts ts;
	struct run r;

	write_all(f, BLOCK, old);
	set_up(f, first(f->q));
	write_all(f, BLOCK, value);
	set_up(f, f->all);
	ts = lc_at(f, 0, BLOCK)->ts;
	assert_true(bft_ts_cmp(&lc_at(f, f->n - 1, BLOCK)->ts, &ts) < 0);

	run_start(f, &r, OP_READ, BLOCK, NULL);
	serve_each(f, stale);
	serve_each(f, first(f->q));
	assert_read(&r, value);
	assert_true(r.op->fast_done);
	run_end(&r);
	lose_queued(f);

	run_start(f, &r, OP_READ, BLOCK, NULL);
	serve_each(f, stale);
	serve_each(f, fresh);
	assert_false(run_done(&r));
	tick(f, PAST_FRAG_WAIT);
	req = take(0, BFT_FILTER, BLOCK);
	assert_int_equal(req->ncands, 2);
	answer(f, 0, req);
	serve_each(f, stale);
	serve_each(f, fresh & ~1u);
	assert_read(&r, value);
	assert_memory_not_equal(r.data, old, BFT_BLOCK_SIZE);
	for (unsigned i = f->q; i < f->n; i++)
		assert_true(bft_ts_cmp(&lc_at(f, i, BLOCK)->ts, &ts) == 0);
	run_end(&r);
	free(old);
	free(value);
}

/*
 * Server 0 answers COLLECT first with the completed candidate but one
 * entry of its MAC vector altered.  That copy is the highest candidate
 * FILTER finds safe, and it goes out again only after REPAIR restores
 * the vector the t+1 servers backing it agree on: otherwise the server
 * whose entry it is would refuse the candidate if it were written back.
 */
static void
test_repair_altered_vec(void **state)
{
	struct fx *f = *state;
	uint8_t *value = new_value();
	const struct bft_msg *req;
	static struct bft_msg rep;
	struct run r;

	write_all(f, BLOCK, value);
	run_start(f, &r, OP_READ, BLOCK, NULL);
	honest(f, 0, take(0, BFT_COLLECT, BLOCK), &rep);
	rep.cands[0].vec[f->n - 1][0] ^= 1;
	fake_conn_deliver(conn_of(f, 0), &rep);
	serve_each(f, first(f->q) & ~1u);
	tick(f, PAST_FRAG_WAIT);
	for (unsigned i = 0; i < f->q; i++) {
		req = take(i, BFT_FILTER, BLOCK);
		assert_int_equal(req->ncands, 2);
		assert_memory_not_equal(req->cands[0].vec,
		    lc_at(f, i, BLOCK)->vec, (size_t)f->n * BFT_MAC_LEN);
		assert_int_equal(stat_of(&f->cl->stats.repairs), 0);
		answer(f, i, req);
	}
	assert_int_equal(stat_of(&f->cl->stats.repairs), 1);
	assert_false(run_done(&r));
	for (unsigned i = 0; i < f->q; i++) {
		req = take(i, BFT_REPAIR, BLOCK);
		assert_int_equal(req->ncands, 1);
		assert_memory_equal(&req->cands[0], lc_at(f, i, BLOCK),
		    offsetof(struct bft_cand, vec) +
		    (size_t)f->n * BFT_MAC_LEN);
		answer(f, i, req);
	}
	assert_read(&r, value);
	run_end(&r);
	free(value);
}

/*
 * A reply that comes after its read finished changes nothing, and nor
 * does it when it arrives during the next read of the block, which has
 * the same slot: it is not that read's answer from the server, however
 * well it would fit.
 */
static void
test_late_replies_change_nothing(void **state)
{
	struct fx *f = *state;
	struct engine_server_stats *ss = &f->cl->stats.server[f->n - 1];
	uint8_t *a = new_value(), *b = new_value();
	const struct bft_msg *late;
	unsigned long long replies;
	struct run r;

	write_all(f, BLOCK, a);
	run_start(f, &r, OP_READ, BLOCK, NULL);
	serve_each(f, first(f->q));
	assert_read(&r, a);
	late = take(f->n - 1, BFT_COLLECT, BLOCK);
	replies = stat_of(&ss->replies);
	answer(f, f->n - 1, late);
	assert_int_equal(stat_of(&ss->replies), replies);
	assert_int_equal(r.op->err, 0);
	assert_memory_equal(r.data, a, BFT_BLOCK_SIZE);
	assert_true(all_sent(f, 4));	/* CLOCK, STORE, COMPLETE, COLLECT */
	run_end(&r);
	lose_queued(f);

	write_all(f, BLOCK, b);
	run_start(f, &r, OP_READ, BLOCK, NULL);
	replies = stat_of(&ss->replies);
	answer(f, f->n - 1, late);
	assert_int_equal(stat_of(&ss->replies), replies);
	assert_false(IN(r.op->replied, f->n - 1));
	assert_int_equal(r.op->nc, 0);
	serve(f, f->n - 1);
	assert_int_equal(stat_of(&ss->replies), replies + 1);
	serve_all(f, f->all);
	assert_read(&r, b);
	run_end(&r);
	free(a);
	free(b);
}

/*
 * Server 1, asked for a fragment, is slow: the 1-round read waits for it
 * a little, then runs FILTER, and its COLLECT answer arriving then is
 * ignored.  Only n-t-1 servers answer FILTER: at the round's deadline,
 * not before, the read fails with EIO, and the payload server 0 placed
 * in the block unchecked is wiped rather than handed back.
 */
static void
test_filter_timeout(void **state)
{
	struct fx *f = *state;
	uint8_t *value = new_value();
	const struct bft_msg *req[BFT_MAX_N];
	unsigned long long replies;
	struct run r;

	write_all(f, BLOCK, value);
	replies = stat_of(&f->cl->stats.server[1].replies);
	run_start(f, &r, OP_READ, BLOCK, NULL);
	for (unsigned i = 0; i < f->n; i++)
		req[i] = take(i, BFT_COLLECT, BLOCK);
	answer(f, 0, req[0]);
	for (unsigned i = f->t + 1; i < f->n; i++)
		answer(f, i, req[i]);
	tick(f, PAST_FRAG_WAIT);
	assert_false(run_done(&r));
	assert_int_equal(stat_of(&f->cl->stats.fast_read_fallbacks), 1);
	answer(f, 1, req[1]);
	assert_int_equal(stat_of(&f->cl->stats.server[1].replies), replies);
	serve_each(f, first(f->q - 1));
	tick(f, TIMEOUT_MS - 1);
	assert_false(run_done(&r));
	tick(f, TIMEOUT_MS);
	assert_true(run_done(&r));
	assert_int_equal(r.op->err, EIO);
	assert_int_equal(stat_of(&f->cl->stats.timeouts), 1);
	for (unsigned i = 0; i < f->n; i++)
		assert_int_equal(stat_of(&f->cl->stats.server[i].timeouts),
		    i >= f->q - 1);
	assert_true(all_bytes(r.data, r.op->unchecked ? 0 : 0xaa));
	if (bft_ec_direct(f->w->ec))
		assert_true(r.op->unchecked);
	run_end(&r);
	free(value);
}

/*
 * A rebuilding server reads as role peer, with no k_W: a liar can offer
 * the genuine ts and vec of the newest write with a nonce of its own,
 * which the value's checks cannot tell apart (the value comes from the
 * fragments).  Chosen, it would be refused when the server adopts it.
 * The peer checks its own MAC entry over H(N) and drops it, counted
 * against the liar, and the read returns the genuine nonce.
 */
static void
test_peer_drops_foreign_nonce(void **state)
{
	struct fx *f = *state;
	unsigned self = 0, liar = 1;
	uint8_t *value = new_value();
	const struct bft_msg *req;
	struct bft_msg rep;
	struct run r;

	write_all(f, BLOCK, value);
	f->ck.role = BFT_ROLE_PEER;
	f->ck.self = self;
	memset(f->ck.kw, 0, sizeof f->ck.kw);
	for (unsigned i = 0; i < f->n; i++)
		if (i != self)
			memset(f->ck.k[i], 0, BFT_KEY_LEN);
	f->cl->key = f->ck;	/* the engine's copy (engine_keys.c) */
	set_up(f, f->all & ~(1u << self));
	run_start(f, &r, OP_READ, BLOCK, NULL);
	/* The liar answers first, so that its candidate would come first. */
	req = take(liar, BFT_COLLECT, BLOCK);
	honest(f, liar, req, &rep);
	assert_int_equal(rep.ncands, 1);
	bft_random(rep.cands[0].nonce, BFT_NONCE_LEN);
	fake_conn_deliver(conn_of(f, liar), &rep);
	assert_int_equal(stat_of(&f->cl->stats.server[liar].forged_ts), 1);
	serve_all(f, f->all & ~(1u << self));
	assert_read(&r, value);
	assert_memory_equal(r.op->chosen.nonce, lc_at(f, 2, BLOCK)->nonce,
	    BFT_NONCE_LEN);
	assert_int_equal(stat_of(&f->cl->stats.forged_ts), 1);
	run_end(&r);
	free(value);
}

/* Server i answers req honestly but says nothing of Hist[lc.ts]. */
static void
answer_without_cc(struct fx *f, unsigned i, const struct bft_msg *req)
{
	static struct bft_msg rep;

	honest(f, i, req, &rep);
	rep.has_cc = false;
	rep.frag_len = 0;
	fake_conn_deliver(conn_of(f, i), &rep);
}

/*
 * Server i claims the zero value for what it holds: the candidate it
 * has, the zero cc and no fragment, as if the block had been trimmed.
 */
static void
answer_trimmed(struct fx *f, unsigned i, const struct bft_msg *req)
{
	static struct bft_msg rep;

	honest(f, i, req, &rep);
	bft_cc_set_zero(rep.cc, f->n);
	rep.has_cc = req->type == BFT_COLLECT;
	rep.frag_len = 0;
	fake_conn_deliver(conn_of(f, i), &rep);
}

/*
 * A trimmed block: the zero value over a written one reads as zeros in
 * one round, with no fragment asked of anyone that holds one, and
 * through FILTER when COLLECT cannot decide; its timestamp is the trim's.
 */
static void
test_zero_value_reads_zero(void **state)
{
	struct fx *f = *state;
	uint8_t *value = new_value();
	struct bft_ts ts;
	struct run r;

	write_all(f, BLOCK, value);
	write_all(f, BLOCK, NULL);
	for (int pass = 0; pass < 2; pass++) {
		run_start(f, &r, OP_READ, BLOCK, NULL);
		for (unsigned i = 0; i < f->n; i++) {
			const struct bft_msg *req = take(i, BFT_COLLECT, BLOCK);

			if (pass == 0)
				answer(f, i, req);
			else
				answer_without_cc(f, i, req);
		}
		serve_all(f, f->all);
		assert_true(run_done(&r));
		assert_int_equal(r.op->err, 0);
		assert_false(r.op->zero);
		assert_int_equal(r.op->fast_done, pass == 0);
		assert_int_equal(bftblk__op_finish_read(r.op), 0);
		assert_true(all_bytes(r.data, 0));
		bftblk__op_read_ts(r.op, &ts);
		assert_true(bft_ts_cmp(&ts, &lc_at(f, 0, BLOCK)->ts) == 0);
		run_end(&r);
	}
	free(value);
}

/*
 * t liars claim a written block was trimmed, in COLLECT and in FILTER.
 * The zero value needs t+1 servers agreeing on its cc like any value:
 * the read returns the value written (through FILTER: the liars are
 * among the servers asked for fragments).
 */
static void
test_trim_lie(void **state)
{
	struct fx *f = *state;
	uint8_t *value = new_value();
	struct run r;

	write_all(f, BLOCK, value);
	for (int pass = 0; pass < 2; pass++) {
		run_start(f, &r, OP_READ, BLOCK, NULL);
		for (unsigned i = 0; i < f->n; i++) {
			const struct bft_msg *req = take(i, BFT_COLLECT, BLOCK);

			/* Pass 1: the honest ones hide their cc: FILTER. */
			if (i < f->t)
				answer_trimmed(f, i, req);
			else if (pass == 0)
				answer(f, i, req);
			else
				answer_without_cc(f, i, req);
		}
		for (unsigned i = 0; i < f->t; i++) {
			const struct bft_msg *req = fake_conn_take(i);

			if (req != NULL)
				answer_trimmed(f, i, req);
		}
		serve_all(f, f->all & ~first(f->t));
		assert_read(&r, value);
		run_end(&r);
	}
	free(value);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH_ROUNDS(test_never_written_reads_zero),
		BOTH_ROUNDS(test_fast_read),
		BOTH_ROUNDS(test_corrupt_fragment),
		BOTH_ROUNDS(test_slow_data_servers),
		BOTH_ROUNDS(test_fast_liars_first),
		BOTH_ROUNDS(test_forged_candidate_dropped),
		BOTH_ROUNDS(test_peer_drops_foreign_nonce),
		BOTH_ROUNDS(test_stale_servers_cannot_roll_back),
		BOTH_ROUNDS(test_repair_altered_vec),
		BOTH_ROUNDS(test_late_replies_change_nothing),
		BOTH_ROUNDS(test_filter_timeout),
		BOTH_ROUNDS(test_zero_value_reads_zero),
		BOTH_ROUNDS(test_trim_lie),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
