/*
 * The range digests and lc entries of SUMMARY and LCLIST
 * (common/summary.h), which a server and a rebuilding peer must compute
 * alike: the entry's byte layout against hand-written bytes, the digest
 * against H of the concatenated entries (H itself is pinned by
 * test_crypto.c's known answers), the all-zero digest of a range with
 * nothing written, and the incremental hasher against one-shot H.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crypto.h"
#include "summary.h"

static int
setup(void **state)
{
	(void)state;
	return bft_crypto_init();
}

static struct bft_ts
ts(uint64_t num, uint64_t wid)
{
	struct bft_ts t;

	memset(&t, 0, sizeof t);
	t.num = num;
	t.wid = wid;
	/* The MAC takes no part in entries or digests. */
	memset(t.mac, 0xa5, sizeof t.mac);
	return t;
}

static void
test_entry_layout(void **state)
{
	static const uint8_t want[BFT_LCENTRY_LEN] = {
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
		0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88,
	};
	struct bft_ts t = ts(256, 0xffeeddccbbaa9988ull), back;
	uint8_t e[BFT_LCENTRY_LEN];
	uint64_t block;

	(void)state;
	bft_lcentry_put(e, 0x0102030405060708ull, &t);
	assert_memory_equal(e, want, sizeof want);
	bft_lcentry_get(e, &block, &back);
	assert_true(block == 0x0102030405060708ull);
	assert_true(back.num == 256 && back.wid == 0xffeeddccbbaa9988ull);
	for (size_t i = 0; i < BFT_MAC_LEN; i++)
		assert_int_equal(back.mac[i], 0);
}

static void
test_digest_is_hash_of_entries(void **state)
{
	/* Blocks 5 (7, 9) and 6 (256, 2); block 7 is never written. */
	static const uint8_t entries[2 * BFT_LCENTRY_LEN] = {
		0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 7,
		0, 0, 0, 0, 0, 0, 0, 9,
		0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 1, 0,
		0, 0, 0, 0, 0, 0, 0, 2,
	};
	struct bft_ts zero = ts(0, 0), a = ts(7, 9), b = ts(256, 2);
	uint8_t d[BFT_SUMMARY_DIGEST_LEN], want[BFT_HASH_LEN];
	struct bft_summary s;

	(void)state;
	bft_summary_init(&s);
	bft_summary_add(&s, 5, &a);
	bft_summary_add(&s, 6, &b);
	bft_summary_add(&s, 7, &zero);
	bft_summary_final(&s, d);
	bft_hash(entries, sizeof entries, want);
	assert_memory_equal(d, want, sizeof want);
	assert_false(bft_summary_is_empty(d));

	/* Any change of block, num or wid changes the digest. */
	bft_summary_init(&s);
	bft_summary_add(&s, 5, &a);
	b.wid = 3;
	bft_summary_add(&s, 6, &b);
	bft_summary_final(&s, d);
	assert_memory_not_equal(d, want, sizeof want);
	bft_summary_init(&s);
	bft_summary_add(&s, 5, &a);
	bft_summary_add(&s, 8, &b);
	bft_summary_final(&s, d);
	assert_memory_not_equal(d, want, sizeof want);

	/* One block alone is H of its one entry. */
	bft_summary_init(&s);
	bft_summary_add(&s, 5, &a);
	bft_summary_final(&s, d);
	bft_hash(entries, BFT_LCENTRY_LEN, want);
	assert_memory_equal(d, want, sizeof want);
}

static void
test_empty_range(void **state)
{
	static const uint8_t zeros[BFT_SUMMARY_DIGEST_LEN];
	struct bft_ts zero = ts(0, 0), one = ts(1, 1);
	uint8_t d[BFT_SUMMARY_DIGEST_LEN], h[BFT_HASH_LEN];
	struct bft_summary s;

	(void)state;
	bft_summary_init(&s);
	bft_summary_final(&s, d);
	assert_memory_equal(d, zeros, sizeof zeros);
	assert_true(bft_summary_is_empty(d));
	for (uint64_t b = 0; b < 100; b++)
		bft_summary_add(&s, b, &zero);
	bft_summary_final(&s, d);
	assert_true(bft_summary_is_empty(d));
	/* Not H of nothing, which would not be recognisable as empty. */
	bft_hash("", 0, h);
	assert_memory_not_equal(d, h, sizeof h);
	bft_summary_add(&s, 100, &one);
	bft_summary_final(&s, d);
	assert_false(bft_summary_is_empty(d));
}

static void
test_ranges(void **state)
{
	(void)state;
	assert_int_equal(bft_summary_nranges(1, 1), 1);
	assert_int_equal(bft_summary_nranges(10, 3), 4);
	assert_int_equal(bft_summary_nranges(9, 3), 3);
	assert_int_equal(bft_summary_nranges(UINT32_MAX, UINT32_MAX), 1);
	assert_int_equal(bft_summary_nranges(UINT32_MAX, 1u << 22), 1024);
	assert_int_equal(bft_summary_nranges(5, 0), 0);
}

static void
test_hasher_pieces(void **state)
{
	static uint8_t data[5000];
	static const size_t cuts[] = { 0, 1, 63, 64, 65, 1023, 1024, 1025,
	    4999, 5000 };
	uint8_t one[BFT_HASH_LEN], inc[BFT_HASH_LEN];
	struct bft_hasher hs;

	(void)state;
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (uint8_t)(i * 7 + 3);
	bft_hash(data, sizeof data, one);
	for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
		bft_hasher_init(&hs);
		bft_hasher_update(&hs, data, cuts[k]);
		bft_hasher_update(&hs, data + cuts[k], sizeof data - cuts[k]);
		bft_hasher_final(&hs, inc);
		assert_memory_equal(inc, one, sizeof one);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entry_layout),
		cmocka_unit_test(test_digest_is_hash_of_entries),
		cmocka_unit_test(test_empty_range),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_hasher_pieces),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
