/*
 * The server's durable state: for every block, lc (the last completed
 * candidate) and Hist (the STOREs kept for it), in an append-only,
 * checksummed, segmented log on disk, with an index in memory that says
 * where each block's records are (56 bytes a block; docs/store.md).
 *
 * Crash consistency comes from the log: a record is valid only if its
 * checksum matches, so a torn tail is detected and cut off on open, and
 * the state is rebuilt by replaying the valid records in order.  The
 * store itself applies the GC rule: setting lc drops every Hist entry
 * with ts < lc.ts, so replay and the live state agree by construction.
 * Records written with write() survive kill -9 (the page cache belongs
 * to the kernel); bft_store_sync() makes them survive power loss too.
 *
 * Not thread-safe: the server's event loop is its only user.
 */
#ifndef BFTBLK_STORE_H
#define BFTBLK_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/*
 * The data directory's format.  7: the log may hold SNAP, UNSNAP and
 * VLC records (snapshot boundaries and the write-backs into their
 * views, store_log.h), which a format 6 server would take for damage;
 * formats 3 to 6 are upgraded in place on open, and older versions
 * refuse 7.  6: the log may hold DROP records
 * (store_log.h), which a format 5 server would take for damage: it
 * would stop reading the segment there, and cut the last one off; so
 * formats 3 to 5 are upgraded in place on open, and older versions
 * refuse 6.  5: records may hold the zero value, an
 * empty fragment under the zero cross-checksum (predicates.h), which
 * an older server would serve to readers that cannot read it; formats 3
 * and 4 are upgraded in place on open, and older versions refuse 5.  4: records carry a CRC of their
 * metadata alone, which the store reads back instead of keeping it in
 * memory; a format 3 directory is upgraded in place on open (its
 * records are read whole until compaction rewrites them), and older
 * bftblk versions refuse a format 4 one.  2: H is BLAKE3.  The records themselves
 * did not change, but every cross-checksum in them was computed with
 * BLAKE2b under format 1, so such a directory would serve only
 * "corrupt" fragments; it is refused instead.  3: the MACs in the
 * records name the block, and a format-2 directory's would all fail.
 * STATUS reports it as the version a server speaks.
 */
#define BFT_STORE_FORMAT	7
/*
 * 8: format 7 in a cluster that `bftblk cluster finalize` finalized
 * (featureset.h): the identity file names the level, on a line release
 * 0.2.0 refuses with a sentence that says why, before the format it
 * refuses too.  Once finalized the cluster may hold what 0.2.0 cannot
 * read (an LC record flagged by a key rotation's REAUTH, store_log.h,
 * among others), so going back is refused here rather than found out
 * later.
 */
#define BFT_STORE_FORMAT_FINALIZED	8

/* What a data directory belongs to; open refuses a mismatch. */
struct bft_store_identity {
	uint8_t cluster_id[BFT_CLUSTER_ID_LEN];
	uint32_t server_index;
	uint32_t n, t;
	uint32_t block_size;
	uint64_t nblocks;
};

/*
 * One Hist entry as the store hands it out: a copy, expanded to the full
 * struct (vec and cc rows from n on are zero).  loc names its record for
 * bft_store_read_frag and is good until the next call that modifies the
 * store (put_hist, set_lc, forget_hist), which may move or drop it.
 */
struct bft_hist_entry {
	struct bft_hist_meta meta;
	uint64_t loc;			/* where the record is; store-private */
};

struct bft_store;

/*
 * Compacted segments wait for a sync before they are unlinked; past this
 * many, a background thread syncs and unlinks them, and fewer than twice
 * this many ever wait.
 */
#define BFT_STORE_MAX_RETIRED 2

/*
 * Opens (creating if absent) the data directory dir.  A new directory
 * gets an identity file; an existing one must carry the same identity,
 * or open fails naming what differs.  Replays the log, discarding torn
 * or corrupt records and counting them.  Returns NULL with a reason in
 * err on failure.
 */
struct bft_store *bft_store_open(const char *dir,
				 const struct bft_store_identity *id,
				 char *err, size_t errlen);
void bft_store_close(struct bft_store *st);

/*
 * Reading a block's state.  Nothing here hands out a pointer into the
 * store: lc and Hist entries are copied out, expanded to the full
 * structs, into memory the caller owns.  A block never written, or one
 * beyond the disk, has lc.ts zero (c0) and no Hist.
 */

/*
 * lc of block into *out.  0; -ERANGE (out zeroed) beyond the disk;
 * -EIO when lc's record is damaged (out holds lc.ts only).
 */
int bft_store_get_lc(struct bft_store *st, uint64_t block,
		     struct bft_cand *out);

/* lc.ts of block: no copy of the rest, for walks over many blocks. */
struct bft_ts bft_store_lc_ts(const struct bft_store *st, uint64_t block);

/*
 * The highest timestamp block has here, lc's or a Hist entry's above
 * it: what a lease register's newest claim is (common/predicates.h's
 * bft_fenced).  No I/O.
 */
struct bft_ts bft_store_top_ts(const struct bft_store *st, uint64_t block);

/*
 * Whether this server holds the fragment backing block's lc: Hist[lc.ts]
 * exists and validByHist(lc) holds.  False for c0.
 */
bool bft_store_lc_held(struct bft_store *st, uint64_t block);

/*
 * Blocks are addresses (proto.h): volume 0's below nblocks, another
 * volume's below BFT_VOL_MAX_BLOCKS.  What the store holds is indexed
 * in pages of blocks (1024); a block outside every page was never
 * written here.
 */
#define BFT_STORE_PAGE	1024u	/* blocks per index page */
/* The first address at or after addr in a page, or UINT64_MAX. */
uint64_t bft_store_next_page(struct bft_store *st, uint64_t addr);
/*
 * The page-map steps every such walk took since open, and the nodes of
 * the retention index bft_store_view_next touched: a walk's cost,
 * which the tests bound.
 */
uint64_t bft_store_idx_steps(const struct bft_store *st);
/* The blocks the pages cover: what a walk over them visits. */
uint64_t bft_store_indexed(const struct bft_store *st);
/*
 * A volume the store holds blocks of: one past its highest page, and
 * the bytes of the records its blocks' entries point to (what deleting
 * or trimming it would free once compacted), the records its snapshot
 * boundaries retain included (which only deleting it frees).
 */
struct bft_store_vol {
	uint32_t vol;
	uint64_t end;
	uint64_t live;
};
/* The volumes from first on, in id order, at most max of them. */
size_t bft_store_volumes(const struct bft_store *st, uint32_t first,
    struct bft_store_vol *out, size_t max);

/* Whether block's Hist has an entry for ts; no I/O. */
bool bft_store_has_hist(const struct bft_store *st, uint64_t block,
			const struct bft_ts *ts);

/*
 * Hist[ts] of block into *out.  0, -ENOENT, or -EIO when its record is
 * damaged (the entry is then forgotten).
 */
int bft_store_get_hist(struct bft_store *st, uint64_t block,
		       const struct bft_ts *ts, struct bft_hist_entry *out);

/* Hist entries of writer wid with ts above lc.ts (not yet superseded). */
unsigned bft_store_pending(struct bft_store *st, uint64_t block,
			   uint64_t wid);

/*
 * Iteration over Hist: entries 0 .. nhist - 1, in no order; the indices
 * hold until the next call that modifies the store.  hist_at returns 0,
 * or -ENOENT for i >= nhist.
 */
unsigned bft_store_nhist(struct bft_store *st, uint64_t block);
int bft_store_hist_at(struct bft_store *st, uint64_t block, unsigned i,
		      struct bft_hist_entry *out);

/*
 * Persists Hist[meta->ts] = (frag, meta) for block, replacing an entry
 * with the same (num, wid).  Returns 0, or a negative errno (-ENOSPC,
 * -EIO, ...) with the state unchanged: a failed append leaves no trace.
 * -ESTALE if meta->ts < lc.ts, which the GC rule would drop at once;
 * -EIDRM for a block of a dropped volume;
 * -ERANGE for a block beyond the disk.
 */
int bft_store_put_hist(struct bft_store *st, uint64_t block,
		       const struct bft_hist_meta *meta, const uint8_t *frag);

/*
 * Persists lc = *c for block (the caller checked c->ts > lc.ts), then
 * drops every Hist entry of the block with ts < c->ts.  Returns 0 or a
 * negative errno with the state unchanged (-EINVAL if c->ts <= lc.ts,
 * -EIDRM for a block of a dropped volume).
 */
int bft_store_set_lc(struct bft_store *st, uint64_t block,
		     const struct bft_cand *c);

/*
 * Re-authentication (REAUTH, docs/key-epochs.md): block's lc and its
 * Hist entry, each where it has ts's (num, wid) and the nonce hash nh,
 * take ts's MAC and vec (n entries) in a record appended again; the
 * fragment, cc and nonce stay.  In a finalized store, lc's record
 * carries them for Hist[lc.ts] too, whose own record stays (store_log.h).
 * frag is BFT_MAX_FRAG bytes of scratch.  The number of records
 * appended (0 when both carried those MACs already); -ENOENT when the store holds no such version; -ERANGE,
 * -EIDRM, or an append's error with the state unchanged.  Not synced.
 */
int bft_store_relabel(struct bft_store *st, uint64_t block,
    const struct bft_ts *ts, const uint8_t nh[BFT_HASH_LEN],
    const uint8_t (*vec)[BFT_MAC_LEN], uint8_t *frag);

/*
 * Forgets Hist[ts] of block, whose record was found damaged: it is no
 * longer served or counted as held, and its bytes become garbage for
 * compaction.  A fresh copy (the rebuild's STORE) may replace it.  0 or
 * -ENOENT.
 */
int bft_store_forget_hist(struct bft_store *st, uint64_t block,
			  const struct bft_ts *ts);

/*
 * Reads the fragment of a Hist entry (a copy from get_hist or hist_at,
 * no store modification since) into buf: meta.frag_len bytes.
 */
int bft_store_read_frag(struct bft_store *st, const struct bft_hist_entry *e,
			uint8_t *buf);

/*
 * get_hist and read_frag in one read of the record: Hist[ts] of block
 * into *out and its fragment into buf.  0, -ENOENT, or -EIO when the
 * record is damaged (the entry is then forgotten).
 */
int bft_store_read_hist(struct bft_store *st, uint64_t block,
			const struct bft_ts *ts, struct bft_hist_entry *out,
			uint8_t *buf);

/*
 * Forgets volume vol (DROP, wire.h): every block of it, lc and Hist,
 * its snapshot boundaries and what they retained, is gone from the
 * index and its records become garbage for compaction.
 * A DROP record is appended first, so that replay forgets the volume
 * at the same point of the log; it stays in the log for good (44
 * bytes, not counted as live), copied forward by compaction.  The
 * volume stays dropped: put_hist and set_lc refuse its blocks with
 * -EIDRM from then on, also after a restart.
 * *blocks_dropped (may be NULL): the blocks that held anything.  0,
 * nothing appended, for a volume dropped before; -EINVAL
 * for volume 0 and the reserved volumes (BFT_VOL_TABLE,
 * BFT_VOL_LEASES); or a negative errno with the state unchanged.  Not
 * synced: bft_store_sync() makes it durable.
 */
int bft_store_drop_volume(struct bft_store *st, uint32_t vol,
    uint64_t *blocks_dropped);

/* Whether vol was dropped: no block of it is accepted again. */
bool bft_store_dropped(const struct bft_store *st, uint32_t vol);

/*
 * Snapshot views (store_snap.c, store_view.c; docs/store.md).  A
 * snapshot of volume vol at boundary generation gen is, for every
 * block, the newest version whose ts has generation <= gen
 * (bft_ts_gen).  Once a snapshot exists no write of generation <= gen
 * completes (the protocol sees to it), so the store only keeps what the
 * GC rule would drop: at the first set_lc of a block that moves lc from
 * generation <= gen to above it, the lc it replaces and the Hist
 * entries of generation <= gen it drops are retained for the boundary
 * instead of becoming garbage.  A retained record serves every boundary
 * whose view it is, and is stored once.
 */

/* At most this many snapshot boundaries per volume. */
#define BFT_STORE_MAX_SNAPS	256

/*
 * Adds boundary gen to vol's snapshots.  A SNAP record in the log
 * makes it durable as a DROP is (replayed, copied forward by
 * compaction, in the checkpoint).  0, also when it is there already
 * (nothing appended); -EINVAL for the reserved volumes (BFT_VOL_TABLE,
 * BFT_VOL_LEASES) or a generation above BFT_GEN_MAX; -EIDRM for a
 * dropped volume; -ENOSPC past BFT_STORE_MAX_SNAPS; -ESTALE when a
 * block of vol already completed a write of a generation above gen
 * (what that write replaced is gone here, so this store cannot hold
 * the snapshot's view); or a negative errno with the state unchanged.
 * Not synced.
 */
int bft_store_snap_add(struct bft_store *st, uint32_t vol, uint64_t gen);
/*
 * Removes boundary gen (an UNSNAP record, kept in the log for good as a
 * DROP is): the records kept only for it become garbage for compaction
 * and leave bytes_live.  The removal is O(log) on the caller's thread;
 * the freeing is a walk over the volume's retained blocks, done at once
 * for a few thousand of them and otherwise by bft_store_snap_gc_step.
 * 0, also when absent (nothing appended); -EINVAL as for snap_add; or a
 * negative errno with the state unchanged.  Not synced.
 */
int bft_store_snap_remove(struct bft_store *st, uint32_t vol, uint64_t gen);
/*
 * Frees what removed boundaries left, visiting at most budget retained
 * blocks.  Returns whether work remains.  For the server's idle timer,
 * beside bft_store_compact_idle.
 */
bool bft_store_snap_gc_step(struct bft_store *st, uint64_t budget);
/*
 * The highest generation of a value completed in vol here (0: none);
 * a boundary below it is refused (bft_store_snap_add).
 */
uint64_t bft_store_top_gen(const struct bft_store *st, uint32_t vol);
/* Whether vol has the boundary gen. */
bool bft_store_snap_held(const struct bft_store *st, uint32_t vol,
    uint64_t gen);
/*
 * That freeing's progress, over the volumes that have some left: the
 * retained blocks visited and how many there were when it began (0 of
 * 0 when nothing is left to free).  O(volumes with snapshots).
 */
void bft_store_snap_gc_progress(const struct bft_store *st, uint64_t *done,
    uint64_t *total);
/* vol's boundaries in increasing order, at most max; returns how many. */
size_t bft_store_snaps(const struct bft_store *st, uint32_t vol,
    uint64_t *gens, size_t max);

/*
 * The view of block at boundary gen: lc_g and Hist_g.  While the
 * block's live lc has generation <= gen, the view is the live state: lc
 * and the Hist entries of generation <= gen.  Once a set_lc moved lc
 * above gen, lc_g is the newest retained lc of generation <= gen (the
 * lc that set_lc replaced, or a write-back since), or c0 when the block
 * had none; Hist_g is the retained entries of generation <= gen with
 * ts >= lc_g.ts.  Every call returns -ENOENT (or nothing) when gen is
 * not a boundary of the block's volume, and -ERANGE beyond the disk.
 * view_lc is like get_lc; view_hist_at counts 0 .. view_nhist - 1 in no
 * order, the indices holding until the next call that modifies the
 * store; view_read_hist is like read_hist.  A damaged retained entry is
 * forgotten, as a live one is.
 */
int bft_store_view_lc(struct bft_store *st, uint64_t block, uint64_t gen,
    struct bft_cand *out);
unsigned bft_store_view_nhist(struct bft_store *st, uint64_t block,
    uint64_t gen);
int bft_store_view_hist_at(struct bft_store *st, uint64_t block,
    uint64_t gen, unsigned i, struct bft_hist_entry *out);
int bft_store_view_read_hist(struct bft_store *st, uint64_t block,
    uint64_t gen, const struct bft_ts *ts, struct bft_hist_entry *out,
    uint8_t *buf);
/*
 * bft_store_relabel for block's view at boundary gen: for BFT_GEN_MAX,
 * or while the view is the live state, that; once frozen, its retained
 * lc record and Hist entry of ts's (num, wid) and nonce hash nh are
 * appended again with ts's MAC and vec, each copy taking its record's
 * place as compaction's does, so every boundary that shares the record
 * has it relabelled.
 * frag is BFT_MAX_FRAG bytes of scratch.  The number of records
 * appended; -ENOENT when the view holds no such version (or gen is no
 * boundary), -ERANGE, -EIDRM, or an append's error.
 */
int bft_store_view_relabel(struct bft_store *st, uint64_t block,
    uint64_t gen, const struct bft_ts *ts, const uint8_t nh[BFT_HASH_LEN],
    const uint8_t (*vec)[BFT_MAC_LEN], uint8_t *frag);
/*
 * A reader's write-back into the view: lc_g = *c if c's generation is
 * <= gen and c->ts > lc_g.ts, else -EINVAL.  While the view is the live
 * state this is bft_store_set_lc; once frozen, a VLC record in the log
 * makes it durable.  -EIDRM for a dropped volume.
 */
int bft_store_view_set_lc(struct bft_store *st, uint64_t block, uint64_t gen,
    const struct bft_cand *c);
/*
 * The first address >= addr of volume vol (that volume only) whose view
 * at boundary gen is frozen: a block completed with a generation above
 * gen since the boundary was added.  UINT64_MAX when there is none.
 * It costs in proportion to the retained blocks it passes (counted in
 * bft_store_idx_steps), not to the volume's size: export-diff between
 * two snapshots walks it.
 */
uint64_t bft_store_view_next(struct bft_store *st, uint32_t vol,
    uint64_t gen, uint64_t addr);
/*
 * Bytes of the records kept only for boundary gen of vol (what removing
 * it would free), and of every record retained for vol's boundaries.
 * A walk over the volume's retained blocks.
 */
void bft_store_snap_space(const struct bft_store *st, uint32_t vol,
    uint64_t gen, uint64_t *exclusive, uint64_t *total);
/*
 * The same a piece at a time, for a server that must not stall on a
 * large volume: the retained blocks at addresses >= from, at most budget
 * of them, their exclusive bytes added to *exclusive.  Returns where to
 * go on from, UINT64_MAX once the walk is done.  O(budget + log) here.
 */
uint64_t bft_store_snap_space_from(const struct bft_store *st, uint32_t vol,
    uint64_t gen, uint64_t from, uint64_t budget, uint64_t *exclusive);
/* The bytes of every record retained for vol's boundaries; O(log). */
uint64_t bft_store_snap_retained(const struct bft_store *st, uint32_t vol);

/* fdatasync of everything written so far.  0 or a negative errno. */
int bft_store_sync(struct bft_store *st);

/*
 * The same sync off the event loop, in three steps: flush_begin, on
 * the loop, takes what the sync must cover (duplicates of the dirty
 * segments' descriptors, and of the directory's when it changed), or
 * returns NULL when out of memory; flush_run makes those durable on
 * another thread and touches nothing of the store; flush_end, on the
 * loop again, returns 0 or the negative errno, and marks clean only
 * what no append changed since flush_begin.  The store must stay open
 * until flush_end.
 */
struct bft_store_flush;
struct bft_store_flush *bft_store_flush_begin(struct bft_store *st);
void bft_store_flush_run(struct bft_store_flush *f);
int bft_store_flush_end(struct bft_store *st, struct bft_store_flush *f);

/*
 * Compaction for a store that is not being written: appends drive it
 * otherwise (a step after each), so garbage made without them, by a
 * DROP or by trims before the writes stopped, would stay on disk until
 * the next write.  Scans and copies about budget bytes of the segments
 * compaction picks (a segment holding nothing live costs nothing) and
 * hands the ones it emptied to the background sync that unlinks them.
 * Returns whether work remains: a victim, or segments still waiting to
 * go.  Never waits for the disk's syncs.
 */
bool bft_store_compact_idle(struct bft_store *st, uint64_t budget);

/*
 * Tunables, mostly for tests; a zero field takes the default.  Segments
 * roll over once a record would take them past segment_size (64 MiB, at
 * most 1 GiB).  Once the log's live bytes fall below compact_pct
 * percent (70) of it, the full segment with the lowest live fraction
 * (itself below compact_pct) is copied forward and removed.
 */
struct bft_store_opts {
	uint64_t segment_size;
	unsigned compact_pct;
	/*
	 * The metadata cache's size in bytes (64 MiB); cache_off: none.
	 * An index checkpoint is written after every checkpoint_bytes
	 * appended to the log (1 GiB) and at close; checkpoint_off: only
	 * at close.
	 */
	uint64_t cache_bytes;
	bool cache_off;
	uint64_t checkpoint_bytes;
	bool checkpoint_off;
	/*
	 * The newest page_cache_bytes of the log stay in the page cache
	 * and older segments' pages are given back (an eighth of the
	 * host's memory); page_cache_all: the kernel decides alone.
	 */
	uint64_t page_cache_bytes;
	bool page_cache_all;
};

/* bft_store_open() with tunables; opts may be NULL. */
struct bft_store *bft_store_open_opts(const char *dir,
				      const struct bft_store_identity *id,
				      const struct bft_store_opts *opts,
				      char *err, size_t errlen);

struct bft_store_stats {
	uint64_t records_replayed;
	uint64_t records_discarded;	/* torn or corrupt, found on open */
	uint64_t segments;
	uint64_t bytes_live, bytes_total;	/* live: retained too */
	uint64_t compactions;
	uint64_t bytes_copied;		/* by compaction, since open */
	uint64_t bytes_removed;		/* of the segments it emptied */
	uint64_t blocks_held;		/* blocks whose lc is not c0 */
	uint64_t syncs;			/* bft_store_sync calls */
	uint64_t fsyncs;		/* fsync and fdatasync calls made */
	uint64_t bytes_uncached;	/* of segments whose pages went back */
	uint64_t segments_reused;	/* made from a compacted one's file */
	uint64_t spares;		/* such files waiting */
};
void bft_store_stats(const struct bft_store *st, struct bft_store_stats *out);

/*
 * What open found wrong with the log.  A torn tail (an append cut short
 * by a crash) is cut off the last segment; a damaged record anywhere
 * else is skipped and never served.  Both count as discarded.
 */
struct bft_store_replay {
	uint64_t torn_records, torn_bytes;
	uint64_t corrupt_records, corrupt_bytes;
	/* A reused file's earlier use, cut off: expected after a crash. */
	uint64_t stale_segments, stale_bytes;
};
void bft_store_replay_info(const struct bft_store *st,
			   struct bft_store_replay *out);

/* The metadata cache (docs/store.md). */
struct bft_store_cache_stats {
	uint64_t hits, misses;
	uint64_t entries;
	uint64_t bytes, capacity;	/* allocated (slots and buckets), at most */
	uint64_t damaged;		/* metadata reads that failed a check */
};
void bft_store_cache_stats(const struct bft_store *st,
			   struct bft_store_cache_stats *out);

/*
 * How open started, and the checkpoints since.  An open from a
 * checkpoint replays only the log written after it; without one, or
 * with one that fails a check (why says which), it replays everything.
 */
struct bft_store_ckpt_info {
	bool loaded;
	uint64_t tail_bytes;		/* log replayed (after it, if loaded) */
	char why[192];			/* why none was used */
	uint64_t written, failed;	/* since open */
	uint64_t last_bytes;		/* the last one's size */
	bool running;			/* one is being written now */
};
void bft_store_ckpt_info(const struct bft_store *st,
			 struct bft_store_ckpt_info *out);

/*
 * Whether this open made the data directory's identity: a new server,
 * or one whose disk was lost, which cannot tell the two apart alone.
 */
bool bft_store_created(const struct bft_store *st);

/*
 * The level the cluster was finalized at on this directory (featureset.h),
 * 0 if never, and the data directory's format that follows from it.
 */
unsigned bft_store_finalized(const struct bft_store *st);
unsigned bft_store_format(const struct bft_store *st);
/*
 * Records durably that the cluster was finalized at level: the identity
 * file rewritten (fsynced, renamed, directory fsynced) before it
 * returns.  0, also when it already was at level or above; -EINVAL for
 * level 0 or above BFT_LEVEL_MAX, or a negative errno from the write
 * (the directory is then as it was).
 */
int bft_store_finalize(struct bft_store *st, unsigned level);

#endif
