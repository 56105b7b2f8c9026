/*
 * DROP (wire.h): a writer asks this server to forget one volume, its
 * blocks and their records, when the volume is deleted.  It destroys
 * data as surely as an overwrite, so it takes what a STORE takes: a
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
drop_failed(struct bft_handler *h, const char *peer, uint32_t vol,
    const char *what, int err)
{
	h->stats.store_errors++;
	bft_warn("conn %s: DROP volume %" PRIu32 ": %s: %s", peer, vol, what,
	    strerror(-err));
	return err == -ENOSPC ? BFT_ENOSPC : BFT_EIO;
}

void
bft_handle_drop(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep)
{
	struct bft_mac_keys ki = bft_server_mac_keys(h->key);
	uint32_t vol = bft_addr_vol(req->block);
	uint64_t blocks = 0;
	int err;

	/* The decoder lets only a volume's block 0 through. */
	if (bft_addr_block(req->block) != 0) {
		rep->status = BFT_EPROTO;
		return;
	}
	if (!bft_drop_check(vol, &ki, req->vec[h->key->index])) {
		if (bft_log_sampled(++h->stats.eauth))
			bft_log("conn %s: DROP volume %" PRIu32 ": bad MAC (%"
			    PRIu64 " so far)", peer, vol, h->stats.eauth);
		rep->status = BFT_EAUTH;
		return;
	}
	/*
	 * The cluster's disk and the reserved volumes (the table, the
	 * leases) are no writer's to delete: the store refuses them.
	 */
	err = bft_store_drop_volume(h->st, vol, &blocks);
	if (err == -EINVAL) {
		rep->status = BFT_EPROTO;
		return;
	}
	if (err < 0) {
		rep->status = drop_failed(h, peer, vol, "store", err);
		return;
	}
	/*
	 * Synced before the ack, even when nothing was left to drop: the
	 * deleting client forgets the volume once every server acked, and a
	 * retry after a failed sync must make the first DROP durable.
	 */
	if ((err = bft_store_sync(h->st)) < 0) {
		rep->status = drop_failed(h, peer, vol, "sync", err);
		return;
	}
	bft_log("conn %s: dropped volume %" PRIu32 " (%" PRIu64 " blocks)",
	    peer, vol, blocks);
}
