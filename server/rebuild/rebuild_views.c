/*
 * Snapshots' views for a new data directory (rebuild_int.h).
 *
 * A server whose disk was replaced holds no boundaries and no views.
 * Learning the boundaries from the volume table is not enough: a block
 * rebuilt straight to its head would move lc past each boundary from
 * "never written", and the store would freeze that as the view, a vote
 * against the real version in a reader's invalid().  So the boundaries
 * come first, before any block of their volume has a value here, and
 * then each block's views are adopted as its writes once came, oldest
 * boundary first, the head last: every step moves lc past the
 * boundaries below it from the version their view holds, and the store
 * keeps that version there as it would have live.  Until a block has
 * had its turn, the handler refuses clients' COMPLETEs and write-backs
 * that would be its first value (bft_handler_heal_holds).  Safety
 * argument: docs/snapshots.md, "A wiped server".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "log.h"
#include "rebuild_int.h"

/* Snapshots a volume table can hold, and so boundaries to learn. */
#define BOUNDS_MAX	4096u

/*
 * Asks this server's handler to keep vol's view at gen, as the SNAP of
 * the snapshot's creator did at the servers that took it: the table
 * entry, read from t+1 servers that agree, says the creator sent it.
 * The MAC entry is this server's own.  The handler's status, or -1.
 */
static int
take_bound(struct bft_rebuild *rb, const struct bftblk__bound *b)
{
	struct bft_msg *req = &rb->req, *rep = &rb->lrep;
	struct bft_buf out = { 0 };
	int st;

	memset(req, 0, sizeof *req);
	req->type = BFT_SNAP;
	req->block = bft_addr(b->vol, 0);
	req->gen = b->gen;
	req->snap_op = BFT_SNAP_ADD;
	bft_snap_mac(b->vol, b->gen, BFT_SNAP_ADD, rb->key->k,
	    req->vec[rb->key->index]);
	st = rb_local(rb, req, rep, &out);
	bft_buf_free(&out);
	return st;
}

static bool has_bound(const struct bft_rebuild *rb, uint32_t vol,
    uint64_t gen);

/*
 * A new directory (fresh) takes every boundary the table lists, before
 * any block has a value here, and keeps in rb->bounds those it took,
 * for rb_rebuild_views.  A directory with data takes on each pass those
 * the table lists that the last pass did not (all of them on the first
 * pass after a start), and keeps in rb->bounds every one listed: a
 * snapshot made while the server was down is learned before the
 * catch-up moves its blocks past the boundary, and the blocks' current
 * values, which the server held when the snapshot was cut, become the
 * views (docs/snapshots.md, "A server that was away").
 */
int
rb_learn_bounds(struct bft_rebuild *rb, bool fresh)
{
	struct bftblk__bound *all;
	unsigned n, kept = 0, refused = 0;
	int r = -1;

	if (rb_open_lib(rb, &rb->kind[0], false) != 0)
		return -1;
	if ((all = calloc(BOUNDS_MAX, sizeof *all)) == NULL)
		return -1;
	if (bftblk__peer_bounds(rb->kind[0].lib, all, BOUNDS_MAX, &n) != 0) {
		/* Once per outage where it is tried on every pass. */
		if (fresh || !rb->bounds_failing)
			bft_log("rebuild: cannot read the volume table's "
			    "snapshots yet (%s); trying again",
			    bftblk_errmsg(rb->kind[0].lib));
		rb->bounds_failing = true;
		goto out_free;
	}
	rb->bounds_failing = false;
	if (n > BOUNDS_MAX) {
		bft_warn("rebuild: the volume table lists %u snapshots; only "
		    "the first %u are %s", n, BOUNDS_MAX, fresh ? "rebuilt" :
		    "looked at");
		n = BOUNDS_MAX;
	}
	for (unsigned i = 0; i < n; i++) {
		int st;

		if (!fresh && has_bound(rb, all[i].vol, all[i].gen)) {
			all[kept++] = all[i];
			continue;
		}
		switch (st = take_bound(rb, &all[i])) {
		case BFT_OK:
			all[kept++] = all[i];
			break;
		case BFT_EGONE:		/* deleted since the table was read */
		case BFT_EPROTO:	/* a reserved volume: no views */
			break;
		case BFT_ESTALE:
			/*
			 * A write of a newer generation completed here before
			 * the boundary was learned: the view stays unknown
			 * here (EAGAIN to readers), as at a server that
			 * missed the snapshot.
			 */
			refused++;
			if (!fresh) {
				all[kept++] = all[i];	/* not asked again */
				break;
			}
			bft_warn("rebuild: volume %" PRIu32 ": written past "
			    "generation %" PRIu64 " before its snapshot was "
			    "learned; that view is not rebuilt here",
			    all[i].vol, all[i].gen);
			break;
		default:
			bft_log("rebuild: volume %" PRIu32 ": keeping the view "
			    "at generation %" PRIu64 ": %s", all[i].vol,
			    all[i].gen, st < 0 ? "no answer" :
			    bft_status_str(st));
			goto out_free;
		}
	}
	if (!fresh && refused > 0)
		bft_warn("rebuild: %u snapshots' views are not held here: "
		    "this server completed writes past their generations "
		    "before it learned of them", refused);
	free(rb->bounds);
	rb->bounds = all;
	rb->nbounds = kept;
	all = NULL;
	if (fresh && kept > 0)
		bft_log("rebuild: keeping %u snapshots' views; each block's "
		    "views are rebuilt before its head", kept);
	r = 0;
out_free:
	free(all);
	return r;
}

static int
gen_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Whether rb->bounds holds (vol, gen); they are sorted. */
static bool
has_bound(const struct bft_rebuild *rb, uint32_t vol, uint64_t gen)
{
	const struct bftblk__bound key = { vol, gen };
	size_t lo = 0, hi = rb->nbounds;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct bftblk__bound *m = &rb->bounds[mid];

		if (m->vol < key.vol || (m->vol == key.vol && m->gen < key.gen))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < rb->nbounds && rb->bounds[lo].vol == vol &&
	    rb->bounds[lo].gen == gen;
}

/* Whether b is among list[0..n). */
static bool
listed(const uint64_t *list, size_t n, uint64_t b)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == b)
			return true;
	return false;
}

void
rb_rebuild_views(struct bft_rebuild *rb, uint64_t *blocks, unsigned *nb,
    uint64_t *fails, size_t *nfails)
{
	uint64_t gens[BFTBLK__PEER_BATCH * 4], sub[BFTBLK__PEER_BATCH];
	uint64_t sealed[BFTBLK__PEER_BATCH], vfail[BFTBLK__PEER_BATCH];
	size_t ngens = 0, nvf = 0;
	unsigned w = 0;

	if (rb->nbounds == 0 || *nb == 0)
		return;
	/* The boundaries of the batch's volumes (few: a batch is 32). */
	for (size_t i = 0; i < rb->nbounds && ngens < sizeof gens /
	    sizeof gens[0]; i++) {
		for (unsigned j = 0; j < *nb; j++)
			if (bft_addr_vol(blocks[j]) == rb->bounds[i].vol) {
				gens[ngens++] = rb->bounds[i].gen;
				break;
			}
	}
	qsort(gens, ngens, sizeof gens[0], gen_cmp);
	for (size_t g = 0; g < ngens && !rb->stopping; g++) {
		unsigned ns = 0, nsealed = 0;

		if (g > 0 && gens[g] == gens[g - 1])
			continue;
		for (unsigned j = 0; j < *nb; j++)
			if (has_bound(rb, bft_addr_vol(blocks[j]), gens[g]) &&
			    !listed(vfail, nvf, blocks[j]))
				sub[ns++] = blocks[j];
		if (ns == 0)
			continue;
		rb_rebuild_batch(rb, 0, gens[g], sub, ns, sealed, &nsealed,
		    vfail, &nvf);
		if (nsealed > 0)
			rb_rebuild_batch(rb, 1, gens[g], sealed, nsealed, NULL,
			    NULL, vfail, &nvf);
		rb->bytes += (uint64_t)ns * BFT_BLOCK_SIZE;
	}
	/* A block whose view could not be had keeps its head for later. */
	for (unsigned j = 0; j < *nb; j++) {
		if (listed(vfail, nvf, blocks[j]) || rb->stopping)
			fails[(*nfails)++] = blocks[j];
		else
			blocks[w++] = blocks[j];
	}
	*nb = w;
}
