/*
 * A caller's wait for its batch of ops (lib/op_batch.c): a count the
 * loop takes down, with a futex word and a sleeping bit instead of a
 * mutex and condition variable.  The waiter must not return before the
 * last op is done, must see what the ops wrote before they were done,
 * and must never sleep through the last one: a lost wake-up hangs the
 * caller, which alarm() turns into a failure here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../lib/engine_int.h"

#define OPS	64

struct finisher {
	struct op_batch *b;
	unsigned nops;
	unsigned pause_us;	/* between ops; 0: as fast as it can */
	unsigned results[OPS];	/* what each op "wrote" before done */
};

static void *
finish_all(void *arg)
{
	struct finisher *f = arg;

	for (unsigned i = 0; i < f->nops; i++) {
		if (f->pause_us > 0)
			usleep(f->pause_us);
		f->results[i] = i + 1;
		bftblk__batch_done(f->b);
	}
	return NULL;
}

static void
on_alarm(int sig)
{
	static const char msg[] = "a batch wait slept through its last op\n";

	(void)sig;
	(void)write(2, msg, sizeof msg - 1);
	_exit(1);
}

static int
setup(void **state)
{
	(void)state;
	signal(SIGALRM, on_alarm);
	alarm(60);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	alarm(0);
	return 0;
}

/* The ops finish slowly: the waiter sleeps, and wakes only at the end. */
static void
test_waits_for_every_op(void **state)
{
	struct op_batch b;
	struct finisher f = { .b = &b, .nops = OPS, .pause_us = 300 };
	pthread_t th;

	(void)state;
	bftblk__batch_init(&b, OPS);
	assert_int_equal(pthread_create(&th, NULL, finish_all, &f), 0);
	bftblk__batch_wait(&b);
	/* Every result is there, the last one included. */
	for (unsigned i = 0; i < OPS; i++)
		assert_int_equal(f.results[i], i + 1);
	assert_int_equal(bftblk__batch_left(b.pending), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
}

/* Done before anyone waits: the wait returns without sleeping. */
static void
test_done_before_wait(void **state)
{
	struct op_batch b;

	(void)state;
	bftblk__batch_init(&b, 3);
	bftblk__batch_done(&b);
	bftblk__batch_done(&b);
	bftblk__batch_done(&b);
	assert_int_equal(b.pending, 0);
	bftblk__batch_wait(&b);
}

/* An empty batch (nothing submitted) does not wait at all. */
static void
test_empty_batch(void **state)
{
	struct op_batch b;

	(void)state;
	bftblk__batch_init(&b, 0);
	bftblk__batch_wait(&b);
	assert_int_equal(b.pending, 0);
}

/*
 * Many short batches against a finisher at full speed, each on the same
 * stack word as the last: the window between the waiter setting the
 * sleeping bit and the last decrement is hit in both orders, and a wake
 * meant for an earlier batch may land on a later one, which must then
 * sleep again rather than return early.
 */
static void
test_races(void **state)
{
	(void)state;
	for (unsigned round = 0; round < 20000; round++) {
		struct op_batch b;
		struct finisher f = { .b = &b, .nops = 1 + round % 4 };
		pthread_t th;

		bftblk__batch_init(&b, f.nops);
		assert_int_equal(pthread_create(&th, NULL, finish_all, &f), 0);
		bftblk__batch_wait(&b);
		for (unsigned i = 0; i < f.nops; i++)
			assert_int_equal(f.results[i], i + 1);
		assert_int_equal(pthread_join(th, NULL), 0);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_waits_for_every_op),
		cmocka_unit_test(test_done_before_wait),
		cmocka_unit_test(test_empty_batch),
		cmocka_unit_test(test_races),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
