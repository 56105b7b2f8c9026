/*
 * Forgetting a volume (DROP, wire.h): its index entries go, and the
 * records they pointed to become garbage for compaction.
 *
 * Nothing in a volume's own records says it was dropped, so a DROP
 * record in the log says it, and replay forgets the volume where it
 * meets one, as the live store did.  The volume's older records stay
 * in older segments until compaction removes them (as garbage, never
 * copied), and replay must always meet a DROP after them: so a DROP
 * record is never garbage, and compaction copies every one it meets
 * forward.  Each segment counts the DROP records it holds (struct seg's
 * drops, kept in the checkpoint), so that compaction does not stop at a
 * segment's last live byte before them.  They are not counted as live
 * bytes: a segment's copy of a DROP that a crash kept beside the
 * original is then no data either way, and a restart from a checkpoint
 * and one from the whole log find the same live bytes.
 *
 * A copy moves the DROP past whatever was appended since it was first
 * written.  That is harmless while the volume holds nothing: replay
 * then forgets at the copy what the live store no longer had.  But a
 * volume written again after its DROP (a stale writer, or an id used
 * twice by hand) has live records that a copy would land after, and
 * replay would forget them.  Such a DROP is not copied: its segment is
 * kept until the volume is dropped again or the server restarts (the
 * "volume written again" warning).  Ids of deleted volumes are never
 * reused (docs/volumes.md), so this is rare, and it costs a segment of
 * disk rather than data.
 *
 * A dropped volume stays dropped.  Its old candidates still carry MACs
 * that verify, and after the DROP its lc is zero, so a write-back
 * (FILTER), a REPAIR, a STORE or the rebuild's adoption of one would
 * bring it back, and nothing could remove it again: its name is gone
 * from the volume table.  So the store remembers every volume ever
 * dropped (st->dropped) and refuses records of them with -EIDRM.  The
 * set follows the DROP records: replay adds each one it meets (they are
 * never compacted away), and the index checkpoint carries it for the
 * log before its position.  A DROP is appended even on a server that
 * holds nothing of the volume, since that server, too, must refuse it
 * from then on.  Replay skips records of a dropped volume found after
 * its DROP: an older server accepted such writes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_int.h"
#include "store_log.h"

/* Forgets the entries x of block addr; true if it had any. */
static bool
blk_drop(struct bft_store *st, uint64_t addr, struct blk_idx *x)
{
	bool any = x->lc_loc != 0 || x->flags != 0 ||
	    !bft_ts_is_zero(&x->lc_ts);
	long pos;

	/* A deletion shifts the side table's entries: look up anew. */
	while (IDX_NSIDE(x) > 0) {
		pos = -1;
		if (!st_side_next(st, addr, &pos))
			break;
		st_side_drop(st, pos);
	}
	if (x->flags & IDX_HENT)
		st_live_dec(st, x->h_loc, bft_rec_hist_len(st->n,
		    x->h_frag_len));
	if (x->lc_loc != 0)
		st_live_dec(st, x->lc_loc, bft_rec_lc_len(st->n));
	if (!bft_ts_is_zero(&x->lc_ts) && st->held > 0)
		st->held--;
	memset(x, 0, sizeof *x);
	return any;
}

/* Where vol is in st->dropped, or where it would go. */
static size_t
dropped_pos(const struct bft_store *st, uint32_t vol)
{
	size_t lo = 0, hi = st->ndropped;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->dropped[mid] < vol)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool
bft_store_dropped(const struct bft_store *st, uint32_t vol)
{
	size_t i = dropped_pos(st, vol);

	return i < st->ndropped && st->dropped[i] == vol;
}

/* Room for one more dropped volume.  0 or -ENOMEM. */
static int
dropped_reserve(struct bft_store *st)
{
	size_t cap = st->dropcap ? 2 * st->dropcap : 16;
	uint32_t *nd;

	if (st->ndropped < st->dropcap)
		return 0;
	if ((nd = realloc(st->dropped, cap * sizeof *nd)) == NULL)
		return -ENOMEM;
	st->dropped = nd;
	st->dropcap = cap;
	return 0;
}

int
st_dropped_add(struct bft_store *st, uint32_t vol)
{
	size_t i = dropped_pos(st, vol);
	int err;

	if (i < st->ndropped && st->dropped[i] == vol)
		return 0;
	if ((err = dropped_reserve(st)) < 0)
		return err;
	memmove(&st->dropped[i + 1], &st->dropped[i], (st->ndropped - i) *
	    sizeof *st->dropped);
	st->dropped[i] = vol;
	st->ndropped++;
	return 0;
}

/* The DROP records of the segment holding loc: one more, or one less. */
static void
drops_add(struct bft_store *st, uint64_t loc, int delta)
{
	struct seg *s = st_seg_find(st, LOC_SEG(loc));

	if (s != NULL && (delta > 0 || s->drops > 0))
		s->drops += (uint32_t)delta;
}

int
st_drop_apply(struct bft_store *st, uint32_t vol, uint64_t loc,
    uint64_t *blocks_dropped)
{
	const struct idx_vol *cv;
	struct idx_vol *v;
	uint64_t blocks = 0;
	size_t i;
	int err;

	*blocks_dropped = 0;
	drops_add(st, loc, 1);
	/* Volume 0 stays first in vols, always: it is never dropped. */
	if (vol == 0)
		return 0;
	if ((err = st_dropped_add(st, vol)) < 0)
		return err;
	st_snap_drop_vol(st, vol);
	if ((cv = st_idx_vol(st, vol)) == NULL)
		return 0;
	i = (size_t)(cv - st->vols);
	v = &st->vols[i];
	for (uint64_t p = 0; (p = st_pm_next(&v->map, p, &st->idx_steps)) !=
	    UINT64_MAX; p++) {
		struct blk_idx *page = v->pages[p];

		for (unsigned k = 0; k < IDX_PAGE; k++)
			if (blk_drop(st, bft_addr(vol, p << IDX_PAGE_SHIFT | k),
			    &page[k]))
				blocks++;
		free(page);
		v->pages[p] = NULL;
		st->pages_made--;
	}
	free(v->pages);
	st_pm_free(&v->map);
	memmove(&st->vols[i], &st->vols[i + 1], (st->nvols - i - 1) *
	    sizeof *st->vols);
	st->nvols--;
	*blocks_dropped = blocks;
	return 0;
}

int
bft_store_drop_volume(struct bft_store *st, uint32_t vol,
    uint64_t *blocks_dropped)
{
	uint64_t loc, blocks;
	size_t len;
	int err;

	if (blocks_dropped != NULL)
		*blocks_dropped = 0;
	if (!bft_rec_drop_ok(vol))
		return -EINVAL;
	/* Its DROP record is in the log already. */
	if (bft_store_dropped(st, vol))
		return 0;
	/* With room to remember it, the apply after the append cannot fail. */
	if ((err = dropped_reserve(st)) < 0)
		return err;
	len = bft_rec_encode_drop(st->wbuf, st->n, st->next_seq, vol);
	if ((err = st_append_rec(st, st->wbuf, len, &loc)) < 0)
		return err;
	(void)st_drop_apply(st, vol, loc, &blocks);
	if (blocks_dropped != NULL)
		*blocks_dropped = blocks;
	st_compact_step(st, len);
	st_ckpt_after_append(st);
	return 0;
}

int
st_drop_copy(struct bft_store *st, uint64_t oldloc, size_t len)
{
	struct seg *src = st_seg_find(st, LOC_SEG(oldloc));
	struct bft_rec_hdr h;
	uint64_t loc;
	int err;

	if ((err = bft_pread_all(src->fd, st->rbuf, len, LOC_OFF(oldloc))) < 0)
		return err;
	/*
	 * A damaged DROP cannot be rewritten from memory: its volume is
	 * only known from the damaged bytes, and a DROP of the wrong one
	 * would forget another volume at the next replay.
	 */
	if (bft_rec_check(st->rbuf, len, st->n, &h) != BFT_REC_OK ||
	    h.type != BFT_REC_DROP)
		return -EUCLEAN;
	if (st_idx_vol(st, bft_rec_decode_drop(st->rbuf)) != NULL)
		return -EBUSY;
	bft_rec_restamp(st->rbuf, len, st->n, st->next_seq);
	if ((err = st_append_rec(st, st->rbuf, len, &loc)) < 0)
		return err;
	drops_add(st, oldloc, -1);
	drops_add(st, loc, 1);
	st->copied += len;
	return 0;
}
