/*
 * New MACs for a version the store holds (REAUTH, docs/key-epochs.md):
 * the same (num, wid), nonce hash, cross-checksum and fragment, under
 * the next epoch's timestamp MAC and MAC vector.  A record is appended
 * again with them; replay, checkpoints and compaction keep the latest
 * record of an entry, as they do for any other.  Hist[lc.ts] takes them
 * from lc's record where that says so (store_log.h), which is what
 * keeps the pass from writing every fragment again.
 */
#include <errno.h>
#include <string.h>

#include "crypto.h"
#include "store_int.h"
#include "store_log.h"

bool
st_macs_take(const struct bft_store *st, uint8_t *mac,
    uint8_t (*vec)[BFT_MAC_LEN], const struct bft_ts *ts,
    const uint8_t (*new_vec)[BFT_MAC_LEN])
{
	size_t vl = (size_t)st->n * BFT_MAC_LEN;

	if (bft_equal(mac, ts->mac, BFT_MAC_LEN) && bft_equal(vec, new_vec, vl))
		return false;
	memcpy(mac, ts->mac, BFT_MAC_LEN);
	memcpy(vec, new_vec, vl);
	return true;
}

/* Whether a and b are one timestamp (num, wid), whatever their MACs. */
static bool
same_ts(const struct bft_ts *a, const struct bft_ts *b)
{
	return a->num == b->num && a->wid == b->wid;
}

/*
 * lc, when it is the version: appended again with ts's MAC and vec.  In
 * a finalized store (store_log.h), and when Hist[lc.ts] is there, the
 * record says that they are that entry's MACs too (BFT_REC_F_HMAC), and
 * the entry is not stored again: re-authenticating a block costs a
 * metadata record, not its fragment written again at every server.
 */
static int
relabel_lc(struct bft_store *st, uint64_t block, const struct bft_ts *ts,
    const uint8_t nh[BFT_HASH_LEN], const uint8_t (*vec)[BFT_MAC_LEN])
{
	bool hmac = (st_idx(st, block)->flags & IDX_HENT) && st->finalized > 0;
	uint8_t h[BFT_HASH_LEN];
	struct bft_cand c, cand;
	uint64_t loc;
	size_t len;
	int err;

	if ((err = st_lc_read(st, block, &c)) < 0)
		return err;
	bft_hash(c.nonce, BFT_NONCE_LEN, h);
	if (bft_ts_is_zero(&c.ts) || !same_ts(&c.ts, ts) ||
	    !bft_equal(h, nh, BFT_HASH_LEN))
		return -ENOENT;
	if (!st_macs_take(st, c.ts.mac, c.vec, ts, vec) &&
	    (!hmac || (st_idx(st, block)->flags & IDX_HMAC)))
		return 0;
	len = bft_rec_encode_lc(st->wbuf, st->n, st->next_seq, block, &c);
	if (hmac)
		bft_rec_set_flags(st->wbuf, len, st->n, BFT_REC_F_HMAC);
	if ((err = st_append_rec(st, st->wbuf, len, &loc)) < 0)
		return err;
	bft_rec_decode_lc(st->wbuf, st->n, &cand);
	st_mc_put(st, loc, st->wbuf, bft_rec_meta_len(BFT_REC_LC, st->n));
	/* The same timestamp: lc's record moves, nothing is collected. */
	st_lc_apply(st, block, &cand, loc);
	/* HELD compared the entry's old MAC with lc's: ask again. */
	if (hmac)
		st_idx_mut(st, block)->flags |= IDX_HMAC | IDX_HELD_UNKNOWN;
	st_after_append(st, len);
	return 1;
}

/*
 * Hist[ts], when it is the version and lc's record does not carry its
 * new MACs (an entry above lc, or a store not finalized): stored again
 * with them, fragment and all.
 */
static int
relabel_hist(struct bft_store *st, uint64_t block, const struct bft_ts *ts,
    const uint8_t nh[BFT_HASH_LEN], const uint8_t (*vec)[BFT_MAC_LEN],
    uint8_t *frag)
{
	struct bft_hist_entry e;
	int err;

	/* The metadata first: the fragment is read only to be rewritten. */
	if ((err = bft_store_get_hist(st, block, ts, &e)) < 0)
		return err;
	if (!bft_equal(e.meta.nh, nh, BFT_HASH_LEN))
		return -ENOENT;
	if (!st_macs_take(st, e.meta.ts.mac, e.meta.vec, ts, vec))
		return 0;
	if ((err = bft_store_read_hist(st, block, ts, &e, frag)) < 0)
		return err;
	(void)st_macs_take(st, e.meta.ts.mac, e.meta.vec, ts, vec);
	if ((err = bft_store_put_hist(st, block, &e.meta, frag)) < 0)
		return err;
	return 1;
}

void
st_hmac_overlay(struct bft_store *st, uint64_t block, uint64_t loc,
    struct bft_hist_meta *m)
{
	const struct blk_idx *x = st_idx(st, block);
	uint8_t h[BFT_HASH_LEN];
	struct bft_cand c;

	if ((x->flags & (IDX_HMAC | IDX_HENT)) != (IDX_HMAC | IDX_HENT) ||
	    x->h_loc != loc || !same_ts(&m->ts, &x->lc_ts) ||
	    st_lc_read(st, block, &c) < 0)
		return;
	/* Another version under the same timestamp is not lc's to relabel. */
	bft_hash(c.nonce, BFT_NONCE_LEN, h);
	if (!bft_equal(h, m->nh, BFT_HASH_LEN))
		return;
	memcpy(m->ts.mac, c.ts.mac, BFT_MAC_LEN);
	memcpy(m->vec, c.vec, (size_t)st->n * BFT_MAC_LEN);
}

/*
 * A snapshot view reads a retained entry's own record, without lc: the
 * entry a set_lc is about to retain is written with the MACs lc gave it
 * first.  Once per block and rotation, and only where a snapshot keeps
 * the block's old version.
 */
int
st_hmac_settle(struct bft_store *st, uint64_t block)
{
	const struct blk_idx *x = st_idx(st, block);
	struct bft_hist_meta m;
	struct bft_ts ts = x->lc_ts;

	if ((x->flags & (IDX_HMAC | IDX_HENT)) != (IDX_HMAC | IDX_HENT))
		return 0;
	/* A damaged entry is retained as it is: a view's read finds it so. */
	if (st_hist_read(st, x->h_loc, block, &ts, x->h_frag_len, &m) < 0)
		return 0;
	st_hmac_overlay(st, block, x->h_loc, &m);
	return bft_store_put_hist(st, block, &m,
	    st->rbuf + bft_rec_frag_off(st->n));
}

int
bft_store_relabel(struct bft_store *st, uint64_t block,
    const struct bft_ts *ts, const uint8_t nh[BFT_HASH_LEN],
    const uint8_t (*vec)[BFT_MAC_LEN], uint8_t *frag)
{
	int a, b, err;

	if ((err = st_writable(st, block)) < 0)
		return err;
	a = relabel_lc(st, block, ts, nh, vec);
	if (a < 0 && a != -ENOENT)
		return a;
	b = relabel_hist(st, block, ts, nh, vec, frag);
	if (b < 0 && b != -ENOENT)
		return b;
	if (a == -ENOENT && b == -ENOENT)
		return -ENOENT;
	return (a > 0) + (b > 0);
}
