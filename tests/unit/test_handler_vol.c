/*
 * The handler's checks that keep writes where they belong: a genuine
 * write replayed as another block's or another volume's, and the zero
 * value's shape (predicates.h).  The fixture is test_handler.c's.
 */
#include "handler_fixture.h"

/*
 * A Byzantine server replays a genuine write of block 0 as block 1's:
 * its MACs name block 0, so on block 1 a STORE or COMPLETE of it is
 * refused, and neither FILTER's write-back nor REPAIR takes it into lc,
 * though it is newer than block 1's own lc.  Before the MACs named the
 * block, all four took it.
 */
static void
test_other_block_replay(void **state)
{
	struct bft_cand mine = mkcand(1, 2, 1), theirs = mkcand(0, 9, 1);

	(void)state;
	assert_int_equal(store(1, &mine, 3), BFT_OK);
	assert_int_equal(complete(1, &mine), BFT_OK);
	assert_int_equal(store(0, &theirs, 4), BFT_OK);
	assert_int_equal(complete(0, &theirs), BFT_OK);
	assert_int_equal(store(1, &theirs, 4), BFT_EAUTH);
	assert_int_equal(complete(1, &theirs), BFT_EAUTH);
	assert_int_equal(filter(1, &theirs, 1), BFT_OK);
	assert_ts(&lc(1)->ts, &mine.ts);
	assert_int_equal(repair(1, &theirs), BFT_OK);
	assert_ts(&lc(1)->ts, &mine.ts);
	assert_int_equal(h.stats.writebacks + h.stats.repairs, 0);
}

/*
 * The same replay across volumes: a genuine write of volume 1's block 3
 * offered as volume 2's block 3, or as block 3 of the cluster's disk
 * (volume 0), fails every check there.  Each volume's blocks are kept
 * apart in the store, and a block beyond volume 0's end exists in
 * another volume only.
 */
static void
test_other_volume_replay(void **state)
{
	uint64_t a1 = bft_addr(1, 3), a2 = bft_addr(2, 3);
	struct bft_cand v1 = mkcand(a1, 5, 1), v2 = mkcand(a2, 2, 1);
	struct bft_cand far = mkcand(bft_addr(1, NBLOCKS + 100), 1, 1);

	(void)state;
	assert_int_equal(store(a2, &v2, 6), BFT_OK);
	assert_int_equal(complete(a2, &v2), BFT_OK);
	assert_int_equal(store(a1, &v1, 7), BFT_OK);
	assert_int_equal(complete(a1, &v1), BFT_OK);
	assert_int_equal(store(a2, &v1, 7), BFT_EAUTH);
	assert_int_equal(complete(a2, &v1), BFT_EAUTH);
	assert_int_equal(store(3, &v1, 7), BFT_EAUTH);
	assert_int_equal(filter(a2, &v1, 1), BFT_OK);
	assert_int_equal(repair(a2, &v1), BFT_OK);
	assert_ts(&lc(a2)->ts, &v2.ts);
	assert_true(bft_ts_is_zero(&lc(3)->ts));
	assert_int_equal(filter(a1, &v1, 1), BFT_OK);
	assert_filter_hist(&v1, 7);
	assert_int_equal(filter(a2, &v2, 1), BFT_OK);
	assert_filter_hist(&v2, 6);
	/* Beyond volume 0's end: in volume 1, not in volume 0. */
	assert_int_equal(store(bft_addr(1, NBLOCKS + 100), &far, 8), BFT_OK);
	assert_int_equal(store(NBLOCKS + 100, &far, 8), BFT_ERANGE);
	set_req(BFT_CLOCK, bft_addr(1, BFT_VOL_MAX_BLOCKS));
	assert_int_equal(handle(), BFT_ERANGE);
	/* And it all comes back from the log and from the checkpoint. */
	bft_store_close(st);
	open_store();
	assert_ts(&lc(a1)->ts, &v1.ts);
	assert_ts(&lc(a2)->ts, &v2.ts);
	assert_int_equal(bft_store_nhist(st, bft_addr(1, NBLOCKS + 100)), 1);
	set_req(BFT_VOLUMES, bft_addr(1, 0));
	assert_int_equal(handle(), BFT_OK);
	assert_int_equal(rep.nentries, 2);
}

/*
 * The zero value (trim): an empty fragment under the zero cc is stored
 * and served as it is, after a reopen too; an empty fragment under any
 * other cc, or a fragment under the zero cc, is refused.
 */
static void
test_zero_value(void **state)
{
	enum { B = 9 };
	struct bft_cand c = mkcand(B, 1, 3), d = mkcand(B, 2, 3);
	uint8_t zcc[BFT_MAX_N][BFT_HASH_LEN];

	(void)state;
	bft_cc_set_zero(zcc, N);
	assert_int_equal(store(B, &c, 20), BFT_OK);
	assert_int_equal(complete(B, &c), BFT_OK);
	/* d: the zero value over c's data. */
	assert_int_equal(store(B, &d, 1), BFT_OK);
	memcpy(req.cc, zcc, sizeof zcc);
	assert_int_equal(handle(), BFT_EPROTO);
	req.frag_len = 0;
	assert_int_equal(handle(), BFT_OK);
	assert_int_equal(complete(B, &d), BFT_OK);
	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal(filter(B, &d, 1), BFT_OK);
		assert_ts(&rep.ts, &d.ts);
		assert_memory_equal(rep.cc, zcc, N * BFT_HASH_LEN);
		assert_int_equal(rep.frag_len, 0);
		assert_int_equal(collect(B, true), BFT_OK);
		assert_ts(&rep.cands[0].ts, &d.ts);
		assert_true(rep.has_cc);
		assert_memory_equal(rep.cc, zcc, N * BFT_HASH_LEN);
		assert_int_equal(rep.frag_len, 0);
		bft_store_close(st);
		open_store();
	}
	/* c's fragment went with c's entry: only d's remains, empty. */
	assert_int_equal(bft_store_nhist(st, B), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T_(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T_(test_other_block_replay),
		T_(test_other_volume_replay),
		T_(test_zero_value),
#undef T_
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
