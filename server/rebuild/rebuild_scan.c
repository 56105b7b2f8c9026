/*
 * Finding what a server lacks (rebuild.h).  Digests of lc timestamps
 * over ranges of blocks are compared with every connected peer's; only
 * ranges where some peer differs are split further, down to ranges
 * small enough to list, whose timestamps are compared block by block.
 * A correct peer in step with us costs one SUMMARY; K missed writes cost
 * about K listings of one small range each.  A lying peer can only make
 * us look at more blocks, each of which is then read by the protocol.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rebuild_int.h"
#include "summary.h"

#define SESSION_TIMEOUT_MS	5000
#define DIGEST_LEN		BFT_SUMMARY_DIGEST_LEN
#define ENTRY_LEN		BFT_LCENTRY_LEN
/* Volumes taken from one peer per pass: more is a liar's flood. */
#define VOLS_PER_PEER		65536

unsigned
rb_peers_connect(struct bft_rebuild *rb)
{
	struct bft_session_fail f;
	unsigned alive = 0;

	if (rb->ident.role == BFT_ROLE_NONE) {
		bft_peer_key(rb->key, &rb->ident);
		for (unsigned j = 0; j < BFT_MAX_N; j++)
			rb->peers[j].fd = -1;
	}
	for (unsigned j = 0; j < rb->cfg->n; j++) {
		if (j == rb->key->index)
			continue;
		if (rb->peers[j].fd < 0 &&
		    bft_session_open(&rb->peers[j], &rb->pcfg, &rb->ident, j,
		    SESSION_TIMEOUT_MS, true, &f) != 0) {
			bft_debug("rebuild: peer %u: %s", j, f.why);
			continue;
		}
		alive++;
	}
	return alive;
}

void
rb_peers_close(struct bft_rebuild *rb)
{
	if (rb->ident.role == BFT_ROLE_NONE)
		return;
	for (unsigned j = 0; j < BFT_MAX_N; j++)
		if (rb->peers[j].fd >= 0)
			bft_session_close(&rb->peers[j]);
}

static int
todo_add(struct bft_rebuild *rb, uint64_t block)
{
	if (rb->ntodo == rb->todocap) {
		size_t cap = rb->todocap ? 2 * rb->todocap : 1024;
		uint64_t *p = realloc(rb->todo, cap * sizeof *p);

		if (p == NULL)
			return -1;
		rb->todo = p;
		rb->todocap = cap;
	}
	rb->todo[rb->ntodo++] = block;
	return 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Asks peer j; a peer that fails the call is dropped until next pass. */
static int
peer_call(struct bft_rebuild *rb, unsigned j, struct bft_msg *req,
    struct bft_msg *rep)
{
	const char *why;
	int st;

	if (rb->peers[j].fd < 0)
		return -1;
	st = bft_session_call(&rb->peers[j], req, rep, &why);
	if (st < 0)
		bft_warn("rebuild: peer %u: %s", j, why);
	if (st == BFT_OK)
		rb->answered |= 1u << j;
	return st;
}

/*
 * Leaf: the blocks of [first, first+count) whose lc a peer lists newer
 * than ours.
 */
static int
leaf(struct bft_rebuild *rb, uint64_t first, uint32_t count)
{
	struct bft_ts *own = calloc(count, sizeof *own);
	uint32_t *who = calloc(count, sizeof *who);
	struct bft_msg *req = &rb->req, *rep = &rb->lrep;
	struct bft_buf out = { 0 };
	int r = -1;

	if (own == NULL || who == NULL)
		goto out_free;
	memset(req, 0, sizeof *req);
	req->type = BFT_LCLIST;
	req->block = first;
	req->count = count;
	if (rb_local(rb, req, rep, &out) != BFT_OK)
		goto out_free;
	for (uint32_t e = 0; e < rep->nentries; e++) {
		struct bft_ts ts;
		uint64_t b;

		bft_lcentry_get(rep->entries + (size_t)e * ENTRY_LEN, &b, &ts);
		if (b >= first && b - first < count)
			own[b - first] = ts;
	}
	for (unsigned j = 0; j < rb->cfg->n; j++) {
		if (j == rb->key->index)
			continue;
		memset(req, 0, sizeof *req);
		req->type = BFT_LCLIST;
		req->block = first;
		req->count = count;
		if (peer_call(rb, j, req, rep) != BFT_OK)
			continue;
		for (uint32_t e = 0; e < rep->nentries; e++) {
			struct bft_ts ts;
			uint64_t b;

			bft_lcentry_get(rep->entries + (size_t)e * ENTRY_LEN,
			    &b, &ts);
			if (b < first || b - first >= count)
				continue;	/* not what we asked: a lie */
			if (bft_ts_cmp(&ts, &own[b - first]) > 0)
				who[b - first] |= 1u << j;
		}
	}
	r = 0;
	for (uint32_t k = 0; k < count && r == 0; k++)
		if (who[k] != 0 && rb_claim(rb, first + k, &own[k], who[k]))
			r = todo_add(rb, first + k);
out_free:
	bft_buf_free(&out);
	free(own);
	free(who);
	return r;
}

/*
 * [first, first+count): list it when small, else compare digests of
 * BFT_SUMMARY_MAX sub-ranges and descend into those that differ.
 */
static int
descend(struct bft_rebuild *rb, uint64_t first, uint64_t count)
{
	struct bft_msg *req = &rb->req, *rep = &rb->lrep;
	struct bft_buf out = { 0 };
	uint64_t span = (count + BFT_SUMMARY_MAX - 1) / BFT_SUMMARY_MAX;
	uint32_t nr;
	uint8_t *own = NULL;
	bool *differ = NULL;
	int r = -1;

	if (count <= BFT_LCLIST_MAX)
		return leaf(rb, first, (uint32_t)count);
	nr = (uint32_t)((count + span - 1) / span);
	own = malloc((size_t)nr * DIGEST_LEN);
	differ = calloc(nr, sizeof *differ);
	if (own == NULL || differ == NULL)
		goto out_free;
	memset(req, 0, sizeof *req);
	req->type = BFT_SUMMARY;
	req->block = first;
	req->count = (uint32_t)count;
	req->span = (uint32_t)span;
	if (rb_local(rb, req, rep, &out) != BFT_OK || rep->ndigests != nr)
		goto out_free;
	memcpy(own, rep->digests, (size_t)nr * DIGEST_LEN);
	for (unsigned j = 0; j < rb->cfg->n; j++) {
		if (j == rb->key->index)
			continue;
		memset(req, 0, sizeof *req);
		req->type = BFT_SUMMARY;
		req->block = first;
		req->count = (uint32_t)count;
		req->span = (uint32_t)span;
		if (peer_call(rb, j, req, rep) != BFT_OK)
			continue;
		if (rep->ndigests != nr) {
			bft_warn("rebuild: peer %u answered %u digests for %u "
			    "ranges; ignored", j, rep->ndigests, nr);
			continue;
		}
		for (uint32_t k = 0; k < nr; k++)
			if (memcmp(own + (size_t)k * DIGEST_LEN, rep->digests +
			    (size_t)k * DIGEST_LEN, DIGEST_LEN) != 0)
				differ[k] = true;
	}
	r = 0;
	for (uint32_t k = 0; k < nr && r == 0 && !rb->stopping; k++) {
		uint64_t f = first + k * span;

		if (differ[k])
			r = descend(rb, f, first + count - f < span ?
			    first + count - f : span);
	}
out_free:
	bft_buf_free(&out);
	free(own);
	free(differ);
	return r;
}

/* One peer's report of one volume. */
struct vol_seen {
	uint32_t vol;
	unsigned peer;
	uint64_t end;
};

static int
cmp_seen(const void *a, const void *b)
{
	const struct vol_seen *x = a, *y = b;

	if (x->vol != y->vol)
		return x->vol < y->vol ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;	/* largest first */
}

/* Peer j's volumes other than 0, appended to *seen. */
static int
peer_volumes(struct bft_rebuild *rb, unsigned j, struct vol_seen **seen,
    size_t *nseen, size_t *cap)
{
	struct bft_msg *req = &rb->req, *rep = &rb->lrep;
	uint64_t from = 1, taken = 0;

	while (from <= BFT_ADDR_MAX_VOL && taken < VOLS_PER_PEER) {
		uint32_t last = 0;

		memset(req, 0, sizeof *req);
		req->type = BFT_VOLUMES;
		req->block = bft_addr((uint32_t)from, 0);
		if (peer_call(rb, j, req, rep) != BFT_OK)
			return 0;
		for (uint32_t e = 0; e < rep->nentries; e++) {
			uint64_t vol, end, live;

			bft_volentry_get(rep->entries + (size_t)e *
			    BFT_VOLENTRY_LEN, &vol, &end, &live);
			/* Out of order, repeated or out of range: a lie. */
			if (vol < from || vol > BFT_ADDR_MAX_VOL ||
			    (e > 0 && vol <= last) || end == 0)
				return 0;
			if (*nseen == *cap) {
				size_t nc = *cap ? 2 * *cap : 256;
				struct vol_seen *ns = realloc(*seen,
				    nc * sizeof *ns);

				if (ns == NULL)
					return -1;
				*seen = ns;
				*cap = nc;
			}
			(*seen)[(*nseen)++] = (struct vol_seen){
			    .vol = (uint32_t)vol, .peer = j,
			    .end = end < BFT_VOL_MAX_BLOCKS ? end :
			    BFT_VOL_MAX_BLOCKS };
			last = (uint32_t)vol;
			taken++;
		}
		if (rep->nentries < BFT_VOLLIST_MAX)
			break;
		from = (uint64_t)last + 1;
	}
	return 0;
}

/*
 * Volumes other than 0, which is always compared whole.  A volume is
 * compared when t+1 peers hold blocks of it, over [0, the (t+1)-th
 * largest end they report): t liars can neither make us compare a
 * volume nobody wrote nor stretch one past what a correct server
 * holds.  Within the fault model nothing is missed: a completed write
 * is at n-t servers, and with this one (wiped) and at most t-1 others
 * faulty, at least t+1 correct peers hold its page.
 */
static int
scan_volumes(struct bft_rebuild *rb)
{
	struct vol_seen *seen = NULL;
	size_t nseen = 0, cap = 0, i = 0;
	int r = -1;

	for (unsigned j = 0; j < rb->cfg->n; j++)
		if (j != rb->key->index &&
		    peer_volumes(rb, j, &seen, &nseen, &cap) != 0)
			goto out_free;
	if (nseen > 1)
		qsort(seen, nseen, sizeof *seen, cmp_seen);
	r = 0;
	while (i < nseen && r == 0 && !rb->stopping) {
		size_t k = i;

		while (k < nseen && seen[k].vol == seen[i].vol)
			k++;
		/* A peer lists a volume once (checked above). */
		if (k - i > rb->cfg->t)
			r = descend(rb, bft_addr(seen[i].vol, 0),
			    seen[i + rb->cfg->t].end);
		i = k;
	}
out_free:
	free(seen);
	return r;
}

int
rb_scan(struct bft_rebuild *rb)
{
	size_t w = 0;

	rb->answered = 0;
	rb_claims_begin(rb);
	if (descend(rb, 0, rb->cfg->nblocks) != 0 || scan_volumes(rb) != 0)
		return -1;
	if (rb->ntodo > 1)
		qsort(rb->todo, rb->ntodo, sizeof *rb->todo, cmp_u64);
	for (size_t k = 0; k < rb->ntodo; k++)
		if (w == 0 || rb->todo[w - 1] != rb->todo[k])
			rb->todo[w++] = rb->todo[k];
	rb->ntodo = w;
	return 0;
}
