/*
 * Snapshot views after compaction moved their records
 * (server/store/store_snap.c says why a replay must still agree): the
 * records a boundary keeps and its SNAP record copied past the set_lc
 * that froze them, and random histories compared, view by view and
 * byte by byte, with what reopens from the checkpoint and from the
 * whole log.  The fixture is store_snap_fixture.h.
 */
#include "store_snap_fixture.h"

#define NB	24
#define SEG	(512u * KIB)

/*
 * Many blocks written across boundaries added and removed, with
 * write-backs, on small segments, then compacted until the segments
 * holding the SNAP records and the retained ones were copied: the
 * views stay, byte-exact, through compaction and both reopens.  The
 * replay meets retained records after the set_lc that froze them, and
 * the SNAP after both.
 */
static void
test_view_compact(void **state)
{
	uint64_t addrs[NB], first, num0 = 0;
	static struct vstate a, b;
	struct bft_store *st;
	struct bft_cand c;

	(void)state;
	for (unsigned i = 0; i < NB; i++)
		addrs[i] = bft_addr(V, i * 37);
	st = sopen(SEG);
	/* Volume 0's writes beside, overwritten below: garbage. */
	for (unsigned i = 0; i < NB; i++) {
		write_v(st, addrs[i], G(1, i + 1));
		for (unsigned j = 0; j < 3; j++)
			write_v(st, (3 * i + j) % 16, ++num0);
		if (i == 1)
			assert_int_equal(bft_store_snap_add(st, V, 1), 0);
	}
	assert_int_equal(bft_store_snap_add(st, V, 2), 0);
	for (unsigned i = 0; i < NB; i += 2)
		assert_int_equal(put(st, addrs[i], G(1, 100), 1, 0), 0);
	for (uint64_t g = 2; g <= 5; g++) {
		if (g == 4)
			assert_int_equal(bft_store_snap_add(st, V, 4), 0);
		for (unsigned i = 0; i < NB; i++)
			if ((i + g) % 3 != 0)
				write_v(st, addrs[i], G(g, i + 1));
	}
	cand(&c, addrs[0], G(1, 100));
	assert_int_equal(bft_store_view_set_lc(st, addrs[0], 1, &c), 0);
	assert_int_equal(bft_store_snap_remove(st, V, 2), 0);
	first = bft_store_view_next(st, V, 1, 0);
	assert_int_equal(first, addrs[0]);
	vtake(st, addrs, NB, &a);
	/* Overwrite volume 0 until the early segments are compacted. */
	for (unsigned r = 0; r < 6; r++)
		for (uint64_t k = 0; k < 16; k++)
			write_v(st, k, ++num0);
	while (bft_store_compact_idle(st, 64 * KIB))
		;
	assert_int_equal(bft_store_sync(st), 0);
	/* Segment 1 held the SNAP and retained records: they moved. */
	assert_false(file_size(seg_path(1)) >= 0);
	vtake(st, addrs, NB, &b);
	b.live = a.live = 0;
	vsame(&a, &b);
	check_view_lc(st, addrs[0], 1, G(1, 100));
	check_view_entry(st, addrs[0], 1, G(1, 100));
	check_view_lc(st, addrs[1], 1, G(1, 2));
	check_view_entry(st, addrs[1], 1, G(1, 2));
	st = reopen_views(st, SEG, addrs, NB);
	bft_store_close(st);
}

static uint64_t rng = 88172645463325252ull;

static uint64_t
rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

/* A write-back into a frozen view of a, from one of its entries. */
static void
random_writeback(struct bft_store *st, uint64_t a, uint64_t g)
{
	unsigned nh = bft_store_view_nhist(st, a, g);
	struct bft_hist_entry e;
	struct bft_cand lc, c;

	if (nh == 0 || bft_store_view_lc(st, a, g, &lc) < 0)
		return;
	assert_int_equal(bft_store_view_hist_at(st, a, g,
	    (unsigned)rnd(nh), &e), 0);
	cand(&c, a, e.meta.ts.num);
	assert_int_equal(bft_store_view_set_lc(st, a, g, &c),
	    bft_ts_cmp(&c.ts, &lc.ts) > 0 ? 0 : -EINVAL);
}

/*
 * A random history (writes, STOREs left pending, boundaries added and
 * removed, write-backs, another volume's garbage, compaction) must come
 * back whole from the checkpoint and from the log, whatever order
 * compaction left the records in.
 */
static void
random_run(uint64_t seed)
{
	uint64_t addrs[NB], gen = 1, k = 0, num0 = 0, gens[64];
	static struct vstate a, b;
	struct bft_store *st;
	int err;

	rng = seed;
	for (unsigned i = 0; i < NB; i++)
		addrs[i] = bft_addr(V, i);
	st = sopen(SEG);
	for (unsigned step = 0; step < 1500; step++) {
		uint64_t x = addrs[rnd(NB)], r = rnd(100);
		size_t ng = bft_store_snaps(st, V, gens, 64);

		if (r < 40) {
			write_v(st, x, G(gen, ++k));
		} else if (r < 50) {
			assert_int_equal(put(st, x, G(gen, ++k), 1, 0), 0);
		} else if (r < 56) {
			gen++;
		} else if (r < 62) {
			err = bft_store_snap_add(st, V, gen - (rnd(4) == 0));
			assert_true(err == 0 || err == -ESTALE);
		} else if (r < 63 && ng > 0) {
			assert_int_equal(bft_store_snap_remove(st, V,
			    gens[rnd(ng)]), 0);
		} else if (r < 75 && ng > 0) {
			random_writeback(st, x, gens[rnd(ng)]);
		} else if (r < 95) {
			write_v(st, rnd(16), ++num0);
		} else {
			bft_store_compact_idle(st, 256 * KIB);
		}
		if (step % 500 == 499) {
			while (bft_store_snap_gc_step(st, 7))
				;
			st = reopen_views(st, SEG, addrs, NB);
		}
	}
	while (bft_store_compact_idle(st, 1u << 20))
		;
	while (bft_store_snap_gc_step(st, 3))
		;
	vtake(st, addrs, NB, &a);
	st = reopen_views(st, SEG, addrs, NB);
	vtake(st, addrs, NB, &b);
	vsame(&a, &b);
	/* The run had boundaries and retained records to check. */
	assert_true(a.n > 20 * NB);
	bft_store_close(st);
}

static void
test_view_random(void **state)
{
	for (uint64_t seed = 1; seed <= 4; seed++) {
		random_run(seed * 0x9e3779b97f4a7c15ull);
		teardown(state);
		setup(state);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_view_compact, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_view_random, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
