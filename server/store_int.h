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

/*
 * One block's state in memory, sized by the store's n: lc (ts, nonce,
 * then its vec's n rows in tail) and, once the block has had a Hist
 * entry, room for one in tail (inl); entries past that one live in
 * more, an array of exactly morecap entries of st->hent_size bytes.
 * Nothing is BFT_MAX_N wide: at n = 4, a block with lc and one entry
 * is one 424-byte allocation, where the full structs took 2,048 (352
 * for lc and the rest, room for two 848-byte entries).
 *
 * The one entry inline is the steady state: an overwrite adds a second
 * (STORE) and drops the first (COMPLETE), and that churn goes through
 * more, allocated and freed at the same small size, so the block
 * itself never moves.  Reallocating the whole block by one entry and
 * back instead left the heap 50% fragmented after two overwrites
 * (668 bytes of RSS per block against 449 after the fill).
 *
 * The public structs are filled from it only when asked (lc_expand,
 * hent_expand in store.c).
 */
struct blk {
	uint64_t lc_loc;		/* lc's record, 0 if none */
	struct bft_ts lc_ts;		/* zero: never completed (c0) */
	uint8_t *more;			/* entries inl .. nhist - 1 */
	uint32_t nhist;
	uint32_t morecap : 31, inl : 1;
	uint8_t lc_nonce[BFT_NONCE_LEN];
	uint8_t tail[];			/* lc vec[n], then one entry if inl */
};

/* A Hist entry in blk's tail, followed by vec[n] and cc[n] rows. */
struct hent {
	uint64_t loc;			/* its record */
	struct bft_ts ts;
	uint8_t nh[BFT_HASH_LEN];
	uint32_t frag_len;
	uint32_t pad;
};

#define HENT_SIZE(n)	(sizeof(struct hent) + \
	(size_t)(n) * (BFT_MAC_LEN + BFT_HASH_LEN))

struct bft_store {
	char *dir;
	int dirfd;
	struct bft_store_identity id;
	unsigned n;
	size_t hent_size;		/* HENT_SIZE(n) */
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

static inline struct hent *
blk_hent(const struct bft_store *st, struct blk *b, unsigned i)
{
	if (i < (unsigned)b->inl)
		return (struct hent *)(b->tail + (size_t)st->n * BFT_MAC_LEN);
	return (struct hent *)(b->more + (size_t)(i - (unsigned)b->inl) *
	    st->hent_size);
}

static inline uint8_t *
hent_vec(struct hent *e)
{
	return (uint8_t *)(e + 1);
}

static inline uint8_t *
hent_cc(const struct bft_store *st, struct hent *e)
{
	return (uint8_t *)(e + 1) + (size_t)st->n * BFT_MAC_LEN;
}

/* The segment numbered no, or NULL. */
struct seg *st_seg_find(struct bft_store *st, uint32_t no);
/* Room for one more segment in the table.  0 or -ENOMEM. */
int st_seg_reserve(struct bft_store *st);
/* Creates the next segment, which becomes the active one. */
int st_seg_create(struct bft_store *st);
/*
 * Allocates block's state if needed, with room for extra Hist entries
 * (growing by exactly that).  The answer is st->blocks[block], which
 * may have moved (when it gets its inline entry): pointers taken
 * before are stale.
 */
struct blk *st_blk_reserve(struct bft_store *st, uint64_t block,
			   unsigned extra);
/* Hist[m->ts] = m for block, its record at loc; room was reserved. */
void st_hist_apply(struct bft_store *st, uint64_t block,
		   const struct bft_hist_meta *m, uint64_t loc, size_t len);
/*
 * lc = c for block unless lc is newer, then the GC rule, giving back
 * the room of the entries it dropped; false if c was stale.  The block
 * was reserved.
 */
bool st_lc_apply(struct bft_store *st, uint64_t block,
		 const struct bft_cand *c, uint64_t loc, size_t len);
/*
 * Appends a record at the active segment's tail (a new segment when it
 * would pass seg_max); its location in *loc.  0 or a negative errno.
 */
int st_append_rec(struct bft_store *st, const uint8_t *rec, size_t len,
		  uint64_t *loc);
/* The live bytes of the segment holding loc. */
void st_live_inc(struct bft_store *st, uint64_t loc, size_t len);
void st_live_dec(struct bft_store *st, uint64_t loc, size_t len);
/* Drops b's Hist entry i, its record's bytes no longer live. */
void st_hist_drop(struct bft_store *st, struct blk *b, unsigned i);
/* b's lc as the public struct. */
void st_lc_expand(const struct bft_store *st, const struct blk *b,
		  struct bft_cand *out);

/*
 * store_compact.c: one bounded step of compaction after an append of
 * appended bytes; and the removal of retired segments, right after a
 * sync made their copies durable (0 or a negative errno).
 */
void st_compact_step(struct bft_store *st, size_t appended);
int st_unlink_retired(struct bft_store *st);

/*
 * store_sync.c: hands the retired segments and a sync of the segments
 * holding their copies to a thread; st_bg_sync_wait collects it.
 */
void st_bg_sync_start(struct bft_store *st);
int st_bg_sync_wait(struct bft_store *st);

#endif
