/*
 * What changed between two snapshots (bftblk_snap_diff, bftblk.h): the
 * union of what every server lists with VLIST (wire.h).
 *
 * Why the union over every server, and why every server must answer: a
 * block written after the older snapshot was completed at n-t servers,
 * n-t servers kept the snapshot's boundary, and the two sets share t+1,
 * at least one of them correct, which lists the block.  A server that
 * does not answer may be that one, and a liar may omit what it likes,
 * so a listing short of any answering server could miss a change, and a
 * backup kept in step by it would be wrong without anyone knowing.
 * What a liar adds costs a read of a block that did not change, nothing
 * else: the caller reads the blocks listed through the protocol.  A
 * server that keeps no such boundary (it missed the SNAP, or refused it)
 * answers EAGAIN and adds nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_int.h"
#include "handle_int.h"
#include "session.h"
#include "summary.h"
#include "voltab_int.h"

/* Replies one server may send for one listing: its cost to us. */
#define VLIST_CALLS	(1u << 20)

struct blocks {
	uint64_t *b;
	size_t n, cap;
};

static int
blocks_add(struct blocks *bs, uint64_t b)
{
	uint64_t *nb;

	if (bs->n == bs->cap) {
		bs->cap = bs->cap ? 2 * bs->cap : 1024;
		if ((nb = realloc(bs->b, bs->cap * sizeof *nb)) == NULL)
			return -1;
		bs->b = nb;
	}
	bs->b[bs->n++] = b;
	return 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Server i's listing of [0, nblocks) of volume id into bs.  0, 1 when
 * it keeps no boundary from, or -1 with the error recorded.
 */
static int
list_one(struct bftblk *h, unsigned i, uint32_t id, uint64_t nblocks,
    uint64_t from, uint64_t to, struct blocks *bs)
{
	struct bft_session_fail f;
	struct bft_session s;
	struct bft_msg *req, *rep;
	uint64_t a = 0, b, last = 0;
	const char *why = "";
	char msg[160];
	int st, r = -1;

	req = calloc(1, sizeof *req);
	rep = calloc(1, sizeof *rep);
	if (req == NULL || rep == NULL) {
		bftblk__fail(ENOMEM, NULL);
		goto out_free;
	}
	if (bft_session_open(&s, &h->cfg, &h->key, i, h->timeout_s * 1000,
	    true, &f) != 0) {
		bft_session_fail_str(&f, msg, sizeof msg);
		bftblk__fail(EIO, "server %u: %s", i, msg);
		goto out_free;
	}
	for (unsigned calls = 0; a < nblocks; calls++) {
		if (calls == VLIST_CALLS) {
			bftblk__fail(EIO, "server %u: VLIST goes on past %u "
			    "replies", i, VLIST_CALLS);
			goto out_close;
		}
		memset(req, 0, sizeof *req);
		req->type = BFT_VLIST;
		req->block = bft_addr(id, a);
		req->count = (uint32_t)(nblocks - a);
		req->gen = from;
		req->gen_to = to;
		st = bft_session_call(&s, req, rep, &why);
		if (st == BFT_EAGAIN && a == 0) {
			r = 1;
			goto out_close;
		}
		if (st != BFT_OK) {
			bftblk__fail(EIO, "server %u: VLIST: %s", i, st < 0 ?
			    why : bft_status_str(st));
			goto out_close;
		}
		/* A liar's reply: out of order, out of range, or no progress. */
		for (uint32_t e = 0; e < rep->nentries; e++) {
			b = bft_addr_block(bft_vlentry_get(rep->entries +
			    (size_t)e * BFT_VLENTRY_LEN));
			if (bft_addr_vol(bft_vlentry_get(rep->entries +
			    (size_t)e * BFT_VLENTRY_LEN)) != id || b < a ||
			    b >= nblocks || (last > 0 && b < last)) {
				bftblk__fail(EIO, "server %u: VLIST listed "
				    "block %" PRIu64 " out of its range", i, b);
				goto out_close;
			}
			last = b + 1;
			if (blocks_add(bs, b) != 0) {
				bftblk__fail(ENOMEM, NULL);
				goto out_close;
			}
		}
		if (bft_addr_vol(rep->next) != id ||
		    bft_addr_block(rep->next) <= a) {
			bftblk__fail(EIO, "server %u: VLIST did not advance", i);
			goto out_close;
		}
		a = bft_addr_block(rep->next);
	}
	r = 0;
out_close:
	bft_session_close(&s);
out_free:
	free(req);
	free(rep);
	return r;
}

/* Snapshot name of volume id in vt: its boundary and size, or -1 failed. */
static int
snap_of(struct bftblk *h, struct voltab *vt, uint32_t id, const char *vol,
    const char *name, uint64_t *gen, uint64_t *size)
{
	struct vt_entry *e = bftblk__vt_find_snap(vt, id, name, NULL);

	if (e == NULL || e->state != VT_SNAP)
		return bftblk__handle_fail(h, ENOENT, "volume '%s' has no "
		    "snapshot named '%s'", vol, name);
	*gen = e->generation;
	*size = e->size;
	return 0;
}

int
bftblk_snap_diff(struct bftblk *h, const char *volume, const char *from,
    const char *to, uint64_t **blocks, size_t *n)
{
	struct blocks bs = { 0 };
	struct voltab *vt;
	struct vt_entry *v;
	uint64_t g1 = 0, g2 = BFT_GEN_MAX, size, size1;
	unsigned kept = 0;
	uint32_t id = 0;
	size_t k = 0;
	int r;

	*blocks = NULL;
	*n = 0;
	if ((vt = bftblk__vt_load(h, &r)) == NULL)
		return r;
	size = h->cfg.size;
	if (volume[0] != '\0') {
		if ((v = bftblk__vt_find(vt, volume, NULL)) == NULL) {
			r = bftblk__handle_fail(h, ENOENT, "no volume is "
			    "named '%s'", volume);
			goto out;
		}
		id = v->id;
		size = v->size;
	}
	if ((r = snap_of(h, vt, id, volume, from, &g1, &size1)) != 0 ||
	    (to != NULL && (r = snap_of(h, vt, id, volume, to, &g2,
	    &size)) != 0))
		goto out;
	if (g2 <= g1) {
		r = bftblk__handle_fail(h, EINVAL, "snapshot '%s' is not older "
		    "than '%s'", from, to);
		goto out;
	}
	/* A grown volume: its new blocks are changed too, if written. */
	for (unsigned i = 0; i < h->cfg.n; i++) {
		if ((r = list_one(h, i, id, size / BFT_BLOCK_SIZE, g1, g2,
		    &bs)) < 0) {
			r = bftblk__handle_fail(h, bftblk__take_errno(), "%s; "
			    "a listing of changes needs every server's answer",
			    bftblk__errmsg());
			goto out;
		}
		kept += r == 0;
	}
	if (kept < h->cfg.n - h->cfg.t) {
		r = bftblk__handle_fail(h, EIO, "only %u servers keep snapshot "
		    "'%s' (%u needed)", kept, from, h->cfg.n - h->cfg.t);
		goto out;
	}
	if (bs.n > 0) {
		qsort(bs.b, bs.n, sizeof *bs.b, cmp_u64);
		for (size_t i = 0; i < bs.n; i++)
			if (k == 0 || bs.b[i] != bs.b[k - 1])
				bs.b[k++] = bs.b[i];
	}
	*blocks = bs.b;
	*n = k;
	bs.b = NULL;
	r = 0;
out:
	free(bs.b);
	free(vt);
	return r;
}
