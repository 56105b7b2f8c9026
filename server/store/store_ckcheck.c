/*
 * The check after an open from the index checkpoint: every record the
 * index points to must lie in a segment that is still there, within its
 * size.  Whatever fails it makes open replay the whole log instead.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "store_int.h"
#include "store_log.h"

static bool
loc_ok(struct bft_store *st, uint64_t loc, size_t len)
{
	const struct seg *s = st_seg_find(st, LOC_SEG(loc));

	return s != NULL && !s->retired && LOC_OFF(loc) + len <= s->size;
}

static int
ret_loc_ok(void *arg, uint64_t addr, const struct ret_rec *r)
{
	struct bft_store *st = arg;

	(void)addr;
	return r->type == 0 || loc_ok(st, r->loc, st_ret_len(st, r)) ? 0 :
	    -EINVAL;
}

/* The boundaries' SNAP records and the retained records, likewise. */
static bool
snap_locs_ok(struct bft_store *st, char *why, size_t whylen)
{
	for (size_t i = 0; i < st->nsvols; i++) {
		const struct snap_vol *sv = &st->svols[i];

		for (uint32_t k = 0; k < sv->ngens; k++) {
			if (loc_ok(st, sv->gens[k].loc, bft_rec_snap_len()))
				continue;
			snprintf(why, whylen, "volume %" PRIu32 "'s SNAP "
			    "record is not where the checkpoint and the log "
			    "after it say", sv->vol);
			return false;
		}
	}
	if (st_ret_walk(st, ret_loc_ok, st) < 0) {
		snprintf(why, whylen, "a retained record is not where the "
		    "checkpoint and the log after it say");
		return false;
	}
	return true;
}

bool
st_ckpt_locs_ok(struct bft_store *st, char *why, size_t whylen)
{
	size_t lc = bft_rec_lc_len(st->n);

	for (uint64_t b = 0; st_idx_next(st, &b); b++) {
		const struct blk_idx *x = st_idx(st, b);

		if ((x->lc_loc != 0 && !loc_ok(st, x->lc_loc, lc)) ||
		    ((x->flags & IDX_HENT) && !loc_ok(st, x->h_loc,
		    bft_rec_hist_len(st->n, x->h_frag_len)))) {
			snprintf(why, whylen, "block %" PRIu64 "'s records are "
			    "not where the checkpoint and the log after it "
			    "say", b);
			return false;
		}
	}
	for (size_t i = 0; i < st->side.cap; i++) {
		const struct side_ent *e = &st->side.e[i];

		if (e->block != SIDE_EMPTY && !loc_ok(st, e->loc,
		    bft_rec_hist_len(st->n, e->frag_len))) {
			snprintf(why, whylen, "a pending entry of block %" PRIu64
			    " is not where the checkpoint says", e->block);
			return false;
		}
	}
	return snap_locs_ok(st, why, whylen);
}
