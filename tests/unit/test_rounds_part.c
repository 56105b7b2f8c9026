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
#include "hashtree.h"

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

/* Servers that said a level in their hellos: they serve slices. */
static void
slices_on(struct fx *f)
{
	for (unsigned i = 0; i < f->n; i++)
		f->lp->conns[i].chan.peer_level = BFT_LEVEL;
}

/*
 * With servers that serve slices, a part read asks its data server for
 * the chunks that hold the range alone: those bftblk_tree_cover() names,
 * and the read returns the range in one round.
 */
static void
test_slice_read(void **state)
{
	struct fx *f = *state;
	uint32_t payload = bft_ec_payload(f->w->ec);
	uint32_t flen = bft_ec_frag_len(f->w->ec);
	const struct bft_msg *req[BFT_MAX_N];
	uint8_t *value = new_value();
	unsigned parts = 0;
	uint32_t first, count;
	struct run r;

	slices_on(f);
	write_all(f, BLOCK, value);
	for (unsigned d = 0; d <= f->t; d++) {
		uint32_t off = d * payload + 4096 + 17;

		if (bft_ec_data_frag(f->w->ec, off, 4000) != (int)d)
			continue;
		assert_int_equal(bft_tree_cover(flen, bft_ec_frag_offset(
		    f->w->ec, off), 4000, &first, &count), 0);
		run_start_range(f, &r, OP_READ, BLOCK, NULL, off, 4000);
		assert_int_equal(collect_wants(f, req), 1u << d);
		assert_true(req[d]->slice);
		assert_int_equal(req[d]->slice_first, first);
		assert_int_equal(req[d]->slice_count, count);
		for (unsigned i = 0; i < f->n; i++)
			if (i != d)
				assert_false(req[i]->slice);
		for (unsigned i = 0; i < f->n; i++)
			answer(f, i, req[i]);
		assert_range(&r, value, off, 4000);
		assert_true(r.op->fast_done);
		assert_true(bftblk__op_read_part(r.op));
		/* Bytes of the same payload beside the range are not read. */
		assert_int_equal(r.data[off - 1], 0xaa);
		assert_int_equal(r.data[off + 4000], 0xaa);
		run_end(&r);
		parts++;
	}
	assert_true(parts >= 1);
	assert_int_equal(stat_of(&f->cl->stats.slice_reads), parts);
	assert_int_equal(stat_of(&f->cl->stats.fast_read_fallbacks), 0);
	free(value);
}

/*
 * Server 0 answers a slice with the chunks one place on and their own
 * valid proof, which the server holds and a Byzantine one may send: the
 * chunks hash, with their proof, to the fragment's root, but only at
 * the place they were taken from.  The read must not take them as the
 * place it asked for: it falls back and returns the value's bytes.
 * Without the place bound into the root (each chunk compressed with its
 * own index), this read would return the next kilobyte's bytes.
 */
static void
test_slice_shifted(void **state)
{
	struct fx *f = *state;
	const struct bft_msg *req[BFT_MAX_N];
	static struct bft_msg shifted, rep;
	uint8_t *value = new_value();
	struct run r;

	slices_on(f);
	write_all(f, BLOCK, value);
	run_start_range(f, &r, OP_READ, BLOCK, NULL, 4096, 4096);
	assert_int_equal(collect_wants(f, req), 1u);
	assert_true(req[0]->slice);
	shifted = *req[0];
	shifted.slice_first++;
	honest(f, 0, &shifted, &rep);
	assert_int_equal(rep.status, BFT_OK);
	assert_true(rep.slice && rep.frag_len == 4 * 1024 + 1024);
	fake_conn_deliver(conn_of(f, 0), &rep);
	for (unsigned i = 1; i < f->n; i++)
		answer(f, i, req[i]);
	assert_false(run_done(&r));
	assert_int_equal(stat_of(&f->cl->stats.fast_read_fallbacks), 1);
	serve_all(f, f->all);
	assert_range(&r, value, 4096, 4096);
	assert_false(bftblk__op_read_part(r.op));
	assert_int_equal(stat_of(&f->cl->stats.slice_reads), 0);
	run_end(&r);
	free(value);
}

/* One bit flipped in the slice: the same fallback, the same bytes. */
static void
test_slice_corrupt(void **state)
{
	struct fx *f = *state;
	uint32_t payload = bft_ec_payload(f->w->ec);
	uint32_t off = payload - 4096;
	const struct bft_msg *req[BFT_MAX_N];
	uint8_t *value = new_value();
	struct run r;

	slices_on(f);
	write_all(f, BLOCK, value);
	run_start_range(f, &r, OP_READ, BLOCK, NULL, off, 4096);
	assert_int_equal(collect_wants(f, req), 1u);
	assert_true(req[0]->slice);
	answer_corrupt(f, 0, req[0]);
	for (unsigned i = 1; i < f->n; i++)
		answer(f, i, req[i]);
	assert_false(run_done(&r));
	assert_int_equal(stat_of(&f->cl->stats.fast_read_fallbacks), 1);
	serve_all(f, f->all);
	assert_range(&r, value, off, 4096);
	assert_int_equal(stat_of(&f->cl->stats.slice_reads), 0);
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
		BOTH_ROUNDS(test_slice_read),
		BOTH_ROUNDS(test_slice_shifted),
		BOTH_ROUNDS(test_slice_corrupt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
