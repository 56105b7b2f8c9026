/*
 * Lease fencing at the server (predicates.h's bft_fenced): once a
 * holder's claim of generation g is in a volume's lease register here,
 * STOREs and COMPLETEs of that volume under a lower generation are
 * refused with EFENCED, also for the register itself, also after the
 * store is reopened; other volumes, write-backs and the new holder's
 * own writes are not affected.  Without the check, every refused write
 * below would be taken.  The fixture is test_handler.c's.
 */
#include "handler_fixture.h"

enum { VOL = 7, OTHER = 8 };

/* Block b of volume v, and volume v's lease register. */
#define ADDR(v, b)	bft_addr((v), (b))
#define LEASE(v)	bft_addr(BFT_VOL_LEASES, (v))
/* The num of the s-th write of generation g. */
#define NUM(g, s)	(bft_gen_floor(g) + (s))

/* A claim of generation g stored (not completed) in v's register. */
static void
claim(uint32_t v, uint64_t g, uint64_t s)
{
	struct bft_cand c = mkcand(LEASE(v), NUM(g, s), 11);

	assert_int_equal(store(LEASE(v), &c, 9), BFT_OK);
}

/*
 * The split brain: holder A (generation 1) wrote block 0; B takes over
 * with generation 2.  A's STORE and COMPLETE that arrive after B's
 * claim are refused, a STORE A made before is not completed by its
 * late COMPLETE, and B's writes go through.
 */
static void
test_old_holder_refused(void **state)
{
	struct bft_cand a1 = mkcand(ADDR(VOL, 0), NUM(1, 1), 5);
	struct bft_cand a2 = mkcand(ADDR(VOL, 0), NUM(1, 2), 5);
	struct bft_cand a3 = mkcand(ADDR(VOL, 1), NUM(1, 1), 5);
	struct bft_cand b1 = mkcand(ADDR(VOL, 0), NUM(2, 1), 6);

	(void)state;
	claim(VOL, 1, 1);
	assert_int_equal(store(ADDR(VOL, 0), &a1, 1), BFT_OK);
	assert_int_equal(complete(ADDR(VOL, 0), &a1), BFT_OK);
	assert_int_equal(store(ADDR(VOL, 1), &a3, 3), BFT_OK);
	claim(VOL, 2, 1);
	assert_int_equal(store(ADDR(VOL, 0), &a2, 2), BFT_EFENCED);
	assert_false(store_has_hist(st, ADDR(VOL, 0), &a2.ts));
	assert_int_equal(complete(ADDR(VOL, 1), &a3), BFT_EFENCED);
	assert_true(bft_ts_is_zero(&lc(ADDR(VOL, 1))->ts));
	assert_int_equal(store(ADDR(VOL, 0), &b1, 4), BFT_OK);
	assert_int_equal(complete(ADDR(VOL, 0), &b1), BFT_OK);
	assert_ts(&lc(ADDR(VOL, 0))->ts, &b1.ts);
	assert_int_equal(h.stats.fenced, 2);
}

/*
 * The old holder's renewal is a write of the register itself: once the
 * new claim is there, it is refused, so it cannot overwrite the claim
 * it has not seen.  A claim of the same generation (a renewal of the
 * holder) is taken.
 */
static void
test_old_claim_refused(void **state)
{
	struct bft_cand old = mkcand(LEASE(VOL), NUM(3, 9), 5);
	struct bft_cand same = mkcand(LEASE(VOL), NUM(4, 2), 6);

	(void)state;
	claim(VOL, 4, 1);
	assert_int_equal(store(LEASE(VOL), &old, 1), BFT_EFENCED);
	assert_int_equal(complete(LEASE(VOL), &old), BFT_EFENCED);
	assert_int_equal(store(LEASE(VOL), &same, 2), BFT_OK);
	assert_int_equal(complete(LEASE(VOL), &same), BFT_OK);
}

/*
 * Another volume's generation does not fence this one, nor does a
 * claim of volume 0's lease fence volume 7.  Write-backs are not
 * fenced: they carry a value some writer completed, which readers of
 * the old holder's completed writes must still be able to repair.
 */
static void
test_scope(void **state)
{
	struct bft_cand o = mkcand(ADDR(OTHER, 3), NUM(0, 5), 5);
	struct bft_cand v = mkcand(ADDR(VOL, 3), NUM(1, 1), 5);
	struct bft_cand wb = mkcand(ADDR(VOL, 4), NUM(1, 1), 5);

	(void)state;
	claim(VOL, 2, 1);
	claim(0, 9, 1);
	assert_int_equal(store(ADDR(OTHER, 3), &o, 1), BFT_OK);
	assert_int_equal(complete(ADDR(OTHER, 3), &o), BFT_OK);
	assert_int_equal(store(ADDR(VOL, 3), &v, 1), BFT_EFENCED);
	assert_int_equal(filter(ADDR(VOL, 4), &wb, 1), BFT_OK);
	assert_ts(&lc(ADDR(VOL, 4))->ts, &wb.ts);
}

/* The fence is the store's: it holds after a restart. */
static void
test_fence_survives_reopen(void **state)
{
	struct bft_cand a = mkcand(ADDR(VOL, 2), NUM(1, 7), 5);

	(void)state;
	claim(VOL, 2, 1);
	set_req(BFT_FLUSH, 0);
	assert_int_equal(handle(), BFT_OK);
	bft_store_close(st);
	open_store();
	assert_int_equal(store(ADDR(VOL, 2), &a, 1), BFT_EFENCED);
}

/*
 * The rebuild adopts a value its peers hold completed through the
 * handler's own STORE and COMPLETE: a block the old holder wrote before
 * the takeover and the new one never rewrote must still be rebuilt,
 * after the server already adopted the new claim.
 */
static void
test_rebuild_adopts_old_generation(void **state)
{
	struct bft_cand a = mkcand(ADDR(VOL, 5), NUM(1, 3), 5);

	(void)state;
	claim(VOL, 2, 1);
	assert_int_equal(store(ADDR(VOL, 5), &a, 1), BFT_EFENCED);
	h.adopting = true;
	assert_int_equal(store(ADDR(VOL, 5), &a, 1), BFT_OK);
	assert_int_equal(complete(ADDR(VOL, 5), &a), BFT_OK);
	h.adopting = false;
	assert_ts(&lc(ADDR(VOL, 5))->ts, &a.ts);
}

/*
 * The volume table's admin lock (bft_lock_claim_refused): two admins
 * that read it free both claim generation 5.  A's COMPLETE is here
 * first, so B's COMPLETE of generation 5 is refused with EFENCED, and
 * a reader's write-back of B's claim (FILTER or REPAIR) is answered
 * but not applied, so that reads of the lock go on.  A's renewal (its
 * own writer id) and a later generation's claim are taken, as is any
 * claim of an ordinary volume's register.  Without the rule, B's
 * COMPLETE of the same generation would be taken beside A's, and both
 * admins could hold the lock.
 */
static void
test_lock_one_writer_per_generation(void **state)
{
	uint64_t lock = LEASE(BFT_VOL_TABLE);
	struct bft_cand a = mkcand(lock, NUM(5, 1), 21);
	struct bft_cand b = mkcand(lock, NUM(5, 2), 22);
	struct bft_cand a2 = mkcand(lock, NUM(5, 3), 21);
	struct bft_cand c = mkcand(lock, NUM(6, 1), 23);
	struct bft_cand v1 = mkcand(LEASE(VOL), NUM(5, 1), 21);
	struct bft_cand v2 = mkcand(LEASE(VOL), NUM(5, 2), 22);

	(void)state;
	assert_int_equal(store(lock, &a, 1), BFT_OK);
	assert_int_equal(store(lock, &b, 2), BFT_OK);
	assert_int_equal(complete(lock, &a), BFT_OK);
	assert_int_equal(complete(lock, &b), BFT_EFENCED);
	assert_ts(&lc(lock)->ts, &a.ts);
	assert_int_equal(filter(lock, &b, 1), BFT_OK);
	assert_ts(&lc(lock)->ts, &a.ts);
	assert_int_equal(repair(lock, &b), BFT_OK);
	assert_ts(&lc(lock)->ts, &a.ts);
	assert_int_equal(h.stats.lock_refused, 3);
	assert_int_equal(store(lock, &a2, 3), BFT_OK);
	assert_int_equal(complete(lock, &a2), BFT_OK);
	assert_ts(&lc(lock)->ts, &a2.ts);
	assert_int_equal(store(lock, &c, 4), BFT_OK);
	assert_int_equal(complete(lock, &c), BFT_OK);
	assert_ts(&lc(lock)->ts, &c.ts);
	/* An ordinary lease register: the newest claim wins, as before. */
	assert_int_equal(store(LEASE(VOL), &v1, 5), BFT_OK);
	assert_int_equal(complete(LEASE(VOL), &v1), BFT_OK);
	assert_int_equal(store(LEASE(VOL), &v2, 6), BFT_OK);
	assert_int_equal(complete(LEASE(VOL), &v2), BFT_OK);
	assert_ts(&lc(LEASE(VOL))->ts, &v2.ts);
	/* The rebuild adopts what its peers completed, whoever wrote it. */
	h.adopting = true;
	assert_int_equal(complete(lock, &c), BFT_OK);
	h.adopting = false;
	assert_int_equal(h.stats.lock_refused, 3);
}

/* Refused only behind a MAC: EAUTH first, so no one else probes. */
static void
test_mac_before_fence(void **state)
{
	struct bft_cand a = mkcand(ADDR(VOL, 2), NUM(1, 7), 5);

	(void)state;
	claim(VOL, 2, 1);
	a.vec[ME][0] ^= 1;
	assert_int_equal(store(ADDR(VOL, 2), &a, 1), BFT_EAUTH);
	assert_int_equal(complete(ADDR(VOL, 2), &a), BFT_EAUTH);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T_(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T_(test_old_holder_refused),
		T_(test_old_claim_refused),
		T_(test_scope),
		T_(test_fence_survives_reopen),
		T_(test_mac_before_fence),
		T_(test_rebuild_adopts_old_generation),
		T_(test_lock_one_writer_per_generation),
#undef T_
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
