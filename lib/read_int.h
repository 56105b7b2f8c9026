/* The read path of pread, and the reads the write path needs. */
#ifndef BFTBLK_READ_INT_H
#define BFTBLK_READ_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "blockcache_int.h"
#include "engine_int.h"

/*
 * Reads ops' blocks into their data and records each value in bc with
 * its timestamp: added when insert (a read-modify-write's), else only
 * refreshed if cached.  0, or -1 with the error recorded (error_int.h).
 */
int bftblk__read_blocks(struct bft_engine *cl, struct bft_blockcache *bc,
    struct op **ops, unsigned nops, bool insert);

/*
 * Reads [offset, offset+count) into buf, CHUNK blocks at a time; values
 * read only refresh blocks already in bc.  0, or -1 with the error
 * recorded.
 */
int bftblk__io_read(struct bft_engine *cl, struct bft_blockcache *bc,
    uint8_t *buf, uint64_t count, uint64_t offset);

#endif
