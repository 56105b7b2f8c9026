/*
 * The server's protocol logic (server/handler.c) driven directly, with a
 * real store in a temporary directory and real MACs made with the keys a
 * client would hold.  Every reply is also run through the wire encoder,
 * so a reply the handler builds but the wire cannot carry fails here.
 */
#include "handler_fixture.h"

static void
test_hello(void **state)
{
	(void)state;
	hello();
	assert_int_equal(handle(), BFT_OK);
	for (int field = 0; field < 6; field++) {
		hello();
		switch (field) {
		case 0: req.cluster_id[7] ^= 1; break;
		case 1: req.hello_n = 7; break;
		case 2: req.hello_t = 2; break;
		case 3: req.block_size = 4096; break;
		case 4: req.nblocks = NBLOCKS + 1; break;
		case 5: req.server_index = ME + 1; break;
		}
		assert_int_equal(handle(), BFT_ECLUSTER);
	}
	assert_int_equal(h.stats.hello_mismatch, 6);
}

static void
test_erange(void **state)
{
	static const uint8_t types[] = { BFT_CLOCK, BFT_STORE, BFT_COMPLETE,
	    BFT_COLLECT, BFT_FILTER, BFT_REPAIR };
	struct bft_cand c = mkcand(NBLOCKS - 1, 1, 1);

	(void)state;
	for (size_t j = 0; j < sizeof types; j++) {
		set_req(types[j], NBLOCKS);
		req.ts = c.ts;
		req.cands[0] = c;
		req.ncands = 1;
		req.frag = frag;
		req.frag_len = FRAGLEN;
		assert_int_equal(handle(), BFT_ERANGE);
		req.block = UINT64_MAX;
		assert_int_equal(handle(), BFT_ERANGE);
	}
	assert_int_equal(store(NBLOCKS - 1, &c, 1), BFT_OK);
}

static void
test_store_bad_mac(void **state)
{
	struct bft_cand c = mkcand(3, 1, 1);

	(void)state;
	c.vec[ME][0] ^= 1;
	assert_int_equal(store(3, &c, 1), BFT_EAUTH);
	assert_int_equal(bft_store_nhist(st, 3), 0);
	assert_int_equal(h.stats.eauth, 1);
	/* Only our own entry is ours to check. */
	c = mkcand(3, 1, 1);
	c.vec[ME + 1][0] ^= 1;
	assert_int_equal(store(3, &c, 1), BFT_OK);
	assert_int_equal(bft_store_nhist(st, 3), 1);
}

static void
test_store_bad_fields(void **state)
{
	struct bft_cand c = mkcand(2, 0, 1), C[N + 1];

	(void)state;
	assert_int_equal(store(2, &c, 1), BFT_EPROTO);
	c = mkcand(2, 1, 1);
	assert_int_equal(store(2, &c, 1), BFT_OK);
	req.frag_len = 0;
	assert_int_equal(handle(), BFT_EPROTO);
	req.frag_len = BFT_MAX_FRAG + 1;
	assert_int_equal(handle(), BFT_EPROTO);
	assert_int_equal(bft_store_nhist(st, 2), 1);
	for (unsigned j = 0; j <= N; j++)
		C[j] = c;
	assert_int_equal(filter(2, C, 0), BFT_EPROTO);
	assert_int_equal(filter(2, C, N + 1), BFT_EPROTO);
	assert_int_equal(filter(2, C, N), BFT_OK);
	assert_filter_hist(&c, 1);
}

static void
test_happy_path(void **state)
{
	struct bft_cand c = mkcand(5, 1, 7);

	(void)state;
	set_req(BFT_CLOCK, 5);
	assert_int_equal(handle(), BFT_OK);
	assert_true(bft_ts_is_zero(&rep.ts));
	assert_int_equal(store(5, &c, 42), BFT_OK);
	assert_true(store_has_hist(st, 5, &c.ts));
	assert_int_equal(complete(5, &c), BFT_OK);
	set_req(BFT_CLOCK, 5);
	assert_int_equal(handle(), BFT_OK);
	assert_ts(&rep.ts, &c.ts);
	assert_memory_equal(rep.ts.mac, c.ts.mac, BFT_MAC_LEN);
	set_req(BFT_COLLECT, 5);
	assert_int_equal(handle(), BFT_OK);
	assert_int_equal(rep.ncands, 1);
	assert_ts(&rep.cands[0].ts, &c.ts);
	assert_memory_equal(rep.cands[0].nonce, c.nonce, BFT_NONCE_LEN);
	assert_memory_equal(rep.cands[0].vec, c.vec, N * BFT_MAC_LEN);
	assert_int_equal(filter(5, &c, 1), BFT_OK);
	assert_filter_hist(&c, 42);
	/* Another block is untouched. */
	set_req(BFT_COLLECT, 6);
	assert_int_equal(handle(), BFT_OK);
	assert_true(bft_ts_is_zero(&rep.cands[0].ts));
	set_req(BFT_FLUSH, 0);
	assert_int_equal(handle(), BFT_OK);
}

static void
test_filter_writeback(void **state)
{
	struct bft_cand c = mkcand(4, 3, 1);

	(void)state;
	assert_int_equal(filter(4, &c, 1), BFT_OK);
	assert_ts(&lc(4)->ts, &c.ts);
	assert_memory_equal(lc(4)->nonce, c.nonce, BFT_NONCE_LEN);
	assert_int_equal(h.stats.writebacks, 1);
	/*
	 * No Hist for it here, and lc is it: lc.ts without a fragment, not
	 * c0, which would count against the very candidate written back.
	 */
	assert_filter_empty(&c.ts);
	/* A second FILTER with the same candidate writes nothing back. */
	assert_int_equal(filter(4, &c, 1), BFT_OK);
	assert_int_equal(h.stats.writebacks, 1);
}

static void
test_filter_forged(void **state)
{
	struct bft_cand C[2];

	(void)state;
	C[0] = mkcand(6, 2, 1);
	assert_int_equal(store(6, &C[0], 9), BFT_OK);
	assert_int_equal(complete(6, &C[0]), BFT_OK);
	/* Higher ts, random nonce, MACs of someone without the keys. */
	memset(&C[1], 0, sizeof C[1]);
	C[1].ts = mkts(6, 5, 1);
	bft_random(C[1].nonce, BFT_NONCE_LEN);
	bft_random(C[1].vec, sizeof C[1].vec);
	assert_int_equal(filter(6, C, 2), BFT_OK);
	assert_ts(&lc(6)->ts, &C[0].ts);
	assert_int_equal(h.stats.writebacks, 0);
	assert_filter_hist(&C[0], 9);
	assert_int_equal(repair(6, &C[1]), BFT_OK);
	assert_ts(&lc(6)->ts, &C[0].ts);
	assert_int_equal(h.stats.repairs, 0);
}



static void
test_filter_gc(void **state)
{
	struct bft_cand c1 = mkcand(7, 1, 1), c2 = mkcand(7, 2, 1), c3, C[2];

	(void)state;
	assert_int_equal(store(7, &c1, 1), BFT_OK);
	assert_int_equal(complete(7, &c1), BFT_OK);
	assert_int_equal(store(7, &c2, 2), BFT_OK);
	assert_int_equal(complete(7, &c2), BFT_OK);
	assert_false(store_has_hist(st, 7, &c1.ts));
	/* c1's entry is gone because c2 completed: answer with c2's. */
	assert_int_equal(filter(7, &c1, 1), BFT_OK);
	assert_filter_hist(&c2, 2);
	/*
	 * A liar's copy of c2 with a nonce nobody revealed keeps lc from
	 * being newer than every candidate.  The answer is still lc.ts
	 * without a fragment: c0 would count against c1 and the copy in
	 * the reader's invalid(), and n-t such answers empty C, so the
	 * read would return zeros although c2 completed.
	 */
	C[0] = c1;
	C[1] = c2;
	bft_random(C[1].nonce, BFT_NONCE_LEN);
	assert_int_equal(filter(7, C, 2), BFT_OK);
	assert_filter_empty(&c2.ts);
	/* lc newer than every candidate and no Hist for it: lc.ts, empty. */
	c3 = mkcand(7, 3, 2);
	assert_int_equal(complete(7, &c3), BFT_OK);
	assert_int_equal(filter(7, &c1, 1), BFT_OK);
	assert_filter_empty(&c3.ts);
}

static void
test_pending_cap(void **state)
{
	struct bft_cand w1[3], w2 = mkcand(8, 1, 2);

	(void)state;
	h.max_pending = 2;
	for (unsigned j = 0; j < 3; j++)
		w1[j] = mkcand(8, j + 1, 1);
	assert_int_equal(store(8, &w1[0], 1), BFT_OK);
	assert_int_equal(store(8, &w1[1], 2), BFT_OK);
	assert_int_equal(store(8, &w1[2], 3), BFT_EBUSY);
	assert_false(store_has_hist(st, 8, &w1[2].ts));
	assert_int_equal(h.stats.ebusy, 1);
	/* A retransmission of a present entry is not a new one. */
	assert_int_equal(store(8, &w1[1], 2), BFT_OK);
	assert_int_equal(store(8, &w2, 4), BFT_OK);
	/* Completing a write drops what lies under it and frees room. */
	assert_int_equal(complete(8, &w1[1]), BFT_OK);
	assert_int_equal(store(8, &w1[2], 3), BFT_OK);
}

static void
test_store_superseded(void **state)
{
	struct bft_cand old = mkcand(9, 3, 1), cur = mkcand(9, 5, 1);

	(void)state;
	assert_int_equal(complete(9, &cur), BFT_OK);
	assert_int_equal(store(9, &old, 1), BFT_OK);
	assert_false(store_has_hist(st, 9, &old.ts));
	assert_int_equal(bft_store_nhist(st, 9), 0);
}

static void
test_store_stale(void **state)
{
	struct bft_cand c = mkcand(10, 4, 1), other = c;
	struct bft_cand late = mkcand(10, 6, 1);
	uint8_t nh[BFT_HASH_LEN];

	(void)state;
	assert_int_equal(store(10, &c, 1), BFT_OK);
	assert_int_equal(complete(10, &c), BFT_OK);
	assert_int_equal(store(10, &c, 1), BFT_OK);
	/* Same ts, other data, correctly MACed: not after completion. */
	bft_random(other.nonce, BFT_NONCE_LEN);
	bft_hash(other.nonce, BFT_NONCE_LEN, nh);
	bft_vec_mac(&other.ts, 10, nh, ck.k[ME], other.vec[ME]);
	assert_int_equal(store(10, &other, 2), BFT_ESTALE);
	assert_int_equal(filter(10, &c, 1), BFT_OK);
	assert_filter_hist(&c, 1);
	/* The late STORE of a write completed here by write-back is kept. */
	assert_int_equal(filter(10, &late, 1), BFT_OK);
	assert_ts(&lc(10)->ts, &late.ts);
	other = late;
	bft_random(other.nonce, BFT_NONCE_LEN);
	bft_hash(other.nonce, BFT_NONCE_LEN, nh);
	bft_vec_mac(&other.ts, 10, nh, ck.k[ME], other.vec[ME]);
	assert_int_equal(store(10, &other, 3), BFT_ESTALE);
	assert_int_equal(store(10, &late, 4), BFT_OK);
	assert_int_equal(filter(10, &late, 1), BFT_OK);
	assert_filter_hist(&late, 4);
}

static void
test_repair(void **state)
{
	struct bft_cand c = mkcand(11, 2, 3), bad = mkcand(11, 3, 3);
	struct bft_cand low = mkcand(11, 1, 3);

	(void)state;
	bad.vec[ME][5] ^= 0x80;
	assert_int_equal(repair(11, &bad), BFT_OK);
	assert_true(bft_ts_is_zero(&lc(11)->ts));
	assert_int_equal(repair(11, &c), BFT_OK);
	assert_ts(&lc(11)->ts, &c.ts);
	assert_int_equal(h.stats.repairs, 1);
	assert_int_equal(repair(11, &low), BFT_OK);
	assert_ts(&lc(11)->ts, &c.ts);
	/* A broken MAC is fine when Hist vouches for the nonce. */
	bad.vec[ME][5] ^= 0x80;
	assert_int_equal(store(11, &bad, 5), BFT_OK);
	bad.vec[ME][5] ^= 0x80;
	assert_int_equal(repair(11, &bad), BFT_OK);
	assert_ts(&lc(11)->ts, &bad.ts);
	assert_int_equal(h.stats.repairs, 2);
}

static void
test_complete_bad_mac(void **state)
{
	struct bft_cand c = mkcand(12, 1, 1), d = mkcand(12, 2, 1);

	(void)state;
	assert_int_equal(complete(12, &c), BFT_OK);
	d.vec[ME][0] ^= 1;
	assert_int_equal(complete(12, &d), BFT_EAUTH);
	assert_ts(&lc(12)->ts, &c.ts);
	/* The nonce is what the MAC binds: another nonce fails too. */
	d = mkcand(12, 2, 1);
	d.nonce[0] ^= 1;
	assert_int_equal(complete(12, &d), BFT_EAUTH);
	assert_ts(&lc(12)->ts, &c.ts);
	assert_int_equal(h.stats.eauth, 2);
}

static void
test_reopen(void **state)
{
	struct bft_cand c = mkcand(13, 1, 1), d = mkcand(13, 2, 4);

	(void)state;
	assert_int_equal(store(13, &c, 77), BFT_OK);
	assert_int_equal(complete(13, &c), BFT_OK);
	assert_int_equal(store(13, &d, 78), BFT_OK);
	set_req(BFT_FLUSH, 0);
	assert_int_equal(handle(), BFT_OK);
	bft_store_close(st);
	open_store();
	set_req(BFT_COLLECT, 13);
	assert_int_equal(handle(), BFT_OK);
	assert_ts(&rep.cands[0].ts, &c.ts);
	assert_memory_equal(rep.cands[0].nonce, c.nonce, BFT_NONCE_LEN);
	assert_int_equal(filter(13, &c, 1), BFT_OK);
	assert_filter_hist(&c, 77);
	assert_int_equal(filter(13, &d, 1), BFT_OK);
	assert_filter_hist(&d, 78);
}

/*
 * COLLECT for the 1-round read: lc with Hist[lc.ts]'s cc, and its
 * fragment only when asked; nothing of either when no Hist entry backs
 * lc, or none was written.
 */
static void
test_collect_fragment(void **state)
{
	enum { B0 = 14, B1 = 15 };
	struct bft_cand c = mkcand(B0, 1, 1), d = mkcand(B0, 2, 1);
	struct bft_cand e = mkcand(B0, 3, 1);
	uint8_t want[FRAGLEN];

	(void)state;
	assert_int_equal(collect(B0, true), BFT_OK);
	assert_true(bft_ts_is_zero(&rep.cands[0].ts));
	assert_false(rep.has_cc);
	assert_int_equal(rep.frag_len, 0);

	assert_int_equal(store(B0, &c, 40), BFT_OK);
	assert_int_equal(complete(B0, &c), BFT_OK);
	assert_int_equal(collect(B0, false), BFT_OK);
	assert_ts(&rep.cands[0].ts, &c.ts);
	assert_true(rep.has_cc);
	for (unsigned j = 0; j < N; j++)
		assert_int_equal(rep.cc[j][0], (uint8_t)(40 + j));
	assert_int_equal(rep.frag_len, 0);
	assert_int_equal(collect(B0, true), BFT_OK);
	assert_true(rep.has_cc);
	memset(want, 40, sizeof want);
	assert_int_equal(rep.frag_len, FRAGLEN);
	assert_memory_equal(rep.frag, want, FRAGLEN);

	/* A newer STORE, not completed: lc's entry is still the answer. */
	assert_int_equal(store(B0, &d, 50), BFT_OK);
	assert_int_equal(collect(B0, true), BFT_OK);
	assert_ts(&rep.cands[0].ts, &c.ts);
	assert_memory_equal(rep.frag, want, FRAGLEN);

	/* lc by write-back, without a Hist entry here: lc alone. */
	assert_int_equal(filter(B0, &e, 1), BFT_OK);
	assert_int_equal(collect(B0, true), BFT_OK);
	assert_ts(&rep.cands[0].ts, &e.ts);
	assert_false(rep.has_cc);
	assert_int_equal(rep.frag_len, 0);

	/*
	 * Hist[lc.ts] holds other data than lc's (its nonce does not hash
	 * to the entry's nh): this server must not vouch for its cc.
	 */
	e = mkcand(B1, 5, 9);
	d = mkcand(B1, 5, 9);
	assert_int_equal(store(B1, &d, 60), BFT_OK);
	assert_int_equal(filter(B1, &e, 1), BFT_OK);
	assert_ts(&lc(B1)->ts, &e.ts);
	assert_int_equal(collect(B1, true), BFT_OK);
	assert_false(rep.has_cc);
	assert_int_equal(rep.frag_len, 0);
}


int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T_(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T_(test_hello),
		T_(test_erange),
		T_(test_store_bad_mac),
		T_(test_store_bad_fields),
		T_(test_happy_path),
		T_(test_filter_writeback),
		T_(test_filter_forged),
		T_(test_filter_gc),
		T_(test_pending_cap),
		T_(test_store_superseded),
		T_(test_store_stale),
		T_(test_repair),
		T_(test_complete_bad_mac),
		T_(test_reopen),
		T_(test_collect_fragment),
#undef T_
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
