/*
 * The durable store (server/store/) against real files in temporary
 * directories: round trips, the GC rule, replay after close, torn tails
 * and damaged records.  Identity and format checks are in
 * test_store_identity.c, compaction and full disks in
 * test_store_compact.c, crashes and checkpoints in test_store_crash.c;
 * the fixture is store_fixture.h.
 */
#include "crypto.h"
#include "store_fixture.h"

/* Deterministic workload, so a failure reproduces. */
static uint64_t
rnd(void)
{
	static uint64_t x = 88172645463325252ull;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

/* Finds the record for (type, block, ts num) by walking the headers. */
static int
find_rec(unsigned type, uint64_t block, uint64_t num, uint32_t *no,
    off_t *off, size_t *len)
{
	uint8_t buf[BFT_REC_HDR_LEN + 8];
	struct bft_rec_hdr h;

	for (*no = 1; *no < 100; (*no)++) {
		int fd = open(seg_path(*no), O_RDONLY);
		off_t end = file_size(seg_path(*no));

		for (*off = 0; fd >= 0 && *off < end; *off += (off_t)*len) {
			assert_int_equal(pread(fd, buf, sizeof buf, *off),
			    sizeof buf);
			assert_int_equal(bft_rec_check_hdr(buf, (size_t)(end -
			    *off), ident.n, &h), BFT_REC_OK);
			*len = BFT_REC_HDR_LEN + h.payload_len +
			    BFT_REC_SUM_LEN;
			if (h.type == type && h.block == block &&
			    buf[BFT_REC_HDR_LEN] == (uint8_t)num) {
				close(fd);
				return 0;
			}
		}
		if (fd >= 0)
			close(fd);
	}
	return -1;
}

static void
flip(const char *p, off_t off)
{
	int fd = open(p, O_RDWR);
	uint8_t c;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, off), 1);
	c ^= 0x40;
	assert_int_equal(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

static void
test_crc32c(void **state)
{
	static uint8_t buf[4096 + 8];
	uint32_t whole;

	(void)state;
	assert_int_equal(bft_crc32c(0, "123456789", 9), 0xe3069283);
	assert_int_equal(bft_crc32c_sw(0, "123456789", 9), 0xe3069283);
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (uint8_t)rnd();
	if (!bft_crc32c_hw_available())
		print_message("no SSE4.2: hardware CRC32C not compared\n");
	for (size_t len = 0; len < 600; len += 1 + len / 8) {
		for (size_t a = 0; a < 8; a++) {
			uint32_t sw = bft_crc32c_sw(0, buf + a, len);

			assert_int_equal(bft_crc32c(0, buf + a, len), sw);
			if (bft_crc32c_hw_available())
				assert_int_equal(bft_crc32c_hw(0, buf + a, len),
				    sw);
		}
	}
	/* Lengths across the three-way strides (3 x 256, 3 x 8192). */
	if (bft_crc32c_hw_available()) {
		size_t big = 3 * 3 * 8192 + 3 * 256 * 2 + 13;
		uint8_t *b = malloc(big + 8);

		assert_non_null(b);
		for (size_t i = 0; i < big + 8; i++)
			b[i] = (uint8_t)rnd();
		for (size_t len = 700; len <= big; len += 1 + len / 5)
			for (size_t a = 0; a < 8; a += 3)
				assert_int_equal(bft_crc32c_hw(7, b + a, len),
				    bft_crc32c_sw(7, b + a, len));
		assert_int_equal(bft_crc32c_hw(0, b, big),
		    bft_crc32c_sw(0, b, big));
		assert_int_equal(bft_crc32c_hw(0, b, 3 * 8192),
		    bft_crc32c_sw(0, b, 3 * 8192));
		assert_int_equal(bft_crc32c_hw(0, b, 3 * 256),
		    bft_crc32c_sw(0, b, 3 * 256));
		free(b);
	}
	/* Chaining: one buffer in two pieces gives the same sum. */
	whole = bft_crc32c_sw(0, buf, 4096);
	assert_int_equal(bft_crc32c(bft_crc32c(0, buf, 1000), buf + 1000,
	    3096), whole);
	assert_int_equal(bft_crc32c_sw(bft_crc32c_sw(0, buf, 13), buf + 13,
	    4083), whole);
}

static void
roundtrip(unsigned n)
{
	struct bft_store_stats ss;
	struct bft_store *st;
	struct bft_cand c;
	struct bft_ts ts;

	geometry(n, 64);
	st = sopen(0);
	assert_memory_equal(store_lc(st, 3), store_lc(st, 4),
	    sizeof(struct bft_cand));
	assert_true(bft_ts_is_zero(&store_lc(st, 3)->ts));
	assert_int_equal(bft_store_nhist(st, 3), 0);
	assert_int_equal(bft_store_get_lc(st, 64, &c), -ERANGE);
	assert_true(bft_ts_is_zero(&c.ts));
	assert_int_equal(put(st, 64, 1, 1, 0), -ERANGE);
	assert_int_equal(put(st, 0, 1, 1, 0), 0);
	assert_int_equal(put(st, 0, 2, 1, 0), 0);
	assert_int_equal(put(st, 63, 1, 9, 0), 0);
	check_entry(st, 0, 1, 1, 0);
	check_entry(st, 0, 2, 1, 0);
	check_entry(st, 63, 1, 9, 0);
	make_ts(&ts, 1, 2);
	assert_false(store_has_hist(st, 0, &ts));
	/* Same (num, wid) again replaces the entry. */
	assert_int_equal(put(st, 0, 1, 1, 77), 0);
	assert_int_equal(bft_store_nhist(st, 0), 2);
	check_entry(st, 0, 1, 1, 77);
	bft_store_stats(st, &ss);
	assert_int_equal(ss.bytes_live, 3 * bft_rec_hist_len(n, FRAGLEN));
	assert_int_equal(ss.bytes_total, 4 * bft_rec_hist_len(n, FRAGLEN));
	st = reopen_same(st, 0);
	check_entry(st, 0, 1, 1, 77);
	bft_store_stats(st, &ss);
	assert_int_equal(ss.records_replayed, 4);
	assert_int_equal(ss.records_discarded, 0);
	bft_store_close(st);
}

static void
test_roundtrip4(void **state)
{
	(void)state;
	roundtrip(4);
}

static void
test_roundtrip7(void **state)
{
	(void)state;
	roundtrip(7);
}

/* Rows from n on are zero in every copy, as decoding makes them. */
static void
check_rows_zero(const uint8_t *rows, size_t rowlen)
{
	for (size_t i = ident.n * rowlen; i < BFT_MAX_N * rowlen; i++)
		assert_int_equal(rows[i], 0);
}

/* lc whose nonce hashes to the nh of the entry put() would not make. */
static void
put_backing(struct bft_store *st, uint64_t block, struct bft_cand *c)
{
	struct bft_hist_meta m;

	memset(&m, 0, sizeof m);
	m.ts = c->ts;
	bft_hash(c->nonce, BFT_NONCE_LEN, m.nh);
	for (unsigned i = 0; i < ident.n; i++)
		fill(m.cc[i], BFT_HASH_LEN, block, c->ts.num, 0, 40 + i);
	m.frag_len = FRAGLEN;
	assert_int_equal(bft_store_put_hist(st, block, &m, frag), 0);
}

/*
 * The copy-out accessors: what they say of c0, iteration past the one
 * entry a block keeps inline, the pending count, lc_held's
 * validByHist, and copies equal to what went in, before and after
 * replay.
 */
static void
accessors(unsigned n)
{
	struct bft_hist_entry e;
	struct bft_cand c, lc;
	struct bft_store *st;
	struct bft_ts ts;
	unsigned i;

	geometry(n, 8);
	st = sopen(0);
	assert_false(bft_store_lc_held(st, 1));
	assert_int_equal(bft_store_pending(st, 1, 1), 0);
	assert_int_equal(bft_store_nhist(st, 1), 0);
	assert_int_equal(bft_store_hist_at(st, 1, 0, &e), -ENOENT);
	ts = bft_store_lc_ts(st, 8);
	assert_true(bft_ts_is_zero(&ts));
	assert_int_equal(bft_store_pending(st, 8, 1), 0);
	/* Four entries, three of writer 1; one inline, three beside it. */
	assert_int_equal(put(st, 1, 1, 1, 0), 0);
	assert_int_equal(put(st, 1, 2, 1, 0), 0);
	assert_int_equal(put(st, 1, 2, 2, 0), 0);
	assert_int_equal(put(st, 1, 3, 1, 0), 0);
	assert_int_equal(bft_store_nhist(st, 1), 4);
	assert_int_equal(bft_store_pending(st, 1, 1), 3);
	assert_int_equal(bft_store_pending(st, 1, 2), 1);
	for (i = 0; bft_store_hist_at(st, 1, i, &e) == 0; i++) {
		check_entry(st, 1, e.meta.ts.num, e.meta.ts.wid, 0);
		check_rows_zero(&e.meta.vec[0][0], BFT_MAC_LEN);
		check_rows_zero(&e.meta.cc[0][0], BFT_HASH_LEN);
	}
	assert_int_equal(i, 4);
	/* lc (2, 1): (1, 1) goes, (2, 2) and (3, 1) stay pending. */
	assert_int_equal(set_lc(st, 1, 2, 1), 0);
	assert_int_equal(bft_store_nhist(st, 1), 3);
	assert_int_equal(bft_store_pending(st, 1, 1), 1);
	assert_int_equal(bft_store_pending(st, 1, 2), 1);
	/* Hist[lc.ts] is there, but its nh is not H(lc's nonce). */
	assert_false(bft_store_lc_held(st, 1));
	assert_int_equal(set_lc(st, 1, 4, 1), 0);
	assert_int_equal(bft_store_nhist(st, 1), 0);
	assert_int_equal(bft_store_pending(st, 1, 1), 0);

	/* Block 2: lc backed by its entry; block 3: the same but a MAC. */
	memset(&c, 0, sizeof c);
	make_ts(&c.ts, 5, 1);
	fill(c.nonce, BFT_NONCE_LEN, 2, 5, 1, 9);
	for (i = 0; i < n; i++)
		fill(c.vec[i], BFT_MAC_LEN, 2, 5, 1, 10 + i);
	assert_false(bft_store_lc_held(st, 2));
	put_backing(st, 2, &c);
	assert_false(bft_store_lc_held(st, 2));
	assert_int_equal(bft_store_set_lc(st, 2, &c), 0);
	assert_true(bft_store_lc_held(st, 2));
	put_backing(st, 3, &c);
	c.ts.mac[0] ^= 1;
	assert_int_equal(bft_store_set_lc(st, 3, &c), 0);
	assert_false(bft_store_lc_held(st, 3));
	c.ts.mac[0] ^= 1;
	st = reopen_same(st, 0);
	assert_true(bft_store_lc_held(st, 2));
	assert_false(bft_store_lc_held(st, 3));
	assert_int_equal(bft_store_get_lc(st, 2, &lc), 0);
	assert_memory_equal(&lc, &c, sizeof c);
	ts = bft_store_lc_ts(st, 2);
	assert_memory_equal(&ts, &c.ts, sizeof ts);
	assert_int_equal(bft_store_get_hist(st, 2, &c.ts, &e), 0);
	assert_int_equal(bft_store_read_frag(st, &e, got), 0);
	bft_store_close(st);
}

static void
test_accessors4(void **state)
{
	(void)state;
	accessors(4);
}

static void
test_accessors16(void **state)
{
	(void)state;
	accessors(16);
}

static void
test_gc(void **state)
{
	struct bft_store_stats ss;
	struct bft_store *st;
	struct bft_ts ts;

	(void)state;
	st = sopen(0);
	assert_int_equal(put(st, 5, 1, 1, 0), 0);
	assert_int_equal(put(st, 5, 2, 1, 0), 0);
	assert_int_equal(put(st, 5, 2, 2, 0), 0);
	assert_int_equal(put(st, 5, 3, 1, 0), 0);
	assert_int_equal(set_lc(st, 5, 2, 1), 0);
	/* (1,1) went; (2,1) equals lc and stays; (2,2) is newer. */
	assert_int_equal(bft_store_nhist(st, 5), 3);
	make_ts(&ts, 1, 1);
	assert_false(store_has_hist(st, 5, &ts));
	check_entry(st, 5, 2, 1, 0);
	check_entry(st, 5, 2, 2, 0);
	assert_int_equal(bft_store_lc_ts(st, 5).num, 2);
	assert_int_equal(set_lc(st, 5, 2, 1), -EINVAL);
	assert_int_equal(set_lc(st, 5, 1, 9), -EINVAL);
	assert_int_equal(put(st, 5, 1, 9, 0), -ESTALE);
	bft_store_stats(st, &ss);
	assert_int_equal(ss.bytes_live, 3 * bft_rec_hist_len(4, FRAGLEN) +
	    bft_rec_lc_len(4));
	st = reopen_same(st, 0);
	assert_int_equal(set_lc(st, 5, 9, 1), 0);
	assert_int_equal(bft_store_nhist(st, 5), 0);
	bft_store_stats(st, &ss);
	assert_int_equal(ss.bytes_live, bft_rec_lc_len(4));
	st = reopen_same(st, 0);
	bft_store_close(st);
}

static void
workload(struct bft_store *st, unsigned ops)
{
	for (unsigned i = 0; i < ops; i++) {
		uint64_t b = rnd() % ident.nblocks;
		uint64_t num = bft_store_lc_ts(st, b).num + 1 +
		    rnd() % 3;

		assert_int_equal(put(st, b, num, 1 + rnd() % 3, i), 0);
		if (rnd() % 3 == 0)
			assert_int_equal(set_lc(st, b, num, 4), 0);
	}
}

static void
test_reopen(void **state)
{
	struct bft_store_stats ss;
	struct bft_store *st;

	(void)state;
	for (unsigned n = 4; n <= 7; n += 3) {
		geometry(n, 32);
		teardown(NULL);
		setup(NULL);
		geometry(n, 32);
		st = sopen(0);
		workload(st, 150);
		st = reopen_same(st, 0);
		workload(st, 50);
		st = reopen_same(st, 0);
		bft_store_stats(st, &ss);
		assert_int_equal(ss.records_discarded, 0);
		bft_store_close(st);
	}
}

static void
write_file(const char *p, const uint8_t *buf, size_t len)
{
	int fd = open(p, O_WRONLY | O_TRUNC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

/* Cuts the last record at off + cut for each cut; replay must drop it. */
static void
torn(struct bft_store **stp, int is_lc)
{
	struct bft_store_replay rp;
	struct snap *before, *after;
	struct bft_store *st = *stp;
	off_t off, len;
	uint8_t *img;
	int fd;

	before = snap_take(st);
	off = file_size(seg_path(1));
	assert_int_equal(is_lc ? set_lc(st, 1, 50, 1) : put(st, 2, 50, 1, 0),
	    0);
	len = file_size(seg_path(1)) - off;
	bft_store_close(st);
	img = malloc((size_t)(off + len));
	fd = open(seg_path(1), O_RDONLY);
	assert_int_equal(read(fd, img, (size_t)(off + len)), off + len);
	close(fd);
	for (off_t cut = 1; cut < len; cut += is_lc ? 1 : 997) {
		write_file(seg_path(1), img, (size_t)(off + cut));
		st = sopen(0);
		after = snap_take(st);
		snap_check(before, after);
		snap_free(after);
		bft_store_replay_info(st, &rp);
		assert_int_equal(rp.torn_records, 1);
		assert_int_equal(rp.torn_bytes, cut);
		assert_int_equal(rp.corrupt_records, 0);
		assert_int_equal(file_size(seg_path(1)), off);
		bft_store_close(st);
	}
	/* An appended page of zeros (size grew, data lost) is torn too. */
	write_file(seg_path(1), img, (size_t)(off + len));
	fd = open(seg_path(1), O_WRONLY | O_APPEND);
	memset(got, 0, 4096);
	assert_int_equal(write(fd, got, 4096), 4096);
	close(fd);
	st = sopen(0);
	bft_store_replay_info(st, &rp);
	assert_int_equal(rp.torn_bytes, 4096);
	assert_int_equal(file_size(seg_path(1)), off + len);
	if (!is_lc)
		check_entry(st, 2, 50, 1, 0);
	assert_int_equal(bft_store_lc_ts(st, 1).num, is_lc ? 50 : 3);
	snap_free(before);
	free(img);
	*stp = st;
}

static void
test_torn_tail(void **state)
{
	struct bft_store *st;

	(void)state;
	st = sopen(0);
	assert_int_equal(put(st, 1, 3, 1, 0), 0);
	assert_int_equal(set_lc(st, 1, 3, 1), 0);
	assert_int_equal(put(st, 2, 4, 1, 0), 0);
	torn(&st, 0);
	torn(&st, 1);
	/* After the cut, appends go where the torn record was. */
	assert_int_equal(put(st, 3, 1, 1, 0), 0);
	st = reopen_same(st, 0);
	check_entry(st, 3, 1, 1, 0);
	bft_store_close(st);
}

static void
test_corrupt(void **state)
{
	struct bft_store_replay rp;
	struct bft_hist_entry e;
	struct bft_store *st;
	uint32_t no;
	off_t off;
	size_t len;

	(void)state;
	/* Three HIST records per 128 KiB segment: blocks 0-2 in seg 1. */
	st = sopen(128 * KIB);
	for (uint64_t b = 0; b < 12; b++)
		assert_int_equal(put(st, b, 1 + b, 1, 0), 0);
	/* Damage after open: the fragment is never served. */
	assert_int_equal(find_rec(BFT_REC_HIST, 7, 8, &no, &off, &len), 0);
	flip(seg_path(no), off + (off_t)len - 100);
	check_entry(st, 6, 7, 1, 0);
	assert_int_equal(bft_store_hist_at(st, 7, 0, &e), 0);
	assert_int_equal(bft_store_read_frag(st, &e, got), -EIO);
	bft_store_close(st);
	drop_ckpt();
	/* A fragment byte (7), a header byte (4) and the last segment (10). */
	assert_int_equal(find_rec(BFT_REC_HIST, 4, 5, &no, &off, &len), 0);
	flip(seg_path(no), off + 17);
	assert_int_equal(find_rec(BFT_REC_HIST, 10, 11, &no, &off, &len), 0);
	assert_int_equal(no, 4);
	flip(seg_path(no), off + 500);
	st = sopen(128 * KIB);
	bft_store_replay_info(st, &rp);
	assert_int_equal(rp.corrupt_records, 3);
	assert_int_equal(rp.torn_records, 0);
	for (uint64_t b = 0; b < 12; b++) {
		if (b == 4 || b == 7 || b == 10)
			assert_int_equal(bft_store_nhist(st, b), 0);
		else
			check_entry(st, b, 1 + b, 1, 0);
	}
	bft_store_close(st);
	/* A broken magic number hides the rest of its (non-last) segment. */
	assert_int_equal(find_rec(BFT_REC_HIST, 0, 1, &no, &off, &len), 0);
	assert_int_equal(no, 1);
	flip(seg_path(1), off + 1);
	drop_ckpt();
	st = sopen(128 * KIB);
	bft_store_replay_info(st, &rp);
	assert_int_equal(rp.corrupt_records, 4);
	assert_int_equal(rp.corrupt_bytes, 6 * len);
	for (uint64_t b = 0; b < 3; b++)
		assert_int_equal(bft_store_nhist(st, b), 0);
	check_entry(st, 3, 4, 1, 0);
	st = reopen_same(st, 128 * KIB);
	bft_store_close(st);
}

/*
 * Records no live store writes, appended by hand: a block beyond the
 * disk, an lc older than the one before it, a HIST older than lc.
 */
static void
test_crafted_log(void **state)
{
	static uint8_t rec[2 * BFT_MAX_FRAG];
	struct bft_store_stats ss;
	struct bft_hist_entry e;
	struct bft_hist_meta m;
	struct bft_rec_hdr h;
	struct bft_store *st;
	struct bft_cand c;
	size_t len = 0;
	uint32_t no;
	off_t off;
	int fd;

	(void)state;
	st = sopen(0);
	assert_int_equal(put(st, 3, 1, 1, 0), 0);
	bft_store_close(st);
	memset(&c, 0, sizeof c);
	memset(&m, 0, sizeof m);
	make_ts(&c.ts, 7, 1);
	len += bft_rec_encode_lc(rec + len, ident.n, 100, ident.nblocks, &c);
	len += bft_rec_encode_lc(rec + len, ident.n, 101, 2, &c);
	make_ts(&c.ts, 6, 1);
	len += bft_rec_encode_lc(rec + len, ident.n, 102, 2, &c);
	make_ts(&m.ts, 3, 1);
	m.frag_len = 10;
	len += bft_rec_encode_hist(rec + len, ident.n, 103, 2, &m, frag);
	make_ts(&m.ts, 7, 1);
	len += bft_rec_encode_hist(rec + len, ident.n, 104, 2, &m, frag);
	fd = open(seg_path(1), O_WRONLY | O_APPEND);
	assert_int_equal(write(fd, rec, len), (ssize_t)len);
	close(fd);
	drop_ckpt();
	st = sopen(0);
	bft_store_stats(st, &ss);
	assert_int_equal(ss.records_discarded, 1);
	assert_int_equal(ss.records_replayed, 5);
	assert_int_equal(bft_store_lc_ts(st, 2).num, 7);
	assert_int_equal(bft_store_nhist(st, 2), 1);
	assert_int_equal(bft_store_hist_at(st, 2, 0, &e), 0);
	assert_int_equal(bft_store_hist_at(st, 2, 1, &e), -ENOENT);
	assert_int_equal(e.meta.ts.num, 7);
	assert_int_equal(bft_store_read_frag(st, &e, got), 0);
	assert_memory_equal(got, frag, 10);
	check_entry(st, 3, 1, 1, 0);
	/* Sequence numbers go on after the highest one replayed. */
	assert_int_equal(put(st, 4, 1, 1, 0), 0);
	assert_int_equal(put(st, 4, 2, 1, 0), 0);
	bft_store_close(st);
	assert_int_equal(find_rec(BFT_REC_HIST, 4, 2, &no, &off, &len), 0);
	fd = open(seg_path(no), O_RDONLY);
	assert_int_equal(pread(fd, rec, BFT_REC_HDR_LEN, off),
	    BFT_REC_HDR_LEN);
	close(fd);
	assert_int_equal(bft_rec_check_hdr(rec, len, ident.n, &h), BFT_REC_OK);
	assert_int_equal(h.seq, 106);
}

/*
 * The index is paged (1024 blocks a page) and a page exists only once
 * a block in it is written.  Blocks at page edges and far apart on a
 * 64 GiB disk come back from the checkpoint and from the log alike,
 * every other block reads as never written, and the checkpoint holds
 * only the pages written: a few hundred KiB, where the whole index
 * would be 56 MiB.
 */
static void
test_sparse_pages(void **state)
{
	static const uint64_t blocks[] = { 0, 1023, 1024, 500000,
	    (1u << 20) - 1 };
	struct bft_store *st;
	struct stat sb;
	char p[160];

	(void)state;
	geometry(4, 1u << 20);
	st = sopen(0);
	for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
		assert_int_equal(put(st, blocks[i], 1, 1, (unsigned)i), 0);
		assert_int_equal(set_lc(st, blocks[i], 1, 1), 0);
		/* And one pending entry above lc. */
		assert_int_equal(put(st, blocks[i], 2, 1, (unsigned)i), 0);
	}
	st = reopen_same(st, 0);
	for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
		check_entry(st, blocks[i], 1, 1, (unsigned)i);
		check_entry(st, blocks[i], 2, 1, (unsigned)i);
		assert_int_equal(bft_store_nhist(st, blocks[i]), 2);
	}
	assert_int_equal(bft_store_nhist(st, 1025), 0);
	assert_true(bft_ts_is_zero(&store_lc(st, 999999)->ts));
	bft_store_close(st);
	snprintf(p, sizeof p, "%s/index.ckpt", dir);
	assert_int_equal(stat(p, &sb), 0);
	assert_true(sb.st_size < 4 * 1024 * 56 + 65536);
}

/* The live bytes the store reports for vol, or 0 when it lists none. */
static uint64_t
vol_live(struct bft_store *st, uint32_t vol)
{
	struct bft_store_vol v[8];
	size_t k = bft_store_volumes(st, vol, v, 8);

	return k > 0 && v[0].vol == vol ? v[0].live : 0;
}

/*
 * Each volume's live bytes follow its index entries: a completed write
 * is one lc and one Hist record, an overwrite replaces both, a pending
 * STORE adds one, and the zero value's record is smaller.  Volumes do
 * not share bytes, and both reopen paths (checkpoint, whole log) give
 * the same sums.
 */
static void
test_volume_live(void **state)
{
	uint64_t a = bft_addr(5, 3), b = bft_addr(5, 70000), w, p;
	struct bft_hist_meta m;
	struct bft_store *st;

	(void)state;
	st = sopen(0);
	assert_int_equal(vol_live(st, 5), 0);
	assert_int_equal(put(st, a, 1, 1, 0), 0);
	assert_int_equal(set_lc(st, a, 1, 1), 0);
	w = vol_live(st, 5);
	assert_true(w > FRAGLEN);
	assert_int_equal(vol_live(st, 0), 0);
	assert_int_equal(put(st, b, 1, 1, 0), 0);
	assert_int_equal(set_lc(st, b, 1, 1), 0);
	assert_int_equal(vol_live(st, 5), 2 * w);
	assert_int_equal(put(st, a, 2, 1, 1), 0);
	p = vol_live(st, 5) - 2 * w;
	assert_true(p > FRAGLEN && p < w);
	assert_int_equal(set_lc(st, a, 2, 1), 0);
	assert_int_equal(vol_live(st, 5), 2 * w);
	assert_int_equal(put(st, 7, 1, 1, 0), 0);
	assert_int_equal(set_lc(st, 7, 1, 1), 0);
	assert_int_equal(vol_live(st, 0), w);
	/* b trimmed: the zero value's record holds no fragment. */
	make_meta(&m, b, 2, 1, 0);
	m.frag_len = 0;
	assert_int_equal(bft_store_put_hist(st, b, &m, NULL), 0);
	assert_int_equal(set_lc(st, b, 2, 1), 0);
	assert_int_equal(vol_live(st, 5), 2 * w - FRAGLEN);
	/* From the whole log (reopen_same's last open), then a checkpoint. */
	st = reopen_same(st, 0);
	assert_int_equal(vol_live(st, 5), 2 * w - FRAGLEN);
	assert_int_equal(vol_live(st, 0), w);
	bft_store_close(st);
	st = sopen(0);
	assert_int_equal(vol_live(st, 5), 2 * w - FRAGLEN);
	assert_int_equal(vol_live(st, 0), w);
	bft_store_close(st);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c),
		cmocka_unit_test_setup_teardown(test_roundtrip4, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_roundtrip7, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_accessors4, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_accessors16, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_gc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_tail, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_corrupt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_volume_live, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_sparse_pages, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_crafted_log, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
