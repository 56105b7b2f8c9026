/*
 * The server's durable state.  The index (store_int.h) holds per block
 * what the hot paths compare; the log (store_log.h) holds everything,
 * fragments included, read back with pread when asked for.  Callers
 * get copies, expanded to the public structs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "predicates.h"
#include "store.h"
#include "store_int.h"
#include "store_log.h"

struct seg *
st_seg_find(struct bft_store *st, uint32_t no)
{
	size_t lo = 0, hi = st->nseg;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->segs[mid].no == no)
			return &st->segs[mid];
		if (st->segs[mid].no < no)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static struct seg *
active(struct bft_store *st)
{
	return &st->segs[st->nseg - 1];
}

int
st_seg_reserve(struct bft_store *st)
{
	struct seg *s;
	size_t cap;

	if (st->nseg < st->segcap)
		return 0;
	cap = st->segcap ? 2 * st->segcap : 16;
	if ((s = realloc(st->segs, cap * sizeof *s)) == NULL)
		return -ENOMEM;
	st->segs = s;
	st->segcap = cap;
	return 0;
}

int
st_seg_create(struct bft_store *st)
{
	uint32_t no = st->nseg ? active(st)->no + 1 : 1;
	char name[BFT_SEG_NAME_MAX];
	bool reused;
	int fd, err;

	if (no == UINT32_MAX)
		return -EOVERFLOW;
	if ((err = st_seg_reserve(st)) < 0)
		return err;
	bft_seg_name(name, no);
	fd = st_reuse_on(st) ? st_spare_take(st, no) : -1;
	reused = fd >= 0;
	if (!reused && (fd = st_open_private(st->dirfd, name, O_RDWR |
	    O_EXCL)) < 0)
		return -errno;
	st->segs[st->nseg++] = (struct seg){ .no = no, .fd = fd,
	    .reused = reused };
	st->dir_dirty = true;
	st->dir_gen++;
	return 0;
}

void
st_live_inc(struct bft_store *st, uint64_t loc, size_t len)
{
	struct seg *s = st_seg_find(st, LOC_SEG(loc));

	if (s != NULL)
		s->live += len;
}

void
st_live_dec(struct bft_store *st, uint64_t loc, size_t len)
{
	struct seg *s = st_seg_find(st, LOC_SEG(loc));

	if (s != NULL)
		s->live = s->live >= len ? s->live - len : 0;
}

/*
 * Appends one record with a single pwrite at the active segment's tail,
 * rolling over to a new segment first if it would grow past seg_max.
 * On failure the file is cut back, so a failed append leaves nothing a
 * later replay could mistake for data.
 */
int
st_append_rec(struct bft_store *st, const uint8_t *rec, size_t len,
    uint64_t *loc)
{
	struct seg *s = active(st);
	int err;

	if (st->tail_dirty) {
		if (ftruncate(s->fd, (off_t)s->size) < 0)
			return -errno;
		st->tail_dirty = false;
	}
	if (s->size > 0 && s->size + len > st->seg_max) {
		if ((err = st_seg_seal(s)) < 0 ||
		    (err = st_seg_create(st)) < 0)
			return err;
		st_pagecache_trim(st);
		s = active(st);
	}
	if ((err = bft_pwrite_all(s->fd, rec, len, s->size)) < 0) {
		if (ftruncate(s->fd, (off_t)s->size) < 0)
			st->tail_dirty = true;
		return err;
	}
	*loc = LOC(s->no, s->size);
	if (s->size == 0)
		s->first_seq = st->next_seq;
	s->size += len;
	s->end = s->size;
	s->dirty = true;
	st->next_seq++;
	st->appended += len;
	return 0;
}

/* read_rec's block for a record whose block is not known. */
#define ANY_BLOCK	UINT64_MAX

void
st_after_append(struct bft_store *st, size_t len)
{
	st_compact_step(st, len);
	st_ckpt_after_append(st);
}

int
st_writable(const struct bft_store *st, uint64_t block)
{
	if (!st_addr_ok(st, block))
		return -ERANGE;
	if (bft_store_dropped(st, bft_addr_vol(block)))
		return -EIDRM;
	return 0;
}

int
bft_store_put_hist(struct bft_store *st, uint64_t block,
    const struct bft_hist_meta *meta, const uint8_t *frag)
{
	struct bft_hist_meta m;
	uint64_t loc;
	size_t len;
	int err;

	if ((err = st_writable(st, block)) < 0)
		return err;
	if (meta->frag_len > BFT_MAX_FRAG || (meta->frag_len > 0 &&
	    frag == NULL))
		return -EINVAL;
	if (bft_ts_cmp(&meta->ts, &st_idx(st, block)->lc_ts) < 0)
		return -ESTALE;
	if ((err = st_side_reserve(st, 1)) < 0 ||
	    (err = st_idx_make(st, block)) < 0)
		return err;
	len = bft_rec_encode_hist(st->wbuf, st->n, st->next_seq, block, meta,
	    frag);
	if ((err = st_append_rec(st, st->wbuf, len, &loc)) < 0)
		return err;
	/* Decoding what was written keeps the index what replay makes. */
	bft_rec_decode_hist(st->wbuf, st->n, &m);
	st_hist_apply(st, block, &m, loc, len);
	st_after_append(st, len);
	return 0;
}

int
bft_store_set_lc(struct bft_store *st, uint64_t block,
    const struct bft_cand *c)
{
	struct bft_cand cand;
	uint64_t loc, gmax;
	size_t len;
	int err;

	if ((err = st_writable(st, block)) < 0)
		return err;
	/* Replay keeps the highest lc, so the index must never go back. */
	if (bft_ts_cmp(&c->ts, &st_idx(st, block)->lc_ts) <= 0)
		return -EINVAL;
	if ((err = st_idx_make(st, block)) < 0)
		return err;
	if ((st_idx(st, block)->flags & IDX_HMAC) && st_ret_crossing(st,
	    block, &st_idx(st, block)->lc_ts, &c->ts, &gmax) &&
	    (err = st_hmac_settle(st, block)) < 0)
		return err;
	if ((err = st_ret_reserve_cross(st, block, &c->ts)) < 0)
		return err;
	len = bft_rec_encode_lc(st->wbuf, st->n, st->next_seq, block, c);
	if ((err = st_append_rec(st, st->wbuf, len, &loc)) < 0) {
		/* A retained node reserved for nothing goes again. */
		st_ret_prune(st, block);
		return err;
	}
	bft_rec_decode_lc(st->wbuf, st->n, &cand);
	/*
	 * Every COLLECT reads lc: a block read soon after it was written
	 * finds it here.  A Hist entry's metadata comes with its fragment
	 * when read, and the write path reads neither.
	 */
	st_mc_put(st, loc, st->wbuf, bft_rec_meta_len(BFT_REC_LC, st->n));
	st_lc_apply(st, block, &cand, loc);
	st_after_append(st, len);
	return 0;
}

int
bft_store_get_lc(struct bft_store *st, uint64_t block, struct bft_cand *out)
{
	if (!st_addr_ok(st, block)) {
		memset(out, 0, sizeof *out);
		return -ERANGE;
	}
	return st_lc_read(st, block, out);
}

struct bft_ts
bft_store_lc_ts(const struct bft_store *st, uint64_t block)
{
	static const struct bft_ts zero;

	return st_addr_ok(st, block) ? st_idx(st, block)->lc_ts : zero;
}

struct bft_ts
bft_store_top_ts(const struct bft_store *st, uint64_t block)
{
	static const struct bft_ts zero;
	struct bft_ts top;
	long pos = -1;

	if (!st_addr_ok(st, block))
		return zero;
	top = st_idx(st, block)->lc_ts;
	if (IDX_NSIDE(st_idx(st, block)) == 0)
		return top;
	while (st_side_next(st, block, &pos))
		if (bft_ts_cmp(&st->side.e[pos].ts, &top) > 0)
			top = st->side.e[pos].ts;
	return top;
}

bool
bft_store_lc_held(struct bft_store *st, uint64_t block)
{
	struct bft_hist_entry e;
	struct blk_idx *x;
	struct bft_cand c;

	if (!st_addr_ok(st, block))
		return false;
	if (!(st_idx(st, block)->flags & IDX_HELD_UNKNOWN))
		return st_idx(st, block)->flags & IDX_HELD;
	/* Flags were set: the page exists. */
	x = st_idx_mut(st, block);
	/* A damaged lc record leaves it unknown; a damaged entry goes. */
	if (st_lc_read(st, block, &c) < 0 ||
	    bft_store_get_hist(st, block, &c.ts, &e) < 0)
		return false;
	x->flags &= ~(IDX_HELD | IDX_HELD_UNKNOWN);
	if (bft_valid_by_hist(&c, &e.meta))
		x->flags |= IDX_HELD;
	return x->flags & IDX_HELD;
}

/*
 * Where block's Hist[ts] is, from the index alone: its record and
 * fragment length.  False when there is no such entry.
 */
static bool
entry_find(const struct bft_store *st, uint64_t block,
    const struct bft_ts *ts, uint64_t *loc, uint32_t *frag_len)
{
	const struct blk_idx *x;
	long i;

	if (!st_addr_ok(st, block))
		return false;
	x = st_idx(st, block);
	if ((x->flags & IDX_HENT) && bft_ts_cmp(ts, &x->lc_ts) == 0) {
		*loc = x->h_loc;
		*frag_len = x->h_frag_len;
		return true;
	}
	if ((i = st_side_find(st, block, ts)) < 0)
		return false;
	*loc = st->side.e[i].loc;
	*frag_len = st->side.e[i].frag_len;
	return true;
}

bool
bft_store_has_hist(const struct bft_store *st, uint64_t block,
    const struct bft_ts *ts)
{
	uint64_t loc;
	uint32_t frag_len;

	return entry_find(st, block, ts, &loc, &frag_len);
}

/*
 * The entry whose record is at loc, from that record's metadata.  A
 * record that fails its checks is forgotten, as a damaged fragment is:
 * a fresh copy (the rebuild's STORE) may replace it.
 */
static int
hent_read(struct bft_store *st, uint64_t block, const struct bft_ts *ts,
    uint64_t loc, uint32_t frag_len, struct bft_hist_entry *out)
{
	const uint8_t *p = st_meta_read(st, loc, BFT_REC_HIST, block,
	    bft_rec_hist_len(st->n, frag_len));

	memset(out, 0, sizeof *out);
	if (p != NULL) {
		bft_rec_decode_hist(p, st->n, &out->meta);
		out->loc = loc;
		if (bft_ts_cmp(&out->meta.ts, ts) == 0 &&
		    out->meta.frag_len == frag_len) {
			st_hmac_overlay(st, block, loc, &out->meta);
			return 0;
		}
		memset(out, 0, sizeof *out);
	}
	st_hist_forget(st, block, ts);
	return -EIO;
}

int
bft_store_get_hist(struct bft_store *st, uint64_t block,
    const struct bft_ts *ts, struct bft_hist_entry *out)
{
	uint64_t loc;
	uint32_t frag_len;

	if (!entry_find(st, block, ts, &loc, &frag_len))
		return -ENOENT;
	return hent_read(st, block, ts, loc, frag_len, out);
}

unsigned
bft_store_pending(struct bft_store *st, uint64_t block, uint64_t wid)
{
	unsigned count = 0;
	long pos = -1;

	/* Side entries are all above lc: the GC rule keeps them so. */
	if (!st_addr_ok(st, block) || IDX_NSIDE(st_idx(st, block)) == 0)
		return 0;
	while (st_side_next(st, block, &pos))
		if (st->side.e[pos].ts.wid == wid)
			count++;
	return count;
}

unsigned
bft_store_nhist(struct bft_store *st, uint64_t block)
{
	const struct blk_idx *x;

	if (!st_addr_ok(st, block))
		return 0;
	x = st_idx(st, block);
	return (x->flags & IDX_HENT ? 1 : 0) + IDX_NSIDE(x);
}

int
bft_store_hist_at(struct bft_store *st, uint64_t block, unsigned i,
    struct bft_hist_entry *out)
{
	const struct blk_idx *x;
	long pos = -1;

	if (i >= bft_store_nhist(st, block))
		return -ENOENT;
	x = st_idx(st, block);
	if (x->flags & IDX_HENT) {
		if (i == 0)
			return hent_read(st, block, &x->lc_ts, x->h_loc,
			    x->h_frag_len, out);
		i--;
	}
	while (st_side_next(st, block, &pos) && i-- > 0)
		;
	return hent_read(st, block, &st->side.e[pos].ts, st->side.e[pos].loc,
	    st->side.e[pos].frag_len, out);
}

/*
 * Reads and checks a HIST record whole into rbuf, its metadata into
 * *m.  The whole record, not just the fragment, so that its checksum
 * can be verified: data the disk damaged since open is never served.
 * A damaged record is -EIO; the caller decides what to forget.
 */
static int
read_rec_at(struct bft_store *st, uint64_t loc, uint64_t block,
    const struct bft_ts *ts, uint32_t frag_len, struct bft_hist_meta *m)
{
	struct seg *s = st_seg_find(st, LOC_SEG(loc));
	uint64_t off = LOC_OFF(loc);
	struct bft_rec_hdr h;
	size_t len;
	int err;

	if (s == NULL || frag_len > BFT_MAX_FRAG)
		return -EINVAL;
	len = bft_rec_hist_len(st->n, frag_len);
	if (off + len > s->size)
		return -EIO;
	if ((err = bft_pread_all(s->fd, st->rbuf, len, off)) < 0)
		return err;
	if (bft_rec_check(st->rbuf, len, st->n, &h) != BFT_REC_OK ||
	    h.type != BFT_REC_HIST || (block != ANY_BLOCK && h.block != block))
		goto out_corrupt;
	bft_rec_decode_hist(st->rbuf, st->n, m);
	if (bft_ts_cmp(&m->ts, ts) != 0 || m->frag_len != frag_len)
		goto out_corrupt;
	st_mc_put(st, loc, st->rbuf, bft_rec_frag_off(st->n));
	return 0;
out_corrupt:
	bft_warn("%s: record at seg %" PRIu32 " offset %" PRIu64 " is damaged;"
	    " not serving it", st->dir, s->no, off);
	return -EIO;
}

int
st_hist_read(struct bft_store *st, uint64_t loc, uint64_t block,
    const struct bft_ts *ts, uint32_t frag_len, struct bft_hist_meta *m)
{
	return read_rec_at(st, loc, block, ts, frag_len, m);
}

/* read_rec_at, forgetting the entry when its record is damaged. */
static int
read_rec(struct bft_store *st, uint64_t loc, uint64_t block,
    const struct bft_ts *ts, uint32_t frag_len, struct bft_hist_meta *m)
{
	int err = read_rec_at(st, loc, block, ts, frag_len, m);

	if (err == -EIO && block != ANY_BLOCK)
		st_hist_forget(st, block, ts);
	return err;
}

int
bft_store_read_frag(struct bft_store *st, const struct bft_hist_entry *e,
    uint8_t *buf)
{
	struct bft_hist_meta m;
	int err;

	/* The entry does not name its block; its record does. */
	if ((err = read_rec_at(st, e->loc, ANY_BLOCK, &e->meta.ts,
	    e->meta.frag_len, &m)) < 0)
		return err;
	memcpy(buf, st->rbuf + bft_rec_frag_off(st->n), m.frag_len);
	return 0;
}

int
bft_store_read_hist(struct bft_store *st, uint64_t block,
    const struct bft_ts *ts, struct bft_hist_entry *out, uint8_t *buf)
{
	uint64_t loc;
	uint32_t frag_len;
	int err;

	memset(out, 0, sizeof *out);
	if (!entry_find(st, block, ts, &loc, &frag_len))
		return -ENOENT;
	if ((err = read_rec(st, loc, block, ts, frag_len, &out->meta)) < 0)
		return err;
	out->loc = loc;
	memcpy(buf, st->rbuf + bft_rec_frag_off(st->n), frag_len);
	st_hmac_overlay(st, block, loc, &out->meta);
	return 0;
}

int
bft_store_sync(struct bft_store *st)
{
	int err;

	/* A sync covers everything before it, background work included. */
	st->syncs++;
	if ((err = st_bg_sync_wait(st)) < 0)
		return err;
	for (size_t i = 0; i < st->nseg; i++) {
		if (!st->segs[i].dirty)
			continue;
		st->fsyncs++;
		if (fdatasync(st->segs[i].fd) < 0)
			return -errno;
		st->segs[i].dirty = false;
	}
	if (st->nretired > 0 && (err = st_unlink_retired(st)) < 0)
		return err;
	if (st->dir_dirty) {
		st->fsyncs++;
		if (fsync(st->dirfd) < 0)
			return -errno;
		st->dir_dirty = false;
	}
	return 0;
}

void
bft_store_stats(const struct bft_store *st, struct bft_store_stats *out)
{
	memset(out, 0, sizeof *out);
	out->records_replayed = st->replayed;
	out->records_discarded = st->rp.torn_records + st->rp.corrupt_records;
	out->segments = st->nseg;
	out->compactions = st->compactions;
	out->bytes_copied = st->copied;
	out->bytes_removed = st->removed;
	out->bytes_uncached = st->pc_dropped;
	out->segments_reused = st->reused;
	out->spares = st->nspares;
	out->blocks_held = st->held;
	out->syncs = st->syncs;
	out->fsyncs = st->fsyncs;
	for (size_t i = 0; i < st->nseg; i++) {
		out->bytes_live += st->segs[i].live;
		out->bytes_total += st->segs[i].size;
	}
}

void
bft_store_replay_info(const struct bft_store *st,
    struct bft_store_replay *out)
{
	*out = st->rp;
}

int
bft_store_forget_hist(struct bft_store *st, uint64_t block,
    const struct bft_ts *ts)
{
	if (!st_addr_ok(st, block))
		return -ENOENT;
	return st_hist_forget(st, block, ts);
}

void
bft_store_cache_stats(const struct bft_store *st,
    struct bft_store_cache_stats *out)
{
	out->hits = st->mc.hits;
	out->misses = st->mc.misses;
	out->entries = st->mc.used;
	out->bytes = (uint64_t)st->mc.nslots * st->mc.slot_size;
	out->capacity = (uint64_t)st->mc.cap * st->mc.slot_size;
	if (st->mc.heads != NULL) {
		out->bytes += ((uint64_t)st->mc.hmask + 1) * sizeof(uint32_t);
		out->capacity += ((uint64_t)st->mc.hmask + 1) *
		    sizeof(uint32_t);
	}
	out->damaged = st->meta_damaged;
}
