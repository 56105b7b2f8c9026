/*
 * The M-PoWerStore predicates (Dobre et al., Algorithms 5 and 6) for
 * t = 1 and t = 2, on inputs built the way the protocol builds them:
 * timestamps signed with k_W, MAC vectors made with each server's key,
 * cross-checksums of real erasure-coded fragments.  Besides the normal
 * cases, each adversarial case below is one step of a proof in the
 * paper's appendix (Lemmas A.15, A.16, Theorem A.20) played with every
 * possible set of t Byzantine servers.
 */
#include "predicates_fixture.h"

/*
 * Here the validity family: valid, validByHist and invalid.  safe,
 * highcand and whole FILTER rounds (Theorem A.20) are in
 * test_predicates_safe.c; the fixture is predicates_fixture.h.
 */

/* bft_valid with one epoch's key ki, as outside a rotation. */
static bool
valid(const struct bft_cand *c, const struct bft_hist_meta *h,
    uint64_t block, unsigned i, const uint8_t *ki)
{
	return bft_valid(c, h, block, i, &(struct bft_mac_keys){ ki, NULL });
}

/*
 * During a MAC key rotation (docs/key-epochs.md) a server accepts its
 * entry under either epoch's key, and nothing under a key it does not
 * hold: a write signed under the next epoch is valid at a server that
 * took the next key, refused by one that did not, and the old epoch's
 * writes stay valid beside it.  Another server's key of either epoch
 * proves nothing.
 */
static void
test_valid_epochs(void **state)
{
	struct world *w = *state;
	struct write a;
	uint8_t next[BFT_MAX_N][BFT_KEY_LEN];
	uint8_t nh[BFT_HASH_LEN];
	struct bft_cand c;

	bft_random(next, sizeof next);
	make_write(w, 5, 1, &a);
	c = a.c;
	bft_hash(c.nonce, BFT_NONCE_LEN, nh);
	for (unsigned i = 0; i < w->n; i++)
		bft_vec_mac(&c.ts, w->block, nh, next[i], c.vec[i]);
	for (unsigned i = 0; i < w->n; i++) {
		struct bft_mac_keys both = { w->k[i], next[i] };
		struct bft_mac_keys swapped = { next[i], w->k[i] };
		struct bft_mac_keys other = { w->k[i],
		    next[(i + 1) % w->n] };

		assert_true(bft_valid(&c, NULL, w->block, i, &both));
		assert_true(bft_valid(&c, NULL, w->block, i, &swapped));
		assert_true(bft_valid(&a.c, NULL, w->block, i, &both));
		assert_true(bft_valid(&a.c, NULL, w->block, i, &swapped));
		/* Not yet holding the next key: refused. */
		assert_false(valid(&c, NULL, w->block, i, w->k[i]));
		assert_false(bft_valid(&c, NULL, w->block, i, &other));
		/* Retired: the old epoch's write is refused. */
		assert_false(valid(&a.c, NULL, w->block, i, next[i]));
		/* ... and its Hist entry backs it no more. */
		assert_true(bft_valid(&a.c, &a.h, w->block, i, &both));
		assert_false(valid(&a.c, &a.h, w->block, i, next[i]));
	}
	free_write(w, &a);
}

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
			assert_false(valid(&c, &a.h, w->block, i, w->k[i]));
	}
	/* valid() through the history ignores a garbage vector. */
	c = a.c;
	bft_random(c.vec, sizeof c.vec);
	for (unsigned i = 0; i < w->n; i++)
		assert_true(valid(&c, &a.h, w->block, i, w->k[i]));
	/* The zero timestamp is never valid, even with a matching entry. */
	memset(&c.ts, 0, sizeof c.ts);
	h = a.h;
	memset(&h.ts, 0, sizeof h.ts);
	assert_true(bft_valid_by_hist(&c, &h));
	assert_false(valid(&c, &h, w->block, 0, w->k[0]));
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
		assert_true(valid(&a.c, NULL, w->block, i, w->k[i]));
		for (unsigned j = 0; j < w->n; j++)
			if (j != i)
				assert_false(valid(&a.c, NULL, w->block, i,
				    w->k[j]));
		/* (d) only vec[i] is right: valid at i alone. */
		c = a.c;
		bft_random(c.vec, sizeof c.vec);
		memcpy(c.vec[i], a.c.vec[i], BFT_MAC_LEN);
		for (unsigned j = 0; j < w->n; j++)
			assert_true(valid(&c, NULL, w->block, j, w->k[j]) == (i == j));
		/* vec[i] copied to every slot still proves nothing to j. */
		for (unsigned j = 0; j < w->n; j++)
			memcpy(c.vec[j], a.c.vec[i], BFT_MAC_LEN);
		for (unsigned j = 0; j < w->n; j++)
			assert_true(valid(&c, NULL, w->block, j, w->k[j]) == (i == j));
	}
	/* The MAC binds H(N) and the whole (num, wid). */
	c = a.c;
	c.nonce[0] ^= 1;
	assert_false(valid(&c, NULL, w->block, 0, w->k[0]));
	c = a.c;
	c.ts.wid = 2;
	assert_false(valid(&c, NULL, w->block, 0, w->k[0]));
	c = a.c;
	c.ts.num = 6;
	assert_false(valid(&c, NULL, w->block, 0, w->k[0]));
	/* A correct MAC over the zero timestamp does not make it valid. */
	memset(&c, 0, sizeof c);
	bft_random(c.nonce, BFT_NONCE_LEN);
	bft_hash(c.nonce, BFT_NONCE_LEN, nh);
	bft_vec_mac(&c.ts, w->block, nh, w->k[0], c.vec[0]);
	assert_false(valid(&c, NULL, w->block, 0, w->k[0]));
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
		assert_false(valid(hc, NULL, w->block, BFT_MAX_N - 1, w->k[0]));
		assert_false(valid(hc, NULL, w->block, BFT_MAX_N, w->k[0]));
		assert_false(valid(hc, NULL, w->block, ~0u, w->k[0]));
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
					bft_vec_mac(&forged.c.ts, w->block, nh, w->k[b],
					    forged.c.vec[i]);
				assert_true(valid(&forged.c, NULL, w->block, b,
				    w->k[b]));
			}
			for (unsigned i = 0; i < n; i++) {
				if (IN(byz, i))
					continue;
				assert_false(valid(&forged.c, NULL, w->block, i,
				    w->k[i]));
				assert_false(valid(&forged.c, &real.h, w->block, i,
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
 * Lease generations (proto.h, predicates.h).  A newer holder's write
 * orders after every write of an older one; an older holder is fenced
 * by any newer claim; t liars crying EFENCED prove nothing; the ends of
 * the number space fail instead of wrapping into another generation.
 */
static void
test_fencing(void **state)
{
	struct bft_ts old = { .num = bft_gen_floor(3) + 7, .wid = 1 };
	struct bft_ts top = { .num = bft_gen_floor(4) + 1, .wid = 9 };
	struct bft_ts zero = { 0 };
	struct bft_ts last = { .num = bft_gen_floor(BFT_GEN_MAX) + 1 };

	(void)state;
	assert_true(bft_fenced(&old, &top));
	assert_false(bft_fenced(&top, &old));
	assert_false(bft_fenced(&top, &top));
	/* The same generation, a lower num: a renewal, never fenced. */
	old.num = bft_gen_floor(4);
	assert_false(bft_fenced(&old, &top));
	/* Data written before generations is generation 0: never fenced. */
	assert_false(bft_fenced(&zero, &zero));
	old.num = 5;
	assert_true(bft_fenced(&old, &top));

	/* A new holder jumps to its floor, then counts within it. */
	assert_int_equal(bft_write_num(5, 0), 6);
	assert_int_equal(bft_write_num(5, 2), bft_gen_floor(2) + 1);
	assert_int_equal(bft_write_num(bft_gen_floor(2) + 1, 2),
	    bft_gen_floor(2) + 2);
	assert_true(bft_write_num(bft_gen_floor(9), 2) == 0);
	/* The generation's last num is used up, not wrapped to gen + 1. */
	assert_true(bft_write_num(bft_gen_floor(3) - 1, 2) == 0);
	assert_true(bft_write_num(bft_gen_floor(3) - 2, 2) ==
	    bft_gen_floor(3) - 1);
	assert_true(bft_write_num(UINT64_MAX - 1, BFT_GEN_MAX) ==
	    UINT64_MAX);
	assert_true(bft_write_num(UINT64_MAX, BFT_GEN_MAX) == 0);

	assert_int_equal(bft_next_gen(&zero), 1);
	assert_int_equal(bft_next_gen(&top), 5);
	assert_int_equal(bft_next_gen(&last), 0);

	/* t = 1: one server's EFENCED may be a lie, two include a truth. */
	assert_false(bft_fenced_proven(0, 1));
	assert_false(bft_fenced_proven(1u << 3, 1));
	assert_true(bft_fenced_proven(1u << 3 | 1u << 0, 1));
	assert_false(bft_fenced_proven(0x3, 2));
	assert_true(bft_fenced_proven(0x7, 2));
}

/*
 * One writer per generation of the admin lock's register, and only of
 * that register: same generation and another writer id refused; the
 * same writer (a renewal), another generation, an empty register and
 * any other register not.
 */
static void
test_lock_claim_refused(void **state)
{
	uint64_t lock = bft_fence_addr(bft_addr(BFT_VOL_TABLE, 0));
	struct bft_ts held = { .num = bft_gen_floor(5) + 1, .wid = 7 };
	struct bft_ts rival = { .num = bft_gen_floor(5) + 9, .wid = 8 };
	struct bft_ts renew = { .num = bft_gen_floor(5) + 2, .wid = 7 };
	struct bft_ts next = { .num = bft_gen_floor(6) + 1, .wid = 8 };
	struct bft_ts lower = { .num = bft_gen_floor(4) + 1, .wid = 8 };
	struct bft_ts none = { 0 };

	(void)state;
	assert_true(bft_is_lock_register(lock));
	assert_false(bft_is_lock_register(bft_addr(BFT_VOL_LEASES, 9)));
	assert_true(bft_lock_claim_refused(lock, &held, &rival));
	assert_false(bft_lock_claim_refused(lock, &held, &renew));
	assert_false(bft_lock_claim_refused(lock, &held, &next));
	/* Below: the lease fence's business, not this rule's. */
	assert_false(bft_lock_claim_refused(lock, &held, &lower));
	assert_false(bft_lock_claim_refused(lock, &none, &rival));
	assert_false(bft_lock_claim_refused(bft_addr(BFT_VOL_LEASES, 9),
	    &held, &rival));
	assert_false(bft_lock_claim_refused(bft_addr(BFT_VOL_TABLE, 0),
	    &held, &rival));

}

/*
 * Snapshot views: the boundary is the newest claim's generation, and a
 * view admits exactly the versions of generation at most its boundary,
 * whatever a liar puts in the rest of the timestamp.
 */
static void
test_snapshot_views(void **state)
{
	struct bft_ts zero = { 0 };
	struct bft_ts claim = { .num = bft_gen_floor(6) + 12, .wid = 3 };
	struct bft_ts head = { .num = bft_gen_floor(7) + 1, .wid = 1 };
	struct bft_ts old = { .num = bft_gen_floor(6) + 99999, .wid = 1 };
	struct bft_ts legacy = { .num = 77, .wid = 1 };
	struct bft_ts last = { .num = UINT64_MAX, .wid = UINT64_MAX };
	uint64_t g;

	(void)state;
	/* A volume never leased: its writes are generation 0. */
	assert_int_equal(bft_snap_boundary(&zero), 0);
	assert_true(bft_view_admits(&legacy, bft_snap_boundary(&zero)));
	assert_false(bft_view_admits(&head, 0));

	g = bft_snap_boundary(&claim);
	assert_int_equal(g, 6);
	/* The re-asserted claim's generation fences g and below. */
	assert_int_equal(bft_next_gen(&claim), 7);
	assert_true(bft_fenced(&old, &head));

	assert_true(bft_view_admits(&zero, g));
	assert_true(bft_view_admits(&legacy, g));
	assert_true(bft_view_admits(&old, g));
	/* The first write after the cut, and anything above it: never. */
	assert_false(bft_view_admits(&head, g));
	assert_false(bft_view_admits(&last, g));
	/* The highest num of generation g, and the lowest of g + 1. */
	old.num = bft_gen_floor(7) - 1;
	assert_true(bft_view_admits(&old, g));
	old.num = bft_gen_floor(7);
	assert_false(bft_view_admits(&old, g));
	/* wid and MAC take no part: a liar's wid cannot move a version. */
	head.wid = 0;
	memset(head.mac, 0xff, sizeof head.mac);
	assert_false(bft_view_admits(&head, g));
	/* The top generation's boundary admits everything. */
	assert_true(bft_view_admits(&last, BFT_GEN_MAX));

	/* Where a server answers from. */
	assert_int_equal(bft_view_src(&zero, false, g), BFT_VIEW_LIVE);
	assert_int_equal(bft_view_src(&claim, false, g), BFT_VIEW_LIVE);
	assert_int_equal(bft_view_src(&claim, true, g), BFT_VIEW_LIVE);
	assert_int_equal(bft_view_src(&head, true, g), BFT_VIEW_KEPT);
	/* Overwritten before the boundary reached it: not c0, unknown. */
	assert_int_equal(bft_view_src(&head, false, g), BFT_VIEW_UNKNOWN);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fencing),
		cmocka_unit_test(test_lock_claim_refused),
		cmocka_unit_test(test_snapshot_views),
		BOTH(test_valid_by_hist),
		BOTH(test_valid_by_mac),
		BOTH(test_forged_candidate),
		BOTH(test_no_exclusion),
		BOTH(test_drop_invalid),
		BOTH(test_valid_epochs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
