/*
 * bft_store_reset() (server/testing/store_reset.c), which the handler's
 * fuzz harness runs between inputs in place of a discard and an open of
 * the emptied directory.  A reset store must be that store: nothing
 * written before it readable, every figure as an open gives it, the
 * same directory, and the same bytes appended from then on as a store
 * opened fresh in another directory, fed the same writes, appends; and
 * what it writes after the reset must survive a real close and open.
 * Each case first leaves something a careless reset would keep: a
 * background sync or checkpoint running, a dropped volume, a segment 1
 * compacted away, an index checkpoint loaded at open.  The fixture is
 * store_fixture.h.
 */
#include <dirent.h>

#include "store_fixture.h"
#include "../../server/testing/store_reset.h"

#define V	5u			/* a volume beside volume 0 */
#define X	9u			/* a volume written, then dropped */
#define NOPS	240u
#define NRCS	(NOPS + 24)

/*
 * Segments of four records, so that the workloads roll over and
 * compact; a cache that evicts; a checkpoint on a thread every 1 MiB.
 */
static const struct bft_store_opts opts = {
	.segment_size = 4 * (FRAGLEN + KIB), .cache_bytes = 16 * KIB,
	.checkpoint_bytes = 1024 * KIB,
};

static char fresh_dir[112];

static struct bft_store *
open_at(const char *d)
{
	char err[512] = "";
	struct bft_store *st;

	st = bft_store_open_opts(d, &ident, &opts, err, sizeof err);
	if (st == NULL)
		fail_msg("bft_store_open %s: %s", d, err);
	return st;
}

static uint64_t
xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * A workload from seed of nops operations over blocks first..first+7 of
 * volumes 0 and V (and X): STOREs of rising timestamps, most of them
 * completed, so that older entries become garbage and segments compact,
 * each followed by a read of lc, which goes through the cache; X
 * written, then dropped halfway; at the end a STORE left pending on
 * every block.  Return codes go to rcs, to compare two stores by.
 * sync_every: a sync every that many operations (0: none), which hands
 * compacted segments to the background thread.
 */
static void
work(struct bft_store *st, uint64_t seed, uint64_t first, unsigned nops,
    unsigned sync_every, int *rcs)
{
	static const uint32_t vols[] = { 0, V, X };
	uint64_t x = seed, r, addr;
	struct bft_cand c;
	unsigned vsel;

	for (unsigned i = 0; i < nops; i++) {
		r = xorshift(&x);
		vsel = (unsigned)(r >> 20) % 4;
		addr = bft_addr(vsel == 0 ? V : vsel == 1 ? X : 0,
		    first + (r >> 8) % 8 + (vsel == 0 ? 1000 : 0));
		if (i == nops / 2)
			rcs[i] = bft_store_drop_volume(st, X, NULL);
		else if (r % 4 == 0)
			rcs[i] = put(st, addr, i + 1, 1 + (r >> 4) % 2, i);
		else
			rcs[i] = put(st, addr, i + 1, 1, i) * 2 +
			    set_lc(st, addr, i + 1, 1);
		rcs[i] = rcs[i] * 4 + bft_store_get_lc(st, addr, &c);
		if (sync_every != 0 && i % sync_every == sync_every - 1)
			assert_int_equal(bft_store_sync(st), 0);
	}
	for (unsigned v = 0; v < 3; v++)
		for (uint64_t b = first; b < first + 8; b++)
			rcs[nops + v * 8 + (b - first)] = put(st,
			    bft_addr(vols[v], b + (vols[v] == V ? 1000 : 0)),
			    nops + 1, 3, 0);
}

/*
 * Pending STOREs of small fragments on blocks of V from 2000 on, enough
 * to grow the side table past the size a fresh store gives it; and one
 * at block 2^30, whose page makes V's page table a million slots long.
 */
static void
grow_side(struct bft_store *st)
{
	struct bft_hist_meta m;

	for (uint64_t b = 2000; b < 2300; b++) {
		make_meta(&m, b, 1, 1, 0);
		m.frag_len = 64;
		assert_int_equal(bft_store_put_hist(st, bft_addr(V, b), &m,
		    frag), 0);
	}
	make_meta(&m, UINT64_C(1) << 30, 1, 1, 0);
	m.frag_len = 64;
	assert_int_equal(bft_store_put_hist(st, bft_addr(V, UINT64_C(1) << 30),
	    &m, frag), 0);
}

/* The blocks work() wrote from first on hold nothing. */
static void
check_nothing(struct bft_store *st, uint64_t first)
{
	static const uint32_t vols[] = { 0, V, X };

	for (unsigned v = 0; v < 3; v++) {
		for (uint64_t b = first; b < first + 8; b++) {
			uint64_t a = bft_addr(vols[v], b +
			    (vols[v] == V ? 1000 : 0));
			struct bft_ts ts;

			assert_true(bft_ts_is_zero(&store_lc(st, a)->ts));
			assert_int_equal(bft_store_nhist(st, a), 0);
			assert_false(bft_store_lc_held(st, a));
			for (uint64_t num = 1; num <= NOPS; num++) {
				make_ts(&ts, num, 1);
				assert_false(store_has_hist(st, a, &ts));
			}
		}
	}
}

/* The names in d, sorted, one per line, with each file's size. */
static void
listing(const char *d, char *out, size_t len)
{
	struct dirent **names;
	char p[512];
	size_t used = 0;
	int n;

	n = scandir(d, &names, NULL, alphasort);
	assert_true(n >= 0);
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.' &&
		    strncmp(names[i]->d_name, "index.ckpt", 10) != 0) {
			snprintf(p, sizeof p, "%s/%s", d, names[i]->d_name);
			used += (size_t)snprintf(out + used, len - used,
			    "%s %lld\n", names[i]->d_name,
			    (long long)file_size(p));
			assert_true(used < len);
		}
		free(names[i]);
	}
	free(names);
}

/* Whether d holds an index checkpoint or its temporary file. */
static bool
has_ckpt(const char *d)
{
	char p[256];

	snprintf(p, sizeof p, "%s/index.ckpt", d);
	if (file_size(p) >= 0)
		return true;
	snprintf(p, sizeof p, "%s/index.ckpt.tmp", d);
	return file_size(p) >= 0;
}

/* The files of a and b (checkpoints aside) are the same, byte for byte. */
static void
same_files(const char *a, const char *b)
{
	static char la[4096], lb[4096];
	char pa[256], pb[256], name[128];
	const char *line;
	long long size;

	listing(a, la, sizeof la);
	listing(b, lb, sizeof lb);
	assert_string_equal(la, lb);
	for (line = la; sscanf(line, "%127s %lld", name, &size) == 2;
	    line = strchr(line, '\n') + 1) {
		FILE *fa, *fb;
		int ca, cb;

		snprintf(pa, sizeof pa, "%s/%s", a, name);
		snprintf(pb, sizeof pb, "%s/%s", b, name);
		fa = fopen(pa, "rb");
		fb = fopen(pb, "rb");
		assert_non_null(fa);
		assert_non_null(fb);
		do {
			ca = getc(fa);
			cb = getc(fb);
			if (ca != cb)
				fail_msg("%s differs from %s", pa, pb);
		} while (ca != EOF);
		fclose(fa);
		fclose(fb);
	}
}

/*
 * Every figure the store reports equals a fresh one's.  all: fsyncs and
 * the checkpoint's figures too, which after a workload depend on when
 * the background threads were collected.  The cache's bytes are what it
 * has allocated, which a reset keeps.
 */
static void
same_figures(struct bft_store *a, struct bft_store *b, bool all)
{
	struct bft_store_cache_stats ca, cb;
	struct bft_store_ckpt_info ka, kb;
	struct bft_store_replay ra, rb;
	struct bft_store_stats sa, sb;
	struct bft_store_vol va[8], vb[8];
	size_t nv;

	bft_store_stats(a, &sa);
	bft_store_stats(b, &sb);
	if (!all)
		sa.fsyncs = sb.fsyncs = 0;
	assert_memory_equal(&sa, &sb, sizeof sa);
	bft_store_replay_info(a, &ra);
	bft_store_replay_info(b, &rb);
	assert_memory_equal(&ra, &rb, sizeof ra);
	bft_store_cache_stats(a, &ca);
	bft_store_cache_stats(b, &cb);
	assert_int_equal(ca.entries, cb.entries);
	assert_int_equal(ca.hits, cb.hits);
	assert_int_equal(ca.misses, cb.misses);
	assert_int_equal(ca.damaged, cb.damaged);
	assert_int_equal(ca.capacity, cb.capacity);
	assert_int_equal(bft_store_indexed(a), bft_store_indexed(b));
	assert_int_equal(bft_store_next_page(a, 0), bft_store_next_page(b, 0));
	/* Zeroed first: the store fills the fields, not the padding. */
	memset(va, 0, sizeof va);
	memset(vb, 0, sizeof vb);
	nv = bft_store_volumes(a, 0, va, 8);
	assert_int_equal(nv, bft_store_volumes(b, 0, vb, 8));
	assert_memory_equal(va, vb, nv * sizeof va[0]);
	assert_int_equal(bft_store_dropped(a, X), bft_store_dropped(b, X));
	if (!all)
		return;
	assert_int_equal(bft_store_idx_steps(a), bft_store_idx_steps(b));
	bft_store_ckpt_info(a, &ka);
	bft_store_ckpt_info(b, &kb);
	assert_int_equal(ka.loaded, kb.loaded);
	assert_int_equal(ka.tail_bytes, kb.tail_bytes);
	assert_string_equal(ka.why, kb.why);
	assert_int_equal(ka.written, kb.written);
	assert_int_equal(ka.failed, kb.failed);
	assert_int_equal(ka.last_bytes, kb.last_bytes);
}

/* Block by block, the same lc and the same Hist, in the same order. */
static void
same_blocks(struct bft_store *a, struct bft_store *b, uint64_t first)
{
	static const uint32_t vols[] = { 0, V, X };
	struct bft_hist_entry ea, eb;
	struct bft_cand la, lb;

	for (unsigned v = 0; v < 3; v++) {
		for (uint64_t k = first; k < first + 8; k++) {
			uint64_t addr = bft_addr(vols[v], k +
			    (vols[v] == V ? 1000 : 0));
			unsigned nh = bft_store_nhist(a, addr);

			assert_int_equal(bft_store_get_lc(a, addr, &la), 0);
			assert_int_equal(bft_store_get_lc(b, addr, &lb), 0);
			assert_memory_equal(&la, &lb, sizeof la);
			assert_int_equal(nh, bft_store_nhist(b, addr));
			assert_int_equal(bft_store_lc_held(a, addr),
			    bft_store_lc_held(b, addr));
			for (unsigned i = 0; i < nh; i++) {
				assert_int_equal(bft_store_hist_at(a, addr, i,
				    &ea), 0);
				assert_int_equal(bft_store_hist_at(b, addr, i,
				    &eb), 0);
				assert_memory_equal(&ea.meta, &eb.meta,
				    sizeof ea.meta);
			}
		}
	}
}

/*
 * a, just reset, against a store opened fresh in another directory:
 * the same figures and files; then the same workload on both, which
 * must give the same results and the same log, byte for byte; then a
 * close and an open of a, from its checkpoint and from its whole log,
 * which must give the state before (reopen_same); nothing of what was
 * written before the reset (from old_first on) comes back.  Returns a
 * reopened.
 */
static struct bft_store *
check_like_fresh(struct bft_store *a, uint64_t old_first)
{
	static char la[4096], lb[4096];
	static char ca[1 << 20], cb[1 << 20];
	int ra[NRCS], rb[NRCS];
	struct bft_store *b;
	char p[256];
	FILE *f;
	size_t na, nb;

	check_nothing(a, old_first);
	assert_false(has_ckpt(dir));
	b = open_at(fresh_dir);
	same_figures(a, b, true);
	listing(dir, la, sizeof la);
	listing(fresh_dir, lb, sizeof lb);
	assert_string_equal(la, lb);
	same_files(dir, fresh_dir);
	/* A first sync syncs the same: the directory, as a new one. */
	assert_int_equal(bft_store_sync(a), 0);
	assert_int_equal(bft_store_sync(b), 0);
	same_figures(a, b, true);

	work(a, 0x5eed, 40, NOPS, 0, ra);
	work(b, 0x5eed, 40, NOPS, 0, rb);
	assert_memory_equal(ra, rb, sizeof ra);
	assert_int_equal(bft_store_sync(a), 0);
	assert_int_equal(bft_store_sync(b), 0);
	same_figures(a, b, false);
	same_blocks(a, b, 40);
	same_files(dir, fresh_dir);

	/*
	 * The checkpoints a close writes hold the index, the side table
	 * slot by slot and the segments: the same bytes too.
	 */
	bft_store_close(a);
	bft_store_close(b);
	snprintf(p, sizeof p, "%s/index.ckpt", dir);
	assert_non_null(f = fopen(p, "rb"));
	na = fread(ca, 1, sizeof ca, f);
	fclose(f);
	snprintf(p, sizeof p, "%s/index.ckpt", fresh_dir);
	assert_non_null(f = fopen(p, "rb"));
	nb = fread(cb, 1, sizeof cb, f);
	fclose(f);
	assert_true(na > 0 && na < sizeof ca);
	assert_int_equal(na, nb);
	assert_memory_equal(ca, cb, na);

	a = reopen_same(open_at(dir), opts.segment_size);
	check_nothing(a, old_first);
	return a;
}

static int
setup_two(void **state)
{
	setup(state);
	snprintf(fresh_dir, sizeof fresh_dir, "%s/fresh", tmp);
	return 0;
}

/* Reset at once, and twice: still an empty store. */
static void
test_reset_new(void **state)
{
	struct bft_store *st = open_at(dir);

	(void)state;
	assert_int_equal(bft_store_reset(st), 0);
	assert_int_equal(bft_store_reset(st), 0);
	st = check_like_fresh(st, 0);
	bft_store_close(st);
}

/*
 * After writes that rolled segments, compacted, dropped a volume and
 * left a background sync and a checkpoint thread behind.
 */
static void
test_reset_after_writes(void **state)
{
	struct bft_store *st = open_at(dir);
	struct bft_store_stats ss;
	int rcs[NRCS];

	(void)state;
	work(st, 0xabc, 0, NOPS, 16, rcs);
	grow_side(st);
	/* A snapshot boundary, which a reset must forget too. */
	assert_int_equal(bft_store_snap_add(st, V, 7), 0);
	bft_store_stats(st, &ss);
	assert_true(ss.compactions > 0);
	assert_true(ss.segments > 2);
	assert_true(bft_store_dropped(st, X));
	assert_true(bft_store_next_page(st, 0) != UINT64_MAX);
	assert_int_equal(bft_store_snaps(st, V, NULL, 0), 1);
	assert_int_equal(bft_store_reset(st), 0);
	assert_int_equal(bft_store_snaps(st, V, NULL, 0), 0);
	st = check_like_fresh(st, 0);
	bft_store_close(st);
}

/*
 * Records in segment 1 and no compaction: the reset keeps segment 1's
 * file and cuts it to nothing.
 */
static void
test_reset_segment_1_kept(void **state)
{
	struct bft_store *st = open_at(dir);
	int rcs[NRCS];

	(void)state;
	work(st, 0x777, 0, 2, 0, rcs);
	assert_true(file_size(seg_path(1)) > 0);
	assert_int_equal(bft_store_reset(st), 0);
	st = check_like_fresh(st, 0);
	bft_store_close(st);
}

/* Segment 1 compacted and removed: the reset makes it again. */
static void
test_reset_without_segment_1(void **state)
{
	struct bft_store *st = open_at(dir);
	int rcs[NRCS];

	(void)state;
	work(st, 0xdef, 0, NOPS, 4, rcs);
	assert_int_equal(bft_store_sync(st), 0);
	assert_true(file_size(seg_path(1)) < 0);
	assert_int_equal(bft_store_reset(st), 0);
	assert_int_equal(file_size(seg_path(1)), 0);
	st = check_like_fresh(st, 0);
	bft_store_close(st);
}

/*
 * A store opened from an index checkpoint, then written: the reset
 * removes the checkpoint, or the next open would start from it.
 */
static void
test_reset_after_checkpoint(void **state)
{
	struct bft_store_ckpt_info ck;
	struct bft_store *st = open_at(dir);
	int rcs[NRCS];

	(void)state;
	work(st, 0x123, 0, NOPS, 0, rcs);
	bft_store_close(st);
	st = open_at(dir);
	bft_store_ckpt_info(st, &ck);
	assert_true(ck.loaded);
	work(st, 0x456, 20, NOPS, 0, rcs);
	assert_int_equal(bft_store_reset(st), 0);
	check_nothing(st, 20);
	st = check_like_fresh(st, 0);
	bft_store_close(st);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reset_new, setup_two,
		    teardown),
		cmocka_unit_test_setup_teardown(test_reset_segment_1_kept,
		    setup_two, teardown),
		cmocka_unit_test_setup_teardown(test_reset_after_writes,
		    setup_two, teardown),
		cmocka_unit_test_setup_teardown(test_reset_without_segment_1,
		    setup_two, teardown),
		cmocka_unit_test_setup_teardown(test_reset_after_checkpoint,
		    setup_two, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
