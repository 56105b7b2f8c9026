/*
 * Volumes forgotten (bft_store_drop_volume, server/store/store_drop.c): the
 * space a DROP gives back, other volumes untouched, and a dropped
 * volume staying dropped through every way the store comes back: the
 * whole log, an index checkpoint from before the DROP, and compaction
 * that removed the DROP's own segment while the volume's records still
 * lie in older ones; and never written again.  The fixture is
 * store_fixture.h.
 */
#include "store_fixture.h"

#define V	5u			/* the volume dropped */
#define W	7u			/* one that stays */
#define X	9u			/* dropped, never written here */

/* The live bytes the store reports for vol, or 0 when it lists none. */
static uint64_t
vol_live(struct bft_store *st, uint32_t vol)
{
	struct bft_store_vol v[8];
	size_t k = bft_store_volumes(st, vol, v, 8);

	return k > 0 && v[0].vol == vol ? v[0].live : 0;
}

static bool
vol_listed(struct bft_store *st, uint32_t vol)
{
	struct bft_store_vol v[16];
	size_t k = bft_store_volumes(st, 0, v, 16);

	for (size_t i = 0; i < k; i++)
		if (v[i].vol == vol)
			return true;
	return false;
}

/* A completed write of addr at num, and num + 1 pending above it. */
static void
write_blk(struct bft_store *st, uint64_t addr, uint64_t num, bool pending)
{
	assert_int_equal(put(st, addr, num, 1, (unsigned)num), 0);
	assert_int_equal(set_lc(st, addr, num, 1), 0);
	if (pending)
		assert_int_equal(put(st, addr, num + 1, 1, (unsigned)num), 0);
}

/* vol's blocks of blocks[] hold nothing: never written, as it reads. */
static void
check_gone(struct bft_store *st, uint32_t vol, const uint64_t *blocks,
    size_t nb)
{
	struct bft_ts ts;

	assert_false(vol_listed(st, vol));
	assert_int_equal(vol_live(st, vol), 0);
	for (size_t i = 0; i < nb; i++) {
		uint64_t a = bft_addr(vol, blocks[i]);

		assert_true(bft_ts_is_zero(&store_lc(st, a)->ts));
		assert_int_equal(bft_store_nhist(st, a), 0);
		make_ts(&ts, 1, 1);
		assert_false(store_has_hist(st, a, &ts));
	}
	/* No index page of it is left for walks to visit. */
	assert_false(bft_store_next_page(st, bft_addr(vol, 0)) >>
	    BFT_ADDR_BLOCK_BITS == vol);
}

static const uint64_t vblocks[] = { 0, 3, 1023, 1024, 70000 };
#define NVB	(sizeof vblocks / sizeof vblocks[0])

/* Volume V at vblocks (one pending STORE each), W and 0 beside it. */
static void
fill_three(struct bft_store *st)
{
	for (size_t i = 0; i < NVB; i++)
		write_blk(st, bft_addr(V, vblocks[i]), 2, true);
	write_blk(st, bft_addr(W, 3), 1, true);
	write_blk(st, 3, 1, false);
}

/* W and volume 0 are as fill_three left them. */
static void
check_others(struct bft_store *st, uint64_t wlive, uint64_t live0)
{
	check_entry(st, bft_addr(W, 3), 1, 1, 1);
	check_entry(st, bft_addr(W, 3), 2, 1, 1);
	assert_int_equal(store_lc(st, bft_addr(W, 3))->ts.num, 1);
	check_entry(st, 3, 1, 1, 1);
	assert_int_equal(vol_live(st, W), wlive);
	assert_int_equal(vol_live(st, 0), live0);
	assert_true(vol_listed(st, W));
}

/*
 * A dropped volume's blocks take no record: a Hist entry or an lc of
 * any timestamp is refused with -EIDRM, and it stays unlisted.
 */
static void
check_refused(struct bft_store *st, uint32_t vol)
{
	struct bft_store_stats a, b;

	bft_store_stats(st, &a);
	assert_true(bft_store_dropped(st, vol));
	for (uint64_t num = 1; num < 1000; num *= 10) {
		assert_int_equal(put(st, bft_addr(vol, 3), num, 1, 1), -EIDRM);
		assert_int_equal(set_lc(st, bft_addr(vol, 3), num, 1), -EIDRM);
		assert_int_equal(set_lc(st, bft_addr(vol, num), num, 1),
		    -EIDRM);
	}
	bft_store_stats(st, &b);
	assert_int_equal(b.bytes_total, a.bytes_total);
	assert_false(vol_listed(st, vol));
}

/*
 * A DROP frees what the volume's entries pointed to: the log's live
 * bytes fall by the volume's (the DROP record is not data), and the
 * volume is no longer listed.  Other volumes keep everything.  Only
 * droppable volumes are, and a second DROP appends nothing.  The volume
 * is never written again.
 */
static void
test_drop_frees(void **state)
{
	struct bft_store_stats a, b;
	uint64_t vlive, wlive, live0, blocks = 99;
	struct bft_store *st;

	(void)state;
	st = sopen(0);
	fill_three(st);
	vlive = vol_live(st, V);
	wlive = vol_live(st, W);
	live0 = vol_live(st, 0);
	assert_true(vlive > NVB * 2 * FRAGLEN);
	bft_store_stats(st, &a);
	assert_int_equal(a.blocks_held, NVB + 2);
	assert_int_equal(bft_store_drop_volume(st, V, &blocks), 0);
	assert_int_equal(blocks, NVB);
	bft_store_stats(st, &b);
	assert_int_equal(b.bytes_live, a.bytes_live - vlive);
	assert_int_equal(b.bytes_total, a.bytes_total + bft_rec_drop_len());
	assert_int_equal(b.blocks_held, 2);
	check_gone(st, V, vblocks, NVB);
	check_others(st, wlive, live0);
	/* Again: nothing there, nothing appended. */
	assert_int_equal(bft_store_drop_volume(st, V, &blocks), 0);
	assert_int_equal(blocks, 0);
	bft_store_stats(st, &a);
	assert_int_equal(a.bytes_total, b.bytes_total);
	/* The cluster's disk and the reserved volumes never go. */
	assert_int_equal(bft_store_drop_volume(st, 0, NULL), -EINVAL);
	assert_int_equal(bft_store_drop_volume(st, BFT_VOL_TABLE, NULL),
	    -EINVAL);
	assert_int_equal(bft_store_drop_volume(st, BFT_VOL_LEASES, NULL),
	    -EINVAL);
	assert_int_equal(bft_store_drop_volume(st, BFT_ADDR_MAX_VOL + 1,
	    NULL), -EINVAL);
	check_others(st, wlive, live0);
	/* Nothing brings it back: no STORE, no lc, whatever the ts. */
	check_refused(st, V);
	bft_store_close(st);
}

/*
 * The DROP survives a reopen from the whole log and from a checkpoint
 * written after it, and from one written before it, whose replay of
 * the log after it meets the DROP record.
 */
static void
test_drop_reopen(void **state)
{
	struct bft_store_ckpt_info ck;
	uint64_t wlive, live0, held;
	struct bft_store_stats ss;
	struct bft_store *st;
	char p[160], q[160];

	(void)state;
	st = sopen(0);
	fill_three(st);
	wlive = vol_live(st, W);
	live0 = vol_live(st, 0);
	bft_store_close(st);
	/* The checkpoint of that close holds volume V. */
	snprintf(p, sizeof p, "%s/index.ckpt", dir);
	snprintf(q, sizeof q, "%s/before", tmp);
	assert_int_equal(link(p, q), 0);
	st = sopen(0);
	assert_int_equal(bft_store_drop_volume(st, V, NULL), 0);
	bft_store_stats(st, &ss);
	held = ss.blocks_held;
	/* From the whole log, then from the checkpoint of a close. */
	st = reopen_same(st, 0);
	check_gone(st, V, vblocks, NVB);
	check_others(st, wlive, live0);
	bft_store_close(st);
	st = sopen(0);
	bft_store_ckpt_info(st, &ck);
	assert_true(ck.loaded);
	check_gone(st, V, vblocks, NVB);
	check_others(st, wlive, live0);
	bft_store_close(st);
	/* From the checkpoint before the DROP and the log after it. */
	assert_int_equal(rename(q, p), 0);
	st = sopen(0);
	bft_store_ckpt_info(st, &ck);
	if (!ck.loaded)
		fail_msg("checkpoint not used: %s", ck.why);
	assert_true(ck.tail_bytes >= bft_rec_drop_len());
	check_gone(st, V, vblocks, NVB);
	check_others(st, wlive, live0);
	bft_store_stats(st, &ss);
	assert_int_equal(ss.blocks_held, held);
	bft_store_close(st);
}

/* The DROP records in the directory: how many, and the last's segment. */
static unsigned
find_drops(uint32_t vol, uint32_t *last_no)
{
	uint8_t buf[BFT_REC_HDR_LEN + 8];
	struct bft_rec_hdr h;
	unsigned count = 0;

	for (uint32_t no = 1; no < 1000; no++) {
		int fd = open(seg_path(no), O_RDONLY);
		off_t end = file_size(seg_path(no));
		size_t len;

		for (off_t off = 0; fd >= 0 && off < end; off += (off_t)len) {
			assert_int_equal(pread(fd, buf, sizeof buf, off),
			    sizeof buf);
			assert_int_equal(bft_rec_check_hdr(buf, (size_t)(end -
			    off), ident.n, &h), BFT_REC_OK);
			len = BFT_REC_HDR_LEN + h.payload_len +
			    BFT_REC_SUM_LEN;
			if (h.type == BFT_REC_DROP &&
			    h.block == bft_addr(vol, 0)) {
				count++;
				*last_no = no;
			}
		}
		if (fd >= 0)
			close(fd);
	}
	return count;
}

/* Whether segment no holds a HIST record of volume vol. */
static bool
seg_holds(uint32_t no, uint32_t vol)
{
	uint8_t buf[BFT_REC_HDR_LEN];
	struct bft_rec_hdr h;
	int fd = open(seg_path(no), O_RDONLY);
	off_t end = file_size(seg_path(no));
	bool found = false;

	for (off_t off = 0; fd >= 0 && off < end && !found;
	    off += (off_t)(BFT_REC_HDR_LEN + h.payload_len +
	    BFT_REC_SUM_LEN)) {
		assert_int_equal(pread(fd, buf, sizeof buf, off), sizeof buf);
		assert_int_equal(bft_rec_check_hdr(buf, (size_t)(end - off),
		    ident.n, &h), BFT_REC_OK);
		found = h.type == BFT_REC_HIST && bft_addr_vol(h.block) == vol;
	}
	if (fd >= 0)
		close(fd);
	return found;
}

#define SEG	(256 * KIB)

/*
 * Overwrites volume 0's blocks 40..43 rounds times from num first on:
 * garbage that makes compaction run.
 */
static void
churn(struct bft_store *st, unsigned first, unsigned rounds)
{
	for (unsigned r = first; r < first + rounds; r++)
		for (uint64_t k = 40; k < 44; k++)
			write_blk(st, k, r, false);
}

/* Churns from num first on until a new segment starts; the next num. */
static unsigned
churn_to_next_seg(struct bft_store *st, unsigned first)
{
	struct bft_store_stats a, b;

	bft_store_stats(st, &a);
	do {
		churn(st, first++, 1);
		bft_store_stats(st, &b);
	} while (b.segments == a.segments);
	return first;
}

/*
 * Volume V's records lie in segments kept by volume 0's live records
 * beside them; the DROP lands in a segment that churn then empties, so
 * compaction copies the DROP forward and removes its segment.  Replay
 * meets V's old records first and the copy after them: V stays gone,
 * from the whole log, from a checkpoint, and with the removed segment
 * put back (a crash before its unlink), which holds the original too.
 */
static void
test_drop_compaction(void **state)
{
	uint64_t vb[4] = { 0, 6, 12, 18 };
	struct bft_store_stats ss;
	struct bft_store *st;
	uint32_t first_no = 0, no = 0, seg_v = 0;
	struct bft_store_ckpt_info ck;
	uint32_t no2 = 0;
	unsigned num;
	char saved[160];

	(void)state;
	geometry(4, 256);
	st = sopen(SEG);
	for (uint64_t k = 0; k < 24; k++) {
		write_blk(st, k, 1, false);
		if (k % 6 == 0)
			write_blk(st, bft_addr(V, k), 3, false);
	}
	/* A segment of garbage-to-be, which the DROP goes in. */
	num = churn_to_next_seg(st, 1);
	assert_int_equal(bft_store_drop_volume(st, V, NULL), 0);
	assert_int_equal(find_drops(V, &first_no), 1);
	for (uint32_t k = 1; k < first_no; k++)
		if (seg_holds(k, V))
			seg_v = k;
	assert_true(seg_v > 0);
	/* Kept aside, as a crash before its unlink would leave it. */
	snprintf(saved, sizeof saved, "%s/drop-seg", tmp);
	assert_int_equal(link(seg_path(first_no), saved), 0);
	churn(st, num, 60);
	assert_int_equal(bft_store_sync(st), 0);
	bft_store_stats(st, &ss);
	assert_true(ss.compactions > 3);
	assert_true(file_size(seg_path(first_no)) < 0);
	assert_true(seg_holds(seg_v, V));
	assert_int_equal(find_drops(V, &no), 1);
	assert_true(no > first_no);
	check_gone(st, V, vb, 4);
	st = reopen_same(st, SEG);
	check_gone(st, V, vb, 4);
	/* The volume's old records are still there to be replayed. */
	assert_true(file_size(seg_path(seg_v)) > 0 && seg_holds(seg_v, V));
	for (uint64_t k = 0; k < 24; k++)
		check_entry(st, k, 1, 1, 1);
	bft_store_close(st);
	/*
	 * From the checkpoint, which keeps each segment's count of DROPs:
	 * the copy's segment, emptied by more churn, is compacted in turn
	 * and the DROP copied again.
	 */
	st = sopen(SEG);
	bft_store_ckpt_info(st, &ck);
	assert_true(ck.loaded);
	churn(st, num + 60, 60);
	assert_int_equal(bft_store_sync(st), 0);
	assert_int_equal(find_drops(V, &no2), 1);
	assert_true(no2 > no);
	check_gone(st, V, vb, 4);
	bft_store_close(st);
	assert_int_equal(rename(saved, seg_path(first_no)), 0);
	drop_ckpt();
	st = sopen(SEG);
	assert_int_equal(find_drops(V, &no), 2);
	check_gone(st, V, vb, 4);
	bft_store_stats(st, &ss);
	assert_int_equal(ss.records_discarded, 0);
	bft_store_close(st);
}

/*
 * A dropped volume stays dropped: writes after the DROP are refused,
 * from the whole log, from a checkpoint written after it (which must
 * carry the dropped ids: replay from it never meets the DROP), and
 * after compaction moved the DROP record on.  A server that held
 * nothing of the volume appends the DROP all the same, and refuses
 * it too.
 */
static void
test_drop_stays(void **state)
{
	struct bft_store_ckpt_info ck;
	struct bft_store_stats a, b;
	struct bft_store *st;
	uint32_t no = 0, no2 = 0;
	unsigned num;

	(void)state;
	geometry(4, 256);
	st = sopen(SEG);
	for (uint64_t k = 0; k < 24; k++)
		write_blk(st, k, 1, false);
	num = churn_to_next_seg(st, 1);
	write_blk(st, bft_addr(V, 3), 9, false);
	assert_int_equal(bft_store_drop_volume(st, V, NULL), 0);
	check_refused(st, V);
	/* Never written here: dropped all the same, one record. */
	assert_false(bft_store_dropped(st, X));
	bft_store_stats(st, &a);
	assert_int_equal(bft_store_drop_volume(st, X, NULL), 0);
	bft_store_stats(st, &b);
	assert_int_equal(b.bytes_total, a.bytes_total + bft_rec_drop_len());
	check_refused(st, X);
	assert_int_equal(bft_store_drop_volume(st, X, NULL), 0);
	assert_false(bft_store_dropped(st, 11));
	/* From the whole log (reopen_same's second open). */
	st = reopen_same(st, SEG);
	check_refused(st, V);
	check_refused(st, X);
	bft_store_close(st);
	/* From the checkpoint of that close, after the DROPs. */
	st = sopen(SEG);
	bft_store_ckpt_info(st, &ck);
	if (!ck.loaded)
		fail_msg("checkpoint not used: %s", ck.why);
	check_refused(st, V);
	check_refused(st, X);
	/* Compaction moves the DROPs on; they still hold. */
	assert_int_equal(find_drops(V, &no), 1);
	churn(st, num, 120);
	assert_int_equal(bft_store_sync(st), 0);
	bft_store_stats(st, &a);
	assert_true(a.compactions > 3);
	assert_int_equal(find_drops(V, &no2), 1);
	assert_true(no2 > no);
	check_refused(st, V);
	check_gone(st, V, (const uint64_t[]){ 3 }, 1);
	st = reopen_same(st, SEG);
	check_refused(st, V);
	check_refused(st, X);
	bft_store_close(st);
}

/*
 * The record's format: a DROP names its volume in the header's block
 * and in its payload, and both must agree on a volume that may go.
 */
static void
test_drop_record(void **state)
{
	uint8_t rec[64];
	struct bft_rec_hdr h;
	size_t len;

	(void)state;
	len = bft_rec_encode_drop(rec, 4, 77, V);
	assert_int_equal(len, bft_rec_drop_len());
	assert_int_equal(bft_rec_check(rec, len, 4, &h), BFT_REC_OK);
	assert_int_equal(h.type, BFT_REC_DROP);
	assert_true(h.block == bft_addr(V, 0) && h.seq == 77);
	assert_int_equal(bft_rec_decode_drop(rec), V);
	assert_int_equal(bft_rec_meta_len(BFT_REC_DROP, 4),
	    len - BFT_REC_SUM_LEN);
	/* Its payload naming another volume than its header. */
	rec[BFT_REC_HDR_LEN] = W;
	bft_rec_restamp(rec, len, 4, 78);
	assert_int_equal(bft_rec_check(rec, len, 4, &h), BFT_REC_BADSUM);
	/* Volume 0 and the reserved ones, however consistent. */
	len = bft_rec_encode_drop(rec, 4, 79, 0);
	assert_int_equal(bft_rec_check(rec, len, 4, &h), BFT_REC_BADSUM);
	len = bft_rec_encode_drop(rec, 4, 79, BFT_VOL_TABLE);
	assert_int_equal(bft_rec_check(rec, len, 4, &h), BFT_REC_BADSUM);
	len = bft_rec_encode_drop(rec, 4, 79, BFT_VOL_LEASES);
	assert_int_equal(bft_rec_check(rec, len, 4, &h), BFT_REC_BADSUM);
	/* A length other than 8 bytes of payload is no DROP. */
	len = bft_rec_encode_drop(rec, 4, 80, V);
	rec[8] = 9;
	assert_int_equal(bft_rec_check_hdr(rec, len + 1, 4, &h),
	    BFT_REC_BADHDR);
	assert_true(bft_rec_drop_ok(1) && bft_rec_drop_ok(BFT_VOL_TABLE - 1));
	assert_false(bft_rec_drop_ok(0) || bft_rec_drop_ok(BFT_VOL_TABLE) ||
	    bft_rec_drop_ok(BFT_VOL_LEASES) ||
	    bft_rec_drop_ok(BFT_ADDR_MAX_VOL + 1));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drop_record),
		cmocka_unit_test_setup_teardown(test_drop_frees, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_drop_reopen, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_drop_compaction, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_drop_stays, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
