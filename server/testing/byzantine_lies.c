/*
 * The lies of the Byzantine test modes (byzantine.h says what each one
 * attacks): given a request and the honest reply, rewrite the reply.
 * The plumbing that calls them is in byzantine.c.
 */
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "predicates.h"
#include "summary.h"
#include "byzantine_int.h"

/* Bytes of fragments the stale modes keep copies of. */
#define SNAP_MAX	(256u << 20)

/*
 * Keeps the block's first completed state whose fragment this server
 * holds; without one (or beyond SNAP_MAX) the block rolls back to c0.
 */
void
byz_snapshot(struct bft_byz *b, uint64_t block)
{
	struct bft_store *st = b->h->st;
	struct bft_hist_entry e;
	struct bft_ts lcts;
	struct snap *s;

	if (b->snaps[block] != NULL)
		return;
	lcts = bft_store_lc_ts(st, block);
	if (bft_store_get_hist(st, block, &lcts, &e) < 0 ||
	    b->snap_bytes + e.meta.frag_len > SNAP_MAX ||
	    (s = calloc(1, sizeof *s)) == NULL)
		return;
	bft_store_get_lc(st, block, &s->lc);
	s->meta = e.meta;
	s->frag = malloc(e.meta.frag_len + 1);
	if (s->frag == NULL || bft_store_read_frag(st, &e, s->frag) < 0) {
		free(s->frag);
		free(s);
		return;
	}
	b->snap_bytes += e.meta.frag_len;
	b->snaps[block] = s;
}

/* stale: as a server whose disk was put back to an old copy would. */
static void
answer_stale(struct bft_byz *b, const struct bft_msg *req,
    struct bft_msg *rep)
{
	static const struct snap c0;
	/* Snapshots are of volume 0; the old copy held no other volume. */
	const struct snap *s = req->block < b->h->cfg->nblocks &&
	    b->snaps[req->block] ? b->snaps[req->block] : &c0;
	struct bft_ts lcts;

	switch (rep->type & ~BFT_ACK) {
	case BFT_CLOCK:
	case BFT_STORE:
		/* In STORE_ACK: hides newer writes from a writer that skipped CLOCK. */
		rep->ts = s->lc.ts;
		break;
	case BFT_COLLECT:
		/* The old lc with its own cc and fragment: all of a piece. */
		rep->cands[0] = s->lc;
		rep->ncands = 1;
		rep->has_cc = s != &c0;
		memcpy(rep->cc, s->meta.cc, sizeof rep->cc);
		rep->frag = s->frag;
		rep->frag_len = rep->has_cc && req->want_frag ?
		    s->meta.frag_len : 0;
		break;
	case BFT_FILTER:
		rep->ts = s->meta.ts;
		memcpy(rep->vec, s->meta.vec, sizeof rep->vec);
		memcpy(rep->cc, s->meta.cc, sizeof rep->cc);
		rep->frag = s->frag;
		rep->frag_len = s->meta.frag_len;
		break;
	default:
		return;
	}
	/* Counted only when the answer really is older than the truth. */
	lcts = bft_store_lc_ts(b->h->st, req->block);
	if (bft_ts_cmp(&s->lc.ts, &lcts) < 0)
		byz_hit(b, BFT_BYZ_STALE);
}

/* Just below 2^63: a writer that took it could never write again. */
static void
forge_ts(struct bft_byz *b, struct bft_ts *ts)
{
	ts->num = (UINT64_C(1) << 63) - 1 - (byz_next_rand(&b->rng) & 0xffff);
	ts->wid = byz_next_rand(&b->rng) | 1;
	byz_fill(&b->rng, ts->mac, sizeof ts->mac);
}

/*
 * lie-heal: a SUMMARY_ACK of random digests, as many as the honest one
 * had, and an LCLIST_ACK naming every block asked about under a forged
 * timestamp, so that a rebuilding peer takes every range for different
 * and every block for newer here; and a VOLUMES_ACK naming, instead of
 * its own, 64 volumes nobody wrote, each as large as a volume may be,
 * which a rebuild that believed one server would spend days comparing.
 */
static void
lie_heal(struct bft_byz *b, const struct bft_msg *req, struct bft_msg *rep)
{
	struct bft_ts ts;

	if (rep->type == (BFT_SUMMARY | BFT_ACK)) {
		byz_fill(&b->rng, b->infobuf,
		    (size_t)rep->ndigests * BFT_SUMMARY_DIGEST_LEN);
		rep->digests = b->infobuf;
	} else if (rep->type == (BFT_VOLUMES | BFT_ACK)) {
		uint32_t first = bft_addr_vol(req->block), k;

		/* Ascending ids, as a correct list is; first is >= 1. */
		for (k = 0; k < 64 && first + k <= BFT_ADDR_MAX_VOL; k++)
			bft_volentry_put(b->infobuf + (size_t)k *
			    BFT_VOLENTRY_LEN, first + k, BFT_VOL_MAX_BLOCKS, 0);
		rep->entries = b->infobuf;
		rep->nentries = k;
	} else {
		/* The handler answered OK: count is within BFT_LCLIST_MAX. */
		for (uint32_t k = 0; k < req->count; k++) {
			forge_ts(b, &ts);
			bft_lcentry_put(b->infobuf + (size_t)k *
			    BFT_LCENTRY_LEN, req->block + k, &ts);
		}
		rep->entries = b->infobuf;
		rep->nentries = req->count;
	}
	byz_hit(b, BFT_BYZ_LIE_HEAL);
}

/*
 * The newest Hist entry of a block, copied into *out: its ts was signed
 * by a writer, but its write may not have completed, and we do not know
 * its nonce.  NULL when Hist is empty.
 */
static const struct bft_hist_meta *
newest_hist(struct bft_byz *b, uint64_t block, struct bft_hist_entry *out)
{
	struct bft_hist_entry e;
	const struct bft_hist_meta *m = NULL;

	for (unsigned j = 0; bft_store_hist_at(b->h->st, block, j, &e) == 0;
	    j++) {
		if (m == NULL || bft_ts_cmp(&e.meta.ts, &m->ts) > 0) {
			*out = e;
			m = &out->meta;
		}
	}
	return m;
}

/*
 * forge-candidate: in turn, credible but for the MAC only a writer can
 * make, and a genuine ts (and vec) from our newest STORE with a nonce
 * nobody revealed: only the proof of writing tells that one apart.
 */
static void
answer_forged(struct bft_byz *b, const struct bft_msg *req,
    struct bft_msg *rep)
{
	struct bft_cand *c = &rep->cands[0];
	const struct bft_hist_meta *m;
	struct bft_hist_entry e;
	uint32_t len;

	switch (rep->type & ~BFT_ACK) {
	case BFT_CLOCK:
	case BFT_STORE:
		/* In STORE_ACK: must not push a writer off the fast path. */
		if (rep->status != BFT_OK)
			return;
		forge_ts(b, &rep->ts);
		break;
	case BFT_COLLECT:
		memset(c, 0, sizeof *c);
		forge_ts(b, &c->ts);
		byz_fill(&b->rng, c->vec, (size_t)b->n * BFT_MAC_LEN);
		if ((byz_next_rand(&b->rng) & 1) &&
		    (m = newest_hist(b, req->block, &e)) != NULL) {
			c->ts = m->ts;
			memcpy(c->vec, m->vec, sizeof c->vec);
		}
		byz_fill(&b->rng, c->nonce, sizeof c->nonce);
		rep->ncands = 1;
		/* A cc, and a fragment that matches our entry of it. */
		len = rep->frag_len ? rep->frag_len : b->frag_len;
		rep->has_cc = true;
		byz_fill(&b->rng, rep->cc, (size_t)b->n * BFT_HASH_LEN);
		rep->frag_len = 0;
		if (req->want_frag) {
			byz_fill(&b->rng, b->fragbuf, len);
			bft_hash(b->fragbuf, len, rep->cc[b->self]);
			rep->frag = b->fragbuf;
			rep->frag_len = len;
		}
		break;
	case BFT_FILTER:
		forge_ts(b, &rep->ts);
		byz_fill(&b->rng, rep->vec, (size_t)b->n * BFT_MAC_LEN);
		byz_fill(&b->rng, rep->cc, (size_t)b->n * BFT_HASH_LEN);
		len = rep->frag_len ? rep->frag_len : b->frag_len;
		byz_fill(&b->rng, b->fragbuf, len);
		bft_hash(b->fragbuf, len, rep->cc[b->self]);
		rep->frag = b->fragbuf;
		rep->frag_len = len;
		break;
	default:
		return;
	}
	byz_hit(b, BFT_BYZ_FORGE);
}

/*
 * bad-mac: as if the vec stored in lc and Hist were broken; doing it on
 * the way out is the same to every client.
 */
static void
break_macs(struct bft_byz *b, struct bft_msg *rep)
{
	uint8_t (*vec)[BFT_MAC_LEN] = rep->vec;
	const struct bft_ts *ts = &rep->ts;

	if (rep->type == (BFT_COLLECT | BFT_ACK)) {
		vec = rep->cands[0].vec;
		ts = &rep->cands[0].ts;
	}
	if (bft_ts_is_zero(ts))
		return;
	for (unsigned j = 0; j < b->n; j++)
		if (j != b->self)
			vec[j][j % BFT_MAC_LEN] ^= 0x80 | (uint8_t)b->seed;
	byz_hit(b, BFT_BYZ_BAD_MAC);
}

/* Makes rep->frag a copy in our own buffer, to be changed. */
static void
own_frag(struct bft_byz *b, struct bft_msg *rep)
{
	if (rep->frag != b->fragbuf)
		memcpy(b->fragbuf, rep->frag, rep->frag_len);
	rep->frag = b->fragbuf;
}

/*
 * collude: fragment j comes from (seed, block, ts, j) at every colluder.
 * A COLLECT_ACK without a fragment still gets the colluders' cc, whose
 * entries are hashes of fragments of b->frag_len bytes.
 */
static void
collude(struct bft_byz *b, uint64_t block, const struct bft_ts *ts,
    struct bft_msg *rep)
{
	uint32_t len = rep->frag_len ? rep->frag_len : b->frag_len;
	uint64_t s;

	for (unsigned j = 0; j <= b->n; j++) {
		s = b->seed ^ block * UINT64_C(0x9e3779b97f4a7c15) ^
		    ts->num * UINT64_C(0xc2b2ae3d27d4eb4f) ^ ts->wid ^
		    (uint64_t)(j < b->n ? j : b->self) << 56;
		byz_fill(&s, b->fragbuf, len);
		if (j < b->n)
			bft_hash(b->fragbuf, len, rep->cc[j]);
	}
	if (rep->frag_len)
		rep->frag = b->fragbuf;
	byz_hit(b, BFT_BYZ_COLLUDE);
}

/*
 * The cc a reply carries, and the timestamp it is for: FILTER_ACK's
 * Hist entry, or COLLECT_ACK's lc when the 1-round read's cc came with
 * it.  NULL when the reply carries none.
 */
static const struct bft_ts *
cc_ts(const struct bft_msg *rep)
{
	if (rep->type == (BFT_FILTER | BFT_ACK) && rep->frag_len > 0 &&
	    !bft_ts_is_zero(&rep->ts))
		return &rep->ts;
	if (rep->type == (BFT_COLLECT | BFT_ACK) && rep->has_cc &&
	    !bft_ts_is_zero(&rep->cands[0].ts))
		return &rep->cands[0].ts;
	return NULL;
}

/*
 * hide-writes: the same request for the same block number of a volume
 * nobody writes (the one below the volume table's id), answered by our
 * own handler, is what a server that never held the block says.
 */
static void
hide(struct bft_byz *b, const struct bft_msg *req, struct bft_msg *rep)
{
	static struct bft_msg twin;

	twin = *req;
	twin.type = bft_view_base(req->type);
	twin.gen = 0;
	twin.block = bft_addr(BFT_VOL_TABLE - 1, bft_addr_block(req->block));
	(void)bft_handle(b->h, "hide-writes", &twin, rep);
	rep->type = req->type | BFT_ACK;
	rep->block = req->block;
	byz_hit(b, BFT_BYZ_HIDE);
}

static void
rewrite(struct bft_byz *b, unsigned modes, const struct bft_msg *req,
    struct bft_msg *rep)
{
	const struct bft_ts *ts;
	uint64_t r;

	if ((modes & BFT_BYZ_VIEW_HEAD) && bft_is_view(req->type)) {
		static struct bft_msg twin;

		twin = *req;
		twin.type = bft_view_base(req->type);
		twin.gen = 0;
		(void)bft_handle(b->h, "view-head", &twin, rep);
		rep->type = req->type | BFT_ACK;
		byz_hit(b, BFT_BYZ_VIEW_HEAD);
		return;
	}
	if ((modes & BFT_BYZ_HIDE) && (bft_view_base(req->type) ==
	    BFT_COLLECT || bft_view_base(req->type) == BFT_FILTER)) {
		hide(b, req, rep);
		return;
	}
	if ((modes & BFT_BYZ_LIE_HEAL) &&
	    (rep->type == (BFT_SUMMARY | BFT_ACK) ||
	    rep->type == (BFT_LCLIST | BFT_ACK) ||
	    rep->type == (BFT_VOLUMES | BFT_ACK))) {
		lie_heal(b, req, rep);
		return;
	}
	if (modes & BFT_BYZ_STALE)
		answer_stale(b, req, rep);
	if (modes & BFT_BYZ_FORGE)
		answer_forged(b, req, rep);
	if ((modes & BFT_BYZ_BAD_MAC) && (rep->type == (BFT_COLLECT |
	    BFT_ACK) || rep->type == (BFT_FILTER | BFT_ACK)))
		break_macs(b, rep);
	if ((ts = cc_ts(rep)) == NULL)
		return;
	if (modes & BFT_BYZ_TRIM_LIE) {
		bft_cc_set_zero(rep->cc, b->n);
		rep->frag_len = 0;
		byz_hit(b, BFT_BYZ_TRIM_LIE);
		return;
	}
	/* One flipped bit is the least a hash check must catch. */
	if ((modes & BFT_BYZ_CORRUPT_FRAGMENT) && rep->frag_len > 0) {
		own_frag(b, rep);
		r = byz_next_rand(&b->rng);
		b->fragbuf[(r >> 3) % rep->frag_len] ^= (uint8_t)(1u << (r & 7));
		byz_hit(b, BFT_BYZ_CORRUPT_FRAGMENT);
	}
	if ((modes & BFT_BYZ_BAD_CHECKSUM) && rep->frag_len > 0) {
		own_frag(b, rep);
		byz_fill(&b->rng, b->fragbuf, rep->frag_len);
		bft_hash(b->fragbuf, rep->frag_len, rep->cc[b->self]);
		byz_hit(b, BFT_BYZ_BAD_CHECKSUM);
	} else if (modes & BFT_BYZ_BAD_CHECKSUM) {
		/* No fragment asked of us: our cc entry still lies. */
		byz_fill(&b->rng, rep->cc[b->self], BFT_HASH_LEN);
		byz_hit(b, BFT_BYZ_BAD_CHECKSUM);
	}
	if (modes & BFT_BYZ_COLLUDE)
		collude(b, req->block, ts, rep);
}

/*
 * The slice req asks for, of the (maybe forged) whole fragment rep
 * holds, with a proof over that fragment: as an honest server slices
 * (server/handler_read.c), or one place off for slice-shift.
 */
static void
slice_lie(struct bft_byz *b, unsigned modes, const struct bft_msg *req,
    struct bft_msg *rep)
{
	uint32_t first = req->slice_first, count = req->slice_count;
	uint32_t n = bft_tree_chunks(rep->frag_len);

	rep->slice = true;
	rep->proof_cvs = 0;
	if (rep->status != BFT_OK || !rep->has_cc || rep->frag_len == 0) {
		rep->frag_len = 0;
		return;
	}
	/* Another place whose slice is as long: the last chunk is short. */
	if ((modes & BFT_BYZ_SLICE_SHIFT) && count < n - 1) {
		first = first + count + 1 < n ? first + 1 : first - 1;
		byz_hit(b, BFT_BYZ_SLICE_SHIFT);
	}
	bft_handler_slice(rep->frag, first, count, b->proof, rep);
}

void
byz_rewrite(struct bft_byz *b, unsigned modes, const struct bft_msg *req,
    struct bft_msg *rep)
{
	static struct bft_msg whole;

	if (!req->slice) {
		rewrite(b, modes, req, rep);
		return;
	}
	/*
	 * A slice: the lies are told of the whole fragment, which the
	 * honest handler gives to the same request without the slice.
	 */
	whole = *req;
	whole.slice = false;
	(void)bft_handle(b->h, "slice", &whole, rep);
	if (rep->status == BFT_OK)
		rewrite(b, modes, &whole, rep);
	slice_lie(b, modes, req, rep);
}
