/*
 * Snapshot boundaries (store.h): which generations of a volume have a
 * snapshot, kept as SNAP and UNSNAP records in the log, and their
 * bookkeeping through replay, compaction, a DROP and the checkpoint.
 * The records a boundary keeps are store_view.c's.
 *
 * A boundary decides what a set_lc retains, so a replay must know the
 * boundaries the live store had at each set_lc it meets.  Compaction
 * moves records to the log's end, a SNAP record past the set_lcs that
 * crossed it among them, so "the boundaries met so far" is not that.
 * Two rules make it so.  A boundary below a generation some block of
 * the volume already completed is refused (snap_add's -ESTALE): then
 * no set_lc crossed a boundary before it was added, and every set_lc
 * that crosses it comes after.  And replay knows the boundaries the
 * log leaves before it applies any record (st_snap_prescan): a set_lc
 * that crosses one of them crossed it in the live store too, and one
 * removed since kept records that the removal freed again.
 *
 * Events of one boundary are ordered by their ids, not their places:
 * an id is the sequence number its record was first written under,
 * and copies keep it.  An UNSNAP record must outlive every older SNAP
 * of its boundary, which may lie in any older segment, so it is kept
 * for good and copied forward as a DROP is (counted in the segment's
 * drops); a SNAP record lives while its boundary does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store.h"
#include "store_int.h"
#include "store_log.h"

/*
 * The retained blocks snap_remove prunes at once; a volume with more
 * leaves the rest to bft_store_snap_gc_step, off the request's path.
 */
#define SNAP_GC_INLINE	4096u

/* Where vol is in st->svols, or where it would go. */
static size_t
svol_pos(const struct bft_store *st, uint32_t vol)
{
	size_t lo = 0, hi = st->nsvols;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->svols[mid].vol < vol)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct snap_vol *
st_snap_vol(const struct bft_store *st, uint32_t vol)
{
	size_t i = svol_pos(st, vol);

	return i < st->nsvols && st->svols[i].vol == vol ? &st->svols[i] :
	    NULL;
}

struct snap_vol *
st_snap_vol_make(struct bft_store *st, uint32_t vol)
{
	size_t i = svol_pos(st, vol);

	if (i < st->nsvols && st->svols[i].vol == vol)
		return &st->svols[i];
	if (st->nsvols == st->svolcap) {
		size_t cap = st->svolcap ? 2 * st->svolcap : 4;
		struct snap_vol *nv = realloc(st->svols, cap * sizeof *nv);

		if (nv == NULL)
			return NULL;
		st->svols = nv;
		st->svolcap = cap;
	}
	memmove(&st->svols[i + 1], &st->svols[i], (st->nsvols - i) *
	    sizeof *st->svols);
	st->nsvols++;
	memset(&st->svols[i], 0, sizeof st->svols[i]);
	st->svols[i].vol = vol;
	return &st->svols[i];
}

/* Forgets sv once it holds nothing: no boundary, no retained block. */
static void
svol_tidy(struct bft_store *st, struct snap_vol *sv)
{
	size_t i = (size_t)(sv - st->svols);

	if (sv->ngens > 0 || sv->root != NULL)
		return;
	free(sv->gens);
	memmove(&st->svols[i], &st->svols[i + 1], (st->nsvols - i - 1) *
	    sizeof *st->svols);
	st->nsvols--;
}

/* Where gen is in sv->gens, or where it would go. */
static uint32_t
gen_pos(const struct snap_vol *sv, uint64_t gen)
{
	uint32_t lo = 0, hi = sv->ngens;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (sv->gens[mid].gen < gen)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool
st_snap_has(const struct snap_vol *sv, uint64_t gen)
{
	uint32_t i = gen_pos(sv, gen);

	return i < sv->ngens && sv->gens[i].gen == gen;
}

bool
st_snap_crossed(const struct snap_vol *sv, uint64_t lo, uint64_t hi,
    uint64_t *gmax)
{
	uint32_t i = gen_pos(sv, hi);

	if (i == 0 || sv->gens[i - 1].gen < lo)
		return false;
	*gmax = sv->gens[i - 1].gen;
	return true;
}

/* Inserts g, which is not there; room was made.  Counts its record. */
static void
gen_insert(struct bft_store *st, struct snap_vol *sv,
    const struct snap_gen *g)
{
	uint32_t i = gen_pos(sv, g->gen);

	memmove(&sv->gens[i + 1], &sv->gens[i], (sv->ngens - i) *
	    sizeof *sv->gens);
	sv->gens[i] = *g;
	sv->ngens++;
	st_live_inc(st, g->loc, bft_rec_snap_len());
}

static int
gen_reserve(struct snap_vol *sv)
{
	uint32_t cap = sv->gencap ? 2 * sv->gencap : 4;
	struct snap_gen *ng;

	if (sv->ngens < sv->gencap)
		return 0;
	if ((ng = realloc(sv->gens, cap * sizeof *ng)) == NULL)
		return -ENOMEM;
	sv->gens = ng;
	sv->gencap = cap;
	return 0;
}

/* Removes gens[i]; its SNAP record becomes garbage. */
static void
gen_remove(struct bft_store *st, struct snap_vol *sv, uint32_t i)
{
	st_live_dec(st, sv->gens[i].loc, bft_rec_snap_len());
	memmove(&sv->gens[i], &sv->gens[i + 1], (sv->ngens - i - 1) *
	    sizeof *sv->gens);
	sv->ngens--;
}

int
st_snap_load(struct bft_store *st, uint32_t vol, const struct snap_gen *g)
{
	struct snap_vol *sv = st_snap_vol_make(st, vol);

	if (sv == NULL || gen_reserve(sv) < 0)
		return -ENOMEM;
	if (st_snap_has(sv, g->gen))
		return -EINVAL;
	/* The checkpoint's segments counted its record already. */
	gen_insert(st, sv, g);
	st_live_dec(st, g->loc, bft_rec_snap_len());
	return 0;
}

/* The boundaries' records: one more, or one less, kept for good. */
static void
keeps_add(struct bft_store *st, uint64_t loc, int delta)
{
	struct seg *s = st_seg_find(st, LOC_SEG(loc));

	if (s != NULL && (delta > 0 || s->drops > 0))
		s->drops += (uint32_t)delta;
}

/* Appends a SNAP or UNSNAP record of a new event; its place in *loc. */
static int
snap_append(struct bft_store *st, unsigned type, uint32_t vol, uint64_t gen,
    uint64_t *loc)
{
	size_t len = bft_rec_encode_snap(st->wbuf, st->n, type, st->next_seq,
	    vol, gen, st->next_seq);

	return st_append_rec(st, st->wbuf, len, loc);
}

static void
after_append(struct bft_store *st)
{
	st_compact_step(st, bft_rec_snap_len());
	st_ckpt_after_append(st);
}

int
bft_store_snap_add(struct bft_store *st, uint32_t vol, uint64_t gen)
{
	const struct idx_vol *iv = st_idx_vol(st, vol);
	struct snap_vol *sv = st_snap_vol(st, vol);
	struct snap_gen g = { .gen = gen };
	int err;

	if (!bft_rec_snap_ok(vol) || gen > BFT_GEN_MAX)
		return -EINVAL;
	if (bft_store_dropped(st, vol))
		return -EIDRM;
	if (sv != NULL && st_snap_has(sv, gen))
		return 0;
	if (sv != NULL && sv->ngens >= BFT_STORE_MAX_SNAPS)
		return -ENOSPC;
	/* What such a write replaced is gone: see the top of the file. */
	if (iv != NULL && iv->top_gen > gen)
		return -ESTALE;
	if ((sv = st_snap_vol_make(st, vol)) == NULL)
		return -ENOMEM;
	g.id = st->next_seq;
	if ((err = gen_reserve(sv)) < 0 ||
	    (err = snap_append(st, BFT_REC_SNAP, vol, gen, &g.loc)) < 0) {
		svol_tidy(st, sv);
		return err;
	}
	gen_insert(st, sv, &g);
	after_append(st);
	return 0;
}

int
bft_store_snap_remove(struct bft_store *st, uint32_t vol, uint64_t gen)
{
	struct snap_vol *sv = st_snap_vol(st, vol);
	uint64_t loc, budget = SNAP_GC_INLINE;
	int err;

	if (!bft_rec_snap_ok(vol) || gen > BFT_GEN_MAX)
		return -EINVAL;
	if (sv == NULL || !st_snap_has(sv, gen))
		return 0;
	if ((err = snap_append(st, BFT_REC_UNSNAP, vol, gen, &loc)) < 0)
		return err;
	keeps_add(st, loc, 1);
	gen_remove(st, sv, gen_pos(sv, gen));
	sv->gc = true;
	sv->gc_next = bft_addr(vol, 0);
	sv->gc_done = 0;
	sv->gc_total = sv->nodes;
	if (st_ret_gc(st, sv, &budget))
		svol_tidy(st, sv);
	after_append(st);
	return 0;
}

bool
bft_store_snap_gc_step(struct bft_store *st, uint64_t budget)
{
	bool more = false;

	for (size_t i = 0; i < st->nsvols;) {
		struct snap_vol *sv = &st->svols[i];
		size_t before = st->nsvols;

		if (!sv->gc) {
			i++;
			continue;
		}
		if (budget == 0 || !st_ret_gc(st, sv, &budget)) {
			more = true;
			i++;
			continue;
		}
		svol_tidy(st, sv);
		if (st->nsvols == before)
			i++;
	}
	return more;
}

uint64_t
bft_store_top_gen(const struct bft_store *st, uint32_t vol)
{
	const struct idx_vol *iv = st_idx_vol(st, vol);

	return iv != NULL ? iv->top_gen : 0;
}

bool
bft_store_snap_held(const struct bft_store *st, uint32_t vol, uint64_t gen)
{
	const struct snap_vol *sv = st_snap_vol(st, vol);

	return sv != NULL && st_snap_has(sv, gen);
}

size_t
bft_store_snaps(const struct bft_store *st, uint32_t vol, uint64_t *gens,
    size_t max)
{
	const struct snap_vol *sv = st_snap_vol(st, vol);

	if (sv == NULL)
		return 0;
	for (uint32_t i = 0; i < sv->ngens && i < max; i++)
		gens[i] = sv->gens[i].gen;
	return sv->ngens;
}

/* One SNAP or UNSNAP record the prescan found. */
struct snap_ev {
	uint32_t vol;
	bool snap;
	uint64_t gen, id, loc;
};

struct prescan {
	struct snap_ev *ev;
	size_t n, cap;
};

static int
ev_cmp(const void *a, const void *b)
{
	const struct snap_ev *x = a, *y = b;

	if (x->vol != y->vol)
		return x->vol < y->vol ? -1 : 1;
	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->loc < y->loc ? -1 : x->loc > y->loc;
}

static int
ev_add(struct prescan *ps, const uint8_t *rec, unsigned type, uint64_t loc)
{
	struct snap_ev *e;

	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? 2 * ps->cap : 64;

		if ((e = realloc(ps->ev, cap * sizeof *e)) == NULL)
			return -ENOMEM;
		ps->ev = e;
		ps->cap = cap;
	}
	e = &ps->ev[ps->n++];
	bft_rec_decode_snap(rec, &e->vol, &e->gen, &e->id);
	e->snap = type == BFT_REC_SNAP;
	e->loc = loc;
	return 0;
}

/*
 * The SNAP and UNSNAP records of segment s from off, by their headers:
 * only those records are read whole.  It stops where a header does not
 * parse, as replay will (a damaged record with a sound header is passed
 * over by its length, as replay does when a good one follows).
 */
static int
scan_seg(struct bft_store *st, struct seg *s, uint64_t off,
    struct prescan *ps)
{
	uint8_t hdr[BFT_REC_HDR_LEN];
	struct bft_rec_hdr h;
	struct stat sb;
	uint64_t end;
	size_t len;
	int err;

	if (fstat(s->fd, &sb) < 0)
		return -errno;
	end = (uint64_t)sb.st_size < UINT32_MAX ? (uint64_t)sb.st_size :
	    UINT32_MAX;
	while (off + BFT_REC_HDR_LEN <= end) {
		if ((err = bft_pread_all(s->fd, hdr, sizeof hdr, off)) < 0)
			return err;
		if (bft_rec_check_hdr(hdr, (size_t)(end - off), st->n, &h) !=
		    BFT_REC_OK)
			break;
		len = BFT_REC_HDR_LEN + (size_t)h.payload_len +
		    BFT_REC_SUM_LEN;
		if ((h.type == BFT_REC_SNAP || h.type == BFT_REC_UNSNAP) &&
		    bft_rec_read(s->fd, off, end, st->n, st->rbuf, &h) ==
		    BFT_REC_OK && (err = ev_add(ps, st->rbuf, h.type,
		    LOC(s->no, off))) < 0)
			return err;
		off += len;
	}
	return 0;
}

/*
 * Settles one boundary from its events e[0 .. k - 1] (ascending ids):
 * the newest of them and of the boundary as it is (a checkpoint's) wins.
 */
static int
settle(struct bft_store *st, const struct snap_ev *e, size_t k)
{
	const struct snap_ev *w = &e[k - 1];
	struct snap_gen g = { .gen = w->gen, .id = w->id, .loc = w->loc };
	struct snap_vol *sv;
	uint32_t i;

	/* A DROP before the checkpoint ended its boundaries for good. */
	if (bft_store_dropped(st, w->vol))
		return 0;
	if ((sv = st_snap_vol_make(st, w->vol)) == NULL || gen_reserve(sv) < 0)
		return -ENOMEM;
	i = gen_pos(sv, w->gen);
	if (i < sv->ngens && sv->gens[i].gen == w->gen) {
		if (sv->gens[i].id > w->id)
			return 0;
		/* A copy of the same SNAP lies after the first. */
		if (w->snap && sv->gens[i].id == w->id &&
		    sv->gens[i].loc > w->loc)
			return 0;
		gen_remove(st, sv, i);
	}
	if (w->snap)
		gen_insert(st, sv, &g);
	svol_tidy(st, sv);
	return 0;
}

int
st_snap_prescan(struct bft_store *st, uint32_t no, uint64_t off, char *why,
    size_t whylen)
{
	struct prescan ps = { 0 };
	size_t i, j;
	int err = 0;

	for (i = 0; i < st->nseg && err == 0; i++)
		if (st->segs[i].no >= no)
			err = scan_seg(st, &st->segs[i], st->segs[i].no == no ?
			    off : 0, &ps);
	if (err == 0 && ps.n > 0)
		qsort(ps.ev, ps.n, sizeof *ps.ev, ev_cmp);
	for (i = 0; i < ps.n && err == 0; i = j) {
		for (j = i + 1; j < ps.n && ps.ev[j].vol == ps.ev[i].vol &&
		    ps.ev[j].gen == ps.ev[i].gen; j++)
			;
		err = settle(st, &ps.ev[i], j - i);
	}
	free(ps.ev);
	if (err < 0)
		snprintf(why, whylen, "%s: reading the snapshot boundaries: "
		    "%s", st->dir, strerror(-err));
	return err;
}

void
st_snap_prune_all(struct bft_store *st)
{
	for (size_t i = 0; i < st->nsvols; i++) {
		st->svols[i].gc = true;
		st->svols[i].gc_next = 0;
	}
	while (bft_store_snap_gc_step(st, UINT64_MAX))
		;
}

void
st_snap_replayed(struct bft_store *st, const struct bft_rec_hdr *h,
    uint64_t loc)
{
	/* The prescan applied the boundaries already. */
	if (h->type == BFT_REC_UNSNAP)
		keeps_add(st, loc, 1);
}

bool
st_snap_owner(const struct bft_store *st, const struct bft_rec_hdr *h,
    uint64_t loc)
{
	const struct snap_vol *sv;

	if (h->type == BFT_REC_UNSNAP)
		return true;
	if ((sv = st_snap_vol(st, bft_addr_vol(h->block))) == NULL)
		return false;
	for (uint32_t i = 0; i < sv->ngens; i++)
		if (sv->gens[i].loc == loc)
			return true;
	return false;
}

/* The boundary whose SNAP record is at loc, or NULL. */
static struct snap_gen *
gen_at(struct bft_store *st, uint32_t vol, uint64_t loc)
{
	struct snap_vol *sv = st_snap_vol(st, vol);

	for (uint32_t i = 0; sv != NULL && i < sv->ngens; i++)
		if (sv->gens[i].loc == loc)
			return &sv->gens[i];
	return NULL;
}

int
st_snap_copy(struct bft_store *st, const struct bft_rec_hdr *ch,
    uint64_t oldloc, size_t len)
{
	struct seg *src = st_seg_find(st, LOC_SEG(oldloc));
	uint32_t vol = bft_addr_vol(ch->block);
	struct bft_rec_hdr h;
	struct snap_gen *g;
	uint64_t loc;
	int err;

	if ((err = bft_pread_all(src->fd, st->rbuf, len, LOC_OFF(oldloc))) < 0)
		return err;
	if (bft_rec_check(st->rbuf, len, st->n, &h) != BFT_REC_OK ||
	    (h.type != BFT_REC_SNAP && h.type != BFT_REC_UNSNAP)) {
		/* A SNAP is known whole from memory; an UNSNAP is not. */
		g = gen_at(st, vol, oldloc);
		if (ch->type != BFT_REC_SNAP || len != bft_rec_snap_len() ||
		    g == NULL)
			return -EUCLEAN;
		bft_rec_encode_snap(st->rbuf, st->n, BFT_REC_SNAP, 0, vol,
		    g->gen, g->id);
		h.type = BFT_REC_SNAP;
	}
	bft_rec_restamp(st->rbuf, len, st->n, st->next_seq);
	if ((err = st_append_rec(st, st->rbuf, len, &loc)) < 0)
		return err;
	if (h.type == BFT_REC_UNSNAP) {
		keeps_add(st, oldloc, -1);
		keeps_add(st, loc, 1);
	} else if ((g = gen_at(st, vol, oldloc)) != NULL) {
		st_live_dec(st, oldloc, len);
		st_live_inc(st, loc, len);
		g->loc = loc;
	}
	st->copied += len;
	return 0;
}

void
st_snap_drop_vol(struct bft_store *st, uint32_t vol)
{
	struct snap_vol *sv = st_snap_vol(st, vol);

	if (sv == NULL)
		return;
	while (sv->ngens > 0)
		gen_remove(st, sv, sv->ngens - 1);
	st_ret_free(st, sv, true);
	svol_tidy(st, sv);
}

void
st_snap_free(struct bft_store *st)
{
	for (size_t i = 0; i < st->nsvols; i++) {
		st_ret_free(st, &st->svols[i], false);
		free(st->svols[i].gens);
	}
	free(st->svols);
	st->svols = NULL;
	st->nsvols = st->svolcap = 0;
}

void
bft_store_snap_gc_progress(const struct bft_store *st, uint64_t *done,
    uint64_t *total)
{
	*done = *total = 0;
	for (size_t i = 0; i < st->nsvols; i++)
		if (st->svols[i].gc) {
			*done += st->svols[i].gc_done;
			*total += st->svols[i].gc_total;
		}
}
