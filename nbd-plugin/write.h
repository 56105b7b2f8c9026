/* The write path of pwrite, zero and trim; and flush. */
#ifndef BFTBLK_WRITE_H
#define BFTBLK_WRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "blockcache.h"
#include "client.h"

/*
 * Writes src (or zeros when src is NULL) to [offset, offset+count),
 * then flushes when fua.  Partial blocks take their current value from
 * bc (may be NULL: no cache) or a read.  0, or -1 with the nbdkit error
 * set.
 */
int write_range(struct bft_client *cl, struct bft_blockcache *bc,
    const uint8_t *src, uint32_t count, uint64_t offset, bool fua);

/* FLUSH to n-t servers.  0, or -1 with the nbdkit error set. */
int do_flush(struct bft_client *cl);

#endif
