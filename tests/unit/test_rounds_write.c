/*
 * The write state machine (lib/op_write.c, with the round machinery of
 * lib/engine.c) driven through a fake transport against real server
 * code (rounds_fixture.h): the three rounds and what each carries, the
 * CLOCK-less write and its fallback, forged timestamps, error replies,
 * replies that belong to no current round, timeouts, and the writer id
 * a failed write must give up.
 */
#include <errno.h>

/* The block the tests read and write; the fixture's writes are its. */
#define BLOCK 3

#include "rounds_fixture.h"

/* Server i's CLOCK_ACK says its lc.ts is ts. */
static void
clock_ack(struct fx *f, unsigned i, const struct bft_ts *ts)
{
	struct bft_msg rep;

	reply_to(take(i, BFT_CLOCK, BLOCK), BFT_OK, &rep);
	rep.ts = *ts;
	fake_conn_deliver(conn_of(f, i), &rep);
}

/*
 * CLOCK takes the highest genuine timestamp of n-t answers and signs the
 * next one; STORE gives server i fragment i of the value, the
 * cross-checksum of all of them and a MAC vector every server can check;
 * COMPLETE reveals the nonce whose hash STORE carried.  Each round waits
 * for exactly n-t answers, and the op finishes, committed, at the
 * (n-t)-th COMPLETE acknowledgement.
 */
static void
test_write_three_rounds(void **state)
{
	struct fx *f = *state;
	struct world *w = f->w;
	uint8_t *value = new_value(), *frags[BFT_MAX_N], h[BFT_HASH_LEN];
	const struct bft_msg *store[BFT_MAX_N], *complete[BFT_MAX_N];
	struct bft_ts ts, top = mkts(w, 9, 5);
	struct run r;

	for (unsigned i = 0; i < f->n; i++)
		assert_non_null(frags[i] = malloc(w->flen));
	assert_int_equal(bft_ec_encode(w->ec, value, frags), 0);
	run_start(f, &r, OP_WRITE, BLOCK, value);
	/* Server 1 knows the newest write; the t silent ones never say. */
	for (unsigned i = 0; i < f->q; i++) {
		struct bft_ts lc = i == 1 ? top : mkts(w, 3 + i % 2, 100 + i);

		assert_true(all_sent(f, 1));
		clock_ack(f, i, &lc);
	}
	assert_true(all_sent(f, 2));
	for (unsigned i = f->q; i < f->n; i++)
		take(i, BFT_CLOCK, BLOCK);
	for (unsigned i = 0; i < f->n; i++) {
		store[i] = take(i, BFT_STORE, BLOCK);
		ts = store[i]->ts;
		assert_true(ts.num == top.num + 1 && ts.wid == WRITER_ID);
		assert_true(bft_ts_verify(&ts, BLOCK, w->kw));
		assert_memory_equal(store[i]->nh, store[0]->nh, BFT_HASH_LEN);
		for (unsigned j = 0; j < f->n; j++) {
			assert_true(bft_vec_verify(&ts, BLOCK, store[0]->nh, w->k[j],
			    store[i]->vec[j]));
			bft_hash(frags[j], w->flen, h);
			assert_memory_equal(store[i]->cc[j], h, BFT_HASH_LEN);
		}
		assert_int_equal(store[i]->frag_len, w->flen);
		assert_memory_equal(store[i]->frag, frags[i], w->flen);
	}
	for (unsigned i = 0; i < f->q; i++) {
		assert_true(all_sent(f, 2));
		answer(f, i, store[i]);
	}
	assert_true(all_sent(f, 3));
	for (unsigned i = 0; i < f->n; i++) {
		complete[i] = take(i, BFT_COMPLETE, BLOCK);
		assert_true(bft_ts_cmp(&complete[i]->ts, &ts) == 0);
		assert_memory_equal(complete[i]->ts.mac, ts.mac, BFT_MAC_LEN);
		bft_hash(complete[i]->nonce, BFT_NONCE_LEN, h);
		assert_memory_equal(h, store[0]->nh, BFT_HASH_LEN);
		assert_memory_equal(complete[i]->vec, store[0]->vec,
		    (size_t)f->n * BFT_MAC_LEN);
	}
	for (unsigned i = 0; i < f->q; i++) {
		assert_false(run_done(&r));
		assert_false(r.op->committed);
		answer(f, i, complete[i]);
	}
	assert_true(run_done(&r));
	assert_int_equal(r.op->err, 0);
	assert_true(r.op->committed);
	for (unsigned i = 0; i < f->q; i++)
		assert_true(bft_ts_cmp(&lc_at(f, i, BLOCK)->ts, &ts) == 0);
	/* The next write of the block may skip CLOCK. */
	assert_true(f->cl->tscache[BLOCK].valid &&
	    f->cl->tscache[BLOCK].num == ts.num);
	assert_int_equal(stat_of(&f->cl->stats.writes), 1);
	assert_int_equal(stat_of(&f->cl->stats.fast_writes), 0);
	run_end(&r);
	for (unsigned i = 0; i < f->n; i++)
		free(frags[i]);
	free(value);
}

/*
 * A liar answers CLOCK first with a huge timestamp it cannot sign.  The
 * writer ignores it, counts it against that server, and stores just
 * above the genuine newest write; otherwise one liar could run num up to
 * its limit.
 */
static void
test_clock_forged_ts(void **state)
{
	struct fx *f = *state;
	struct write other, forged;
	uint8_t *value = new_value();
	const struct bft_msg *req;
	struct run r;

	make_write(f->w, 4, 0x77, &other);
	put_write(f, f->all, BLOCK, &other);
	make_forgery(f->w, 1000, 0x99, &forged);
	run_start(f, &r, OP_WRITE, BLOCK, value);
	clock_ack(f, 0, &forged.c.ts);
	serve_each(f, f->all & ~1u);
	assert_int_equal(stat_of(&f->cl->stats.forged_ts), 1);
	assert_int_equal(stat_of(&f->cl->stats.server[0].forged_ts), 1);
	for (unsigned i = 1; i < f->n; i++)
		assert_int_equal(stat_of(&f->cl->stats.server[i].forged_ts), 0);
	for (unsigned i = 0; i < f->n; i++) {
		req = take(i, BFT_STORE, BLOCK);
		assert_true(req->ts.num == 5 && req->ts.wid == WRITER_ID);
		answer(f, i, req);
	}
	serve_all(f, f->all);
	assert_true(run_done(&r));
	assert_int_equal(r.op->err, 0);
	assert_true(lc_at(f, 0, BLOCK)->ts.num == 5);
	run_end(&r);
	free_write(f->w, &other);
	free_write(f->w, &forged);
	free(value);
}

/*
 * A writer that completed the block's last write stores under the next
 * timestamp at once: two rounds, no CLOCK.
 */
static void
test_fast_write(void **state)
{
	struct fx *f = *state;
	uint8_t *a = new_value(), *b = new_value();
	const struct bft_msg *req;
	struct run r;

	write_all(f, BLOCK, a);
	run_start(f, &r, OP_WRITE, BLOCK, b);
	for (unsigned i = 0; i < f->n; i++) {
		req = take(i, BFT_STORE, BLOCK);
		assert_true(req->ts.num == 2 && req->ts.wid == WRITER_ID);
		answer(f, i, req);
	}
	serve_all(f, f->all);
	assert_true(run_done(&r));
	assert_int_equal(r.op->err, 0);
	assert_true(r.op->committed);
	assert_int_equal(stat_of(&f->cl->stats.fast_writes), 1);
	assert_int_equal(stat_of(&f->cl->stats.fast_fallbacks), 0);
	for (unsigned i = 0; i < f->n; i++)
		assert_true(lc_at(f, i, BLOCK)->ts.num == 2);
	run_end(&r);
	free(a);
	free(b);
}

/*
 * Another writer completed num 5 since: the first STORE_ACK reports it,
 * so the write gives up its timestamp and starts again with CLOCK, under
 * a fresh writer id and a fresh nonce, and lands above num 5.  The other
 * servers' acks of the abandoned STORE arrive late and count for nothing.
 */
static void
test_fast_write_fallback(void **state)
{
	struct fx *f = *state;
	uint8_t *a = new_value(), *b = new_value();
	const struct bft_msg *req, *old[BFT_MAX_N];
	struct write other;
	struct run r;

	write_all(f, BLOCK, a);
	make_write(f->w, 5, 0x77, &other);
	put_write(f, f->all, BLOCK, &other);
	run_start(f, &r, OP_WRITE, BLOCK, b);
	for (unsigned i = 0; i < f->n; i++)
		assert_true((old[i] = take(i, BFT_STORE, BLOCK))->ts.num == 2);
	answer(f, 0, old[0]);
	assert_int_equal(stat_of(&f->cl->stats.fast_fallbacks), 1);
	assert_false(f->cl->tscache[BLOCK].valid);
	assert_true(f->cl->writer_id != WRITER_ID);
	for (unsigned i = 1; i < f->n; i++)
		answer(f, i, old[i]);
	for (unsigned i = 0; i < f->n; i++)
		answer(f, i, take(i, BFT_CLOCK, BLOCK));
	for (unsigned i = 0; i < f->n; i++) {
		req = take(i, BFT_STORE, BLOCK);
		assert_true(req->ts.num == 6);
		assert_true(req->ts.wid == f->cl->writer_id);
		assert_memory_not_equal(req->nh, old[0]->nh, BFT_HASH_LEN);
		answer(f, i, req);
	}
	serve_all(f, f->all);
	assert_true(run_done(&r));
	assert_int_equal(r.op->err, 0);
	assert_true(r.op->committed);
	assert_true(lc_at(f, 0, BLOCK)->ts.num == 6);
	assert_true(lc_at(f, 0, BLOCK)->ts.wid == f->cl->writer_id);
	run_end(&r);
	free_write(f->w, &other);
	free(a);
	free(b);
}

/*
 * Only a genuine newer timestamp sends the write back to CLOCK: a liar's
 * STORE_ACK with one it made up changes nothing, or one liar could turn
 * every write into three rounds (or, were its number taken, exhaust num).
 */
static void
test_fast_write_forged_lc(void **state)
{
	struct fx *f = *state;
	uint8_t *a = new_value(), *b = new_value();
	const struct bft_msg *req;
	struct bft_msg rep;
	struct write forged;
	struct run r;

	write_all(f, BLOCK, a);
	make_forgery(f->w, 100, WRITER_ID, &forged);
	run_start(f, &r, OP_WRITE, BLOCK, b);
	reply_to(take(0, BFT_STORE, BLOCK), BFT_OK, &rep);
	rep.ts = forged.c.ts;
	fake_conn_deliver(conn_of(f, 0), &rep);
	for (unsigned i = 1; i < f->n; i++)
		answer(f, i, take(i, BFT_STORE, BLOCK));
	assert_int_equal(stat_of(&f->cl->stats.fast_fallbacks), 0);
	for (unsigned i = 0; i < f->n; i++) {
		req = take(i, BFT_COMPLETE, BLOCK);
		assert_true(req->ts.num == 2 && req->ts.wid == WRITER_ID);
		answer(f, i, req);
	}
	assert_true(run_done(&r));
	assert_int_equal(r.op->err, 0);
	assert_true(f->cl->writer_id == WRITER_ID);
	run_end(&r);
	free_write(f->w, &forged);
	free(a);
	free(b);
}

/*
 * t error answers leave n-t servers to go on with; one more ends the op
 * with the errno that says why.  Failing in STORE, after CLOCK, the
 * write may have reached a few servers, so the writer takes a new id.
 */
static void
test_error_replies(void **state)
{
	static const struct { int status, err; } cases[] = {
		{ BFT_EPERM, EPERM }, { BFT_EAUTH, EPERM },
		{ BFT_ENOSPC, ENOSPC }, { BFT_ERANGE, EINVAL },
		{ BFT_EIO, EIO }, { BFT_EPROTO, EIO }, { BFT_EBUSY, EIO },
	};
	struct fx *f = *state;
	uint8_t *value = new_value();
	struct bft_msg rep;

	for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		uint64_t block = c, wid = f->cl->writer_id;
		struct run r;

		run_start(f, &r, OP_WRITE, block, value);
		serve_each(f, f->all);
		for (unsigned i = 0; i <= f->t; i++) {
			assert_false(run_done(&r));
			reply_to(take(i, BFT_STORE, block), cases[c].status,
			    &rep);
			fake_conn_deliver(conn_of(f, i), &rep);
		}
		assert_true(run_done(&r));
		assert_int_equal(r.op->err, cases[c].err);
		assert_false(r.op->committed);
		assert_true(f->cl->writer_id != wid);
		for (unsigned i = 0; i <= f->t; i++)
			assert_int_equal(stat_of(
			    &f->cl->stats.server[i].error_replies), c + 1);
		lose_queued(f);
		run_end(&r);
	}
	free(value);
}

/* With only t refusals the other n-t servers carry the write. */
static void
test_t_errors_tolerated(void **state)
{
	struct fx *f = *state;
	uint8_t *value = new_value();
	struct bft_msg rep;
	struct run r;

	run_start(f, &r, OP_WRITE, BLOCK, value);
	for (unsigned i = 0; i < f->t; i++) {
		reply_to(take(i, BFT_CLOCK, BLOCK), BFT_EIO, &rep);
		fake_conn_deliver(conn_of(f, i), &rep);
	}
	serve_all(f, f->all);
	assert_true(run_done(&r));
	assert_int_equal(r.op->err, 0);
	assert_true(r.op->committed);
	assert_true(f->cl->writer_id == WRITER_ID);
	run_end(&r);
	free(value);
}

/*
 * Replies that answer no current request of the op are dropped: one
 * carrying the id of the op's earlier round, one of another type or
 * block (a lie, counted), and a second answer from the same server.  None
 * may stand in for a missing acknowledgement.
 */
static void
test_stale_and_mismatched_replies(void **state)
{
	struct fx *f = *state;
	struct engine_server_stats *ss = f->cl->stats.server;
	unsigned last = f->n - 1;
	uint8_t *value = new_value();
	const struct bft_msg *clock, *store[BFT_MAX_N];
	struct bft_msg rep;
	struct run r;

	run_start(f, &r, OP_WRITE, BLOCK, value);
	clock = take(last, BFT_CLOCK, BLOCK);
	serve_each(f, f->all & ~(1u << last));
	for (unsigned i = 0; i < f->n; i++)
		store[i] = take(i, BFT_STORE, BLOCK);
	/* The last server's CLOCK_ACK, and a STORE_ACK under CLOCK's id. */
	reply_to(clock, BFT_OK, &rep);
	fake_conn_deliver(conn_of(f, last), &rep);
	rep.type = BFT_STORE | BFT_ACK;
	fake_conn_deliver(conn_of(f, last), &rep);
	assert_int_equal(stat_of(&ss[last].replies), 0);
	assert_int_equal(stat_of(&ss[last].mismatched), 0);
	/* This round's id, but the wrong type, then the wrong block. */
	reply_to(store[0], BFT_OK, &rep);
	rep.type = BFT_CLOCK | BFT_ACK;
	fake_conn_deliver(conn_of(f, 0), &rep);
	reply_to(store[1], BFT_OK, &rep);
	rep.block = BLOCK + 1;
	fake_conn_deliver(conn_of(f, 1), &rep);
	assert_int_equal(stat_of(&ss[0].mismatched), 1);
	assert_int_equal(stat_of(&ss[1].mismatched), 1);
	/* n-t-1 genuine acks, the first of them twice. */
	for (unsigned i = 0; i < f->q - 1; i++)
		answer(f, i, store[i]);
	answer(f, 0, store[0]);
	assert_int_equal(stat_of(&ss[0].replies), 2);	/* CLOCK, STORE */
	assert_true(queued_none(f));
	assert_false(run_done(&r));
	/* The last genuine one completes the quorum. */
	answer(f, f->q - 1, store[f->q - 1]);
	for (unsigned i = 0; i < f->n; i++)
		assert_int_equal(fake_conn_queued(i), 1);
	serve_all(f, f->all);
	assert_true(run_done(&r));
	assert_int_equal(r.op->err, 0);
	run_end(&r);
	free(value);
}

/*
 * n-t-1 answers are not a quorum: the round times out at its deadline,
 * not before, with EIO, and counts a timeout against each server that
 * was sent the request and never answered (not the one that was down).
 * It failed in CLOCK, before any STORE, so the writer keeps its id.
 */
static void
test_timeout_clock(void **state)
{
	struct fx *f = *state;
	unsigned down = f->n - 1;
	uint32_t answering = first(f->q - 1);
	uint8_t *value = new_value();
	struct run r;

	set_up(f, f->all & ~(1u << down));
	run_start(f, &r, OP_WRITE, BLOCK, value);
	assert_int_equal(fake_conn_sent(down), 0);
	serve_each(f, answering);
	tick(f, TIMEOUT_MS - 1);
	assert_false(run_done(&r));
	tick(f, TIMEOUT_MS);
	assert_true(run_done(&r));
	assert_int_equal(r.op->err, EIO);
	assert_false(r.op->committed);
	assert_int_equal(stat_of(&f->cl->stats.timeouts), 1);
	for (unsigned i = 0; i < f->n; i++)
		assert_int_equal(stat_of(&f->cl->stats.server[i].timeouts),
		    !IN(answering, i) && i != down);
	assert_true(f->cl->writer_id == WRITER_ID);
	run_end(&r);
	free(value);
}

/*
 * A write that times out in STORE may have stored its value under
 * (num, writer id) at a few servers: the writer takes a new id, and its
 * next write of the block goes through CLOCK and stores under that id.
 */
static void
test_failed_write_rotates_writer_id(void **state)
{
	struct fx *f = *state;
	uint8_t *a = new_value(), *b = new_value();
	const struct bft_msg *req;
	uint64_t wid;
	struct run r;

	run_start(f, &r, OP_WRITE, BLOCK, a);
	serve_each(f, f->all);
	serve_each(f, first(f->q - 1));
	tick(f, TIMEOUT_MS);
	assert_true(run_done(&r));
	assert_int_equal(r.op->err, EIO);
	assert_false(r.op->committed);
	wid = f->cl->writer_id;
	assert_true(wid != WRITER_ID && (wid & 1));
	assert_false(f->cl->tscache[BLOCK].valid);
	run_end(&r);

	run_start(f, &r, OP_WRITE, BLOCK, b);
	serve_each(f, f->all & ~first(f->q - 1));	/* the lost STOREs */
	serve_each(f, f->all);
	for (unsigned i = 0; i < f->n; i++) {
		req = take(i, BFT_STORE, BLOCK);
		assert_true(req->ts.num == 1 && req->ts.wid == wid);
		answer(f, i, req);
	}
	serve_all(f, f->all);
	assert_true(run_done(&r));
	assert_int_equal(r.op->err, 0);
	assert_true(lc_at(f, 0, BLOCK)->ts.wid == wid);
	run_end(&r);
	free(a);
	free(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH_ROUNDS(test_write_three_rounds),
		BOTH_ROUNDS(test_clock_forged_ts),
		T1_ROUNDS(test_fast_write),
		BOTH_ROUNDS(test_fast_write_fallback),
		T1_ROUNDS(test_fast_write_forged_lc),
		T1_ROUNDS(test_error_replies),
		BOTH_ROUNDS(test_t_errors_tolerated),
		BOTH_ROUNDS(test_stale_and_mismatched_replies),
		BOTH_ROUNDS(test_timeout_clock),
		T1_ROUNDS(test_failed_write_rotates_writer_id),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
