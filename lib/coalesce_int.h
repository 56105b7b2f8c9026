/*
 * Group commit of small writes to one block.  A write that covers part
 * of a single block, arriving while another such write of that block is
 * being written, waits in the block's queue instead of taking its own
 * turn.  When the running write finishes, one waiter becomes the leader:
 * it takes every patch queued so far, builds the block once and writes
 * it once, and every submitter it took returns with that write's result.
 * So sixteen 4 KiB writes in flight to one block cost about two block
 * writes instead of sixteen.
 *
 * Each request is still atomic and linearizable: its patch is applied
 * by a write that begins after the request arrived and completes before
 * it returns.  NBD orders no two requests in flight together, so patches
 * that overlap apply in arrival order.
 */
#ifndef BFTBLK_COALESCE_INT_H
#define BFTBLK_COALESCE_INT_H

#include <stdint.h>

/* The bytes of one request: [offset, offset+count) of the disk. */
struct wpatch {
	const uint8_t *src;		/* NULL: zeros */
	uint32_t count;
	uint64_t offset;
	struct wpatch *next;
};

/*
 * Writes block with every patch of list applied in order, over its
 * current value.  0, or the errno every request of the batch fails with,
 * its reason recorded (lib_fail).
 */
typedef int (*coalesce_write_fn)(void *ctx, uint64_t block,
    const struct wpatch *list);

/*
 * Applies p (which must lie inside block) together with whatever else
 * is queued for block, through write.  Returns write's result (0 or an
 * errno, with write's reason recorded on this thread too) for the batch
 * p went out in, and adds to *merged the patches that rode along
 * with this caller's when it led.  The caller's buffer must stay valid
 * until it returns, which it does.
 */
int coalesce_write(uint64_t block, struct wpatch *p, coalesce_write_fn write,
    void *ctx, unsigned *merged);

#endif
