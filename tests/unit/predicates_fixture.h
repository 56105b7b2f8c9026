/*
 * Shared by the predicate tests (test_predicates.c: valid, validByHist
 * and invalid; test_predicates_safe.c: safe, highcand and whole FILTER
 * rounds): a world of n = 3t + 1 servers with their keys, honest WRITEs
 * and Byzantine forgeries, and FILTER replies built from them.  Every test
 * runs for t = 1 and t = 2 (BOTH).
 */
#ifndef BFTBLK_TEST_PREDICATES_FIXTURE_H
#define BFTBLK_TEST_PREDICATES_FIXTURE_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "crypto.h"
#include "ec.h"
#include "predicates.h"

struct world {
	unsigned t, n;
	uint8_t k[BFT_MAX_N][BFT_KEY_LEN];	/* k_i of server i */
	uint8_t kw[BFT_KEY_LEN];
	struct bft_ec *ec;
	uint32_t flen;
	uint64_t block;			/* the block writes are made for */
};

/* One WRITE as it reaches the servers, or a Byzantine forgery of one. */
struct write {
	struct bft_cand c;		/* what COMPLETE carries */
	struct bft_hist_meta h;		/* Hist[ts] minus the fragment */
	uint8_t *block;
	uint8_t *frags[BFT_MAX_N];
};

static unsigned t_one = 1, t_two = 2;

static inline int
setup(void **state)
{
	unsigned t = *(unsigned *)*state;
	struct world *w = calloc(1, sizeof *w);
	char err[256];

	if (w == NULL || bft_crypto_init() != 0)
		return -1;
	w->t = t;
	w->n = 3 * t + 1;
	bft_random(w->k, sizeof w->k);
	bft_random(w->kw, sizeof w->kw);
	if (bft_ec_new(t, NULL, &w->ec, err, sizeof err) != 0)
		return -1;
	w->flen = bft_ec_frag_len(w->ec);
	*state = w;
	return 0;
}

static inline int
teardown(void **state)
{
	struct world *w = *state;

	bft_ec_free(w->ec);
	free(w);
	return 0;
}

static inline struct bft_ts
mkts(const struct world *w, uint64_t num, uint64_t wid)
{
	struct bft_ts ts = { .num = num, .wid = wid };

	bft_ts_sign(&ts, w->block, w->kw);
	return ts;
}

/* Algorithm 4, lines 87-105, done honestly. */
static inline void
make_write(const struct world *w, uint64_t num, uint64_t wid,
	   struct write *wr)
{
	memset(wr, 0, sizeof *wr);
	wr->c.ts = mkts(w, num, wid);
	bft_random(wr->c.nonce, BFT_NONCE_LEN);
	bft_hash(wr->c.nonce, BFT_NONCE_LEN, wr->h.nh);
	for (unsigned i = 0; i < w->n; i++)
		bft_vec_mac(&wr->c.ts, w->block, wr->h.nh, w->k[i],
		    wr->c.vec[i]);
	wr->h.ts = wr->c.ts;
	memcpy(wr->h.vec, wr->c.vec, sizeof wr->h.vec);
	wr->block = malloc(BFT_BLOCK_SIZE);
	assert_non_null(wr->block);
	bft_random(wr->block, BFT_BLOCK_SIZE);
	for (unsigned i = 0; i < w->n; i++) {
		wr->frags[i] = malloc(w->flen);
		assert_non_null(wr->frags[i]);
	}
	assert_int_equal(bft_ec_encode(w->ec, wr->block, wr->frags), 0);
	for (unsigned i = 0; i < w->n; i++)
		bft_hash(wr->frags[i], w->flen, wr->h.cc[i]);
	wr->h.frag_len = w->flen;
}

/*
 * What colluding Byzantine servers can make without k_W or any correct
 * server's key: any ts, a random nonce and MACs, and fragments of their
 * own with a cross-checksum that matches them, so each liar's own
 * frag_ok holds.
 */
static inline void
make_forgery(const struct world *w, uint64_t num, uint64_t wid,
	     struct write *f)
{
	memset(f, 0, sizeof *f);
	f->c.ts.num = num;
	f->c.ts.wid = wid;
	bft_random(f->c.ts.mac, BFT_MAC_LEN);
	bft_random(f->c.nonce, BFT_NONCE_LEN);
	bft_random(f->c.vec, sizeof f->c.vec);
	f->h.ts = f->c.ts;
	bft_hash(f->c.nonce, BFT_NONCE_LEN, f->h.nh);
	memcpy(f->h.vec, f->c.vec, sizeof f->h.vec);
	for (unsigned i = 0; i < w->n; i++) {
		f->frags[i] = malloc(w->flen);
		assert_non_null(f->frags[i]);
		bft_random(f->frags[i], w->flen);
		bft_hash(f->frags[i], w->flen, f->h.cc[i]);
	}
	f->h.frag_len = w->flen;
}

static inline void
free_write(const struct world *w, struct write *wr)
{
	for (unsigned i = 0; i < w->n; i++)
		free(wr->frags[i]);
	free(wr->block);
}

/* FILTER_ACK from server i answering from Hist[wr.ts]; frag_ok as the
 * client computes it on arrival. */
static inline void
reply_from(const struct world *w, const struct write *wr, unsigned i,
	   struct bft_reply *r)
{
	uint8_t h[BFT_HASH_LEN];

	memset(r, 0, sizeof *r);
	r->present = true;
	r->ts = wr->h.ts;
	memcpy(r->cc, wr->h.cc, sizeof r->cc);
	memcpy(r->vec, wr->h.vec, sizeof r->vec);
	bft_hash(wr->frags[i], w->flen, h);
	r->frag_ok = bft_equal(h, r->cc[i], BFT_HASH_LEN);
}

/* FILTER_ACK carrying c0: the server validated nothing. */
static inline void
reply_c0(struct bft_reply *r)
{
	memset(r, 0, sizeof *r);
	r->present = true;
}

/* Server i in FILTER (Alg. 5, line 125) over the entries in hist[]. */
static inline void
server_filter(const struct world *w, struct write *const *hist, unsigned nh,
	      unsigned i, const struct bft_cand *C, unsigned nc,
	      struct bft_reply *r)
{
	const struct write *rt = NULL;

	for (unsigned j = 0; j < nc; j++)
		for (unsigned e = 0; e < nh; e++) {
			if (bft_ts_cmp(&hist[e]->h.ts, &C[j].ts) != 0 ||
			    !bft_valid_by_hist(&C[j], &hist[e]->h))
				continue;
			if (rt == NULL || bft_ts_cmp(&C[j].ts, &rt->h.ts) > 0)
				rt = hist[e];
		}
	if (rt != NULL)
		reply_from(w, rt, i, r);
	else
		reply_c0(r);
}

/* RESTORE: decode from the quorum safe() named; must be wr's block. */
static inline void
assert_restores(const struct world *w, const struct write *wr, uint32_t q)
{
	const uint8_t *in[BFT_MAX_N] = { 0 };
	uint8_t *out = malloc(BFT_BLOCK_SIZE);

	assert_non_null(out);
	for (unsigned i = 0; i < w->n; i++)
		if (q & (1u << i))
			in[i] = wr->frags[i];
	assert_int_equal(bft_ec_decode(w->ec, in, q, out), 0);
	assert_memory_equal(out, wr->block, BFT_BLOCK_SIZE);
	free(out);
}

/* Next mask of n bits with exactly k set after m; 0 when done. */
static inline uint32_t
next_set(uint32_t m, unsigned n, unsigned k)
{
	while (++m < (1u << n))
		if ((unsigned)__builtin_popcount(m) == k)
			return m;
	return 0;
}

#define FOR_SETS(m, n, k) \
	for (uint32_t m = next_set(0, n, k); m != 0; m = next_set(m, n, k))
#define IN(m, i) (((m) >> (i)) & 1u)

#define BOTH(f) \
	{ #f "/t=1", f, setup, teardown, &t_one }, \
	{ #f "/t=2", f, setup, teardown, &t_two }

#endif
