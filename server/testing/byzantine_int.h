/*
 * Private to server/testing/byzantine*.c: the server-wide state of the Byzantine
 * test modes, shared by the plumbing (byzantine.c: modes, connections,
 * held replies) and the lies themselves (byzantine_lies.c).
 */
#ifndef BFTBLK_BYZANTINE_INT_H
#define BFTBLK_BYZANTINE_INT_H

#include <stdint.h>

#include "byzantine.h"
#include "hashtree.h"

#define BYZ_NMODES	15
/* lie-heal's buffer: the longest LCLIST_ACK, and any SUMMARY_ACK. */
#define BYZ_INFO_LEN	(BFT_LCLIST_MAX * BFT_LCENTRY_LEN)
_Static_assert(BYZ_INFO_LEN >= BFT_SUMMARY_MAX * BFT_SUMMARY_DIGEST_LEN,
    "the lie-heal buffer holds the longest SUMMARY_ACK too");

/* A block at the rollback point: the first completed value seen. */
struct snap {
	struct bft_cand lc;
	struct bft_hist_meta meta;	/* Hist[lc.ts], whose fragment is frag */
	uint8_t *frag;
};

struct bft_byz {
	uv_loop_t *loop;
	struct bft_handler *h;
	unsigned modes, n, self;
	uint64_t seed, rng, nconns;
	uint32_t frag_len;		/* of STOREs: forged fragments look real */
	struct snap **snaps;		/* nblocks entries, for stale answers */
	uint64_t snap_bytes, held_bytes;
	uint8_t *fragbuf;
	uint8_t proof[BFT_TREE_PROOF_MAX][BFT_HASH_LEN];	/* a slice's */
	uint8_t *infobuf;		/* lie-heal's digests and entries */
	uint64_t hits[BYZ_NMODES];	/* replies each mode changed */
	uint64_t dropped, delayed, overflow;
};

/* splitmix64 of *s: every forged byte comes from the seed, for replays. */
uint64_t byz_next_rand(uint64_t *s);
/* len bytes of byz_next_rand(s) into buf. */
void byz_fill(uint64_t *s, void *buf, size_t len);
/* Counts a reply that mode changed. */
void byz_hit(struct bft_byz *b, unsigned mode);

/* Rewrites the honest reply rep to req as modes say (byzantine_lies.c). */
void byz_rewrite(struct bft_byz *b, unsigned modes,
    const struct bft_msg *req, struct bft_msg *rep);
/* Keeps block's rollback point for the stale modes. */
void byz_snapshot(struct bft_byz *b, uint64_t block);

#endif
