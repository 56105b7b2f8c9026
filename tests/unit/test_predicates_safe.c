/*
 * The M-PoWerStore predicates (Dobre et al., Algorithm 6) that pick what a
 * READ returns: safe, the timestamp order and highcand, and whole FILTER
 * rounds (Theorem A.20) with every possible set of t Byzantine servers.
 * The validity predicates are in test_predicates.c; the fixture is
 * predicates_fixture.h.
 */
#include "predicates_fixture.h"

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
	assert_int_equal(bft_highest(C, 0), -ENOENT);
	assert_int_equal(bft_highest(C, 1), 0);
	/* Vacuously highest in an empty set. */
	assert_true(bft_highcand(&C[0], C, 0));
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_safe),
		BOTH(test_ts_order),
		BOTH(test_highcand_ties),
		BOTH(test_filter_rounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
