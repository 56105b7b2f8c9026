/*
 * What store.c (appends, reads, compaction) and store_open.c (identity,
 * replay) share about the store's insides.  Nothing else includes it.
 */
#ifndef BFTBLK_STORE_INT_H
#define BFTBLK_STORE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define BFT_STORE_DEFAULT_SEGMENT	(64ull << 20)
#define BFT_STORE_MAX_SEGMENT		(1ull << 30)
/*
 * 67: the log holds at most 1.5 times its live bytes (plus the active
 * and retired segments).  At 50 it held twice: a disk written once and
 * overwritten once (sequentially) left every segment half live and none
 * compacted (fio-jobs/bench-store, 8 GiB, 2026-11-25).
 */
#define BFT_STORE_DEFAULT_PCT		67u

/*
 * A record's location: segment number in the high half, offset in the
 * low half.  Segments never pass 4 GiB, and number 0 is never used, so
 * loc 0 means "no record".
 */
#define LOC(no, off)	((uint64_t)(no) << 32 | (uint64_t)(off))
#define LOC_SEG(loc)	((uint32_t)((loc) >> 32))
#define LOC_OFF(loc)	((uint64_t)(uint32_t)(loc))

struct seg {
	uint32_t no;
	int fd;
	uint64_t size;		/* where the next append goes */
	uint64_t end;		/* end of the records replay accepted */
	uint64_t live;		/* bytes of records memory still points to */
	bool dirty;		/* written since the last sync */
	bool stuck;		/* compaction could not parse it: keep it */
	bool retired;		/* compacted: unlink once copies are synced */
};

struct blk {
	struct bft_block_state pub;	/* first: bft_store_block's answer */
	unsigned cap;
	uint64_t lc_loc;
};

struct bft_store {
	char *dir;
	int dirfd;
	struct bft_store_identity id;
	unsigned n;
	uint64_t seg_max;
	unsigned compact_pct;
	struct blk **blocks;		/* nblocks pointers, NULL until written */
	struct seg *segs;		/* ascending numbers; last is active */
	size_t nseg, segcap;
	size_t nretired;		/* segments waiting for a sync to go */
	bool dir_dirty;			/* segments created or removed */
	bool tail_dirty;		/* junk past the active segment's size */
	uint64_t next_seq;
	uint8_t *wbuf, *rbuf;		/* one record each */
	uint32_t cmp_no;		/* segment being compacted, or 0 */
	uint64_t cmp_off;
	bool cmp_failing;		/* its error is logged already */
	uint64_t replayed, compactions, copied;
	uint64_t syncs, fsyncs;		/* bft_store_sync; fsync/fdatasync calls */
	uint64_t held;			/* blocks whose lc is not c0 */
	struct bft_store_replay rp;
	bool created;			/* this open made the identity file */
	struct bg_job *bg_job;		/* background sync, or NULL */
	pthread_t bg_thread;
};

/* The segment numbered no, or NULL. */
struct seg *st_seg_find(struct bft_store *st, uint32_t no);
/* Room for one more segment in the table.  0 or -ENOMEM. */
int st_seg_reserve(struct bft_store *st);
/* Creates the next segment, which becomes the active one. */
int st_seg_create(struct bft_store *st);
/* Allocates block's state if needed, with room for extra Hist entries. */
struct blk *st_blk_reserve(struct bft_store *st, uint64_t block,
			   unsigned extra);
/* Hist[m->ts] = m, its record at loc; room was reserved. */
void st_hist_apply(struct bft_store *st, struct blk *b,
		   const struct bft_hist_meta *m, uint64_t loc, size_t len);
/* lc = c unless lc is newer, then the GC rule; false if c was stale. */
bool st_lc_apply(struct bft_store *st, struct blk *b, const struct bft_cand *c,
		 uint64_t loc, size_t len);

/*
 * store_sync.c: hands the retired segments and a sync of the segments
 * holding their copies to a thread; st_bg_sync_wait collects it.
 */
void st_bg_sync_start(struct bft_store *st);
int st_bg_sync_wait(struct bft_store *st);

#endif
