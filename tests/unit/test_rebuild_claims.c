/*
 * The rebuild's judging of lone claims (server/rebuild/rebuild_claims.c): a
 * peer that alone lists every block of a large volume as newer, where
 * every read finds nothing newer, costs a bounded number of reads
 * before what it alone lists is skipped, within the pass; a correct
 * peer whose claims are true is never distrusted; a liar that mixes in
 * true claims costs at most a few more reads than it told truths.  The
 * pass is driven by hand: the scan's claims, then reads in the order
 * rebuild.c makes them, each asked of rb_claim_wanted first.  A pass
 * checks at most 65536 lone claims; the rest wait for the next pass.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../server/rebuild/rebuild_int.h"

#define NCLAIMS		100000u	/* past the 65536 lone claims a pass checks */
#define LIAR		2u
#define HONEST		3u

static double fake_now = 1000;

double
rb_now_s(void)
{
	return fake_now;
}

static struct bft_config cfg = { .n = 4, .t = 1 };
static struct bft_rebuild rb;

/* A pass: claims by who of blocks [0, nclaims), true where truth says. */
static unsigned
pass(uint32_t who, bool (*truth)(uint64_t))
{
	static const struct bft_ts own = { .num = 5, .wid = 1 };
	struct bftblk__proof p;
	unsigned reads = 0;

	static bool todo[NCLAIMS];

	rb_claims_begin(&rb);
	/* A distrusted peer's claims are not even queued by the scan. */
	for (uint64_t b = 0; b < NCLAIMS; b++)
		todo[b] = rb_claim(&rb, b, &own, who);
	for (uint64_t b = 0; b < NCLAIMS; b++) {
		if (!todo[b] || !rb_claim_wanted(&rb, b))
			continue;
		reads++;
		memset(&p, 0, sizeof p);
		p.cand.ts.num = truth(b) ? 9 : 5;
		p.cand.ts.wid = 1;
		rb_claim_read(&rb, b, &p);
	}
	rb_claims_judge(&rb);
	return reads;
}

static bool never(uint64_t b) { (void)b; return false; }
static bool always(uint64_t b) { (void)b; return true; }
static bool first_ten(uint64_t b) { return b < 10; }

static int
setup(void **state)
{
	(void)state;
	memset(&rb, 0, sizeof rb);
	rb.cfg = &cfg;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	free(rb.lone);
	return 0;
}

static void
test_predicate(void **state)
{
	(void)state;
	assert_false(rb_claims_liar(RB_EARLY_FALSE - 1, 0));
	assert_true(rb_claims_liar(RB_EARLY_FALSE, 0));
	assert_false(rb_claims_liar(RB_EARLY_FALSE, RB_EARLY_FALSE));
	assert_true(rb_claims_liar(RB_EARLY_FALSE + 1, RB_EARLY_FALSE));
	assert_false(rb_claims_liar(0, 100000));
}

/*
 * A liar listing 100000 blocks: read until 64 were found false, then its
 * claims are skipped; the next pass, while distrusted, reads none, and
 * after the distrust ends, 64 again and a doubled distrust.
 */
static void
test_liar_bounded(void **state)
{
	unsigned first;

	(void)state;
	first = pass(1u << LIAR, never);
	assert_int_equal(first, RB_EARLY_FALSE);
	assert_true(rb.distrust & (1u << LIAR));
	assert_int_equal(rb.backoff_s[LIAR], 1200);
	/* Past the cap, claims wait for the next pass, unread. */
	assert_int_equal(rb.deferred, NCLAIMS - 65536);
	assert_int_equal(rb.ignored, 65536 - RB_EARLY_FALSE);
	assert_int_equal(pass(1u << LIAR, never), 0);
	fake_now += 601;
	assert_int_equal(pass(1u << LIAR, never), RB_EARLY_FALSE);
	assert_int_equal(rb.backoff_s[LIAR], 2400);
}

/* True claims are read, as many as a pass checks, and keep standing. */
static void
test_honest_read(void **state)
{
	(void)state;
	assert_int_equal(pass(1u << HONEST, always), 65536);
	assert_int_equal(rb.deferred, NCLAIMS - 65536);
	assert_false(rb.distrust & (1u << HONEST));
	assert_int_equal(rb.backoff_s[HONEST], 0);
}

/* Ten true claims buy a liar ten more false ones read, no more. */
static void
test_mixed_liar(void **state)
{
	(void)state;
	assert_int_equal(pass(1u << LIAR, first_ten), 10 + RB_EARLY_FALSE);
	assert_true(rb.distrust & (1u << LIAR));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_predicate),
		cmocka_unit_test_setup_teardown(test_liar_bounded, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_honest_read, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_mixed_liar, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
