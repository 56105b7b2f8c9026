/*
 * The plugin's op free list (lib/op_pool.c): a recycled op comes
 * back with its fragment buffers (and sealed-value buffer) but with
 * every scalar of the previous I/O cleared, since the round machinery
 * relies on them starting at zero; the list is bounded; flush ops, which
 * have no buffers, are never kept; and draining frees everything (ASan's
 * leak check sees to that in `make SAN=1 check`).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../lib/rounds_int.h"

struct fixture {
	struct bft_engine cl;
	struct bft_ec *ec;
};

static int
setup(void **state)
{
	static struct fixture f;
	char err[256];

	memset(&f, 0, sizeof f);
	if (bft_ec_new(1, NULL, &f.ec, err, sizeof err) != 0)
		return -1;
	f.cl.p.ec = f.ec;
	f.cl.n = 4;
	f.cl.t = 1;
	pthread_mutex_init(&f.cl.pool_lock, NULL);
	*state = &f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	bftblk__op_pool_drain(&f->cl);
	assert_int_equal(f->cl.npool, 0);
	assert_null(f->cl.pool);
	pthread_mutex_destroy(&f->cl.pool_lock);
	bft_ec_free(f->ec);
	return 0;
}

/* Dirties every scalar a finished read or write leaves behind. */
static void
dirty(struct op *op)
{
	op->err = 5;
	op->why = "old";
	op->phase = PH_FILTER;
	op->sent = op->replied = op->ok = op->failed = 0xf;
	op->restarts = 3;
	op->parked = op->resume = op->based = op->stale = true;
	op->committed = op->partial = op->fast = true;
	op->nc = 2;
	op->quorum = op->unhashed = op->wrong_len = 0x3;
	op->zero = true;
	op->want = op->fast_have = op->placed = 0x3;
	op->unchecked = op->fast_on = op->fast_wait = op->fast_done = true;
}

static void
test_reuse_clears_scalars(void **state)
{
	struct fixture *f = *state;
	uint32_t flen = bft_ec_frag_len(f->ec);
	struct op *a = bftblk__op_new(&f->cl, OP_WRITE), *b;
	uint8_t *frag0;

	assert_non_null(a);
	for (unsigned i = 0; i < f->cl.n; i++)
		assert_ptr_equal(a->frags[i], a->frags[0] + (size_t)i * flen);
	frag0 = a->frags[0];
	memset(frag0, 0x77, (size_t)f->cl.n * flen);	/* writable, all */
	dirty(a);
	bftblk__op_free(a);
	assert_int_equal(f->cl.npool, 1);

	b = bftblk__op_new(&f->cl, OP_READ);
	assert_ptr_equal(b, a);
	assert_int_equal(f->cl.npool, 0);
	assert_ptr_equal(b->frags[0], frag0);
	assert_ptr_equal(b->frags[3], frag0 + 3 * (size_t)flen);
	assert_int_equal(b->kind, OP_READ);
	assert_ptr_equal(b->cl, &f->cl);
	assert_null(b->next);
	assert_null(b->value);
	assert_int_equal(b->err, 0);
	assert_null(b->why);
	assert_int_equal(b->sent | b->replied | b->ok | b->failed, 0);
	assert_int_equal(b->restarts, 0);
	assert_false(b->parked || b->resume || b->based || b->stale);
	assert_false(b->committed || b->partial || b->fast || b->zero);
	assert_int_equal(b->nc + b->quorum + b->unhashed + b->wrong_len, 0);
	assert_int_equal(b->want | b->fast_have | b->placed, 0);
	assert_false(b->unchecked || b->fast_on || b->fast_wait ||
	    b->fast_done);
	bftblk__op_free(b);
}

static void
test_bounded(void **state)
{
	struct fixture *f = *state;
	struct op *ops[100];

	for (unsigned i = 0; i < 100; i++)
		assert_non_null(ops[i] = bftblk__op_new(&f->cl, OP_WRITE));
	for (unsigned i = 0; i < 100; i++)
		bftblk__op_free(ops[i]);
	/* Kept a few for the next I/Os, freed the rest. */
	assert_true(f->cl.npool > 0 && f->cl.npool < 100);
	for (unsigned i = 0; i < 100; i++)
		assert_non_null(ops[i] = bftblk__op_new(&f->cl, OP_READ));
	assert_int_equal(f->cl.npool, 0);
	for (unsigned i = 0; i < 100; i++)
		bftblk__op_free(ops[i]);
}

static void
test_flush_not_kept(void **state)
{
	struct fixture *f = *state;
	unsigned before = f->cl.npool;
	struct op *op = bftblk__op_new(&f->cl, OP_FLUSH);

	assert_non_null(op);
	assert_null(op->frags[0]);
	bftblk__op_free(op);
	assert_int_equal(f->cl.npool, before);
	/* And a flush never takes a kept op's buffers. */
	op = bftblk__op_new(&f->cl, OP_WRITE);
	bftblk__op_free(op);
	before = f->cl.npool;
	op = bftblk__op_new(&f->cl, OP_FLUSH);
	assert_int_equal(f->cl.npool, before);
	assert_null(op->frags[0]);
	bftblk__op_free(op);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reuse_clears_scalars),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_flush_not_kept),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
