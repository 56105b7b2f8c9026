/*
 * Proactive recovery's decision (server/rejuv_decide.c): given what the
 * peers' STATUS said, whether a due server claims, holds, waits or
 * restarts.  Single answers first (a silent peer, a liar that claims to
 * recover, a lower claim), then servers deciding at the same time: the
 * protocol run by several servers whose reads of each other interleave
 * at random, one peer's STATUS per step, must never let two restart
 * and must let one.  A lying peer answers at random; it may delay the
 * others but never make two of them restart.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../server/rejuv.h"
#include "wire.h"

#define N	4
/* A simulated STATUS of a server between its processes: no answer. */
#define DOWN	99

static struct bft_rejuv_peer peers[N];

static void
all_answer(void)
{
	for (unsigned j = 0; j < N; j++)
		peers[j] = (struct bft_rejuv_peer){ .answered = true };
}

static void
test_clear(void **state)
{
	unsigned who;

	(void)state;
	all_answer();
	assert_int_equal(bft_rejuv_decide(1, N, peers, false, &who),
	    BFT_REJUV_CLAIM);
	assert_int_equal(bft_rejuv_decide(1, N, peers, true, &who),
	    BFT_REJUV_GO);
	/* What a server's own slot holds does not matter. */
	peers[1].answered = false;
	assert_int_equal(bft_rejuv_decide(1, N, peers, true, &who),
	    BFT_REJUV_GO);
}

/* A peer that does not answer may be recovering or faulty: wait. */
static void
test_missing(void **state)
{
	unsigned who;

	(void)state;
	all_answer();
	peers[3].answered = false;
	assert_int_equal(bft_rejuv_decide(0, N, peers, false, &who),
	    BFT_REJUV_WAIT_DOWN);
	assert_int_equal(who, 3);
	assert_int_equal(bft_rejuv_decide(0, N, peers, true, &who),
	    BFT_REJUV_WAIT_DOWN);
}

/* A liar saying it recovers, or saying nonsense, only delays. */
static void
test_liar(void **state)
{
	unsigned who;

	(void)state;
	all_answer();
	peers[2].recovering = BFT_RECOVERING_YES;
	assert_int_equal(bft_rejuv_decide(3, N, peers, false, &who),
	    BFT_REJUV_WAIT_RECOVERING);
	assert_int_equal(who, 2);
	peers[2].recovering = 77;
	assert_int_equal(bft_rejuv_decide(3, N, peers, true, &who),
	    BFT_REJUV_WAIT_RECOVERING);
	peers[2].recovering = BFT_RECOVERING_NONE;
	assert_int_equal(bft_rejuv_decide(3, N, peers, false, &who),
	    BFT_REJUV_CLAIM);
}

/* Lower claims win; a higher one is waited out with the claim held. */
static void
test_claims(void **state)
{
	unsigned who;

	(void)state;
	all_answer();
	peers[0].recovering = BFT_RECOVERING_CLAIMED;
	assert_int_equal(bft_rejuv_decide(2, N, peers, false, &who),
	    BFT_REJUV_WAIT_LOWER);
	assert_int_equal(who, 0);
	assert_int_equal(bft_rejuv_decide(2, N, peers, true, &who),
	    BFT_REJUV_WAIT_LOWER);
	all_answer();
	peers[3].recovering = BFT_RECOVERING_CLAIMED;
	assert_int_equal(bft_rejuv_decide(2, N, peers, false, &who),
	    BFT_REJUV_CLAIM);
	assert_int_equal(bft_rejuv_decide(2, N, peers, true, &who),
	    BFT_REJUV_HOLD);
	assert_int_equal(who, 3);
}

/* One simulated server: what it has read this round, and where it is. */
struct sim {
	struct bft_rejuv_peer view[N];
	uint64_t flag;			/* what its STATUS says */
	unsigned next;			/* the peer it reads next */
	unsigned holds, tries;
	bool done, gave_up;
	unsigned after;			/* steps since it chose to go */
};

static uint64_t
read_flag(struct sim *s, unsigned j, unsigned liar)
{
	static const uint64_t any[] = { BFT_RECOVERING_NONE,
	    BFT_RECOVERING_YES, BFT_RECOVERING_CLAIMED, 5 };

	return j == liar ? any[rand() % 4] : s[j].flag;
}

/*
 * A server that decided to go still says CLAIMED until it stops
 * listening, answers nothing while it restarts, then says RECOVERING.
 */
static void
restarting(struct sim *me)
{
	me->after++;
	if (me->after == 3)
		me->flag = DOWN;
	else if (me->after == 6)
		me->flag = BFT_RECOVERING_YES;
}

/* One step of server i: read one peer, or decide on a full round. */
static void
step(struct sim *s, unsigned i, unsigned liar)
{
	struct sim *me = &s[i];
	unsigned who;

	if (me->next == i)
		me->next++;
	if (me->next < N) {
		/* A liar may also pretend not to answer. */
		me->view[me->next].recovering = read_flag(s, me->next, liar);
		me->view[me->next].answered = (me->next != liar ||
		    rand() % 4 != 0) && me->view[me->next].recovering != DOWN;
		me->next++;
		return;
	}
	me->next = 0;
	switch (bft_rejuv_decide(i, N, me->view,
	    me->flag == BFT_RECOVERING_CLAIMED, &who)) {
	case BFT_REJUV_CLAIM:
		me->flag = BFT_RECOVERING_CLAIMED;
		me->holds = 0;
		return;
	case BFT_REJUV_GO:
		/* Its claim stays up: see restarting(). */
		me->done = true;
		return;
	case BFT_REJUV_HOLD:
		if (++me->holds <= 20)
			return;
		/* FALLTHROUGH */
	default:
		me->flag = BFT_RECOVERING_NONE;
		if (++me->tries > 200)
			me->gave_up = true;
	}
}

/* Runs the servers in want (a bit each) at random to the end. */
static unsigned
run(unsigned want, unsigned liar)
{
	struct sim s[N];
	unsigned done = 0, live;

	memset(s, 0, sizeof s);
	for (unsigned k = 0; k < 100000; k++) {
		unsigned i = (unsigned)rand() % N;

		if (!(want & (1u << i)) || i == liar || s[i].gave_up)
			continue;
		if (s[i].done)
			restarting(&s[i]);
		else
			step(s, i, liar);
		done = 0;
		live = 0;
		for (unsigned j = 0; j < N; j++) {
			done += s[j].done;
			live += (want & (1u << j)) && j != liar &&
			    !s[j].done && !s[j].gave_up;
		}
		assert_true(done <= 1);
		/* Recovering for a while: the others can only wait now. */
		for (unsigned j = 0; j < N; j++)
			if (s[j].after > 60)
				live = 0;
		if (live == 0)
			break;
	}
	return done;
}

static void
test_simultaneous(void **state)
{
	(void)state;
	srand(1);
	for (unsigned r = 0; r < 20000; r++) {
		unsigned want = 2 + (unsigned)rand() % 14;

		/* Several honest servers due at once: exactly one goes. */
		assert_int_equal(run(want | 1u << (r % N), N), 1);
	}
}

static void
test_simultaneous_liar(void **state)
{
	unsigned went = 0;

	(void)state;
	srand(2);
	for (unsigned r = 0; r < 20000; r++)
		went += run(0xf, r % N);
	/* Never two (run asserts it); the liar delays, it does not stop. */
	assert_true(went > 0);
}

/* The option's forms, and the stagger of first recoveries. */
static void
test_schedule(void **state)
{
	unsigned s;

	(void)state;
	assert_int_equal(bft_rejuv_parse_duration("90s", &s), 0);
	assert_int_equal(s, 90);
	assert_int_equal(bft_rejuv_parse_duration("30m", &s), 0);
	assert_int_equal(s, 1800);
	assert_int_equal(bft_rejuv_parse_duration("6h", &s), 0);
	assert_int_equal(s, 21600);
	assert_int_equal(bft_rejuv_parse_duration("1d", &s), 0);
	assert_int_equal(s, 86400);
	assert_int_equal(bft_rejuv_parse_duration("45", &s), 0);
	assert_int_equal(s, 45);
	assert_int_equal(bft_rejuv_parse_duration("0", &s), 0);
	assert_int_equal(s, 0);
	assert_int_equal(bft_rejuv_parse_duration("1w", &s), -1);
	assert_int_equal(bft_rejuv_parse_duration("5ms", &s), -1);
	assert_int_equal(bft_rejuv_parse_duration("-1s", &s), -1);
	assert_int_equal(bft_rejuv_parse_duration("367d", &s), -1);
	assert_int_equal(bft_rejuv_parse_duration("", &s), -1);
	assert_int_equal(bft_rejuv_first_ms(24, 0, 4), 6000);
	assert_int_equal(bft_rejuv_first_ms(24, 3, 4), 24000);
	assert_int_equal(bft_rejuv_first_ms(86400, 6, 7), 86400000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clear),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_liar),
		cmocka_unit_test(test_claims),
		cmocka_unit_test(test_simultaneous),
		cmocka_unit_test(test_simultaneous_liar),
		cmocka_unit_test(test_schedule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
