/*
 * SNAP (wire.h): a writer asks this server to keep a volume's view at a
 * snapshot's boundary generation, or to forget it when the snapshot is
 * deleted (docs/snapshots.md).  Forgetting frees versions as surely as
 * a DROP, and keeping them costs disk, so it takes what a DROP takes: a
 * writer's role (net.c refuses others with EPERM before this is called)
 * and this server's entry of a MAC vector only writers can make.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "crypto.h"
#include "handler.h"
#include "log.h"
#include "summary.h"

static int
snap_failed(struct bft_handler *h, const char *peer, uint32_t vol,
    const char *what, int err)
{
	h->stats.store_errors++;
	bft_warn("conn %s: SNAP volume %" PRIu32 ": %s: %s", peer, vol, what,
	    strerror(-err));
	return err == -ENOSPC ? BFT_ENOSPC : BFT_EIO;
}

void
bft_handle_snap(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep)
{
	struct bft_mac_keys ki = bft_server_mac_keys(h->key);
	uint32_t vol = bft_addr_vol(req->block);
	bool add = req->snap_op == BFT_SNAP_ADD, held;
	int err;

	/* The decoder lets only a volume's block 0 and ops 0, 1 through. */
	if (bft_addr_block(req->block) != 0 || req->snap_op > BFT_SNAP_REMOVE) {
		rep->status = BFT_EPROTO;
		return;
	}
	if (!bft_snap_check(vol, req->gen, req->snap_op, &ki,
	    req->vec[h->key->index])) {
		if (bft_log_sampled(++h->stats.eauth))
			bft_log("conn %s: SNAP volume %" PRIu32 ": bad MAC (%"
			    PRIu64 " so far)", peer, vol, h->stats.eauth);
		rep->status = BFT_EAUTH;
		return;
	}
	/*
	 * Held already (a creator's retry, the rebuild's reading of the
	 * table): nothing to append or log, but synced as below, in case
	 * the sync of the first add is what failed.
	 */
	held = add && bft_store_snap_held(h->st, vol, req->gen);
	err = held ? 0 : add ? bft_store_snap_add(h->st, vol, req->gen) :
	    bft_store_snap_remove(h->st, vol, req->gen);
	/* The reserved volumes are not snapshotted. */
	if (err == -EINVAL) {
		rep->status = BFT_EPROTO;
		return;
	}
	if (err == -EIDRM) {
		rep->status = BFT_EGONE;
		return;
	}
	/*
	 * A block of the volume already completed a write of a newer
	 * generation: what it replaced is gone here, so this server cannot
	 * keep the view.  Not a failure of its disk: the snapshot is taken
	 * at the n-t servers that can, or again at a newer boundary.
	 */
	if (err == -ESTALE) {
		bft_log("conn %s: SNAP volume %" PRIu32 ": written past "
		    "generation %" PRIu64 " already: refused", peer, vol,
		    req->gen);
		rep->status = BFT_ESTALE;
		return;
	}
	if (err < 0) {
		rep->status = snap_failed(h, peer, vol, "store", err);
		return;
	}
	/*
	 * Synced before the ack: the snapshot's creator counts this server
	 * among the n-t that keep the view, and fences the holder next.
	 */
	if ((err = bft_store_sync(h->st)) < 0) {
		rep->status = snap_failed(h, peer, vol, "sync", err);
		return;
	}
	if (!held)
		bft_log("conn %s: volume %" PRIu32 ": %s the view at "
		    "generation %" PRIu64, peer, vol, add ? "keeps" : "forgot",
		    req->gen);
}

/* Blocks a VLIST examines at most: its cost, whatever it lists. */
#define VLIST_STEPS	65536u

/*
 * VLIST (wire.h): what changed between two snapshots, as this server
 * knows it.  A reader takes the union over every server that answers,
 * so a block a correct server that kept the boundary and completed the
 * write lists is never missed; a liar can only add blocks, which the
 * reader then reads for nothing.  The walk goes over the blocks the
 * view at from froze, which is what it costs.
 */
void
bft_handle_vlist(struct bft_handler *h, const struct bft_msg *req,
    struct bft_msg *rep)
{
	uint32_t vol = bft_addr_vol(req->block);
	uint64_t end, a = req->block, found;
	uint32_t n = 0, steps = 0;
	struct bft_cand c;

	if (req->count < 1 || req->count > bft_vol_limit(vol,
	    h->cfg->nblocks) - bft_addr_block(req->block)) {
		rep->status = BFT_ERANGE;
		return;
	}
	end = req->block + req->count;
	/* Not a boundary kept here: this server cannot say what changed. */
	if (bft_store_view_lc(h->st, bft_addr(vol, 0), req->gen, &c) ==
	    -ENOENT) {
		rep->status = BFT_EAGAIN;
		return;
	}
	while (n < BFT_LCLIST_MAX && steps++ < VLIST_STEPS) {
		found = bft_store_view_next(h->st, vol, req->gen, a);
		if (found == UINT64_MAX || found >= end) {
			a = end;
			break;
		}
		a = found + 1;
		/*
		 * Changed only after to, where to is a boundary kept here:
		 * the view at to still holds the version from had.
		 */
		if (req->gen_to != BFT_GEN_MAX && bft_store_view_lc(h->st,
		    found, req->gen_to, &c) == 0 &&
		    bft_ts_gen(&c.ts) <= req->gen)
			continue;
		bft_vlentry_put(h->infobuf + (size_t)n * BFT_VLENTRY_LEN, found);
		n++;
	}
	rep->next = a;
	rep->entries = h->infobuf;
	rep->nentries = n;
}

/*
 * Retained blocks one SNAPSPACE walks at most: each costs the records
 * it holds times the volume's boundaries, so a request stays a small
 * fraction of a millisecond's work whatever the volume's size.
 */
#define SNAPSPACE_STEPS	4096u

void
bft_handle_snapspace(struct bft_handler *h, const struct bft_msg *req,
    struct bft_msg *rep)
{
	uint32_t vol = bft_addr_vol(req->block);
	uint64_t gens[BFT_STORE_MAX_SNAPS];
	size_t n, i;

	n = bft_store_snaps(h->st, vol, gens, BFT_STORE_MAX_SNAPS);
	for (i = 0; i < n && gens[i] != req->gen; i++)
		;
	/* Not a boundary kept here: nothing to say of its space. */
	if (i == n) {
		rep->status = BFT_EAGAIN;
		return;
	}
	rep->next = bft_store_snap_space_from(h->st, vol, req->gen,
	    req->block, SNAPSPACE_STEPS, &rep->space_excl);
	rep->space_total = bft_store_snap_retained(h->st, vol);
}
