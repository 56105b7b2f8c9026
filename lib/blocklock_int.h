/*
 * Serialises writes to the same blocks inside this process.  A
 * read-modify-write must not interleave with another write of the block,
 * and two concurrent writes by one writer would pick the same timestamp.
 * A request locks its whole block range at once, so no lock order
 * exists to get wrong.
 */
#ifndef BFTBLK_BLOCKLOCK_INT_H
#define BFTBLK_BLOCKLOCK_INT_H

#include <stdint.h>

struct block_range {
	uint64_t first, last;
	struct block_range *next;
};

void block_lock(struct block_range *r, uint64_t first, uint64_t last);
void block_unlock(struct block_range *r);

#endif
