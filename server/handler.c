/*
 * The server side of M-PoWerStore (Dobre et al., Algorithm 5), one
 * request at a time.  Line numbers in comments refer to Algorithm 5.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "log.h"
#include "predicates.h"
#include "handler.h"

int
bft_handler_init(struct bft_handler *h, const struct bft_config *cfg,
    const struct bft_server_key *key, struct bft_store *st,
    unsigned max_pending)
{
	memset(h, 0, sizeof *h);
	h->cfg = cfg;
	h->key = key;
	h->st = st;
	h->max_pending = max_pending ? max_pending : BFT_DEFAULT_MAX_PENDING;
	h->fragbuf = malloc(BFT_MAX_FRAG);
	if (h->fragbuf == NULL || bft_handler_info_init(h) < 0) {
		bft_handler_fini(h);
		return -1;
	}
	return 0;
}

void
bft_handler_fini(struct bft_handler *h)
{
	free(h->fragbuf);
	h->fragbuf = NULL;
	free(h->infobuf);
	h->infobuf = NULL;
}

int
bft_handler_store_status(struct bft_handler *h, const char *peer,
    const char *what, uint64_t block, int err)
{
	/*
	 * Not a failure of the store: a stale write-back or write into a
	 * deleted volume, answered alike however often it comes.
	 */
	if (err == -EIDRM)
		return BFT_EGONE;
	h->stats.store_errors++;
	bft_warn("conn %s: %s block %" PRIu64 ": store: %s", peer, what, block,
	    strerror(-err));
	switch (err) {
	case -ENOSPC:	return BFT_ENOSPC;
	case -ESTALE:	return BFT_ESTALE;
	case -ERANGE:	return BFT_ERANGE;
	default:	return BFT_EIO;
	}
}

void
bft_handler_copy_vec(uint8_t dst[BFT_MAX_N][BFT_MAC_LEN],
    const uint8_t src[BFT_MAX_N][BFT_MAC_LEN], unsigned n)
{
	memset(dst, 0, BFT_MAX_N * BFT_MAC_LEN);
	memcpy(dst, src, (size_t)n * BFT_MAC_LEN);
}

static int
handle_hello(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep)
{
	const struct bft_config *cfg = h->cfg;
	char why[512], theirs[2 * BFT_CLUSTER_ID_LEN + 1];
	char ours[2 * BFT_CLUSTER_ID_LEN + 1];
	size_t off = 0;

#define DIFF(...) do { \
		int r_ = snprintf(why + off, sizeof why - off, __VA_ARGS__); \
		if (r_ > 0 && (size_t)r_ < sizeof why - off) \
			off += (size_t)r_; \
	} while (0)
	if (!bft_equal(req->cluster_id, cfg->cluster_id, BFT_CLUSTER_ID_LEN)) {
		bft_format_hex(req->cluster_id, BFT_CLUSTER_ID_LEN, theirs);
		bft_format_hex(cfg->cluster_id, BFT_CLUSTER_ID_LEN, ours);
		DIFF(" cluster-id %s (ours %s)", theirs, ours);
	}
	if (req->hello_n != cfg->n)
		DIFF(" n %" PRIu32 " (ours %u)", req->hello_n, cfg->n);
	if (req->hello_t != cfg->t)
		DIFF(" t %" PRIu32 " (ours %u)", req->hello_t, cfg->t);
	if (req->block_size != cfg->block_size)
		DIFF(" block-size %" PRIu32 " (ours %" PRIu32 ")",
		    req->block_size, cfg->block_size);
	if (req->nblocks != cfg->nblocks)
		DIFF(" nblocks %" PRIu64 " (ours %" PRIu64 ")", req->nblocks,
		    cfg->nblocks);
	if (req->server_index != h->key->index)
		DIFF(" server index %" PRIu32 " (ours %u)", req->server_index,
		    h->key->index);
#undef DIFF
	if (off == 0)
		return 0;
	h->stats.hello_mismatch++;
	bft_warn("conn %s: HELLO mismatch:%s", peer, why);
	rep->status = BFT_ECLUSTER;
	return 1;
}

/*
 * Whether a writer's STORE or COMPLETE comes from a lease holder that a
 * newer one replaced (predicates.h): refused, so that an old holder's
 * write cannot gather n-t acceptances once the new holder's claim
 * reached n-t servers.  Checked after the MAC, so that only a writer
 * learns a volume's generation this way.
 */
static bool
fenced(struct bft_handler *h, const char *peer, const char *what,
    const struct bft_msg *req, struct bft_msg *rep)
{
	struct bft_ts top = bft_store_top_ts(h->st,
	    bft_fence_addr(req->block));

	if (h->adopting || !bft_fenced(&req->ts, &top))
		return false;
	if (bft_log_sampled(++h->stats.fenced))
		bft_log("conn %s: %s block %" PRIu64 ": lease generation %"
		    PRIu64 " below the volume's %" PRIu64 ": refused (%"
		    PRIu64 " so far)", peer, what, req->block,
		    bft_ts_gen(&req->ts), bft_ts_gen(&top), h->stats.fenced);
	rep->status = BFT_EFENCED;
	return true;
}

bool
bft_handler_heal_holds(const struct bft_handler *h, uint64_t block)
{
	struct bft_ts lcts;

	if (!h->heal_fresh || h->adopting)
		return false;
	lcts = bft_store_lc_ts(h->st, block);
	return bft_ts_is_zero(&lcts) &&
	    bft_store_snaps(h->st, bft_addr_vol(block), NULL, 0) > 0;
}

bool
bft_handler_bounds_hold(const struct bft_handler *h, uint64_t block,
    const struct bft_ts *ts)
{
	uint32_t vol = bft_addr_vol(block);
	uint64_t top;

	if (!h->bounds_pending || h->adopting || vol >= BFT_VOL_TABLE)
		return false;
	top = bft_store_top_gen(h->st, vol);
	return top > 0 && bft_ts_gen(ts) > top;
}

bool
bft_handler_lock_taken(struct bft_handler *h, const char *peer,
    uint64_t block, const struct bft_ts *ts)
{
	struct bft_ts lc;

	/* One register of all: no index lookup for every other block. */
	if (h->adopting || !bft_is_lock_register(block))
		return false;
	lc = bft_store_lc_ts(h->st, block);
	if (!bft_lock_claim_refused(block, &lc, ts))
		return false;
	if (bft_log_sampled(++h->stats.lock_refused))
		bft_log("conn %s: the volume table's admin lock: generation %"
		    PRIu64 " is another admin's here; its rival's claim is "
		    "not taken (%" PRIu64 " so far)", peer, bft_ts_gen(ts),
		    h->stats.lock_refused);
	return true;
}

/* Lines 113-115, hardened against replays and floods. */
static void
handle_store(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep)
{
	unsigned i = h->key->index, n = h->cfg->n;
	struct bft_mac_keys ki = bft_server_mac_keys(h->key);
	struct bft_hist_entry ebuf, *e;
	struct bft_hist_meta meta;
	uint8_t lcnh[BFT_HASH_LEN];
	struct bft_ts lcts;
	struct bft_cand lc;
	int cmp, err;

	/*
	 * ts0 belongs to the initial value; no writer ever stores it.  A
	 * fragment is empty exactly when the value is the zero value
	 * (predicates.h): a writer never sends one without the other.
	 */
	if (req->ts.num == 0 || req->frag_len > BFT_MAX_FRAG ||
	    (req->frag_len == 0) != bft_cc_is_zero(req->cc, n) ||
	    (req->frag == NULL && req->frag_len != 0)) {
		rep->status = BFT_EPROTO;
		return;
	}
	/*
	 * The paper's server stores whatever arrives; checking vec[i] first
	 * keeps anyone without the writer's keys from filling Hist.
	 */
	if (!bft_vec_check(&req->ts, req->block, req->nh, &ki,
	    req->vec[i])) {
		if (bft_log_sampled(++h->stats.eauth))
			bft_log("conn %s: STORE block %" PRIu64 " ts %" PRIu64
			    "/%" PRIu64 ": bad MAC (%" PRIu64 " so far)", peer,
			    req->block, req->ts.num, req->ts.wid,
			    h->stats.eauth);
		rep->status = BFT_EAUTH;
		return;
	}
	if (fenced(h, peer, "STORE", req, rep))
		return;
	lcts = bft_store_lc_ts(h->st, req->block);
	cmp = bft_ts_cmp(&req->ts, &lcts);
	if (cmp < 0) {
		/*
		 * A newer write completed here, so the GC rule would drop
		 * this entry at once; acking without storing is what storing
		 * and collecting would amount to.
		 */
		h->stats.superseded++;
		return;
	}
	e = bft_store_get_hist(h->st, req->block, &req->ts, &ebuf) == 0 ?
	    &ebuf : NULL;
	if (cmp == 0) {
		/*
		 * ts already completed: a retransmission of its own STORE is
		 * fine, other data under a completed timestamp never is.  A
		 * missing entry whose nh matches lc's nonce is the late STORE
		 * of that very write (lc came by write-back), and keeping its
		 * fragment lets this server serve the completed value.
		 */
		if (e != NULL) {
			if (!bft_equal(e->meta.nh, req->nh, BFT_HASH_LEN)) {
				h->stats.estale++;
				rep->status = BFT_ESTALE;
			}
			return;
		}
		if ((err = bft_store_get_lc(h->st, req->block, &lc)) < 0) {
			rep->status = bft_handler_store_status(h, peer, "STORE",
			    req->block, err);
			return;
		}
		bft_hash(lc.nonce, BFT_NONCE_LEN, lcnh);
		if (!bft_equal(lcnh, req->nh, BFT_HASH_LEN)) {
			h->stats.estale++;
			rep->status = BFT_ESTALE;
			return;
		}
	}
	/*
	 * Hist is unbounded in the paper; capping the STOREs a writer may
	 * leave above lc bounds the memory one client can pin per block,
	 * while a retransmission of a present entry is always accepted.
	 */
	if (e == NULL && cmp > 0 &&
	    bft_store_pending(h->st, req->block, req->ts.wid) >=
	    h->max_pending) {
		if (bft_log_sampled(++h->stats.ebusy))
			bft_log("conn %s: STORE block %" PRIu64 ": writer %"
			    PRIu64 " has %u pending (%" PRIu64 " refused)",
			    peer, req->block, req->ts.wid, h->max_pending,
			    h->stats.ebusy);
		rep->status = BFT_EBUSY;
		return;
	}
	memset(&meta, 0, sizeof meta);
	meta.ts = req->ts;
	memcpy(meta.nh, req->nh, BFT_HASH_LEN);
	bft_handler_copy_vec(meta.vec, req->vec, n);
	memcpy(meta.cc, req->cc, (size_t)n * BFT_HASH_LEN);
	meta.frag_len = req->frag_len;
	err = bft_store_put_hist(h->st, req->block, &meta, req->frag);
	if (err < 0)
		rep->status = bft_handler_store_status(h, peer, "STORE", req->block, err);
}

static int
set_lc(struct bft_handler *h, const char *peer, const char *what,
    uint64_t block, const struct bft_ts *ts, const uint8_t *nonce,
    const uint8_t vec[BFT_MAX_N][BFT_MAC_LEN])
{
	struct bft_cand c;
	int err;

	memset(&c, 0, sizeof c);
	c.ts = *ts;
	memcpy(c.nonce, nonce, BFT_NONCE_LEN);
	bft_handler_copy_vec(c.vec, vec, h->cfg->n);
	err = bft_store_set_lc(h->st, block, &c);
	return err < 0 ? bft_handler_store_status(h, peer, what, block, err) : BFT_OK;
}

/* Lines 116-118. */
static void
handle_complete(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep)
{
	struct bft_mac_keys ki = bft_server_mac_keys(h->key);
	struct bft_ts lcts;
	uint8_t nh[BFT_HASH_LEN];

	if (req->ts.num == 0) {
		rep->status = BFT_EPROTO;
		return;
	}
	/*
	 * The paper trusts the channel to authenticate the writer; the MAC
	 * check is that authentication, and it keeps lc a proof of writing.
	 */
	bft_hash(req->nonce, BFT_NONCE_LEN, nh);
	if (!bft_vec_check(&req->ts, req->block, nh, &ki,
	    req->vec[h->key->index])) {
		if (bft_log_sampled(++h->stats.eauth))
			bft_log("conn %s: COMPLETE block %" PRIu64 " ts %"
			    PRIu64 "/%" PRIu64 ": bad MAC (%" PRIu64
			    " so far)", peer, req->block, req->ts.num,
			    req->ts.wid, h->stats.eauth);
		rep->status = BFT_EAUTH;
		return;
	}
	if (fenced(h, peer, "COMPLETE", req, rep))
		return;
	if (bft_handler_bounds_hold(h, req->block, &req->ts) ||
	    bft_handler_heal_holds(h, req->block)) {
		rep->status = BFT_EAGAIN;
		return;
	}
	lcts = bft_store_lc_ts(h->st, req->block);
	if (bft_handler_lock_taken(h, peer, req->block, &req->ts)) {
		rep->status = BFT_EFENCED;
		return;
	}
	if (bft_ts_cmp(&req->ts, &lcts) > 0)
		rep->status = set_lc(h, peer, "COMPLETE", req->block, &req->ts,
		    req->nonce, req->vec);
}

/*
 * FINALIZE: the admin tool checked that every server runs this level;
 * what is kept here is only that this one was told so.
 */
static void
handle_finalize(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep)
{
	int err;

	if (req->level > BFT_LEVEL) {
		bft_warn("%s: FINALIZE at level %u, above this server's %u: "
		    "refused", peer, req->level, BFT_LEVEL);
		rep->status = BFT_EPROTO;
		return;
	}
	if ((err = bft_store_finalize(h->st, req->level)) < 0)
		rep->status = bft_handler_store_status(h, peer, "FINALIZE", 0,
		    err);
}

int
bft_handle(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep)
{
	int err;

	/* Zeroed whole, so no byte of an earlier reply can leak into this. */
	memset(rep, 0, sizeof *rep);
	rep->type = req->type | BFT_ACK;
	rep->id = req->id;
	rep->block = req->block;
	rep->status = BFT_OK;
	if ((req->type & BFT_ACK) || req->type < BFT_HELLO ||
	    req->type > BFT_MSG_TYPE_MAX) {
		rep->status = BFT_EPROTO;
		return 1;
	}
	h->stats.requests[req->type]++;
	if (req->type == BFT_HELLO)
		return handle_hello(h, peer, req, rep);
	if (req->type == BFT_FLUSH) {
		err = bft_store_sync(h->st);
		if (err < 0)
			rep->status = bft_handler_store_status(h, peer, "FLUSH", 0, err);
		return 0;
	}
	/* Volume 0 is the cluster's disk; others, any volume's range. */
	if (!bft_addr_ok(req->block, h->cfg->nblocks)) {
		rep->status = BFT_ERANGE;
		return 0;
	}
	switch (req->type) {
	case BFT_SUMMARY:
	case BFT_LCLIST:
	case BFT_STATUS:
	case BFT_VOLUMES:
		bft_handle_info(h, req, rep);
		break;
	case BFT_SCRUB:
		/* The scrub (scrub.c) sees it at its next tick. */
		h->scrub_requested = true;
		break;
	case BFT_FINALIZE:
		handle_finalize(h, peer, req, rep);
		break;
	case BFT_CLOCK:			/* lines 111-112 */
		rep->ts = bft_store_lc_ts(h->st, req->block);
		break;
	case BFT_STORE:
		handle_store(h, peer, req, rep);
		/* Lets a writer that skipped CLOCK see it was overtaken. */
		rep->ts = bft_store_lc_ts(h->st, req->block);
		break;
	case BFT_COMPLETE:
		handle_complete(h, peer, req, rep);
		break;
	case BFT_COLLECT:		/* lines 119-120 */
	case BFT_VCOLLECT:
		bft_handle_collect(h, peer, req, rep);
		break;
	case BFT_FILTER:
	case BFT_VFILTER:
		bft_handle_filter(h, peer, req, rep);
		break;
	case BFT_REPAIR:
	case BFT_VREPAIR:
		bft_handle_repair(h, peer, req, rep);
		break;
	case BFT_DROP:
		bft_handle_drop(h, peer, req, rep);
		break;
	case BFT_SNAP:
		bft_handle_snap(h, peer, req, rep);
		break;
	case BFT_VLIST:
		bft_handle_vlist(h, req, rep);
		break;
	case BFT_SNAPSPACE:
		bft_handle_snapspace(h, req, rep);
		break;
	case BFT_REAUTH:
		bft_handle_reauth(h, peer, req, rep);
		break;
	}
	return 0;
}

void
bft_handler_log_stats(const struct bft_handler *h)
{
	const struct bft_handler_stats *s = &h->stats;

	bft_debug("requests: hello %" PRIu64 " clock %" PRIu64 " store %"
	    PRIu64 " complete %" PRIu64 " collect %" PRIu64 " filter %" PRIu64
	    " repair %" PRIu64 " flush %" PRIu64 " summary %" PRIu64
	    " lclist %" PRIu64 " status %" PRIu64, s->requests[BFT_HELLO],
	    s->requests[BFT_CLOCK], s->requests[BFT_STORE],
	    s->requests[BFT_COMPLETE], s->requests[BFT_COLLECT],
	    s->requests[BFT_FILTER], s->requests[BFT_REPAIR],
	    s->requests[BFT_FLUSH], s->requests[BFT_SUMMARY],
	    s->requests[BFT_LCLIST], s->requests[BFT_STATUS]);
	bft_debug("refused: eauth %" PRIu64 " ebusy %" PRIu64 " estale %"
	    PRIu64 " hello-mismatch %" PRIu64 "; superseded stores %" PRIu64
	    "; write-backs %" PRIu64 " repairs %" PRIu64 " store errors %"
	    PRIu64, s->eauth, s->ebusy, s->estale, s->hello_mismatch,
	    s->superseded, s->writebacks, s->repairs, s->store_errors);
}
