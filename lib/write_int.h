/* The write path of pwrite, zero and trim; and flush. */
#ifndef BFTBLK_WRITE_INT_H
#define BFTBLK_WRITE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "blockcache_int.h"
#include "engine_int.h"

/*
 * Writes src (or zeros when src is NULL) to [offset, offset+count),
 * then flushes when fua.  Partial blocks take their current value from
 * bc (may be NULL: no cache) or a read.  0, or -1 with the error recorded
 * set.
 */
int bftblk__io_write(struct bft_engine *cl, struct bft_blockcache *bc,
    const uint8_t *src, uint32_t count, uint64_t offset, bool fua);

/* FLUSH to n-t servers.  0, or -1 with the error recorded set. */
int bftblk__io_flush(struct bft_engine *cl);

#endif
