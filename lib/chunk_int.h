/*
 * Requests split into 64 KiB blocks, run CHUNK blocks at a time to
 * bound memory: the op set of one chunk, and running reads and writes
 * of it.  Shared by pread (plugin.c) and the write path (write.c).
 */
#ifndef BFTBLK_CHUNK_INT_H
#define BFTBLK_CHUNK_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "blockcache_int.h"
#include "engine_int.h"

/*
 * Blocks in flight per request: 32 * (64 KiB + n fragments, + a sealed
 * value with encrypt=on) of memory.
 */
#define CHUNK 32
_Static_assert(CHUNK <= BFT_RUN_MAX, "a chunk must fit bft_engine_run");

struct chunk {
	struct op *ops[CHUNK];
	uint8_t *tmp[CHUNK];		/* block buffers for partial blocks */
	unsigned nops;
};

/*
 * Sets up ops for blocks [b, b+nb).  A block fully inside [off, off+len)
 * uses the caller's buffer directly (or a shared zero block for a write
 * without src); others get a bounce buffer in tmp.  0, or -1 with the
 * error recorded (error_int.h).
 */
int chunk_init(struct chunk *c, struct bft_engine *cl, uint64_t b,
    unsigned nb, uint64_t off, uint64_t len, const uint8_t *src,
    enum op_kind kind);
void chunk_free(struct chunk *c);

/* The overlap of block b with [off, off+len), as offsets. */
void chunk_overlap(uint64_t b, uint64_t off, uint64_t len, uint64_t *in_block,
    uint64_t *in_buf, uint64_t *n);

/* Runs ops to completion; the first failure becomes the request's error. */
int chunk_run(struct bft_engine *cl, struct op **ops, unsigned nops);

/*
 * Reads ops' blocks into their data and records each value in bc with
 * its timestamp: added when insert (a read-modify-write's), else only
 * refreshed if cached.  0, or -1 with the error recorded (error_int.h).
 */
int chunk_read(struct bft_engine *cl, struct bft_blockcache *bc,
    struct op **ops, unsigned nops, bool insert);

/*
 * Reads [offset, offset+count) into buf, CHUNK blocks at a time; values
 * read only refresh blocks already in bc.  0, or -1 with the error
 * recorded.
 */
int io_read(struct bft_engine *cl, struct bft_blockcache *bc, uint8_t *buf,
    uint64_t count, uint64_t offset);

#endif
