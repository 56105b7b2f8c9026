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

/* The block whose live record is at loc, and which one (-1: lc). */
static struct blk *
rec_owner(struct bft_store *st, uint64_t loc, const struct bft_rec_hdr *h,
    int *idx)
{
	struct blk *b;

	if (h->block >= st->id.nblocks || (b = st->blocks[h->block]) == NULL)
		return NULL;
	*idx = -1;
	if (h->type == BFT_REC_LC)
		return b->lc_loc == loc ? b : NULL;
	for (unsigned i = 0; i < b->nhist; i++) {
		if (blk_hent(st, b, i)->loc == loc) {
			*idx = (int)i;
			return b;
		}
	}
	return NULL;
}

static int
compact_copy(struct bft_store *st, uint64_t oldloc, size_t len,
    uint64_t block, struct blk *b, int idx)
{
	struct seg *src = st_seg_find(st, LOC_SEG(oldloc));
	struct bft_hist_meta m;
	struct bft_rec_hdr h;
	struct bft_cand c;
	uint64_t loc;
	bool ok;
	int err;

	if ((err = bft_pread_all(src->fd, st->rbuf, len, LOC_OFF(oldloc))) < 0)
		return err;
	ok = bft_rec_check(st->rbuf, len, st->n, &h) == BFT_REC_OK;
	if (ok && idx >= 0) {
		bft_rec_decode_hist(st->rbuf, st->n, &m);
		ok = bft_ts_cmp(&m.ts, &blk_hent(st, b, (unsigned)idx)->ts) ==
		    0;
	}
	if (!ok && idx >= 0) {
		bft_warn("%s: HIST record at seg %" PRIu32 " offset %" PRIu64
		    " was damaged since open; dropping the entry", st->dir,
		    src->no, LOC_OFF(oldloc));
		st_hist_drop(st, b, (unsigned)idx);
		return 0;
	}
	/* lc was checked when it came in; memory can rewrite it. */
	if (!ok) {
		st_lc_expand(st, b, &c);
		bft_rec_encode_lc(st->rbuf, st->n, 0, block, &c);
	}
	bft_rec_restamp(st->rbuf, len, st->next_seq);
	if ((err = st_append_rec(st, st->rbuf, len, &loc)) < 0)
		return err;
	st_live_dec(st, oldloc, len);
	st_live_inc(st, loc, len);
	st->copied += len;
	if (idx < 0)
		b->lc_loc = loc;
	else
		blk_hent(st, b, (unsigned)idx)->loc = loc;
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
	st->cmp_no = 0;
	st->compactions++;
	if (st->nretired >= BFT_STORE_MAX_RETIRED)
		st_bg_sync_start(st);
	return 0;
}

/*
 * One bounded step of compaction, after an append of appended bytes.
 * Scanning four times what was appended frees space faster than a
 * workload can make garbage while the victim is at most half live.
 */
void
st_compact_step(struct bft_store *st, size_t appended)
{
	uint64_t budget = 4 * (uint64_t)appended + COMPACT_MIN_BUDGET;
	uint8_t hdr[BFT_REC_HDR_LEN];
	struct bft_rec_hdr h;
	struct seg *src;
	int err = 0;

	if (st->cmp_no == 0) {
		if ((src = compact_pick(st)) == NULL)
			return;
		st->cmp_no = src->no;
		st->cmp_off = 0;
	}
	for (uint64_t done = 0; done < budget;) {
		uint64_t off = st->cmp_off, avail;
		struct blk *b;
		size_t len;
		int idx;

		src = st_seg_find(st, st->cmp_no);
		/* Live bytes are exact: with none left, the rest is garbage. */
		if (off >= src->end || src->live == 0) {
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
			return;
		}
		len = BFT_REC_HDR_LEN + (size_t)h.payload_len +
		    BFT_REC_SUM_LEN;
		b = rec_owner(st, LOC(src->no, off), &h, &idx);
		if (b != NULL &&
		    (err = compact_copy(st, LOC(src->no, off), len, h.block, b,
		    idx)) < 0)
			break;
		st->cmp_off = off + len;
		done += len;
	}
	if (err < 0 && !st->cmp_failing)
		bft_warn("%s: compaction: %s; will retry", st->dir,
		    strerror(-err));
	st->cmp_failing = err < 0;
}
