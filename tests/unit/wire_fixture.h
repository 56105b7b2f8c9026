/*
 * Shared by the wire format tests (test_wire.c: round trips and frames;
 * test_wire_reject.c: malformed input): a seeded generator, messages with
 * random contents in every field their type carries, and expect(), which
 * decodes an exactly sized copy so that ASan sees any overread.
 */
#ifndef BFTBLK_TEST_WIRE_FIXTURE_H
#define BFTBLK_TEST_WIRE_FIXTURE_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <msgpack.h>

#include "wire.h"

#define NTYPES	BFT_MSG_NTYPES
static const uint8_t all_types[NTYPES] = {
	1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
	21, 22,
	0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8b, 0x8c,
	0x8d, 0x8e, 0x8f, 0x90, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96,
};

/*
 * Room for the longest of a fragment and an LCLIST_ACK, one entry more
 * (what the decoder must refuse), and an offset.
 */
#define BIGBUF	((BFT_LCLIST_MAX + 1) * BFT_LCENTRY_LEN + 2)
_Static_assert(BIGBUF >= BFT_MAX_FRAG + 2, "BIGBUF holds a fragment");
static uint64_t rng_state;
static uint8_t fragbuf[BIGBUF];
static const uint8_t zeros[BIGBUF];
/* The last message that expect() decoded. */
static struct bft_msg dec;
/* For expect(): refused, for whatever reason. */
static const char ANY[] = "any reason";

static inline uint64_t
rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static inline void
rnd_bytes(void *p, size_t len)
{
	uint8_t *b = p;

	while (len--)
		*b++ = (uint8_t)rnd();
}

/* The size of one of a reply's entries. */
static inline size_t
entry_len(uint8_t type)
{
	if (type == (BFT_VOLUMES | BFT_ACK))
		return BFT_VOLENTRY_LEN;
	if (type == (BFT_VLIST | BFT_ACK))
		return BFT_VLENTRY_LEN;
	return BFT_LCENTRY_LEN;
}

/* Fills exactly the fields that type (with status) carries on the wire. */
static inline void
make_msg(struct bft_msg *m, uint8_t type, int32_t status, unsigned n,
	 uint32_t max_frag)
{
	unsigned i;

	memset(m, 0, sizeof(*m));
	m->type = type;
	m->id = rnd();
	m->block = (type == BFT_HELLO || type == BFT_FLUSH ||
	    type == BFT_STATUS || type == BFT_SCRUB ||
	    type == BFT_FINALIZE) ? 0 : rnd();
	/* DROP and SNAP name a volume by its first block. */
	if (type == BFT_DROP || type == BFT_SNAP)
		m->block &= ~BFT_ADDR_MAX_BLOCK;
	m->status = (type & BFT_ACK) ? status : 0;
	if (m->status != 0)
		return;
	/* A view request is its live twin's fields and a boundary. */
	if (bft_is_view(type) && !(type & BFT_ACK))
		m->gen = rnd();
	switch (bft_view_base(type)) {
	case BFT_SNAP:
		m->gen = rnd();
		m->snap_op = rnd() & 1;
		rnd_bytes(m->vec, n * BFT_MAC_LEN);
		break;
	case BFT_VLIST:
		m->count = 1 + (uint32_t)(rnd() % BFT_VOL_MAX_BLOCKS);
		m->gen = rnd();
		m->gen_to = rnd();
		break;
	case BFT_VLIST | BFT_ACK:
		i = max_frag >= BFT_MAX_FRAG ? BFT_LCLIST_MAX :
		    max_frag / BFT_VLENTRY_LEN;
		m->next = rnd();
		m->nentries = (uint32_t[]){ 0, i,
		    (uint32_t)(rnd() % (i + 1)) }[rnd() % 3];
		m->entries = fragbuf + rnd() % 2;
		break;
	case BFT_HELLO:
		rnd_bytes(m->cluster_id, sizeof(m->cluster_id));
		rnd_bytes(&m->hello_n, sizeof(m->hello_n));
		rnd_bytes(&m->hello_t, sizeof(m->hello_t));
		rnd_bytes(&m->block_size, sizeof(m->block_size));
		rnd_bytes(&m->nblocks, sizeof(m->nblocks));
		rnd_bytes(&m->server_index, sizeof(m->server_index));
		break;
	case BFT_STORE:
	case BFT_FILTER | BFT_ACK:
		rnd_bytes(&m->ts, sizeof(m->ts));
		if (type == BFT_STORE)
			rnd_bytes(m->nh, sizeof(m->nh));
		rnd_bytes(m->vec, n * BFT_MAC_LEN);
		rnd_bytes(m->cc, n * BFT_HASH_LEN);
		/* Both limits, and anything between. */
		m->frag_len = (uint32_t[]){ 0, max_frag,
		    (uint32_t)(rnd() % (max_frag + 1)) }[rnd() % 3];
		m->frag = fragbuf + rnd() % 2;
		break;
	case BFT_COMPLETE:
		rnd_bytes(&m->ts, sizeof(m->ts));
		rnd_bytes(m->nonce, sizeof(m->nonce));
		rnd_bytes(m->vec, n * BFT_MAC_LEN);
		break;
	case BFT_REAUTH:
		rnd_bytes(&m->ts, sizeof(m->ts));
		rnd_bytes(m->nh, sizeof(m->nh));
		rnd_bytes(m->vec, n * BFT_MAC_LEN);
		m->gen = rnd() % 2 ? BFT_GEN_MAX : rnd() % BFT_GEN_MAX;
		break;
	case BFT_DROP:
		rnd_bytes(m->vec, n * BFT_MAC_LEN);
		break;
	case BFT_FILTER:
		m->ncands = 1 + (uint32_t)(rnd() % BFT_MAX_N);
		for (i = 0; i < m->ncands; i++)
			rnd_bytes(&m->cands[i], offsetof(struct bft_cand, vec) +
			    n * BFT_MAC_LEN);
		break;
	case BFT_COLLECT:
		m->want_frag = rnd() & 1;
		break;
	case BFT_COLLECT | BFT_ACK:
		/* Mostly with cc (and a fragment of any allowed length). */
		m->has_cc = rnd() % 4 != 0;
		if (m->has_cc) {
			rnd_bytes(m->cc, n * BFT_HASH_LEN);
			m->frag_len = (uint32_t[]){ 0, max_frag,
			    (uint32_t)(rnd() % (max_frag + 1)) }[rnd() % 3];
			m->frag = fragbuf + rnd() % 2;
		}
		/* FALLTHROUGH */
	case BFT_REPAIR:
		m->ncands = 1;
		rnd_bytes(&m->cands[0], offsetof(struct bft_cand, vec) +
		    n * BFT_MAC_LEN);
		break;
	case BFT_CLOCK | BFT_ACK:
		rnd_bytes(&m->ts, sizeof(m->ts));
		break;
	case BFT_SUMMARY:
		/* Any span, and a count it covers in 1..BFT_SUMMARY_MAX ranges. */
		m->span = 1 + (uint32_t)(rnd() % (rnd() & 1 ? 16 : UINT32_MAX));
		m->count = 1 + (uint32_t)(rnd() % ((uint64_t)m->span *
		    BFT_SUMMARY_MAX < UINT32_MAX ? m->span * BFT_SUMMARY_MAX :
		    UINT32_MAX));
		break;
	case BFT_LCLIST:
		m->count = (uint32_t[]){ 1, BFT_LCLIST_MAX,
		    1 + (uint32_t)(rnd() % BFT_LCLIST_MAX) }[rnd() % 3];
		break;
	case BFT_SUMMARY | BFT_ACK:
		/* max_frag bounds every message's bulk, to keep bodies small. */
		i = max_frag >= BFT_MAX_FRAG ? BFT_SUMMARY_MAX :
		    max_frag / BFT_SUMMARY_DIGEST_LEN;
		m->ndigests = (uint32_t[]){ 0, i,
		    (uint32_t)(rnd() % (i + 1)) }[rnd() % 3];
		m->digests = fragbuf + rnd() % 2;
		break;
	case BFT_LCLIST | BFT_ACK:
		i = max_frag >= BFT_MAX_FRAG ? BFT_LCLIST_MAX :
		    max_frag / BFT_LCENTRY_LEN;
		m->nentries = (uint32_t[]){ 0, i,
		    (uint32_t)(rnd() % (i + 1)) }[rnd() % 3];
		m->entries = fragbuf + rnd() % 2;
		break;
	case BFT_VOLUMES | BFT_ACK:
		i = max_frag >= BFT_MAX_FRAG ? BFT_VOLLIST_MAX :
		    max_frag / BFT_VOLENTRY_LEN;
		m->nentries = (uint32_t[]){ 0, i,
		    (uint32_t)(rnd() % (i + 1)) }[rnd() % 3];
		m->entries = fragbuf + rnd() % 2;
		break;
	case BFT_STATUS | BFT_ACK:
		rnd_bytes(&m->info, sizeof(m->info));
		/* Release 0.2.0's shape, or the nested fields with a level. */
		if (rnd() & 1)
			memset((char *)&m->info + sizeof(uint64_t) *
			    BFT_STATUS_NFIELDS_0, 0, sizeof m->info -
			    sizeof(uint64_t) * BFT_STATUS_NFIELDS_0);
		else if (m->info.level == 0)
			m->info.level = 1;
		break;
	case BFT_FINALIZE:
		m->level = 1 + (uint32_t)(rnd() % BFT_LEVEL_MAX);
		break;
	case BFT_SNAPSPACE:
		m->gen = rnd();
		break;
	case BFT_SNAPSPACE | BFT_ACK:
		m->next = rnd();
		m->space_excl = rnd();
		m->space_total = rnd();
		break;
	}
}

static inline void
assert_msg_equal(const struct bft_msg *a, const struct bft_msg *b)
{
	assert_int_equal(a->type, b->type);
	assert_true(a->id == b->id && a->block == b->block);
	assert_int_equal(a->status, b->status);
	assert_memory_equal(&a->ts, &b->ts, sizeof(a->ts));
	assert_memory_equal(a->nonce, b->nonce, sizeof(a->nonce));
	assert_memory_equal(a->nh, b->nh, sizeof(a->nh));
	assert_memory_equal(a->vec, b->vec, sizeof(a->vec));
	assert_memory_equal(a->cc, b->cc, sizeof(a->cc));
	assert_int_equal(a->ncands, b->ncands);
	assert_memory_equal(a->cands, b->cands, sizeof(a->cands));
	assert_memory_equal(a->cluster_id, b->cluster_id, BFT_CLUSTER_ID_LEN);
	assert_int_equal(a->hello_n, b->hello_n);
	assert_int_equal(a->hello_t, b->hello_t);
	assert_int_equal(a->block_size, b->block_size);
	assert_int_equal(a->server_index, b->server_index);
	assert_true(a->nblocks == b->nblocks);
	assert_int_equal(a->want_frag, b->want_frag);
	assert_true(a->gen == b->gen);
	assert_true(a->gen_to == b->gen_to && a->next == b->next);
	assert_true(a->space_excl == b->space_excl &&
	    a->space_total == b->space_total);
	assert_int_equal(a->snap_op, b->snap_op);
	assert_int_equal(a->level, b->level);
	assert_int_equal(a->has_cc, b->has_cc);
	assert_int_equal(a->frag_len, b->frag_len);
	if (a->frag_len)
		assert_memory_equal(a->frag, b->frag, a->frag_len);
	assert_int_equal(a->count, b->count);
	assert_int_equal(a->span, b->span);
	assert_int_equal(a->ndigests, b->ndigests);
	if (a->ndigests)
		assert_memory_equal(a->digests, b->digests,
		    (size_t)a->ndigests * BFT_SUMMARY_DIGEST_LEN);
	assert_int_equal(a->nentries, b->nentries);
	if (a->nentries)
		assert_memory_equal(a->entries, b->entries,
		    (size_t)a->nentries * entry_len(a->type));
	assert_memory_equal(&a->info, &b->info, sizeof(a->info));
}

/* Encodes m alone into b (emptied first) and returns the body length. */
static inline uint32_t
encode_one(const struct bft_msg *m, unsigned n, struct bft_buf *b)
{
	uint32_t bl = 0;

	b->len = 0;
	assert_int_equal(bft_wire_encode(m, n, b), 0);
	assert_int_equal(bft_wire_frame(b->data, b->len, &bl), 0);
	assert_int_equal((size_t)bl + 4, b->len);
	return bl;
}

/*
 * Decodes a private, exactly sized copy of body, so that ASan sees any
 * overread, into dec.  want is NULL for success, ANY for any refusal, or
 * the exact reason expected.
 */
static inline void
expect(const void *body, size_t len, unsigned n, const char *want)
{
	uint8_t *copy = malloc(len ? len : 1);
	const char *why = NULL;
	int rc;

	assert_non_null(copy);
	if (len)
		memcpy(copy, body, len);
	rc = bft_wire_decode(copy, len, n, &dec, &why);
	if (want == NULL) {
		assert_int_equal(rc, 0);
		assert_true(dec.frag_len == 0 || (dec.frag >= copy &&
		    dec.frag + dec.frag_len <= copy + len));
		assert_true(dec.ndigests == 0 || (dec.digests >= copy &&
		    dec.digests + (size_t)dec.ndigests *
		    BFT_SUMMARY_DIGEST_LEN <= copy + len));
		assert_true(dec.nentries == 0 || (dec.entries >= copy &&
		    dec.entries + (size_t)dec.nentries *
		    entry_len(dec.type) <= copy + len));
	} else {
		/* A malformed body; a cluster size out of range is ours. */
		assert_int_equal(rc, n < 4 || n > BFT_MAX_N ? -EINVAL :
		    -EBADMSG);
		assert_true(why != NULL && *why != '\0');
		if (want != ANY)
			assert_string_equal(why, want);
	}
	free(copy);
}

static inline int
setup(void **state)
{
	(void)state;
	rng_state = 0x2545f4914f6cdd1dull;
	rnd_bytes(fragbuf, sizeof(fragbuf));
	return 0;
}

#endif
