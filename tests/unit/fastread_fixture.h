/*
 * Shared by the 1-round READ's tests (test_fastread.c, whole blocks;
 * test_fastread_part.c, part of one): a written block's candidate,
 * fragments and cross-checksum as the protocol makes them, and servers
 * that answer COLLECT with them, honestly unless a test alters a reply.
 * Include after <cmocka.h>.
 */
#ifndef BFTBLK_TEST_FASTREAD_FIXTURE_H
#define BFTBLK_TEST_FASTREAD_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "ec.h"
#include "predicates.h"

/* The block every read here is of. */
#define FBLOCK 11

struct fx {
	unsigned t, n;
	uint8_t kw[BFT_KEY_LEN];
	struct bft_written_key wk;	/* a writer's: checks with kw */
	struct bft_ec *ec;
	uint32_t flen;
	uint8_t block[BFT_BLOCK_SIZE];
	uint8_t *frags[BFT_MAX_N];
	struct bft_cand c;		/* the completed write every server holds */
	uint8_t cc[BFT_MAX_N][BFT_HASH_LEN];
	struct bft_collect_reply A[BFT_MAX_N];
	uint32_t want;			/* k = t+1 data servers */
};

static unsigned t_one = 1, t_two = 2;

static inline int
setup(void **state)
{
	unsigned t = *(unsigned *)*state;
	struct fx *f = calloc(1, sizeof *f);
	char err[256];
	uint8_t *buf;

	if (f == NULL || bft_crypto_init() != 0)
		return -1;
	f->t = t;
	f->n = 3 * t + 1;
	f->want = (1u << (t + 1)) - 1;
	bft_random(f->kw, sizeof f->kw);
	f->wk.kw = f->kw;
	if (bft_ec_new(t, NULL, &f->ec, err, sizeof err) != 0)
		return -1;
	f->flen = bft_ec_frag_len(f->ec);
	buf = malloc((size_t)f->n * f->flen);
	if (buf == NULL)
		return -1;
	for (unsigned i = 0; i < f->n; i++)
		f->frags[i] = buf + (size_t)i * f->flen;
	bft_random(f->block, sizeof f->block);
	if (bft_ec_encode(f->ec, f->block, f->frags) != 0)
		return -1;
	for (unsigned i = 0; i < f->n; i++)
		bft_hash(f->frags[i], f->flen, f->cc[i]);
	f->c.ts.num = 7;
	f->c.ts.wid = 0x1234567;
	bft_ts_sign(&f->c.ts, FBLOCK, f->kw);
	bft_random(f->c.nonce, sizeof f->c.nonce);
	bft_random(f->c.vec, (size_t)f->n * BFT_MAC_LEN);
	*state = f;
	return 0;
}

static inline int
teardown(void **state)
{
	struct fx *f = *state;

	free(f->frags[0]);
	bft_ec_free(f->ec);
	free(f);
	return 0;
}

/* Server i answers honestly: lc = c, its cc, its fragment if asked. */
static inline void
honest(struct fx *f, unsigned i)
{
	struct bft_collect_reply *a = &f->A[i];

	memset(a, 0, sizeof *a);
	a->present = true;
	a->lc = f->c;
	a->has_cc = true;
	memcpy(a->cc, f->cc, sizeof a->cc);
	if (f->want & (1u << i)) {
		a->has_frag = true;
		bft_hash(f->frags[i], f->flen, a->fh);
	}
}

/* Every server in mask answers honestly, the others not yet. */
static inline void
answers(struct fx *f, uint32_t mask)
{
	memset(f->A, 0, sizeof f->A);
	for (unsigned i = 0; i < f->n; i++)
		if (mask & (1u << i))
			honest(f, i);
}

static inline uint32_t
all(const struct fx *f)
{
	return (1u << f->n) - 1;
}

/* The verdict with every server not in A pending. */
static inline enum bft_fast_verdict
decide(struct fx *f, int *pick, uint32_t *have)
{
	uint32_t pending = 0;

	for (unsigned i = 0; i < f->n; i++)
		if (!f->A[i].present)
			pending |= 1u << i;
	return bft_fast_read(f->A, f->n, f->t, pending, f->want, FBLOCK, &f->wk, pick,
	    have);
}

/*
 * A YES must name the honest candidate and fragments that decode to
 * the honest block, whatever the liars sent.
 */
static inline void
assert_yes_is_honest(struct fx *f, int pick, uint32_t have)
{
	const uint8_t *frags[BFT_MAX_N];
	uint8_t out[BFT_BLOCK_SIZE];

	assert_true(pick >= 0 && (unsigned)pick < f->n);
	assert_memory_equal(&f->A[pick].lc, &f->c, sizeof f->c);
	assert_memory_equal(f->A[pick].cc, f->cc, sizeof f->cc);
	assert_true(__builtin_popcount(have) >= (int)f->t + 1);
	for (unsigned i = 0; i < f->n; i++)
		frags[i] = f->frags[i];
	assert_int_equal(bft_ec_decode(f->ec, frags, have, out), 0);
	assert_memory_equal(out, f->block, sizeof out);
}

/* Calls fn for every set of exactly t servers. */
static inline void
each_liar_set(struct fx *f, void (*fn)(struct fx *, uint32_t))
{
	for (uint32_t b = 0; b <= all(f); b++)
		if (__builtin_popcount(b) == (int)f->t)
			fn(f, b);
}

#endif
