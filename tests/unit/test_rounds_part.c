/*
 * Reads of part of a block (lib/op_read_fast.c, part_choose; the
 * predicate bft_fast_read_part) driven through the fake transport
 * against real server code (rounds_fixture.h).  A range inside one
 * data fragment's payload asks that server alone for its fragment; the
 * bytes returned in the range must be the value written last, whatever
 * that server sends, and a range over two payloads reads whole.
 */
#include <errno.h>

/* The block the tests read and write; the fixture's writes are its. */
#define BLOCK 5

#include "rounds_fixture.h"

/* r succeeded, and bytes [off, off + len) of its buffer are value's. */
static void
assert_range(struct run *r, const uint8_t *value, uint32_t off, uint32_t len)
{
	assert_true(run_done(r));
	assert_int_equal(r->op->err, 0);
	assert_int_equal(bftblk__op_finish_read(r->op), 0);
	assert_memory_equal(r->data + off, value + off, len);
}

/* The COLLECTs of a read: which servers were asked for fragments. */
static uint32_t
collect_wants(struct fx *f, const struct bft_msg *req[BFT_MAX_N])
{
	uint32_t want = 0;

	for (unsigned i = 0; i < f->n; i++) {
		req[i] = take(i, BFT_COLLECT, BLOCK);
		if (req[i]->want_frag)
			want |= 1u << i;
	}
	return want;
}

/*
 * 4 KiB in each data payload that stands alone: one server asked, n-t
 * answers with it among them decide in one round, and only the range
 * is the value; the other payloads' bytes are not touched.
 */
static void
test_part_read(void **state)
{
	struct fx *f = *state;
	uint32_t payload = bft_ec_payload(f->w->ec);
	const struct bft_msg *req[BFT_MAX_N];
	uint8_t *value = new_value();
	unsigned parts = 0;
	struct run r;

	write_all(f, BLOCK, value);
	for (unsigned d = 0; d <= f->t; d++) {
		uint32_t off = d * payload + 4096;

		if (bft_ec_data_frag(f->w->ec, off, 4096) != (int)d)
			continue;
		run_start_range(f, &r, OP_READ, BLOCK, NULL, off, 4096);
		assert_int_equal(collect_wants(f, req), 1u << d);
		answer(f, d, req[d]);
		for (unsigned i = 0, sent = 1; sent < f->q; i++)
			if (i != d) {
				answer(f, i, req[i]);
				sent++;
			}
		assert_range(&r, value, off, 4096);
		assert_true(r.op->fast_done);
		assert_true(bftblk__op_read_part(r.op));
		/* Another payload's bytes: the 0xaa run_start put there. */
		assert_int_equal(r.data[d == 0 ? payload : 0], 0xaa);
		run_end(&r);
		parts++;
	}
	assert_true(parts >= 1);
	assert_int_equal(stat_of(&f->cl->stats.part_reads), parts);
	assert_int_equal(stat_of(&f->cl->stats.fast_read_fallbacks), 0);
	free(value);
}

/*
 * Data server 0 sends a corrupt fragment, in the very bytes asked for.
 * The read must not take it: it falls back to FILTER, where server 0
 * lies again, and still returns the value's bytes; server 0 is passed
 * over, so the next read of that range reads whole from the others.
 * Without the fragment's hash checked against the agreed cc, the first
 * read would return the flipped bit.
 */
static void
test_part_read_corrupt(void **state)
{
	struct fx *f = *state;
	uint32_t payload = bft_ec_payload(f->w->ec);
	uint32_t off = payload - 4096;
	const struct bft_msg *req[BFT_MAX_N];
	uint8_t *value = new_value();
	struct run r;

	write_all(f, BLOCK, value);
	run_start_range(f, &r, OP_READ, BLOCK, NULL, off, 4096);
	assert_int_equal(collect_wants(f, req), 1u);
	answer_corrupt(f, 0, req[0]);
	for (unsigned i = 1; i < f->n; i++)
		answer(f, i, req[i]);
	assert_false(run_done(&r));
	assert_int_equal(stat_of(&f->cl->stats.fast_read_fallbacks), 1);
	assert_true(f->cl->frag_avoid_until[0] > uv_now(&f->lp->loop));
	answer_corrupt(f, 0, take(0, BFT_FILTER, BLOCK));
	serve_all(f, f->all & ~1u);
	assert_range(&r, value, off, 4096);
	assert_false(r.op->fast_done);
	assert_false(bftblk__op_read_part(r.op));
	assert_int_equal(stat_of(&f->cl->stats.part_reads), 0);
	run_end(&r);

	run_start_range(f, &r, OP_READ, BLOCK, NULL, off, 4096);
	assert_int_equal(collect_wants(f, req) & 1u, 0);
	for (unsigned i = 0; i < f->n; i++)
		answer(f, i, req[i]);
	assert_range(&r, value, off, 4096);
	assert_true(r.op->fast_done);
	assert_false(bftblk__op_read_part(r.op));
	run_end(&r);
	free(value);
}

/* A range over the first two payloads' boundary reads the whole block. */
static void
test_range_over_two_payloads(void **state)
{
	struct fx *f = *state;
	uint32_t payload = bft_ec_payload(f->w->ec);
	const struct bft_msg *req[BFT_MAX_N];
	uint8_t *value = new_value();
	struct run r;

	write_all(f, BLOCK, value);
	run_start_range(f, &r, OP_READ, BLOCK, NULL, payload - 2048, 4096);
	assert_int_equal(__builtin_popcount(collect_wants(f, req)),
	    (int)f->t + 1);
	for (unsigned i = 0; i < f->n; i++)
		answer(f, i, req[i]);
	assert_range(&r, value, 0, BFT_BLOCK_SIZE);
	assert_false(bftblk__op_read_part(r.op));
	run_end(&r);
	free(value);
}

/*
 * The data server that holds the range is down: the read asks the
 * servers a whole read would, and returns the range.
 */
static void
test_part_server_down(void **state)
{
	struct fx *f = *state;
	const struct bft_msg *req;
	uint8_t *value = new_value();
	uint32_t want = 0;
	struct run r;

	write_all(f, BLOCK, value);
	set_up(f, f->all & ~1u);
	run_start_range(f, &r, OP_READ, BLOCK, NULL, 0, 4096);
	for (unsigned i = 1; i < f->n; i++) {
		req = take(i, BFT_COLLECT, BLOCK);
		if (req->want_frag)
			want |= 1u << i;
		answer(f, i, req);
	}
	assert_int_equal(__builtin_popcount(want), (int)f->t + 1);
	assert_range(&r, value, 0, 4096);
	assert_false(bftblk__op_read_part(r.op));
	run_end(&r);
	free(value);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH_ROUNDS(test_part_read),
		BOTH_ROUNDS(test_part_read_corrupt),
		BOTH_ROUNDS(test_range_over_two_payloads),
		BOTH_ROUNDS(test_part_server_down),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
