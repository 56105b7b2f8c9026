/*
 * What the store's files share about its insides: store.c (the public
 * calls), store_index.c (the per-block index and the side table),
 * store_drop.c (volumes forgotten), store_snap.c, store_retain.c and
 * store_view.c (snapshot views), store_meta.c (metadata read back
 * from the log, and its cache), store_identity.c, store_open.c
 * (replay), store_compact.c, store_sync.c, and store_ckpt.c and
 * store_ckload.c (the index checkpoint).  Nothing else includes it,
 * but for the tests' server/testing/store_discard.c and store_reset.c.
 *
 * Memory holds, per block, only what the hot paths compare: lc.ts with
 * its MAC and where lc's record and Hist[lc.ts]'s record are.  The rest
 * (lc's nonce and MAC vector, a Hist entry's H(N), vector and
 * cross-checksums) is read from the records when asked for, through a
 * bounded cache.  docs/store.md says why and what it costs.
 */
#ifndef BFTBLK_STORE_INT_H
#define BFTBLK_STORE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "store_reuse.h"

#define BFT_STORE_DEFAULT_SEGMENT	(64ull << 20)
#define BFT_STORE_MAX_SEGMENT		(1ull << 30)
/*
 * 70: the log holds at most 1.43 times its live bytes, plus the active
 * and retired segments, which took 67% to 1.525 times (fio-jobs/
 * bench-store, 8 GiB, after two sequential overwrite passes; the
 * fragments alone are 1.5% less than the live bytes).  At 50 it held
 * twice: a disk written once and overwritten once left every segment
 * half live and none compacted.
 */
#define BFT_STORE_DEFAULT_PCT		70u
#define BFT_STORE_DEFAULT_CACHE		(64ull << 20)
#define BFT_STORE_DEFAULT_CKPT		(1ull << 30)
#define BFT_STORE_MIN_PAGE_CACHE	(256ull << 20)

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
	uint64_t live;		/* bytes of records the index points to */
	uint64_t first_seq;	/* its first record's sequence number */
	uint32_t drops;		/* DROP, UNSNAP records: never garbage */
	bool dirty;		/* written since the last sync */
	bool stuck;		/* compaction could not parse it: keep it */
	bool retired;		/* compacted: unlink once copies are synced */
	bool uncached;		/* its pages given back (store_pagecache.c) */
	bool reused;		/* a spare's file: its earlier use past size */
};

/*
 * One block in the index: 56 bytes whatever n is, in pages of IDX_PAGE
 * blocks made when a block in them is first written (st_idx_make), per
 * volume.  lc.ts stays whole, MAC included, so that CLOCK,
 * COMPLETE's and FILTER's comparisons and the SUMMARY and LCLIST walks
 * (which send the MAC) need no I/O.  Hist[lc.ts], the entry that backs
 * lc, is found by h_loc; entries above lc (STOREs not yet completed)
 * are in the side table, and entries below lc do not exist (the GC
 * rule).  HELD caches validByHist(lc, Hist[lc.ts]), set at every change
 * of either, so that "does this server hold lc" is RAM-only.  Where the
 * change has not both at hand (an entry stored under lc.ts, which
 * replay meets for every copy compaction made of one), HELD_UNKNOWN
 * defers it to the first question, which reads both records: in the
 * log after a checkpoint, lc's record may sit in a segment compaction
 * removed until the replay reaches its copy.
 */
struct blk_idx;

/*
 * Which slots of a page table hold a page (store_pagemap.c).  Four
 * levels of 64-way bitmaps answer "the next page" in a few steps for
 * 2^24 slots (2^34 blocks, past any volume but a huge volume 0, whose
 * top level is then scanned word by word).
 */
#define PM_LEVELS	4
struct pagemap {
	uint64_t *w[PM_LEVELS];
	uint64_t nslots;
};

/* One volume's page table: pages[p] covers blocks p * IDX_PAGE on. */
struct idx_vol {
	uint32_t vol;
	uint64_t npages;
	struct blk_idx **pages;		/* NULL until written */
	struct pagemap map;		/* which pages[p] are not NULL */
	uint64_t hi;			/* one past the highest page */
	uint64_t live;			/* bytes of the records it points to */
	uint64_t top_gen;		/* the highest generation of an lc */
};

struct blk_idx {
	struct bft_ts lc_ts;		/* zero: never completed (c0) */
	uint64_t lc_loc;		/* lc's record, 0 if none */
	uint64_t h_loc;			/* Hist[lc.ts]'s record, if HENT */
	uint32_t h_frag_len;		/* its fragment's length */
	uint32_t flags;			/* IDX_*, side entries << IDX_SIDE_SHIFT */
};

/*
 * A page covers 1024 blocks (64 MiB of disk, 56 KiB of index).  Pages
 * keep memory, the index checkpoint and its copy in step with what was
 * written rather than with the disk's size, and are what a per-volume
 * index will be made of: an address space of 2^64 blocks cannot be one
 * array.  Smaller pages would cost a longer page table; larger ones, a
 * larger checkpoint for a disk written here and there.
 */
#define IDX_PAGE_SHIFT	10
#define IDX_PAGE	(1u << IDX_PAGE_SHIFT)
_Static_assert(IDX_PAGE == BFT_STORE_PAGE, "store.h says the page size");

#define IDX_HENT	1u		/* h_loc is Hist[lc.ts] */
#define IDX_HELD	2u		/* and validByHist(lc, it) holds */
#define IDX_HELD_UNKNOWN 4u		/* HELD to be read from the records */
#define IDX_RET		8u		/* has retained records */
/* Hist[lc.ts]'s MACs are lc's: lc's record says BFT_REC_F_HMAC. */
#define IDX_HMAC	16u
#define IDX_SIDE_SHIFT	8
#define IDX_NSIDE(x)	((x)->flags >> IDX_SIDE_SHIFT)

/*
 * A Hist entry above lc: it lives between a STORE and its COMPLETE, so
 * the table holds about the writes in flight (and what crashed writers
 * left, at most max_pending per writer and block).  It keeps H(N) so
 * that the COMPLETE that moves it under lc can tell HELD without I/O.
 */
struct side_ent {
	uint64_t block;			/* SIDE_EMPTY: a free slot */
	struct bft_ts ts;
	uint8_t nh[BFT_HASH_LEN];
	uint64_t loc;
	uint32_t frag_len;
	uint32_t pad;
};

#define SIDE_EMPTY	UINT64_MAX
/* The side table's size when its first entry comes. */
#define SIDE_FIRST_CAP	256u

/* Open addressing, linear probing, deletion by backward shift. */
struct side_tab {
	struct side_ent *e;
	size_t cap;			/* a power of two, or 0 */
	size_t used;
};

/*
 * The metadata cache: records' metadata bytes (header and payload up
 * to the fragment) keyed by location.  A location's bytes never change
 * (the log is append-only and segment numbers are never reused), so
 * nothing is ever stale, only dead; the least recently used go when
 * the cache is full, dead ones first as nothing reads them.  Dropping
 * them as they die cost three hash lookups per write, each a cache
 * miss: 2% of a server's CPU under 64 KiB writes (perf, 2026-11-25).
 * Slots are allocated in chunks as the cache fills.
 */
struct mcache {
	size_t slot_size;		/* struct mslot plus the largest meta */
	uint32_t cap;			/* slots at most */
	uint32_t nslots;		/* slots allocated */
	uint8_t **chunks;
	uint32_t *heads;		/* hash buckets, MC_NONE for empty */
	uint32_t hmask;
	uint32_t lru, mru;		/* oldest and newest in use */
	uint32_t freel;			/* free slots */
	uint32_t used;
	uint64_t hits, misses;
};

#define MC_NONE	UINT32_MAX

/*
 * A slot: its links, then up to slot_size - sizeof(struct mslot) bytes
 * of metadata.  Slots are allocated MC_CHUNK_SLOTS at a time, and once
 * allocated they are only reused: from the free list first (freel,
 * linked by next), then new ones, then the least recently used.  Here
 * rather than in store_meta.c for server/testing/store_reset.c, which
 * empties the cache by putting every slot on the free list.
 */
#define MC_CHUNK_SHIFT	10
#define MC_CHUNK_SLOTS	(1u << MC_CHUNK_SHIFT)

struct mslot {
	uint64_t loc;
	uint32_t prev, next;		/* LRU: towards lru, towards mru */
	uint32_t hnext;			/* hash chain */
	uint32_t len;
};

static inline struct mslot *
st_mc_slot(const struct mcache *mc, uint32_t i)
{
	return (struct mslot *)(mc->chunks[i >> MC_CHUNK_SHIFT] +
	    (size_t)(i & (MC_CHUNK_SLOTS - 1)) * mc->slot_size);
}

struct bft_store {
	char *dir;
	int dirfd;
	struct bft_store_identity id;
	unsigned n;
	uint64_t seg_max;
	unsigned compact_pct;
	struct idx_vol *vols;		/* ascending ids; volume 0 first */
	size_t nvols, volcap;
	uint64_t pages_made;
	/*
	 * The volumes ever dropped, ascending (store_drop.c): no record
	 * of them is accepted again.
	 */
	uint32_t *dropped;
	size_t ndropped, dropcap;
	/* Page-map steps of every walk: what the tests bound a walk by. */
	uint64_t idx_steps;
	/* Snapshot boundaries and retained records, by volume, ascending. */
	struct snap_vol *svols;
	size_t nsvols, svolcap;
	uint64_t ret_seed;		/* the retention index's priorities */
	struct side_tab side;
	struct mcache mc;
	struct seg *segs;		/* ascending numbers; last is active */
	size_t nseg, segcap;
	size_t nretired;		/* segments waiting for a sync to go */
	bool dir_dirty;			/* segments created or removed */
	uint64_t dir_gen;		/* times dir_dirty was set */
	bool tail_dirty;		/* junk past the active segment's size */
	uint64_t next_seq;
	uint64_t replay_min_seq;	/* a tail record below it: not our log */
	uint8_t *wbuf, *rbuf, *mbuf;	/* one record each */
	uint32_t cmp_no;		/* segment being compacted, or 0 */
	uint64_t cmp_off;
	bool cmp_failing;		/* its error is logged already */
	uint64_t replayed, compactions, copied;
	uint64_t removed;		/* bytes of segments compaction emptied */
	uint64_t syncs, fsyncs;		/* bft_store_sync; fsync/fdatasync calls */
	uint64_t held;			/* blocks whose lc is not c0 */
	uint64_t meta_damaged;		/* metadata reads that failed a check */
	struct bft_store_replay rp;
	bool created;			/* this open made the identity file */
	unsigned finalized;		/* level, from the identity file */
	bool opened;			/* open finished: close syncs */
	/* Compacted segments' files kept for new ones (store_reuse.c). */
	uint32_t spares[BFT_STORE_MAX_SPARES];
	size_t nspares;
	uint64_t reused;		/* segments made from a spare */
	struct bg_job *bg_job;		/* background sync, or NULL */
	pthread_t bg_thread;
	/* The index checkpoint (store_ckpt.c). */
	uint64_t ckpt_every;		/* appended bytes between them; 0: never */
	uint64_t appended;		/* bytes appended since open */
	uint64_t ckpt_mark;		/* appended when the last one started */
	struct ckpt_job *ckpt_job;
	pthread_t ckpt_thread;
	struct bft_store_ckpt_info ck;
	/* The log's pages (store_pagecache.c); pc_window 0: all stay. */
	uint64_t pc_window;
	uint64_t pc_dropped;		/* bytes of segments given back */
	struct pc_job *pc_job;
	pthread_t pc_thread;
	bool pc_failing;		/* its error is logged already */
};

/*
 * store_identity.c: the identity file against st->id, written for a new
 * directory (st->created) and rewritten for an older format.  0, or a
 * negative errno with why in err.
 */
int st_identity_check(struct bft_store *st, char *err, size_t errlen);

/*
 * store_pagecache.c: at a roll-over, give back the pages of segments
 * wholly behind the newest pc_window bytes, on a thread; _wait joins
 * it.
 */
void st_pagecache_trim(struct bft_store *st);
void st_pagecache_wait(struct bft_store *st);
/* The window when none is given: an eighth of memory, 256 MiB at least. */
uint64_t st_default_page_cache(void);

/* store.c: segments and appends. */
struct seg *st_seg_find(struct bft_store *st, uint32_t no);
int st_seg_reserve(struct bft_store *st);
int st_seg_create(struct bft_store *st);
/*
 * Appends a record at the active segment's tail (a new segment when it
 * would pass seg_max); its location in *loc.  0 or a negative errno.
 */
/* Whether block may take a record: 0, -ERANGE, or -EIDRM (dropped). */
int st_writable(const struct bft_store *st, uint64_t block);
/* Compaction and the periodic checkpoint follow the appends. */
void st_after_append(struct bft_store *st, size_t len);
int st_append_rec(struct bft_store *st, const uint8_t *rec, size_t len,
		  uint64_t *loc);
/* The live bytes of the segment holding loc. */
void st_live_inc(struct bft_store *st, uint64_t loc, size_t len);
void st_live_dec(struct bft_store *st, uint64_t loc, size_t len);

/*
 * store_index.c: the side table.  Indices hold until the next add or
 * delete.  side_next walks block's entries: start with *pos = -1;
 * false at the end.
 */
int st_side_reserve(struct bft_store *st, size_t extra);
long st_side_find(const struct bft_store *st, uint64_t block,
		  const struct bft_ts *ts);
/* Inserts e as it is (the index's count is the caller's); reserved. */
void st_side_insert(struct bft_store *st, const struct side_ent *e);
bool st_side_next(const struct bft_store *st, uint64_t block, long *pos);
void st_side_free(struct bft_store *st);

/*
 * store_index.c: the transitions that appends and replay share, so that
 * replay rebuilds exactly what the live store held.  Both need a free
 * side slot reserved (st_side_reserve) before the record is appended.
 * hist_apply: Hist[m->ts] = the record at loc (len bytes), unless m->ts
 * is below lc.ts.  lc_apply: lc = c (its record at loc) unless lc is
 * newer, then the GC rule; false if c was stale.
 */
void st_hist_apply(struct bft_store *st, uint64_t block,
		   const struct bft_hist_meta *m, uint64_t loc, size_t len);
bool st_lc_apply(struct bft_store *st, uint64_t block,
		 const struct bft_cand *c, uint64_t loc);
/* Forgets block's entry for ts: the h entry or a side entry.  0 or -ENOENT. */
int st_hist_forget(struct bft_store *st, uint64_t block,
		   const struct bft_ts *ts);
/* Drops side entry i, its record's bytes no longer live. */
void st_side_drop(struct bft_store *st, long i);

/*
 * store_drop.c: the transition of a DROP record at loc, which appends
 * and replay share: vol leaves the index and every record its entries
 * pointed to stops being live.  The DROP record is counted in its
 * segment's drops, not its live bytes: it is not data, but compaction
 * must copy it forward; vol is remembered as dropped.  *blocks_dropped:
 * the blocks that held anything.  0, or -ENOMEM (only when there was no
 * room reserved to remember vol).
 */
/*
 * store_open.c: opens name in dirfd with O_CREAT and flags, mode 0600
 * whatever the umask: an unencrypted volume's fragments are plain
 * slices of its blocks, readable by no other local user.  A descriptor,
 * or -1 with errno set.
 */
int st_open_private(int dirfd, const char *name, int flags);

int st_drop_apply(struct bft_store *st, uint32_t vol, uint64_t loc,
    uint64_t *blocks_dropped);
/* Remembers vol as dropped (replay, a checkpoint).  0 or -ENOMEM. */
int st_dropped_add(struct bft_store *st, uint32_t vol);

/*
 * store_meta.c: the cache, and reading a record's metadata back.
 * meta_read returns the record's first bft_rec_meta_len(type, n) bytes
 * (valid until the next cache call) after checking them and that the
 * record is block's, of that type; rec_len is the whole record's length
 * (a version 1 record is read and checked whole).  NULL with errno set:
 * EIO when the record is damaged or not what the index says.
 */
int st_mc_init(struct bft_store *st, uint64_t bytes);
void st_mc_free(struct bft_store *st);
void st_mc_put(struct bft_store *st, uint64_t loc, const uint8_t *meta,
	       size_t len);
const uint8_t *st_meta_read(struct bft_store *st, uint64_t loc,
			    unsigned type, uint64_t block, size_t rec_len);
/* lc of block, decoded from its record.  0, or -EIO (out: ts only). */
int st_lc_read(struct bft_store *st, uint64_t block, struct bft_cand *out);

/*
 * store_relabel.c: Hist[lc.ts]'s MACs where lc's record carries them
 * (IDX_HMAC).  hmac_overlay gives *m, the entry whose record is at loc,
 * lc's timestamp MAC and vector when that is the case and lc is the
 * same version; hmac_settle writes the entry again with them (0 or a
 * negative errno), for a set_lc that is about to retain it.
 */
void st_hmac_overlay(struct bft_store *st, uint64_t block, uint64_t loc,
		     struct bft_hist_meta *m);
/*
 * A record's timestamp MAC mac and vector vec (n entries) take ts's MAC
 * and new_vec, as a REAUTH gives them; false when they had them.
 */
bool st_macs_take(const struct bft_store *st, uint8_t *mac,
		  uint8_t (*vec)[BFT_MAC_LEN], const struct bft_ts *ts,
		  const uint8_t (*new_vec)[BFT_MAC_LEN]);
int st_hmac_settle(struct bft_store *st, uint64_t block);

/*
 * store_compact.c: one bounded step of compaction after an append of
 * appended bytes; and the removal of retired segments, right after a
 * sync made their copies durable (0 or a negative errno).
 */
void st_compact_step(struct bft_store *st, size_t appended);
/*
 * The copy of the DROP record at oldloc (len bytes, read into rbuf) to
 * the log's end: 0, -EUCLEAN when it was damaged since open, -EBUSY
 * while its volume holds blocks again (store_drop.c says why both keep
 * the segment), or another negative errno to retry.
 */
int st_drop_copy(struct bft_store *st, uint64_t oldloc, size_t len);
int st_unlink_retired(struct bft_store *st);

/*
 * store_reuse.c.  st_reuse_on: this directory may reuse files.
 * st_spare_make (the background job's thread): zeroes retired segment
 * no's first page and renames it a spare, if nine in ten of its pages
 * are cached; 0 or a negative errno (-ENODATA: they are not), after
 * which it is the caller's to unlink.  st_spare_take: a spare renamed
 * to segment no and opened, or -1 when there is none.  st_spares_add
 * keeps what a job made; st_spares_open adopts the spares an earlier
 * run left (or removes them where reuse is off); st_spares_drop removes
 * every one.  st_seg_seal cuts a reused segment's file to its records
 * when it stops being the active one.  st_reuse_cut, before replay,
 * cuts the earlier use off every segment from the one before from_no
 * (0: all).  st_reuse_before_unlink syncs the active segment, which
 * must precede removing a segment that replay may need as a bound.
 */
bool st_reuse_on(const struct bft_store *st);
int st_spare_make(int dirfd, uint32_t no);
int st_spare_take(struct bft_store *st, uint32_t no);
void st_spares_add(struct bft_store *st, const uint32_t *nos, size_t n);
int st_spares_open(struct bft_store *st);
int st_spares_drop(struct bft_store *st);
int st_seg_seal(struct seg *s);
int st_reuse_cut(struct bft_store *st, uint32_t from_no, char *err,
		 size_t errlen);
int st_reuse_before_unlink(struct bft_store *st);

/*
 * store_sync.c: hands the retired segments and a sync of the segments
 * holding their copies to a thread; st_bg_sync_wait collects it.
 * st_bg_sync_busy collects it only if it is done, and says whether one
 * is still running.
 */
void st_bg_sync_start(struct bft_store *st);
int st_bg_sync_wait(struct bft_store *st);
bool st_bg_sync_busy(struct bft_store *st);

/*
 * store_ckpt.c.  ckpt_after_append starts a checkpoint in a thread
 * once ckpt_every bytes were appended since the last; ckpt_wait
 * collects it; ckpt_write_now writes one on this thread (at close,
 * after a sync).  ckpt_load, on open, loads the checkpoint and says
 * where the log after it starts; -ENOENT when there is none that can
 * be used (why in why), and the store is then as before the call.
 */
void st_ckpt_after_append(struct bft_store *st);
int st_ckpt_wait(struct bft_store *st);
int st_ckpt_write_now(struct bft_store *st);
int st_ckpt_load(struct bft_store *st, uint32_t *seg_no, uint64_t *off,
		 char *why, size_t whylen);
/*
 * After the log after a checkpoint was replayed: false if a location in
 * the index names a segment that is gone or a record past its end.
 */
bool st_ckpt_locs_ok(struct bft_store *st, char *why, size_t whylen);
/*
 * Back to the empty index open started with, the checkpoint removed so
 * that no later open trusts it.  0 or -ENOMEM.
 */
int st_ckpt_load_undo(struct bft_store *st);

/*
 * store_index.c: the index's pages.  Blocks are addresses (proto.h):
 * a volume and a block in it.  st_idx() is a block's entry, or a
 * never-written one's (all zeros) when its page does not exist; to
 * change an entry, its page must exist (st_idx_make before the append
 * whose record it will describe), and st_idx_mut() gives it.
 */
extern const struct blk_idx st_idx_none;

/* A volume's page table, or NULL when nothing of it was written. */
const struct idx_vol *st_idx_vol(const struct bft_store *st, uint32_t vol);

/* The page of addr, or NULL. */
static inline struct blk_idx *
st_idx_page(const struct bft_store *st, uint64_t addr)
{
	const struct idx_vol *v = st->nvols > 0 && st->vols[0].vol ==
	    bft_addr_vol(addr) ? &st->vols[0] :
	    st_idx_vol(st, bft_addr_vol(addr));
	uint64_t p = bft_addr_block(addr) >> IDX_PAGE_SHIFT;

	return v != NULL && p < v->npages ? v->pages[p] : NULL;
}

static inline const struct blk_idx *
st_idx(const struct bft_store *st, uint64_t addr)
{
	const struct blk_idx *p = st_idx_page(st, addr);

	return p != NULL ? p + (addr & (IDX_PAGE - 1)) : &st_idx_none;
}

static inline struct blk_idx *
st_idx_mut(struct bft_store *st, uint64_t addr)
{
	return st_idx_page(st, addr) + (addr & (IDX_PAGE - 1));
}

int st_idx_init(struct bft_store *st);
/* Sets every volume's live bytes from the index (after open). */
void st_idx_recount(struct bft_store *st);
int st_idx_make(struct bft_store *st, uint64_t addr);
void st_idx_free(struct bft_store *st);
/*
 * The first address at or after *addr whose page exists, in address
 * order (volume, then block), into *addr; false when there is none.
 */
bool st_idx_next(struct bft_store *st, uint64_t *addr);

/*
 * store_pagemap.c.  st_pm_next: the first slot at or after slot that
 * holds a page, or UINT64_MAX; adds the words it read to *steps.
 */
int st_pm_grow(struct pagemap *m, uint64_t nslots);
void st_pm_set(struct pagemap *m, uint64_t slot);
void st_pm_free(struct pagemap *m);
uint64_t st_pm_next(const struct pagemap *m, uint64_t slot, uint64_t *steps);
/* Whether this store may hold addr (volume 0 is the cluster's disk). */
static inline bool
st_addr_ok(const struct bft_store *st, uint64_t addr)
{
	return bft_addr_ok(addr, st->id.nblocks);
}

/*
 * Snapshot views (store.h).  store_snap.c keeps each volume's
 * boundaries and their SNAP and UNSNAP records; store_view.c keeps the
 * retained records and answers the views.
 *
 * A block's retained records are a set of lc records (LC or VLC, or
 * c0's marker, which has no record) and HIST records, sorted by ts.
 * What the set must hold follows from it alone: for every boundary g
 * below the live lc's generation, the newest lc of generation <= g
 * (lc_g), and the entries of generation <= g with ts >= lc_g.ts.
 * st_ret_prune keeps exactly that.  A set_lc that crosses a boundary
 * (st_lc_apply) adds the lc it replaces and the entries the GC rule
 * drops; a VLC record adds a write-back; replay adds any LC or HIST
 * record older than the block's lc, which only a compaction copy of a
 * retained record can be.  Since the pruned set depends only on what
 * was added, not when, a replay that meets the records in another
 * order (compaction moves them) prunes to what the live store held:
 * docs/store.md says why that needs the boundaries known before the
 * replay (st_snap_prescan) and refuses a boundary below a completed
 * write.
 */
struct bft_rec_hdr;

struct snap_gen {
	uint64_t gen;
	uint64_t id;			/* the SNAP's id: its first seq */
	uint64_t loc;			/* its record */
};

/* One retained record: 48 bytes. */
struct ret_rec {
	struct bft_ts ts;		/* zero for c0's marker */
	uint64_t loc;			/* 0 for c0's marker */
	uint32_t frag_len;		/* a HIST record's */
	uint8_t type;			/* BFT_REC_HIST, _LC, _VLC; 0: c0 */
	uint8_t pad[3];
};

/*
 * A block with retained records, in its volume's treap by address: 48
 * bytes and its records' array, 48 bytes a record.
 */
struct ret_node {
	uint64_t addr;
	struct ret_node *l, *r;
	uint32_t prio;
	uint32_t n, cap;
	struct ret_rec *rec;		/* sorted by ts, lc before HIST */
};

struct snap_vol {
	uint32_t vol;
	uint32_t ngens, gencap;
	struct snap_gen *gens;		/* ascending */
	struct ret_node *root;
	uint64_t nodes, recs;
	uint64_t bytes;			/* of its retained records */
	bool gc;			/* a boundary went: prune every node */
	uint64_t gc_next;		/* the address the pruning resumes at */
	/* Nodes pruned since it last began, of the nodes there were then. */
	uint64_t gc_done, gc_total;
};

/* store_snap.c. */
struct snap_vol *st_snap_vol(const struct bft_store *st, uint32_t vol);
/* vol's table, made when absent; NULL when out of memory. */
struct snap_vol *st_snap_vol_make(struct bft_store *st, uint32_t vol);
/* Whether gen is one of sv's boundaries. */
bool st_snap_has(const struct snap_vol *sv, uint64_t gen);
/*
 * The highest boundary of sv in [lo, hi), or false when there is none:
 * whether an lc moving from generation lo to hi crosses one.
 */
bool st_snap_crossed(const struct snap_vol *sv, uint64_t lo, uint64_t hi,
    uint64_t *gmax);
/* Adds a boundary as it is (a checkpoint's); 0 or -ENOMEM. */
int st_snap_load(struct bft_store *st, uint32_t vol,
    const struct snap_gen *g);
/*
 * Before a replay from (no, off): the boundaries the log after it
 * leaves, its SNAP and UNSNAP records ordered by their ids, so that
 * every set_lc the replay meets crosses what the live store's did.
 * 0 or a negative errno with why.
 */
int st_snap_prescan(struct bft_store *st, uint32_t no, uint64_t off,
    char *why, size_t whylen);
/*
 * After a replay, which added records whose set_lc it had not met yet
 * and kept what boundaries removed since held: every retained block
 * pruned to what the views need.
 */
void st_snap_prune_all(struct bft_store *st);
/* A SNAP or UNSNAP record met by replay: an UNSNAP is kept for good. */
void st_snap_replayed(struct bft_store *st, const struct bft_rec_hdr *h,
    uint64_t loc);
/*
 * Compaction: whether the SNAP or UNSNAP record at loc must be copied,
 * and its copy (read into rbuf, len bytes): 0, -EUCLEAN when damaged,
 * or another negative errno to retry.
 */
bool st_snap_owner(const struct bft_store *st, const struct bft_rec_hdr *h,
    uint64_t loc);
int st_snap_copy(struct bft_store *st, const struct bft_rec_hdr *h,
    uint64_t oldloc, size_t len);
/* A DROP: vol's boundaries and retained records go. */
void st_snap_drop_vol(struct bft_store *st, uint32_t vol);
void st_snap_free(struct bft_store *st);

/*
 * store_view.c.  st_ret_reserve makes room for extra more records of
 * block before the append whose transition adds them, so that the
 * transition cannot fail (0 or -ENOMEM); st_ret_reserve_cross reserves
 * what a set_lc of block to ts would retain.
 */
int st_ret_reserve(struct bft_store *st, uint64_t block, unsigned extra);
int st_ret_reserve_cross(struct bft_store *st, uint64_t block,
    const struct bft_ts *ts);
/*
 * Adds a record to block's retained set (reserved); add_new counts its
 * bytes as live, add_moved does not (they were live as lc's or an
 * entry's).  A record of the same ts and kind is replaced.  Then
 * st_ret_prune keeps what the views need (store_int.h, above).
 */
void st_ret_add_new(struct bft_store *st, uint64_t block, unsigned type,
    const struct bft_ts *ts, uint64_t loc, uint32_t frag_len);
void st_ret_add_moved(struct bft_store *st, uint64_t block, unsigned type,
    const struct bft_ts *ts, uint64_t loc, uint32_t frag_len);
void st_ret_prune(struct bft_store *st, uint64_t block);
/* The bytes of a retained record in the log. */
size_t st_ret_len(const struct bft_store *st, const struct ret_rec *r);
/* block's retained node, or NULL. */
struct ret_node *st_ret_node(const struct bft_store *st, uint64_t block);
/* Drops retained record i of node (its bytes no longer live). */
void st_ret_drop(struct bft_store *st, struct snap_vol *sv,
    struct ret_node *node, unsigned i);
/*
 * Prunes nodes of sv from sv->gc_next on, one of *budget each; true
 * when it reached the end (sv->gc is then false).
 */
bool st_ret_gc(struct bft_store *st, struct snap_vol *sv, uint64_t *budget);
/* Whether a set_lc of block from old to ts crosses a boundary. */
bool st_ret_crossing(const struct bft_store *st, uint64_t block,
    const struct bft_ts *old, const struct bft_ts *ts, uint64_t *gmax);
/*
 * A LC, VLC or HIST record that replay found older than its block's
 * lc (a compaction copy of a retained record), or any VLC record:
 * added to the block's retained set.  0 or -ENOMEM.
 */
int st_ret_replayed(struct bft_store *st, uint64_t block, unsigned type,
    const struct bft_ts *ts, uint64_t loc, uint32_t frag_len);
/* Frees sv's treap; drop: its records stop being live, too. */
void st_ret_free(struct bft_store *st, struct snap_vol *sv, bool drop);
/* Calls fn for every retained record, in address order. */
int st_ret_walk(const struct bft_store *st,
    int (*fn)(void *arg, uint64_t addr, const struct ret_rec *r), void *arg);
/* A checkpoint's record, its bytes counted already.  0 or -errno. */
int st_ret_load(struct bft_store *st, uint64_t addr, const struct ret_rec *r);
/* Adds every volume's retained bytes to its live bytes (open). */
void st_ret_recount(struct bft_store *st);
/* store_index.c: vol's live bytes, by addr, change by delta. */
void st_vol_live(struct bft_store *st, uint64_t addr, int64_t delta);
/* store.c: reads the HIST record at loc into rbuf, checked whole. */
int st_hist_read(struct bft_store *st, uint64_t loc, uint64_t block,
    const struct bft_ts *ts, uint32_t frag_len, struct bft_hist_meta *m);

#endif
