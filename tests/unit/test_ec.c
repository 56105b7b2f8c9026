/*
 * Erasure coding: every (t+1)-subset of the n = 3t+1 fragments must give
 * back the block byte for byte (the protocol decodes from whichever t+1
 * correct servers answered first), fewer must fail, every backend the
 * header names must work, and one coder must be usable from several
 * threads at once, as the plugin's nbdkit threads use it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <pthread.h>

#include <cmocka.h>
#include <erasurecode.h>

#include "crypto.h"
#include "ec.h"

struct coded {
	struct bft_ec *ec;
	unsigned t, n;
	uint32_t flen;
	uint8_t *block, *out;
	uint8_t *frags[BFT_MAX_N];
};

static struct bft_ec *
new_ec(unsigned t, const char *backend)
{
	char err[256] = "";
	struct bft_ec *ec;

	if (bft_ec_new(t, backend, &ec, err, sizeof err) != 0)
		fail_msg("bft_ec_new(%u, %s): %s", t, backend ? backend :
		    "default", err);
	return ec;
}

static void
coded_init(struct coded *c, unsigned t, const char *backend)
{
	memset(c, 0, sizeof *c);
	c->t = t;
	c->n = 3 * t + 1;
	c->ec = new_ec(t, backend);
	c->flen = bft_ec_frag_len(c->ec);
	c->block = malloc(BFT_BLOCK_SIZE);
	c->out = malloc(BFT_BLOCK_SIZE);
	assert_non_null(c->block);
	assert_non_null(c->out);
	/* Exactly frag_len bytes each, so ASan catches any overrun. */
	for (unsigned i = 0; i < c->n; i++) {
		c->frags[i] = malloc(c->flen);
		assert_non_null(c->frags[i]);
	}
	bft_random(c->block, BFT_BLOCK_SIZE);
	assert_int_equal(bft_ec_encode(c->ec, c->block, c->frags), 0);
}

static void
coded_free(struct coded *c)
{
	for (unsigned i = 0; i < c->n; i++)
		free(c->frags[i]);
	free(c->block);
	free(c->out);
	bft_ec_free(c->ec);
}

/* Decodes from have; returns the decoder's result, checks the bytes. */
static int
decode_check(struct coded *c, uint32_t have)
{
	const uint8_t *in[BFT_MAX_N] = { 0 };

	/* Only the fragments named in have are even reachable. */
	for (unsigned i = 0; i < c->n; i++)
		if (have & (1u << i))
			in[i] = c->frags[i];
	memset(c->out, 0xa5, BFT_BLOCK_SIZE);
	if (bft_ec_decode(c->ec, in, have, c->out) != 0)
		return -1;
	if (memcmp(c->out, c->block, BFT_BLOCK_SIZE) != 0)
		fail_msg("t=%u have=%#x: decoded block differs", c->t, have);
	return 0;
}

/*
 * Every subset of size t+1 decodes; with all_sizes every larger subset
 * too; every subset of size <= t fails.
 */
static void
check_subsets(struct coded *c, bool all_sizes)
{
	unsigned k = c->t + 1, decoded = 0;

	for (uint32_t have = 0; have < (1u << c->n); have++) {
		unsigned pc = (unsigned)__builtin_popcount(have);

		if (pc < k) {
			if (pc < k - 1 && !all_sizes && pc != 0)
				continue;
			if (decode_check(c, have) == 0)
				fail_msg("t=%u: decoded from %u fragments "
				    "(have=%#x)", c->t, pc, have);
			continue;
		}
		if (pc > k && !all_sizes)
			continue;
		if (decode_check(c, have) != 0)
			fail_msg("t=%u backend %s: decode failed for have=%#x",
			    c->t, bft_ec_backend(c->ec), have);
		decoded++;
	}
	assert_true(decoded > 0);
}

static void
run_t(unsigned t, bool all_sizes)
{
	struct coded c;

	coded_init(&c, t, NULL);
	check_subsets(&c, all_sizes);
	/* A second random block through the same coder. */
	bft_random(c.block, BFT_BLOCK_SIZE);
	assert_int_equal(bft_ec_encode(c.ec, c.block, c.frags), 0);
	check_subsets(&c, false);
	coded_free(&c);
}

/*
 * With encrypt=on a register holds the block plus a 16-byte AEAD tag:
 * 65552 bytes, not a multiple of k.  Every (t+1)-subset must still give
 * back exactly that many bytes, and fragments must fit BFT_MAX_FRAG.
 */
static void
test_odd_value_len(void **state)
{
	const uint32_t vlen = BFT_BLOCK_SIZE + 16;

	(void)state;
	for (unsigned t = 1; t <= BFT_MAX_T; t += 4) {
		char err[256] = "";
		struct bft_ec *ec;
		unsigned n = 3 * t + 1, decoded = 0;
		uint8_t *frags[BFT_MAX_N], *in, *out;

		if (bft_ec_new_len(t, NULL, vlen, &ec, err, sizeof err) != 0)
			fail_msg("bft_ec_new_len(%u, %u): %s", t, vlen, err);
		assert_int_equal(bft_ec_value_len(ec), vlen);
		assert_true(bft_ec_frag_len(ec) <= BFT_MAX_FRAG);
		in = malloc(vlen);
		out = malloc(vlen);
		assert_non_null(in);
		assert_non_null(out);
		for (unsigned i = 0; i < n; i++)
			assert_non_null(frags[i] = malloc(bft_ec_frag_len(ec)));
		bft_random(in, vlen);
		assert_int_equal(bft_ec_encode(ec, in, frags), 0);
		for (uint32_t have = 0; have < (1u << n); have++) {
			if ((unsigned)__builtin_popcount(have) != t + 1 ||
			    (t > 1 && decoded >= 64))
				continue;
			memset(out, 0xa5, vlen);
			assert_int_equal(bft_ec_decode(ec,
			    (const uint8_t *const *)frags, have, out), 0);
			assert_memory_equal(out, in, vlen);
			decoded++;
		}
		assert_true(decoded > 0);
		for (unsigned i = 0; i < n; i++)
			free(frags[i]);
		free(in);
		free(out);
		bft_ec_free(ec);
	}
}

static void
test_t1(void **state)
{
	(void)state;
	run_t(1, true);
}

static void
test_t2(void **state)
{
	(void)state;
	run_t(2, true);
}

static void
test_t3(void **state)
{
	(void)state;
	run_t(3, true);
}

/* n = 16: all 8008 6-subsets, and the 2^16 larger ones only sampled. */
static void
test_t5(void **state)
{
	struct coded c;

	(void)state;
	coded_init(&c, 5, NULL);
	check_subsets(&c, false);
	for (int j = 0; j < 200; j++) {
		uint32_t have;

		bft_random(&have, sizeof have);
		have &= 0xffff;
		if (__builtin_popcount(have) >= 6)
			assert_int_equal(decode_check(&c, have), 0);
	}
	coded_free(&c);
}

/* Zero blocks and blocks of one repeated byte are the common data. */
static void
test_special_blocks(void **state)
{
	struct coded c;

	(void)state;
	coded_init(&c, 2, NULL);
	memset(c.block, 0, BFT_BLOCK_SIZE);
	assert_int_equal(bft_ec_encode(c.ec, c.block, c.frags), 0);
	check_subsets(&c, false);
	memset(c.block, 0xff, BFT_BLOCK_SIZE);
	assert_int_equal(bft_ec_encode(c.ec, c.block, c.frags), 0);
	check_subsets(&c, false);
	coded_free(&c);
}

static void
test_frag_len(void **state)
{
	(void)state;
	for (unsigned t = 1; t <= BFT_MAX_T; t++) {
		struct bft_ec *a = new_ec(t, NULL), *b = new_ec(t, NULL);
		uint32_t fl = bft_ec_frag_len(a);

		/* k fragments carry the whole block, and fit a frame. */
		assert_true((uint64_t)fl * (t + 1) >= BFT_BLOCK_SIZE);
		assert_true(fl <= BFT_MAX_FRAG);
		/* Not much more than block/k: no hidden replication. */
		assert_true(fl < BFT_BLOCK_SIZE / (t + 1) + 4096);
		assert_int_equal(fl, bft_ec_frag_len(b));
		bft_ec_free(a);
		bft_ec_free(b);
	}
}

/* Bits beyond n and empty masks never reach the library. */
static void
test_too_few(void **state)
{
	struct coded c;
	const uint8_t *in[BFT_MAX_N] = { 0 };

	(void)state;
	coded_init(&c, 1, NULL);
	/* One real fragment plus bits for servers that do not exist. */
	in[0] = c.frags[0];
	assert_int_equal(bft_ec_decode(c.ec, in, 0xfff0u | 1u, c.out), -EINVAL);
	assert_int_equal(bft_ec_decode(c.ec, in, 0xfffffff0u | 1u, c.out),
	    -EINVAL);
	assert_int_equal(bft_ec_decode(c.ec, in, 0, c.out), -EINVAL);
	/* And a full set still decodes after the refusals. */
	assert_int_equal(decode_check(&c, 0xf), 0);
	coded_free(&c);
}

static void
test_backends(void **state)
{
	static const char *names[] = {
		"isa_l_rs_vand", "isa_l_rs_cauchy", "liberasurecode_rs_vand",
	};
	struct coded c;
	struct bft_ec *ec;

	(void)state;
	for (unsigned j = 0; j < 3; j++) {
		coded_init(&c, 1, names[j]);
		assert_string_equal(bft_ec_backend(c.ec), names[j]);
		check_subsets(&c, true);
		coded_free(&c);
	}
	/* ec.c documents ISA-L Cauchy as the default when ISA-L loads. */
	ec = new_ec(1, NULL);
	if (liberasurecode_backend_available(EC_BACKEND_ISA_L_RS_CAUCHY))
		assert_string_equal(bft_ec_backend(ec), "isa_l_rs_cauchy");
	else
		assert_string_equal(bft_ec_backend(ec),
		    "liberasurecode_rs_vand");
	bft_ec_free(ec);
}

static void
test_bad_args(void **state)
{
	char err[256];
	static const unsigned bad_t[] = { 0, BFT_MAX_T + 1, 1000, ~0u };
	struct bft_ec *ec = (struct bft_ec *)&ec;

	(void)state;
	err[0] = '\0';
	assert_int_equal(bft_ec_new(1, "jerasure_rs_nonexistent", &ec, err,
	    sizeof err), -ENOTSUP);
	assert_null(ec);
	assert_non_null(strstr(err, "jerasure_rs_nonexistent"));
	err[0] = '\0';
	assert_int_equal(bft_ec_new(1, "", &ec, err, sizeof err), -ENOTSUP);
	assert_true(err[0] != '\0');
	for (unsigned j = 0; j < 4; j++) {
		err[0] = '\0';
		assert_int_equal(bft_ec_new(bad_t[j], NULL, &ec, err,
		    sizeof err), -EINVAL);
		assert_non_null(strstr(err, "out of range"));
	}
	/* A truncated error buffer is still a terminated string. */
	memset(err, 'x', sizeof err);
	assert_int_equal(bft_ec_new(0, NULL, &ec, err, 8), -EINVAL);
	assert_int_equal(strlen(err), 7);
}

/*
 * The decoder trusts its input: callers drop fragments whose hash is not
 * their cross-checksum entry before decoding.  This pins both halves of
 * that contract: a single flipped bit anywhere breaks H(fr_i) == cc[i],
 * and decoding a corrupted fragment never silently yields the original.
 */
static void
test_corruption_contract(void **state)
{
	struct coded c;
	uint8_t cc[BFT_MAX_N][BFT_HASH_LEN], h[BFT_HASH_LEN];
	uint32_t offs[3];

	(void)state;
	coded_init(&c, 1, NULL);
	for (unsigned i = 0; i < c.n; i++)
		bft_hash(c.frags[i], c.flen, cc[i]);
	offs[0] = 0;
	offs[1] = c.flen / 2;
	offs[2] = c.flen - 1;
	for (unsigned i = 0; i < c.n; i++) {
		for (unsigned o = 0; o < 3; o++) {
			c.frags[i][offs[o]] ^= 0x01;
			bft_hash(c.frags[i], c.flen, h);
			assert_false(bft_equal(h, cc[i], BFT_HASH_LEN));
			c.frags[i][offs[o]] ^= 0x01;
		}
		bft_hash(c.frags[i], c.flen, h);
		assert_true(bft_equal(h, cc[i], BFT_HASH_LEN));
	}
	/* Corrupt the payload (not the header) of data fragment 0. */
	c.frags[0][c.flen / 2] ^= 0xff;
	{
		const uint8_t *in[BFT_MAX_N] = { c.frags[0], c.frags[1] };

		if (bft_ec_decode(c.ec, in, 0x3, c.out) == 0)
			assert_memory_not_equal(c.out, c.block,
			    BFT_BLOCK_SIZE);
	}
	c.frags[0][c.flen / 2] ^= 0xff;
	assert_int_equal(decode_check(&c, 0x3), 0);
	coded_free(&c);
}

#define THREADS 4
#define ITERS 300

struct worker {
	struct bft_ec *ec;
	unsigned n, t;
	uint64_t seed;
	int failures;
};

static uint64_t
xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* cmocka's asserts are not thread-safe: workers count, main asserts. */
static void *
worker_run(void *arg)
{
	struct worker *w = arg;
	uint32_t flen = bft_ec_frag_len(w->ec);
	uint8_t *block = malloc(BFT_BLOCK_SIZE), *out = malloc(BFT_BLOCK_SIZE);
	uint8_t *frags[BFT_MAX_N] = { 0 };

	for (unsigned i = 0; i < w->n; i++)
		frags[i] = malloc(flen);
	for (int it = 0; it < ITERS; it++) {
		const uint8_t *in[BFT_MAX_N] = { 0 };
		uint32_t have = 0;

		for (uint32_t j = 0; j < BFT_BLOCK_SIZE; j += 8) {
			uint64_t r = xorshift(&w->seed);

			memcpy(block + j, &r, 8);
		}
		if (bft_ec_encode(w->ec, block, frags) != 0) {
			w->failures++;
			continue;
		}
		/* A random (t+1)-subset, so most decodes really solve. */
		while ((unsigned)__builtin_popcount(have) < w->t + 1)
			have |= 1u << (xorshift(&w->seed) % w->n);
		for (unsigned i = 0; i < w->n; i++)
			if (have & (1u << i))
				in[i] = frags[i];
		if (bft_ec_decode(w->ec, in, have, out) != 0 ||
		    memcmp(out, block, BFT_BLOCK_SIZE) != 0)
			w->failures++;
	}
	for (unsigned i = 0; i < w->n; i++)
		free(frags[i]);
	free(block);
	free(out);
	return NULL;
}

static void
test_threads(void **state)
{
	pthread_t th[THREADS];
	struct worker w[THREADS];

	(void)state;
	for (unsigned t = 1; t <= 2; t++) {
		struct bft_ec *ec = new_ec(t, NULL);

		for (int j = 0; j < THREADS; j++) {
			w[j] = (struct worker){ .ec = ec, .n = 3 * t + 1,
			    .t = t, .seed = 0x9e3779b97f4a7c15ull * (j + 1) };
			assert_int_equal(pthread_create(&th[j], NULL,
			    worker_run, &w[j]), 0);
		}
		for (int j = 0; j < THREADS; j++) {
			assert_int_equal(pthread_join(th[j], NULL), 0);
			assert_int_equal(w[j].failures, 0);
		}
		bft_ec_free(ec);
	}
}

static int
setup(void **state)
{
	(void)state;
	return bft_crypto_init();
}

/*
 * The direct path (ec.c) is in use with ISA-L and writes exactly the
 * fragments liberasurecode_encode makes, for a block and for the sealed
 * block's odd length: what goes on the wire and disk never changes.
 */
static void
test_direct_matches_library(void **state)
{
	static const char *const names[] = { "isa_l_rs_cauchy",
	    "isa_l_rs_vand" };
	static const uint32_t lens[] = { BFT_BLOCK_SIZE, BFT_BLOCK_SIZE + 16 };

	(void)state;
	for (size_t b = 0; b < 2; b++)
	for (unsigned t = 1; t <= 2; t++)
	for (size_t l = 0; l < 2; l++) {
		struct ec_args args = { .k = (int)t + 1, .m = 2 * (int)t,
		    .w = 8, .hd = 2 * (int)t + 1, .ct = CHKSUM_NONE };
		ec_backend_id_t id = b == 0 ? EC_BACKEND_ISA_L_RS_CAUCHY :
		    EC_BACKEND_ISA_L_RS_VAND;
		char err[256], **data = NULL, **parity = NULL;
		uint8_t *block = malloc(lens[l]), *frags[BFT_MAX_N];
		struct bft_ec *ec;
		uint64_t flen = 0;
		int desc;

		if (!liberasurecode_backend_available(id)) {
			free(block);
			continue;
		}
		assert_int_equal(bft_ec_new_len(t, names[b], lens[l], &ec, err,
		    sizeof err), 0);
		assert_true(bft_ec_direct(ec));
		desc = liberasurecode_instance_create(id, &args);
		assert_true(desc > 0);
		bft_random(block, lens[l]);
		for (unsigned i = 0; i < 3 * t + 1; i++)
			frags[i] = malloc(bft_ec_frag_len(ec));
		assert_int_equal(bft_ec_encode(ec, block, frags), 0);
		assert_int_equal(liberasurecode_encode(desc, (char *)block,
		    lens[l], &data, &parity, &flen), 0);
		assert_int_equal(flen, bft_ec_frag_len(ec));
		for (unsigned i = 0; i < t + 1; i++)
			assert_memory_equal(frags[i], data[i], flen);
		for (unsigned i = 0; i < 2 * t; i++)
			assert_memory_equal(frags[t + 1 + i], parity[i], flen);
		liberasurecode_encode_cleanup(desc, data, parity);
		liberasurecode_instance_destroy(desc);
		for (unsigned i = 0; i < 3 * t + 1; i++)
			free(frags[i]);
		free(block);
		bft_ec_free(ec);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_t1),
		cmocka_unit_test(test_odd_value_len),
		cmocka_unit_test(test_t2),
		cmocka_unit_test(test_t3),
		cmocka_unit_test(test_t5),
		cmocka_unit_test(test_special_blocks),
		cmocka_unit_test(test_frag_len),
		cmocka_unit_test(test_too_few),
		cmocka_unit_test(test_backends),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_corruption_contract),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_direct_matches_library),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
