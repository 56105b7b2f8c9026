/*
 * A client whose MAC keys are out of date (docs/key-epochs.md): one
 * whose key file lacks the epoch the servers' values were written
 * under sees them all as forgeries.  Dropping t of them is what it
 * does with liars; t+1 include a correct server, and then reads and
 * writes must fail, not return zeros or write below a completed write.
 * The rounds are driven as in test_rounds_read.c and
 * test_rounds_write.c (rounds_fixture.h).
 */
#include <errno.h>

/* The block the tests read and write; the fixture's writes are its. */
#define BLOCK 5

#include "rounds_fixture.h"

/*
 * A writer whose MAC keys are not the ones the block was written under
 * (a key file without the epoch a rotation brought) drops every
 * server's candidate as forged.  t of them it would take for liars and
 * read on; all of them mean its keys are out of date, and the read must
 * fail, not return the zeros of a never-written block.
 */
static void
test_keys_out_of_date(void **state)
{
	struct fx *f = *state;
	uint8_t *value = new_value();
	struct run r;

	write_all(f, BLOCK, value);
	bft_random(f->cl->key.kw, sizeof f->cl->key.kw);
	run_start(f, &r, OP_READ, BLOCK, NULL);
	serve_all(f, f->all);
	assert_true(run_done(&r));
	assert_int_equal(r.op->err, EPERM);
	assert_true(stat_of(&f->cl->stats.forged_ts) > f->t);
	run_end(&r);
	free(value);
}

/*
 * A writer whose MAC keys lack the epoch the block was written under
 * (docs/key-epochs.md) sees the servers' timestamps as forged.  Were it
 * to skip them, as it skips t liars', CLOCK would come back below the
 * completed write, and this write would complete without ever being
 * read.  t+1 of them mean its keys are out of date: the write fails.
 */
static void
test_clock_keys_out_of_date(void **state)
{
	struct fx *f = *state;
	struct write other;
	uint8_t *value = new_value();
	struct run r;

	make_write(f->w, 4, 0x77, &other);
	put_write(f, f->all, BLOCK, &other);
	bft_random(f->cl->key.kw, sizeof f->cl->key.kw);
	run_start(f, &r, OP_WRITE, BLOCK, value);
	serve_all(f, f->all);
	assert_true(run_done(&r));
	assert_int_equal(r.op->err, EPERM);
	assert_true(stat_of(&f->cl->stats.forged_ts) > f->t);
	for (unsigned i = 0; i < f->n; i++)
		assert_true(lc_at(f, i, BLOCK)->ts.num == 4);
	run_end(&r);
	free_write(f->w, &other);
	free(value);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH_ROUNDS(test_keys_out_of_date),
		BOTH_ROUNDS(test_clock_keys_out_of_date),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
