/*
 * The group commit of small writes (lib/coalesce.c) with a fake
 * block writer: threads submit patches to a few blocks at once, and the
 * writer records every batch it is handed.  Every patch must be written
 * in exactly one batch, of its own block; a request must get the result
 * of the batch its patch went out in; no two batches of one block may
 * run at once; and patches arriving while a batch runs must actually be
 * merged, else nothing here tested the batching.  A request of a failed
 * batch gets the reason the writer recorded for it, on its own thread,
 * whoever led: the batch's number is in it.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "../../lib/coalesce_int.h"
#include "../../lib/error_int.h"

#define THREADS 8
#define PER_THREAD 200
#define BLOCKS 3

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned written[THREADS][PER_THREAD];	/* times each was written */
static int batch_of[THREADS][PER_THREAD];	/* result its batch returned */
static unsigned batch_no[THREADS][PER_THREAD];	/* the batch it went in */
static unsigned running[BLOCKS], overlap_seen, batches, max_batch;
static unsigned bad_patch;	/* checked in the main thread: cmocka's
				   asserts may not fire on other threads */
static unsigned fail_every;	/* every fail_every-th batch fails (0: none) */
static struct coalesce co;

/* The patch's offset encodes who sent it: thread * PER_THREAD + i. */
static int
fake_write(void *ctx, uint64_t block, const struct wpatch *list)
{
	struct timespec nap = { 0, 200000 };
	unsigned n = 0;
	int r;

	(void)ctx;
	pthread_mutex_lock(&mu);
	if (running[block]++ != 0)
		overlap_seen++;
	r = fail_every && ++batches % fail_every == 0 ? EIO : 0;
	if (!fail_every)
		batches++;
	if (r != 0)
		bftblk__fail(r, "batch %u failed", batches);
	for (const struct wpatch *p = list; p != NULL; p = p->next, n++) {
		unsigned who = (unsigned)p->offset;

		if (p->count != 4096 || (uintptr_t)p->src != block ||
		    who >= THREADS * PER_THREAD) {
			bad_patch++;
			continue;
		}
		written[who / PER_THREAD][who % PER_THREAD]++;
		batch_of[who / PER_THREAD][who % PER_THREAD] = r;
		batch_no[who / PER_THREAD][who % PER_THREAD] = batches;
	}
	if (n > max_batch)
		max_batch = n;
	pthread_mutex_unlock(&mu);
	nanosleep(&nap, NULL);		/* the rounds: others queue now */
	pthread_mutex_lock(&mu);
	running[block]--;
	pthread_mutex_unlock(&mu);
	return r;
}

struct submitter {
	unsigned id;
	unsigned merged;
	int results[PER_THREAD];
	char why[PER_THREAD][32];	/* bftblk__errmsg() after a failure */
};

static void *
submit(void *arg)
{
	struct submitter *s = arg;

	for (unsigned i = 0; i < PER_THREAD; i++) {
		uint64_t block = (s->id + i) % BLOCKS;
		struct wpatch p = {
			.src = (const uint8_t *)(uintptr_t)block,
			.count = 4096,
			.offset = s->id * PER_THREAD + i,
		};

		struct coalesce_waiter w;
		const struct wpatch *list = bftblk__coalesce_enter(&co, block,
		    &p, &w);

		/* Led: write the batch handed over, and say how it went. */
		if (list != NULL)
			s->results[i] = bftblk__coalesce_leave(&co, &w,
			    fake_write(NULL, block, list), &s->merged);
		else
			s->results[i] = w.result;
		if (s->results[i] != 0)
			snprintf(s->why[i], sizeof s->why[i], "%s",
			    bftblk__errmsg());
	}
	return NULL;
}

static void
run(unsigned every)
{
	pthread_t th[THREADS];
	struct submitter s[THREADS];
	unsigned merged = 0, failed = 0;

	memset(written, 0, sizeof written);
	memset(running, 0, sizeof running);
	overlap_seen = batches = max_batch = bad_patch = 0;
	fail_every = every;
	bftblk__coalesce_init(&co);
	for (unsigned t = 0; t < THREADS; t++) {
		s[t] = (struct submitter){ .id = t };
		assert_int_equal(pthread_create(&th[t], NULL, submit, &s[t]),
		    0);
	}
	for (unsigned t = 0; t < THREADS; t++)
		assert_int_equal(pthread_join(th[t], NULL), 0);
	/* Every queue went away with its last request. */
	for (unsigned k = 0; k < COALESCE_BUCKETS; k++)
		assert_null(co.buckets[k]);
	bftblk__coalesce_destroy(&co);
	for (unsigned t = 0; t < THREADS; t++) {
		merged += s[t].merged;
		for (unsigned i = 0; i < PER_THREAD; i++) {
			assert_int_equal(written[t][i], 1);
			assert_int_equal(s[t].results[i], batch_of[t][i]);
			if (s[t].results[i] != 0) {
				char want[32];

				snprintf(want, sizeof want, "batch %u failed",
				    batch_no[t][i]);
				assert_string_equal(s[t].why[i], want);
			}
			failed += s[t].results[i] != 0;
		}
	}
	assert_int_equal(bad_patch, 0);
	assert_int_equal(overlap_seen, 0);
	/* Merged patches are those beyond the first of each batch. */
	assert_int_equal(merged, THREADS * PER_THREAD - batches);
	assert_true(max_batch > 1);
	if (every)
		assert_true(failed > 0 && failed < THREADS * PER_THREAD);
	else
		assert_int_equal(failed, 0);
}

static void
test_batches(void **state)
{
	(void)state;
	run(0);
}

/* A failed batch fails exactly the requests in it, not their neighbours. */
static void
test_failures(void **state)
{
	(void)state;
	run(3);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batches),
		cmocka_unit_test(test_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
