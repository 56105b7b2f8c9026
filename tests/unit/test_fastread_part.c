/*
 * bft_fast_read_part(), the 1-round READ of the bytes one data fragment
 * holds (lib/op_read_fast.c), for t = 1 and t = 2, each data fragment
 * in turn.  Its candidate and cc rules are the whole read's; it counts
 * that one fragment, and only if it hashes to the agreed cc.  A YES
 * must always name the honest candidate and cc, and the fragment's
 * payload must be the honest block's bytes, whatever t liars sent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fastread_fixture.h"

/* The verdict for part d, with every server not in A pending. */
static enum bft_fast_verdict
decide_part(struct fx *f, unsigned d, bool wait_for_more, int *pick,
    uint32_t *have)
{
	uint32_t pending = 0;

	if (wait_for_more)
		for (unsigned i = 0; i < f->n; i++)
			if (!f->A[i].present)
				pending |= 1u << i;
	return bft_fast_read_part(f->A, f->n, f->t, pending, f->want, FBLOCK,
	    &f->wk, d, pick, have);
}

/*
 * A YES for part d: the honest candidate and cc, fragment d alone, and
 * its payload, placed, the block's bytes of that part.
 */
static void
assert_part_is_honest(struct fx *f, unsigned d, int pick, uint32_t have)
{
	static uint8_t value[BFT_BLOCK_SIZE], hdr[BFT_BLOCK_SIZE];
	uint32_t payload = bft_ec_payload(f->ec);
	int frag;

	assert_true(pick >= 0 && (unsigned)pick < f->n);
	assert_memory_equal(&f->A[pick].lc, &f->c, sizeof f->c);
	assert_memory_equal(f->A[pick].cc, f->cc, sizeof f->cc);
	assert_int_equal(have, 1u << d);
	frag = bft_ec_data_frag(f->ec, d * payload, payload);
	assert_int_equal(frag, (int)d);
	memset(value, 0, sizeof value);
	assert_int_equal(bft_ec_place(f->ec, d, f->frags[d], hdr, value), 0);
	assert_memory_equal(value + (size_t)d * payload,
	    f->block + (size_t)d * payload, payload);
}

/*
 * Whether data fragment d holds a part alone: not a padded last one
 * (t = 2: 64 KiB in three payloads).
 */
static bool
part_exists(const struct fx *f, unsigned d)
{
	return bft_ec_data_frag(f->ec, d * bft_ec_payload(f->ec), 1) ==
	    (int)d;
}

/* Only d is asked for its fragment, as a part read asks. */
static void
ask_only(struct fx *f, unsigned d)
{
	f->want = 1u << d;
	answers(f, all(f));
}

static void
test_part_honest(void **state)
{
	struct fx *f = *state;
	uint32_t have;
	int pick;

	for (unsigned d = 0; d <= f->t; d++) {
		if (!part_exists(f, d))
			continue;
		/* n-t answers with d among them are enough. */
		f->want = 1u << d;
		answers(f, ((1u << (f->n - f->t)) - 1) | (1u << d));
		assert_int_equal(decide_part(f, d, true, &pick, &have),
		    BFT_FAST_YES);
		assert_part_is_honest(f, d, pick, have);
		/* n-t answers without d: wait for d, or give up. */
		answers(f, all(f) & ~(1u << d));
		assert_int_equal(decide_part(f, d, true, &pick, &have),
		    BFT_FAST_WAIT);
		assert_int_equal(decide_part(f, d, false, &pick, &have),
		    BFT_FAST_NO);
	}
}

/*
 * Another server's good fragment is not d's: it cannot stand in for it,
 * although the whole read would take any t+1.
 */
static void
test_part_other_fragment(void **state)
{
	struct fx *f = *state;
	uint32_t have;
	int pick;

	for (unsigned d = 0; d <= f->t; d++) {
		f->want = all(f);
		answers(f, all(f));
		f->A[d].has_frag = false;
		assert_int_equal(decide_part(f, d, false, &pick, &have),
		    BFT_FAST_NO);
		assert_int_equal(have, 0);
	}
	assert_int_equal(bft_fast_read_part(f->A, f->n, f->t, 0, f->want,
	    FBLOCK, &f->wk, f->n, &pick, &have), BFT_FAST_NO);
}

/*
 * The liars are d and t-1 others: d sends a corrupt fragment, or one
 * that fits a cc the liars made up, with the liars' cc changed to fit.
 * Never YES: d's fragment is the only one that counts and it is not
 * the writer's.
 */
static void
liar_part_case(struct fx *f, uint32_t liars)
{
	uint32_t have;
	int pick;

	for (unsigned d = 0; d <= f->t; d++) {
		if (!(liars & (1u << d)))
			continue;
		for (int forged_cc = 0; forged_cc < 2; forged_cc++) {
			ask_only(f, d);
			for (unsigned i = 0; i < f->n; i++) {
				struct bft_collect_reply *a = &f->A[i];

				if (!(liars & (1u << i)))
					continue;
				if (forged_cc) {
					memset(a->cc, 0x3c, sizeof a->cc);
					memset(a->fh, 0x3c, sizeof a->fh);
				} else if (i == d) {
					a->fh[0] ^= 1;
				}
			}
			assert_int_equal(decide_part(f, d, false, &pick,
			    &have), BFT_FAST_NO);
			assert_int_equal(have, 0);
		}
	}
}

static void
test_part_liar_fragment(void **state)
{
	each_liar_set(*state, liar_part_case);
}

/*
 * d honest, the liars (not d) answer a higher forged candidate or a cc
 * of their own: with all n in, the honest n-t decide, and a YES is the
 * honest part; with only n-t in and the liars among them, no YES.
 */
static void
honest_part_case(struct fx *f, uint32_t liars)
{
	uint32_t have;
	int pick;
	enum bft_fast_verdict v;

	for (unsigned d = 0; d <= f->t; d++) {
		if ((liars & (1u << d)) || !part_exists(f, d))
			continue;
		ask_only(f, d);
		for (unsigned i = 0; i < f->n; i++)
			if (liars & (1u << i)) {
				f->A[i].lc.ts.num = f->c.ts.num + 100;
				bft_ts_sign(&f->A[i].lc.ts, FBLOCK, f->kw);
				memset(f->A[i].cc, 0xa5, sizeof f->A[i].cc);
			}
		v = decide_part(f, d, false, &pick, &have);
		assert_int_equal(v, BFT_FAST_YES);
		assert_part_is_honest(f, d, pick, have);
		/* n-t answers, the liars in them: n-2t honest, too few. */
		for (unsigned i = 0, dropped = 0; i < f->n && dropped < f->t;
		    i++)
			if (!(liars & (1u << i)) && i != d) {
				f->A[i].present = false;
				dropped++;
			}
		v = decide_part(f, d, true, &pick, &have);
		assert_true(v != BFT_FAST_YES);
	}
}

static void
test_part_honest_among_liars(void **state)
{
	each_liar_set(*state, honest_part_case);
}

/* Which fragment holds a range, at the edges of the payloads. */
static void
test_data_frag(void **state)
{
	struct fx *f = *state;
	uint32_t payload = bft_ec_payload(f->ec);
	uint32_t vlen = bft_ec_value_len(f->ec);

	assert_true(payload > 4096 && payload * (f->t + 1) >= vlen);
	assert_int_equal(bft_ec_data_frag(f->ec, 0, 4096), 0);
	assert_int_equal(bft_ec_data_frag(f->ec, payload - 1, 1), 0);
	assert_int_equal(bft_ec_data_frag(f->ec, payload, 4096), 1);
	/* A padded last payload (t = 2) is not read in part. */
	assert_int_equal(bft_ec_data_frag(f->ec, f->t * payload, 1),
	    (uint64_t)(f->t + 1) * payload > vlen ? -1 : (int)f->t);
	/* Across two payloads: no one fragment holds it. */
	assert_int_equal(bft_ec_data_frag(f->ec, payload - 1, 2), -1);
	assert_int_equal(bft_ec_data_frag(f->ec, 0, vlen), -1);
	assert_int_equal(bft_ec_data_frag(f->ec, 0, 0), -1);
	assert_int_equal(bft_ec_data_frag(f->ec, vlen, 1), -1);
	assert_int_equal(bft_ec_data_frag(f->ec, vlen - 1, 2), -1);
	assert_int_equal(bft_ec_data_frag(f->ec, UINT32_MAX, 2), -1);
}

int
main(void)
{
#define BOTH(fn) \
	cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown, &t_one), \
	cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown, &t_two)
	const struct CMUnitTest tests[] = {
		BOTH(test_part_honest),
		BOTH(test_part_other_fragment),
		BOTH(test_part_liar_fragment),
		BOTH(test_part_honest_among_liars),
		BOTH(test_data_frag),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
