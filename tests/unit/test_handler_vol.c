/*
 * The handler's checks that keep writes where they belong: a genuine
 * write replayed as another block's or another volume's, the zero
 * value's shape (predicates.h), and DROP, which only a writer's MAC can
 * make forget a volume, and after which nothing brings the volume back.  The fixture is test_handler.c's.
 */
#include "handler_fixture.h"
#include "summary.h"

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

/* A writer's DROP of vol: a MAC for every server, each under its key. */
static int
drop(uint32_t vol)
{
	set_req(BFT_DROP, bft_addr(vol, 0));
	for (unsigned j = 0; j < N; j++)
		bft_drop_mac(vol, ck.k[j], req.vec[j]);
	return handle();
}

/* A completed write of addr, its fragment filled from seed. */
static struct bft_cand
written(uint64_t addr, uint64_t num, uint8_t seed)
{
	struct bft_cand c = mkcand(addr, num, 1);

	assert_int_equal(store(addr, &c, seed), BFT_OK);
	assert_int_equal(complete(addr, &c), BFT_OK);
	return c;
}

/* Whether VOLUMES lists vol. */
static bool
listed(uint32_t vol)
{
	uint64_t id, end, live;

	set_req(BFT_VOLUMES, 0);
	assert_int_equal(handle(), BFT_OK);
	for (uint32_t e = 0; e < rep.nentries; e++) {
		bft_volentry_get(rep.entries + (size_t)e * BFT_VOLENTRY_LEN,
		    &id, &end, &live);
		if (id == vol)
			return live > 0;
	}
	return false;
}

/*
 * DROP: a writer's forgets the volume, durably, and nothing else; one
 * whose MAC entry for this server is wrong (another volume's, another
 * server's key, a forged one) is refused as a forged STORE is, and
 * drops nothing.  The cluster's disk and the reserved volumes are
 * refused whatever the MAC; read-only clients and peers never get this
 * far (net.c refuses them by role).
 */
static void
test_drop(void **state)
{
	uint64_t a = bft_addr(4, 3), b = bft_addr(4, 1000), o = bft_addr(2, 3);
	struct bft_cand ca, cb, co, c0, pend;
	struct bft_store_stats ss;
	uint64_t eauth, syncs;

	(void)state;
	ca = written(a, 2, 11);
	cb = written(b, 1, 12);
	co = written(o, 1, 13);
	c0 = written(3, 1, 14);
	pend = mkcand(a, 3, 1);
	assert_int_equal(store(a, &pend, 15), BFT_OK);
	assert_true(listed(4) && listed(2));
	/* Forged: this server's entry is another volume's or another key's. */
	eauth = h.stats.eauth;
	set_req(BFT_DROP, bft_addr(4, 0));
	for (unsigned j = 0; j < N; j++)
		bft_drop_mac(2, ck.k[j], req.vec[j]);
	assert_int_equal(handle(), BFT_EAUTH);
	for (unsigned j = 0; j < N; j++)
		bft_drop_mac(4, ck.k[(j + 1) % N], req.vec[j]);
	assert_int_equal(handle(), BFT_EAUTH);
	/* Every entry right but this server's. */
	for (unsigned j = 0; j < N; j++)
		bft_drop_mac(4, ck.k[j], req.vec[j]);
	req.vec[ME][0] ^= 1;
	assert_int_equal(handle(), BFT_EAUTH);
	/* A write's own MACs do not make a DROP either. */
	memcpy(req.vec, ca.vec, sizeof req.vec);
	assert_int_equal(handle(), BFT_EAUTH);
	assert_int_equal(h.stats.eauth, eauth + 4);
	assert_ts(&lc(a)->ts, &ca.ts);
	assert_int_equal(bft_store_nhist(st, a), 2);
	/* Volume 0 and the reserved ones, with genuine MACs. */
	assert_int_equal(drop(0), BFT_EPROTO);
	assert_int_equal(drop(BFT_VOL_TABLE), BFT_EPROTO);
	assert_int_equal(drop(BFT_VOL_LEASES), BFT_EPROTO);
	assert_ts(&lc(3)->ts, &c0.ts);
	/* A volume is named by its block 0 only. */
	set_req(BFT_DROP, bft_addr(4, 1));
	for (unsigned j = 0; j < N; j++)
		bft_drop_mac(4, ck.k[j], req.vec[j]);
	assert_int_equal(handle(), BFT_EPROTO);
	assert_true(listed(4));
	assert_false(bft_role_permits(BFT_ROLE_RO, BFT_DROP));
	assert_false(bft_role_permits(BFT_ROLE_PEER, BFT_DROP));
	assert_true(bft_role_permits(BFT_ROLE_RW, BFT_DROP));
	/* Only this server's entry counts: the rest may be anything. */
	bft_store_stats(st, &ss);
	syncs = ss.syncs;
	set_req(BFT_DROP, bft_addr(4, 0));
	bft_drop_mac(4, ck.k[ME], req.vec[ME]);
	assert_int_equal(handle(), BFT_OK);
	bft_store_stats(st, &ss);
	assert_true(ss.syncs > syncs);
	assert_true(bft_ts_is_zero(&lc(a)->ts) && bft_ts_is_zero(&lc(b)->ts));
	assert_int_equal(bft_store_nhist(st, a) + bft_store_nhist(st, b), 0);
	assert_int_equal(collect(a, true), BFT_OK);
	assert_true(bft_ts_is_zero(&rep.cands[0].ts) && !rep.has_cc);
	assert_false(listed(4));
	assert_ts(&lc(o)->ts, &co.ts);
	assert_ts(&lc(3)->ts, &c0.ts);
	assert_int_equal(filter(o, &co, 1), BFT_OK);
	assert_filter_hist(&co, 13);
	/* Again: nothing left, still acked. */
	assert_int_equal(drop(4), BFT_OK);
	assert_int_equal(h.stats.eauth, eauth + 4);
	bft_store_close(st);
	open_store();
	assert_false(listed(4));
	assert_true(bft_ts_is_zero(&lc(a)->ts));
	assert_ts(&lc(o)->ts, &co.ts);
	assert_true(bft_ts_is_zero(&lc(b)->ts));
	(void)cb;
}

/* Reopens the store with small segments, so that churn compacts. */
static void
reopen_small(bool drop_ckpt)
{
	struct bft_store_opts o = { .segment_size = 256 * 1024 };
	char err[256] = "", p[128];

	bft_store_close(st);
	if (drop_ckpt) {
		snprintf(p, sizeof p, "%s/index.ckpt", dir);
		assert_int_equal(unlink(p), 0);
	}
	st = bft_store_open_opts(dir, &ident, &o, err, sizeof err);
	if (st == NULL)
		fail_msg("bft_store_open_opts: %s", err);
	h.st = st;
}

/* Every way of putting old's write back into its deleted volume fails. */
static void
check_gone_for_good(uint64_t a, const struct bft_cand *old)
{
	struct bft_cand fresh = mkcand(a, old->ts.num + 100, 1);
	struct bft_cand other = mkcand(a + 7, 1, 1);

	assert_int_equal(filter(a, old, 1), BFT_EGONE);
	assert_int_equal(repair(a, old), BFT_EGONE);
	assert_int_equal(store(a, old, 11), BFT_EGONE);
	assert_int_equal(complete(a, old), BFT_EGONE);
	assert_int_equal(store(a, &fresh, 11), BFT_EGONE);
	assert_int_equal(complete(a, &fresh), BFT_EGONE);
	assert_int_equal(store(a + 7, &other, 11), BFT_EGONE);
	assert_true(bft_ts_is_zero(&lc(a)->ts));
	assert_int_equal(bft_store_nhist(st, a), 0);
	assert_false(listed(bft_addr_vol(a)));
}

/*
 * A deleted volume stays deleted.  Its old candidates still carry MACs
 * that verify, and its lc is zero after the DROP, so a candidate a
 * reader (or a Byzantine server) kept from before the delete was taken
 * back by FILTER's write-back, and the volume was back on every server.
 * Now the write-back, REPAIR, STORE and COMPLETE are all refused with
 * EGONE, also after a restart from the checkpoint and from the whole
 * log, and after compaction has moved the DROP record on.
 */
static void
test_drop_stays(void **state)
{
	uint64_t a = bft_addr(4, 3);
	struct bft_store_stats ss;
	struct bft_cand old;

	(void)state;
	(void)written(a, 2, 11);
	assert_int_equal(collect(a, false), BFT_OK);
	old = rep.cands[0];
	assert_int_equal(old.ts.num, 2);
	assert_int_equal(drop(4), BFT_OK);
	check_gone_for_good(a, &old);
	/* Volume 0 and other volumes are written as before. */
	(void)written(bft_addr(5, 3), 1, 12);
	assert_true(listed(5));
	reopen_small(false);
	check_gone_for_good(a, &old);
	reopen_small(true);
	check_gone_for_good(a, &old);
	for (uint64_t num = 1; num < 1500; num++)
		(void)written(num % 4, num, (uint8_t)num);
	assert_int_equal(bft_store_sync(st), 0);
	bft_store_stats(st, &ss);
	assert_true(ss.compactions > 3);
	check_gone_for_good(a, &old);
	reopen_small(false);
	check_gone_for_good(a, &old);
	reopen_small(true);
	check_gone_for_good(a, &old);
	/* A second DROP of it is acked and appends nothing. */
	assert_int_equal(drop(4), BFT_OK);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T_(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T_(test_other_block_replay),
		T_(test_other_volume_replay),
		T_(test_zero_value),
		T_(test_drop),
		T_(test_drop_stays),
#undef T_
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
