/*
 * Snapshot views (server/store/store_snap.c, store_retain.c,
 * store_view.c): what a boundary keeps when a block's lc passes it,
 * the views it answers, write-backs into them, the walk over a
 * volume's frozen blocks, removal and the space it frees, a DROP, a
 * format 6 directory, and each again after a reopen from the
 * checkpoint and from the whole log.  test_store_snap_replay.c has
 * compaction and random histories; the fixture is store_snap_fixture.h.
 */
#include "store_snap_fixture.h"

/*
 * v1 at generation 1, boundary 1, v2 at generation 2: view 1 is v1,
 * lc and fragment, the live state v2; view 2 is the live state until
 * something passes it.  The refusals of snap_add.
 */
static void
test_view_basic(void **state)
{
	uint64_t b = bft_addr(V, 7), gens[4];
	struct bft_cand c;
	uint64_t before;
	struct bft_store *st;

	(void)state;
	st = sopen(0);
	write_v(st, b, G(1, 1));
	assert_int_equal(bft_store_snap_add(st, V, 1), 0);
	before = total_bytes(st);
	assert_int_equal(bft_store_snap_add(st, V, 1), 0);
	assert_int_equal(total_bytes(st), before);
	write_v(st, b, G(2, 1));
	check_view_lc(st, b, 1, G(1, 1));
	assert_int_equal(bft_store_view_nhist(st, b, 1), 1);
	check_view_entry(st, b, 1, G(1, 1));
	assert_int_equal(store_lc(st, b)->ts.num, G(2, 1));
	check_entry(st, b, G(2, 1), 1, 0);
	assert_false(store_has_hist(st, b, &(struct bft_ts){ .num = G(1, 1),
	    .wid = 1 }));
	/* View 2: the live state, while nothing passed 2. */
	assert_int_equal(bft_store_snap_add(st, V, 2), 0);
	check_view_lc(st, b, 2, G(2, 1));
	check_view_entry(st, b, 2, G(2, 1));
	assert_int_equal(bft_store_view_next(st, V, 2, 0), UINT64_MAX);
	assert_int_equal(bft_store_view_next(st, V, 1, 0), b);
	/* Not a boundary. */
	assert_int_equal(bft_store_view_lc(st, b, 3, &c), -ENOENT);
	assert_int_equal(bft_store_view_nhist(st, b, 3), 0);
	/* A write of generation 2 completed: boundary 1.5 cannot be. */
	assert_int_equal(bft_store_snap_add(st, V, 0), -ESTALE);
	assert_int_equal(bft_store_snap_add(st, BFT_VOL_TABLE, 5), -EINVAL);
	assert_int_equal(bft_store_snap_add(st, BFT_VOL_LEASES, 5), -EINVAL);
	assert_int_equal(bft_store_snap_add(st, V, BFT_GEN_MAX + 1), -EINVAL);
	assert_int_equal(bft_store_drop_volume(st, 9, NULL), 0);
	assert_int_equal(bft_store_snap_add(st, 9, 5), -EIDRM);
	/* Volume 0 may have snapshots too. */
	assert_int_equal(bft_store_snap_add(st, 0, 4), 0);
	for (uint64_t g = 0; g < BFT_STORE_MAX_SNAPS; g++)
		assert_int_equal(bft_store_snap_add(st, 11, g), 0);
	assert_int_equal(bft_store_snap_add(st, 11, 999), -ENOSPC);
	assert_int_equal(bft_store_snaps(st, V, gens, 4), 2);
	assert_int_equal(gens[0], 1);
	assert_int_equal(gens[1], 2);
	st = reopen_views(st, 0, &b, 1);
	check_view_lc(st, b, 1, G(1, 1));
	check_view_entry(st, b, 1, G(1, 1));
	assert_int_equal(bft_store_snaps(st, 11, NULL, 0),
	    BFT_STORE_MAX_SNAPS);
	bft_store_close(st);
}

/*
 * Boundaries 1 and 3, versions at generations 1 to 4: each view is its
 * own version; a block never written has c0 in every view, and one
 * first written at 4 too, though it is frozen and walked.
 */
static void
test_view_two(void **state)
{
	uint64_t b = bft_addr(V, 1), never = bft_addr(V, 2);
	uint64_t late = bft_addr(V, 3), addrs[] = { b, never, late };
	struct bft_store *st;

	(void)state;
	st = sopen(0);
	assert_int_equal(bft_store_snap_add(st, V, 1), 0);
	assert_int_equal(bft_store_snap_add(st, V, 3), 0);
	for (uint64_t g = 1; g <= 4; g++)
		write_v(st, b, G(g, 5));
	write_v(st, late, G(4, 1));
	check_view_lc(st, b, 1, G(1, 5));
	check_view_entry(st, b, 1, G(1, 5));
	check_view_lc(st, b, 3, G(3, 5));
	check_view_entry(st, b, 3, G(3, 5));
	assert_int_equal(bft_store_view_nhist(st, b, 3), 1);
	check_view_lc(st, never, 1, 0);
	check_view_lc(st, never, 3, 0);
	assert_int_equal(bft_store_view_nhist(st, never, 1), 0);
	check_view_lc(st, late, 1, 0);
	assert_int_equal(bft_store_view_nhist(st, late, 3), 0);
	assert_int_equal(bft_store_view_next(st, V, 1, 0), b);
	assert_int_equal(bft_store_view_next(st, V, 1, b + 1), late);
	assert_int_equal(bft_store_view_next(st, V, 3, late + 1), UINT64_MAX);
	/* Generation 2's version was no boundary's: it is garbage. */
	assert_int_equal(live_bytes(st), 4 * (bft_rec_lc_len(4) +
	    bft_rec_hist_len(4, FRAGLEN)) + 2 * bft_rec_snap_len());
	st = reopen_views(st, 0, addrs, 3);
	check_view_lc(st, b, 3, G(3, 5));
	bft_store_close(st);
}

/*
 * A version that two boundaries share is stored once and is neither's
 * alone: removing one keeps it for the other.
 */
static void
test_view_shared(void **state)
{
	uint64_t b = bft_addr(V, 1), s = bft_addr(V, 2), excl, total;
	size_t pair = bft_rec_lc_len(4) + bft_rec_hist_len(4, FRAGLEN);
	struct bft_store *st;

	(void)state;
	st = sopen(0);
	assert_int_equal(bft_store_snap_add(st, V, 1), 0);
	assert_int_equal(bft_store_snap_add(st, V, 3), 0);
	for (uint64_t g = 1; g <= 4; g++)
		write_v(st, b, G(g, 5));
	write_v(st, s, G(1, 1));
	write_v(st, s, G(4, 1));
	check_view_lc(st, s, 1, G(1, 1));
	check_view_lc(st, s, 3, G(1, 1));
	bft_store_snap_space(st, V, 1, &excl, &total);
	assert_int_equal(excl, pair);
	assert_int_equal(total, 3 * pair);
	bft_store_snap_space(st, V, 3, &excl, &total);
	assert_int_equal(excl, pair);
	assert_int_equal(bft_store_snap_remove(st, V, 1), 0);
	bft_store_snap_space(st, V, 3, &excl, &total);
	assert_int_equal(excl, 2 * pair);
	assert_int_equal(total, 2 * pair);
	check_view_lc(st, s, 3, G(1, 1));
	check_view_entry(st, s, 3, G(1, 1));
	bft_store_close(st);
}

/*
 * A STORE of generation 1 that never completed is in view 1 beside the
 * older lc, and stays there; a STORE of generation 1 after the block
 * passed 1 is refused.  Write-backs into the frozen view: a newer
 * candidate of generation <= 1 is taken (its older entries leave the
 * view), others refused; they survive a reopen.
 */
static void
test_view_pending(void **state)
{
	uint64_t b = bft_addr(V, 9);
	struct bft_store *st;
	struct bft_cand c;

	(void)state;
	st = sopen(0);
	write_v(st, b, G(1, 1));
	assert_int_equal(bft_store_snap_add(st, V, 1), 0);
	assert_int_equal(put(st, b, G(1, 2), 1, 0), 0);
	write_v(st, b, G(2, 1));
	check_view_lc(st, b, 1, G(1, 1));
	assert_int_equal(bft_store_view_nhist(st, b, 1), 2);
	check_view_entry(st, b, 1, G(1, 1));
	check_view_entry(st, b, 1, G(1, 2));
	/* No pollution of the view. */
	assert_int_equal(put(st, b, G(1, 3), 1, 0), -ESTALE);
	assert_int_equal(bft_store_view_nhist(st, b, 1), 2);
	/* Write-backs: above generation 1, not newer, newer. */
	cand(&c, b, G(2, 5));
	assert_int_equal(bft_store_view_set_lc(st, b, 1, &c), -EINVAL);
	cand(&c, b, G(1, 1));
	assert_int_equal(bft_store_view_set_lc(st, b, 1, &c), -EINVAL);
	cand(&c, b, G(1, 2));
	assert_int_equal(bft_store_view_set_lc(st, b, 1, &c), 0);
	check_view_lc(st, b, 1, G(1, 2));
	assert_int_equal(bft_store_view_nhist(st, b, 1), 1);
	check_view_entry(st, b, 1, G(1, 2));
	assert_int_equal(bft_store_view_set_lc(st, b, 1, &c), -EINVAL);
	/* The live state did not move. */
	assert_int_equal(store_lc(st, b)->ts.num, G(2, 1));
	st = reopen_views(st, 0, &b, 1);
	check_view_lc(st, b, 1, G(1, 2));
	check_view_entry(st, b, 1, G(1, 2));
	/* While the view is the live state, a write-back is a set_lc. */
	assert_int_equal(bft_store_snap_add(st, V, 3), 0);
	cand(&c, b, G(3, 1));
	assert_int_equal(bft_store_view_set_lc(st, b, 3, &c), 0);
	assert_int_equal(store_lc(st, b)->ts.num, G(3, 1));
	bft_store_close(st);
}

#define NB	24
#define SEG	(512u * KIB)

/*
 * Removing a boundary frees what it alone kept: bytes_live falls by
 * its exclusive bytes, compaction then shrinks the log, and the other
 * boundary's views do not change.
 */
static void
test_snap_remove(void **state)
{
	uint64_t addrs[NB], excl, total, excl3, live0, log0;
	static struct vstate a, b;
	struct bft_store *st;

	(void)state;
	for (unsigned i = 0; i < NB; i++)
		addrs[i] = bft_addr(V, i);
	st = sopen(SEG);
	assert_int_equal(bft_store_snap_add(st, V, 1), 0);
	assert_int_equal(bft_store_snap_add(st, V, 3), 0);
	for (uint64_t g = 1; g <= 4; g++)
		for (unsigned i = 0; i < NB; i++)
			if (g != 2 || i % 2 == 0)
				write_v(st, addrs[i], G(g, 1));
	bft_store_snap_space(st, V, 1, &excl, &total);
	bft_store_snap_space(st, V, 3, &excl3, &total);
	/* Each boundary keeps its own version of every block. */
	assert_int_equal(excl, NB * (bft_rec_lc_len(4) +
	    bft_rec_hist_len(4, FRAGLEN)));
	assert_int_equal(excl3, excl);
	assert_int_equal(total, 2 * excl);
	/* The same added up a few blocks at a time, as SNAPSPACE does. */
	{
		uint64_t from = 0, part = 0;
		unsigned calls = 0;

		do {
			from = bft_store_snap_space_from(st, V, 1, from, 3,
			    &part);
			calls++;
		} while (from != UINT64_MAX && calls < 2 * NB);
		assert_int_equal(part, excl);
		assert_int_equal(calls, (NB + 2) / 3 + (NB % 3 == 0));
	}
	live0 = live_bytes(st);
	assert_int_equal(bft_store_snap_remove(st, V, 2), 0);
	assert_int_equal(live_bytes(st), live0);
	vtake(st, addrs, NB, &a);
	assert_int_equal(bft_store_snap_remove(st, V, 1), 0);
	assert_int_equal(live_bytes(st), live0 - excl - bft_rec_snap_len());
	bft_store_snap_space(st, V, 3, &excl3, &total);
	assert_int_equal(total, excl);
	assert_false(bft_store_snap_gc_step(st, 100));
	vtake(st, addrs, NB, &b);
	assert_int_equal(b.sum[1], 3);
	/* View 3 as it was: skip view 1's part of the first state. */
	assert_int_equal(a.sum[0], 2);
	assert_memory_equal(&a.sum[2 + a.n / 2 - 1], &b.sum[1],
	    (b.n - 1) * sizeof b.sum[0]);
	log0 = total_bytes(st);
	while (bft_store_compact_idle(st, 1u << 20))
		;
	assert_int_equal(bft_store_sync(st), 0);
	assert_true(total_bytes(st) < log0 - excl / 2);
	st = reopen_views(st, SEG, addrs, NB);
	bft_store_close(st);
}

/*
 * The walk visits the retained blocks only: 100k blocks written, ten
 * rewritten after the boundary, ten steps' worth of index.
 */
static void
test_view_next(void **state)
{
	uint64_t n = 0, steps, a;
	struct bft_store *st;

	(void)state;
	st = sopen(64u << 20);
	for (uint64_t k = 0; k < 100000; k++)
		assert_int_equal(set_lc(st, bft_addr(V, k), G(1, 1), 1), 0);
	assert_int_equal(bft_store_snap_add(st, V, 1), 0);
	for (uint64_t k = 0; k < 10; k++)
		assert_int_equal(set_lc(st, bft_addr(V, k * 9973), G(2, 1), 1),
		    0);
	steps = bft_store_idx_steps(st);
	for (a = bft_store_view_next(st, V, 1, 0); a != UINT64_MAX;
	    a = bft_store_view_next(st, V, 1, a + 1)) {
		assert_int_equal(a, bft_addr(V, n * 9973));
		check_view_lc(st, a, 1, G(1, 1));
		n++;
	}
	assert_int_equal(n, 10);
	/* A lookup per call, each a path of a ten-node treap. */
	assert_true(bft_store_idx_steps(st) - steps < 200);
	bft_store_close(st);
}

/*
 * Removing a boundary that kept more blocks than a removal frees at
 * once leaves the rest to the idle steps, whose progress is reported:
 * done of total while some is left, 0 of 0 after.
 */
static void
test_snap_gc_progress(void **state)
{
	const uint64_t nb = 6000;
	uint64_t done, total, steps = 0;
	struct bft_store *st;

	(void)state;
	st = sopen(64u << 20);
	for (uint64_t k = 0; k < nb; k++)
		assert_int_equal(set_lc(st, bft_addr(V, k), G(1, 1), 1), 0);
	assert_int_equal(bft_store_snap_add(st, V, 1), 0);
	for (uint64_t k = 0; k < nb; k++)
		assert_int_equal(set_lc(st, bft_addr(V, k), G(2, 1), 1), 0);
	bft_store_snap_gc_progress(st, &done, &total);
	assert_true(done == 0 && total == 0);
	assert_int_equal(bft_store_snap_remove(st, V, 1), 0);
	bft_store_snap_gc_progress(st, &done, &total);
	assert_int_equal(total, nb);
	assert_true(done > 0 && done < total);
	while (bft_store_snap_gc_step(st, 500) && ++steps < 100) {
		uint64_t d2;

		bft_store_snap_gc_progress(st, &d2, &total);
		assert_true(d2 > done && d2 <= total);
		done = d2;
	}
	bft_store_snap_gc_progress(st, &done, &total);
	assert_true(done == 0 && total == 0);
	bft_store_close(st);
}

/* A DROP takes the boundaries and what they kept; a reopen agrees. */
static void
test_snap_drop(void **state)
{
	uint64_t b = bft_addr(V, 4), live0, gens[2];
	struct bft_store *st;

	(void)state;
	st = sopen(0);
	write_v(st, 1, 1);
	live0 = live_bytes(st);
	assert_int_equal(bft_store_snap_add(st, V, 1), 0);
	write_v(st, b, G(1, 1));
	write_v(st, b, G(2, 1));
	assert_int_equal(bft_store_drop_volume(st, V, NULL), 0);
	assert_int_equal(bft_store_snaps(st, V, gens, 2), 0);
	assert_int_equal(live_bytes(st), live0);
	assert_int_equal(bft_store_view_next(st, V, 1, 0), UINT64_MAX);
	assert_int_equal(bft_store_snap_add(st, V, 5), -EIDRM);
	st = reopen_views(st, 0, &b, 1);
	assert_int_equal(bft_store_snaps(st, V, gens, 2), 0);
	assert_int_equal(live_bytes(st), live0);
	bft_store_close(st);
}

/*
 * Makes the checkpoint (one chunk, store_ckstream.h) say version v,
 * with its chunk's CRC made anew: what an older server wrote.
 */
static void
ckpt_version(uint32_t v)
{
	static uint8_t buf[1u << 20];
	uint64_t chunk = 0;
	uint32_t crc;
	char p[160];
	ssize_t k;
	int fd;

	snprintf(p, sizeof p, "%s/index.ckpt", dir);
	assert_true((fd = open(p, O_RDWR)) >= 0);
	assert_true((k = read(fd, buf, sizeof buf)) > 16);
	memcpy(buf + 8, &v, sizeof v);
	crc = bft_crc32c(bft_crc32c(0, &chunk, sizeof chunk), buf,
	    (size_t)k - sizeof crc);
	memcpy(buf + k - sizeof crc, &crc, sizeof crc);
	assert_int_equal(pwrite(fd, buf, (size_t)k, 0), k);
	close(fd);
}

/*
 * A format 6 directory opens, becomes 7 and takes snapshots; its
 * checkpoint, of an older version, is passed over for the whole log.
 */
static void
test_format6(void **state)
{
	struct bft_store_ckpt_info ck;
	char p[160], text[512];
	uint64_t b = bft_addr(V, 2);
	struct bft_store *st;
	ssize_t k;
	char *f;
	int fd;

	(void)state;
	st = sopen(0);
	write_v(st, b, G(1, 1));
	bft_store_close(st);
	snprintf(p, sizeof p, "%s/identity", dir);
	assert_true((fd = open(p, O_RDWR)) >= 0);
	assert_true((k = read(fd, text, sizeof text - 1)) > 0);
	text[k] = '\0';
	assert_non_null(f = strstr(text, "format = 7\n"));
	f[9] = '6';
	assert_int_equal(pwrite(fd, text, (size_t)k, 0), k);
	close(fd);
	ckpt_version(3);
	st = sopen(0);
	bft_store_ckpt_info(st, &ck);
	assert_false(ck.loaded);
	assert_non_null(strstr(ck.why, "version"));
	check_entry(st, b, G(1, 1), 1, 0);
	assert_int_equal(bft_store_snap_add(st, V, 1), 0);
	write_v(st, b, G(2, 1));
	check_view_lc(st, b, 1, G(1, 1));
	bft_store_close(st);
	snprintf(p, sizeof p, "%s/identity", dir);
	assert_true((fd = open(p, O_RDONLY)) >= 0);
	assert_true((k = read(fd, text, sizeof text - 1)) > 0);
	text[k] = '\0';
	close(fd);
	assert_non_null(strstr(text, "format = 7\n"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_view_basic, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_view_two, setup, teardown),
		cmocka_unit_test_setup_teardown(test_view_shared, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_view_pending, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_snap_remove, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_snap_gc_progress, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_view_next, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_snap_drop, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_format6, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
