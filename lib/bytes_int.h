/*
 * Little-endian integers in the registers the library itself writes
 * (the volume table, leases): the same bytes on every host.  And the
 * test for a block of zeros, which the write path and flattening share.
 */
#ifndef BFTBLK_BYTES_INT_H
#define BFTBLK_BYTES_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "proto.h"

/* Whether a BFT_BLOCK_SIZE block is all zeros: memcmp, 4 KiB at a time. */
static inline bool
bftblk__block_zero(const uint8_t *p)
{
	static const uint8_t zeros[4096];

	for (size_t off = 0; off < BFT_BLOCK_SIZE; off += sizeof zeros)
		if (memcmp(p + off, zeros, sizeof zeros) != 0)
			return false;
	return true;
}

static inline void
le_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void
le_put64(uint8_t *p, uint64_t v)
{
	le_put32(p, (uint32_t)v);
	le_put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint32_t
le_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static inline uint64_t
le_get64(const uint8_t *p)
{
	return (uint64_t)le_get32(p) | (uint64_t)le_get32(p + 4) << 32;
}

#endif
