/*
 * The server's durable state.  Memory holds every block's lc and Hist
 * metadata, compactly (struct blk in store_int.h), and hands out copies
 * expanded to the public structs; the log (store_log.h) holds the same
 * as records, and the fragments themselves, which are read back with
 * pread when served.
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
	int fd, err;

	if (no == UINT32_MAX)
		return -EOVERFLOW;
	if ((err = st_seg_reserve(st)) < 0)
		return err;
	bft_seg_name(name, no);
	fd = openat(st->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
	    0644);
	if (fd < 0)
		return -errno;
	st->segs[st->nseg++] = (struct seg){ .no = no, .fd = fd };
	st->dir_dirty = true;
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

static size_t
blk_size(const struct bft_store *st, bool inl)
{
	return sizeof(struct blk) + (size_t)st->n * BFT_MAC_LEN +
	    (inl ? st->hent_size : 0);
}

/*
 * Callers reserve before they append, so that memory can always follow
 * a record that reached the disk.
 */
struct blk *
st_blk_reserve(struct bft_store *st, uint64_t block, unsigned extra)
{
	struct blk *b = st->blocks[block];
	unsigned want;
	uint8_t *m;

	if (b == NULL) {
		if ((b = calloc(1, blk_size(st, extra > 0))) == NULL)
			return NULL;
		b->inl = extra > 0;
		st->blocks[block] = b;
	} else if (!b->inl && extra > 0 && b->nhist == 0) {
		/* The block's first entry: room for it inline. */
		if ((b = realloc(b, blk_size(st, true))) == NULL)
			return NULL;
		b->inl = 1;
		st->blocks[block] = b;
	}
	want = b->nhist + extra;
	if (want <= (unsigned)b->inl + b->morecap)
		return b;
	if ((m = realloc(b->more, (want - b->inl) * st->hent_size)) == NULL)
		return NULL;
	b->more = m;
	b->morecap = want - b->inl;
	return b;
}

/* Gives back the room of Hist entries past the inline one no longer used. */
static void
blk_shrink(struct bft_store *st, struct blk *b)
{
	unsigned inl = b->inl, used = b->nhist > inl ? b->nhist - inl : 0;
	uint8_t *m;

	if (used == b->morecap)
		return;
	if (used == 0) {
		free(b->more);
		b->more = NULL;
		b->morecap = 0;
		return;
	}
	/* Failing to shrink only keeps the room. */
	if ((m = realloc(b->more, used * st->hent_size)) == NULL)
		return;
	b->more = m;
	b->morecap = used;
}

void
st_lc_expand(const struct bft_store *st, const struct blk *b,
    struct bft_cand *out)
{
	memset(out, 0, sizeof *out);
	if (b == NULL)
		return;
	out->ts = b->lc_ts;
	memcpy(out->nonce, b->lc_nonce, BFT_NONCE_LEN);
	memcpy(out->vec, b->tail, (size_t)st->n * BFT_MAC_LEN);
}

static void
hent_expand(const struct bft_store *st, struct hent *e,
    struct bft_hist_entry *out)
{
	memset(out, 0, sizeof *out);
	out->meta.ts = e->ts;
	memcpy(out->meta.nh, e->nh, BFT_HASH_LEN);
	memcpy(out->meta.vec, hent_vec(e), (size_t)st->n * BFT_MAC_LEN);
	memcpy(out->meta.cc, hent_cc(st, e), (size_t)st->n * BFT_HASH_LEN);
	out->meta.frag_len = e->frag_len;
	out->loc = e->loc;
}

/* Rows from n on are not kept: records hold n, so they are zero. */
static void
hent_fill(const struct bft_store *st, struct hent *e,
    const struct bft_hist_meta *m, uint64_t loc)
{
	e->loc = loc;
	e->ts = m->ts;
	memcpy(e->nh, m->nh, BFT_HASH_LEN);
	e->frag_len = m->frag_len;
	e->pad = 0;
	memcpy(hent_vec(e), m->vec, (size_t)st->n * BFT_MAC_LEN);
	memcpy(hent_cc(st, e), m->cc, (size_t)st->n * BFT_HASH_LEN);
}

static int
hist_find(const struct bft_store *st, struct blk *b, const struct bft_ts *ts)
{
	for (unsigned i = 0; i < b->nhist; i++)
		if (bft_ts_cmp(&blk_hent(st, b, i)->ts, ts) == 0)
			return (int)i;
	return -1;
}

static size_t
hist_rec_len(const struct bft_store *st, const struct hent *e)
{
	return bft_rec_hist_len(st->n, e->frag_len);
}

void
st_hist_drop(struct bft_store *st, struct blk *b, unsigned i)
{
	struct hent *e = blk_hent(st, b, i);

	st_live_dec(st, e->loc, hist_rec_len(st, e));
	if (i != --b->nhist)
		memcpy(e, blk_hent(st, b, b->nhist), st->hent_size);
}

void
st_hist_apply(struct bft_store *st, uint64_t block,
    const struct bft_hist_meta *m, uint64_t loc, size_t len)
{
	struct blk *b = st->blocks[block];
	int i = hist_find(st, b, &m->ts);
	struct hent *e;

	if (i >= 0) {
		e = blk_hent(st, b, (unsigned)i);
		st_live_dec(st, e->loc, hist_rec_len(st, e));
	} else {
		e = blk_hent(st, b, b->nhist++);
	}
	hent_fill(st, e, m, loc);
	st_live_inc(st, loc, len);
}

bool
st_lc_apply(struct bft_store *st, uint64_t block, const struct bft_cand *c,
    uint64_t loc, size_t len)
{
	struct blk *b = st->blocks[block];
	int cmp = bft_ts_cmp(&c->ts, &b->lc_ts);

	if (cmp < 0)
		return false;
	if (bft_ts_is_zero(&b->lc_ts) && !bft_ts_is_zero(&c->ts))
		st->held++;
	if (b->lc_loc != 0)
		st_live_dec(st, b->lc_loc, len);
	b->lc_ts = c->ts;
	memcpy(b->lc_nonce, c->nonce, BFT_NONCE_LEN);
	memcpy(b->tail, c->vec, (size_t)st->n * BFT_MAC_LEN);
	b->lc_loc = loc;
	st_live_inc(st, loc, len);
	for (unsigned i = 0; cmp > 0 && i < b->nhist;) {
		if (bft_ts_cmp(&blk_hent(st, b, i)->ts, &c->ts) < 0)
			st_hist_drop(st, b, i);
		else
			i++;
	}
	blk_shrink(st, b);
	return true;
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
		if ((err = st_seg_create(st)) < 0)
			return err;
		s = active(st);
	}
	if ((err = bft_pwrite_all(s->fd, rec, len, s->size)) < 0) {
		if (ftruncate(s->fd, (off_t)s->size) < 0)
			st->tail_dirty = true;
		return err;
	}
	*loc = LOC(s->no, s->size);
	s->size += len;
	s->end = s->size;
	s->dirty = true;
	st->next_seq++;
	return 0;
}

int
bft_store_put_hist(struct bft_store *st, uint64_t block,
    const struct bft_hist_meta *meta, const uint8_t *frag)
{
	struct bft_hist_meta m;
	struct blk *b;
	uint64_t loc;
	size_t len;
	int err;

	if (block >= st->id.nblocks)
		return -ERANGE;
	if (meta->frag_len > BFT_MAX_FRAG || (meta->frag_len > 0 &&
	    frag == NULL))
		return -EINVAL;
	if ((b = st_blk_reserve(st, block, 1)) == NULL)
		return -ENOMEM;
	if (bft_ts_cmp(&meta->ts, &b->lc_ts) < 0)
		return -ESTALE;
	len = bft_rec_encode_hist(st->wbuf, st->n, st->next_seq, block, meta,
	    frag);
	if ((err = st_append_rec(st, st->wbuf, len, &loc)) < 0)
		return err;
	/* Decoding what was written keeps memory exactly what replay sees. */
	bft_rec_decode_hist(st->wbuf, st->n, &m);
	st_hist_apply(st, block, &m, loc, len);
	st_compact_step(st, len);
	return 0;
}

int
bft_store_set_lc(struct bft_store *st, uint64_t block,
    const struct bft_cand *c)
{
	struct bft_cand cand;
	struct blk *b;
	uint64_t loc;
	size_t len;
	int err;

	if (block >= st->id.nblocks)
		return -ERANGE;
	if ((b = st_blk_reserve(st, block, 0)) == NULL)
		return -ENOMEM;
	/* Replay keeps the highest lc, so memory must never go back. */
	if (bft_ts_cmp(&c->ts, &b->lc_ts) <= 0)
		return -EINVAL;
	len = bft_rec_encode_lc(st->wbuf, st->n, st->next_seq, block, c);
	if ((err = st_append_rec(st, st->wbuf, len, &loc)) < 0)
		return err;
	bft_rec_decode_lc(st->wbuf, st->n, &cand);
	st_lc_apply(st, block, &cand, loc, len);
	st_compact_step(st, len);
	return 0;
}

static struct blk *
blk_get(const struct bft_store *st, uint64_t block)
{
	return block < st->id.nblocks ? st->blocks[block] : NULL;
}

int
bft_store_get_lc(struct bft_store *st, uint64_t block, struct bft_cand *out)
{
	st_lc_expand(st, blk_get(st, block), out);
	return block < st->id.nblocks ? 0 : -ERANGE;
}

struct bft_ts
bft_store_lc_ts(const struct bft_store *st, uint64_t block)
{
	static const struct bft_ts zero;
	const struct blk *b = blk_get(st, block);

	return b ? b->lc_ts : zero;
}

bool
bft_store_lc_held(struct bft_store *st, uint64_t block)
{
	struct blk *b = blk_get(st, block);
	struct bft_hist_meta m;
	struct bft_cand c;
	struct hent *e;
	int i;

	if (b == NULL || bft_ts_is_zero(&b->lc_ts) ||
	    (i = hist_find(st, b, &b->lc_ts)) < 0)
		return false;
	/* validByHist reads only lc's ts and nonce and the entry's ts and nh. */
	e = blk_hent(st, b, (unsigned)i);
	c.ts = b->lc_ts;
	memcpy(c.nonce, b->lc_nonce, BFT_NONCE_LEN);
	m.ts = e->ts;
	memcpy(m.nh, e->nh, BFT_HASH_LEN);
	return bft_valid_by_hist(&c, &m);
}

int
bft_store_get_hist(struct bft_store *st, uint64_t block,
    const struct bft_ts *ts, struct bft_hist_entry *out)
{
	struct blk *b = blk_get(st, block);
	int i;

	if (b == NULL || (i = hist_find(st, b, ts)) < 0)
		return -ENOENT;
	hent_expand(st, blk_hent(st, b, (unsigned)i), out);
	return 0;
}

unsigned
bft_store_pending(struct bft_store *st, uint64_t block, uint64_t wid)
{
	struct blk *b = blk_get(st, block);
	unsigned count = 0;

	for (unsigned j = 0; b != NULL && j < b->nhist; j++) {
		const struct bft_ts *ts = &blk_hent(st, b, j)->ts;

		if (ts->wid == wid && bft_ts_cmp(ts, &b->lc_ts) > 0)
			count++;
	}
	return count;
}

unsigned
bft_store_nhist(struct bft_store *st, uint64_t block)
{
	struct blk *b = blk_get(st, block);

	return b ? b->nhist : 0;
}

int
bft_store_hist_at(struct bft_store *st, uint64_t block, unsigned i,
    struct bft_hist_entry *out)
{
	struct blk *b = blk_get(st, block);

	if (b == NULL || i >= b->nhist)
		return -ENOENT;
	hent_expand(st, blk_hent(st, b, i), out);
	return 0;
}

/*
 * Reads the whole record, not just the fragment, so that its checksum
 * can be verified: data the disk damaged since open is never served.
 */
int
bft_store_read_frag(struct bft_store *st, const struct bft_hist_entry *e,
    uint8_t *buf)
{
	struct seg *s = st_seg_find(st, LOC_SEG(e->loc));
	uint64_t off = LOC_OFF(e->loc);
	struct bft_hist_meta m;
	struct bft_rec_hdr h;
	size_t len;
	int err;

	if (s == NULL || e->meta.frag_len > BFT_MAX_FRAG)
		return -EINVAL;
	len = bft_rec_hist_len(st->n, e->meta.frag_len);
	if (off + len > s->size)
		return -EIO;
	if ((err = bft_pread_all(s->fd, st->rbuf, len, off)) < 0)
		return err;
	if (bft_rec_check(st->rbuf, len, st->n, &h) != BFT_REC_OK ||
	    h.type != BFT_REC_HIST)
		goto out_corrupt;
	bft_rec_decode_hist(st->rbuf, st->n, &m);
	if (bft_ts_cmp(&m.ts, &e->meta.ts) != 0 ||
	    m.frag_len != e->meta.frag_len)
		goto out_corrupt;
	memcpy(buf, st->rbuf + bft_rec_frag_off(st->n), m.frag_len);
	return 0;
out_corrupt:
	bft_warn("%s: record at seg %" PRIu32 " offset %" PRIu64 " is damaged;"
	    " not serving it", st->dir, s->no, off);
	return -EIO;
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

/* Whether live bytes are less than compact_pct percent of size. */
int
bft_store_forget_hist(struct bft_store *st, uint64_t block,
    const struct bft_ts *ts)
{
	struct blk *b;
	int i;

	if (block >= st->id.nblocks || (b = st->blocks[block]) == NULL ||
	    (i = hist_find(st, b, ts)) < 0)
		return -ENOENT;
	st_hist_drop(st, b, (unsigned)i);
	return 0;
}
