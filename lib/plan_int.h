/*
 * The plan of a request: its 64 KiB blocks, CHUNK at a time to bound
 * memory, each an op over the caller's buffer (a whole block) or over a
 * bounce buffer (a block the request covers in part).  Pure: no I/O,
 * no lock.  The read path (read.c) and the write path (write.c) both
 * start here.
 */
#ifndef BFTBLK_PLAN_INT_H
#define BFTBLK_PLAN_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "engine_int.h"

/*
 * Blocks in flight per request: 32 * (64 KiB + n fragments, + a sealed
 * value with encrypt=on) of memory.
 */
#define CHUNK 32
_Static_assert(CHUNK <= BFT_RUN_MAX, "a chunk must fit bftblk__engine_run");

/* The bytes of one write request: [offset, offset+count) of the disk. */
struct wpatch {
	const uint8_t *src;		/* NULL: zeros */
	uint32_t count;
	uint64_t offset;
	struct wpatch *next;
};

struct plan {
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
int bftblk__plan_init(struct plan *p, struct bft_engine *cl, uint64_t b,
    unsigned nb, uint64_t off, uint64_t len, const uint8_t *src,
    enum op_kind kind);
void bftblk__plan_free(struct plan *p);

/* The overlap of block b with [off, off+len), as offsets. */
void bftblk__plan_overlap(uint64_t b, uint64_t off, uint64_t len,
    uint64_t *in_block, uint64_t *in_buf, uint64_t *n);

/* Applies the bytes (or zeros) of every request in list to block b's value. */
void bftblk__plan_patch(uint8_t *value, uint64_t b, const struct wpatch *list);

#endif
