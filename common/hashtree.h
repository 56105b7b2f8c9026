/*
 * Verified slices of a fragment: part of it checked against its BLAKE3
 * hash without the rest.
 *
 * H (bft_hash) is BLAKE3-256, which is itself a hash tree: the input is
 * cut into 1 KiB chunks, each chunk's chaining value (CV) is compressed
 * with its index as the counter, and pairs of CVs are compressed into a
 * parent, up to the root, whose compression alone takes the ROOT flag.
 * The tree's shape follows from the input's length only: a node over c
 * > 1 chunks has the largest power of two below c on its left.  So
 * whoever holds the whole fragment can send the chunks [first, first +
 * count) together with the CVs of the subtrees beside their path (a
 * proof), and whoever knows the fragment's length and its hash checks
 * the chunks by computing the root from them: BLAKE3's verified
 * streaming ("Bao" in BLAKE3's paper), here over one short range.
 *
 * The proof is the CVs of the maximal subtrees that hold no chunk of
 * the slice, in the order a depth-first walk from the root, left before
 * right, meets them.  Both ends walk the same tree, so no position is
 * sent: a chunk's place is the counter it is compressed with, and a CV
 * stands for the one subtree the walk expects there.  Why a root equal
 * to the fragment's hash proves the chunks are the fragment's is in the
 * README's design notes ("Part reads of a slice").
 *
 * All functions are pure (no state, no allocation) and thread-safe.
 */
#ifndef BFTBLK_HASHTREE_H
#define BFTBLK_HASHTREE_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define BFT_TREE_CHUNK		1024u
/* Chunks of the longest fragment. */
#define BFT_TREE_MAX_CHUNKS	((BFT_MAX_FRAG + BFT_TREE_CHUNK - 1) / \
				 BFT_TREE_CHUNK)
/*
 * CVs of a proof at most: two per level below the root (one beside
 * each end of the slice), and a tree of at most 128 chunks has 7.
 */
#define BFT_TREE_PROOF_MAX	14u
_Static_assert(BFT_TREE_MAX_CHUNKS <= 128, "BFT_TREE_PROOF_MAX's depth");

/* The chunks of a len-byte input (an empty one still has one). */
uint32_t bft_tree_chunks(size_t len);

/*
 * The chunks [*first, *first + *count) that hold bytes [off, off + n)
 * of a len-byte input.  Returns 0, or -EINVAL when n is 0 or the bytes
 * are not all inside it.
 */
int bft_tree_cover(size_t len, size_t off, size_t n, uint32_t *first,
    uint32_t *count);

/*
 * The bytes of chunks [first, first + count) of a len-byte input: count
 * whole chunks, less what the last chunk lacks.  0 for a range that is
 * not inside the input.
 */
size_t bft_tree_slice_len(size_t len, uint32_t first, uint32_t count);

/*
 * The number of CVs the proof of chunks [first, first + count) of a
 * len-byte input has, or -EINVAL for a range that is empty or not
 * inside it.
 */
int bft_tree_proof_cvs(size_t len, uint32_t first, uint32_t count);

/*
 * The proof of chunks [first, first + count) of data (len bytes): its
 * CVs to proof, BFT_HASH_LEN bytes each, as many as
 * bft_tree_proof_cvs() says (at most BFT_TREE_PROOF_MAX).  Returns that
 * number, or -EINVAL for a range that is empty or not inside data.
 */
int bft_tree_prove(const uint8_t *data, size_t len, uint32_t first,
    uint32_t count, uint8_t proof[][BFT_HASH_LEN]);

/*
 * The root that slice (bft_tree_slice_len(len, first, count) bytes),
 * taken as chunks [first, first + count) of a len-byte input, gives
 * with the ncvs CVs of proof: equal to bft_hash() of the input when the
 * slice and proof are the input's.  Returns 0, or -EINVAL when the
 * range is not inside the input or ncvs is not the number its proof
 * has.  A wrong slice or proof is not an error here: it gives another
 * root, which the caller's comparison refuses.
 */
int bft_tree_root(const uint8_t *slice, size_t len, uint32_t first,
    uint32_t count, const uint8_t proof[][BFT_HASH_LEN], unsigned ncvs,
    uint8_t root[BFT_HASH_LEN]);

#endif
