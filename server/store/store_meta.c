/*
 * Metadata read back from the log (store_int.h): lc's nonce and MAC
 * vector, a Hist entry's H(N), vector and cross-checksums.  The index
 * keeps none of it, so a read costs one pread of the record's first few
 * hundred bytes, checked by the record's meta CRC; the cache in front
 * keeps what was read recently, and the lc each COMPLETE wrote, so a
 * block read soon after it was written finds it here.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store_int.h"
#include "store_log.h"

static size_t
meta_max(unsigned n)
{
	size_t h = bft_rec_meta_len(BFT_REC_HIST, n);
	size_t l = bft_rec_meta_len(BFT_REC_LC, n);

	return h > l ? h : l;
}

int
st_mc_init(struct bft_store *st, uint64_t bytes)
{
	struct mcache *mc = &st->mc;
	uint64_t cap;
	size_t nh = 1;

	memset(mc, 0, sizeof *mc);
	mc->slot_size = (sizeof(struct mslot) + meta_max(st->n) + 7) & ~7ul;
	cap = bytes / mc->slot_size;
	mc->cap = cap >= MC_NONE ? MC_NONE - 1 : (uint32_t)cap;
	while (nh < mc->cap)
		nh *= 2;
	mc->hmask = (uint32_t)nh - 1;
	mc->lru = mc->mru = mc->freel = MC_NONE;
	if (mc->cap == 0)
		return 0;
	/* Buckets hold slot + 1, so that calloc's zero pages mean empty. */
	mc->heads = calloc(nh, sizeof *mc->heads);
	mc->chunks = calloc((mc->cap + MC_CHUNK_SLOTS - 1) / MC_CHUNK_SLOTS,
	    sizeof *mc->chunks);
	if (mc->heads == NULL || mc->chunks == NULL) {
		st_mc_free(st);
		return -ENOMEM;
	}
	return 0;
}

void
st_mc_free(struct bft_store *st)
{
	struct mcache *mc = &st->mc;

	for (uint32_t i = 0; mc->chunks != NULL && i < mc->nslots;
	    i += MC_CHUNK_SLOTS)
		free(mc->chunks[i >> MC_CHUNK_SHIFT]);
	free(mc->chunks);
	free(mc->heads);
	mc->chunks = NULL;
	mc->heads = NULL;
	mc->nslots = mc->used = 0;
}

static struct mslot *
slot(const struct mcache *mc, uint32_t i)
{
	return st_mc_slot(mc, i);
}

static uint32_t
bucket(const struct mcache *mc, uint64_t loc)
{
	uint64_t h = loc * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h ^ h >> 29 ^ h >> 47) & mc->hmask;
}

static uint32_t
lookup(const struct mcache *mc, uint64_t loc)
{
	uint32_t i;

	if (mc->cap == 0)
		return MC_NONE;
	for (i = mc->heads[bucket(mc, loc)] - 1; i != MC_NONE;
	    i = slot(mc, i)->hnext)
		if (slot(mc, i)->loc == loc)
			return i;
	return MC_NONE;
}

static void
lru_unlink(struct mcache *mc, uint32_t i)
{
	struct mslot *s = slot(mc, i);

	if (s->prev != MC_NONE)
		slot(mc, s->prev)->next = s->next;
	else
		mc->lru = s->next;
	if (s->next != MC_NONE)
		slot(mc, s->next)->prev = s->prev;
	else
		mc->mru = s->prev;
}

static void
lru_push(struct mcache *mc, uint32_t i)
{
	struct mslot *s = slot(mc, i);

	s->prev = mc->mru;
	s->next = MC_NONE;
	if (mc->mru != MC_NONE)
		slot(mc, mc->mru)->next = i;
	else
		mc->lru = i;
	mc->mru = i;
}

static void
hash_unlink(struct mcache *mc, uint32_t i)
{
	uint32_t *p = &mc->heads[bucket(mc, slot(mc, i)->loc)], j;

	/* The chain holds slot + 1 at its head, slot numbers after. */
	if (*p - 1 == i) {
		*p = slot(mc, i)->hnext + 1;
		return;
	}
	for (j = *p - 1; slot(mc, j)->hnext != i; j = slot(mc, j)->hnext)
		;
	slot(mc, j)->hnext = slot(mc, i)->hnext;
}

/* A slot to fill: a free one, a new one, or the least recently used. */
static uint32_t
take_slot(struct mcache *mc)
{
	uint32_t i;

	if (mc->freel != MC_NONE) {
		i = mc->freel;
		mc->freel = slot(mc, i)->next;
		return i;
	}
	if (mc->nslots < mc->cap) {
		if ((mc->nslots & (MC_CHUNK_SLOTS - 1)) == 0 &&
		    (mc->chunks[mc->nslots >> MC_CHUNK_SHIFT] =
		    malloc(MC_CHUNK_SLOTS * mc->slot_size)) == NULL)
			goto out_evict;
		return mc->nslots++;
	}
out_evict:
	if ((i = mc->lru) == MC_NONE)
		return MC_NONE;
	lru_unlink(mc, i);
	hash_unlink(mc, i);
	mc->used--;
	return i;
}

void
st_mc_put(struct bft_store *st, uint64_t loc, const uint8_t *meta,
    size_t len)
{
	struct mcache *mc = &st->mc;
	uint32_t i = lookup(mc, loc), *head;
	struct mslot *s;

	if (mc->cap == 0 || len > mc->slot_size - sizeof *s)
		return;
	if (i != MC_NONE) {
		/* A location's bytes never change: only its age does. */
		lru_unlink(mc, i);
		lru_push(mc, i);
		return;
	}
	if ((i = take_slot(mc)) == MC_NONE)
		return;
	head = &mc->heads[bucket(mc, loc)];
	s = slot(mc, i);
	s->loc = loc;
	s->hnext = *head - 1;
	*head = i + 1;
	mc->used++;
	s->len = (uint32_t)len;
	memcpy(s + 1, meta, len);
	lru_push(mc, i);
}

/* The cached bytes at loc, now the most recently used; or NULL. */
static const uint8_t *
mc_get(struct mcache *mc, uint64_t loc, size_t len)
{
	uint32_t i = lookup(mc, loc);

	if (i == MC_NONE || slot(mc, i)->len != len)
		return NULL;
	lru_unlink(mc, i);
	lru_push(mc, i);
	return (const uint8_t *)(slot(mc, i) + 1);
}

static const uint8_t *
damaged(struct bft_store *st, uint64_t loc, const char *why)
{
	if (bft_log_sampled(++st->meta_damaged))
		bft_warn("%s: record at seg %" PRIu32 " offset %" PRIu64
		    ": %s; not serving it (%" PRIu64 " so far)", st->dir,
		    LOC_SEG(loc), LOC_OFF(loc), why, st->meta_damaged);
	errno = EIO;
	return NULL;
}

const uint8_t *
st_meta_read(struct bft_store *st, uint64_t loc, unsigned type,
    uint64_t block, size_t rec_len)
{
	size_t meta = bft_rec_meta_len(type, st->n);
	struct seg *s = st_seg_find(st, LOC_SEG(loc));
	const uint8_t *p;
	enum bft_rec_status rs;
	struct bft_rec_hdr h;
	int err;

	if ((p = mc_get(&st->mc, loc, meta)) != NULL) {
		st->mc.hits++;
		return p;
	}
	st->mc.misses++;
	if (s == NULL || LOC_OFF(loc) + rec_len > s->size)
		return damaged(st, loc, "beyond its segment");
	if ((err = bft_pread_all(s->fd, st->mbuf, meta, LOC_OFF(loc))) < 0) {
		errno = -err;
		return NULL;
	}
	rs = bft_rec_check_meta(st->mbuf, meta, st->n, &h);
	if (rs == BFT_REC_BADHDR && st->mbuf[5] == BFT_REC_VERSION_V1) {
		/* No meta CRC: only the whole record can be checked. */
		err = bft_pread_all(s->fd, st->mbuf, rec_len, LOC_OFF(loc));
		if (err < 0) {
			errno = -err;
			return NULL;
		}
		rs = bft_rec_check(st->mbuf, rec_len, st->n, &h);
	}
	if (rs != BFT_REC_OK)
		return damaged(st, loc, "metadata checksum mismatch");
	if (h.type != type || h.block != block ||
	    BFT_REC_HDR_LEN + (size_t)h.payload_len + BFT_REC_SUM_LEN !=
	    rec_len)
		return damaged(st, loc, "not the record the index names");
	st_mc_put(st, loc, st->mbuf, meta);
	return st->mbuf;
}

int
st_lc_read(struct bft_store *st, uint64_t block, struct bft_cand *out)
{
	const struct blk_idx *x = st_idx(st, block);
	const uint8_t *p;

	memset(out, 0, sizeof *out);
	out->ts = x->lc_ts;
	if (x->lc_loc == 0)
		return 0;
	p = st_meta_read(st, x->lc_loc, BFT_REC_LC, block,
	    bft_rec_lc_len(st->n));
	if (p == NULL)
		return -EIO;
	bft_rec_decode_lc(p, st->n, out);
	if (bft_ts_cmp(&out->ts, &x->lc_ts) != 0 ||
	    memcmp(out->ts.mac, x->lc_ts.mac, BFT_MAC_LEN) != 0) {
		memset(out, 0, sizeof *out);
		out->ts = x->lc_ts;
		damaged(st, x->lc_loc, "lc's timestamp differs from the index");
		return -EIO;
	}
	return 0;
}
