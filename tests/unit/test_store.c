/*
 * The durable store (server/store*.c) against real files in temporary
 * directories: round trips, the GC rule, replay after close, torn tails,
 * damaged records, identity checks, compaction and its crash safety, and
 * full disks (a 1 MiB tmpfs and RLIMIT_FSIZE).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../server/store.h"
#include "../../server/store_log.h"

#define FRAGLEN	32848u
#define KIB	1024u

static char tmp[64], dir[96];
static struct bft_store_identity ident;
static uint8_t frag[BFT_MAX_FRAG], got[BFT_MAX_FRAG];

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

static int
rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb, (void)flag, (void)f;
	return remove(p);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof tmp, "/tmp/test_store.XXXXXX");
	assert_non_null(mkdtemp(tmp));
	snprintf(dir, sizeof dir, "%s/data", tmp);
	memset(&ident, 0, sizeof ident);
	for (unsigned i = 0; i < BFT_CLUSTER_ID_LEN; i++)
		ident.cluster_id[i] = (uint8_t)(0xc0 + i);
	ident.server_index = 2;
	ident.n = 4;
	ident.t = 1;
	ident.block_size = BFT_BLOCK_SIZE;
	ident.nblocks = 64;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	umount2(dir, MNT_DETACH);
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static void
geometry(unsigned n, uint64_t nblocks)
{
	ident.n = n;
	ident.t = (n - 1) / 3;
	ident.nblocks = nblocks;
}

static struct bft_store *
sopen(uint64_t seg_size)
{
	struct bft_store_opts o = { .segment_size = seg_size };
	char err[512] = "";
	struct bft_store *st;

	st = bft_store_open_opts(dir, &ident, &o, err, sizeof err);
	if (st == NULL)
		fail_msg("bft_store_open: %s", err);
	return st;
}

/* Recognizable bytes: a fragment names its block and timestamp. */
static void
fill(uint8_t *buf, uint32_t len, uint64_t block, uint64_t num, uint64_t wid,
    unsigned salt)
{
	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(block * 131 + num * 31 + wid * 7 + salt +
		    i * 13 + (i >> 8));
}

static void
make_ts(struct bft_ts *ts, uint64_t num, uint64_t wid)
{
	ts->num = num;
	ts->wid = wid;
	fill(ts->mac, BFT_MAC_LEN, 0, num, wid, 1);
}

static int
put(struct bft_store *st, uint64_t block, uint64_t num, uint64_t wid,
    unsigned salt)
{
	struct bft_hist_meta m;

	memset(&m, 0, sizeof m);
	make_ts(&m.ts, num, wid);
	fill(m.nh, BFT_HASH_LEN, block, num, wid, 2 + salt);
	for (unsigned i = 0; i < ident.n; i++) {
		fill(m.vec[i], BFT_MAC_LEN, block, num, wid, 3 + i);
		fill(m.cc[i], BFT_HASH_LEN, block, num, wid, 40 + i);
	}
	m.frag_len = FRAGLEN;
	fill(frag, FRAGLEN, block, num, wid, salt);
	return bft_store_put_hist(st, block, &m, frag);
}

static int
set_lc(struct bft_store *st, uint64_t block, uint64_t num, uint64_t wid)
{
	struct bft_cand c;

	memset(&c, 0, sizeof c);
	make_ts(&c.ts, num, wid);
	fill(c.nonce, BFT_NONCE_LEN, block, num, wid, 5);
	for (unsigned i = 0; i < ident.n; i++)
		fill(c.vec[i], BFT_MAC_LEN, block, num, wid, 6 + i);
	return bft_store_set_lc(st, block, &c);
}

/* Checks that Hist[(num, wid)] of block holds what put() stored. */
static void
check_entry(struct bft_store *st, uint64_t block, uint64_t num, uint64_t wid,
    unsigned salt)
{
	const struct bft_hist_entry *e;
	uint8_t want[BFT_HASH_LEN];
	struct bft_ts ts;

	make_ts(&ts, num, wid);
	e = bft_store_hist(st, block, &ts);
	assert_non_null(e);
	assert_int_equal(e->meta.frag_len, FRAGLEN);
	fill(want, BFT_HASH_LEN, block, num, wid, 2 + salt);
	assert_memory_equal(e->meta.nh, want, BFT_HASH_LEN);
	assert_memory_equal(e->meta.ts.mac, ts.mac, BFT_MAC_LEN);
	fill(want, BFT_HASH_LEN, block, num, wid, 40 + ident.n - 1);
	assert_memory_equal(e->meta.cc[ident.n - 1], want, BFT_HASH_LEN);
	assert_int_equal(bft_store_read_frag(st, e, got), 0);
	fill(frag, FRAGLEN, block, num, wid, salt);
	assert_memory_equal(got, frag, FRAGLEN);
}

/* A copy of the whole visible state, fragments included. */
struct snap_ent {
	struct bft_hist_meta m;
	uint8_t *frag;
};
struct snap {
	struct bft_cand lc;
	unsigned nhist;
	struct snap_ent *e;
};

static int
ent_cmp(const void *a, const void *b)
{
	return bft_ts_cmp(&((const struct snap_ent *)a)->m.ts,
	    &((const struct snap_ent *)b)->m.ts);
}

static struct snap *
snap_take(struct bft_store *st)
{
	struct snap *s = calloc(ident.nblocks, sizeof *s);

	assert_non_null(s);
	for (uint64_t b = 0; b < ident.nblocks; b++) {
		const struct bft_block_state *bs = bft_store_block(st, b);

		assert_non_null(bs);
		s[b].lc = bs->lc;
		s[b].nhist = bs->nhist;
		s[b].e = calloc(bs->nhist + 1, sizeof *s[b].e);
		assert_non_null(s[b].e);
		for (unsigned i = 0; i < bs->nhist; i++) {
			s[b].e[i].m = bs->hist[i].meta;
			s[b].e[i].frag = malloc(bs->hist[i].meta.frag_len + 1);
			assert_int_equal(bft_store_read_frag(st, &bs->hist[i],
			    s[b].e[i].frag), 0);
		}
		qsort(s[b].e, bs->nhist, sizeof *s[b].e, ent_cmp);
	}
	return s;
}

static void
snap_free(struct snap *s)
{
	for (uint64_t b = 0; b < ident.nblocks; b++) {
		for (unsigned i = 0; i < s[b].nhist; i++)
			free(s[b].e[i].frag);
		free(s[b].e);
	}
	free(s);
}

static void
snap_check(const struct snap *a, const struct snap *b)
{
	for (uint64_t k = 0; k < ident.nblocks; k++) {
		assert_memory_equal(&a[k].lc, &b[k].lc, sizeof a[k].lc);
		assert_int_equal(a[k].nhist, b[k].nhist);
		for (unsigned i = 0; i < a[k].nhist; i++) {
			const struct bft_hist_meta *x = &a[k].e[i].m;
			const struct bft_hist_meta *y = &b[k].e[i].m;

			assert_memory_equal(&x->ts, &y->ts, sizeof x->ts);
			assert_memory_equal(x->nh, y->nh, sizeof x->nh);
			assert_memory_equal(x->vec, y->vec, sizeof x->vec);
			assert_memory_equal(x->cc, y->cc, sizeof x->cc);
			assert_int_equal(x->frag_len, y->frag_len);
			assert_memory_equal(a[k].e[i].frag, b[k].e[i].frag,
			    x->frag_len);
		}
	}
}

/* Closes st, reopens, and checks that replay restores the same state. */
static struct bft_store *
reopen_same(struct bft_store *st, uint64_t seg_size)
{
	struct snap *a = snap_take(st), *b;

	bft_store_close(st);
	st = sopen(seg_size);
	b = snap_take(st);
	snap_check(a, b);
	snap_free(a);
	snap_free(b);
	return st;
}

static char *
seg_path(uint32_t no)
{
	static char p[160];
	char name[BFT_SEG_NAME_MAX];

	bft_seg_name(name, no);
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return p;
}

static off_t
file_size(const char *p)
{
	struct stat sb;

	return stat(p, &sb) == 0 ? sb.st_size : -1;
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
copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out;
	ssize_t r;

	assert_true(in >= 0);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(out >= 0);
	while ((r = read(in, got, sizeof got)) > 0)
		assert_int_equal(write(out, got, (size_t)r), r);
	assert_int_equal(r, 0);
	close(in);
	close(out);
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
	struct bft_ts ts;

	geometry(n, 64);
	st = sopen(0);
	assert_ptr_equal(bft_store_block(st, 3), bft_store_block(st, 4));
	assert_true(bft_ts_is_zero(&bft_store_block(st, 3)->lc.ts));
	assert_int_equal(bft_store_block(st, 3)->nhist, 0);
	assert_null(bft_store_block(st, 64));
	assert_int_equal(put(st, 64, 1, 1, 0), -ERANGE);
	assert_int_equal(put(st, 0, 1, 1, 0), 0);
	assert_int_equal(put(st, 0, 2, 1, 0), 0);
	assert_int_equal(put(st, 63, 1, 9, 0), 0);
	check_entry(st, 0, 1, 1, 0);
	check_entry(st, 0, 2, 1, 0);
	check_entry(st, 63, 1, 9, 0);
	make_ts(&ts, 1, 2);
	assert_null(bft_store_hist(st, 0, &ts));
	/* Same (num, wid) again replaces the entry. */
	assert_int_equal(put(st, 0, 1, 1, 77), 0);
	assert_int_equal(bft_store_block(st, 0)->nhist, 2);
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
	assert_int_equal(bft_store_block(st, 5)->nhist, 3);
	make_ts(&ts, 1, 1);
	assert_null(bft_store_hist(st, 5, &ts));
	check_entry(st, 5, 2, 1, 0);
	check_entry(st, 5, 2, 2, 0);
	assert_int_equal(bft_store_block(st, 5)->lc.ts.num, 2);
	assert_int_equal(set_lc(st, 5, 2, 1), -EINVAL);
	assert_int_equal(set_lc(st, 5, 1, 9), -EINVAL);
	assert_int_equal(put(st, 5, 1, 9, 0), -ESTALE);
	bft_store_stats(st, &ss);
	assert_int_equal(ss.bytes_live, 3 * bft_rec_hist_len(4, FRAGLEN) +
	    bft_rec_lc_len(4));
	st = reopen_same(st, 0);
	assert_int_equal(set_lc(st, 5, 9, 1), 0);
	assert_int_equal(bft_store_block(st, 5)->nhist, 0);
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
		uint64_t num = bft_store_block(st, b)->lc.ts.num + 1 +
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
	assert_int_equal(bft_store_block(st, 1)->lc.ts.num, is_lc ? 50 : 3);
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
	assert_int_equal(bft_store_read_frag(st, bft_store_block(st, 7)->hist,
	    got), -EIO);
	bft_store_close(st);
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
			assert_int_equal(bft_store_block(st, b)->nhist, 0);
		else
			check_entry(st, b, 1 + b, 1, 0);
	}
	bft_store_close(st);
	/* A broken magic number hides the rest of its (non-last) segment. */
	assert_int_equal(find_rec(BFT_REC_HIST, 0, 1, &no, &off, &len), 0);
	assert_int_equal(no, 1);
	flip(seg_path(1), off + 1);
	st = sopen(128 * KIB);
	bft_store_replay_info(st, &rp);
	assert_int_equal(rp.corrupt_records, 4);
	assert_int_equal(rp.corrupt_bytes, 6 * len);
	for (uint64_t b = 0; b < 3; b++)
		assert_int_equal(bft_store_block(st, b)->nhist, 0);
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
	st = sopen(0);
	bft_store_stats(st, &ss);
	assert_int_equal(ss.records_discarded, 1);
	assert_int_equal(ss.records_replayed, 5);
	assert_int_equal(bft_store_block(st, 2)->lc.ts.num, 7);
	assert_int_equal(bft_store_block(st, 2)->nhist, 1);
	assert_int_equal(bft_store_block(st, 2)->hist[0].meta.ts.num, 7);
	assert_int_equal(bft_store_read_frag(st, bft_store_block(st, 2)->hist,
	    got), 0);
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

static void
refused(const char *what)
{
	char err[512] = "";

	assert_null(bft_store_open(dir, &ident, err, sizeof err));
	if (strstr(err, what) == NULL)
		fail_msg("error \"%s\" does not mention \"%s\"", err, what);
}

static void
test_identity(void **state)
{
	struct bft_store_identity good;
	struct bft_store *st;
	char p[160];
	int fd;

	(void)state;
	st = sopen(0);
	assert_int_equal(put(st, 1, 1, 1, 0), 0);
	refused("in use");
	bft_store_close(st);
	good = ident;
	ident.cluster_id[5] ^= 1;
	refused("belongs to cluster c0c1c2c3c4c5c6c7");
	ident = good;
	ident.server_index = 3;
	refused("server index 2, config says 3");
	ident = good;
	ident.n = 7;
	refused("n = 4 servers, config says n = 7");
	ident = good;
	ident.t = 0;
	refused("t = 1, config says t = 0");
	ident = good;
	ident.block_size = 4096;
	refused("block size 65536 vs 4096");
	ident = good;
	ident.nblocks = 65;
	refused("holds 64 blocks, config says 65");
	ident = good;
	ident.n = 0;
	refused("bad geometry");
	ident = good;
	snprintf(p, sizeof p, "%s/identity", dir);
	fd = open(p, O_WRONLY | O_APPEND);
	assert_int_equal(write(fd, "colour = blue\n", 14), 14);
	close(fd);
	refused("unknown field");
	assert_int_equal(unlink(p), 0);
	refused("no identity file");
	/* Without segments a lost identity is simply written afresh. */
	assert_int_equal(unlink(seg_path(1)), 0);
	st = sopen(0);
	bft_store_close(st);
	st = sopen(0);
	bft_store_close(st);
}

/* Keeps a copy in tmp of every segment that is no longer active. */
static void
save_segments(uint32_t *saved)
{
	char to[160];

	for (;;) {
		uint32_t hi = 0;

		for (uint32_t k = *saved + 2; k < *saved + 10; k++)
			if (file_size(seg_path(k)) >= 0)
				hi = k;
		if (hi == 0)
			return;
		++*saved;
		snprintf(to, sizeof to, "%s/%u", tmp, *saved);
		if (file_size(seg_path(*saved)) >= 0)
			copy_file(seg_path(*saved), to);
	}
}

/*
 * Many overwrites through 256 KiB segments: disk use stays bounded,
 * and copies of every removed segment put back (a crash before each
 * unlink) replay to the same state.
 */
static void
compaction(unsigned n)
{
	const uint64_t seg = 256 * KIB;
	struct bft_store_stats ss;
	struct snap *a, *b;
	struct bft_store *st;
	uint32_t saved = 0, restored = 0;
	char from[160];

	teardown(NULL);
	setup(NULL);
	geometry(n, 8);
	st = sopen(seg);
	for (unsigned r = 1; r <= 150; r++) {
		for (uint64_t k = 0; k < 8; k++) {
			assert_int_equal(put(st, k, r, 1, r), 0);
			save_segments(&saved);
			/* Block 7 keeps two entries above lc. */
			if (k != 7 || r % 3 == 0)
				assert_int_equal(set_lc(st, k, r, 1), 0);
			save_segments(&saved);
		}
		bft_store_stats(st, &ss);
		/*
		 * Live data at most half of a compacted segment, plus the
		 * active one, plus what waits for a sync to be unlinked.
		 */
		if (r > 4 && ss.bytes_total > 3 * ss.bytes_live +
		    (2 + 2 * BFT_STORE_MAX_RETIRED) * seg)
			fail_msg("round %u: %llu bytes on disk for %llu live",
			    r, (unsigned long long)ss.bytes_total,
			    (unsigned long long)ss.bytes_live);
	}
	print_message("n=%u: %llu bytes on disk for %llu live, %llu "
	    "compactions, %u segments made\n", n,
	    (unsigned long long)ss.bytes_total,
	    (unsigned long long)ss.bytes_live,
	    (unsigned long long)ss.compactions, saved);
	assert_true(ss.compactions > 10);
	st = reopen_same(st, seg);
	a = snap_take(st);
	bft_store_close(st);
	for (uint32_t k = 1; k <= saved; k++) {
		snprintf(from, sizeof from, "%s/%u", tmp, k);
		if (file_size(seg_path(k)) < 0 && file_size(from) >= 0) {
			copy_file(from, seg_path(k));
			restored++;
		}
	}
	assert_true(restored > 10);
	st = sopen(seg);
	b = snap_take(st);
	snap_check(a, b);
	bft_store_stats(st, &ss);
	assert_true(ss.segments > restored);
	assert_int_equal(ss.records_discarded, 0);
	/* The restored garbage gets compacted away again. */
	for (unsigned r = 151; r <= 200; r++)
		for (uint64_t k = 0; k < 8; k++)
			assert_int_equal(put(st, k, r, 1, r), 0);
	bft_store_stats(st, &ss);
	assert_true(ss.bytes_total <= 3 * ss.bytes_live + 2 * seg);
	st = reopen_same(st, seg);
	check_entry(st, 7, 200, 1, 200);
	bft_store_close(st);
	snap_free(a);
	snap_free(b);
}

static void
test_compaction4(void **state)
{
	(void)state;
	compaction(4);
}

static void
test_compaction7(void **state)
{
	(void)state;
	compaction(7);
}

/* Fills a 1 MiB tmpfs; a failed append must leave no trace. */
static void
test_enospc(void **state)
{
	struct snap *before, *after;
	struct bft_store_stats s0, s1;
	struct bft_store *st;
	char filler[160];
	off_t size;
	int fd, err = 0;
	unsigned i;

	(void)state;
	mkdir(dir, 0755);
	if (mount("tmpfs", dir, "tmpfs", 0, "size=1m") < 0) {
		print_message("cannot mount a tmpfs (%s): skipped\n",
		    strerror(errno));
		skip();
	}
	snprintf(filler, sizeof filler, "%s/filler", dir);
	fd = open(filler, O_WRONLY | O_CREAT, 0644);
	for (i = 0; i < 5; i++)
		assert_int_equal(write(fd, frag, 40 * KIB), 40 * KIB);
	close(fd);
	st = sopen(0);
	for (i = 0; i < 100; i++) {
		before = snap_take(st);
		bft_store_stats(st, &s0);
		size = file_size(seg_path(1));
		if ((err = put(st, i % 8, 1 + i / 8, 1, i)) < 0 ||
		    (err = set_lc(st, i % 8, 1 + i / 8, 1)) < 0)
			break;
		snap_free(before);
	}
	assert_int_equal(err, -ENOSPC);
	after = snap_take(st);
	bft_store_stats(st, &s1);
	/* The put may have succeeded and the set_lc failed: compare that. */
	if (s1.bytes_total != s0.bytes_total) {
		snap_free(before);
		before = snap_take(st);
		size = file_size(seg_path(1));
		assert_int_equal(set_lc(st, i % 8, 1 + i / 8, 1), -ENOSPC);
		snap_free(after);
		after = snap_take(st);
		bft_store_stats(st, &s1);
	}
	snap_check(before, after);
	assert_int_equal(file_size(seg_path(1)), size);
	assert_int_equal(s1.bytes_total, (uint64_t)size);
	assert_int_equal(unlink(filler), 0);
	assert_int_equal(put(st, 7, 1000, 1, 0), 0);
	st = reopen_same(st, 0);
	check_entry(st, 7, 1000, 1, 0);
	bft_store_close(st);
	snap_free(before);
	snap_free(after);
}

/* RLIMIT_FSIZE makes writes past the limit fail with EFBIG. */
static void
test_efbig(void **state)
{
	struct snap *before, *after;
	struct rlimit old, rl;
	struct bft_store *st;
	off_t size;

	(void)state;
	st = sopen(0);
	assert_int_equal(put(st, 1, 1, 1, 0), 0);
	before = snap_take(st);
	size = file_size(seg_path(1));
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	rl = old;
	rl.rlim_cur = (rlim_t)size + 1000;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
	assert_int_equal(put(st, 2, 1, 1, 0), -EFBIG);
	assert_int_equal(file_size(seg_path(1)), size);
	rl.rlim_cur = (rlim_t)size + 10;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
	assert_int_equal(set_lc(st, 1, 1, 1), -EFBIG);
	assert_int_equal(file_size(seg_path(1)), size);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	after = snap_take(st);
	snap_check(before, after);
	assert_int_equal(put(st, 2, 1, 1, 0), 0);
	assert_int_equal(set_lc(st, 1, 1, 1), 0);
	st = reopen_same(st, 0);
	check_entry(st, 2, 1, 1, 0);
	bft_store_close(st);
	snap_free(before);
	snap_free(after);
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
		cmocka_unit_test_setup_teardown(test_gc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_tail, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_corrupt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crafted_log, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_identity, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_compaction4, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_compaction7, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_enospc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_efbig, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
