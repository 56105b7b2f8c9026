/*
 * Snapshot views (store.h): a block's state at a boundary, from the
 * live state while its lc has not passed the boundary, and from its
 * retained records (store_retain.c) once it has; the write-back into a
 * frozen view; the walk over a volume's frozen blocks; and the space
 * the boundaries hold.
 */
#include <errno.h>
#include <string.h>

#include "crypto.h"
#include "store.h"
#include "store_int.h"
#include "store_log.h"

/*
 * Where the view of block at gen is: 0 with *node NULL while it is the
 * live state, or the block's retained node (NULL when it holds none)
 * and *lc_i, lc_g's index there (-1: c0).  -ERANGE or -ENOENT.
 */
static int
view_find(const struct bft_store *st, uint64_t block, uint64_t gen,
    bool *frozen, struct ret_node **node, long *lc_i)
{
	const struct snap_vol *sv;

	*frozen = false;
	*node = NULL;
	*lc_i = -1;
	if (!st_addr_ok(st, block))
		return -ERANGE;
	sv = st_snap_vol(st, bft_addr_vol(block));
	if (sv == NULL || !st_snap_has(sv, gen))
		return -ENOENT;
	if (bft_ts_gen(&st_idx(st, block)->lc_ts) <= gen)
		return 0;
	*frozen = true;
	if ((*node = st_ret_node(st, block)) == NULL)
		return 0;
	for (uint32_t i = 0; i < (*node)->n; i++)
		if ((*node)->rec[i].type != BFT_REC_HIST &&
		    bft_ts_gen(&(*node)->rec[i].ts) <= gen)
			*lc_i = (long)i;
	return 0;
}

/* Whether retained record i of node belongs to the view (lc_i, gen). */
static bool
in_view(const struct ret_node *node, long lc_i, uint64_t gen, uint32_t i)
{
	const struct ret_rec *r = &node->rec[i];

	return r->type == BFT_REC_HIST && bft_ts_gen(&r->ts) <= gen &&
	    (lc_i < 0 || bft_ts_cmp(&r->ts, &node->rec[lc_i].ts) >= 0);
}

int
bft_store_view_lc(struct bft_store *st, uint64_t block, uint64_t gen,
    struct bft_cand *out)
{
	struct ret_node *node;
	const struct ret_rec *r;
	const uint8_t *p;
	bool frozen;
	long lc_i;
	int err;

	memset(out, 0, sizeof *out);
	if ((err = view_find(st, block, gen, &frozen, &node, &lc_i)) < 0)
		return err;
	if (!frozen)
		return bft_store_get_lc(st, block, out);
	if (node == NULL || lc_i < 0 || node->rec[lc_i].type == 0)
		return 0;
	r = &node->rec[lc_i];
	out->ts = r->ts;
	p = st_meta_read(st, r->loc, r->type, block, bft_rec_lc_len(st->n));
	if (p == NULL)
		return -EIO;
	bft_rec_decode_lc(p, st->n, out);
	if (bft_ts_cmp(&out->ts, &r->ts) != 0 ||
	    memcmp(out->ts.mac, r->ts.mac, BFT_MAC_LEN) != 0) {
		memset(out, 0, sizeof *out);
		out->ts = r->ts;
		return -EIO;
	}
	return 0;
}

/*
 * Counts the live entries of generation <= gen (Hist[lc.ts], then the
 * side table's), from the index alone; the want-th one's ts into *ts.
 */
static unsigned
live_count(const struct bft_store *st, uint64_t block, uint64_t gen,
    long want, struct bft_ts *ts, bool *found)
{
	const struct blk_idx *x = st_idx(st, block);
	unsigned k = 0;
	long pos = -1;

	*found = false;
	if ((x->flags & IDX_HENT) && bft_ts_gen(&x->lc_ts) <= gen) {
		if (want == 0) {
			*ts = x->lc_ts;
			*found = true;
		}
		k++;
	}
	while (IDX_NSIDE(x) > 0 && st_side_next(st, block, &pos)) {
		if (bft_ts_gen(&st->side.e[pos].ts) > gen)
			continue;
		if ((long)k == want) {
			*ts = st->side.e[pos].ts;
			*found = true;
		}
		k++;
	}
	return k;
}

unsigned
bft_store_view_nhist(struct bft_store *st, uint64_t block, uint64_t gen)
{
	struct ret_node *node;
	bool frozen, found;
	struct bft_ts ts;
	unsigned k = 0;
	long lc_i;

	if (view_find(st, block, gen, &frozen, &node, &lc_i) < 0)
		return 0;
	if (!frozen)
		return live_count(st, block, gen, -1, &ts, &found);
	for (uint32_t i = 0; node != NULL && i < node->n; i++)
		k += in_view(node, lc_i, gen, i);
	return k;
}

/* Retained entry i of node, from its record's metadata. */
static int
ret_hent(struct bft_store *st, struct ret_node *node, uint32_t i,
    struct bft_hist_entry *out)
{
	const struct ret_rec *r = &node->rec[i];
	const uint8_t *p = st_meta_read(st, r->loc, BFT_REC_HIST, node->addr,
	    bft_rec_hist_len(st->n, r->frag_len));
	struct snap_vol *sv;

	memset(out, 0, sizeof *out);
	if (p != NULL) {
		bft_rec_decode_hist(p, st->n, &out->meta);
		out->loc = r->loc;
		if (bft_ts_cmp(&out->meta.ts, &r->ts) == 0 &&
		    out->meta.frag_len == r->frag_len)
			return 0;
		memset(out, 0, sizeof *out);
	}
	/* Forgotten as a damaged live entry is. */
	sv = st_snap_vol(st, bft_addr_vol(node->addr));
	st_ret_drop(st, sv, node, i);
	return -EIO;
}

int
bft_store_view_hist_at(struct bft_store *st, uint64_t block, uint64_t gen,
    unsigned i, struct bft_hist_entry *out)
{
	struct ret_node *node;
	bool frozen, found;
	struct bft_ts ts;
	long lc_i;
	int err;

	memset(out, 0, sizeof *out);
	if ((err = view_find(st, block, gen, &frozen, &node, &lc_i)) < 0)
		return err;
	if (!frozen) {
		live_count(st, block, gen, (long)i, &ts, &found);
		return found ? bft_store_get_hist(st, block, &ts, out) :
		    -ENOENT;
	}
	for (uint32_t k = 0; node != NULL && k < node->n; k++)
		if (in_view(node, lc_i, gen, k) && i-- == 0)
			return ret_hent(st, node, k, out);
	return -ENOENT;
}

int
bft_store_view_read_hist(struct bft_store *st, uint64_t block, uint64_t gen,
    const struct bft_ts *ts, struct bft_hist_entry *out, uint8_t *buf)
{
	struct ret_node *node;
	bool frozen;
	long lc_i;
	int err;

	memset(out, 0, sizeof *out);
	if ((err = view_find(st, block, gen, &frozen, &node, &lc_i)) < 0)
		return err;
	if (!frozen)
		return bft_ts_gen(ts) > gen ? -ENOENT :
		    bft_store_read_hist(st, block, ts, out, buf);
	for (uint32_t k = 0; node != NULL && k < node->n; k++) {
		const struct ret_rec *r = &node->rec[k];

		if (!in_view(node, lc_i, gen, k) || bft_ts_cmp(&r->ts, ts) != 0)
			continue;
		err = st_hist_read(st, r->loc, block, ts, r->frag_len,
		    &out->meta);
		if (err == -EIO)
			st_ret_drop(st, st_snap_vol(st, bft_addr_vol(block)),
			    node, k);
		if (err < 0) {
			memset(out, 0, sizeof *out);
			return err;
		}
		out->loc = r->loc;
		memcpy(buf, st->rbuf + bft_rec_frag_off(st->n), r->frag_len);
		return 0;
	}
	return -ENOENT;
}

int
bft_store_view_set_lc(struct bft_store *st, uint64_t block, uint64_t gen,
    const struct bft_cand *c)
{
	struct ret_node *node;
	uint64_t loc;
	size_t len;
	bool frozen;
	long lc_i;
	int err;

	if ((err = view_find(st, block, gen, &frozen, &node, &lc_i)) < 0)
		return err;
	if (bft_store_dropped(st, bft_addr_vol(block)))
		return -EIDRM;
	if (bft_ts_gen(&c->ts) > gen || bft_ts_is_zero(&c->ts))
		return -EINVAL;
	if (!frozen)
		return bft_store_set_lc(st, block, c);
	if (node != NULL && lc_i >= 0 &&
	    bft_ts_cmp(&c->ts, &node->rec[lc_i].ts) <= 0)
		return -EINVAL;
	if ((err = st_ret_reserve(st, block, 1)) < 0)
		return err;
	len = bft_rec_encode_lc_as(st->wbuf, st->n, BFT_REC_VLC, st->next_seq,
	    block, c);
	if ((err = st_append_rec(st, st->wbuf, len, &loc)) < 0) {
		st_ret_prune(st, block);
		return err;
	}
	st_mc_put(st, loc, st->wbuf, bft_rec_meta_len(BFT_REC_VLC, st->n));
	st_ret_add_new(st, block, BFT_REC_VLC, &c->ts, loc, 0);
	st_ret_prune(st, block);
	st_compact_step(st, len);
	st_ckpt_after_append(st);
	return 0;
}

/*
 * Retained lc record k of node again, with ts's MAC and vec, when it is
 * the version (nh); 1, 0 when it had them, or a negative errno.
 */
static int
relabel_ret_lc(struct bft_store *st, struct ret_node *node, uint32_t k,
    const struct bft_ts *ts, const uint8_t nh[BFT_HASH_LEN],
    const uint8_t (*vec)[BFT_MAC_LEN])
{
	unsigned type = node->rec[k].type;
	uint8_t h[BFT_HASH_LEN];
	struct bft_cand c;
	const uint8_t *p;
	uint64_t loc;
	size_t len;
	int err;

	p = st_meta_read(st, node->rec[k].loc, type, node->addr,
	    bft_rec_lc_len(st->n));
	if (p == NULL)
		return -EIO;
	bft_rec_decode_lc(p, st->n, &c);
	bft_hash(c.nonce, BFT_NONCE_LEN, h);
	if (!bft_equal(h, nh, BFT_HASH_LEN))
		return -ENOENT;
	if (!st_macs_take(st, c.ts.mac, c.vec, ts, vec))
		return 0;
	len = bft_rec_encode_lc_as(st->wbuf, st->n, type, st->next_seq,
	    node->addr, &c);
	if ((err = st_append_rec(st, st->wbuf, len, &loc)) < 0)
		return err;
	st_mc_put(st, loc, st->wbuf, bft_rec_meta_len(type, st->n));
	st_ret_add_new(st, node->addr, type, &c.ts, loc, 0);
	st_after_append(st, len);
	return 1;
}

/* The same for retained Hist record k, fragment and all. */
static int
relabel_ret_hist(struct bft_store *st, struct ret_node *node, uint32_t k,
    const struct bft_ts *ts, const uint8_t nh[BFT_HASH_LEN],
    const uint8_t (*vec)[BFT_MAC_LEN])
{
	const struct ret_rec *r = &node->rec[k];
	uint64_t block = node->addr, loc;
	struct bft_hist_meta m;
	size_t len;
	int err;

	if ((err = st_hist_read(st, r->loc, block, &r->ts, r->frag_len,
	    &m)) < 0)
		return err;
	if (!bft_equal(m.nh, nh, BFT_HASH_LEN))
		return -ENOENT;
	if (!st_macs_take(st, m.ts.mac, m.vec, ts, vec))
		return 0;
	len = bft_rec_encode_hist(st->wbuf, st->n, st->next_seq, block, &m,
	    st->rbuf + bft_rec_frag_off(st->n));
	if ((err = st_append_rec(st, st->wbuf, len, &loc)) < 0)
		return err;
	st_ret_add_new(st, block, BFT_REC_HIST, &m.ts, loc, m.frag_len);
	st_after_append(st, len);
	return 1;
}

int
bft_store_view_relabel(struct bft_store *st, uint64_t block, uint64_t gen,
    const struct bft_ts *ts, const uint8_t nh[BFT_HASH_LEN],
    const uint8_t (*vec)[BFT_MAC_LEN], uint8_t *frag)
{
	struct ret_node *node;
	int err, done = 0;
	bool frozen, found = false;
	long lc_i;

	if (gen == BFT_GEN_MAX)
		return bft_store_relabel(st, block, ts, nh, vec, frag);
	if ((err = view_find(st, block, gen, &frozen, &node, &lc_i)) < 0)
		return err;
	if (!frozen)
		return bft_store_relabel(st, block, ts, nh, vec, frag);
	if ((err = st_writable(st, block)) < 0)
		return err;
	if (node == NULL || lc_i < 0)
		return -ENOENT;
	/* A copy takes its record's place: one more slot while both are. */
	if ((err = st_ret_reserve(st, block, 1)) < 0)
		return err;
	for (uint32_t k = 0; k < node->n; k++) {
		const struct ret_rec *r = &node->rec[k];

		if (((long)k != lc_i && !in_view(node, lc_i, gen, k)) ||
		    r->ts.num != ts->num || r->ts.wid != ts->wid)
			continue;
		err = r->type == BFT_REC_HIST ?
		    relabel_ret_hist(st, node, k, ts, nh, vec) :
		    relabel_ret_lc(st, node, k, ts, nh, vec);
		if (err == -ENOENT)
			continue;
		if (err < 0)
			break;
		found = true;
		done += err;
	}
	st_ret_prune(st, block);
	if (err < 0 && err != -ENOENT)
		return err;
	return found ? done : -ENOENT;
}

uint64_t
bft_store_view_next(struct bft_store *st, uint32_t vol, uint64_t gen,
    uint64_t addr)
{
	const struct snap_vol *sv = st_snap_vol(st, vol);
	uint64_t end = bft_addr(vol, BFT_ADDR_MAX_BLOCK);
	const struct ret_node *t, *best;

	if (sv == NULL || !st_snap_has(sv, gen) || addr > end)
		return UINT64_MAX;
	if (addr < bft_addr(vol, 0))
		addr = bft_addr(vol, 0);
	/* An in-order walk from addr: a step per node it touches. */
	for (;;) {
		best = NULL;
		for (t = sv->root; t != NULL; st->idx_steps++) {
			if (t->addr >= addr) {
				best = t;
				t = t->l;
			} else {
				t = t->r;
			}
		}
		if (best == NULL)
			return UINT64_MAX;
		if (bft_ts_gen(&st_idx(st, best->addr)->lc_ts) > gen)
			return best->addr;
		addr = best->addr + 1;
	}
}

/* What bft_store_snap_space adds up, from an address, up to a budget. */
struct space {
	const struct bft_store *st;
	const struct snap_vol *sv;
	uint64_t gen, exclusive;
	uint64_t from, budget, next;	/* next: UINT64_MAX once all seen */
};

static long
lc_of(const struct ret_node *node, uint64_t g)
{
	long lc_i = -1;

	for (uint32_t i = 0; i < node->n; i++)
		if (node->rec[i].type != BFT_REC_HIST &&
		    bft_ts_gen(&node->rec[i].ts) <= g)
			lc_i = (long)i;
	return lc_i;
}

/*
 * Adds node's records that only boundary sp->gen uses: a record used
 * by one boundary is exclusive to it.  lc_g is found once a boundary,
 * so a node costs O(boundaries * records), without writing to it.
 */
static void
space_node(struct space *sp, const struct ret_node *node)
{
	uint64_t top = bft_ts_gen(&st_idx(sp->st, node->addr)->lc_ts);
	const struct snap_vol *sv = sp->sv;
	long lc[BFT_STORE_MAX_SNAPS], mine = -1;
	uint32_t ng = 0;

	if (!st_snap_has(sv, sp->gen) || sp->gen >= top)
		return;
	for (; ng < sv->ngens && sv->gens[ng].gen < top; ng++) {
		lc[ng] = lc_of(node, sv->gens[ng].gen);
		if (sv->gens[ng].gen == sp->gen)
			mine = lc[ng];
	}
	for (uint32_t i = 0; i < node->n; i++) {
		bool used = (long)i == mine || in_view(node, mine, sp->gen, i);

		for (uint32_t k = 0; used && k < ng; k++)
			if (sv->gens[k].gen != sp->gen && ((long)i == lc[k] ||
			    in_view(node, lc[k], sv->gens[k].gen, i)))
				used = false;
		if (used)
			sp->exclusive += st_ret_len(sp->st, &node->rec[i]);
	}
}

/* In order from sp->from, stopping once the budget is spent. */
static void
space_walk(struct space *sp, const struct ret_node *t)
{
	if (t == NULL || sp->budget == 0)
		return;
	if (t->addr > sp->from)
		space_walk(sp, t->l);
	if (sp->budget == 0)
		return;
	if (t->addr >= sp->from) {
		space_node(sp, t);
		sp->next = t->addr + 1;
		if (--sp->budget == 0)
			return;
	}
	space_walk(sp, t->r);
}

uint64_t
bft_store_snap_space_from(const struct bft_store *st, uint32_t vol,
    uint64_t gen, uint64_t from, uint64_t budget, uint64_t *exclusive)
{
	const struct snap_vol *sv = st_snap_vol(st, vol);
	struct space sp = { .st = st, .sv = sv, .gen = gen, .from = from,
	    .budget = budget };

	if (sv == NULL || budget == 0)
		return sv == NULL ? UINT64_MAX : from;
	space_walk(&sp, sv->root);
	*exclusive += sp.exclusive;
	/* Budget left over: the walk reached the end. */
	return sp.budget > 0 ? UINT64_MAX : sp.next;
}

uint64_t
bft_store_snap_retained(const struct bft_store *st, uint32_t vol)
{
	const struct snap_vol *sv = st_snap_vol(st, vol);

	return sv == NULL ? 0 : sv->bytes;
}

void
bft_store_snap_space(const struct bft_store *st, uint32_t vol, uint64_t gen,
    uint64_t *exclusive, uint64_t *total)
{
	const struct snap_vol *sv = st_snap_vol(st, vol);

	*exclusive = *total = 0;
	if (sv == NULL)
		return;
	(void)bft_store_snap_space_from(st, vol, gen, 0, UINT64_MAX,
	    exclusive);
	*total = sv->bytes;
}
