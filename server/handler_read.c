/*
 * The reader's side of Algorithm 5 (lines 119-130): COLLECT, FILTER and
 * REPAIR, over a block's live state or over its view at a snapshot's
 * boundary (VCOLLECT, VFILTER, VREPAIR; docs/snapshots.md).  One code
 * path serves both, so a snapshot read is checked exactly as a read of
 * the head is: a struct regview says where the register's lc and Hist
 * come from, and which versions the request may see at all.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "crypto.h"
#include "log.h"
#include "predicates.h"
#include "handler.h"

/* The register one request reads. */
struct regview {
	struct bft_handler *h;
	const char *peer;
	const char *what;		/* the request's name, for the log */
	uint64_t block;
	uint64_t gen;			/* the boundary; BFT_GEN_MAX: the head */
	bool kept;			/* the store's kept view, not live */
};

static struct bft_ts
rv_lc_ts(const struct regview *v)
{
	struct bft_cand c;

	if (!v->kept)
		return bft_store_lc_ts(v->h->st, v->block);
	if (bft_store_view_lc(v->h->st, v->block, v->gen, &c) < 0)
		memset(&c, 0, sizeof c);
	return c.ts;
}

static int
rv_get_lc(const struct regview *v, struct bft_cand *out)
{
	return v->kept ? bft_store_view_lc(v->h->st, v->block, v->gen, out) :
	    bft_store_get_lc(v->h->st, v->block, out);
}

/* A frozen view's Hist[ts]: its few retained entries, looked through. */
static int
view_get_hist(const struct regview *v, const struct bft_ts *ts,
    struct bft_hist_entry *buf)
{
	unsigned n = bft_store_view_nhist(v->h->st, v->block, v->gen);
	int err;

	for (unsigned i = 0; i < n; i++) {
		err = bft_store_view_hist_at(v->h->st, v->block, v->gen, i,
		    buf);
		if (err < 0)
			return err;
		if (bft_ts_cmp(&buf->meta.ts, ts) == 0)
			return 0;
	}
	return -ENOENT;
}

/* Hist[ts] into *buf: 0, -ENOENT (also for one the view does not admit). */
static int
rv_get_hist(const struct regview *v, const struct bft_ts *ts,
    struct bft_hist_entry *buf)
{
	if (!bft_view_admits(ts, v->gen))
		return -ENOENT;
	return v->kept ? view_get_hist(v, ts, buf) :
	    bft_store_get_hist(v->h->st, v->block, ts, buf);
}

static const struct bft_hist_meta *
rv_hist_meta(const struct regview *v, const struct bft_ts *ts,
    struct bft_hist_entry *buf)
{
	return rv_get_hist(v, ts, buf) == 0 ? &buf->meta : NULL;
}

/* Whether Hist[ts] exists; no I/O for the live state. */
static bool
rv_has_hist(const struct regview *v, const struct bft_ts *ts)
{
	struct bft_hist_entry e;

	if (!v->kept)
		return bft_view_admits(ts, v->gen) &&
		    bft_store_has_hist(v->h->st, v->block, ts);
	return rv_get_hist(v, ts, &e) == 0;
}

static int
rv_read_hist(const struct regview *v, const struct bft_ts *ts,
    struct bft_hist_entry *e, uint8_t *buf)
{
	if (!bft_view_admits(ts, v->gen))
		return -ENOENT;
	return v->kept ? bft_store_view_read_hist(v->h->st, v->block, v->gen,
	    ts, e, buf) : bft_store_read_hist(v->h->st, v->block, ts, e, buf);
}

/* validByHist(lc, Hist[lc.ts]): the index knows it for the live state. */
static bool
rv_lc_held(const struct regview *v, const struct bft_cand *lc)
{
	struct bft_hist_entry e;

	if (!v->kept)
		return bft_store_lc_held(v->h->st, v->block);
	return bft_valid_by_hist(lc, rv_hist_meta(v, &lc->ts, &e));
}

static int
rv_set_lc(const struct regview *v, const struct bft_ts *ts,
    const uint8_t *nonce, const uint8_t vec[BFT_MAX_N][BFT_MAC_LEN])
{
	struct bft_cand c;
	int err;

	memset(&c, 0, sizeof c);
	c.ts = *ts;
	memcpy(c.nonce, nonce, BFT_NONCE_LEN);
	bft_handler_copy_vec(c.vec, vec, v->h->cfg->n);
	if (!v->kept && bft_handler_heal_holds(v->h, v->block))
		return BFT_EAGAIN;
	if (!v->kept && bft_handler_lock_taken(v->h, v->peer, v->block, ts))
		return BFT_OK;
	err = v->kept ? bft_store_view_set_lc(v->h->st, v->block, v->gen, &c) :
	    bft_store_set_lc(v->h->st, v->block, &c);
	return err < 0 ? bft_handler_store_status(v->h, v->peer, v->what,
	    v->block, err) : BFT_OK;
}

/*
 * Where a request reads from.  EAGAIN for a view this server does not
 * keep: a boundary it never took (it missed the SNAP, or refused it as
 * a volume already written past it) cannot say what the view held, and
 * "never written" would be a vote against the real version in a
 * reader's invalid().
 */
static int
regview_open(struct regview *v, struct bft_handler *h, const char *peer,
    const struct bft_msg *req)
{
	struct bft_ts lcts = bft_store_lc_ts(h->st, req->block);
	struct bft_cand c;
	int err;

	memset(v, 0, sizeof *v);
	v->h = h;
	v->peer = peer;
	v->what = bft_msg_type_str(req->type);
	v->block = req->block;
	v->gen = BFT_GEN_MAX;
	if (!bft_is_view(req->type))
		return BFT_OK;
	v->gen = req->gen;
	err = bft_store_view_lc(h->st, req->block, req->gen, &c);
	if (err < 0 && err != -ENOENT)
		return bft_handler_store_status(h, peer, v->what, req->block,
		    err);
	switch (bft_view_src(&lcts, err == 0, req->gen)) {
	case BFT_VIEW_LIVE:
		return BFT_OK;
	case BFT_VIEW_KEPT:
		v->kept = true;
		return BFT_OK;
	default:
		return BFT_EAGAIN;
	}
}

/* Fills a FILTER_ACK from Hist[ts], fragment included: one record read. */
static void
reply_hist(const struct regview *v, const struct bft_ts *ts,
    struct bft_msg *rep)
{
	struct bft_handler *h = v->h;
	struct bft_hist_entry e;
	int err;

	err = rv_read_hist(v, ts, &e, h->fragbuf);
	if (err < 0) {
		rep->status = bft_handler_store_status(h, v->peer, v->what,
		    v->block, err);
		return;
	}
	rep->ts = e.meta.ts;
	bft_handler_copy_vec(rep->vec, e.meta.vec, h->cfg->n);
	memcpy(rep->cc, e.meta.cc, (size_t)h->cfg->n * BFT_HASH_LEN);
	rep->frag = h->fragbuf;
	rep->frag_len = e.meta.frag_len;
}

/*
 * The MAC vector to keep in lc for a written-back candidate.  When Hist
 * backs the candidate, the writer's own vector from the STORE is kept: a
 * reader could otherwise garble the entries this server cannot check,
 * and every later read of the block would pay a REPAIR round.
 */
static const uint8_t (*
authentic_vec(const struct regview *v, const struct bft_cand *c,
    struct bft_hist_entry *buf))[BFT_MAC_LEN]
{
	const struct bft_hist_meta *hm = rv_hist_meta(v, &c->ts, buf);

	return bft_valid_by_hist(c, hm) ? hm->vec : c->vec;
}

/*
 * Whether c may be written back: valid (a proof of writing), and of a
 * generation the view admits, so that no reader can move a version of
 * the head into a snapshot's view.
 */
static bool
writable_back(const struct regview *v, const struct bft_cand *c,
    struct bft_hist_entry *buf)
{
	struct bft_mac_keys ki = bft_server_mac_keys(v->h->key);

	return bft_view_admits(&c->ts, v->gen) && bft_valid(c,
	    rv_hist_meta(v, &c->ts, buf), v->block, v->h->key->index, &ki);
}

/*
 * A slice COLLECT (part reads, lib/op_read_fast.c): of the fragment
 * just read, the chunks asked for and their proof.  Hashing the rest
 * costs this server what it saves the reader, but the reader's host
 * holds every block's reads, and the chunks not sent are neither sealed
 * nor copied here.  Chunks past the fragment's end get the reply
 * without any: the reader falls back as for a missing fragment.
 */
void
bft_handler_slice(const uint8_t *frag, uint32_t first, uint32_t count,
    uint8_t proof[][BFT_HASH_LEN], struct bft_msg *rep)
{
	int k = bft_tree_prove(frag, rep->frag_len, first, count, proof);

	rep->slice = true;
	if (k < 0) {
		rep->frag_len = 0;
		rep->proof_cvs = 0;
		return;
	}
	rep->frag = frag + (size_t)first * BFT_TREE_CHUNK;
	rep->frag_len = (uint32_t)bft_tree_slice_len(rep->frag_len, first,
	    count);
	rep->proof = proof[0];
	rep->proof_cvs = (uint32_t)k;
}

/*
 * Lines 119-120, plus what the 1-round read needs (op_read_fast.c): the
 * cross-checksum of lc's Hist entry and, when asked, its fragment.  Both
 * go only when the entry backs lc (validByHist), so a correct server
 * never vouches for a cc that belongs to other data under the same
 * timestamp; without them the reader simply takes the two-round path.
 */
void
bft_handle_collect(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep)
{
	struct bft_cand *lc = &rep->cands[0];
	struct bft_hist_entry e;
	struct regview v;
	int err;

	/* A slice's reply has the slice's shape, with or without one. */
	rep->slice = req->slice;
	if ((rep->status = regview_open(&v, h, peer, req)) != BFT_OK)
		return;
	err = rv_get_lc(&v, lc);
	if (err < 0) {
		rep->status = bft_handler_store_status(h, peer, v.what,
		    req->block, err);
		return;
	}
	/* A new data directory that has not rebuilt the block yet. */
	if (h->heal_lacking && !v.kept && bft_ts_is_zero(&lc->ts)) {
		memset(lc, 0, sizeof *lc);
		rep->status = BFT_EAGAIN;
		return;
	}
	rep->ncands = 1;
	/*
	 * validByHist(lc, Hist[lc.ts]) is kept in the index: only a block
	 * that passes it reads its record, fragment and all in one read.
	 */
	if (bft_ts_is_zero(&lc->ts) || !rv_lc_held(&v, lc))
		return;
	err = req->want_frag ? rv_read_hist(&v, &lc->ts, &e, h->fragbuf) :
	    rv_get_hist(&v, &lc->ts, &e);
	if (err < 0) {
		/* The reader falls back to FILTER, which reports it. */
		if (err != -ENOENT)
			(void)bft_handler_store_status(h, peer, v.what,
			    req->block, err);
		return;
	}
	if (req->want_frag) {
		rep->frag = h->fragbuf;
		rep->frag_len = e.meta.frag_len;
	}
	if (req->slice)
		bft_handler_slice(h->fragbuf, req->slice_first,
		    req->slice_count, h->proofbuf, rep);
	memcpy(rep->cc, e.meta.cc, (size_t)h->cfg->n * BFT_HASH_LEN);
	rep->has_cc = true;
}

/* Lines 121-127. */
void
bft_handle_filter(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep)
{
	const struct bft_cand *C = req->cands, *wb = NULL, *rt = NULL;
	struct bft_hist_entry e;
	struct bft_ts lcts;
	unsigned nc = req->ncands;
	bool lc_newest = true;
	struct regview v;

	if (nc == 0 || nc > h->cfg->n) {
		rep->status = BFT_EPROTO;
		return;
	}
	if ((rep->status = regview_open(&v, h, peer, req)) != BFT_OK)
		return;
	/* Line 123: c_wb, the highest valid candidate. */
	for (unsigned j = 0; j < nc; j++) {
		if (wb != NULL && bft_ts_cmp(&C[j].ts, &wb->ts) <= 0)
			continue;
		if (writable_back(&v, &C[j], &e))
			wb = &C[j];
	}
	/* Line 124: write-back. */
	lcts = rv_lc_ts(&v);
	if (wb != NULL && bft_ts_cmp(&wb->ts, &lcts) > 0) {
		rep->status = rv_set_lc(&v, &wb->ts, wb->nonce,
		    authentic_vec(&v, wb, &e));
		if (rep->status != BFT_OK)
			return;
		h->stats.writebacks++;
		lcts = rv_lc_ts(&v);
	}
	/*
	 * Line 125: c_rt, the highest candidate backed by Hist.  It is
	 * chosen after the write-back, whose GC may have dropped entries.
	 */
	for (unsigned j = 0; j < nc; j++) {
		if (rt != NULL && bft_ts_cmp(&C[j].ts, &rt->ts) <= 0)
			continue;
		if (bft_valid_by_hist(&C[j], rv_hist_meta(&v, &C[j].ts, &e)))
			rt = &C[j];
	}
	if (rt != NULL) {
		reply_hist(&v, &rt->ts, rep);
		return;
	}
	/*
	 * The paper answers c0 here, but its Hist is never collected.  The
	 * entries asked for may be gone because a newer write completed,
	 * and c0 would wrongly count against them in the reader's
	 * invalid(): lc.ts tells the reader the truth instead.  Its Hist
	 * entry goes with it only when lc is newer than every candidate;
	 * otherwise lc.ts may equal a candidate's (a liar's copy of lc with
	 * a forged nonce, or lc written back without Hist), and a fragment
	 * would count towards safe() for a candidate no server validated.
	 */
	/* Forgotten is not "never written": no vote against candidates. */
	if (h->heal_lacking && bft_ts_is_zero(&lcts)) {
		rep->status = BFT_EAGAIN;
		return;
	}
	/*
	 * A candidate the view does not admit cannot share lc_g's
	 * timestamp (their generations differ), so it does not stop the
	 * fragment from going with it.
	 */
	for (unsigned j = 0; j < nc; j++)
		if (bft_view_admits(&C[j].ts, v.gen) &&
		    bft_ts_cmp(&lcts, &C[j].ts) <= 0)
			lc_newest = false;
	if (lc_newest && rv_has_hist(&v, &lcts)) {
		reply_hist(&v, &lcts, rep);
		return;
	}
	rep->ts = lcts;
	rep->frag = h->fragbuf;
	rep->frag_len = 0;
}

/* Lines 128-130. */
void
bft_handle_repair(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep)
{
	const struct bft_cand *c = &req->cands[0];
	struct bft_hist_entry e;
	struct bft_ts lcts;
	struct regview v;

	if (req->ncands < 1) {
		rep->status = BFT_EPROTO;
		return;
	}
	if ((rep->status = regview_open(&v, h, peer, req)) != BFT_OK)
		return;
	lcts = rv_lc_ts(&v);
	if (bft_ts_cmp(&c->ts, &lcts) <= 0 || !writable_back(&v, c, &e))
		return;
	rep->status = rv_set_lc(&v, &c->ts, c->nonce, authentic_vec(&v, c,
	    &e));
	if (rep->status == BFT_OK)
		h->stats.repairs++;
}
