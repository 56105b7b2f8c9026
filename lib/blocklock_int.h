/*
 * Serialises one engine's writes to the same blocks.  A
 * read-modify-write must not interleave with another write of the block,
 * and two concurrent writes by one writer would pick the same timestamp.
 * A request locks its whole block range at once, so no lock order
 * exists to get wrong.  Ranges are of addresses (proto.h).
 */
#ifndef BFTBLK_BLOCKLOCK_INT_H
#define BFTBLK_BLOCKLOCK_INT_H

#include <pthread.h>
#include <stdint.h>

struct block_range {
	uint64_t first, last;
	struct block_range *next;
};

/* The ranges an engine's requests hold. */
struct block_locks {
	pthread_mutex_t lock;
	pthread_cond_t released;
	struct block_range *held;
};

void bftblk__block_locks_init(struct block_locks *bl);
void bftblk__block_locks_destroy(struct block_locks *bl);
void bftblk__block_lock(struct block_locks *bl, struct block_range *r,
    uint64_t first, uint64_t last);
void bftblk__block_unlock(struct block_locks *bl, struct block_range *r);

#endif
