/*
 * Requests split into 64 KiB blocks, run CHUNK blocks at a time to
 * bound memory: the op set of one chunk, and running reads and writes
 * of it.  Shared by pread (plugin.c) and the write path (write.c).
 */
#ifndef BFTBLK_CHUNK_H
#define BFTBLK_CHUNK_H

#include <stdbool.h>
#include <stdint.h>

#include "blockcache.h"
#include "client.h"

/*
 * Blocks in flight per request: 32 * (64 KiB + n fragments, + a sealed
 * value with encrypt=on) of memory.
 */
#define CHUNK 32
_Static_assert(CHUNK <= BFT_RUN_MAX, "a chunk must fit bft_client_run");

struct chunk {
	struct op *ops[CHUNK];
	uint8_t *tmp[CHUNK];		/* block buffers for partial blocks */
	unsigned nops;
};

/*
 * Sets up ops for blocks [b, b+nb).  A block fully inside [off, off+len)
 * uses the caller's buffer directly (or a shared zero block for a write
 * without src); others get a bounce buffer in tmp.  0, or -1 with the
 * nbdkit error set.
 */
int chunk_init(struct chunk *c, struct bft_client *cl, uint64_t b,
    unsigned nb, uint64_t off, uint64_t len, const uint8_t *src,
    enum op_kind kind);
void chunk_free(struct chunk *c);

/* The overlap of block b with [off, off+len), as offsets. */
void overlap(uint64_t b, uint64_t off, uint64_t len, uint64_t *in_block,
    uint64_t *in_buf, uint64_t *n);

/*
 * Sets the nbdkit error of this thread's request and remembers it, for
 * a request that fails on behalf of others (coalesce.h).  Returns -1.
 */
int chunk_fail(int err);
/*
 * The errno of this thread's last chunk_fail, which it forgets, so a
 * later failure can never report an earlier one's errno (EIO if none).
 */
int chunk_last_error(void);

/* Runs ops to completion; the first failure becomes the request's error. */
int run_ops(struct bft_client *cl, struct op **ops, unsigned nops);

/*
 * Reads ops' blocks into their data and records each value in bc with
 * its timestamp: added when insert (a read-modify-write's), else only
 * refreshed if cached.  0, or -1 with the nbdkit error set.
 */
int read_blocks(struct bft_client *cl, struct bft_blockcache *bc,
    struct op **ops, unsigned nops, bool insert);

#endif
