/*
 * Private to wire.c (encoding) and wire_decode.c (decoding): the
 * per-type tables and rules both must apply alike.
 */
#ifndef BFTBLK_WIRE_INT_H
#define BFTBLK_WIRE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "wire.h"

/* Array lengths by type & 0x7f; replies with status != 0 have 4. */
extern const uint8_t bft_wire_req_len[BFT_MSG_TYPE_MAX + 1];
extern const uint8_t bft_wire_rep_len[BFT_MSG_TYPE_MAX + 1];

/*
 * A known type's index, 0 .. BFT_MSG_NTYPES-1: requests first, then
 * their replies in the same order.  -1 for anything else.
 */
int bft_wire_type_index(uint8_t type);

/* Requests that concern no block: their block is always 0. */
static inline bool
bft_wire_no_block(unsigned base)
{
	return base == BFT_HELLO || base == BFT_FLUSH || base == BFT_STATUS ||
	    base == BFT_SCRUB || base == BFT_FINALIZE;
}

/*
 * SUMMARY's bounds: 1 <= count, 1 <= span, and ceil(count/span) ranges
 * at most BFT_SUMMARY_MAX.
 */
bool bft_wire_summary_ok(uint32_t count, uint32_t span);
/* A slice COLLECT's bounds: 1 <= count, first + count <= BFT_TREE_MAX_CHUNKS. */
bool bft_wire_slice_ok(uint32_t first, uint32_t count);

#endif
