/*
 * Taking the files of compacted segments again (store_reuse.c): what
 * replay needs to know about a file that may hold an earlier use's
 * records past the end of its own.  Shared by the store and its tests.
 */
#ifndef BFTBLK_STORE_REUSE_H
#define BFTBLK_STORE_REUSE_H

#include <stdbool.h>
#include <stdint.h>

#include "store_log.h"

/* Spare files kept for the next segments: 4 x 64 MiB of disk at most. */
#define BFT_STORE_MAX_SPARES	4

/* What a record met in log order says about the file it is in. */
enum bft_rec_order {
	BFT_ORDER_NEXT,		/* the log's next record */
	BFT_ORDER_SKIP,		/* damaged, length sound: neither */
	BFT_ORDER_STALE,	/* the file's earlier use: the log ended */
	BFT_ORDER_END,		/* no record here: replay decides */
};

/*
 * rs and seq are what a check of the record's metadata found (seq only
 * for BFT_REC_OK); prev is the highest sequence number of a record
 * accepted before it, in this segment or an earlier one.  Sequence
 * numbers grow with every append, and a segment takes only appends, so
 * a sound record not above prev was written before every record
 * accepted so far: it is what the file held before it was reused.  A
 * damaged record's seq is not believed either way.
 */
enum bft_rec_order bft_rec_order(enum bft_rec_status rs, uint64_t seq,
				 uint64_t prev);

/* "spare-NNNNNN": the name a compacted segment's file waits under. */
void bft_spare_name(char *buf, uint32_t no);
bool bft_spare_parse_name(const char *name, uint32_t *no);

#endif
