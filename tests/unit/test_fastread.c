/*
 * bft_fast_read(), the 1-round READ's decision, for t = 1 and t = 2 on
 * inputs built as the protocol builds them: a signed timestamp, a real
 * nonce, erasure-coded fragments and their cross-checksum.  Besides the
 * normal cases, every attack is played with every set of t Byzantine
 * servers, and a YES must always decode to the honest block.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>


#include "fastread_fixture.h"

static void
test_honest(void **state)
{
	struct fx *f = *state;
	uint32_t have;
	int pick;

	/* Exactly n-t answers, the data servers among them. */
	answers(f, (1u << (f->n - f->t)) - 1);
	assert_int_equal(decide(f, &pick, &have), BFT_FAST_YES);
	assert_int_equal(have, f->want);
	assert_yes_is_honest(f, pick, have);
	/* All n. */
	answers(f, all(f));
	assert_int_equal(decide(f, &pick, &have), BFT_FAST_YES);
	assert_yes_is_honest(f, pick, have);
}

static void
test_too_few_answers(void **state)
{
	struct fx *f = *state;
	uint32_t have;
	int pick;

	/* n-t-1 answers: more may come, so wait; if none can, give up. */
	answers(f, (1u << (f->n - f->t - 1)) - 1);
	assert_int_equal(decide(f, &pick, &have), BFT_FAST_WAIT);
	assert_int_equal(bft_fast_read(f->A, f->n, f->t, 0, f->want, FBLOCK, &f->wk,
	    &pick, &have), BFT_FAST_NO);
	answers(f, 0);
	assert_int_equal(decide(f, &pick, &have), BFT_FAST_WAIT);
	assert_int_equal(pick, -1);
}

static void
test_zero_ts(void **state)
{
	struct fx *f = *state;
	uint32_t have;
	int pick;

	/* Never written: n-t answers of c0 are not a candidate. */
	answers(f, (1u << (f->n - f->t)) - 1);
	for (unsigned i = 0; i < f->n; i++) {
		memset(&f->A[i].lc, 0, sizeof f->A[i].lc);
		f->A[i].has_cc = f->A[i].has_frag = false;
	}
	assert_int_equal(bft_fast_read(f->A, f->n, f->t, 0, f->want, FBLOCK, &f->wk,
	    &pick, &have), BFT_FAST_NO);
	/* A zero ts with the real rest of c, fragments and cc, too. */
	answers(f, all(f));
	for (unsigned i = 0; i < f->n; i++)
		memset(&f->A[i].lc.ts, 0, sizeof f->A[i].lc.ts);
	assert_int_equal(decide(f, &pick, &have), BFT_FAST_NO);
}

static void
test_unsigned_candidate(void **state)
{
	struct fx *f = *state;
	uint32_t have;
	int pick;

	answers(f, all(f));
	for (unsigned i = 0; i < f->n; i++)
		f->A[i].lc.ts.mac[3] ^= 1;
	assert_int_equal(decide(f, &pick, &have), BFT_FAST_NO);
}

/* A higher candidate: unsigned, or genuine ts with a made-up nonce. */
static void
forge_higher(struct fx *f, uint32_t liars, int genuine_ts)
{
	for (unsigned i = 0; i < f->n; i++) {
		struct bft_collect_reply *a = &f->A[i];

		if (!(liars & (1u << i)))
			continue;
		a->lc.ts.num = f->c.ts.num + 100;
		if (genuine_ts)
			bft_ts_sign(&a->lc.ts, FBLOCK, f->kw);
		bft_random(a->lc.nonce, sizeof a->lc.nonce);
		/* The same lie from all, with cc and fragments that fit it. */
		memset(a->lc.nonce, 0x5a, sizeof a->lc.nonce);
		memset(a->cc, 0xa5, sizeof a->cc);
		memset(a->fh, 0xa5, sizeof a->fh);
		a->has_cc = a->has_frag = true;
	}
}

static void
forged_candidate_case(struct fx *f, uint32_t liars)
{
	uint32_t have, quorum;
	int pick;

	for (int genuine = 0; genuine < 2; genuine++) {
		/* n-t answers with the liars among them: only n-2t honest. */
		for (uint32_t q = 0; q <= all(f); q++) {
			if (__builtin_popcount(q) != (int)(f->n - f->t) ||
			    (q & liars) != liars)
				continue;
			answers(f, q);
			forge_higher(f, liars, genuine);
			assert_int_equal(bft_fast_read(f->A, f->n, f->t, 0,
			    f->want, FBLOCK, &f->wk, &pick, &have), BFT_FAST_NO);
			assert_int_equal(decide(f, &pick, &have),
			    BFT_FAST_WAIT);
		}
		/* All n: the n-t honest answers carry the day. */
		answers(f, all(f));
		forge_higher(f, liars, genuine);
		quorum = all(f) & ~liars;
		if ((quorum & f->want) == f->want) {
			assert_int_equal(decide(f, &pick, &have),
			    BFT_FAST_YES);
			assert_yes_is_honest(f, pick, have);
		} else {
			/* A liar holds a wanted fragment: too few left. */
			assert_int_equal(decide(f, &pick, &have), BFT_FAST_NO);
			assert_true(pick >= 0);
			assert_int_equal(have & liars, 0);
		}
	}
}

static void
test_forged_higher_candidate(void **state)
{
	each_liar_set(*state, forged_candidate_case);
}

/* Liars send c, but fragments flipped (corrupt) or forged (bad cc). */
static void
bad_fragment_case(struct fx *f, uint32_t liars)
{
	uint32_t have, want = f->want;
	int pick;

	for (int kind = 0; kind < 4; kind++) {
		/*
		 * Everyone asked for a fragment (any t+1 good ones do), or
		 * only the data servers (a liar among them spoils it).
		 */
		f->want = kind < 2 ? all(f) : want;
		answers(f, all(f));
		for (unsigned i = 0; i < f->n; i++) {
			if (!(liars & (1u << i)) || !f->A[i].has_frag)
				continue;
			f->A[i].fh[i % BFT_HASH_LEN] ^= 1;
			if (kind % 2)	/* bad-checksum: own entry matches */
				memcpy(f->A[i].cc[i], f->A[i].fh, BFT_HASH_LEN);
		}
		if (kind < 2 || !(liars & want)) {
			assert_int_equal(decide(f, &pick, &have),
			    BFT_FAST_YES);
			assert_int_equal(have & liars, 0);
			assert_yes_is_honest(f, pick, have);
			continue;
		}
		assert_int_equal(decide(f, &pick, &have), BFT_FAST_NO);
		/* The caller may blame exactly the liars asked. */
		assert_true(pick >= 0);
		assert_int_equal(want & ~have, liars & want);
	}
	f->want = want;
}

static void
test_bad_fragment(void **state)
{
	each_liar_set(*state, bad_fragment_case);
}

/*
 * t colluders agree on a forged cc with fragments that match it, while
 * the honest servers' cc are too few (Hist missing at some): neither
 * cc reaches t+1, and the forged one must never be used.
 */
static void
colluders_case(struct fx *f, uint32_t liars)
{
	uint32_t have, honest_cc = 0;
	int pick;

	answers(f, all(f));
	for (unsigned i = 0; i < f->n; i++) {
		struct bft_collect_reply *a = &f->A[i];

		if (liars & (1u << i)) {
			memset(a->cc, 0xc3, sizeof a->cc);
			memset(a->fh, 0xc3, sizeof a->fh);
			a->has_frag = true;
		} else if (__builtin_popcount(honest_cc) < (int)f->t) {
			honest_cc |= 1u << i;	/* only t keep their cc */
		} else {
			a->has_cc = false;	/* lc by write-back, no Hist */
			a->has_frag = false;
		}
	}
	assert_int_equal(decide(f, &pick, &have), BFT_FAST_NO);
	assert_int_equal(pick, -1);
	/* One more honest cc and it is the honest one that counts. */
	for (unsigned i = 0; i < f->n; i++)
		if (!(liars & (1u << i)) && !(honest_cc & (1u << i))) {
			honest(f, i);
			break;
		}
	if (decide(f, &pick, &have) == BFT_FAST_YES)
		assert_yes_is_honest(f, pick, have);
	else
		assert_true(pick < 0 ||
		    memcmp(f->A[pick].cc, f->cc, sizeof f->cc) == 0);
}

static void
test_colluding_cc(void **state)
{
	each_liar_set(*state, colluders_case);
}

/* A write in progress: some servers already completed a newer c'. */
static void
test_mixed_candidates(void **state)
{
	struct fx *f = *state;
	uint32_t have;
	int pick;

	answers(f, all(f));
	/* t+1 newer, 2t older: no n-t agree, with nothing pending. */
	for (unsigned i = 0; i <= f->t; i++) {
		f->A[i].lc.ts.num++;
		bft_ts_sign(&f->A[i].lc.ts, FBLOCK, f->kw);
	}
	assert_int_equal(decide(f, &pick, &have), BFT_FAST_NO);
	/* Only the 2t older answers so far: one more could make n-t. */
	answers(f, all(f) & ~((1u << (f->t + 1)) - 1));
	assert_int_equal(decide(f, &pick, &have), BFT_FAST_WAIT);
	/* Same ts, different nonce: another candidate, not the same one. */
	answers(f, all(f));
	for (unsigned i = 0; i <= f->t; i++)
		f->A[i].lc.nonce[0] ^= 1;
	assert_int_equal(decide(f, &pick, &have), BFT_FAST_NO);
	/* Same ts and nonce, a different vec: also not the same. */
	answers(f, all(f));
	for (unsigned i = 0; i <= f->t; i++)
		f->A[i].lc.vec[f->n - 1][0] ^= 1;
	assert_int_equal(decide(f, &pick, &have), BFT_FAST_NO);
}

static void
test_missing_data_fragment(void **state)
{
	struct fx *f = *state;
	uint32_t have;
	int pick;

	/* Data server 0 has not answered yet: wait for it. */
	answers(f, all(f) & ~1u);
	assert_int_equal(decide(f, &pick, &have), BFT_FAST_WAIT);
	assert_true(pick >= 0);
	/* It answered c, but without its fragment (Hist unreadable). */
	honest(f, 0);
	f->A[0].has_frag = false;
	assert_int_equal(decide(f, &pick, &have), BFT_FAST_NO);
	assert_int_equal(have, f->want & ~1u);
	/* Its fragment has the wrong length: the plugin drops it. */
	honest(f, 0);
	f->A[0].has_cc = false;
	f->A[0].has_frag = false;
	assert_int_equal(decide(f, &pick, &have), BFT_FAST_NO);
}

/*
 * A server reading from its peers has no k_W: a candidate is a writer's
 * when its MAC vector's entry for that server verifies over (ts, H(N))
 * under the server's own key.  The honest candidate passes; the same
 * candidate with another nonce, sent by every replier alike, does not,
 * nor one whose entry is another server's; a read-only reader (no key at
 * all) never reads in one round.
 */
static void
test_peer_key(void **state)
{
	struct fx *f = *state;
	uint8_t ki[BFT_KEY_LEN], nh[BFT_HASH_LEN];
	unsigned self = f->n - 1;
	struct bft_written_key wk = { NULL, ki, self, NULL, NULL };
	uint32_t have;
	int pick;

	bft_random(ki, sizeof ki);
	bft_hash(f->c.nonce, BFT_NONCE_LEN, nh);
	bft_vec_mac(&f->c.ts, FBLOCK, nh, ki, f->c.vec[self]);
	answers(f, all(f) & ~(1u << self));
	assert_true(bft_cand_written(&f->c, FBLOCK, &wk));
	assert_int_equal(bft_fast_read(f->A, f->n, f->t, 0, f->want, FBLOCK, &wk,
	    &pick, &have), BFT_FAST_YES);
	assert_yes_is_honest(f, pick, have);

	for (unsigned i = 0; i < f->n; i++)
		f->A[i].lc.nonce[0] ^= 1;
	assert_int_equal(bft_fast_read(f->A, f->n, f->t, 0, f->want, FBLOCK, &wk,
	    &pick, &have), BFT_FAST_NO);
	for (unsigned i = 0; i < f->n; i++)
		f->A[i].lc.nonce[0] ^= 1;
	wk.self = 0;
	assert_int_equal(bft_fast_read(f->A, f->n, f->t, 0, f->want, FBLOCK, &wk,
	    &pick, &have), BFT_FAST_NO);
	wk.ki = NULL;
	assert_false(bft_cand_written(&f->c, FBLOCK, &wk));
	assert_int_equal(bft_fast_read(f->A, f->n, f->t, 0, f->want, FBLOCK, &wk,
	    &pick, &have), BFT_FAST_NO);
}

/*
 * The zero value (trim): its cross-checksum is H() of nothing in every
 * entry, and no fragment exists.  It is not a mix: one coded entry
 * makes a cc that is not the zero value's.
 */
static void
test_zero_cc(void **state)
{
	struct fx *f = *state;
	uint8_t cc[BFT_MAX_N][BFT_HASH_LEN], h[BFT_HASH_LEN];

	bft_cc_set_zero(cc, f->n);
	bft_hash("", 0, h);
	for (unsigned i = 0; i < f->n; i++)
		assert_memory_equal(cc[i], h, BFT_HASH_LEN);
	assert_true(bft_cc_is_zero(cc, f->n));
	assert_false(bft_cc_is_zero(cc, 0));
	assert_false(bft_cc_is_zero(f->cc, f->n));
	for (unsigned i = 0; i < f->n; i++) {
		memcpy(cc[i], f->cc[i], BFT_HASH_LEN);
		assert_false(bft_cc_is_zero(cc, f->n));
		memcpy(cc[i], h, BFT_HASH_LEN);
	}
}

/* Every server holds the zero value: one round, no fragment needed. */
static void
test_zero_value(void **state)
{
	struct fx *f = *state;
	uint32_t have;
	int pick;

	bft_cc_set_zero(f->cc, f->n);
	answers(f, all(f));
	for (unsigned i = 0; i < f->n; i++)
		f->A[i].has_frag = false;
	assert_int_equal(decide(f, &pick, &have), BFT_FAST_YES);
	assert_true(pick >= 0);
	assert_true(bft_cc_is_zero(f->A[pick].cc, f->n));
	assert_int_equal(have, 0);
	/* t+1 of n-t agreeing on it are enough, like any cc. */
	answers(f, all(f) & ~(1u << (f->n - 1)));
	assert_int_equal(decide(f, &pick, &have), BFT_FAST_YES);
}

/*
 * t liars claim that a written block was trimmed: the zero value's cc
 * with the genuine candidate.  They are t, the zero cc needs t+1, and a
 * YES must still decode the honest block.
 */
static void
zero_lie_case(struct fx *f, uint32_t liars)
{
	uint32_t have;
	int pick;

	for (uint32_t q = 0; q <= all(f); q++) {
		enum bft_fast_verdict v;

		if (__builtin_popcount(q) < (int)(f->n - f->t) ||
		    (q & liars) != liars)
			continue;
		answers(f, q);
		for (unsigned i = 0; i < f->n; i++)
			if (liars & (1u << i)) {
				bft_cc_set_zero(f->A[i].cc, f->n);
				f->A[i].has_frag = false;
			}
		v = decide(f, &pick, &have);
		assert_true(pick < 0 || !bft_cc_is_zero(f->A[pick].cc, f->n));
		if (v == BFT_FAST_YES)
			assert_yes_is_honest(f, pick, have);
	}
}

static void
test_zero_lie(void **state)
{
	each_liar_set(*state, zero_lie_case);
}

int
main(void)
{

#define BOTH(fn) \
	cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown, &t_one), \
	cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown, &t_two)
	const struct CMUnitTest tests[] = {
		BOTH(test_honest),
		BOTH(test_too_few_answers),
		BOTH(test_zero_ts),
		BOTH(test_unsigned_candidate),
		BOTH(test_forged_higher_candidate),
		BOTH(test_bad_fragment),
		BOTH(test_colluding_cc),
		BOTH(test_mixed_candidates),
		BOTH(test_missing_data_fragment),
		BOTH(test_peer_key),
		BOTH(test_zero_cc),
		BOTH(test_zero_value),
		BOTH(test_zero_lie),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
