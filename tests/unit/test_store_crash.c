/*
 * The index checkpoint under crashes.  A child process runs a store
 * with small segments (so compaction never stops) and a checkpoint
 * after every few records (so one is nearly always being written, in
 * its thread), overwriting blocks and completing most writes; the
 * parent SIGKILLs it at a random moment.  Then the data directory is
 * opened twice: as a restart would (the checkpoint and the log after
 * it) and with the checkpoint removed (the whole log, which is the
 * truth by construction).  The two states must be the same, fragments
 * included, and so must the live bytes compaction relies on.
 *
 * Some writes go to volumes 1 to 3 instead, which are dropped now and
 * then and written again after (store_drop.c): both restarts must hold
 * the same volumes with the same live bytes.
 *
 * Volume 0 has snapshots (store_snap.c): writes carry a generation
 * that moves on now and then, boundaries are added at the current one
 * and removed, and readers write back into frozen views.  Both
 * restarts must show the same views, fragments included.
 *
 * The index keeps validByHist(lc, Hist[lc.ts]) as a flag instead of
 * reading both records; half the writes here store H(N) of the nonce
 * their COMPLETE reveals, and both restarts must agree with the flag
 * recomputed from the records, block by block.
 *
 * Also: a checkpoint damaged in any way (a flipped byte, cut short, a
 * segment it names gone or replaced) is never used, and the whole log
 * gives the state instead.
 */
#include <sys/wait.h>
#include <time.h>

#include "crypto.h"
#include "predicates.h"
#include "store_fixture.h"

#define NBLK	512u
#define SEG	(256 * KIB)
#define ROUNDS	24

static struct bft_store *
open_ckpt(uint64_t every)
{
	struct bft_store_opts o = { .segment_size = SEG, .compact_pct = 80,
	    .checkpoint_bytes = every };
	char err[512] = "";
	struct bft_store *st = bft_store_open_opts(dir, &ident, &o, err,
	    sizeof err);

	if (st == NULL)
		fail_msg("open: %s", err);
	return st;
}

static bool
exists(const char *name)
{
	char p[160];

	snprintf(p, sizeof p, "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

/* put(), with H(N) of the nonce set_lc() will reveal: lc backed by it. */
static int
put_backed(struct bft_store *st, uint64_t block, uint64_t num, uint64_t wid,
    unsigned salt)
{
	struct bft_hist_meta m;
	uint8_t nonce[BFT_NONCE_LEN];

	make_meta(&m, block, num, wid, salt);
	/* set_lc()'s nonce, as the fixture makes it. */
	fill(nonce, BFT_NONCE_LEN, block, num, wid, 5);
	bft_hash(nonce, BFT_NONCE_LEN, m.nh);
	return bft_store_put_hist(st, block, &m, frag);
}

/* The index's HELD flag against validByHist from the records; held count. */
static unsigned
check_held(struct bft_store *st)
{
	struct bft_hist_entry e;
	struct bft_cand c;
	unsigned held = 0;

	for (uint64_t b = 0; b < ident.nblocks; b++) {
		bool want;

		assert_int_equal(bft_store_get_lc(st, b, &c), 0);
		want = !bft_ts_is_zero(&c.ts) &&
		    bft_store_get_hist(st, b, &c.ts, &e) == 0 &&
		    bft_valid_by_hist(&c, &e.meta);
		if (want != bft_store_lc_held(st, b))
			fail_msg("block %llu: HELD %d, validByHist %d",
			    (unsigned long long)b, !want, want);
		held += want;
	}
	return held;
}

/*
 * Volume 0's next generation: a boundary at the one ending, now and
 * then, and one of six removed.
 */
static void
next_gen(struct bft_store *st, uint64_t *gen, uint64_t x)
{
	uint64_t gens[BFT_STORE_MAX_SNAPS];
	size_t n = bft_store_snaps(st, 0, gens, BFT_STORE_MAX_SNAPS);

	if (n >= 6 && bft_store_snap_remove(st, 0, gens[(x >> 9) % n]) < 0)
		_exit(5);
	if ((x >> 5) % 2 && bft_store_snap_add(st, 0, *gen) < 0)
		_exit(6);
	(*gen)++;
}

/* A reader's write-back into a frozen view of b, from its entries. */
static void
write_back(struct bft_store *st, uint64_t b, uint64_t x)
{
	uint64_t gens[BFT_STORE_MAX_SNAPS], g;
	size_t n = bft_store_snaps(st, 0, gens, BFT_STORE_MAX_SNAPS);
	struct bft_hist_entry e;
	struct bft_cand c;
	unsigned nh;
	int err;

	if (n == 0 || (nh = bft_store_view_nhist(st, b, g = gens[x % n])) == 0
	    || bft_store_view_hist_at(st, b, g, (unsigned)(x >> 7) % nh, &e) <
	    0)
		return;
	memset(&c, 0, sizeof c);
	c.ts = e.meta.ts;
	fill(c.nonce, BFT_NONCE_LEN, b, c.ts.num, c.ts.wid, 5);
	err = bft_store_view_set_lc(st, b, g, &c);
	if (err < 0 && err != -EINVAL)
		_exit(7);
}

/* The child's endless workload: never returns. */
static void
workload(unsigned seed)
{
	struct bft_store *st = open_ckpt(3 * FRAGLEN);
	uint64_t x = seed * 2654435761u + 1, gen = 1 + (uint64_t)seed * 1000;

	for (uint64_t k = 1;; k++) {
		uint64_t b, num;
		int err;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b = x % NBLK;
		if (x % 61 == 0)
			next_gen(st, &gen, x >> 3);
		if (x % 89 == 0)
			write_back(st, b, x >> 3);
		num = bft_gen_floor(gen) + k;
		if (x % 97 == 0 && bft_store_drop_volume(st, 1 + (uint32_t)(x >>
		    12) % 3, NULL) < 0)
			_exit(4);
		if (x % 7 == 0)
			b = bft_addr(1 + (uint32_t)(x >> 8) % 3, b);
		/* A dropped volume refuses writes: -EIDRM is no failure. */
		err = (x >> 20) % 2 ? put_backed(st, b, num, 1 + x % 3,
		    (unsigned)(x >> 40) & 0xff) : put(st, b, num, 1 + x % 3,
		    (unsigned)(x >> 40) & 0xff);
		if (err < 0 && err != -EIDRM)
			_exit(2);
		/* Most writes complete; the rest stay in the side table. */
		if (err == 0 && x % 5 != 0 && set_lc(st, b, num, 1 + x % 3) < 0)
			_exit(3);
	}
}

static unsigned last_held;	/* blocks whose lc Hist backs, last check */
static size_t last_snaps;	/* volume 0's boundaries, last check */

static uint64_t
fnv(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/*
 * Volume 0's views at every boundary: lc and entries of every block,
 * the fragments of every eighth, as one hash.
 */
static uint64_t
views_hash(struct bft_store *st)
{
	uint64_t gens[BFT_STORE_MAX_SNAPS], h = 1469598103934665603ull;
	size_t n = bft_store_snaps(st, 0, gens, BFT_STORE_MAX_SNAPS);
	struct bft_hist_entry e, r;
	struct bft_cand c;

	h = fnv(h, gens, n * sizeof gens[0]);
	last_snaps = n;
	for (size_t g = 0; g < n; g++) {
		for (uint64_t b = 0; b < NBLK; b++) {
			unsigned nh = bft_store_view_nhist(st, b, gens[g]);
			uint64_t sum = 0;

			assert_int_equal(bft_store_view_lc(st, b, gens[g], &c),
			    0);
			h = fnv(h, &c, sizeof c);
			for (unsigned i = 0; i < nh; i++) {
				assert_int_equal(bft_store_view_hist_at(st, b,
				    gens[g], i, &e), 0);
				sum += fnv(1, &e.meta, sizeof e.meta);
				if (b % 8 != 0)
					continue;
				assert_int_equal(bft_store_view_read_hist(st, b,
				    gens[g], &e.meta.ts, &r, got), 0);
				sum += fnv(2, got, r.meta.frag_len);
			}
			h = fnv(h, &sum, sizeof sum);
		}
	}
	return h;
}

/* The volumes two stores hold are the same, with the same live bytes. */
static void
same_volumes(const struct bft_store_vol *a, size_t na,
    const struct bft_store_vol *b, size_t nb)
{
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		assert_int_equal(a[i].vol, b[i].vol);
		assert_int_equal(a[i].end, b[i].end);
		assert_int_equal(a[i].live, b[i].live);
	}
}

/* Restart as the server would, then from the whole log: the same? */
static bool
compare_paths(void)
{
	struct bft_store_vol v1[8], v2[8];
	struct bft_store_stats s1, s2;
	struct bft_store_ckpt_info ck;
	struct bft_store *st;
	struct snap *a, *b;
	size_t n1, n2;
	uint64_t views;
	unsigned held;

	st = open_ckpt(0);
	bft_store_ckpt_info(st, &ck);
	if (!ck.loaded)
		print_message("not from a checkpoint: %s\n", ck.why);
	a = snap_take(st);
	views = views_hash(st);
	held = check_held(st);
	bft_store_stats(st, &s1);
	n1 = bft_store_volumes(st, 0, v1, 8);
	/* Closing writes a checkpoint of its own; the crash's is gone then. */
	bft_store_close(st);
	drop_ckpt();
	st = open_ckpt(0);
	b = snap_take(st);
	assert_int_equal(views_hash(st), views);
	assert_int_equal(check_held(st), held);
	last_held = held;
	bft_store_stats(st, &s2);
	n2 = bft_store_volumes(st, 0, v2, 8);
	same_volumes(v1, n1, v2, n2);
	snap_check(a, b);
	assert_int_equal(s1.bytes_live, s2.bytes_live);
	assert_int_equal(s1.blocks_held, s2.blocks_held);
	bft_store_close(st);
	snap_free(a);
	snap_free(b);
	return ck.loaded;
}

static void
test_kill_anywhere(void **state)
{
	unsigned mid_write = 0, loaded = 0;

	(void)state;
	geometry(4, NBLK);
	srand((unsigned)time(NULL));
	for (unsigned r = 0; r < ROUNDS; r++) {
		pid_t pid = fork();
		int status;

		assert_true(pid >= 0);
		if (pid == 0)
			workload(r);
		/* 20-120 ms: well past the first checkpoints. */
		usleep(20000 + (useconds_t)(rand() % 100000));
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));
		if (exists("index.ckpt.tmp"))
			mid_write++;
		loaded += compare_paths();
	}
	print_message("%u kills, %u of them while a checkpoint was being "
	    "written, %u restarts from a checkpoint, %u blocks backed by "
	    "their Hist and %zu snapshots at the last\n", ROUNDS, mid_write,
	    loaded, last_held, last_snaps);
	assert_true(loaded > 0);
}

/* The lowest-numbered segment left: compaction removes the first ones. */
static uint32_t
first_seg(void)
{
	for (uint32_t no = 1; no < 1000; no++)
		if (file_size(seg_path(no)) >= 0)
			return no;
	fail_msg("no segment");
	return 0;
}

/* Fills the store, closes it (writing a checkpoint) and snapshots it. */
static struct snap *
filled(void)
{
	struct bft_store *st = open_ckpt(0);
	struct snap *s;

	for (uint64_t num = 1; num <= 6; num++) {
		for (uint64_t b = 0; b < 40; b++) {
			assert_int_equal(put(st, b, num, 1, 0), 0);
			if (num < 6 || b % 2)
				assert_int_equal(set_lc(st, b, num, 1), 0);
		}
	}
	s = snap_take(st);
	bft_store_close(st);
	return s;
}

/* Opens, expects the checkpoint refused with why containing what. */
static void
refused_ckpt(const struct snap *want, const char *what)
{
	struct bft_store_ckpt_info ck;
	struct bft_store *st = open_ckpt(0);
	struct snap *got;

	bft_store_ckpt_info(st, &ck);
	assert_false(ck.loaded);
	if (strstr(ck.why, what) == NULL)
		fail_msg("why \"%s\" does not mention \"%s\"", ck.why, what);
	/* The refused checkpoint is gone: no later open may trust it. */
	assert_false(exists("index.ckpt"));
	got = snap_take(st);
	snap_check(want, got);
	snap_free(got);
	bft_store_close(st);
}

static void
patch(const char *name, off_t off, int delta_or_cut)
{
	char p[160];
	int fd;
	uint8_t c;

	snprintf(p, sizeof p, "%s/%s", dir, name);
	if (delta_or_cut < 0) {
		assert_int_equal(truncate(p, file_size(p) + delta_or_cut), 0);
		return;
	}
	fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, off), 1);
	c ^= (uint8_t)delta_or_cut;
	assert_int_equal(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

static void
test_damaged_ckpt(void **state)
{
	struct bft_store_ckpt_info ck;
	struct bft_store *st;
	struct snap *want;

	(void)state;
	geometry(4, 64);
	want = filled();
	st = open_ckpt(0);
	bft_store_ckpt_info(st, &ck);
	assert_true(ck.loaded);
	assert_int_equal(ck.tail_bytes, 0);
	bft_store_close(st);
	/* A byte of the index, then of the header. */
	patch("index.ckpt", 2000, 0x10);
	refused_ckpt(want, "CRC");
	patch("index.ckpt", 9, 0x01);
	refused_ckpt(want, "CRC");
	/* Cut short. */
	patch("index.ckpt", 0, -100);
	refused_ckpt(want, "short");
	/* A segment it names is gone: its records with it. */
	assert_int_equal(unlink(seg_path(first_seg())), 0);
	st = open_ckpt(0);
	bft_store_ckpt_info(st, &ck);
	assert_false(ck.loaded);
	bft_store_close(st);
	snap_free(want);
}

/*
 * The directory emptied and written anew reuses segment numbers: a
 * checkpoint of the old log must not be taken for the new one.  The
 * first open of the emptied directory refuses it (its records are
 * gone) and removes it; and a segment whose first record is not the one
 * the checkpoint saw is refused even when everything else fits.
 */
static void
test_ckpt_of_another_log(void **state)
{
	static uint8_t rec[2 * BFT_MAX_FRAG];
	struct bft_store_ckpt_info ck;
	struct bft_rec_hdr h;
	struct bft_store *st;
	struct snap *want;
	uint32_t last = 0;
	int fd;

	(void)state;
	geometry(4, 64);
	want = filled();
	snap_free(want);
	for (uint32_t no = first_seg(); no < 1000; no++)
		if (file_size(seg_path(no)) >= 0)
			assert_int_equal(unlink(seg_path(no)), 0);
	st = open_ckpt(0);
	bft_store_ckpt_info(st, &ck);
	assert_false(ck.loaded);
	assert_false(exists("index.ckpt"));
	for (uint64_t num = 1; num <= 6; num++)
		for (uint64_t b = 0; b < 40; b++)
			assert_int_equal(put(st, 63 - b, num, 2, 9), 0);
	want = snap_take(st);
	bft_store_close(st);
	/* Same size, same place, another first record. */
	for (uint32_t no = first_seg(); no < 1000; no++)
		if (file_size(seg_path(no)) > 0)
			last = no;
	fd = open(seg_path(last), O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, rec, BFT_REC_HDR_LEN, 0), BFT_REC_HDR_LEN);
	assert_int_equal(bft_rec_check_hdr(rec, sizeof rec, ident.n, &h),
	    BFT_REC_OK);
	assert_int_equal(pread(fd, rec, BFT_REC_HDR_LEN + h.payload_len +
	    BFT_REC_SUM_LEN, 0), (ssize_t)(BFT_REC_HDR_LEN + h.payload_len +
	    BFT_REC_SUM_LEN));
	bft_rec_restamp(rec, BFT_REC_HDR_LEN + h.payload_len +
	    BFT_REC_SUM_LEN, ident.n, h.seq + 100000);
	assert_int_equal(pwrite(fd, rec, BFT_REC_HDR_LEN + h.payload_len +
	    BFT_REC_SUM_LEN, 0), (ssize_t)(BFT_REC_HDR_LEN + h.payload_len +
	    BFT_REC_SUM_LEN));
	close(fd);
	refused_ckpt(want, "not the segment the checkpoint saw");
	snap_free(want);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kill_anywhere, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_damaged_ckpt, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_ckpt_of_another_log,
		    setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
