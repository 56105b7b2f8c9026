/*
 * The block cache: a chained hash table over a fixed array of slots,
 * replaced by CLOCK sweep.  See blockcache_int.h for what it promises.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "blockcache_int.h"

#define NIL UINT32_MAX

struct slot {
	uint64_t block;
	struct bft_ts ts;
	uint8_t *data;			/* BFT_BLOCK_SIZE once allocated */
	uint32_t next;			/* hash chain, or the free list */
	bool used;
	bool ref;			/* CLOCK: used since the hand passed */
};

struct bft_blockcache {
	pthread_mutex_t lock;
	uint32_t cap;			/* slots */
	uint32_t nalloc;		/* slots [0, nalloc) have a buffer */
	uint32_t nused;
	uint32_t hand;
	uint32_t free;			/* allocated, unused slots */
	uint32_t mask;			/* buckets - 1 */
	uint32_t *bucket;
	struct slot *s;
};

static uint32_t
hash(const struct bft_blockcache *bc, uint64_t block)
{
	/* Fibonacci hashing: neighbouring blocks land far apart. */
	return (uint32_t)((block * 0x9e3779b97f4a7c15ull) >> 32) & bc->mask;
}

struct bft_blockcache *
bftblk__bc_new(uint64_t bytes)
{
	uint64_t cap = bytes / BFT_BLOCK_SIZE;
	struct bft_blockcache *bc;
	uint32_t nb = 1;

	if (cap == 0)
		return NULL;
	/* 2^24 blocks is 1 TiB of cache: far beyond any sane setting. */
	if (cap > 1u << 24)
		cap = 1u << 24;
	while (nb < 2 * cap)
		nb <<= 1;
	bc = calloc(1, sizeof *bc);
	if (bc == NULL)
		return NULL;
	bc->cap = (uint32_t)cap;
	bc->mask = nb - 1;
	bc->free = NIL;
	bc->bucket = malloc(nb * sizeof bc->bucket[0]);
	bc->s = calloc(cap, sizeof bc->s[0]);
	if (bc->bucket == NULL || bc->s == NULL)
		goto out_free;
	for (uint32_t i = 0; i < nb; i++)
		bc->bucket[i] = NIL;
	pthread_mutex_init(&bc->lock, NULL);
	return bc;

out_free:
	free(bc->bucket);
	free(bc->s);
	free(bc);
	return NULL;
}

void
bftblk__bc_free(struct bft_blockcache *bc)
{
	if (bc == NULL)
		return;
	for (uint32_t i = 0; i < bc->nalloc; i++)
		free(bc->s[i].data);
	pthread_mutex_destroy(&bc->lock);
	free(bc->bucket);
	free(bc->s);
	free(bc);
}

/* The slot caching block, or NIL.  Lock held. */
static uint32_t
find(const struct bft_blockcache *bc, uint64_t block)
{
	uint32_t i = bc->bucket[hash(bc, block)];

	while (i != NIL && bc->s[i].block != block)
		i = bc->s[i].next;
	return i;
}

/* Takes slot i out of its chain and puts it on the free list.  Lock held. */
static void
unlink_slot(struct bft_blockcache *bc, uint32_t i)
{
	uint32_t *pp = &bc->bucket[hash(bc, bc->s[i].block)];

	while (*pp != i)
		pp = &bc->s[*pp].next;
	*pp = bc->s[i].next;
	bc->s[i].used = false;
	bc->s[i].next = bc->free;
	bc->free = i;
	bc->nused--;
}

/*
 * A slot with a buffer for a new entry: a free one, a new one while
 * under capacity, else the first unreferenced one the hand finds.
 * NIL when a buffer cannot be allocated.  Lock held.
 */
static uint32_t
victim(struct bft_blockcache *bc)
{
	uint32_t i;

	if (bc->free == NIL && bc->nalloc < bc->cap) {
		i = bc->nalloc;
		if ((bc->s[i].data = malloc(BFT_BLOCK_SIZE)) == NULL)
			return NIL;
		bc->nalloc++;
		bc->s[i].next = NIL;
		bc->free = i;
	}
	if (bc->free == NIL) {
		/* Every slot is allocated and used: sweep. */
		for (;;) {
			struct slot *s = &bc->s[bc->hand];

			bc->hand = (bc->hand + 1) % bc->cap;
			if (!s->ref)
				break;
			s->ref = false;
		}
		unlink_slot(bc, (bc->hand + bc->cap - 1) % bc->cap);
	}
	i = bc->free;
	bc->free = bc->s[i].next;
	return i;
}

bool
bftblk__bc_get(struct bft_blockcache *bc, uint64_t block, uint8_t *out,
    struct bft_ts *ts)
{
	uint32_t i;

	if (bc == NULL)
		return false;
	pthread_mutex_lock(&bc->lock);
	i = find(bc, block);
	if (i != NIL) {
		memcpy(out, bc->s[i].data, BFT_BLOCK_SIZE);
		*ts = bc->s[i].ts;
		bc->s[i].ref = true;
	}
	pthread_mutex_unlock(&bc->lock);
	return i != NIL;
}

static void
store(struct bft_blockcache *bc, uint64_t block, const struct bft_ts *ts,
    const uint8_t *data, bool insert)
{
	uint32_t i, h;

	if (bc == NULL)
		return;
	pthread_mutex_lock(&bc->lock);
	i = find(bc, block);
	if (i != NIL) {
		/* Same ts, same value: one timestamp never names two. */
		if (bft_ts_cmp(&bc->s[i].ts, ts) < 0) {
			memcpy(bc->s[i].data, data, BFT_BLOCK_SIZE);
			bc->s[i].ts = *ts;
		}
		bc->s[i].ref = true;
		goto out;
	}
	if (!insert || (i = victim(bc)) == NIL)
		goto out;
	h = hash(bc, block);
	bc->s[i].block = block;
	bc->s[i].ts = *ts;
	memcpy(bc->s[i].data, data, BFT_BLOCK_SIZE);
	/*
	 * Unreferenced: a block written once (a sequential fill) goes
	 * before one written again or hit, which is what a small-write
	 * workload repeats.
	 */
	bc->s[i].ref = false;
	bc->s[i].used = true;
	bc->s[i].next = bc->bucket[h];
	bc->bucket[h] = i;
	bc->nused++;
out:
	pthread_mutex_unlock(&bc->lock);
}

void
bftblk__bc_put(struct bft_blockcache *bc, uint64_t block,
    const struct bft_ts *ts, const uint8_t *data)
{
	store(bc, block, ts, data, true);
}

void
bftblk__bc_refresh(struct bft_blockcache *bc, uint64_t block,
    const struct bft_ts *ts, const uint8_t *data)
{
	store(bc, block, ts, data, false);
}

void
bftblk__bc_drop(struct bft_blockcache *bc, uint64_t block)
{
	uint32_t i;

	if (bc == NULL)
		return;
	pthread_mutex_lock(&bc->lock);
	if ((i = find(bc, block)) != NIL)
		unlink_slot(bc, i);
	pthread_mutex_unlock(&bc->lock);
}

uint32_t
bftblk__bc_count(struct bft_blockcache *bc)
{
	uint32_t n;

	if (bc == NULL)
		return 0;
	pthread_mutex_lock(&bc->lock);
	n = bc->nused;
	pthread_mutex_unlock(&bc->lock);
	return n;
}

uint32_t
bftblk__bc_capacity(const struct bft_blockcache *bc)
{
	return bc == NULL ? 0 : bc->cap;
}
