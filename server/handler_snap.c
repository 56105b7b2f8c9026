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
	uint32_t vol = bft_addr_vol(req->block);
	bool add = req->snap_op == BFT_SNAP_ADD;
	int err;

	/* The decoder lets only a volume's block 0 and ops 0, 1 through. */
	if (bft_addr_block(req->block) != 0 || req->snap_op > BFT_SNAP_REMOVE) {
		rep->status = BFT_EPROTO;
		return;
	}
	if (!bft_snap_verify(vol, req->gen, req->snap_op, h->key->k,
	    req->vec[h->key->index])) {
		if (bft_log_sampled(++h->stats.eauth))
			bft_log("conn %s: SNAP volume %" PRIu32 ": bad MAC (%"
			    PRIu64 " so far)", peer, vol, h->stats.eauth);
		rep->status = BFT_EAUTH;
		return;
	}
	err = add ? bft_store_snap_add(h->st, vol, req->gen) :
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
	bft_log("conn %s: volume %" PRIu32 ": %s the view at generation %"
	    PRIu64, peer, vol, add ? "keeps" : "forgot", req->gen);
}
