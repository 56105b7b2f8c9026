/*
 * The retention index (store_int.h): per volume with snapshots, a treap
 * of the blocks that hold retained records, ordered by address, each
 * node with the block's records sorted by ts.  Nothing is kept for a
 * block that retains nothing but the IDX_RET bit of its index entry,
 * which spares the hot paths (compaction's owner test, replay) a lookup.
 *
 * Why a treap: the views look a block up, bft_store_view_next walks a
 * volume's retained blocks in address order from any address (what an
 * export-diff between two snapshots asks), and a retained block costs
 * one node whatever its address (a hash table keyed by (address, ts)
 * would answer the lookups but not the walk; per-volume pages would
 * cost a page for a block rewritten alone).  Priorities come from a
 * generator seeded at random per store, so no choice of addresses makes
 * the tree, or the recursion of split and merge, deep.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "store.h"
#include "store_int.h"
#include "store_log.h"

static uint32_t
prio_next(struct bft_store *st)
{
	uint64_t z;

	if (st->ret_seed == 0 && getrandom(&st->ret_seed,
	    sizeof st->ret_seed, 0) != sizeof st->ret_seed)
		st->ret_seed = (uint64_t)(uintptr_t)st;
	/* splitmix64 */
	z = (st->ret_seed += 0x9e3779b97f4a7c15ull);
	z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ z >> 27) * 0x94d049bb133111ebull;
	return (uint32_t)(z ^ z >> 31);
}

/* a: the nodes of t below key; b: the rest. */
static void
tr_split(struct ret_node *t, uint64_t key, struct ret_node **a,
    struct ret_node **b)
{
	if (t == NULL) {
		*a = *b = NULL;
	} else if (t->addr < key) {
		tr_split(t->r, key, &t->r, b);
		*a = t;
	} else {
		tr_split(t->l, key, a, &t->l);
		*b = t;
	}
}

static struct ret_node *
tr_merge(struct ret_node *a, struct ret_node *b)
{
	if (a == NULL)
		return b;
	if (b == NULL)
		return a;
	if (a->prio > b->prio) {
		a->r = tr_merge(a->r, b);
		return a;
	}
	b->l = tr_merge(a, b->l);
	return b;
}

static struct ret_node *
tr_find(struct ret_node *t, uint64_t addr)
{
	while (t != NULL && t->addr != addr)
		t = addr < t->addr ? t->l : t->r;
	return t;
}

/* The first node at or after addr, or NULL; *steps counts the nodes. */
static struct ret_node *
tr_lower(struct ret_node *t, uint64_t addr, uint64_t *steps)
{
	struct ret_node *best = NULL;

	for (; t != NULL; (*steps)++) {
		if (t->addr >= addr) {
			best = t;
			t = t->l;
		} else {
			t = t->r;
		}
	}
	return best;
}

struct ret_node *
st_ret_node(const struct bft_store *st, uint64_t block)
{
	const struct snap_vol *sv = st_snap_vol(st, bft_addr_vol(block));

	return sv != NULL ? tr_find(sv->root, block) : NULL;
}

size_t
st_ret_len(const struct bft_store *st, const struct ret_rec *r)
{
	if (r->type == BFT_REC_HIST)
		return bft_rec_hist_len(st->n, r->frag_len);
	return r->type == 0 ? 0 : bft_rec_lc_len(st->n);
}

int
st_ret_reserve(struct bft_store *st, uint64_t block, unsigned extra)
{
	struct snap_vol *sv = st_snap_vol_make(st, bft_addr_vol(block));
	struct ret_node *node, *a, *b;
	struct ret_rec *nr;
	uint32_t cap;

	if (sv == NULL)
		return -ENOMEM;
	if ((node = tr_find(sv->root, block)) == NULL) {
		if ((node = calloc(1, sizeof *node)) == NULL)
			return -ENOMEM;
		node->addr = block;
		node->prio = prio_next(st);
		tr_split(sv->root, block, &a, &b);
		sv->root = tr_merge(tr_merge(a, node), b);
		sv->nodes++;
		/* A block retains only once written: its page exists. */
		st_idx_mut(st, block)->flags |= IDX_RET;
	}
	if (node->n + extra <= node->cap)
		return 0;
	/* Most blocks keep one version: lc and its entry. */
	cap = node->cap ? 2 * node->cap : 2;
	while (cap < node->n + extra)
		cap *= 2;
	if ((nr = realloc(node->rec, cap * sizeof *nr)) == NULL)
		return -ENOMEM;
	node->rec = nr;
	node->cap = cap;
	return 0;
}

int
st_ret_reserve_cross(struct bft_store *st, uint64_t block,
    const struct bft_ts *ts)
{
	const struct blk_idx *x = st_idx(st, block);
	uint64_t gmax;

	if (!st_ret_crossing(st, block, &x->lc_ts, ts, &gmax))
		return 0;
	return st_ret_reserve(st, block, 2 + IDX_NSIDE(x));
}

bool
st_ret_crossing(const struct bft_store *st, uint64_t block,
    const struct bft_ts *old, const struct bft_ts *ts, uint64_t *gmax)
{
	const struct snap_vol *sv = st_snap_vol(st, bft_addr_vol(block));

	return sv != NULL && sv->ngens > 0 && bft_ts_cmp(ts, old) > 0 &&
	    st_snap_crossed(sv, bft_ts_gen(old), bft_ts_gen(ts), gmax);
}

/* The order of a node's records: ts, then an lc before an entry. */
static int
rec_cmp(const struct ret_rec *r, const struct bft_ts *ts, bool hist)
{
	int c = bft_ts_cmp(&r->ts, ts);

	if (c != 0)
		return c;
	return (r->type == BFT_REC_HIST) - hist;
}

static void
ret_add(struct bft_store *st, uint64_t block, unsigned type,
    const struct bft_ts *ts, uint64_t loc, uint32_t frag_len, bool count)
{
	struct snap_vol *sv = st_snap_vol(st, bft_addr_vol(block));
	struct ret_node *node = tr_find(sv->root, block);
	bool hist = type == BFT_REC_HIST;
	struct ret_rec nr = { .ts = *ts, .loc = loc, .frag_len = frag_len,
	    .type = (uint8_t)type };
	uint32_t i = 0;
	size_t len;

	while (i < node->n && rec_cmp(&node->rec[i], ts, hist) < 0)
		i++;
	/* A copy of a record held already: the copy replaces it. */
	if (i < node->n && rec_cmp(&node->rec[i], ts, hist) == 0)
		st_ret_drop(st, sv, node, i);
	memmove(&node->rec[i + 1], &node->rec[i], (node->n - i) *
	    sizeof *node->rec);
	node->rec[i] = nr;
	node->n++;
	sv->recs++;
	len = st_ret_len(st, &nr);
	sv->bytes += len;
	if (count) {
		st_live_inc(st, loc, len);
		st_vol_live(st, block, (int64_t)len);
	}
}

void
st_ret_add_new(struct bft_store *st, uint64_t block, unsigned type,
    const struct bft_ts *ts, uint64_t loc, uint32_t frag_len)
{
	ret_add(st, block, type, ts, loc, frag_len, true);
}

void
st_ret_add_moved(struct bft_store *st, uint64_t block, unsigned type,
    const struct bft_ts *ts, uint64_t loc, uint32_t frag_len)
{
	ret_add(st, block, type, ts, loc, frag_len, false);
}

void
st_ret_drop(struct bft_store *st, struct snap_vol *sv, struct ret_node *node,
    unsigned i)
{
	size_t len = st_ret_len(st, &node->rec[i]);

	if (len > 0) {
		st_live_dec(st, node->rec[i].loc, len);
		st_vol_live(st, node->addr, -(int64_t)len);
	}
	sv->bytes -= len;
	sv->recs--;
	memmove(&node->rec[i], &node->rec[i + 1], (node->n - i - 1) *
	    sizeof *node->rec);
	node->n--;
}

/* Takes node out of sv's treap and frees it. */
static void
node_remove(struct bft_store *st, struct snap_vol *sv, struct ret_node *node)
{
	uint64_t addr = node->addr;
	struct ret_node *a, *b, *m, *c;

	tr_split(sv->root, addr, &a, &b);
	tr_split(b, addr + 1, &m, &c);
	sv->root = tr_merge(a, c);
	if (st_idx_page(st, addr) != NULL)
		st_idx_mut(st, addr)->flags &= ~IDX_RET;
	sv->nodes--;
	free(node->rec);
	free(node);
}

static bool
is_lc(const struct ret_rec *r)
{
	return r->type != BFT_REC_HIST;
}

/*
 * Keeps, for every boundary g below the live lc's generation, lc_g (the
 * newest lc of generation <= g) and the entries of generation <= g at or
 * above it; nothing else.  Records at or above the live lc are left
 * alone: only a replay holds such (a write-back met before the set_lc
 * that froze its view, which compaction moved), and it prunes again
 * once the live lc passed them.
 */
static void
prune_node(struct bft_store *st, struct snap_vol *sv, struct ret_node *node)
{
	struct bft_ts live = st_idx(st, node->addr)->lc_ts;
	uint64_t top = bft_ts_gen(&live);

	for (uint32_t i = 0; i < node->n; i++)
		node->rec[i].pad[0] = bft_ts_cmp(&node->rec[i].ts, &live) >= 0;
	for (uint32_t k = 0; k < sv->ngens && sv->gens[k].gen < top; k++) {
		uint64_t g = sv->gens[k].gen;
		const struct bft_ts *lc = NULL;
		long lc_i = -1;

		for (uint32_t i = 0; i < node->n; i++)
			if (is_lc(&node->rec[i]) &&
			    bft_ts_gen(&node->rec[i].ts) <= g)
				lc_i = (long)i;
		if (lc_i >= 0) {
			node->rec[lc_i].pad[0] = 1;
			lc = &node->rec[lc_i].ts;
		}
		for (uint32_t i = 0; i < node->n; i++) {
			const struct ret_rec *r = &node->rec[i];

			if (!is_lc(r) && bft_ts_gen(&r->ts) <= g &&
			    (lc == NULL || bft_ts_cmp(&r->ts, lc) >= 0))
				node->rec[i].pad[0] = 1;
		}
	}
	for (uint32_t i = node->n; i-- > 0;)
		if (!node->rec[i].pad[0])
			st_ret_drop(st, sv, node, i);
	for (uint32_t i = 0; i < node->n; i++)
		node->rec[i].pad[0] = 0;
	if (node->n == 0)
		node_remove(st, sv, node);
}

void
st_ret_prune(struct bft_store *st, uint64_t block)
{
	struct snap_vol *sv = st_snap_vol(st, bft_addr_vol(block));
	struct ret_node *node = sv != NULL ? tr_find(sv->root, block) : NULL;

	if (node != NULL)
		prune_node(st, sv, node);
}

int
st_ret_replayed(struct bft_store *st, uint64_t block, unsigned type,
    const struct bft_ts *ts, uint64_t loc, uint32_t frag_len)
{
	const struct snap_vol *sv = st_snap_vol(st, bft_addr_vol(block));

	/*
	 * No boundary: nothing of it can be needed (see store_snap.c);
	 * but a copy of what a checkpoint holds still moves it, so that
	 * the record's old place may go.
	 */
	if (sv == NULL || (sv->ngens == 0 &&
	    !(st_idx(st, block)->flags & IDX_RET)))
		return 0;
	if (st_ret_reserve(st, block, 1) < 0)
		return -ENOMEM;
	st_ret_add_new(st, block, type, ts, loc, frag_len);
	st_ret_prune(st, block);
	return 0;
}

bool
st_ret_gc(struct bft_store *st, struct snap_vol *sv, uint64_t *budget)
{
	uint64_t end = bft_addr(sv->vol, BFT_ADDR_MAX_BLOCK), steps = 0;
	struct ret_node *node;

	while (*budget > 0) {
		node = tr_lower(sv->root, sv->gc_next, &steps);
		if (node == NULL || node->addr > end) {
			sv->gc = false;
			return true;
		}
		sv->gc_next = node->addr + 1;
		if (sv->gc_done < sv->gc_total)
			sv->gc_done++;
		prune_node(st, sv, node);
		(*budget)--;
	}
	return false;
}

static void
tr_free(struct bft_store *st, struct snap_vol *sv, struct ret_node *t,
    bool drop)
{
	if (t == NULL)
		return;
	tr_free(st, sv, t->l, drop);
	tr_free(st, sv, t->r, drop);
	for (uint32_t i = 0; drop && i < t->n; i++)
		st_live_dec(st, t->rec[i].loc, st_ret_len(st, &t->rec[i]));
	free(t->rec);
	free(t);
}

void
st_ret_free(struct bft_store *st, struct snap_vol *sv, bool drop)
{
	tr_free(st, sv, sv->root, drop);
	sv->root = NULL;
	sv->nodes = sv->recs = sv->bytes = 0;
	sv->gc = false;
}

static int
tr_walk(const struct ret_node *t,
    int (*fn)(void *arg, uint64_t addr, const struct ret_rec *r), void *arg)
{
	int err;

	if (t == NULL)
		return 0;
	if ((err = tr_walk(t->l, fn, arg)) < 0)
		return err;
	for (uint32_t i = 0; i < t->n; i++)
		if ((err = fn(arg, t->addr, &t->rec[i])) < 0)
			return err;
	return tr_walk(t->r, fn, arg);
}

int
st_ret_walk(const struct bft_store *st,
    int (*fn)(void *arg, uint64_t addr, const struct ret_rec *r), void *arg)
{
	int err;

	for (size_t i = 0; i < st->nsvols; i++)
		if ((err = tr_walk(st->svols[i].root, fn, arg)) < 0)
			return err;
	return 0;
}

int
st_ret_load(struct bft_store *st, uint64_t addr, const struct ret_rec *r)
{
	size_t len = st_ret_len(st, r);
	int err;

	if (!st_addr_ok(st, addr) || st_idx_page(st, addr) == NULL ||
	    (r->type != 0 && r->type != BFT_REC_HIST &&
	    !bft_rec_is_lc(r->type)) || (r->type == 0 && r->loc != 0) ||
	    (r->type == BFT_REC_HIST && r->frag_len > BFT_MAX_FRAG))
		return -EINVAL;
	if ((err = st_ret_reserve(st, addr, 1)) < 0)
		return err;
	/* The checkpoint's segments counted its bytes already. */
	st_ret_add_new(st, addr, r->type, &r->ts, r->loc, r->frag_len);
	if (len > 0)
		st_live_dec(st, r->loc, len);
	return 0;
}

void
st_ret_recount(struct bft_store *st)
{
	for (size_t i = 0; i < st->nsvols; i++)
		st_vol_live(st, bft_addr(st->svols[i].vol, 0),
		    (int64_t)st->svols[i].bytes);
}
