/*
 * A FLUSH's sync off the event loop (bft_store_flush_begin, _run, _end
 * in server/store/store_sync.c): it makes durable what was written before it
 * began, so a sync after it has nothing left to do; a segment appended
 * to while it ran stays dirty, since the new records were not covered;
 * and with nothing written, it syncs nothing.  fsync calls are counted
 * by the store.  The fixture is store_fixture.h.
 */
#include "store_fixture.h"

static uint64_t
fsyncs(struct bft_store *st)
{
	struct bft_store_stats ss;

	bft_store_stats(st, &ss);
	return ss.fsyncs;
}

static void
flush(struct bft_store *st, bool append_meanwhile)
{
	struct bft_store_flush *f = bft_store_flush_begin(st);

	assert_non_null(f);
	bft_store_flush_run(f);
	if (append_meanwhile)
		assert_int_equal(put(st, 5, 7, 1, 0), 0);
	assert_int_equal(bft_store_flush_end(st, f), 0);
}

static void
test_flush(void **state)
{
	struct bft_store *st;
	uint64_t a, b;

	(void)state;
	st = sopen(0);
	assert_int_equal(put(st, 3, 1, 1, 0), 0);
	assert_int_equal(set_lc(st, 3, 1, 1), 0);
	a = fsyncs(st);
	flush(st, false);
	b = fsyncs(st);
	/* The segment, and the directory that got it. */
	assert_int_equal(b - a, 2);
	/* Nothing left for a sync on the loop. */
	assert_int_equal(bft_store_sync(st), 0);
	assert_int_equal(fsyncs(st), b);
	/* Nothing written: nothing synced. */
	flush(st, false);
	assert_int_equal(fsyncs(st), b);
	/* An append while it ran is left for the next sync. */
	assert_int_equal(put(st, 4, 1, 1, 0), 0);
	flush(st, true);
	a = fsyncs(st);
	assert_int_equal(a, b + 1);
	assert_int_equal(bft_store_sync(st), 0);
	assert_int_equal(fsyncs(st), a + 1);
	bft_store_close(st);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_flush, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
