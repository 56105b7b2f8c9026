/*
 * Placing data fragments straight into the value (bft_ec_place) and
 * decoding around them (bft_ec_decode_placed), as the 1-round read does:
 * whatever subset of fragments turns out to be good and whatever subset
 * was placed, the value comes back byte for byte, also when a placed
 * payload was a liar's and is not among the good ones; and a fragment
 * that is not exactly the encoder's data fragment i is never placed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include <cmocka.h>

#include "crypto.h"
#include "ec.h"

#define MAX_SUBSETS 48		/* good-fragment sets tried per coder */

struct placing {
	struct bft_ec *ec;
	unsigned t, n, k;
	uint32_t flen, vlen;
	uint8_t *value, *out;
	uint8_t *frags[BFT_MAX_N];	/* as encoded */
	uint8_t *work[BFT_MAX_N];	/* the reader's fragment buffers */
};

static void
placing_init(struct placing *p, unsigned t, uint32_t vlen)
{
	char err[256] = "";

	memset(p, 0, sizeof *p);
	p->t = t;
	p->n = 3 * t + 1;
	p->k = t + 1;
	p->vlen = vlen;
	if (bft_ec_new_len(t, NULL, vlen, &p->ec, err, sizeof err) != 0)
		fail_msg("bft_ec_new_len(%u, %u): %s", t, vlen, err);
	p->flen = bft_ec_frag_len(p->ec);
	assert_non_null(p->value = malloc(vlen));
	assert_non_null(p->out = malloc(vlen));
	for (unsigned i = 0; i < p->n; i++) {
		assert_non_null(p->frags[i] = malloc(p->flen));
		assert_non_null(p->work[i] = malloc(p->flen));
	}
	bft_random(p->value, vlen);
	assert_int_equal(bft_ec_encode(p->ec, p->value, p->frags), 0);
}

static void
placing_free(struct placing *p)
{
	for (unsigned i = 0; i < p->n; i++) {
		free(p->frags[i]);
		free(p->work[i]);
	}
	free(p->value);
	free(p->out);
	bft_ec_free(p->ec);
}

/*
 * A read that asked for the fragments in asked and found those in have
 * good: asked data fragments are placed (a bad one as a liar would send
 * it, header intact, payload flipped), the rest copied whole.  Returns
 * what was placed.
 */
static uint32_t
receive(struct placing *p, uint32_t asked, uint32_t have)
{
	uint32_t placed = 0;
	uint8_t *bad = malloc(p->flen);

	assert_non_null(bad);
	memset(p->out, 0xa5, p->vlen);
	for (unsigned i = 0; i < p->n; i++) {
		const uint8_t *src = p->frags[i];

		memset(p->work[i], 0x5a, p->flen);
		if (!(asked & (1u << i)))
			continue;
		if (!(have & (1u << i))) {
			memcpy(bad, p->frags[i], p->flen);
			for (uint32_t j = p->flen / 2; j < p->flen; j += 97)
				bad[j] ^= 0xff;
			src = bad;
		}
		if (bft_ec_place(p->ec, i, src, p->work[i], p->out) == 0)
			placed |= 1u << i;
		else
			memcpy(p->work[i], src, p->flen);
	}
	free(bad);
	return placed;
}

static void
check_coder(unsigned t, uint32_t vlen)
{
	struct placing p;
	unsigned tried = 0, placed_any = 0;

	placing_init(&p, t, vlen);
	for (uint32_t have = 0; have < (1u << p.n) && tried < MAX_SUBSETS;
	    have++) {
		const uint32_t data = (1u << p.k) - 1;
		/* All data fragments asked, and every good one. */
		const uint32_t asked = data | have;
		uint32_t placed;

		if ((unsigned)__builtin_popcount(have) != p.k)
			continue;
		tried++;
		placed = receive(&p, asked, have);
		placed_any |= placed;
		assert_int_equal(placed & ~data, 0);
		assert_int_equal(bft_ec_decode_placed(p.ec, p.work, have,
		    placed, p.out), 0);
		if (memcmp(p.out, p.value, vlen) != 0)
			fail_msg("t=%u vlen=%u have=%#x placed=%#x: value "
			    "differs", t, vlen, have, placed);
	}
	assert_true(tried > 0);
	/* The block-sized value must actually take the short path. */
	if (bft_ec_direct(p.ec) && vlen == BFT_BLOCK_SIZE && t == 1)
		assert_int_equal(placed_any, 0x3);
	placing_free(&p);
}

static void
test_block_values(void **state)
{
	(void)state;
	check_coder(1, BFT_BLOCK_SIZE);
	check_coder(2, BFT_BLOCK_SIZE);
	check_coder(5, BFT_BLOCK_SIZE);
}

static void
test_sealed_values(void **state)
{
	(void)state;
	check_coder(1, BFT_BLOCK_SIZE + 16);
	check_coder(2, BFT_BLOCK_SIZE + 16);
}

/* Nothing but the encoder's data fragment i is placed, and a refusal
 * leaves both buffers alone. */
static void
test_refusals(void **state)
{
	struct placing p;
	uint8_t *copy, *hdr_before, *out_before;

	(void)state;
	placing_init(&p, 1, BFT_BLOCK_SIZE);
	if (!bft_ec_direct(p.ec)) {
		placing_free(&p);
		skip();
	}
	assert_non_null(copy = malloc(p.flen));
	assert_non_null(hdr_before = malloc(p.flen));
	assert_non_null(out_before = malloc(p.vlen));
	memset(p.out, 0x11, p.vlen);
	memset(p.work[0], 0x22, p.flen);
	memcpy(out_before, p.out, p.vlen);
	memcpy(hdr_before, p.work[0], p.flen);

	/* Parity fragments are never placed. */
	assert_int_equal(bft_ec_place(p.ec, 2, p.frags[2], p.work[0],
	    p.out), -ENOTSUP);
	assert_int_equal(bft_ec_place(p.ec, 3, p.frags[3], p.work[0],
	    p.out), -ENOTSUP);
	/* A liar's fragment 1 sent as fragment 0, or past n. */
	assert_int_equal(bft_ec_place(p.ec, 0, p.frags[1], p.work[0],
	    p.out), -ENOTSUP);
	assert_int_equal(bft_ec_place(p.ec, BFT_MAX_N, p.frags[0],
	    p.work[0], p.out), -ENOTSUP);
	/* Headers that are not the encoder's: magic, size, value size. */
	for (size_t off = 0; off < 16; off++) {
		memcpy(copy, p.frags[0], p.flen);
		copy[off] ^= 0x40;
		if (bft_ec_place(p.ec, 0, copy, p.work[0], p.out) == 0)
			fail_msg("header byte %zu flipped and still placed",
			    off);
	}
	assert_memory_equal(p.out, out_before, p.vlen);
	assert_memory_equal(p.work[0], hdr_before, p.flen);

	/* The real fragment 0 is placed: its payload, then the header. */
	assert_int_equal(bft_ec_place(p.ec, 0, p.frags[0], p.work[0],
	    p.out), 0);
	assert_memory_equal(p.out, p.value, p.vlen / 2);
	assert_memory_equal(p.out + p.vlen / 2, out_before, p.vlen / 2);
	free(copy);
	free(hdr_before);
	free(out_before);
	placing_free(&p);
}

/* With t=2 a block does not split evenly: the padded last is not placed. */
static void
test_padded_last(void **state)
{
	struct placing p;

	(void)state;
	placing_init(&p, 2, BFT_BLOCK_SIZE);
	if (!bft_ec_direct(p.ec) || BFT_BLOCK_SIZE % 3 == 0) {
		placing_free(&p);
		skip();
	}
	assert_int_equal(bft_ec_place(p.ec, 0, p.frags[0], p.work[0],
	    p.out), 0);
	assert_int_equal(bft_ec_place(p.ec, 1, p.frags[1], p.work[1],
	    p.out), 0);
	assert_int_equal(bft_ec_place(p.ec, 2, p.frags[2], p.work[2],
	    p.out), -ENOTSUP);
	memcpy(p.work[2], p.frags[2], p.flen);
	assert_int_equal(bft_ec_decode_placed(p.ec, p.work, 0x7, 0x3,
	    p.out), 0);
	assert_memory_equal(p.out, p.value, p.vlen);
	placing_free(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_block_values),
		cmocka_unit_test(test_sealed_values),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_padded_last),
	};

	bft_crypto_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
