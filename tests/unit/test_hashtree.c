/*
 * Verified slices (common/hashtree.h): every range of inputs of many
 * lengths, proved and checked, gives bft_hash() of the input (pinned by
 * test_crypto.c's known answers), so the tree is BLAKE3's own; and
 * what a lying server could send instead (chunks of another place or
 * another fragment with their own valid proofs, one bit changed in a
 * chunk or a CV, CVs reordered, one too many or too few) gives another
 * root or an error, never the fragment's hash.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crypto.h"
#include "hashtree.h"

static int
setup(void **state)
{
	(void)state;
	return bft_crypto_init();
}

static void
fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

/* The fragment at t = 1 (80-byte coder header, 32 KiB payload), etc. */
static const size_t lengths[] = {
	0, 1, 63, 64, 65, 1023, 1024, 1025, 2047, 2048, 2049, 3 * 1024 + 7,
	4096 + 80, 21926, 32 * 1024, 32848, 33 * 1024, 65536 + 80,
	BFT_MAX_FRAG,
};
#define NLENGTHS (sizeof lengths / sizeof lengths[0])

static const uint8_t *
chunk_at(const uint8_t *data, uint32_t first)
{
	return data + (size_t)first * BFT_TREE_CHUNK;
}

static void
test_whole_input_is_its_hash(void **state)
{
	static uint8_t data[BFT_MAX_FRAG];
	uint8_t h[BFT_HASH_LEN], root[BFT_HASH_LEN];

	(void)state;
	for (size_t l = 0; l < NLENGTHS; l++) {
		size_t len = lengths[l];
		uint32_t n = bft_tree_chunks(len);

		fill(data, len, (uint32_t)len);
		bft_hash(data, len, h);
		assert_int_equal(bft_tree_proof_cvs(len, 0, n), 0);
		assert_int_equal(bft_tree_slice_len(len, 0, n), len);
		assert_int_equal(bft_tree_root(data, len, 0, n, NULL, 0, root),
		    0);
		assert_memory_equal(root, h, sizeof h);
	}
}

static void
test_every_range_proves(void **state)
{
	static uint8_t data[BFT_MAX_FRAG];
	uint8_t proof[BFT_TREE_PROOF_MAX][BFT_HASH_LEN];
	uint8_t h[BFT_HASH_LEN], root[BFT_HASH_LEN];

	(void)state;
	for (size_t l = 0; l < NLENGTHS; l++) {
		size_t len = lengths[l];
		uint32_t n = bft_tree_chunks(len);

		fill(data, len, (uint32_t)len + 7);
		bft_hash(data, len, h);
		for (uint32_t a = 0; a < n; a++)
			for (uint32_t c = 1; c <= n - a; c++) {
				int k = bft_tree_prove(data, len, a, c, proof);

				assert_true(k >= 0);
				assert_true((unsigned)k <= BFT_TREE_PROOF_MAX);
				assert_int_equal(k, bft_tree_proof_cvs(len, a,
				    c));
				assert_int_equal(bft_tree_root(chunk_at(data,
				    a), len, a, c, (const uint8_t (*)[
				    BFT_HASH_LEN])proof, (unsigned)k, root), 0);
				assert_memory_equal(root, h, sizeof h);
			}
	}
}

static void
test_cover(void **state)
{
	uint32_t a, c;

	(void)state;
	/* An aligned 4 KiB read of a t = 1 payload: 5 chunks. */
	assert_int_equal(bft_tree_cover(32848, 80, 4096, &a, &c), 0);
	assert_int_equal(a, 0);
	assert_int_equal(c, 5);
	assert_int_equal(bft_tree_slice_len(32848, a, c), 5 * 1024);
	assert_int_equal(bft_tree_cover(32848, 80 + 28672, 4096, &a, &c), 0);
	assert_int_equal(a, 28);
	assert_int_equal(c, 5);
	/* The last chunk is short. */
	assert_int_equal(bft_tree_slice_len(32848, a, c), 32848 - 28 * 1024);
	assert_int_equal(bft_tree_cover(32848, 1024, 1024, &a, &c), 0);
	assert_int_equal(a, 1);
	assert_int_equal(c, 1);
	assert_int_equal(bft_tree_cover(32848, 1023, 2, &a, &c), 0);
	assert_int_equal(a, 0);
	assert_int_equal(c, 2);
	assert_int_equal(bft_tree_cover(32848, 0, 0, &a, &c), -EINVAL);
	assert_int_equal(bft_tree_cover(32848, 32848, 1, &a, &c), -EINVAL);
	assert_int_equal(bft_tree_cover(32848, 32000, 849, &a, &c), -EINVAL);
	assert_int_equal(bft_tree_cover(32848, SIZE_MAX, 2, &a, &c), -EINVAL);
}

static void
test_ranges_outside_refused(void **state)
{
	static uint8_t data[32848];
	uint8_t proof[BFT_TREE_PROOF_MAX][BFT_HASH_LEN], root[BFT_HASH_LEN];
	const size_t len = sizeof data;

	(void)state;
	assert_int_equal(bft_tree_chunks(len), 33);
	assert_int_equal(bft_tree_prove(data, len, 0, 0, proof), -EINVAL);
	assert_int_equal(bft_tree_prove(data, len, 33, 1, proof), -EINVAL);
	assert_int_equal(bft_tree_prove(data, len, 30, 4, proof), -EINVAL);
	assert_int_equal(bft_tree_prove(data, len, UINT32_MAX, 2, proof),
	    -EINVAL);
	assert_int_equal(bft_tree_prove(data, len, 1, UINT32_MAX, proof),
	    -EINVAL);
	assert_int_equal(bft_tree_proof_cvs(BFT_MAX_FRAG + 1, 0, 1), -EINVAL);
	assert_int_equal(bft_tree_slice_len(len, 32, 2), 0);
	assert_int_equal(bft_tree_root(data, len, 32, 2, NULL, 0, root),
	    -EINVAL);
}

/* Whether slice and proof, taken as chunks [a, a + c), give h. */
static bool
gives(const uint8_t *slice, size_t len, uint32_t a, uint32_t c,
    uint8_t proof[][BFT_HASH_LEN], unsigned k, const uint8_t *h)
{
	uint8_t root[BFT_HASH_LEN];

	if (bft_tree_root(slice, len, a, c,
	    (const uint8_t (*)[BFT_HASH_LEN])proof, k, root) != 0)
		return false;
	return memcmp(root, h, BFT_HASH_LEN) == 0;
}

/*
 * A server's lies about chunks [a, a + c) of the fragment at t = 1 and
 * of a two-chunk one, every kind tried at every place.
 */
static void
test_lies_refused(void **state)
{
	static uint8_t data[32848], other[32848], bent[BFT_MAX_FRAG];
	uint8_t proof[BFT_TREE_PROOF_MAX + 1][BFT_HASH_LEN];
	uint8_t alt[BFT_TREE_PROOF_MAX + 1][BFT_HASH_LEN];
	uint8_t h[BFT_HASH_LEN];
	const size_t lens[] = { sizeof data, 2048, 1025 };

	(void)state;
	for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
		size_t len = lens[l];
		uint32_t n = bft_tree_chunks(len);

		fill(data, len, 1);
		fill(other, len, 2);
		bft_hash(data, len, h);
		for (uint32_t a = 0; a < n; a++)
			for (uint32_t c = 1; c <= n - a && c <= 6; c++) {
				int k = bft_tree_prove(data, len, a, c, proof);
				size_t sl = bft_tree_slice_len(len, a, c);
				int k2;

				assert_true(gives(chunk_at(data, a), len, a, c,
				    proof, (unsigned)k, h));
				/* Another fragment's chunks, its own proof. */
				k2 = bft_tree_prove(other, len, a, c, alt);
				assert_false(gives(chunk_at(other, a), len, a,
				    c, alt, (unsigned)k2, h));
				/* Its chunks with this proof. */
				assert_false(gives(chunk_at(other, a), len, a,
				    c, proof, (unsigned)k, h));
				/*
				 * The chunks of the next place, with their
				 * own valid proof, said to be these.
				 */
				if (a + 1 + c <= n && bft_tree_slice_len(len,
				    a + 1, c) == sl) {
					k2 = bft_tree_prove(data, len, a + 1,
					    c, alt);
					assert_false(gives(chunk_at(data,
					    a + 1), len, a, c, alt,
					    (unsigned)k2, h));
				}
				/* One bit of the slice, here and there. */
				memcpy(bent, chunk_at(data, a), sl);
				for (size_t b = 0; b < sl; b += 331) {
					bent[b] ^= 0x10;
					assert_false(gives(bent, len, a, c,
					    proof, (unsigned)k, h));
					bent[b] ^= 0x10;
				}
				/* One bit of each CV. */
				for (int i = 0; i < k; i++) {
					proof[i][i % BFT_HASH_LEN] ^= 1;
					assert_false(gives(chunk_at(data, a),
					    len, a, c, proof, (unsigned)k, h));
					proof[i][i % BFT_HASH_LEN] ^= 1;
				}
				/* Two CVs swapped. */
				if (k >= 2) {
					memcpy(alt, proof, (size_t)k *
					    BFT_HASH_LEN);
					memcpy(alt[0], proof[k - 1],
					    BFT_HASH_LEN);
					memcpy(alt[k - 1], proof[0],
					    BFT_HASH_LEN);
					assert_false(gives(chunk_at(data, a),
					    len, a, c, alt, (unsigned)k, h));
				}
				/* One CV too few, one too many. */
				if (k >= 1) {
					assert_int_equal(bft_tree_root(
					    chunk_at(data, a), len, a, c,
					    (const uint8_t (*)[BFT_HASH_LEN])
					    proof, (unsigned)k - 1, bent),
					    -EINVAL);
				}
				assert_int_equal(bft_tree_root(chunk_at(data,
				    a), len, a, c, (const uint8_t (*)[
				    BFT_HASH_LEN])proof, (unsigned)k + 1,
				    bent), -EINVAL);
			}
	}
}

/*
 * The root of a tree is compressed with ROOT and its inner nodes are
 * not: a subtree's CV is never the hash of the bytes under it, so a
 * server cannot pass off the hash of a part as a CV of the whole or
 * the other way round.
 */
static void
test_root_is_not_a_cv(void **state)
{
	static uint8_t data[2048];
	uint8_t proof[BFT_TREE_PROOF_MAX][BFT_HASH_LEN];
	uint8_t h_left[BFT_HASH_LEN], h[BFT_HASH_LEN];

	(void)state;
	fill(data, sizeof data, 3);
	bft_hash(data, sizeof data, h);
	bft_hash(data, 1024, h_left);
	/* The proof of chunk 1 is chunk 0's CV, not chunk 0's hash. */
	assert_int_equal(bft_tree_prove(data, sizeof data, 1, 1, proof), 1);
	assert_memory_not_equal(proof[0], h_left, BFT_HASH_LEN);
	memcpy(proof[0], h_left, BFT_HASH_LEN);
	assert_false(gives(chunk_at(data, 1), sizeof data, 1, 1, proof, 1,
	    h));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_input_is_its_hash),
		cmocka_unit_test(test_every_range_proves),
		cmocka_unit_test(test_cover),
		cmocka_unit_test(test_ranges_outside_refused),
		cmocka_unit_test(test_lies_refused),
		cmocka_unit_test(test_root_is_not_a_cv),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
