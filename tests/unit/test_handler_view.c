/*
 * Snapshot views at the server (docs/snapshots.md): SNAP keeps a
 * volume's view at a boundary generation, VCOLLECT, VFILTER and VREPAIR
 * read it through the same code as the head, and no request can put a
 * version of a later generation into it.  The fixture is
 * test_handler.c's.
 */
#include "handler_fixture.h"

enum { VOL = 9 };

#define ADDR(b)		bft_addr(VOL, (b))
#define NUM(g, s)	(bft_gen_floor(g) + (s))

/* SNAP op for boundary g, with this server's MAC (or a wrong one). */
static int
snap(uint64_t g, uint8_t op, bool good_mac)
{
	set_req(BFT_SNAP, ADDR(0));
	req.gen = g;
	req.snap_op = op;
	for (unsigned j = 0; j < N; j++)
		bft_snap_mac(VOL, g, op, ck.k[j], req.vec[j]);
	if (!good_mac)
		req.vec[sk.index][0] ^= 1;
	return handle();
}

static int
vcollect(uint64_t block, uint64_t g, bool want)
{
	set_req(BFT_VCOLLECT, block);
	req.gen = g;
	req.want_frag = want;
	return handle();
}

static int
vfilter(uint64_t block, uint64_t g, const struct bft_cand *C, unsigned nc)
{
	set_req(BFT_VFILTER, block);
	req.gen = g;
	memcpy(req.cands, C, nc * sizeof *C);
	req.ncands = nc;
	return handle();
}

/* A write of c (fragment of seed) stored and completed here. */
static void
written(uint64_t block, const struct bft_cand *c, uint8_t seed)
{
	assert_int_equal(store(block, c, seed), BFT_OK);
	assert_int_equal(complete(block, c), BFT_OK);
}

/*
 * v1 (generation 1) is overwritten by v2 (generation 2) after the
 * boundary 1 was kept: COLLECT sees v2, VCOLLECT at 1 sees v1 and its
 * fragment, VFILTER at 1 answers v1's Hist entry.  A block first
 * written after the boundary reads as never written in the view.
 */
static void
test_view_reads(void **state)
{
	struct bft_cand v1 = mkcand(ADDR(1), NUM(1, 1), 5);
	struct bft_cand v2 = mkcand(ADDR(1), NUM(2, 1), 5);
	struct bft_cand n2 = mkcand(ADDR(2), NUM(2, 1), 5);

	(void)state;
	written(ADDR(1), &v1, 10);
	assert_int_equal(snap(1, BFT_SNAP_ADD, true), BFT_OK);
	/* Not yet overwritten: the view is the live state. */
	assert_int_equal(vcollect(ADDR(1), 1, false), BFT_OK);
	assert_ts(&rep.cands[0].ts, &v1.ts);
	written(ADDR(1), &v2, 20);
	written(ADDR(2), &n2, 30);
	assert_int_equal(collect(ADDR(1), false), BFT_OK);
	assert_ts(&rep.cands[0].ts, &v2.ts);
	assert_int_equal(vcollect(ADDR(1), 1, true), BFT_OK);
	assert_ts(&rep.cands[0].ts, &v1.ts);
	assert_true(rep.has_cc);
	assert_int_equal(rep.frag_len, FRAGLEN);
	assert_int_equal(rep.frag[0], 10);
	assert_int_equal(vfilter(ADDR(1), 1, &v1, 1), BFT_OK);
	assert_filter_hist(&v1, 10);
	assert_int_equal(vcollect(ADDR(2), 1, false), BFT_OK);
	assert_true(bft_ts_is_zero(&rep.cands[0].ts));
	/* A view at 2 is the live state again. */
	assert_int_equal(vcollect(ADDR(1), 2, false), BFT_OK);
	assert_ts(&rep.cands[0].ts, &v2.ts);
}

/*
 * The attack: a reader holding the head's candidate (valid, with its
 * nonce) sends it back as the view's.  No server takes it, by FILTER or
 * REPAIR, and the view still answers v1; the head is untouched.
 */
static void
test_head_not_written_into_view(void **state)
{
	struct bft_cand v1 = mkcand(ADDR(3), NUM(1, 1), 5);
	struct bft_cand v2 = mkcand(ADDR(3), NUM(2, 1), 5);

	(void)state;
	written(ADDR(3), &v1, 10);
	assert_int_equal(snap(1, BFT_SNAP_ADD, true), BFT_OK);
	written(ADDR(3), &v2, 20);
	assert_int_equal(vfilter(ADDR(3), 1, &v2, 1), BFT_OK);
	/* Not v2's entry: the view's lc, v1, with its fragment. */
	assert_filter_hist(&v1, 10);
	set_req(BFT_VREPAIR, ADDR(3));
	req.gen = 1;
	req.cands[0] = v2;
	req.ncands = 1;
	assert_int_equal(handle(), BFT_OK);
	assert_int_equal(vcollect(ADDR(3), 1, false), BFT_OK);
	assert_ts(&rep.cands[0].ts, &v1.ts);
	assert_int_equal(h.stats.writebacks + h.stats.repairs, 0);
	assert_ts(&lc(ADDR(3))->ts, &v2.ts);
}

/*
 * A server asked to keep a boundary its volume was already written past
 * refuses (ESTALE): what the newer write replaced is gone.  Asked for
 * that view, it cannot say what it held: EAGAIN, not c0.
 */
static void
test_unknown_view(void **state)
{
	struct bft_cand v1 = mkcand(ADDR(4), NUM(1, 1), 5);
	struct bft_cand v2 = mkcand(ADDR(4), NUM(2, 1), 5);

	(void)state;
	written(ADDR(4), &v1, 10);
	written(ADDR(4), &v2, 20);
	assert_int_equal(snap(1, BFT_SNAP_ADD, true), BFT_ESTALE);
	assert_int_equal(vcollect(ADDR(4), 1, false), BFT_EAGAIN);
	assert_int_equal(vfilter(ADDR(4), 1, &v1, 1), BFT_EAGAIN);
}

/*
 * SNAP needs a writer's MAC; the reserved volumes are refused; the
 * boundary survives a restart; removing it makes the view unknown.
 */
static void
test_snap_requests(void **state)
{
	struct bft_cand v1 = mkcand(ADDR(5), NUM(1, 1), 5);
	struct bft_cand v2 = mkcand(ADDR(5), NUM(2, 1), 5);

	(void)state;
	assert_int_equal(snap(1, BFT_SNAP_ADD, false), BFT_EAUTH);
	set_req(BFT_SNAP, bft_addr(BFT_VOL_TABLE, 0));
	req.gen = 1;
	for (unsigned j = 0; j < N; j++)
		bft_snap_mac(BFT_VOL_TABLE, 1, 0, ck.k[j], req.vec[j]);
	assert_int_equal(handle(), BFT_EPROTO);
	written(ADDR(5), &v1, 10);
	assert_int_equal(snap(1, BFT_SNAP_ADD, true), BFT_OK);
	written(ADDR(5), &v2, 20);
	bft_store_close(st);
	open_store();
	assert_int_equal(vcollect(ADDR(5), 1, false), BFT_OK);
	assert_ts(&rep.cands[0].ts, &v1.ts);
	assert_int_equal(snap(1, BFT_SNAP_REMOVE, true), BFT_OK);
	assert_int_equal(vcollect(ADDR(5), 1, false), BFT_EAGAIN);
	assert_int_equal(collect(ADDR(5), false), BFT_OK);
	assert_ts(&rep.cands[0].ts, &v2.ts);
}

static int
snapspace(uint64_t from, uint64_t g)
{
	set_req(BFT_SNAPSPACE, from);
	req.gen = g;
	return handle();
}

/*
 * SNAPSPACE: what a boundary alone keeps here, walked a piece at a
 * time; a boundary this server does not keep is EAGAIN, not zero.
 * Boundary 1 keeps v1 of three blocks (overwritten after it), and
 * boundary 2 keeps nothing of its own yet.
 */
static void
test_snap_space(void **state)
{
	uint64_t excl = 0, next = ADDR(0);
	unsigned calls = 0;

	(void)state;
	assert_int_equal(snapspace(ADDR(0), 1), BFT_EAGAIN);
	for (unsigned b = 0; b < 3; b++) {
		struct bft_cand v1 = mkcand(ADDR(b), NUM(1, 1), 5);

		written(ADDR(b), &v1, 10);
	}
	assert_int_equal(snap(1, BFT_SNAP_ADD, true), BFT_OK);
	assert_int_equal(snap(2, BFT_SNAP_ADD, true), BFT_OK);
	for (unsigned b = 0; b < 3; b++) {
		struct bft_cand v3 = mkcand(ADDR(b), NUM(3, 1), 5);

		written(ADDR(b), &v3, 20);
	}
	do {
		assert_int_equal(snapspace(next, 1), BFT_OK);
		excl += rep.space_excl;
		next = rep.next;
	} while (next != UINT64_MAX && ++calls < 10);
	assert_true(next == UINT64_MAX);
	assert_true(excl == 0);		/* v1 is boundary 2's view too */
	assert_true(rep.space_total > 0);
	assert_int_equal(snap(2, BFT_SNAP_REMOVE, true), BFT_OK);
	assert_int_equal(snapspace(ADDR(0), 1), BFT_OK);
	assert_true(rep.next == UINT64_MAX);
	assert_true(rep.space_excl == rep.space_total);
	assert_true(rep.space_excl > 0);
	assert_int_equal(snapspace(ADDR(0), 2), BFT_EAGAIN);
}

/*
 * A restarted server that has not read the volume table since it
 * started (bounds_pending) holds back a client's COMPLETE of a
 * generation newer than any it completed in the volume: completed, it
 * would make the store refuse the boundary of a snapshot taken while
 * the server was down.  Once the boundary is taken the write goes
 * through, and the view holds what the server had.  Not held: a
 * generation the server has (a holder that kept its lease), a volume
 * with nothing here, the rebuild's adoptions, the reserved volumes.
 */
static void
test_bounds_hold(void **state)
{
	struct bft_cand v1 = mkcand(ADDR(0), NUM(1, 1), 7);
	struct bft_cand v2 = mkcand(ADDR(0), NUM(2, 1), 7);
	struct bft_cand b1 = mkcand(ADDR(1), NUM(1, 2), 7);
	uint64_t fresh = bft_addr(VOL + 1, 0), adopted = bft_addr(VOL + 2, 0);
	struct bft_cand f5 = mkcand(fresh, NUM(5, 1), 7);
	struct bft_cand a1 = mkcand(adopted, NUM(1, 1), 7);
	struct bft_cand a3 = mkcand(adopted, NUM(3, 1), 7);
	uint64_t tab = bft_addr(BFT_VOL_TABLE, 5);
	struct bft_cand t1 = mkcand(tab, NUM(1, 1), 7);
	struct bft_cand t2 = mkcand(tab, NUM(2, 1), 7);

	(void)state;
	written(ADDR(0), &v1, 1);
	written(adopted, &a1, 2);
	written(tab, &t1, 3);
	h.bounds_pending = true;
	assert_int_equal(store(ADDR(0), &v2, 4), BFT_OK);
	assert_int_equal(complete(ADDR(0), &v2), BFT_EAGAIN);
	assert_ts(&lc(ADDR(0))->ts, &v1.ts);
	written(ADDR(1), &b1, 5);	/* the generation it has */
	written(fresh, &f5, 6);		/* nothing of the volume here */
	written(tab, &t2, 7);		/* a reserved volume */
	assert_int_equal(store(adopted, &a3, 8), BFT_OK);
	h.adopting = true;		/* a value its peers completed */
	assert_int_equal(complete(adopted, &a3), BFT_OK);
	h.adopting = false;

	/*
	 * The table read: boundary 1, cut while this server was away, is
	 * one its store can still take; then v2 completes over it, and the
	 * view at 1 holds v1, what the server had.
	 */
	assert_int_equal(snap(1, BFT_SNAP_ADD, true), BFT_OK);
	h.bounds_pending = false;
	assert_int_equal(complete(ADDR(0), &v2), BFT_OK);
	assert_int_equal(vcollect(ADDR(0), 1, false), BFT_OK);
	assert_ts(&rep.cands[0].ts, &v1.ts);
	assert_int_equal(collect(ADDR(0), false), BFT_OK);
	assert_ts(&rep.cands[0].ts, &v2.ts);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_view_reads, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_head_not_written_into_view,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_view, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_snap_requests, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_snap_space, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_bounds_hold, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
