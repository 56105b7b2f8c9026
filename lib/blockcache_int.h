/*
 * A bounded cache of block contents, each tagged with the timestamp of
 * the write that wrote it: it lets a partial write of a cached block
 * skip the read of its read-modify-write (see nbd-plugin/write.c and
 * the README's design notes).
 *
 * What the cache promises is only that every entry is a genuine pair:
 * data is exactly the value the register took at timestamp ts (a write
 * this plugin completed, or a candidate a read returned).  It never
 * promises that ts is still the block's newest: the write that uses an
 * entry validates that against the servers (op_write.c), so safety
 * never depends on what the cache evicts, keeps or loses.
 *
 * Only partial writes (and the reads they need) add blocks; whole-block
 * writes and reads refresh what is there.  Entries are replaced by
 * CLOCK sweep; buffers are allocated on first
 * use, so memory grows with the blocks written, up to the capacity.
 * Thread-safe: one mutex, held for a lookup and one 64 KiB copy.
 */
#ifndef BFTBLK_BLOCKCACHE_INT_H
#define BFTBLK_BLOCKCACHE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"

struct bft_blockcache;

/*
 * A cache of bytes / BFT_BLOCK_SIZE blocks.  NULL when that is zero
 * (the cache is off) or on ENOMEM; every function below accepts NULL
 * and then caches nothing.
 */
struct bft_blockcache *bftblk__bc_new(uint64_t bytes);
void bftblk__bc_free(struct bft_blockcache *bc);

/*
 * On a hit copies the block's BFT_BLOCK_SIZE bytes to out and its
 * timestamp to ts and returns true; false on a miss.
 */
bool bftblk__bc_get(struct bft_blockcache *bc, uint64_t block, uint8_t *out,
    struct bft_ts *ts);

/*
 * Records that block holds data at ts.  An entry with a newer ts is
 * kept: a read that began before one of our writes completed may end
 * after it with the older value, and both pairs are genuine, the newer
 * one simply more useful.  Memory that cannot be allocated leaves the
 * block uncached.
 */
void bftblk__bc_put(struct bft_blockcache *bc, uint64_t block,
    const struct bft_ts *ts, const uint8_t *data);

/*
 * As bftblk__bc_put, but only for a block already cached.  Whole-block
 * writes and plain reads use it: copying every block they move into
 * the cache cost 6-7% of the plugin's CPU (perf, seq-write and
 * seq-read 64k), for blocks a small write may never touch.
 */
void bftblk__bc_refresh(struct bft_blockcache *bc, uint64_t block,
    const struct bft_ts *ts, const uint8_t *data);

/* Forgets block (a write of it failed: its register may hold anything). */
void bftblk__bc_drop(struct bft_blockcache *bc, uint64_t block);

/* Blocks cached now, and the most it holds. */
uint32_t bftblk__bc_count(struct bft_blockcache *bc);
uint32_t bftblk__bc_capacity(const struct bft_blockcache *bc);

#endif
