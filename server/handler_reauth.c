/*
 * REAUTH (wire.h, docs/key-epochs.md): a writer gives a version this
 * server stores the MACs of the next key epoch.  Only a writer may, as
 * for a STORE: its role (net.c refuses others with EPERM) and this
 * server's entry of the new MAC vector, checked under the key the
 * server holds for the newest epoch it accepts, and under that one
 * alone: a REAUTH under an older epoch would take a version back to
 * MACs that are about to be retired, which a leaked old key must not be
 * able to do.  The version must be one the server holds, lc or a
 * Hist entry of the same (num, wid) and nonce hash: a REAUTH changes
 * MACs only, so it can never make the server hold a value it did not,
 * and needs no fencing.  The vector entry binds ts.mac too
 * (crypto.h), so a writer cannot pass a garbled timestamp MAC either.
 * In a snapshot's view (gen below BFT_GEN_MAX) the version is the one
 * the view holds, from a frozen view's retained records.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "crypto.h"
#include "handler.h"
#include "keys.h"
#include "log.h"

void
bft_handle_reauth(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep)
{
	int r;

	if (req->ts.num == 0) {
		rep->status = BFT_EPROTO;
		return;
	}
	if (!bft_vec_verify(&req->ts, req->block, req->nh,
	    bft_server_newest_key(h->key), req->vec[h->key->index])) {
		if (bft_log_sampled(++h->stats.eauth))
			bft_log("conn %s: REAUTH block %" PRIu64 " ts %" PRIu64
			    "/%" PRIu64 ": bad MAC (%" PRIu64 " so far)", peer,
			    req->block, req->ts.num, req->ts.wid,
			    h->stats.eauth);
		rep->status = BFT_EAUTH;
		return;
	}
	r = bft_store_view_relabel(h->st, req->block, req->gen, &req->ts,
	    req->nh, (const uint8_t (*)[BFT_MAC_LEN])req->vec, h->fragbuf);
	switch (r) {
	case -ENOENT:
		rep->status = BFT_EGONE;
		return;
	case -ERANGE:
		rep->status = BFT_ERANGE;
		return;
	case -EIDRM:
		rep->status = BFT_EGONE;
		return;
	default:
		break;
	}
	if (r < 0) {
		h->stats.store_errors++;
		bft_warn("conn %s: REAUTH block %" PRIu64 ": %s", peer,
		    req->block, strerror(-r));
		rep->status = r == -ENOSPC ? BFT_ENOSPC : BFT_EIO;
		return;
	}
	h->stats.relabelled += (uint64_t)r;
	rep->status = BFT_OK;
}
