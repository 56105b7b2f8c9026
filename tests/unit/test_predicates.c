/*
 * The M-PoWerStore predicates (Dobre et al., Algorithms 5 and 6) for
 * t = 1 and t = 2, on inputs built the way the protocol builds them:
 * timestamps signed with k_W, MAC vectors made with each server's key,
 * cross-checksums of real erasure-coded fragments.  Besides the normal
 * cases, each adversarial case below is one step of a proof in the
 * paper's appendix (Lemmas A.15, A.16, Theorem A.20) played with every
 * possible set of t Byzantine servers.
 */
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
};

/* One WRITE as it reaches the servers, or a Byzantine forgery of one. */
struct write {
	struct bft_cand c;		/* what COMPLETE carries */
	struct bft_hist_meta h;		/* Hist[ts] minus the fragment */
	uint8_t *block;
	uint8_t *frags[BFT_MAX_N];
};

static unsigned t_one = 1, t_two = 2;

static int
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
	w->ec = bft_ec_new(t, NULL, err, sizeof err);
	if (w->ec == NULL)
		return -1;
	w->flen = bft_ec_frag_len(w->ec);
	*state = w;
	return 0;
}

static int
teardown(void **state)
{
	struct world *w = *state;

	bft_ec_free(w->ec);
	free(w);
	return 0;
}

static struct bft_ts
mkts(const struct world *w, uint64_t num, uint64_t wid)
{
	struct bft_ts ts = { .num = num, .wid = wid };

	bft_ts_sign(&ts, w->kw);
	return ts;
}

/* Algorithm 4, lines 87-105, done honestly. */
static void
make_write(const struct world *w, uint64_t num, uint64_t wid,
	   struct write *wr)
{
	memset(wr, 0, sizeof *wr);
	wr->c.ts = mkts(w, num, wid);
	bft_random(wr->c.nonce, BFT_NONCE_LEN);
	bft_hash(wr->c.nonce, BFT_NONCE_LEN, wr->h.nh);
	for (unsigned i = 0; i < w->n; i++)
		bft_vec_mac(&wr->c.ts, wr->h.nh, w->k[i], wr->c.vec[i]);
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
static void
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

static void
free_write(const struct world *w, struct write *wr)
{
	for (unsigned i = 0; i < w->n; i++)
		free(wr->frags[i]);
	free(wr->block);
}

/* FILTER_ACK from server i answering from Hist[wr.ts]; frag_ok as the
 * client computes it on arrival. */
static void
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
static void
reply_c0(struct bft_reply *r)
{
	memset(r, 0, sizeof *r);
	r->present = true;
}

/* Server i in FILTER (Alg. 5, line 125) over the entries in hist[]. */
static void
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
static void
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
static uint32_t
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

static void
test_valid_by_hist(void **state)
{
	struct world *w = *state;
	struct write a, b;
	struct bft_cand c;
	struct bft_hist_meta h;

	make_write(w, 5, 1, &a);
	make_write(w, 6, 1, &b);
	assert_true(bft_valid_by_hist(&a.c, &a.h));
	assert_false(bft_valid_by_hist(&a.c, NULL));
	/* (d) a's nonce under b's ts: Hist[b.ts] holds H(b.N), not H(a.N). */
	c = b.c;
	memcpy(c.nonce, a.c.nonce, BFT_NONCE_LEN);
	assert_false(bft_valid_by_hist(&c, &b.h));
	/* ... and Hist[a.ts], whose nh matches, is for another ts. */
	assert_false(bft_valid_by_hist(&c, &a.h));
	/* Same num, other writer: a different timestamp. */
	c = a.c;
	c.ts.wid = 2;
	assert_false(bft_valid_by_hist(&c, &a.h));
	/* One flipped nonce bit. */
	for (unsigned bit = 0; bit < 8 * BFT_NONCE_LEN; bit += 37) {
		c = a.c;
		c.nonce[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_false(bft_valid_by_hist(&c, &a.h));
	}
	/*
	 * A real (ts, N) whose ts MAC was garbled is not the stored write:
	 * accepted into lc it would be ignored by every CLOCK and reader
	 * (found by tests/faults/client-forge.sh).
	 */
	for (unsigned bit = 0; bit < 8 * BFT_MAC_LEN; bit += 13) {
		c = a.c;
		c.ts.mac[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_false(bft_valid_by_hist(&c, &a.h));
		for (unsigned i = 0; i < w->n; i++)
			assert_false(bft_valid(&c, &a.h, i, w->k[i]));
	}
	/* valid() through the history ignores a garbage vector. */
	c = a.c;
	bft_random(c.vec, sizeof c.vec);
	for (unsigned i = 0; i < w->n; i++)
		assert_true(bft_valid(&c, &a.h, i, w->k[i]));
	/* The zero timestamp is never valid, even with a matching entry. */
	memset(&c.ts, 0, sizeof c.ts);
	h = a.h;
	memset(&h.ts, 0, sizeof h.ts);
	assert_true(bft_valid_by_hist(&c, &h));
	assert_false(bft_valid(&c, &h, 0, w->k[0]));
	free_write(w, &a);
	free_write(w, &b);
}

static void
test_valid_by_mac(void **state)
{
	struct world *w = *state;
	struct write a;
	struct bft_cand c;
	uint8_t nh[BFT_HASH_LEN];

	make_write(w, 5, 1, &a);
	for (unsigned i = 0; i < w->n; i++) {
		/* The full vector: server i needs no history. */
		assert_true(bft_valid(&a.c, NULL, i, w->k[i]));
		for (unsigned j = 0; j < w->n; j++)
			if (j != i)
				assert_false(bft_valid(&a.c, NULL, i,
				    w->k[j]));
		/* (d) only vec[i] is right: valid at i alone. */
		c = a.c;
		bft_random(c.vec, sizeof c.vec);
		memcpy(c.vec[i], a.c.vec[i], BFT_MAC_LEN);
		for (unsigned j = 0; j < w->n; j++)
			assert_true(bft_valid(&c, NULL, j, w->k[j]) == (i == j));
		/* vec[i] copied to every slot still proves nothing to j. */
		for (unsigned j = 0; j < w->n; j++)
			memcpy(c.vec[j], a.c.vec[i], BFT_MAC_LEN);
		for (unsigned j = 0; j < w->n; j++)
			assert_true(bft_valid(&c, NULL, j, w->k[j]) == (i == j));
	}
	/* The MAC binds H(N) and the whole (num, wid). */
	c = a.c;
	c.nonce[0] ^= 1;
	assert_false(bft_valid(&c, NULL, 0, w->k[0]));
	c = a.c;
	c.ts.wid = 2;
	assert_false(bft_valid(&c, NULL, 0, w->k[0]));
	c = a.c;
	c.ts.num = 6;
	assert_false(bft_valid(&c, NULL, 0, w->k[0]));
	/* A correct MAC over the zero timestamp does not make it valid. */
	memset(&c, 0, sizeof c);
	bft_random(c.nonce, BFT_NONCE_LEN);
	bft_hash(c.nonce, BFT_NONCE_LEN, nh);
	bft_vec_mac(&c.ts, nh, w->k[0], c.vec[0]);
	assert_false(bft_valid(&c, NULL, 0, w->k[0]));
	/*
	 * Server indices past the vector, on a copy that ends at a guard
	 * page: reading vec[BFT_MAX_N] faults even inside libsodium, which
	 * ASan does not instrument.
	 */
	{
		long pg = sysconf(_SC_PAGESIZE);
		uint8_t *map = mmap(NULL, 2 * (size_t)pg, PROT_READ |
		    PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct bft_cand *hc;

		assert_true(map != MAP_FAILED);
		assert_int_equal(mprotect(map + pg, (size_t)pg, PROT_NONE), 0);
		hc = (struct bft_cand *)(map + pg - sizeof *hc);
		*hc = a.c;
		/* The last slot is readable (and holds no MAC of k_0). */
		assert_false(bft_valid(hc, NULL, BFT_MAX_N - 1, w->k[0]));
		assert_false(bft_valid(hc, NULL, BFT_MAX_N, w->k[0]));
		assert_false(bft_valid(hc, NULL, ~0u, w->k[0]));
		munmap(map, 2 * (size_t)pg);
	}
	free_write(w, &a);
}

/*
 * (a) A Byzantine server b puts a forged candidate in its lc: a random
 * nonce, a huge ts, and either garbage MACs or MACs it made with its own
 * key k_b (the only key it has).  No correct server finds it valid
 * (Lemma A.15: it was never stored), so all of them answer lower in
 * FILTER and the reader drops it once n-t such answers are in, but not
 * before: t+1 lower answers could be Byzantine lies.
 */
static void
test_forged_candidate(void **state)
{
	struct world *w = *state;
	unsigned n = w->n, t = w->t;
	struct write real, forged;
	struct write *hist[1] = { &real };
	struct bft_reply W[BFT_MAX_N];
	struct bft_cand C[2];
	uint32_t q;

	make_write(w, 5, 1, &real);
	FOR_SETS(byz, n, t) {
		unsigned b = (unsigned)__builtin_ctz(byz), lower = 0;

		make_forgery(w, UINT64_MAX - 1, 9, &forged);
		for (int mode = 0; mode < 2; mode++) {
			if (mode == 1) {
				/* MACs made with the liar's own key. */
				uint8_t nh[BFT_HASH_LEN];

				bft_hash(forged.c.nonce, BFT_NONCE_LEN, nh);
				for (unsigned i = 0; i < n; i++)
					bft_vec_mac(&forged.c.ts, nh, w->k[b],
					    forged.c.vec[i]);
				assert_true(bft_valid(&forged.c, NULL, b,
				    w->k[b]));
			}
			for (unsigned i = 0; i < n; i++) {
				if (IN(byz, i))
					continue;
				assert_false(bft_valid(&forged.c, NULL, i,
				    w->k[i]));
				assert_false(bft_valid(&forged.c, &real.h, i,
				    w->k[i]));
			}
		}
		C[0] = real.c;
		C[1] = forged.c;
		memset(W, 0, sizeof W);
		/* The liars answer first, with the forged ts. */
		for (unsigned i = 0; i < n; i++)
			if (IN(byz, i))
				reply_from(w, &forged, i, &W[i]);
		for (unsigned i = 0; i < n; i++) {
			if (IN(byz, i))
				continue;
			assert_false(bft_invalid(&forged.c.ts, W, n, t));
			server_filter(w, hist, 1, i, C, 2, &W[i]);
			assert_true(bft_ts_cmp(&W[i].ts, &real.c.ts) == 0);
			lower++;
			assert_true(bft_invalid(&forged.c.ts, W, n, t) ==
			    (lower >= n - t));
			assert_false(bft_safe(&forged.c.ts, W, n, t, NULL));
			assert_false(bft_invalid(&real.c.ts, W, n, t));
		}
		assert_int_equal(bft_count_newer(&real.c.ts, W, n), t);
		/* The reader keeps the real candidate and restores it. */
		assert_int_equal(bft_drop_invalid(C, 2, W, n, t), 1);
		assert_memory_equal(&C[0], &real.c, sizeof C[0]);
		assert_int_equal(bft_highest(C, 1), 0);
		assert_true(bft_highcand(&C[0], C, 1));
		assert_true(bft_safe(&C[0].ts, W, n, t, &q));
		assert_int_equal(q & byz, 0);
		assert_true(__builtin_popcount(q) >= (int)t + 1);
		assert_restores(w, &real, q);
		free_write(w, &forged);
	}
	free_write(w, &real);
}

/*
 * (b) Lemma A.16: c is valid, so t+1 correct servers hold Hist[c.ts] and
 * never answer lower than c.ts.  Even if the t liars and the t correct
 * servers that missed the STORE all answer lower (2t answers), c stays.
 */
static void
test_no_exclusion(void **state)
{
	struct world *w = *state;
	unsigned n = w->n, t = w->t;
	struct write old, c, newer;
	struct bft_reply W[BFT_MAX_N];
	uint32_t q;

	make_write(w, 3, 7, &old);
	make_write(w, 5, 1, &c);
	make_write(w, 8, 2, &newer);
	FOR_SETS(holders, n, t + 1) {
		FOR_SETS(byz, n, t) {
			if (byz & holders)
				continue;
			for (unsigned i = 0; i < n; i++) {
				if (IN(holders, i))
					reply_from(w, &c, i, &W[i]);
				else if (IN(byz, i))
					reply_c0(&W[i]);
				else
					reply_from(w, &old, i, &W[i]);
			}
			assert_false(bft_invalid(&c.c.ts, W, n, t));
			assert_true(bft_safe(&c.c.ts, W, n, t, &q));
			assert_int_equal(q, holders);
			/* A holder that has since seen a newer write. */
			reply_from(w, &newer, (unsigned)__builtin_ctz(holders),
			    &W[__builtin_ctz(holders)]);
			assert_false(bft_invalid(&c.c.ts, W, n, t));
			assert_int_equal(bft_count_newer(&c.c.ts, W, n), 1);
		}
	}
	/* Every pattern of absent / lower / not lower for n servers. */
	{
		unsigned patterns = 1;

		for (unsigned i = 0; i < n; i++)
			patterns *= 3;
		for (unsigned p = 0; p < patterns; p++) {
			unsigned x = p, nlower = 0;

			for (unsigned i = 0; i < n; i++, x /= 3) {
				memset(&W[i], 0, sizeof W[i]);
				if (x % 3 == 0)
					continue;
				if (x % 3 == 1) {
					reply_from(w, &old, i, &W[i]);
					nlower++;
				} else {
					reply_from(w, &c, i, &W[i]);
				}
			}
			assert_true(bft_invalid(&c.c.ts, W, n, t) ==
			    (nlower >= n - t));
		}
	}
	free_write(w, &old);
	free_write(w, &c);
	free_write(w, &newer);
}

/* (c) safe() needs t+1 replies agreeing on ts, cc and vec with frag_ok. */
static void
test_safe(void **state)
{
	struct world *w = *state;
	unsigned n = w->n, t = w->t;
	struct write c, forged, old;
	struct bft_reply W[BFT_MAX_N], X[BFT_MAX_N];
	uint32_t q;

	make_write(w, 5, 1, &c);
	make_write(w, 4, 3, &old);
	FOR_SETS(byz, n, t) {
		uint32_t correct = ((1u << n) - 1) & ~byz, holders = 0;

		/* The liars claim c.ts with their own consistent cc. */
		make_forgery(w, 5, 1, &forged);
		memset(W, 0, sizeof W);
		for (unsigned i = 0; i < n; i++)
			if (IN(byz, i)) {
				reply_from(w, &forged, i, &W[i]);
				assert_true(W[i].frag_ok);
			}
		assert_false(bft_safe(&c.c.ts, W, n, t, &q));
		/* Correct holders come in: safe at t+1 of them, no sooner. */
		for (unsigned i = 0; i < n; i++) {
			if (!IN(correct, i))
				continue;
			assert_false(bft_safe(&c.c.ts, W, n, t, NULL));
			reply_from(w, &c, i, &W[i]);
			holders |= 1u << i;
			if ((unsigned)__builtin_popcount(holders) == t + 1)
				break;
		}
		q = 0;
		assert_true(bft_safe(&c.c.ts, W, n, t, &q));
		assert_int_equal(q, holders);
		assert_restores(w, &c, q);
		/* The forged value's own ts is never safe from t liars. */
		for (unsigned i = 0; i < n; i++)
			if (IN(byz, i))
				reply_from(w, &forged, i, &X[i]);
			else
				reply_from(w, &old, i, &X[i]);
		forged.c.ts.num = 99;
		for (unsigned i = 0; i < n; i++)
			if (IN(byz, i))
				X[i].ts = forged.c.ts;
		assert_false(bft_safe(&forged.c.ts, X, n, t, NULL));

		/* Liars copying cc and vec but not having the fragment. */
		memcpy(X, W, sizeof X);
		for (unsigned i = 0; i < n; i++)
			if (IN(byz, i)) {
				X[i] = W[__builtin_ctz(holders)];
				X[i].frag_ok = false;	/* H(garbage) != cc[i] */
			}
		X[__builtin_ctz(holders)].present = false;
		assert_false(bft_safe(&c.c.ts, X, n, t, NULL));
		free_write(w, &forged);
	}

	/* t+1 replies split by one vec entry, or by one foreign cc entry. */
	for (unsigned split = 0; split < 2; split++)
		for (unsigned j = 0; j < n; j++) {
			memset(W, 0, sizeof W);
			for (unsigned i = 0; i <= t; i++)
				reply_from(w, &c, i, &W[i]);
			if (split == 0) {
				W[t].vec[j][0] ^= 1;
			} else {
				if (j == t)
					continue;
				W[t].cc[j][0] ^= 1;
			}
			assert_true(W[t].frag_ok);
			assert_false(bft_safe(&c.c.ts, W, n, t, NULL));
			/* Undo it and the same set is safe. */
			reply_from(w, &c, t, &W[t]);
			assert_true(bft_safe(&c.c.ts, W, n, t, &q));
			assert_int_equal(q, (1u << (t + 1)) - 1);
		}
	/* frag_ok false or absent: excluded, though ts, cc, vec agree. */
	for (unsigned bad = 0; bad <= t; bad++) {
		memset(W, 0, sizeof W);
		for (unsigned i = 0; i <= t; i++)
			reply_from(w, &c, i, &W[i]);
		W[bad].frag_ok = false;
		assert_false(bft_safe(&c.c.ts, W, n, t, NULL));
		W[bad].frag_ok = true;
		W[bad].present = false;
		assert_false(bft_safe(&c.c.ts, W, n, t, NULL));
	}
	/* A fragment really corrupted in transit fails the client's check. */
	c.frags[0][w->flen / 3] ^= 0x10;
	reply_from(w, &c, 0, &W[0]);
	assert_false(W[0].frag_ok);
	c.frags[0][w->flen / 3] ^= 0x10;
	/*
	 * Mixed answers: holders 0, 2, ...; liars agreeing among
	 * themselves; one holder with a bad fragment; the rest absent.
	 * The quorum is exactly the agreeing correct holders.
	 */
	{
		uint32_t want = 0;

		make_forgery(w, 5, 1, &forged);
		memset(W, 0, sizeof W);
		for (unsigned i = 0, got = 0; i < n; i++) {
			if (i % 2 == 0 && got <= t) {
				reply_from(w, &c, i, &W[i]);
				want |= 1u << i;
				got++;
			} else if (i % 2 == 1 && i < 2 * t) {
				reply_from(w, &forged, i, &W[i]);
			} else if (i == n - 1 && !IN(want, i)) {
				reply_from(w, &c, i, &W[i]);
				W[i].frag_ok = false;
			}
		}
		assert_true(bft_safe(&c.c.ts, W, n, t, &q));
		assert_int_equal(q, want);
		assert_restores(w, &c, q);
		/* Entries past n are not part of the reply. */
		for (unsigned i = 0; i < n; i++)
			if (IN(want, i))
				bft_random(W[i].cc[n], sizeof W[i].cc[n]);
		assert_true(bft_safe(&c.c.ts, W, n, t, &q));
		assert_int_equal(q, want);
		/* Another ts, and an absent-only W, are not safe. */
		assert_false(bft_safe(&old.c.ts, W, n, t, NULL));
		memset(W, 0, sizeof W);
		assert_false(bft_safe(&c.c.ts, W, n, t, NULL));
		free_write(w, &forged);
	}
	free_write(w, &c);
	free_write(w, &old);
}

/* (e) Ties on num are broken by the writer id; the MAC takes no part. */
static void
test_ts_order(void **state)
{
	struct world *w = *state;
	unsigned n = w->n, t = w->t;
	struct bft_ts a = mkts(w, 5, 1), b = mkts(w, 5, 2), c = mkts(w, 6, 0);
	struct bft_ts z = { 0 }, a2 = a;
	struct bft_cand C[3];
	struct bft_reply W[BFT_MAX_N];

	assert_true(bft_ts_cmp(&a, &b) < 0 && bft_ts_cmp(&b, &a) > 0);
	assert_true(bft_ts_cmp(&b, &c) < 0 && bft_ts_cmp(&a, &c) < 0);
	assert_true(bft_ts_cmp(&z, &a) < 0);
	bft_random(a2.mac, sizeof a2.mac);
	assert_int_equal(bft_ts_cmp(&a, &a2), 0);
	assert_true(bft_ts_is_zero(&z));
	z.wid = 1;
	assert_false(bft_ts_is_zero(&z));
	z.wid = 0;
	z.num = 1;
	assert_false(bft_ts_is_zero(&z));
	/* The top of the range orders like any other value. */
	z.num = UINT64_MAX;
	z.wid = 0;
	a2.num = UINT64_MAX;
	a2.wid = UINT64_MAX;
	assert_true(bft_ts_cmp(&z, &a2) < 0 && bft_ts_cmp(&c, &z) < 0);

	memset(C, 0, sizeof C);
	C[0].ts = b;
	C[1].ts = a;
	assert_int_equal(bft_highest(C, 2), 0);
	assert_true(bft_highcand(&C[0], C, 2));
	assert_false(bft_highcand(&C[1], C, 2));
	C[2].ts = c;
	assert_int_equal(bft_highest(C, 3), 2);
	/* n-t replies at (5,1) make (5,2) invalid, but not (5,1) itself. */
	memset(W, 0, sizeof W);
	for (unsigned i = 0; i < n - t; i++) {
		W[i].present = true;
		W[i].ts = a;
	}
	assert_true(bft_invalid(&b, W, n, t));
	assert_false(bft_invalid(&a, W, n, t));
	assert_int_equal(bft_count_newer(&a, W, n), 0);
	for (unsigned i = 0; i < n - t; i++)
		W[i].ts = c;
	assert_false(bft_invalid(&b, W, n, t));
	assert_int_equal(bft_count_newer(&b, W, n), n - t);
	assert_int_equal(bft_count_newer(&c, W, n), 0);
	/* Absent replies count for nothing. */
	for (unsigned i = 0; i < n; i++)
		W[i].present = false;
	assert_int_equal(bft_count_newer(&a, W, n), 0);
	assert_false(bft_invalid(&c, W, n, t));
}

/* (f) Equal timestamps with different nonces are both highest. */
static void
test_highcand_ties(void **state)
{
	struct world *w = *state;
	struct bft_cand C[3];

	memset(C, 0, sizeof C);
	C[0].ts = mkts(w, 4, 1);
	C[1].ts = mkts(w, 7, 3);
	C[2].ts = C[1].ts;
	bft_random(C[1].nonce, BFT_NONCE_LEN);
	bft_random(C[2].nonce, BFT_NONCE_LEN);
	assert_false(bft_highcand(&C[0], C, 3));
	assert_true(bft_highcand(&C[1], C, 3));
	assert_true(bft_highcand(&C[2], C, 3));
	/* bft_highest names the first of equals. */
	assert_int_equal(bft_highest(C, 3), 1);
	C[0] = C[2];
	assert_int_equal(bft_highest(C, 3), 0);
	assert_int_equal(bft_highest(C, 0), -1);
	assert_int_equal(bft_highest(C, 1), 0);
	/* Vacuously highest in an empty set. */
	assert_true(bft_highcand(&C[0], C, 0));
}

/* (g) drop_invalid removes exactly the invalid ones, keeping order. */
static void
test_drop_invalid(void **state)
{
	struct world *w = *state;
	unsigned n = w->n, t = w->t;
	struct write a, b;
	struct bft_cand C[6], orig[6];
	struct bft_reply W[BFT_MAX_N];

	make_write(w, 5, 1, &a);
	make_write(w, 3, 1, &b);
	memset(C, 0, sizeof C);
	C[0] = a.c;
	bft_random(&C[1], sizeof C[1]);
	C[1].ts.num = 100;
	C[2] = b.c;
	bft_random(&C[3], sizeof C[3]);
	C[3].ts.num = 90;
	C[4] = a.c;
	bft_random(C[4].nonce, BFT_NONCE_LEN);
	C[5] = C[1];
	C[5].ts.num = 5;
	C[5].ts.wid = 2;	/* (5,2): just above a */
	memcpy(orig, C, sizeof C);
	memset(W, 0, sizeof W);
	/* n-t-1 replies at a.ts: nothing is invalid yet. */
	for (unsigned i = 0; i < n - t - 1; i++)
		reply_from(w, &a, i, &W[i]);
	assert_int_equal(bft_drop_invalid(C, 6, W, n, t), 6);
	assert_memory_equal(C, orig, sizeof C);
	reply_from(w, &a, n - 1, &W[n - 1]);
	assert_int_equal(bft_drop_invalid(C, 6, W, n, t), 3);
	assert_memory_equal(&C[0], &orig[0], sizeof C[0]);
	assert_memory_equal(&C[1], &orig[2], sizeof C[0]);
	assert_memory_equal(&C[2], &orig[4], sizeof C[0]);
	/* Idempotent, and nothing to do on an empty set. */
	assert_int_equal(bft_drop_invalid(C, 3, W, n, t), 3);
	assert_int_equal(bft_drop_invalid(C, 0, W, n, t), 0);
	/* Everything above ts0 is invalid once n-t servers answer c0. */
	memcpy(C, orig, sizeof C);
	for (unsigned i = 0; i < n; i++)
		reply_c0(&W[i]);
	W[0].present = false;
	assert_int_equal(bft_drop_invalid(C, 6, W, n, t), 0);
	free_write(w, &a);
	free_write(w, &b);
}

/*
 * Theorem A.20 played out: COLLECT gave C = {older, newer, forged}.  The
 * correct servers all hold Hist for both real writes and answer FILTER
 * through validByHist; the liars answer the forgery.  In every arrival
 * order the reader stops only on the newer write, restores it, and does
 * stop once every correct server has answered.
 */
static void
test_filter_rounds(void **state)
{
	struct world *w = *state;
	unsigned n = w->n, t = w->t, perm[BFT_MAX_N], runs = 0;
	struct write older, newer, forged;
	struct write *hist[2] = { &older, &newer };
	struct bft_cand C0[3];
	uint32_t byz = t == 1 ? 0x8u : 0x12u;

	make_write(w, 3, 1, &older);
	make_write(w, 4, 2, &newer);
	make_forgery(w, 1000, 5, &forged);
	C0[0] = older.c;
	C0[1] = newer.c;
	C0[2] = forged.c;
	for (unsigned i = 0; i < n; i++)
		perm[i] = i;
	for (;;) {
		struct bft_cand C[3];
		struct bft_reply W[BFT_MAX_N];
		unsigned nc = 3, got = 0, correct_got = 0;
		bool done = false;
		uint32_t q = 0;
		int h = -1;

		memcpy(C, C0, sizeof C);
		memset(W, 0, sizeof W);
		for (unsigned s = 0; s < n && !done; s++) {
			unsigned i = perm[s];

			if (IN(byz, i)) {
				reply_from(w, &forged, i, &W[i]);
			} else {
				server_filter(w, hist, 2, i, C0, 3, &W[i]);
				correct_got++;
			}
			got++;
			nc = bft_drop_invalid(C, nc, W, n, t);
			assert_true(nc > 0);
			h = bft_highest(C, nc);
			done = got >= n - t && bft_highcand(&C[h], C, nc) &&
			    bft_safe(&C[h].ts, W, n, t, &q);
			if (correct_got == n - t)
				assert_true(done);
		}
		assert_true(done);
		assert_memory_equal(&C[h], &newer.c, sizeof C[h]);
		assert_int_equal(q & byz, 0);
		if (runs % 97 == 0)
			assert_restores(w, &newer, q);
		runs++;
		/* Next permutation in lexicographic order. */
		{
			int k = (int)n - 2, l = (int)n - 1;
			unsigned tmp;

			while (k >= 0 && perm[k] > perm[k + 1])
				k--;
			if (k < 0)
				break;
			while (perm[l] < perm[k])
				l--;
			tmp = perm[k], perm[k] = perm[l], perm[l] = tmp;
			for (int a = k + 1, b = (int)n - 1; a < b; a++, b--)
				tmp = perm[a], perm[a] = perm[b], perm[b] = tmp;
		}
	}
	assert_int_equal(runs, n == 4 ? 24 : 5040);
	/* Case 2: only forgeries collected; correct servers answer c0. */
	{
		struct bft_cand C[1] = { forged.c };
		struct bft_reply W[BFT_MAX_N];
		unsigned nc = 1;

		memset(W, 0, sizeof W);
		for (unsigned i = 0; i < n; i++) {
			if (IN(byz, i))
				reply_from(w, &forged, i, &W[i]);
			else
				server_filter(w, hist, 2, i, C, 1, &W[i]);
			nc = bft_drop_invalid(C, nc, W, n, t);
		}
		assert_int_equal(nc, 0);
	}
	free_write(w, &older);
	free_write(w, &newer);
	free_write(w, &forged);
}

#define BOTH(f) \
	{ #f "/t=1", f, setup, teardown, &t_one }, \
	{ #f "/t=2", f, setup, teardown, &t_two }

int
main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_valid_by_hist),
		BOTH(test_valid_by_mac),
		BOTH(test_forged_candidate),
		BOTH(test_no_exclusion),
		BOTH(test_safe),
		BOTH(test_ts_order),
		BOTH(test_highcand_ties),
		BOTH(test_drop_invalid),
		BOTH(test_filter_rounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
