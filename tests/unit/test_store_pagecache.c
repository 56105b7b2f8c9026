/*
 * The log's pages in the page cache (server/store/store_pagecache.c):
 * segments wholly behind the newest page_cache_bytes of the log give
 * their pages back, nothing within the window does, the data reads
 * back the same from the disk, and page_cache_all leaves every page to
 * the kernel.  Residency is what mincore(2) says of the segment files
 * once the store is closed (close waits for the thread).  The fixture
 * is store_fixture.h.
 */
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/vfs.h>

#include "store_fixture.h"

#define SEG	(256 * KIB)
#define WINDOW	(1024 * KIB)
#define BLOCKS	96u

/* Bytes of segment files 1..last resident in the page cache. */
static uint64_t
resident(uint32_t last, uint64_t *size)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t res = 0;

	*size = 0;
	for (uint32_t no = 1; no <= last; no++) {
		off_t len = file_size(seg_path(no));
		unsigned char *vec;
		void *map;
		int fd;

		if (len <= 0)
			continue;
		*size += (uint64_t)len;
		fd = open(seg_path(no), O_RDONLY);
		assert_true(fd >= 0);
		map = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, fd, 0);
		assert_true(map != MAP_FAILED);
		vec = calloc(((size_t)len + (size_t)page - 1) / (size_t)page, 1);
		assert_non_null(vec);
		assert_int_equal(mincore(map, (size_t)len, vec), 0);
		for (off_t i = 0; i * page < len; i++)
			if (vec[i] & 1)
				res += (uint64_t)(len - i * page < page ?
				    len - i * page : page);
		free(vec);
		munmap(map, (size_t)len);
		close(fd);
	}
	return res;
}

static struct bft_store *
open_window(uint64_t window, bool all)
{
	struct bft_store_opts o = { .segment_size = SEG,
	    .page_cache_bytes = window, .page_cache_all = all };
	char err[512] = "";
	struct bft_store *st;

	geometry(4, BLOCKS);
	st = bft_store_open_opts(dir, &ident, &o, err, sizeof err);
	if (st == NULL)
		fail_msg("bft_store_open: %s", err);
	return st;
}

/* Every block written once, in order: about 12 segments of log. */
static void
write_all(struct bft_store *st, struct bft_store_stats *ss)
{
	for (uint64_t b = 0; b < BLOCKS; b++) {
		assert_int_equal(put(st, b, 1, 1, 0), 0);
		assert_int_equal(set_lc(st, b, 1, 1), 0);
	}
	bft_store_stats(st, ss);
}

static bool
on_tmpfs(void)
{
	struct statfs sf;

	return statfs(dir, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
}

static void
test_window(void **state)
{
	struct bft_store_stats ss;
	struct bft_store *st;
	uint64_t res, size;

	(void)state;
	st = open_window(WINDOW, false);
	write_all(st, &ss);
	/* Something went back, and nothing of the newest window. */
	assert_true(ss.bytes_uncached > 0);
	assert_true(ss.bytes_uncached + WINDOW <= ss.bytes_total);
	bft_store_close(st);

	res = resident((uint32_t)ss.segments + 1, &size);
	assert_int_equal(size, ss.bytes_total);
	/* tmpfs holds its files in the page cache: nothing to give back. */
	if (!on_tmpfs() && res + ss.bytes_uncached > size)
		fail_msg("%llu of %llu bytes resident after %llu given back",
		    (unsigned long long)res, (unsigned long long)size,
		    (unsigned long long)ss.bytes_uncached);

	/* Read from the disk, the same records. */
	st = open_window(WINDOW, false);
	for (uint64_t b = 0; b < BLOCKS; b++)
		check_entry(st, b, 1, 1, 0);
	bft_store_close(st);
}

static void
test_all(void **state)
{
	struct bft_store_stats ss;
	struct bft_store *st;

	(void)state;
	st = open_window(0, true);
	write_all(st, &ss);
	assert_true(ss.bytes_total > 4 * SEG);
	assert_int_equal(ss.bytes_uncached, 0);
	bft_store_close(st);
}

/* A window larger than the log: nothing goes. */
static void
test_large_window(void **state)
{
	struct bft_store_stats ss;
	struct bft_store *st;

	(void)state;
	st = open_window(64 * WINDOW, false);
	write_all(st, &ss);
	assert_int_equal(ss.bytes_uncached, 0);
	bft_store_close(st);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_large_window, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
