/*
 * What a waiter counts as a live holder (lib/lease_watch.c): renewals,
 * takeovers and re-assertions do; a register split between two rival
 * claims of one generation, returned in turn by read after read, does
 * not, nor does a reading older than one seen.  The split is the
 * admin lock's livelock: counting every change as a renewal, two admins
 * whose claims each reached fewer than n-t servers backed off from each
 * other for the whole two minutes they wait (test_split_flip fails
 * then).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../lib/lease_int.h"

#define GEN	4u

/* A reading: generation gen, num k within it, by writer wid. */
static struct bft_ts
ts_of(uint64_t gen, uint64_t k, uint64_t wid)
{
	struct bft_ts ts;

	memset(&ts, 0, sizeof ts);
	ts.num = (gen << BFT_GEN_SHIFT) + k;
	ts.wid = wid;
	return ts;
}

/* A claim whose nonce is all byte id. */
static struct bft_lease_claim
claim_of(uint8_t id)
{
	struct bft_lease_claim c;

	memset(&c, 0, sizeof c);
	memset(c.nonce, id, sizeof c.nonce);
	c.period_ms = 10000;
	return c;
}

/*
 * Two admins claimed generation GEN at once and neither reached n-t
 * servers: the same num (both read the register free), two writers.
 * Reads return either, in any order, as long as nobody writes.
 */
static void
test_split_flip(void **state)
{
	struct bft_lease_claim a = claim_of(1), b = claim_of(2);
	struct bft_ts ta = ts_of(GEN, 1, 0x11), tb = ts_of(GEN, 1, 0x22);
	struct bft_lease_watch w;

	(void)state;
	bftblk__lease_watch_start(&w, &ta, &a, true);
	for (int i = 0; i < 40; i++) {
		bool odd = i % 2 != 0;

		assert_false(bftblk__lease_watch_alive(&w, odd ? &ta : &tb,
		    odd ? &a : &b, true));
	}
	/* The other order of first reading. */
	bftblk__lease_watch_start(&w, &tb, &b, true);
	for (int i = 0; i < 40; i++)
		assert_false(bftblk__lease_watch_alive(&w, i % 3 ? &ta : &tb,
		    i % 3 ? &a : &b, true));
}

/*
 * The second rival read the first's partial claim before writing, so
 * its num is one higher: still one generation, still no renewal.
 */
static void
test_split_two_nums(void **state)
{
	struct bft_lease_claim a = claim_of(1), b = claim_of(2);
	struct bft_ts ta = ts_of(GEN, 1, 0x11), tb = ts_of(GEN, 2, 0x22);
	struct bft_lease_watch w;

	(void)state;
	bftblk__lease_watch_start(&w, &ta, &a, true);
	for (int i = 0; i < 40; i++)
		assert_false(bftblk__lease_watch_alive(&w, i % 2 ? &ta : &tb,
		    i % 2 ? &a : &b, true));
}

/* A holder's renewal: its own claim, the next num. */
static void
test_renewal(void **state)
{
	struct bft_lease_claim a = claim_of(1);
	struct bft_ts t1 = ts_of(GEN, 5, 0x11), t2 = ts_of(GEN, 6, 0x11);
	struct bft_lease_watch w;

	(void)state;
	bftblk__lease_watch_start(&w, &t1, &a, true);
	assert_false(bftblk__lease_watch_alive(&w, &t1, &a, true));
	assert_true(bftblk__lease_watch_alive(&w, &t2, &a, true));
	/* Read again unchanged: no second sign from one renewal. */
	assert_false(bftblk__lease_watch_alive(&w, &t2, &a, true));
}

/* Another opener took over, or a snapshot re-asserted the claim. */
static void
test_next_generation(void **state)
{
	struct bft_lease_claim a = claim_of(1), c = claim_of(3);
	struct bft_ts t1 = ts_of(GEN, 5, 0x11);
	struct bft_ts taken = ts_of(GEN + 1, 1, 0x33);
	struct bft_ts reasserted = ts_of(GEN + 1, 1, 0x11);
	struct bft_lease_watch w;

	(void)state;
	bftblk__lease_watch_start(&w, &t1, &a, true);
	assert_true(bftblk__lease_watch_alive(&w, &taken, &c, true));
	bftblk__lease_watch_start(&w, &t1, &a, true);
	assert_true(bftblk__lease_watch_alive(&w, &reasserted, &a, true));
}

/*
 * The live holder A completed generation GEN; rival B's claim of GEN
 * reached some servers and is what the waiter read first.  A's first
 * renewal is a claim not seen yet under that generation; its second
 * (a third of a period later) is known: alive, well within the period.
 */
static void
test_holder_behind_rival(void **state)
{
	struct bft_lease_claim a = claim_of(1), b = claim_of(2);
	struct bft_ts tb = ts_of(GEN, 1, 0x22);
	struct bft_ts r1 = ts_of(GEN, 2, 0x11), r2 = ts_of(GEN, 3, 0x11);
	struct bft_lease_watch w;

	(void)state;
	bftblk__lease_watch_start(&w, &tb, &b, true);
	assert_false(bftblk__lease_watch_alive(&w, &r1, &a, true));
	assert_false(bftblk__lease_watch_alive(&w, &tb, &b, true));
	assert_true(bftblk__lease_watch_alive(&w, &r2, &a, true));
}

/* A reading older than one seen, then the newer one again. */
static void
test_older_reading(void **state)
{
	struct bft_lease_claim a = claim_of(1), old = claim_of(9);
	struct bft_ts t5 = ts_of(GEN, 5, 0x11), t_old = ts_of(GEN - 1, 7, 9);
	struct bft_lease_watch w;

	(void)state;
	bftblk__lease_watch_start(&w, &t5, &a, true);
	assert_false(bftblk__lease_watch_alive(&w, &t_old, &old, true));
	assert_false(bftblk__lease_watch_alive(&w, &t5, &a, true));
	/* The old claim's writer is known now, but its reading is old. */
	assert_false(bftblk__lease_watch_alive(&w, &t_old, &old, true));
}

/* A block that is no claim (never written, damaged) renews nothing. */
static void
test_not_a_claim(void **state)
{
	struct bft_lease_claim a = claim_of(1), junk = claim_of(0);
	struct bft_ts t1 = ts_of(GEN, 1, 0x11), t2 = ts_of(GEN, 2, 0x44);
	struct bft_lease_watch w;

	(void)state;
	bftblk__lease_watch_start(&w, &t1, &a, true);
	assert_false(bftblk__lease_watch_alive(&w, &t2, &junk, false));
}

/*
 * More rivals of one generation than the table holds: the one that
 * cannot be told apart counts as alive, the side that only costs a
 * wait.
 */
static void
test_table_full(void **state)
{
	struct bft_lease_claim c = claim_of(100);
	struct bft_ts ts = ts_of(GEN, 1, 100);
	struct bft_lease_watch w;
	unsigned i;

	(void)state;
	bftblk__lease_watch_start(&w, &ts, &c, true);
	for (i = 1; i < LEASE_WATCH_NONCES; i++) {
		c = claim_of((uint8_t)(100 + i));
		ts = ts_of(GEN, 1 + i, 100 + i);
		assert_false(bftblk__lease_watch_alive(&w, &ts, &c, true));
	}
	c = claim_of((uint8_t)(100 + i));
	ts = ts_of(GEN, 1 + i, 100 + i);
	assert_true(bftblk__lease_watch_alive(&w, &ts, &c, true));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_flip),
		cmocka_unit_test(test_split_two_nums),
		cmocka_unit_test(test_renewal),
		cmocka_unit_test(test_next_generation),
		cmocka_unit_test(test_holder_behind_rival),
		cmocka_unit_test(test_older_reading),
		cmocka_unit_test(test_not_a_claim),
		cmocka_unit_test(test_table_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
