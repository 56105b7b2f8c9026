/*
 * New MACs for a version the store holds (REAUTH, docs/key-epochs.md):
 * the same (num, wid), nonce hash, cross-checksum and fragment, under
 * the next epoch's timestamp MAC and MAC vector.  A record is appended
 * again with them; replay, checkpoints and compaction keep the latest
 * record of an entry, as they do for any other.
 */
#include <errno.h>
#include <string.h>

#include "crypto.h"
#include "store_int.h"
#include "store_log.h"

/* Whether a and b are one timestamp (num, wid), whatever their MACs. */
static bool
same_ts(const struct bft_ts *a, const struct bft_ts *b)
{
	return a->num == b->num && a->wid == b->wid;
}

/* lc, when it is the version: appended again with ts's MAC and vec. */
static int
relabel_lc(struct bft_store *st, uint64_t block, const struct bft_ts *ts,
    const uint8_t nh[BFT_HASH_LEN], const uint8_t (*vec)[BFT_MAC_LEN])
{
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
	if (bft_equal(c.ts.mac, ts->mac, BFT_MAC_LEN) &&
	    bft_equal(c.vec, vec, (size_t)st->n * BFT_MAC_LEN))
		return 0;
	memcpy(c.ts.mac, ts->mac, BFT_MAC_LEN);
	memcpy(c.vec, vec, (size_t)st->n * BFT_MAC_LEN);
	len = bft_rec_encode_lc(st->wbuf, st->n, st->next_seq, block, &c);
	if ((err = st_append_rec(st, st->wbuf, len, &loc)) < 0)
		return err;
	bft_rec_decode_lc(st->wbuf, st->n, &cand);
	st_mc_put(st, loc, st->wbuf, bft_rec_meta_len(BFT_REC_LC, st->n));
	/* The same timestamp: lc's record moves, nothing is collected. */
	st_lc_apply(st, block, &cand, loc);
	st_after_append(st, len);
	return 1;
}

/* Hist[ts], when it is the version: stored again with the new MACs. */
static int
relabel_hist(struct bft_store *st, uint64_t block, const struct bft_ts *ts,
    const uint8_t nh[BFT_HASH_LEN], const uint8_t (*vec)[BFT_MAC_LEN],
    uint8_t *frag)
{
	struct bft_hist_entry e;
	int err;

	if (!bft_store_has_hist(st, block, ts))
		return -ENOENT;
	if ((err = bft_store_read_hist(st, block, ts, &e, frag)) < 0)
		return err;
	if (!bft_equal(e.meta.nh, nh, BFT_HASH_LEN))
		return -ENOENT;
	if (bft_equal(e.meta.ts.mac, ts->mac, BFT_MAC_LEN) &&
	    bft_equal(e.meta.vec, vec, (size_t)st->n * BFT_MAC_LEN))
		return 0;
	memcpy(e.meta.ts.mac, ts->mac, BFT_MAC_LEN);
	memcpy(e.meta.vec, vec, (size_t)st->n * BFT_MAC_LEN);
	if ((err = bft_store_put_hist(st, block, &e.meta, frag)) < 0)
		return err;
	return 1;
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
