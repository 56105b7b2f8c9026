/*
 * Compaction (store_int.h): copying a segment's live records to the
 * log's end, retiring the segment, and removing retired segments once
 * their copies are durable.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "store_int.h"
#include "store_log.h"

#define COMPACT_MIN_BUDGET	(128u << 10)

static bool
below(const struct bft_store *st, uint64_t live, uint64_t size)
{
	return (double)live * 100 < (double)st->compact_pct * (double)size;
}

/*
 * Compaction copies a segment's live records to the log's end and then
 * removes the segment.  A copy is the same record under a newer
 * sequence number, and replay keeps the latest record of an entry, so
 * a crash at any point replays to the same state: before the unlink
 * both copies exist and agree.
 *
 * The victim is the full segment with the lowest live fraction, which
 * frees the most per byte copied; and there is one only once the log as
 * a whole is less than compact_pct live.  Waiting for the whole log
 * rather than the first segment to cross the line bounds disk use the
 * same way (the log holds at most 100 / compact_pct times its live
 * bytes, plus the active and retired segments) but lets segments die
 * before they are copied: under sequential overwrites the oldest die
 * entirely and go without a byte copied, where a per-segment trigger
 * copied half of each.
 */
static struct seg *
compact_pick(struct bft_store *st)
{
	struct seg *best = NULL;
	uint64_t live = 0, size = 0;

	for (size_t i = 0; i < st->nseg; i++) {
		struct seg *s = &st->segs[i];

		if (s->retired)
			continue;
		live += s->live;
		size += s->size;
		if (i + 1 == st->nseg || s->stuck ||
		    (s->size > 0 && !below(st, s->live, s->size)))
			continue;
		if (best == NULL || (double)s->live * (double)best->size <
		    (double)best->live * (double)s->size)
			best = s;
	}
	return best != NULL && below(st, live, size) ? best : NULL;
}

/*
 * rec_owner's *side for a retained record (its index in *ret's node), a
 * snapshot boundary's record, a DROP record, and lc's.
 */
#define OWNER_RET	(-5)
#define OWNER_SNAP	(-4)
#define OWNER_DROP	(-3)
#define OWNER_LC	(-2)

/* A retained record of block at loc, or NULL. */
static struct ret_rec *
ret_owner(const struct bft_store *st, const struct blk_idx *x, uint64_t block,
    uint64_t loc)
{
	struct ret_node *node;

	if (!(x->flags & IDX_RET) || (node = st_ret_node(st, block)) == NULL)
		return NULL;
	for (uint32_t i = 0; i < node->n; i++)
		if (node->rec[i].type != 0 && node->rec[i].loc == loc)
			return &node->rec[i];
	return NULL;
}

/*
 * Whether the record at loc must be copied: lc's (*side OWNER_LC),
 * Hist[lc.ts]'s (-1), a side entry's (its slot), a retained record
 * (OWNER_RET, *ret), a DROP record (OWNER_DROP), which is never garbage
 * (store_drop.c), or a boundary's SNAP or an UNSNAP (OWNER_SNAP,
 * store_snap.c).
 */
static bool
rec_owner(const struct bft_store *st, uint64_t loc,
    const struct bft_rec_hdr *h, long *side, struct ret_rec **ret)
{
	const struct blk_idx *x;
	long pos = -1;

	if (h->type == BFT_REC_DROP) {
		*side = OWNER_DROP;
		return true;
	}
	if (h->type == BFT_REC_SNAP || h->type == BFT_REC_UNSNAP) {
		*side = OWNER_SNAP;
		return st_snap_owner(st, h, loc);
	}
	if (!st_addr_ok(st, h->block))
		return false;
	x = st_idx(st, h->block);
	*side = OWNER_RET;
	if ((*ret = ret_owner(st, x, h->block, loc)) != NULL)
		return true;
	if (bft_rec_is_lc(h->type)) {
		*side = OWNER_LC;
		return h->type == BFT_REC_LC && x->lc_loc == loc;
	}
	if ((x->flags & IDX_HENT) && x->h_loc == loc) {
		*side = -1;
		return true;
	}
	while (IDX_NSIDE(x) > 0 && st_side_next(st, h->block, &pos)) {
		if (st->side.e[pos].loc == loc) {
			*side = pos;
			return true;
		}
	}
	return false;
}

/* Where the index keeps the owner's location. */
static uint64_t *
owner_loc(struct bft_store *st, uint64_t block, long side,
    struct ret_rec *ret)
{
	struct blk_idx *x = st_idx_mut(st, block);

	if (side == OWNER_RET)
		return &ret->loc;
	return side == OWNER_LC ? &x->lc_loc : side == -1 ? &x->h_loc :
	    &st->side.e[side].loc;
}

/* What the record of an owner must be: its type and ts. */
static const struct bft_ts *
owner_ts(struct bft_store *st, const struct blk_idx *x, long side,
    const struct ret_rec *ret, unsigned *type)
{
	if (side == OWNER_RET) {
		*type = ret->type;
		return &ret->ts;
	}
	*type = side == OWNER_LC ? BFT_REC_LC : BFT_REC_HIST;
	return side >= 0 ? &st->side.e[side].ts : &x->lc_ts;
}

/* Forgets the damaged HIST record of an owner, as a read would. */
static void
owner_forget(struct bft_store *st, uint64_t block, long side,
    struct ret_rec *ret, const struct bft_ts *ts)
{
	struct ret_node *node;

	if (side != OWNER_RET) {
		st_hist_forget(st, block, ts);
		return;
	}
	node = st_ret_node(st, block);
	st_ret_drop(st, st_snap_vol(st, bft_addr_vol(block)), node,
	    (unsigned)(ret - node->rec));
}

/*
 * Copies one live record to the log's end, as it is: a retained one
 * stays what replay takes for retained (store_int.h).  A HIST record
 * found damaged is forgotten, as a read would; a damaged LC or VLC
 * record cannot be, since an lc must never go back, so it is rewritten
 * from the metadata cache if that still holds it, and otherwise its
 * segment is kept (-EUCLEAN).
 */
static int
compact_copy(struct bft_store *st, const struct bft_rec_hdr *ch,
    uint64_t oldloc, size_t len, long side, struct ret_rec *ret)
{
	struct seg *src = st_seg_find(st, LOC_SEG(oldloc));
	size_t meta = bft_rec_meta_len(BFT_REC_LC, st->n);
	uint64_t block = ch->block, loc;
	const struct bft_ts *want;
	struct bft_hist_meta m;
	struct bft_rec_hdr h;
	struct bft_cand c;
	unsigned type;
	bool ok;
	int err;

	if (side == OWNER_DROP)
		return st_drop_copy(st, oldloc, len);
	if (side == OWNER_SNAP)
		return st_snap_copy(st, ch, oldloc, len);
	want = owner_ts(st, st_idx(st, block), side, ret, &type);
	if ((err = bft_pread_all(src->fd, st->rbuf, len, LOC_OFF(oldloc))) < 0)
		return err;
	ok = bft_rec_check(st->rbuf, len, st->n, &h) == BFT_REC_OK &&
	    h.type == type;
	if (ok && type == BFT_REC_HIST) {
		bft_rec_decode_hist(st->rbuf, st->n, &m);
		ok = bft_ts_cmp(&m.ts, want) == 0;
	} else if (ok) {
		bft_rec_decode_lc(st->rbuf, st->n, &c);
		ok = bft_ts_cmp(&c.ts, want) == 0;
	}
	if (!ok && type == BFT_REC_HIST) {
		bft_warn("%s: HIST record at seg %" PRIu32 " offset %" PRIu64
		    " was damaged since open; dropping the entry", st->dir,
		    src->no, LOC_OFF(oldloc));
		owner_forget(st, block, side, ret, want);
		return 0;
	}
	if (!ok) {
		const uint8_t *p = st_meta_read(st, oldloc, type, block, len);

		/* A hit is what was checked when it was cached. */
		if (p == NULL)
			return -EUCLEAN;
		memmove(st->rbuf, p, meta);
	}
	bft_rec_restamp(st->rbuf, len, st->n, st->next_seq);
	if ((err = st_append_rec(st, st->rbuf, len, &loc)) < 0)
		return err;
	st_live_dec(st, oldloc, len);
	st_live_inc(st, loc, len);
	st->copied += len;
	*owner_loc(st, block, side, ret) = loc;
	return 0;
}

/*
 * Removes every retired segment.  Only called right after a successful
 * sync, so the copies of their records are durable by then.
 */
int
st_unlink_retired(struct bft_store *st)
{
	char name[BFT_SEG_NAME_MAX];
	size_t i = 0;

	while (i < st->nseg) {
		struct seg *s = &st->segs[i];

		if (!s->retired) {
			i++;
			continue;
		}
		bft_seg_name(name, s->no);
		if (unlinkat(st->dirfd, name, 0) < 0 && errno != ENOENT)
			return -errno;
		close(s->fd);
		memmove(s, s + 1, (st->nseg - i - 1) * sizeof *s);
		st->nseg--;
		st->nretired--;
		st->dir_dirty = true;
		st->dir_gen++;
	}
	return 0;
}

/*
 * Retires the compacted segment.  Unlinking it needs its copies to be
 * durable first, and an fdatasync of up to a segment of fresh data on
 * the event loop stalls every client for hundreds of milliseconds; so
 * the unlink waits for the next sync, which clients ask for with FLUSH.
 * Only a pile of retired segments forces a sync here.
 */
static int
compact_finish(struct bft_store *st)
{
	struct seg *src = st_seg_find(st, st->cmp_no);
	char name[BFT_SEG_NAME_MAX];

	if (src->live != 0) {
		bft_seg_name(name, src->no);
		bft_warn("%s/%s: %" PRIu64 " live bytes left after compaction; "
		    "keeping it", st->dir, name, src->live);
		src->stuck = true;
		st->cmp_no = 0;
		return 0;
	}
	src->retired = true;
	st->nretired++;
	st->removed += src->size;
	st->cmp_no = 0;
	st->compactions++;
	if (st->nretired >= BFT_STORE_MAX_RETIRED)
		st_bg_sync_start(st);
	return 0;
}

/*
 * Keeps the segment being compacted, whose record at off cannot be
 * copied: damaged since open (an lc's or a DROP's, which cannot just be
 * forgotten as a HIST record is), or a DROP whose volume was written
 * again (store_drop.c).
 */
static void
keep_stuck(struct bft_store *st, struct seg *src, uint64_t off,
    const struct bft_rec_hdr *h, int err)
{
	if (err == -EBUSY)
		bft_warn("%s: seg %" PRIu32 " offset %" PRIu64 ": volume %"
		    PRIu32 " was written again after it was dropped; keeping "
		    "the segment, which holds its DROP", st->dir, src->no,
		    off, bft_addr_vol(h->block));
	else
		bft_warn("%s: seg %" PRIu32 " offset %" PRIu64 ": %s record "
		    "was damaged since open; keeping the segment", st->dir,
		    src->no, off, h->type == BFT_REC_DROP ? "a DROP" :
		    h->type == BFT_REC_UNSNAP ? "an UNSNAP" : "an lc");
	src->stuck = true;
	st->cmp_no = 0;
}

/*
 * Compacts the current victim, picking one if there is none, until
 * budget bytes of it were scanned or it is done; one victim at most.
 * Returns the bytes scanned.
 */
static uint64_t
compact_run(struct bft_store *st, uint64_t budget)
{
	uint8_t hdr[BFT_REC_HDR_LEN];
	struct bft_rec_hdr h;
	struct seg *src;
	uint64_t done = 0;
	int err = 0;

	if (st->cmp_no == 0) {
		if ((src = compact_pick(st)) == NULL)
			return 0;
		st->cmp_no = src->no;
		st->cmp_off = 0;
	}
	while (done < budget) {
		uint64_t off = st->cmp_off, avail;
		struct ret_rec *ret = NULL;
		size_t len;
		long side;

		src = st_seg_find(st, st->cmp_no);
		/*
		 * Live bytes are exact: with none left, the rest is garbage,
		 * but for the DROP records it still holds (store_drop.c).
		 */
		if (off >= src->end || (src->live == 0 && src->drops == 0)) {
			err = compact_finish(st);
			break;
		}
		avail = src->end - off;
		err = bft_pread_all(src->fd, hdr, avail < sizeof hdr ?
		    (size_t)avail : sizeof hdr, off);
		if (err < 0)
			break;
		if (bft_rec_check_hdr(hdr, avail, st->n, &h) != BFT_REC_OK) {
			bft_warn("%s: seg %" PRIu32 " offset %" PRIu64 " no "
			    "longer parses; not compacting it", st->dir,
			    src->no, off);
			src->stuck = true;
			st->cmp_no = 0;
			return done;
		}
		len = BFT_REC_HDR_LEN + (size_t)h.payload_len +
		    BFT_REC_SUM_LEN;
		if (rec_owner(st, LOC(src->no, off), &h, &side, &ret) &&
		    (err = compact_copy(st, &h, LOC(src->no, off), len, side,
		    ret)) < 0) {
			if (err != -EUCLEAN && err != -EBUSY)
				break;
			keep_stuck(st, src, off, &h, err);
			return done;
		}
		st->cmp_off = off + len;
		done += len;
	}
	if (err < 0 && !st->cmp_failing)
		bft_warn("%s: compaction: %s; will retry", st->dir,
		    strerror(-err));
	st->cmp_failing = err < 0;
	return done;
}

/*
 * One bounded step of compaction, after an append of appended bytes.
 * Scanning four times what was appended frees space faster than a
 * workload can make garbage while the victim is at most half live.
 */
void
st_compact_step(struct bft_store *st, size_t appended)
{
	compact_run(st, 4 * (uint64_t)appended + COMPACT_MIN_BUDGET);
}

/*
 * Compaction without appends (store.h), for a server that is idle: a
 * deleted volume or a trim leaves garbage that nothing else would
 * reclaim until the next write.  Victims follow one another within the
 * budget, and a segment with nothing live in it costs none of it (it
 * is retired without a read).  The budget bounds the reads and copies
 * on the caller's thread; the syncs and unlinks stay on store_sync.c's
 * thread, and a victim is not started while it is busy with as many
 * retired segments as compact_finish hands it: the next retirement
 * would wait for that thread's fdatasync here.
 */
bool
bft_store_compact_idle(struct bft_store *st, uint64_t budget)
{
	uint64_t done = 0, before = st->copied;
	bool more = true;

	for (;;) {
		bool busy = st_bg_sync_busy(st);

		if (busy && st->nretired >= BFT_STORE_MAX_RETIRED)
			break;
		if (st->cmp_no == 0 && compact_pick(st) == NULL) {
			/* Retired segments go once their copies are synced. */
			if (st->nretired > 0 && !busy)
				st_bg_sync_start(st);
			more = st->nretired > 0 || st->bg_job != NULL;
			break;
		}
		done += compact_run(st, budget - done);
		if (st->cmp_failing || done >= budget)
			break;
	}
	/* Copies count towards the next checkpoint, as appends do. */
	if (st->copied != before)
		st_ckpt_after_append(st);
	return more;
}
