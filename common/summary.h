/*
 * What a server says about its lc timestamps in SUMMARY and LCLIST
 * (wire.h), computed here so that the server answering and the peer
 * comparing compute it alike.
 *
 * An lc entry is 24 bytes: be64(block) || be64(lc.ts.num) ||
 * be64(lc.ts.wid), the timestamp's MAC left out (the MAC tells nothing
 * about which write a server holds).  The digest of a range of blocks
 * is H (BLAKE3-256) of the entries of its written blocks, those whose
 * lc.ts is not zero, in increasing block order; that is, H of the
 * concatenation of the LCLIST entries of the range.  A range without a
 * written block has the all-zero digest instead, so that "holds
 * nothing here" is recognisable without hashing.
 */
#ifndef BFTBLK_SUMMARY_H
#define BFTBLK_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>

#include "crypto.h"
#include "proto.h"
#include "wire.h"

/* The digest of one range, built block by block. */
struct bft_summary {
	struct bft_hasher hs;
	uint64_t nblocks;		/* written blocks added so far */
};

void bft_summary_init(struct bft_summary *s);
/*
 * Adds block with lc timestamp ts; a zero ts (never written) adds
 * nothing.  Blocks must come in increasing order.
 */
void bft_summary_add(struct bft_summary *s, uint64_t block,
    const struct bft_ts *ts);
/* The range's digest: all zeros when no written block was added. */
void bft_summary_final(const struct bft_summary *s,
    uint8_t out[BFT_SUMMARY_DIGEST_LEN]);

/* Whether a digest is the one of a range with no written block. */
bool bft_summary_is_empty(const uint8_t digest[BFT_SUMMARY_DIGEST_LEN]);

/* How many ranges of span blocks cover count blocks (the last shorter). */
static inline uint32_t
bft_summary_nranges(uint32_t count, uint32_t span)
{
	return span ? (uint32_t)(((uint64_t)count + span - 1) / span) : 0;
}

/* One VOLUMES_ACK entry to and from its 24 bytes (wire.h). */
void bft_volentry_put(uint8_t out[BFT_VOLENTRY_LEN], uint64_t vol,
    uint64_t end, uint64_t live);
void bft_volentry_get(const uint8_t in[BFT_VOLENTRY_LEN], uint64_t *vol,
    uint64_t *end, uint64_t *live);

/* One lc entry to and from its 24 bytes; get leaves ts->mac zero. */
/* A VLIST_ACK's 8-byte record: be64(block). */
void bft_vlentry_put(uint8_t out[BFT_VLENTRY_LEN], uint64_t block);
uint64_t bft_vlentry_get(const uint8_t in[BFT_VLENTRY_LEN]);
void bft_lcentry_put(uint8_t out[BFT_LCENTRY_LEN], uint64_t block,
    const struct bft_ts *ts);
void bft_lcentry_get(const uint8_t in[BFT_LCENTRY_LEN], uint64_t *block,
    struct bft_ts *ts);

#endif
