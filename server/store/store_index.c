/*
 * The store's index (store_int.h): per block, lc.ts and where lc's and
 * Hist[lc.ts]'s records are; and the side table of Hist entries above
 * lc.  The transitions here are the whole of the store's semantics: an
 * append and the replay of the same record go through the same one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "predicates.h"
#include "store_int.h"
#include "store_log.h"

const struct blk_idx st_idx_none;

/* Where vol is in st->vols, or where it would go. */
static size_t
vol_pos(const struct bft_store *st, uint32_t vol)
{
	size_t lo = 0, hi = st->nvols;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->vols[mid].vol < vol)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* vol's page table, or NULL. */
static struct idx_vol *
vol_find(const struct bft_store *st, uint32_t vol)
{
	size_t i = vol_pos(st, vol);

	return i < st->nvols && st->vols[i].vol == vol ? &st->vols[i] : NULL;
}

const struct idx_vol *
st_idx_vol(const struct bft_store *st, uint32_t vol)
{
	return vol_find(st, vol);
}

/* Volume 0, the cluster's disk, has its whole page table from the start. */
int
st_idx_init(struct bft_store *st)
{
	struct idx_vol *v;

	if ((st->vols = calloc(4, sizeof *st->vols)) == NULL)
		return -ENOMEM;
	st->volcap = 4;
	st->nvols = 1;
	v = &st->vols[0];
	v->vol = 0;
	v->npages = (st->id.nblocks + IDX_PAGE - 1) >> IDX_PAGE_SHIFT;
	v->pages = calloc((size_t)v->npages + 1, sizeof *v->pages);
	if (v->pages == NULL)
		return -ENOMEM;
	return st_pm_grow(&v->map, v->npages);
}

/* vol's page table, made when absent. */
static struct idx_vol *
vol_make(struct bft_store *st, uint32_t vol)
{
	size_t i = vol_pos(st, vol);

	if (i < st->nvols && st->vols[i].vol == vol)
		return &st->vols[i];	/* vol_find's test, at the same i */
	if (st->nvols == st->volcap) {
		struct idx_vol *nv = realloc(st->vols, 2 * st->volcap *
		    sizeof *nv);

		if (nv == NULL)
			return NULL;
		st->vols = nv;
		st->volcap *= 2;
	}
	memmove(&st->vols[i + 1], &st->vols[i], (st->nvols - i) *
	    sizeof *st->vols);
	st->nvols++;
	memset(&st->vols[i], 0, sizeof st->vols[i]);
	st->vols[i].vol = vol;
	return &st->vols[i];
}

/* Grows v's page table to hold page p, doubling. */
static int
pages_grow(struct idx_vol *v, uint64_t p)
{
	uint64_t want = v->npages ? v->npages : 16;
	struct blk_idx **np;

	int err;

	while (want <= p)
		want *= 2;
	if ((err = st_pm_grow(&v->map, want)) < 0)
		return err;
	if ((np = realloc(v->pages, (size_t)want * sizeof *np)) == NULL)
		return -ENOMEM;
	memset(np + v->npages, 0, (size_t)(want - v->npages) * sizeof *np);
	v->pages = np;
	v->npages = want;
	return 0;
}

int
st_idx_make(struct bft_store *st, uint64_t addr)
{
	uint64_t p = bft_addr_block(addr) >> IDX_PAGE_SHIFT;
	struct idx_vol *v;
	int err;

	if ((v = vol_make(st, bft_addr_vol(addr))) == NULL)
		return -ENOMEM;
	if (p >= v->npages && (err = pages_grow(v, p)) < 0)
		return err;
	if (v->pages[p] != NULL)
		return 0;
	if ((v->pages[p] = calloc(IDX_PAGE, sizeof **v->pages)) == NULL)
		return -ENOMEM;
	st_pm_set(&v->map, p);
	if (p >= v->hi)
		v->hi = p + 1;
	st->pages_made++;
	return 0;
}

/*
 * Page p of v at or after p, by the page map: closing and recounting
 * cost a step per page there is, not per slot of the page table, which
 * for a volume written near its top is millions long.  The steps are
 * not counted in idx_steps, which measures the protocol's walks.
 */
static uint64_t
page_next(const struct idx_vol *v, uint64_t p)
{
	uint64_t steps = 0;

	return st_pm_next(&v->map, p, &steps);
}

void
st_idx_free(struct bft_store *st)
{
	for (size_t i = 0; i < st->nvols; i++) {
		const struct idx_vol *v = &st->vols[i];

		for (uint64_t p = 0; (p = page_next(v, p)) != UINT64_MAX; p++)
			free(v->pages[p]);
		free(st->vols[i].pages);
		st_pm_free(&st->vols[i].map);
	}
	free(st->vols);
	st->vols = NULL;
	free(st->dropped);
	st->dropped = NULL;
	st->ndropped = st->dropcap = 0;
	st->nvols = st->volcap = 0;
	st->pages_made = 0;
}

/*
 * The page map finds the next page in a few steps, so that a walk costs
 * in proportion to the pages it visits, not to the slots between them;
 * a volume holding nothing past *addr costs one question.
 */
bool
st_idx_next(struct bft_store *st, uint64_t *addr)
{
	for (size_t i = vol_pos(st, bft_addr_vol(*addr)); i < st->nvols;
	    i++) {
		const struct idx_vol *v = &st->vols[i];
		uint64_t p = 0, a;

		if (v->vol == bft_addr_vol(*addr))
			p = bft_addr_block(*addr) >> IDX_PAGE_SHIFT;
		if ((p = st_pm_next(&v->map, p, &st->idx_steps)) ==
		    UINT64_MAX)
			continue;
		a = bft_addr(v->vol, p << IDX_PAGE_SHIFT);
		if (a > *addr)
			*addr = a;
		return true;
	}
	return false;
}

uint64_t
bft_store_next_page(struct bft_store *st, uint64_t addr)
{
	return st_idx_next(st, &addr) ? addr : UINT64_MAX;
}

uint64_t
bft_store_idx_steps(const struct bft_store *st)
{
	return st->idx_steps;
}

uint64_t
bft_store_indexed(const struct bft_store *st)
{
	return st->pages_made << IDX_PAGE_SHIFT;
}

size_t
bft_store_volumes(const struct bft_store *st, uint32_t first,
    struct bft_store_vol *out, size_t max)
{
	size_t k = 0;

	for (size_t i = vol_pos(st, first); i < st->nvols && k < max; i++) {
		const struct idx_vol *v = &st->vols[i];

		if (v->hi == 0)
			continue;
		out[k].vol = v->vol;
		out[k].live = v->live;
		out[k++].end = v->hi << IDX_PAGE_SHIFT;
	}
	return k;
}

/* Fibonacci hashing, folded: consecutive blocks spread over the table. */
static size_t
side_slot(const struct side_tab *t, uint64_t block)
{
	uint64_t h = block * 0x9e3779b97f4a7c15ull;

	return (size_t)(h ^ h >> 32) & (t->cap - 1);
}

static void
side_put(struct side_tab *t, const struct side_ent *e)
{
	size_t i = side_slot(t, e->block);

	while (t->e[i].block != SIDE_EMPTY)
		i = (i + 1) & (t->cap - 1);
	t->e[i] = *e;
	t->used++;
}

void
st_side_insert(struct bft_store *st, const struct side_ent *e)
{
	side_put(&st->side, e);
}

/* Room for extra more entries at a load of at most 3/4.  0 or -ENOMEM. */
int
st_side_reserve(struct bft_store *st, size_t extra)
{
	struct side_tab *t = &st->side, nt;

	if (4 * (t->used + extra) <= 3 * t->cap)
		return 0;
	nt.cap = t->cap ? 2 * t->cap : SIDE_FIRST_CAP;
	while (4 * (t->used + extra) > 3 * nt.cap)
		nt.cap *= 2;
	nt.used = 0;
	if ((nt.e = malloc(nt.cap * sizeof *nt.e)) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < nt.cap; i++)
		nt.e[i].block = SIDE_EMPTY;
	for (size_t i = 0; i < t->cap; i++)
		if (t->e[i].block != SIDE_EMPTY)
			side_put(&nt, &t->e[i]);
	free(t->e);
	*t = nt;
	return 0;
}

void
st_side_free(struct bft_store *st)
{
	free(st->side.e);
	memset(&st->side, 0, sizeof st->side);
}

bool
st_side_next(const struct bft_store *st, uint64_t block, long *pos)
{
	const struct side_tab *t = &st->side;
	size_t i;

	if (t->cap == 0)
		return false;
	i = *pos < 0 ? side_slot(t, block) : ((size_t)*pos + 1) &
	    (t->cap - 1);
	/* A run of full slots ends at an empty one: the table is never full. */
	for (; t->e[i].block != SIDE_EMPTY; i = (i + 1) & (t->cap - 1)) {
		if (t->e[i].block == block) {
			*pos = (long)i;
			return true;
		}
	}
	return false;
}

long
st_side_find(const struct bft_store *st, uint64_t block,
    const struct bft_ts *ts)
{
	long pos = -1;

	if (IDX_NSIDE(st_idx(st, block)) == 0)
		return -1;
	while (st_side_next(st, block, &pos))
		if (bft_ts_cmp(&st->side.e[pos].ts, ts) == 0)
			return pos;
	return -1;
}

/* Removes slot i, shifting back the run after it (Knuth's algorithm R). */
static void
side_delete(struct bft_store *st, size_t i)
{
	struct side_tab *t = &st->side;
	size_t j = i, home;

	st_idx_mut(st, t->e[i].block)->flags -= 1u << IDX_SIDE_SHIFT;
	for (;;) {
		t->e[i].block = SIDE_EMPTY;
		for (;;) {
			j = (j + 1) & (t->cap - 1);
			if (t->e[j].block == SIDE_EMPTY) {
				t->used--;
				return;
			}
			home = side_slot(t, t->e[j].block);
			/* Stays if its home lies cyclically in (i, j]. */
			if (i <= j ? (i < home && home <= j) :
			    (i < home || home <= j))
				continue;
			break;
		}
		t->e[i] = t->e[j];
		i = j;
	}
}

static size_t
hist_len(const struct bft_store *st, uint32_t frag_len)
{
	return bft_rec_hist_len(st->n, frag_len);
}

/*
 * A volume's live bytes follow the index: each record it points to at
 * the length its entry implies, so that st_idx_recount() finds the same
 * sum from the index alone.
 */
static void
vol_live(struct bft_store *st, uint64_t addr, int64_t delta)
{
	struct idx_vol *v = vol_find(st, bft_addr_vol(addr));

	if (v != NULL)
		v->live += (uint64_t)delta;
}

void
st_vol_live(struct bft_store *st, uint64_t addr, int64_t delta)
{
	vol_live(st, addr, delta);
}

void
st_idx_recount(struct bft_store *st)
{
	size_t lc = bft_rec_lc_len(st->n);

	for (size_t i = 0; i < st->nvols; i++) {
		struct idx_vol *v = &st->vols[i];

		v->live = 0;
		v->top_gen = 0;
		for (uint64_t p = 0; (p = page_next(v, p)) != UINT64_MAX;
		    p++) {
			const struct blk_idx *x = v->pages[p];

			for (unsigned k = 0; k < IDX_PAGE; k++) {
				if (bft_ts_gen(&x[k].lc_ts) > v->top_gen)
					v->top_gen = bft_ts_gen(&x[k].lc_ts);
				if (x[k].lc_loc != 0)
					v->live += lc;
				if (x[k].flags & IDX_HENT)
					v->live += hist_len(st,
					    x[k].h_frag_len);
			}
		}
	}
	for (size_t i = 0; i < st->side.cap; i++)
		if (st->side.e[i].block != SIDE_EMPTY)
			vol_live(st, st->side.e[i].block, (int64_t)hist_len(st,
			    st->side.e[i].frag_len));
}

void
st_side_drop(struct bft_store *st, long i)
{
	struct side_ent *e = &st->side.e[i];

	st_live_dec(st, e->loc, hist_len(st, e->frag_len));
	vol_live(st, e->block, -(int64_t)hist_len(st, e->frag_len));
	side_delete(st, (size_t)i);
}

static void
h_drop(struct bft_store *st, uint64_t block, struct blk_idx *x)
{
	st_live_dec(st, x->h_loc, hist_len(st, x->h_frag_len));
	vol_live(st, block, -(int64_t)hist_len(st, x->h_frag_len));
	x->h_loc = 0;
	x->h_frag_len = 0;
	x->flags &= ~(IDX_HENT | IDX_HELD | IDX_HELD_UNKNOWN);
}

/* validByHist(c, e) from the parts it reads: the entry's ts and nh. */
static bool
held_by(const struct bft_cand *c, const struct bft_ts *ts, const uint8_t *nh)
{
	struct bft_hist_meta m;

	m.ts = *ts;
	memcpy(m.nh, nh, BFT_HASH_LEN);
	return bft_valid_by_hist(c, &m);
}

void
st_hist_apply(struct bft_store *st, uint64_t block,
    const struct bft_hist_meta *m, uint64_t loc, size_t len)
{
	struct blk_idx *x = st_idx_mut(st, block);
	int cmp = bft_ts_cmp(&m->ts, &x->lc_ts);
	struct side_ent ne;
	long i;

	if (cmp < 0)
		return;
	if (cmp == 0) {
		/* The entry backing lc: HELD needs lc's nonce (store_int.h). */
		if (x->flags & IDX_HENT)
			h_drop(st, block, x);
		x->h_loc = loc;
		x->h_frag_len = m->frag_len;
		x->flags |= IDX_HENT | IDX_HELD_UNKNOWN;
		st_live_inc(st, loc, len);
		vol_live(st, block, (int64_t)hist_len(st, m->frag_len));
		return;
	}
	if ((i = st_side_find(st, block, &m->ts)) >= 0)
		st_side_drop(st, i);
	memset(&ne, 0, sizeof ne);
	ne.block = block;
	ne.ts = m->ts;
	memcpy(ne.nh, m->nh, BFT_HASH_LEN);
	ne.loc = loc;
	ne.frag_len = m->frag_len;
	side_put(&st->side, &ne);
	x->flags += 1u << IDX_SIDE_SHIFT;
	st_live_inc(st, loc, len);
	vol_live(st, block, (int64_t)hist_len(st, m->frag_len));
}

/*
 * Entry (ts, loc, frag_len) of block leaves the live state under the GC
 * rule: retained when the set_lc crossed a boundary at or above its
 * generation (store_retain.c; room was reserved), else garbage.
 */
static bool
gc_retains(bool cross, uint64_t gmax, const struct bft_ts *ts)
{
	return cross && bft_ts_gen(ts) <= gmax;
}

bool
st_lc_apply(struct bft_store *st, uint64_t block, const struct bft_cand *c,
    uint64_t loc)
{
	struct blk_idx *x = st_idx_mut(st, block);
	int cmp = bft_ts_cmp(&c->ts, &x->lc_ts);
	size_t len = bft_rec_lc_len(st->n);
	struct bft_ts old = x->lc_ts;
	struct idx_vol *v;
	uint64_t gmax = 0;
	bool cross;
	long pos;

	if (cmp < 0)
		return false;
	/* Only a relabelling record says so again (store_relabel.c). */
	x->flags &= ~IDX_HMAC;
	/* The one place both the live store and replay retain. */
	cross = cmp > 0 && st_ret_crossing(st, block, &old, &c->ts, &gmax);
	if (bft_ts_is_zero(&x->lc_ts) && !bft_ts_is_zero(&c->ts))
		st->held++;
	if (cross)
		st_ret_add_moved(st, block, x->lc_loc != 0 ? BFT_REC_LC : 0,
		    &old, x->lc_loc, 0);
	else if (x->lc_loc != 0) {
		st_live_dec(st, x->lc_loc, len);
		vol_live(st, block, -(int64_t)len);
	}
	x->lc_ts = c->ts;
	x->lc_loc = loc;
	st_live_inc(st, loc, len);
	vol_live(st, block, (int64_t)len);
	if ((v = vol_find(st, bft_addr_vol(block))) != NULL &&
	    bft_ts_gen(&c->ts) > v->top_gen)
		v->top_gen = bft_ts_gen(&c->ts);
	if (cmp == 0)
		return true;
	/* The GC rule: every entry below the new lc goes. */
	if ((x->flags & IDX_HENT) && gc_retains(cross, gmax, &old)) {
		st_ret_add_moved(st, block, BFT_REC_HIST, &old, x->h_loc,
		    x->h_frag_len);
		x->h_loc = 0;
		x->h_frag_len = 0;
		x->flags &= ~(IDX_HENT | IDX_HELD | IDX_HELD_UNKNOWN);
	} else if (x->flags & IDX_HENT) {
		h_drop(st, block, x);
	}
	for (pos = -1; IDX_NSIDE(x) > 0 && st_side_next(st, block, &pos);) {
		struct side_ent *e = &st->side.e[pos];
		int ec = bft_ts_cmp(&e->ts, &c->ts);

		if (ec > 0)
			continue;
		if (ec == 0) {
			/* Moves under lc: its bytes stay live. */
			x->h_loc = e->loc;
			x->h_frag_len = e->frag_len;
			x->flags |= IDX_HENT;
			if (held_by(c, &e->ts, e->nh))
				x->flags |= IDX_HELD;
			side_delete(st, (size_t)pos);
		} else if (gc_retains(cross, gmax, &e->ts)) {
			st_ret_add_moved(st, block, BFT_REC_HIST, &e->ts,
			    e->loc, e->frag_len);
			side_delete(st, (size_t)pos);
		} else {
			st_side_drop(st, pos);
		}
		/* A deletion shifts entries back: walk the run again. */
		pos = -1;
	}
	if (cross)
		st_ret_prune(st, block);
	return true;
}

int
st_hist_forget(struct bft_store *st, uint64_t block, const struct bft_ts *ts)
{
	const struct blk_idx *x = st_idx(st, block);
	long i;

	/* An entry means a page: changing it is fine. */
	if ((x->flags & IDX_HENT) && bft_ts_cmp(ts, &x->lc_ts) == 0) {
		h_drop(st, block, st_idx_mut(st, block));
		return 0;
	}
	if ((i = st_side_find(st, block, ts)) < 0)
		return -ENOENT;
	st_side_drop(st, i);
	return 0;
}
