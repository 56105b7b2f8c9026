/*
 * Wire format: round trips of every message, frame splitting, and a
 * fixed-seed mutation loop that must never crash (ASan turns any overread
 * into a failure).  Rejection of malformed input is in test_wire_reject.c;
 * the fixture is wire_fixture.h.
 */
#include "wire_fixture.h"

static void
test_round_trip(void **state)
{
	static struct bft_msg m, d;
	struct bft_buf b = { 0 };
	unsigned n, ti, i;
	const char *why;
	uint32_t bl;
	int32_t st;

	(void)state;
	for (n = 4; n <= 7; n += 3) {
		for (ti = 0; ti < NTYPES; ti++) {
			for (i = 0; i < 30; i++) {
				st = i % 3 ? 0 : (int32_t)(rnd() | 1);
				make_msg(&m, all_types[ti], st, n,
				    BFT_MAX_FRAG);
				bl = encode_one(&m, n, &b);
				assert_int_equal(bft_wire_decode(b.data + 4, bl,
				    n, &d, &why), 0);
				assert_msg_equal(&m, &d);
				/* frag is last: uncopied, it ends the body. */
				if (d.frag_len)
					assert_ptr_equal(d.frag + d.frag_len,
					    b.data + b.len);
			}
		}
	}
	bft_buf_free(&b);
}

static void
test_encode(void **state)
{
	static const uint8_t bad_types[] = { 0, BFT_MSG_TYPE_MAX + 1, 0x7f,
	    0x80, BFT_ACK | (BFT_MSG_TYPE_MAX + 1), 0xff };
	static struct bft_msg m1, m2, d;
	struct bft_buf b = { 0 };
	uint32_t l1, l2;
	size_t i;

	(void)state;
	/* Frames append; a failed encode leaves earlier ones untouched. */
	make_msg(&m1, BFT_STORE, 0, 4, 1000);
	make_msg(&m2, BFT_FILTER, 0, 4, 0);
	assert_int_equal(bft_wire_encode(&m1, 4, &b), 0);
	assert_int_equal(bft_wire_encode(&m2, 4, &b), 0);
	assert_int_equal(bft_wire_frame(b.data, b.len, &l1), 0);
	assert_int_equal(bft_wire_frame(b.data + 4 + l1, b.len - 4 - l1, &l2),
	    0);
	assert_int_equal((size_t)l1 + l2 + 8, b.len);
	assert_int_equal(bft_wire_decode(b.data + 4, l1, 4, &d, NULL), 0);
	assert_msg_equal(&m1, &d);
	assert_int_equal(bft_wire_decode(b.data + 8 + l1, l2, 4, &d, NULL), 0);
	assert_msg_equal(&m2, &d);
	for (i = 0; i < sizeof(bad_types); i++) {
		m1.type = bad_types[i];
		assert_int_equal(bft_wire_encode(&m1, 4, &b), -EINVAL);
	}
	m2.ncands = 0;
	assert_int_equal(bft_wire_encode(&m2, 4, &b), -EINVAL);
	m2.ncands = BFT_MAX_N + 1;
	assert_int_equal(bft_wire_encode(&m2, 4, &b), -EINVAL);
	m2.ncands = BFT_MAX_N;
	assert_int_equal(bft_wire_encode(&m2, 3, &b), -EINVAL);
	assert_int_equal(bft_wire_encode(&m2, BFT_MAX_N + 1, &b), -EINVAL);
	assert_int_equal((size_t)l1 + l2 + 8, b.len);
	assert_int_equal(bft_wire_encode(&m2, BFT_MAX_N, &b), 0);

	make_msg(&m1, BFT_STORE, 0, 4, 0);
	m1.frag = fragbuf;
	m1.frag_len = BFT_MAX_FRAG + 1;
	assert_int_equal(bft_wire_encode(&m1, 4, &b), -EINVAL);
	m1.type = BFT_FILTER | BFT_ACK;
	assert_int_equal(bft_wire_encode(&m1, 4, &b), -EINVAL);
	m1.frag = NULL;
	m1.frag_len = 5;
	assert_int_equal(bft_wire_encode(&m1, 4, &b), -EINVAL);
	m1.frag_len = 0;
	assert_int_equal(bft_wire_encode(&m1, 4, &b), 0);

	/* HELLO and FLUSH carry block 0 whatever the caller left in it. */
	make_msg(&m1, BFT_FLUSH, 0, 4, 0);
	m1.block = 5;
	l1 = encode_one(&m1, 4, &b);
	expect(b.data + 4, l1, 4, NULL);
	assert_true(dec.type == BFT_FLUSH && dec.block == 0);
	bft_buf_free(&b);
	assert_null(b.data);

	assert_string_equal(bft_msg_type_str(BFT_STORE), "STORE");
	assert_string_equal(bft_msg_type_str(BFT_STORE | BFT_ACK),
	    "STORE_ACK");
	assert_string_equal(bft_msg_type_str(BFT_FLUSH | BFT_ACK),
	    "FLUSH_ACK");
	assert_string_equal(bft_msg_type_str(BFT_STATUS), "STATUS");
	assert_string_equal(bft_msg_type_str(BFT_SUMMARY | BFT_ACK),
	    "SUMMARY_ACK");
	assert_string_equal(bft_msg_type_str(BFT_STATUS | BFT_ACK),
	    "STATUS_ACK");
	assert_string_equal(bft_msg_type_str(BFT_SCRUB | BFT_ACK),
	    "SCRUB_ACK");
	assert_string_equal(bft_msg_type_str(0), "UNKNOWN");
	assert_string_equal(bft_msg_type_str(BFT_ACK | (BFT_MSG_TYPE_MAX + 1)),
	    "UNKNOWN");
	assert_string_equal(bft_msg_type_str(BFT_SNAPSPACE | BFT_ACK),
	    "SNAPSPACE_ACK");
	assert_string_equal(bft_msg_type_str(BFT_FINALIZE | BFT_ACK),
	    "FINALIZE_ACK");
	assert_string_equal(bft_msg_type_str(BFT_VOLUMES | BFT_ACK),
	    "VOLUMES_ACK");
	assert_string_equal(bft_msg_type_str(BFT_DROP), "DROP");
	assert_string_equal(bft_msg_type_str(BFT_DROP | BFT_ACK), "DROP_ACK");

	/* A DROP names a volume by its block 0, and nothing else. */
	make_msg(&m1, BFT_DROP, 0, 4, 0);
	m1.block = bft_addr(5, 0);
	l1 = encode_one(&m1, 4, &b);
	expect(b.data + 4, l1, 4, NULL);
	assert_true(dec.type == BFT_DROP && dec.block == bft_addr(5, 0));
	assert_memory_equal(dec.vec, m1.vec, 4 * BFT_MAC_LEN);
	m1.block = bft_addr(5, 1);
	assert_int_equal(bft_wire_encode(&m1, 4, &b), -EINVAL);

	/* So does a SNAP, whose op is add or remove and nothing else. */
	assert_string_equal(bft_msg_type_str(BFT_SNAP), "SNAP");
	assert_string_equal(bft_msg_type_str(BFT_VFILTER | BFT_ACK),
	    "VFILTER_ACK");
	make_msg(&m1, BFT_SNAP, 0, 4, 0);
	m1.block = bft_addr(5, 0);
	m1.gen = 77;
	m1.snap_op = BFT_SNAP_REMOVE;
	l1 = encode_one(&m1, 4, &b);
	expect(b.data + 4, l1, 4, NULL);
	assert_true(dec.type == BFT_SNAP && dec.gen == 77 &&
	    dec.snap_op == BFT_SNAP_REMOVE);
	m1.snap_op = 2;
	assert_int_equal(bft_wire_encode(&m1, 4, &b), -EINVAL);
	m1.snap_op = BFT_SNAP_ADD;
	m1.block = bft_addr(5, 1);
	assert_int_equal(bft_wire_encode(&m1, 4, &b), -EINVAL);

	/* A view request is its twin with a boundary; replies are alike. */
	assert_true(bft_view_base(BFT_VCOLLECT) == BFT_COLLECT);
	assert_true(bft_view_base(BFT_VREPAIR | BFT_ACK) ==
	    (BFT_REPAIR | BFT_ACK));
	assert_true(bft_view_base(BFT_SNAP) == BFT_SNAP);
	assert_false(bft_is_view(BFT_COLLECT));
	make_msg(&m1, BFT_VFILTER, 0, 4, 0);
	m1.gen = UINT64_MAX;
	l1 = encode_one(&m1, 4, &b);
	expect(b.data + 4, l1, 4, NULL);
	assert_msg_equal(&m1, &dec);
	bft_buf_free(&b);
}

/*
 * The encoder refuses what the decoder would: SUMMARY's and LCLIST's
 * bounds, too many digests or entries, records without their bytes.
 * STATUS carries block 0 whatever the caller left in it.
 */
static void
test_encode_heal(void **state)
{
	static const struct { uint32_t count, span; int ok; } sums[] = {
		{ 1, 1, 0 }, { 0, 1, -EINVAL }, { 1, 0, -EINVAL },
		{ 0, 0, -EINVAL }, { BFT_SUMMARY_MAX, 1, 0 },
		{ BFT_SUMMARY_MAX + 1, 1, -EINVAL },
		{ 4 * BFT_SUMMARY_MAX, 4, 0 },
		{ 4 * BFT_SUMMARY_MAX + 1, 4, -EINVAL },
		{ UINT32_MAX, UINT32_MAX, 0 }, { UINT32_MAX, 1u << 22, 0 },
		{ UINT32_MAX, (1u << 22) - 1, -EINVAL },
	};
	static struct bft_msg m;
	struct bft_buf b = { 0 };
	uint32_t bl;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(sums) / sizeof(sums[0]); i++) {
		make_msg(&m, BFT_SUMMARY, 0, 4, 0);
		m.count = sums[i].count;
		m.span = sums[i].span;
		b.len = 0;
		assert_int_equal(bft_wire_encode(&m, 4, &b), sums[i].ok);
		if (sums[i].ok == 0) {
			expect(b.data + 4, b.len - 4, 4, NULL);
			assert_true(dec.count == m.count && dec.span == m.span);
		}
	}
	make_msg(&m, BFT_LCLIST, 0, 4, 0);
	for (m.count = 0; m.count <= BFT_LCLIST_MAX + 1; m.count++) {
		b.len = 0;
		assert_int_equal(bft_wire_encode(&m, 4, &b),
		    m.count >= 1 && m.count <= BFT_LCLIST_MAX ? 0 : -EINVAL);
		if (m.count == 2)
			m.count = BFT_LCLIST_MAX - 1;
	}

	make_msg(&m, BFT_SUMMARY | BFT_ACK, 0, 4, 0);
	m.digests = fragbuf;
	m.ndigests = BFT_SUMMARY_MAX;
	bl = encode_one(&m, 4, &b);
	expect(b.data + 4, bl, 4, NULL);
	assert_int_equal(dec.ndigests, BFT_SUMMARY_MAX);
	m.ndigests = BFT_SUMMARY_MAX + 1;
	assert_int_equal(bft_wire_encode(&m, 4, &b), -EINVAL);
	m.digests = NULL;
	m.ndigests = 1;
	assert_int_equal(bft_wire_encode(&m, 4, &b), -EINVAL);
	m.ndigests = 0;
	bl = encode_one(&m, 4, &b);
	expect(b.data + 4, bl, 4, NULL);
	assert_int_equal(dec.ndigests, 0);
	/* An error reply carries nothing, whatever the fields say. */
	m.status = BFT_ERANGE;
	m.ndigests = BFT_SUMMARY_MAX + 1;
	bl = encode_one(&m, 4, &b);
	expect(b.data + 4, bl, 4, NULL);
	assert_true(dec.status == BFT_ERANGE && dec.ndigests == 0);

	make_msg(&m, BFT_LCLIST | BFT_ACK, 0, 4, 0);
	m.entries = fragbuf;
	m.nentries = BFT_LCLIST_MAX;
	bl = encode_one(&m, 4, &b);
	expect(b.data + 4, bl, 4, NULL);
	assert_int_equal(dec.nentries, BFT_LCLIST_MAX);
	assert_memory_equal(dec.entries, fragbuf,
	    BFT_LCLIST_MAX * BFT_LCENTRY_LEN);
	m.nentries = BFT_LCLIST_MAX + 1;
	assert_int_equal(bft_wire_encode(&m, 4, &b), -EINVAL);
	m.entries = NULL;
	m.nentries = 2;
	assert_int_equal(bft_wire_encode(&m, 4, &b), -EINVAL);

	make_msg(&m, BFT_STATUS, 0, 4, 0);
	m.block = 77;
	bl = encode_one(&m, 4, &b);
	expect(b.data + 4, bl, 4, NULL);
	assert_true(dec.type == BFT_STATUS && dec.block == 0);

	/* STATUS_ACK: every field in table order, uint64 range included. */
	make_msg(&m, BFT_STATUS | BFT_ACK, 0, 4, 0);
	m.info.version = 2;
	m.info.scrub_total = UINT64_MAX;
	m.info.rebuild_state = BFT_REBUILD_WAITING;
	bl = encode_one(&m, 4, &b);
	expect(b.data + 4, bl, 4, NULL);
	assert_memory_equal(&dec.info, &m.info, sizeof(m.info));
	assert_string_equal(bft_status_fields[0].name, "version");
	assert_string_equal(bft_status_fields[BFT_STATUS_NFIELDS_0 - 1].name,
	    "scrub_total");
	assert_string_equal(bft_status_fields[BFT_STATUS_NFIELDS - 1].name,
	    "mac_old_retained");
	/* To release 0.2.0: its fields alone, the rest read back as 0. */
	memset((char *)&m.info + sizeof(uint64_t) * BFT_STATUS_NFIELDS_0, 0,
	    sizeof m.info - sizeof(uint64_t) * BFT_STATUS_NFIELDS_0);
	bl = encode_one(&m, 4, &b);
	expect(b.data + 4, bl, 4, NULL);
	assert_memory_equal(&dec.info, &m.info, sizeof(m.info));
	m.info.level = 1;
	m.info.release = bft_release_code(0, 3, 0);
	bl = encode_one(&m, 4, &b);
	expect(b.data + 4, bl, 4, NULL);
	assert_memory_equal(&dec.info, &m.info, sizeof(m.info));
	for (i = 0; i < BFT_STATUS_NFIELDS; i++)
		assert_int_equal(bft_status_fields[i].offset,
		    i * sizeof(uint64_t));
	bft_buf_free(&b);
}

static void
test_frame(void **state)
{
	uint8_t buf[32] = { 0 };
	uint32_t bl = 77;
	size_t i;

	(void)state;
	for (i = 0; i < 4; i++)
		assert_int_equal(bft_wire_frame(buf, i, &bl), 1);
	assert_int_equal(bft_wire_frame(buf, 4, &bl), 0);
	assert_int_equal(bl, 0);
	buf[3] = 10;
	assert_int_equal(bft_wire_frame(buf, 13, &bl), 1);
	assert_int_equal(bft_wire_frame(buf, 14, &bl), 0);
	assert_int_equal(bl, 10);
	assert_int_equal(bft_wire_frame(buf, 32, &bl), 0);
	assert_int_equal(bl, 10);
	buf[1] = 0x10;	/* exactly BFT_MAX_FRAME: legal but incomplete */
	buf[3] = 0;
	assert_int_equal(bft_wire_frame(buf, 32, &bl), 1);
	buf[3] = 1;
	assert_int_equal(bft_wire_frame(buf, 32, &bl), -EMSGSIZE);
	memset(buf, 0xff, 4);
	assert_int_equal(bft_wire_frame(buf, 4, &bl), -EMSGSIZE);
}

/*
 * Flips random bytes of valid bodies.  Whatever decodes must be a
 * message the encoder accepts and that survives another round trip.
 */
static void
test_mutation_fuzz(void **state)
{
	static struct bft_msg m, d, d2, d3;
	struct bft_buf pool[NTYPES] = { { 0 } }, b = { 0 };
	struct bft_wire_scratch s = { 0 };
	unsigned it, flips, accepted = 0;
	uint32_t plen[NTYPES], bl;
	const char *why, *why2;
	uint8_t *copy;
	size_t len, k;
	int rc;

	(void)state;
	for (k = 0; k < NTYPES; k++) {
		make_msg(&m, all_types[k], 0, 4, 48);
		plen[k] = encode_one(&m, 4, &pool[k]);
	}
	for (it = 0; it < 20000; it++) {
		k = rnd() % NTYPES;
		len = rnd() % 8 ? plen[k] : rnd() % (plen[k] + 1);
		copy = malloc(len ? len : 1);
		assert_non_null(copy);
		memcpy(copy, pool[k].data + 4, len);
		for (flips = 1 + rnd() % 4; flips > 0 && len; flips--)
			copy[rnd() % len] ^= (uint8_t)(1 + rnd() % 255);
		why = NULL;
		rc = bft_wire_decode(copy, len, 4, &d, &why);
		/* The same through a kept zone, all 20000 of them. */
		why2 = NULL;
		assert_int_equal(bft_wire_decode_with(&s, copy, len, 4, &d3,
		    &why2), rc);
		assert_ptr_equal(why2, why);
		assert_memory_equal(&d3, &d, sizeof d);
		if (rc == 0) {
			accepted++;
			assert_true(d.frag_len == 0 || (d.frag >= copy &&
			    d.frag + d.frag_len <= copy + len));
			assert_true(d.ndigests == 0 || (d.digests >= copy &&
			    d.digests + (size_t)d.ndigests *
			    BFT_SUMMARY_DIGEST_LEN <= copy + len));
			assert_true(d.nentries == 0 || (d.entries >= copy &&
			    d.entries + (size_t)d.nentries *
			    entry_len(d.type) <= copy + len));
			bl = encode_one(&d, 4, &b);
			assert_int_equal(bft_wire_decode(b.data + 4, bl, 4, &d2,
			    &why), 0);
			assert_msg_equal(&d, &d2);
		} else {
			assert_non_null(why);
		}
		free(copy);
	}
	/* Flipped payload bytes leave many bodies valid; all of them would
	 * mean the decoder checks nothing. */
	assert_true(accepted > 0 && accepted < 20000);
	for (k = 0; k < NTYPES; k++)
		bft_buf_free(&pool[k]);
	bft_buf_free(&b);
	bft_wire_scratch_free(&s);
}

/* Appends arrays of 15 nested depth deep, with nils at the bottom. */
static void
nest(struct bft_buf *b, unsigned depth)
{
	uint8_t c = depth ? 0x9f : 0xc0;

	assert_int_equal(bft_buf_append(b, &c, 1), 0);
	for (unsigned i = 0; depth && i < 15; i++)
		nest(b, depth - 1);
}

/*
 * A kept zone outgrows its first chunk for a body of 15^4 objects
 * (1.2 MiB of them), and the message after that decodes as without it.
 */
static void
test_scratch(void **state)
{
	static struct bft_msg m, d, d2;
	struct bft_wire_scratch s = { 0 };
	struct bft_buf big = { 0 }, b = { 0 };
	const char *why = NULL, *why2 = NULL;
	uint32_t bl;

	(void)state;
	nest(&big, 4);
	assert_int_equal(bft_wire_decode_with(&s, big.data, big.len, 4, &d,
	    &why), -EBADMSG);
	assert_int_equal(bft_wire_decode(big.data, big.len, 4, &d2, &why2),
	    -EBADMSG);
	assert_string_equal(why, why2);
	assert_non_null(s.zone);
	make_msg(&m, BFT_FILTER, 0, 4, 0);
	bl = encode_one(&m, 4, &b);
	assert_int_equal(bft_wire_decode_with(&s, b.data + 4, bl, 4, &d,
	    NULL), 0);
	assert_msg_equal(&m, &d);
	bft_wire_scratch_free(&s);
	assert_null(s.zone);
	bft_wire_scratch_free(&s);
	bft_buf_free(&big);
	bft_buf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_round_trip, setup),
		cmocka_unit_test_setup(test_encode, setup),
		cmocka_unit_test_setup(test_encode_heal, setup),
		cmocka_unit_test(test_frame),
		cmocka_unit_test_setup(test_mutation_fuzz, setup),
		cmocka_unit_test_setup(test_scratch, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
