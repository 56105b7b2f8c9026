/*
 * The block cache (lib/blockcache.c): hits return exactly what
 * was put, an older timestamp never replaces a newer one, drops and
 * evictions forget, the capacity bounds it, CLOCK keeps referenced
 * blocks, and a long random run agrees with a simple model.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../lib/blockcache_int.h"

#define BS BFT_BLOCK_SIZE

static uint8_t buf[BS], out[BS];

/* A block's bytes for (block, num): distinct for every pair. */
static void
fill(uint8_t *b, uint64_t block, uint64_t num)
{
	uint64_t x = block * 1000003u + num * 7919u + 1;

	for (size_t i = 0; i < BS; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(b + i, &x, 8);
	}
}

static struct bft_ts
ts_of(uint64_t num, uint64_t wid)
{
	struct bft_ts ts;

	memset(&ts, 0, sizeof ts);
	ts.num = num;
	ts.wid = wid;
	return ts;
}

static void
put(struct bft_blockcache *bc, uint64_t block, uint64_t num, uint64_t wid)
{
	struct bft_ts ts = ts_of(num, wid);

	fill(buf, block, num);
	bftblk__bc_put(bc, block, &ts, buf);
}

/* Asserts a hit with (num, wid) and the bytes put with it. */
static void
expect_hit(struct bft_blockcache *bc, uint64_t block, uint64_t num,
    uint64_t wid)
{
	struct bft_ts ts;

	assert_true(bftblk__bc_get(bc, block, out, &ts));
	assert_int_equal(ts.num, num);
	assert_int_equal(ts.wid, wid);
	fill(buf, block, num);
	assert_memory_equal(out, buf, BS);
}

static void
expect_miss(struct bft_blockcache *bc, uint64_t block)
{
	struct bft_ts ts;

	assert_false(bftblk__bc_get(bc, block, out, &ts));
}

static void
test_off(void **state)
{
	struct bft_ts ts = ts_of(1, 1);

	(void)state;
	/* Zero, or less than a block, is no cache; NULL caches nothing. */
	assert_null(bftblk__bc_new(0));
	assert_null(bftblk__bc_new(BS - 1));
	bftblk__bc_put(NULL, 1, &ts, buf);
	expect_miss(NULL, 1);
	bftblk__bc_drop(NULL, 1);
	assert_int_equal(bftblk__bc_count(NULL), 0);
	assert_int_equal(bftblk__bc_capacity(NULL), 0);
	bftblk__bc_free(NULL);
}

/*
 * Refresh never adds a block (whole-block writes and reads would flood
 * the cache), but keeps a cached one current, newer timestamp winning.
 */
static void
test_refresh(void **state)
{
	struct bft_blockcache *bc = bftblk__bc_new(4ull * BS);
	struct bft_ts ts = ts_of(5, 1);

	(void)state;
	fill(buf, 3, 5);
	bftblk__bc_refresh(bc, 3, &ts, buf);
	expect_miss(bc, 3);
	assert_int_equal(bftblk__bc_count(bc), 0);
	put(bc, 3, 5, 1);
	ts = ts_of(7, 2);
	fill(buf, 3, 7);
	bftblk__bc_refresh(bc, 3, &ts, buf);
	expect_hit(bc, 3, 7, 2);
	ts = ts_of(6, 1);
	fill(buf, 3, 6);
	bftblk__bc_refresh(bc, 3, &ts, buf);
	expect_hit(bc, 3, 7, 2);
	bftblk__bc_refresh(NULL, 3, &ts, buf);
	assert_int_equal(bftblk__bc_count(bc), 1);
	bftblk__bc_free(bc);
}

static void
test_put_get(void **state)
{
	struct bft_blockcache *bc = bftblk__bc_new(16ull * BS + 100);

	(void)state;
	assert_non_null(bc);
	assert_int_equal(bftblk__bc_capacity(bc), 16);
	expect_miss(bc, 5);
	put(bc, 5, 3, 9);
	put(bc, 0, 0, 0);		/* the initial value at the zero ts */
	put(bc, UINT64_MAX, 1, 1);
	expect_hit(bc, 5, 3, 9);
	expect_hit(bc, 0, 0, 0);
	expect_hit(bc, UINT64_MAX, 1, 1);
	expect_miss(bc, 6);
	assert_int_equal(bftblk__bc_count(bc), 3);
	bftblk__bc_free(bc);
}

static void
test_newer_wins(void **state)
{
	struct bft_blockcache *bc = bftblk__bc_new(4 * BS);

	(void)state;
	put(bc, 7, 5, 100);
	/* Older: by num, and by wid under the same num. */
	put(bc, 7, 4, 999);
	expect_hit(bc, 7, 5, 100);
	put(bc, 7, 5, 99);
	expect_hit(bc, 7, 5, 100);
	/* Newer: by wid under the same num, then by num. */
	put(bc, 7, 5, 101);
	expect_hit(bc, 7, 5, 101);
	put(bc, 7, 6, 1);
	expect_hit(bc, 7, 6, 1);
	assert_int_equal(bftblk__bc_count(bc), 1);
	bftblk__bc_free(bc);
}

static void
test_drop(void **state)
{
	struct bft_blockcache *bc = bftblk__bc_new(2 * BS);

	(void)state;
	put(bc, 1, 1, 1);
	put(bc, 2, 1, 1);
	bftblk__bc_drop(bc, 1);
	bftblk__bc_drop(bc, 3);		/* not cached: nothing happens */
	expect_miss(bc, 1);
	expect_hit(bc, 2, 1, 1);
	assert_int_equal(bftblk__bc_count(bc), 1);
	/* After a drop, any ts goes in again, older ones too. */
	put(bc, 1, 0, 0);
	expect_hit(bc, 1, 0, 0);
	/* The freed slot is reused: no eviction of block 2. */
	expect_hit(bc, 2, 1, 1);
	bftblk__bc_free(bc);
}

static void
test_capacity_and_clock(void **state)
{
	struct bft_blockcache *bc = bftblk__bc_new(4 * BS);
	unsigned hits = 0;

	(void)state;
	for (uint64_t b = 0; b < 4; b++)
		put(bc, b, 1, 1);
	/* Blocks 0 and 2 are used again; 1 and 3 are not. */
	expect_hit(bc, 0, 1, 1);
	expect_hit(bc, 2, 1, 1);
	put(bc, 10, 1, 1);
	put(bc, 11, 1, 1);
	assert_int_equal(bftblk__bc_count(bc), 4);
	expect_hit(bc, 0, 1, 1);
	expect_hit(bc, 2, 1, 1);
	expect_miss(bc, 1);
	expect_miss(bc, 3);
	expect_hit(bc, 10, 1, 1);
	expect_hit(bc, 11, 1, 1);
	/* A long scan leaves exactly the capacity, the newest included. */
	for (uint64_t b = 100; b < 200; b++)
		put(bc, b, 2, 2);
	assert_int_equal(bftblk__bc_count(bc), 4);
	expect_hit(bc, 199, 2, 2);
	for (uint64_t b = 0; b < 200; b++) {
		struct bft_ts ts;

		hits += bftblk__bc_get(bc, b, out, &ts);
	}
	assert_int_equal(hits, 4);
	bftblk__bc_free(bc);
}

/*
 * Random puts, drops and gets against a model of the newest (num, wid)
 * put per block since its last drop: a hit must match the model
 * exactly, a miss is always allowed (eviction), and the count never
 * exceeds the capacity.  Colliding blocks (same hash chain) are
 * frequent with 300 blocks over 64 buckets.
 */
static void
test_random_model(void **state)
{
	enum { BLOCKS = 300, CAP = 32, STEPS = 20000 };
	struct bft_blockcache *bc = bftblk__bc_new((uint64_t)CAP * BS);
	static uint64_t num[BLOCKS], wid[BLOCKS];
	static bool present[BLOCKS];
	unsigned hits = 0, misses = 0;

	(void)state;
	srand(12345);
	for (int step = 0; step < STEPS; step++) {
		uint64_t b = (uint64_t)rand() % BLOCKS;
		int what = rand() % 10;

		if (what < 4) {
			uint64_t n = (uint64_t)rand() % 8, w = 1 + rand() % 3;
			struct bft_ts m = ts_of(num[b], wid[b]);
			struct bft_ts t = ts_of(n, w);

			put(bc, b * 977, n, w);
			if (!present[b] || bft_ts_cmp(&m, &t) < 0) {
				num[b] = n;
				wid[b] = w;
			}
			present[b] = true;
		} else if (what < 5) {
			bftblk__bc_drop(bc, b * 977);
			present[b] = false;
		} else {
			struct bft_ts ts;

			if (!bftblk__bc_get(bc, b * 977, out, &ts)) {
				misses++;
				continue;
			}
			hits++;
			assert_true(present[b]);
			/* Evicted and put again may hold an older pair. */
			assert_true(ts.num <= num[b]);
			fill(buf, b * 977, ts.num);
			assert_memory_equal(out, buf, BS);
		}
		assert_true(bftblk__bc_count(bc) <= CAP);
	}
	assert_true(hits > 100);
	assert_true(misses > 100);
	bftblk__bc_free(bc);
}

/* Threads putting, getting and dropping: every hit is a genuine pair. */
static struct bft_blockcache *shared;

static void *
worker(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	static _Thread_local uint8_t b1[BS], b2[BS];

	for (uint64_t i = 0; i < 3000; i++) {
		uint64_t block = (i * 31 + id) % 24;
		struct bft_ts ts = ts_of(i % 50, id + 1);

		if (i % 3 == 0) {
			fill(b1, block, ts.num * 16 + ts.wid);
			bftblk__bc_put(shared, block, &ts, b1);
		} else if (i % 17 == 0) {
			bftblk__bc_drop(shared, block);
		} else if (bftblk__bc_get(shared, block, b1, &ts)) {
			fill(b2, block, ts.num * 16 + ts.wid);
			if (memcmp(b1, b2, BS) != 0)
				return (void *)1;
		}
	}
	return NULL;
}

static void
test_threads(void **state)
{
	pthread_t th[4];

	(void)state;
	shared = bftblk__bc_new(8 * BS);
	for (uintptr_t i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, worker,
		    (void *)i), 0);
	for (int i = 0; i < 4; i++) {
		void *r;

		pthread_join(th[i], &r);
		assert_null(r);
	}
	assert_true(bftblk__bc_count(shared) <= 8);
	bftblk__bc_free(shared);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_put_get),
		cmocka_unit_test(test_refresh),
		cmocka_unit_test(test_newer_wins),
		cmocka_unit_test(test_drop),
		cmocka_unit_test(test_capacity_and_clock),
		cmocka_unit_test(test_random_model),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
