/*
 * Verified slices of a fragment over BLAKE3's own tree (hashtree.h).
 *
 * The compression function and the many-chunks kernel are BLAKE3's
 * (blake3_impl.h, from the sources common/ builds): the CVs here are
 * bit for bit those blake3_hasher computes, which test_hashtree checks
 * against bft_hash() for every range of inputs of many lengths.
 */
#include <errno.h>
#include <string.h>

#include <blake3_impl.h>

#include "hashtree.h"

_Static_assert(BFT_TREE_CHUNK == BLAKE3_CHUNK_LEN, "BLAKE3's chunk");
_Static_assert(BFT_HASH_LEN == BLAKE3_OUT_LEN, "BLAKE3-256");

uint32_t
bft_tree_chunks(size_t len)
{
	return len == 0 ? 1 : (uint32_t)((len + BFT_TREE_CHUNK - 1) /
	    BFT_TREE_CHUNK);
}

static int
range_ok(size_t len, uint32_t first, uint32_t count)
{
	uint32_t n = bft_tree_chunks(len);

	return len <= BFT_MAX_FRAG && count > 0 && first < n &&
	    count <= n - first;
}

int
bft_tree_cover(size_t len, size_t off, size_t n, uint32_t *first,
    uint32_t *count)
{
	if (n == 0 || off > len || n > len - off)
		return -EINVAL;
	*first = (uint32_t)(off / BFT_TREE_CHUNK);
	*count = (uint32_t)((off + n - 1) / BFT_TREE_CHUNK) - *first + 1;
	return 0;
}

size_t
bft_tree_slice_len(size_t len, uint32_t first, uint32_t count)
{
	size_t end;

	if (!range_ok(len, first, count))
		return 0;
	end = (size_t)(first + count) * BFT_TREE_CHUNK;
	return (end < len ? end : len) - (size_t)first * BFT_TREE_CHUNK;
}

/* Chunks on the left of a node over c > 1 chunks. */
static uint32_t
left_chunks(uint32_t c)
{
	return 1u << (31 - __builtin_clz(c - 1));
}

/*
 * Subtrees a walk of [lo, hi) meets that hold no chunk of [a, b): the
 * proof's CVs, in the walk's order.
 */
static int
count_cvs(uint32_t lo, uint32_t hi, uint32_t a, uint32_t b)
{
	uint32_t s;

	if (hi <= a || b <= lo)
		return 1;
	if (hi - lo == 1)
		return 0;
	s = left_chunks(hi - lo);
	return count_cvs(lo, lo + s, a, b) + count_cvs(lo + s, hi, a, b);
}

int
bft_tree_proof_cvs(size_t len, uint32_t first, uint32_t count)
{
	if (!range_ok(len, first, count))
		return -EINVAL;
	return count_cvs(0, bft_tree_chunks(len), first, first + count);
}

#ifdef BFTBLK_BENCH_NOVERIFY
/* H is all zeros in this build (crypto.c): so are its CVs and roots. */
int
bft_tree_prove(const uint8_t *data, size_t len, uint32_t first,
    uint32_t count, uint8_t proof[][BFT_HASH_LEN])
{
	int n = bft_tree_proof_cvs(len, first, count);

	(void)data;
	if (n > 0)
		memset(proof, 0, (size_t)n * BFT_HASH_LEN);
	return n;
}

int
bft_tree_root(const uint8_t *slice, size_t len, uint32_t first,
    uint32_t count, const uint8_t proof[][BFT_HASH_LEN], unsigned ncvs,
    uint8_t root[BFT_HASH_LEN])
{
	(void)slice;
	(void)proof;
	if (bft_tree_proof_cvs(len, first, count) != (int)ncvs)
		return -EINVAL;
	memset(root, 0, BFT_HASH_LEN);
	return 0;
}
#else
/*
 * The CV of chunk index (clen bytes of p, at most a chunk), or with
 * ROOT in flags the hash of an input that is this one chunk.
 */
static void
chunk_cv(const uint8_t *p, size_t clen, uint64_t index, uint8_t flags,
    uint8_t out[BFT_HASH_LEN])
{
	uint32_t cv[8];
	size_t nblocks = clen == 0 ? 1 : (clen + BLAKE3_BLOCK_LEN - 1) /
	    BLAKE3_BLOCK_LEN;

	memcpy(cv, IV, sizeof cv);
	for (size_t b = 0; b < nblocks; b++) {
		uint8_t block[BLAKE3_BLOCK_LEN] = { 0 };
		size_t off = b * BLAKE3_BLOCK_LEN;
		size_t blen = clen - off < BLAKE3_BLOCK_LEN ? clen - off :
		    BLAKE3_BLOCK_LEN;
		uint8_t f = (uint8_t)((b == 0 ? CHUNK_START : 0) |
		    (b == nblocks - 1 ? CHUNK_END | flags : 0));

		if (clen > 0)
			memcpy(block, p + off, blen);
		blake3_compress_in_place(cv, block, (uint8_t)(clen > 0 ?
		    blen : 0), index, f);
	}
	store_cv_words(out, cv);
}

/*
 * The CVs of chunks [lo, hi) of a len-byte input, p pointing at chunk
 * lo: whole chunks all but maybe the input's last, the whole ones many
 * at a time, as blake3_hasher does.
 */
static void
leaf_cvs(const uint8_t *p, size_t len, uint32_t lo, uint32_t hi,
    uint8_t out[][BFT_HASH_LEN])
{
	const uint8_t *inputs[BFT_TREE_MAX_CHUNKS];
	uint32_t whole = hi;

	if (lo >= hi)
		return;
	if ((size_t)hi * BFT_TREE_CHUNK > len)
		whole = hi - 1;
	for (uint32_t c = lo; c < whole; c++)
		inputs[c - lo] = p + (size_t)(c - lo) * BFT_TREE_CHUNK;
	if (whole > lo)
		blake3_hash_many(inputs, whole - lo, BFT_TREE_CHUNK /
		    BLAKE3_BLOCK_LEN, IV, lo, true, 0, CHUNK_START, CHUNK_END,
		    out[0]);
	if (whole < hi)
		chunk_cv(p + (size_t)(whole - lo) * BFT_TREE_CHUNK, len -
		    (size_t)whole * BFT_TREE_CHUNK, whole, 0, out[whole - lo]);
}

static void
parent_cv(const uint8_t left[BFT_HASH_LEN], const uint8_t right[BFT_HASH_LEN],
    uint8_t flags, uint8_t out[BFT_HASH_LEN])
{
	uint8_t block[BLAKE3_BLOCK_LEN];
	uint32_t cv[8];

	memcpy(block, left, BFT_HASH_LEN);
	memcpy(block + BFT_HASH_LEN, right, BFT_HASH_LEN);
	memcpy(cv, IV, sizeof cv);
	blake3_compress_in_place(cv, block, BLAKE3_BLOCK_LEN, 0,
	    (uint8_t)(PARENT | flags));
	store_cv_words(out, cv);
}

/* The CV of the subtree over [lo, hi), from its leaves' CVs. */
static void
subtree_cv(uint8_t leaves[][BFT_HASH_LEN], uint32_t lo, uint32_t hi,
    uint8_t out[BFT_HASH_LEN])
{
	uint8_t l[BFT_HASH_LEN], r[BFT_HASH_LEN];
	uint32_t s;

	if (hi - lo == 1) {
		memcpy(out, leaves[lo], BFT_HASH_LEN);
		return;
	}
	s = left_chunks(hi - lo);
	subtree_cv(leaves, lo, lo + s, l);
	subtree_cv(leaves, lo + s, hi, r);
	parent_cv(l, r, 0, out);
}

static void
prove(uint8_t leaves[][BFT_HASH_LEN], uint32_t lo, uint32_t hi,
    uint32_t a, uint32_t b, uint8_t proof[][BFT_HASH_LEN], unsigned *k)
{
	uint32_t s;

	if (hi <= a || b <= lo) {
		subtree_cv(leaves, lo, hi, proof[(*k)++]);
		return;
	}
	if (hi - lo == 1)
		return;
	s = left_chunks(hi - lo);
	prove(leaves, lo, lo + s, a, b, proof, k);
	prove(leaves, lo + s, hi, a, b, proof, k);
}

int
bft_tree_prove(const uint8_t *data, size_t len, uint32_t first,
    uint32_t count, uint8_t proof[][BFT_HASH_LEN])
{
	uint8_t leaves[BFT_TREE_MAX_CHUNKS][BFT_HASH_LEN];
	uint32_t n = bft_tree_chunks(len);
	unsigned k = 0;

	if (!range_ok(len, first, count))
		return -EINVAL;
	/* The slice's own chunks the walk never reaches for a CV. */
	leaf_cvs(data, len, 0, first, leaves);
	if (first + count < n)
		leaf_cvs(data + (size_t)(first + count) * BFT_TREE_CHUNK, len,
		    first + count, n, leaves + first + count);
	prove(leaves, 0, n, first, first + count, proof, &k);
	return (int)k;
}

/* What the walk of bft_tree_root() reads and where it is. */
struct walk {
	uint32_t a, b;			/* the slice's chunks */
	uint8_t (*leaves)[BFT_HASH_LEN];	/* theirs, from a on */
	const uint8_t (*proof)[BFT_HASH_LEN];
	unsigned ncvs, next;
};

/* The CV of [lo, hi), or with ROOT in flags the root. */
static int
walk_cv(struct walk *w, uint32_t lo, uint32_t hi, uint8_t flags,
    uint8_t out[BFT_HASH_LEN])
{
	uint8_t l[BFT_HASH_LEN], r[BFT_HASH_LEN];
	uint32_t s;

	if (hi <= w->a || w->b <= lo) {
		if (w->next >= w->ncvs)
			return -EINVAL;
		memcpy(out, w->proof[w->next++], BFT_HASH_LEN);
		return 0;
	}
	if (hi - lo == 1) {
		memcpy(out, w->leaves[lo - w->a], BFT_HASH_LEN);
		return 0;
	}
	s = left_chunks(hi - lo);
	if (walk_cv(w, lo, lo + s, 0, l) != 0 ||
	    walk_cv(w, lo + s, hi, 0, r) != 0)
		return -EINVAL;
	parent_cv(l, r, flags, out);
	return 0;
}

int
bft_tree_root(const uint8_t *slice, size_t len, uint32_t first,
    uint32_t count, const uint8_t proof[][BFT_HASH_LEN], unsigned ncvs,
    uint8_t root[BFT_HASH_LEN])
{
	uint8_t leaves[BFT_TREE_MAX_CHUNKS][BFT_HASH_LEN];
	uint32_t n = bft_tree_chunks(len);
	struct walk w = { first, first + count, leaves, proof, ncvs, 0 };

	if (bft_tree_proof_cvs(len, first, count) != (int)ncvs)
		return -EINVAL;
	if (n == 1) {
		/* The input is one chunk: it is the root itself. */
		chunk_cv(slice, len, 0, ROOT, root);
		return 0;
	}
	leaf_cvs(slice, len, first, first + count, leaves);
	return walk_cv(&w, 0, n, ROOT, root);
}
#endif
