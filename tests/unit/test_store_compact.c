/*
 * The durable store (server/store/): compaction and its crash safety,
 * and full disks (a 1 MiB tmpfs and RLIMIT_FSIZE).  Records and replay
 * are in test_store.c; the fixture is store_fixture.h.
 */
#include <dirent.h>

#include "store_fixture.h"

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
 * Disk use within factor times the live bytes, plus the active segment
 * and what waits for a sync to be unlinked.
 */
static void
check_disk_use(const struct bft_store_stats *ss, uint64_t factor,
    uint64_t seg, unsigned round)
{
	if (ss->bytes_total > factor * ss->bytes_live +
	    (2 + 2 * BFT_STORE_MAX_RETIRED) * seg)
		fail_msg("round %u: %llu bytes on disk for %llu live", round,
		    (unsigned long long)ss->bytes_total,
		    (unsigned long long)ss->bytes_live);
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
		if (r > 4)
			check_disk_use(&ss, 3, seg, r);
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
	/* Without the checkpoint, replay must see through the copies. */
	drop_ckpt();
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

/*
 * A fill of 64 blocks and 40 rounds of 64 overwrites through 256 KiB
 * segments: every block in order, or blocks drawn at random (some then
 * stay untouched for many rounds, their records live in old segments).
 * Returns the bytes compaction copied, checking the disk bound after
 * every round and the state after a reopen.
 */
static uint64_t
overwrite_rounds(bool random)
{
	const uint64_t seg = 256 * KIB, nb = 64;
	struct bft_store_stats ss;
	struct bft_store *st;
	uint64_t last[64], num = 0;
	uint32_t x = 12345;

	teardown(NULL);
	setup(NULL);
	geometry(4, nb);
	st = sopen(seg);
	for (unsigned r = 0; r <= 40; r++) {
		for (uint64_t i = 0; i < nb; i++) {
			uint64_t k = i;

			if (random && r > 0) {
				x = x * 1103515245u + 12345u;
				k = (x >> 8) % nb;
			}
			num++;
			assert_int_equal(put(st, k, num, 1, (unsigned)num), 0);
			assert_int_equal(set_lc(st, k, num, 1), 0);
			last[k] = num;
		}
		bft_store_stats(st, &ss);
		if (r > 4)
			check_disk_use(&ss, 2, seg, r);
	}
	print_message("%s: %llu compactions copied %llu bytes; %llu of "
	    "%llu bytes live\n", random ? "random" : "in order",
	    (unsigned long long)ss.compactions,
	    (unsigned long long)ss.bytes_copied,
	    (unsigned long long)ss.bytes_live,
	    (unsigned long long)ss.bytes_total);
	assert_true(ss.compactions > 10);
	st = reopen_same(st, seg);
	for (uint64_t k = 0; k < nb; k++)
		check_entry(st, k, last[k], 1, (unsigned)last[k]);
	bft_store_close(st);
	return ss.bytes_copied;
}

/*
 * Compaction waits for the log as a whole to be half garbage, so the
 * segments that sequential overwrites kill entirely go without a copy;
 * random overwrites leave live records everywhere and need copying,
 * within the same disk bound.
 */
static void
test_overwrites(void **state)
{
	uint64_t in_order, random;

	(void)state;
	in_order = overwrite_rounds(false);
	random = overwrite_rounds(true);
	assert_int_equal(in_order, 0);
	assert_true(random > 0);
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

/* The bytes of the segment files in the data directory. */
static uint64_t
seg_bytes_on_disk(void)
{
	struct dirent *d;
	uint64_t sum = 0;
	DIR *dp = opendir(dir);
	uint32_t no;

	assert_non_null(dp);
	while ((d = readdir(dp)) != NULL)
		if (bft_seg_parse_name(d->d_name, &no))
			sum += (uint64_t)file_size(seg_path(no));
	closedir(dp);
	return sum;
}

/*
 * A dropped volume's space comes back with no append after the DROP:
 * bft_store_compact_idle, called as the server's timer does, empties
 * the segments it filled (copying volume 0's blocks written among its
 * own, each call within its budget) and has them unlinked, until the
 * data directory holds about the live bytes.  Without it the garbage
 * stayed: the DROP's own compaction step frees at most one segment.
 */
static void
test_idle_after_drop(void **state)
{
	const uint64_t seg = 256 * KIB, budget = 64 * KIB;
	const uint32_t vol = 5;
	struct bft_store_stats ss, prev;
	struct bft_store *st;
	unsigned calls = 0;
	uint64_t disk;

	(void)state;
	st = sopen(seg);
	for (uint64_t k = 0; k < 64; k++) {
		assert_int_equal(put(st, bft_addr(vol, k), 1, 1, 0), 0);
		assert_int_equal(set_lc(st, bft_addr(vol, k), 1, 1), 0);
		if (k % 8 == 7) {
			assert_int_equal(put(st, k / 8, 1, 1, 0), 0);
			assert_int_equal(set_lc(st, k / 8, 1, 1), 0);
		}
	}
	/* Everything is live: nothing to do. */
	assert_false(bft_store_compact_idle(st, budget));
	assert_int_equal(bft_store_drop_volume(st, vol, NULL), 0);
	bft_store_stats(st, &ss);
	disk = seg_bytes_on_disk();
	print_message("after the DROP: %llu bytes on disk, %llu live\n",
	    (unsigned long long)disk, (unsigned long long)ss.bytes_live);
	assert_true(disk > 4 * ss.bytes_live);
	prev = ss;
	while (bft_store_compact_idle(st, budget)) {
		bft_store_stats(st, &ss);
		/* The budget, overrun by the last record at most. */
		assert_true(ss.bytes_copied - prev.bytes_copied <=
		    budget + FRAGLEN + KIB);
		prev = ss;
		assert_true(++calls < 10000);
		usleep(1000);
	}
	bft_store_stats(st, &ss);
	disk = seg_bytes_on_disk();
	print_message("after %u idle calls: %llu bytes on disk, %llu live, "
	    "%llu copied, %llu compactions\n", calls,
	    (unsigned long long)disk, (unsigned long long)ss.bytes_live,
	    (unsigned long long)ss.bytes_copied,
	    (unsigned long long)ss.compactions);
	assert_true(calls > 2);
	assert_int_equal(disk, ss.bytes_total);
	assert_true(disk <= ss.bytes_live * 3 / 2 + seg);
	assert_true(ss.bytes_removed >= 8 * seg);
	for (uint64_t b = 0; b < 8; b++)
		check_entry(st, b, 1, 1, 0);
	/* Done: nothing more to do, and it stays so. */
	assert_false(bft_store_compact_idle(st, budget));
	st = reopen_same(st, seg);
	for (uint64_t b = 0; b < 8; b++)
		check_entry(st, b, 1, 1, 0);
	bft_store_close(st);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_compaction4, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_overwrites, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_compaction7, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_enospc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_efbig, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_after_drop, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
