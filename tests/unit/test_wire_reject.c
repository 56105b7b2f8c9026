/*
 * Wire format: rejection of every malformed field, of bad values, counts
 * and raw bytes, and the pre-scan's sizing of every msgpack format.  Round
 * trips are in test_wire.c; the fixture is wire_fixture.h.
 */
#include "wire_fixture.h"
#include "hashtree.h"

/*
 * Malformed bodies are made by decoding a valid body into a msgpack-c
 * object tree, changing nodes, and packing the tree again.
 */
struct tree {
	struct bft_buf enc;
	msgpack_unpacked u;
	msgpack_object *a;	/* the body's elements */
	unsigned n;
};

/* The tree of a message the caller filled. */
static void
tree_of(struct tree *t, const struct bft_msg *m, unsigned n)
{
	size_t off = 0;
	uint32_t bl;

	memset(t, 0, sizeof(*t));
	t->n = n;
	bl = encode_one(m, n, &t->enc);
	msgpack_unpacked_init(&t->u);
	assert_int_equal(msgpack_unpack_next(&t->u,
	    (const char *)t->enc.data + 4, bl, &off), MSGPACK_UNPACK_SUCCESS);
	t->a = t->u.data.via.array.ptr;
}

static void
tree_make(struct tree *t, uint8_t type, int32_t status, unsigned n,
	  uint32_t max_frag)
{
	static struct bft_msg m;

	make_msg(&m, type, status, n, max_frag);
	tree_of(t, &m, n);
}

static void
tree_free(struct tree *t)
{
	msgpack_unpacked_destroy(&t->u);
	bft_buf_free(&t->enc);
}

static void
texpect(struct tree *t, const char *want)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	assert_int_equal(msgpack_pack_object(&pk, t->u.data), 0);
	expect(sb.data, sb.size, t->n, want);
	msgpack_sbuffer_destroy(&sb);
}

/*
 * R_OPTCC: COLLECT_ACK's cc, which may also be empty.  R_RECORDS:
 * SUMMARY_ACK's digests and LCLIST_ACK's entries, which may be empty
 * too, and whose lengths test_reject_heal walks.
 */
enum role { R_PLAIN, R_STATUS, R_CANDS, R_FRAG, R_OPTCC, R_RECORDS };

static const msgpack_object substitutes[] = {
	{ .type = MSGPACK_OBJECT_NIL },
	{ .type = MSGPACK_OBJECT_BOOLEAN, .via.boolean = true },
	{ .type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 3 },
	{ .type = MSGPACK_OBJECT_NEGATIVE_INTEGER, .via.i64 = -1 },
	{ .type = MSGPACK_OBJECT_FLOAT64, .via.f64 = 1.5 },
	{ .type = MSGPACK_OBJECT_STR, .via.str = { 16, (const char *)zeros } },
	{ .type = MSGPACK_OBJECT_BIN, .via.bin = { 16, (const char *)zeros } },
	{ .type = MSGPACK_OBJECT_ARRAY, .via.array = { 0, NULL } },
	{ .type = MSGPACK_OBJECT_MAP, .via.map = { 0, NULL } },
	{ .type = MSGPACK_OBJECT_EXT,
	    .via.ext = { 1, 3, (const char *)zeros } },
};

/*
 * Tries every wrong type at node o, every wrong length if o is a bin or
 * an array, then does the same below o.  The status may be either sign,
 * frag any length up to the limit, and FILTER's list 1..16 long; those
 * are tested in test_reject_values.
 */
static void
mutate(struct tree *t, msgpack_object *o, enum role role, unsigned *tries)
{
	const msgpack_object save = *o;
	unsigned type = (unsigned)t->a[0].via.u64;
	/* A view request or reply has its live twin's fields. */
	unsigned btype = bft_view_base((uint8_t)type);
	uint32_t i, sz = save.via.array.size;
	msgpack_object *grown;
	size_t k;

	for (k = 0; k < sizeof(substitutes) / sizeof(substitutes[0]); k++) {
		if (substitutes[k].type == save.type || (role == R_STATUS &&
		    (substitutes[k].type == MSGPACK_OBJECT_POSITIVE_INTEGER ||
		    substitutes[k].type == MSGPACK_OBJECT_NEGATIVE_INTEGER)))
			continue;
		*o = substitutes[k];
		texpect(t, ANY);
		++*tries;
	}
	*o = save;
	if (save.type == MSGPACK_OBJECT_BIN && role == R_RECORDS) {
		o->via.bin.ptr = (const char *)zeros;
		o->via.bin.size = save.via.bin.size + 1;
		texpect(t, ANY);
		++*tries;
	} else if (save.type == MSGPACK_OBJECT_BIN && role != R_FRAG &&
	    (role != R_OPTCC || save.via.bin.size > 0)) {
		o->via.bin.ptr = (const char *)zeros;
		o->via.bin.size = save.via.bin.size + 1;
		texpect(t, ANY);
		o->via.bin.size = save.via.bin.size - 1;
		texpect(t, ANY);
		o->via.bin.size = 0;
		/* An empty cc is "no cc", refused only with a fragment. */
		if (role != R_OPTCC || t->a[6].via.bin.size > 0)
			texpect(t, ANY);
		*tries += 3;
	}
	*o = save;
	if (save.type != MSGPACK_OBJECT_ARRAY)
		return;
	if (role != R_CANDS) {
		o->via.array.size = sz - 1;
		/*
		 * STATUS_ACK's info without its nested fields is release
		 * 0.2.0's shape, and valid (test_reject_heal).
		 */
		if (!(btype == (BFT_STATUS | BFT_ACK) && o == &t->a[4] &&
		    sz == BFT_STATUS_NFIELDS_0 + 1))
			texpect(t, ANY);
		grown = malloc((sz + 1) * sizeof(*grown));
		assert_non_null(grown);
		memcpy(grown, save.via.array.ptr, sz * sizeof(*grown));
		grown[sz] = grown[sz - 1];
		o->via.array.ptr = grown;
		o->via.array.size = sz + 1;
		/*
		 * A COLLECT_ACK grown by a copy of its fragment is a slice
		 * reply's shape, the copy its proof, valid when that is
		 * whole CVs (test_slices).
		 */
		if (!(btype == (BFT_COLLECT | BFT_ACK) && o == &t->u.data))
			texpect(t, ANY);
		free(grown);
		*tries += 2;
		*o = save;
	}
	for (i = 0; i < sz; i++) {
		role = R_PLAIN;
		if (o == &t->u.data && i == 3 && (type & BFT_ACK))
			role = R_STATUS;
		else if (o == &t->u.data && i == 3 && btype == BFT_FILTER)
			role = R_CANDS;
		else if (o == &t->u.data && i == 7 && (btype == BFT_STORE ||
		    btype == (BFT_FILTER | BFT_ACK)))
			role = R_FRAG;
		else if (o == &t->u.data && btype == (BFT_COLLECT | BFT_ACK) &&
		    i == 6)
			role = R_FRAG;
		else if (o == &t->u.data && btype == (BFT_COLLECT | BFT_ACK) &&
		    i == 5)
			role = R_OPTCC;
		else if (o == &t->u.data && i == 5 &&
		    type == (BFT_VLIST | BFT_ACK))
			role = R_RECORDS;
		else if (o == &t->u.data && i == 4 &&
		    (type == (BFT_SUMMARY | BFT_ACK) ||
		    type == (BFT_LCLIST | BFT_ACK) ||
		    type == (BFT_VOLUMES | BFT_ACK)))
			role = R_RECORDS;
		mutate(t, &save.via.array.ptr[i], role, tries);
	}
}

static void
test_reject_every_field(void **state)
{
	unsigned ti, n, tries;
	struct tree t;
	int32_t st;

	(void)state;
	for (n = 4; n <= 7; n += 3) {
		for (ti = 0; ti < NTYPES; ti++) {
			for (st = 0; st <= 3; st += 3) {
				tree_make(&t, all_types[ti], st, n, 64);
				tries = 0;
				mutate(&t, &t.u.data, R_PLAIN, &tries);
				/* The body and its three header fields. */
				assert_true(tries >= 4 * 9);
				tree_free(&t);
			}
		}
	}
}

/* Value ranges, counts and shapes that the type-by-type walk skips. */
static void
test_reject_values(void **state)
{
	static const uint64_t bad_types[] = { 0, BFT_MSG_TYPE_MAX + 1, 0x7f,
	    0x80, BFT_ACK | (BFT_MSG_TYPE_MAX + 1), 0xff,
	    0x100, 0x183, 0x100000003 };
	msgpack_object big[BFT_MAX_N + 1];
	struct tree t;
	unsigned i;

	(void)state;
	tree_make(&t, BFT_HELLO, 0, 4, 0);
	t.a[4].via.u64 = UINT32_MAX;
	texpect(&t, NULL);
	t.a[4].via.u64 = (uint64_t)UINT32_MAX + 1;
	texpect(&t, "HELLO: n is not a uint32");
	t.a[4].via.u64 = 4;
	t.a[2].via.u64 = 1;
	texpect(&t, "HELLO: block != 0");
	for (i = 0; i < sizeof(bad_types) / sizeof(bad_types[0]); i++) {
		t.a[0].via.u64 = bad_types[i];
		texpect(&t, "unknown message type");
	}
	t.a[0].type = MSGPACK_OBJECT_NIL;
	texpect(&t, "type is not a uint");
	tree_free(&t);

	tree_make(&t, BFT_STORE | BFT_ACK, 5, 4, 0);
	t.a[3].via.u64 = INT32_MAX;
	texpect(&t, NULL);
	t.a[3].via.u64 = (uint64_t)INT32_MAX + 1;
	texpect(&t, "STORE_ACK: status is not an int32");
	t.a[3].type = MSGPACK_OBJECT_NEGATIVE_INTEGER;
	t.a[3].via.i64 = INT32_MIN;
	texpect(&t, NULL);
	t.a[3].via.i64 = (int64_t)INT32_MIN - 1;
	texpect(&t, "STORE_ACK: status is not an int32");
	t.u.data.via.array.size = 3;
	texpect(&t, "STORE_ACK: wrong number of elements");
	t.u.data.via.array.size = 2;
	texpect(&t, "body has fewer than 3 elements");
	tree_free(&t);

	/* A nonzero status ends the reply; anything after it is refused. */
	tree_make(&t, BFT_CLOCK | BFT_ACK, 0, 4, 0);
	t.a[3].via.u64 = 2;
	texpect(&t, "CLOCK_ACK: wrong number of elements");
	tree_free(&t);

	tree_make(&t, BFT_FILTER, 0, 4, 0);
	t.a[3].via.array.size = 0;
	texpect(&t, "FILTER: candidate count not in 1..BFT_MAX_N");
	for (i = 0; i <= BFT_MAX_N; i++)
		big[i] = t.a[3].via.array.ptr[0];
	t.a[3].via.array.ptr = big;
	t.a[3].via.array.size = BFT_MAX_N;
	texpect(&t, NULL);
	assert_int_equal(dec.ncands, BFT_MAX_N);
	t.a[3].via.array.size = BFT_MAX_N + 1;
	texpect(&t, ANY);
	tree_free(&t);

	/* COLLECT's want is a flag; COLLECT_ACK's cc all or nothing. */
	tree_make(&t, BFT_COLLECT, 0, 4, 0);
	t.a[3].via.u64 = 1;
	texpect(&t, NULL);
	assert_true(dec.want_frag);
	t.a[3].via.u64 = 2;
	texpect(&t, "COLLECT: want is not 0 or 1");
	tree_free(&t);
	for (;;) {
		tree_make(&t, BFT_COLLECT | BFT_ACK, 0, 4, 64);
		if (t.a[5].via.bin.size > 0 && t.a[6].via.bin.size > 0)
			break;
		tree_free(&t);
	}
	texpect(&t, NULL);
	assert_true(dec.has_cc && dec.frag_len == t.a[6].via.bin.size);
	t.a[5].via.bin.size = 4 * 32 - 1;
	texpect(&t, "COLLECT_ACK: cc length != n*32");
	t.a[5].via.bin.size = 0;
	texpect(&t, "COLLECT_ACK: frag without cc");
	t.a[6].via.bin.size = 0;
	texpect(&t, NULL);
	assert_false(dec.has_cc);
	assert_int_equal(dec.frag_len, 0);
	tree_free(&t);

	tree_make(&t, BFT_STORE, 0, 4, 0);
	t.a[7].via.bin.ptr = (const char *)zeros;
	t.a[7].via.bin.size = BFT_MAX_FRAG;
	texpect(&t, NULL);
	t.a[7].via.bin.size = BFT_MAX_FRAG + 1;
	texpect(&t, "STORE: frag longer than BFT_MAX_FRAG");
	t.a[7].via.bin.size = 0;
	t.a[5].via.bin.size = 4 * 16 - 1;
	texpect(&t, "STORE: vec length != n*16");
	tree_free(&t);

	/* DROP: a volume's block 0 and a whole vector, nothing more. */
	tree_make(&t, BFT_DROP, 0, 4, 0);
	t.a[2].via.u64 = bft_addr(BFT_ADDR_MAX_VOL, 0);
	texpect(&t, NULL);
	assert_true(dec.block == bft_addr(BFT_ADDR_MAX_VOL, 0));
	t.a[2].via.u64 = bft_addr(7, 1);
	texpect(&t, "DROP: block is not a volume's block 0");
	t.a[2].via.u64 = bft_addr(7, BFT_ADDR_MAX_BLOCK);
	texpect(&t, "DROP: block is not a volume's block 0");
	t.a[2].via.u64 = 0;
	texpect(&t, NULL);
	t.a[3].via.bin.size = 4 * 16 + 1;
	t.a[3].via.bin.ptr = (const char *)zeros;
	texpect(&t, "DROP: vec length != n*16");
	t.a[3].via.bin.size = 0;
	texpect(&t, "DROP: vec length != n*16");
	t.a[3].type = MSGPACK_OBJECT_STR;
	texpect(&t, "DROP: vec is not a bin");
	t.u.data.via.array.size = 3;
	texpect(&t, "DROP: wrong number of elements");
	tree_free(&t);
	/* Its reply carries a status and nothing else. */
	tree_make(&t, BFT_DROP | BFT_ACK, 0, 4, 0);
	assert_int_equal(t.u.data.via.array.size, 4);
	texpect(&t, NULL);
	tree_free(&t);
}

/* Sets a bin node to len bytes of zeros. */
static void
set_bin(msgpack_object *o, size_t len)
{
	o->type = MSGPACK_OBJECT_BIN;
	o->via.bin.ptr = (const char *)zeros;
	o->via.bin.size = (uint32_t)len;
}

/* STATUS_ACK's nested fields, from release on. */
#define NESTED	(BFT_STATUS_NFIELDS - BFT_STATUS_NFIELDS_0)

/* Every bound of SUMMARY, LCLIST, STATUS and their replies. */
static void
test_reject_heal(void **state)
{
	static const char info_shape[] = "STATUS_ACK: info is not an array "
	    "of BFT_STATUS_NFIELDS_0 uints, maybe with the nested ones";
	msgpack_object info[BFT_STATUS_NFIELDS + 1];
	msgpack_object nested[NESTED + 1];
	struct tree t;
	unsigned i;

	(void)state;
	tree_make(&t, BFT_SUMMARY, 0, 4, 0);
	t.a[3].via.u64 = BFT_SUMMARY_MAX;
	t.a[4].via.u64 = 1;
	texpect(&t, NULL);
	assert_true(dec.count == BFT_SUMMARY_MAX && dec.span == 1);
	t.a[3].via.u64 = BFT_SUMMARY_MAX + 1;
	texpect(&t, "SUMMARY: more than BFT_SUMMARY_MAX ranges");
	t.a[4].via.u64 = 2;
	texpect(&t, NULL);
	t.a[3].via.u64 = 2 * BFT_SUMMARY_MAX + 1;
	texpect(&t, "SUMMARY: more than BFT_SUMMARY_MAX ranges");
	t.a[3].via.u64 = UINT32_MAX;
	t.a[4].via.u64 = 1u << 22;
	texpect(&t, NULL);
	t.a[4].via.u64 = (1u << 22) - 1;
	texpect(&t, "SUMMARY: more than BFT_SUMMARY_MAX ranges");
	t.a[4].via.u64 = UINT32_MAX;
	texpect(&t, NULL);
	t.a[4].via.u64 = (uint64_t)UINT32_MAX + 1;
	texpect(&t, "SUMMARY: span is not a uint32");
	t.a[4].via.u64 = 0;
	texpect(&t, "SUMMARY: span is 0");
	t.a[4].via.u64 = 1;
	t.a[3].via.u64 = 0;
	texpect(&t, "SUMMARY: count is 0");
	t.a[3].via.u64 = (uint64_t)UINT32_MAX + 1;
	texpect(&t, "SUMMARY: count is not a uint32");
	t.a[3].via.u64 = 1;
	t.u.data.via.array.size = 4;
	texpect(&t, "SUMMARY: wrong number of elements");
	tree_free(&t);

	tree_make(&t, BFT_LCLIST, 0, 4, 0);
	t.a[3].via.u64 = 1;
	texpect(&t, NULL);
	t.a[3].via.u64 = BFT_LCLIST_MAX;
	texpect(&t, NULL);
	assert_int_equal(dec.count, BFT_LCLIST_MAX);
	t.a[3].via.u64 = BFT_LCLIST_MAX + 1;
	texpect(&t, "LCLIST: count over BFT_LCLIST_MAX");
	t.a[3].via.u64 = 0;
	texpect(&t, "LCLIST: count is 0");
	t.a[3].via.u64 = (uint64_t)UINT32_MAX + 1;
	texpect(&t, "LCLIST: count is not a uint32");
	tree_free(&t);

	tree_make(&t, BFT_STATUS, 0, 4, 0);
	texpect(&t, NULL);
	t.a[2].via.u64 = 1;
	texpect(&t, "STATUS: block != 0");
	tree_free(&t);

	tree_make(&t, BFT_SUMMARY | BFT_ACK, 0, 4, 0);
	for (i = 0; i <= 2 * BFT_SUMMARY_DIGEST_LEN + 1; i++) {
		set_bin(&t.a[4], i);
		texpect(&t, i % BFT_SUMMARY_DIGEST_LEN ? "SUMMARY_ACK: digests "
		    "not 32-byte records, at most BFT_SUMMARY_MAX" : NULL);
	}
	set_bin(&t.a[4], BFT_SUMMARY_MAX * BFT_SUMMARY_DIGEST_LEN);
	texpect(&t, NULL);
	assert_int_equal(dec.ndigests, BFT_SUMMARY_MAX);
	set_bin(&t.a[4], (BFT_SUMMARY_MAX + 1) * BFT_SUMMARY_DIGEST_LEN);
	texpect(&t, "SUMMARY_ACK: digests not 32-byte records, at most "
	    "BFT_SUMMARY_MAX");
	tree_free(&t);

	tree_make(&t, BFT_LCLIST | BFT_ACK, 0, 4, 0);
	for (i = 0; i <= 2 * BFT_LCENTRY_LEN + 1; i++) {
		set_bin(&t.a[4], i);
		texpect(&t, i % BFT_LCENTRY_LEN ? "LCLIST_ACK: entries not "
		    "24-byte records, at most BFT_LCLIST_MAX" : NULL);
	}
	set_bin(&t.a[4], BFT_LCLIST_MAX * BFT_LCENTRY_LEN);
	texpect(&t, NULL);
	assert_int_equal(dec.nentries, BFT_LCLIST_MAX);
	set_bin(&t.a[4], (BFT_LCLIST_MAX + 1) * BFT_LCENTRY_LEN);
	texpect(&t, "LCLIST_ACK: entries not 24-byte records, at most "
	    "BFT_LCLIST_MAX");
	t.a[4].type = MSGPACK_OBJECT_STR;
	t.a[4].via.str.size = BFT_LCENTRY_LEN;
	texpect(&t, "LCLIST_ACK: entries is not a bin");
	tree_free(&t);

	/* Release 0.2.0's BFT_STATUS_NFIELDS_0 uints, each up to 2^64-1. */
	tree_make(&t, BFT_STATUS | BFT_ACK, 0, 4, 0);
	for (i = 0; i <= BFT_STATUS_NFIELDS; i++) {
		info[i].type = MSGPACK_OBJECT_POSITIVE_INTEGER;
		info[i].via.u64 = i == 3 ? UINT64_MAX : i;
	}
	t.a[4].via.array.ptr = info;
	t.a[4].via.array.size = BFT_STATUS_NFIELDS_0;
	texpect(&t, NULL);
	assert_true(dec.info.version == 0 && dec.info.server_index == 1 &&
	    dec.info.blocks_held == UINT64_MAX &&
	    dec.info.scrub_total == BFT_STATUS_NFIELDS_0 - 1 &&
	    dec.info.level == 0);
	t.a[4].via.array.size = BFT_STATUS_NFIELDS_0 - 1;
	texpect(&t, info_shape);
	/* The one more is the nested array, not a uint. */
	t.a[4].via.array.size = BFT_STATUS_NFIELDS_0 + 1;
	texpect(&t, info_shape);
	for (i = 0; i <= NESTED; i++) {
		nested[i].type = MSGPACK_OBJECT_POSITIVE_INTEGER;
		nested[i].via.u64 = NESTED - i;
	}
	info[BFT_STATUS_NFIELDS_0].type = MSGPACK_OBJECT_ARRAY;
	info[BFT_STATUS_NFIELDS_0].via.array.ptr = nested;
	info[BFT_STATUS_NFIELDS_0].via.array.size = NESTED;
	texpect(&t, NULL);
	assert_true(dec.info.release == NESTED &&
	    dec.info.level == NESTED - 1 &&
	    dec.info.finalized == NESTED - 2 &&
	    dec.info.snap_gc_done == NESTED - 3 &&
	    dec.info.snap_gc_total == NESTED - 4 &&
	    dec.info.recovering == NESTED - 5 &&
	    dec.info.recoveries == NESTED - 6 &&
	    dec.info.mac_epoch == NESTED - 7 &&
	    dec.info.mac_next_epoch == NESTED - 8 &&
	    dec.info.mac_old_versions == NESTED - 9 &&
	    dec.info.mac_retiring == 2 && dec.info.mac_old_retained == 1 &&
	    dec.info.scrub_total == BFT_STATUS_NFIELDS_0 - 1);
	info[BFT_STATUS_NFIELDS_0].via.array.size = NESTED - 1;
	texpect(&t, info_shape);
	/* One more: info_shape, or past the pre-scan's bound on arrays. */
	info[BFT_STATUS_NFIELDS_0].via.array.size = NESTED + 1;
	texpect(&t, ANY);
	info[BFT_STATUS_NFIELDS_0].via.array.size = NESTED;
	/* Nested fields say a level; level 0 is the shape without them. */
	nested[1].via.u64 = 0;
	texpect(&t, "STATUS_ACK: nested info fields with level 0");
	nested[1].via.u64 = 1;
	nested[2].type = MSGPACK_OBJECT_NEGATIVE_INTEGER;
	nested[2].via.i64 = -1;
	texpect(&t, "STATUS_ACK: info field is not a uint");
	nested[2].type = MSGPACK_OBJECT_POSITIVE_INTEGER;
	/* Past the pre-scan's bound on arrays, which refuses it first. */
	t.a[4].via.array.size = BFT_STATUS_NFIELDS_0 + 2;
	texpect(&t, ANY);
	t.a[4].via.array.size = BFT_STATUS_NFIELDS_0;
	info[7].type = MSGPACK_OBJECT_NEGATIVE_INTEGER;
	info[7].via.i64 = -1;
	texpect(&t, "STATUS_ACK: info field is not a uint");
	info[7].type = MSGPACK_OBJECT_BIN;
	info[7].via.bin.size = 8;
	info[7].via.bin.ptr = (const char *)zeros;
	texpect(&t, "STATUS_ACK: info field is not a uint");
	tree_free(&t);
}

static void
test_reject_raw(void **state)
{
	static const struct {
		uint8_t b[6];
		size_t len;
		const char *why;
	} bad[] = {
		{ { 0xdd, 0xff, 0xff, 0xff, 0xff }, 5,
		    "array or map longer than any message needs" },
		{ { 0xdf, 0x00, 0x00, 0x00, 0x09 }, 5,
		    "array or map longer than any message needs" },
		{ { 0xc6, 0xff, 0xff, 0xff, 0xff }, 5, "truncated body" },
		{ { 0xdb, 0xff, 0xff, 0xff, 0xff }, 5, "truncated body" },
		{ { 0x93, 0x03, 0x01, 0xc1 }, 4, "invalid msgpack byte" },
		{ { 0x93, 0x03, 0x01 }, 3, "truncated body" },
		{ { 0x93, 0x03, 0x01, 0x01, 0x00 }, 5,
		    "trailing bytes after message" },
		{ { 0x92, 0x02, 0x01 }, 2, "truncated body" },
		{ { 0x92, 0x02, 0x01 }, 3, "body has fewer than 3 elements" },
		{ { 0 }, 0, "truncated body" },
	};
	static struct bft_msg m;
	struct bft_buf b = { 0 };
	uint8_t deep[64], *huge;
	uint32_t bl;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect(bad[i].b, bad[i].len, 4, bad[i].why);
	memset(deep, 0x91, sizeof(deep));
	deep[sizeof(deep) - 1] = 0x00;
	expect(deep, sizeof(deep), 4, "nesting deeper than any message needs");

	/* Every prefix of a valid STORE is refused, never overread. */
	make_msg(&m, BFT_STORE, 0, 4, 0);
	m.frag = fragbuf;
	m.frag_len = 100;
	bl = encode_one(&m, 4, &b);
	for (i = 0; i < bl; i++)
		expect(b.data + 4, i, 4, ANY);
	expect(b.data + 4, bl, 4, NULL);
	expect(b.data + 4, bl, 7, "STORE: vec length != n*16");
	/* The next frame's prefix is trailing garbage to this one. */
	assert_int_equal(bft_wire_encode(&m, 4, &b), 0);
	expect(b.data + 4, bl + 1, 4, "trailing bytes after message");

	/* A STATUS_ACK followed by one byte too many. */
	make_msg(&m, BFT_STATUS | BFT_ACK, 0, 4, 0);
	bl = encode_one(&m, 4, &b);
	expect(b.data + 4, bl, 4, NULL);
	assert_int_equal(bft_wire_encode(&m, 4, &b), 0);
	expect(b.data + 4, bl + 1, 4, "trailing bytes after message");
	for (i = 0; i < bl; i++)
		expect(b.data + 4, i, 4, ANY);

	/* n is checked even where no field depends on it. */
	make_msg(&m, BFT_CLOCK, 0, 4, 0);
	bl = encode_one(&m, 4, &b);
	expect(b.data + 4, bl, 4, NULL);
	expect(b.data + 4, bl, 3, "cluster size n out of range");
	expect(b.data + 4, bl, BFT_MAX_N + 1, "cluster size n out of range");
	bft_buf_free(&b);

	huge = calloc(1, BFT_MAX_FRAME + 1);
	assert_non_null(huge);
	huge[0] = 0x90;
	expect(huge, BFT_MAX_FRAME + 1, 4, "body longer than BFT_MAX_FRAME");
	/* A complete array of 65535 elements never reaches msgpack-c. */
	huge[0] = 0xdc;
	huge[1] = huge[2] = 0xff;
	expect(huge, 3 + 0xffff, 4,
	    "array or map longer than any message needs");
	free(huge);
}

/*
 * The pre-scan must size every msgpack format exactly as msgpack-c does:
 * each body below is one complete object, so the only complaint left is
 * that it is not an array.  Non-minimal encodings of a message are fine.
 */
static void
test_every_format(void **state)
{
	static const int64_t ints[] = { 5, 200, 300, 70000, 1ll << 40, -5,
	    -32, -100, -300, -70000, -(1ll << 40) };
	/* fixstr, str8/16/32, bin8/16/32; fixext1..16, ext8/16/32. */
	static const size_t strs[] = { 3, 31, 40, 300, 66000 };
	static const size_t exts[] = { 1, 2, 4, 8, 16, 3, 300, 66000 };
	static const uint8_t maps[][7] = {
		{ 0xde, 0, 1, 1, 1 }, { 0xdf, 0, 0, 0, 1, 1, 1 },
	};
	static const uint8_t clock16[] = {
		0xdc, 0, 3, 0x02, 0xd0, 1, 0xcf, 0, 0, 0, 0, 0, 0, 0, 9,
	};
	static const uint8_t clock32[] = { 0xdd, 0, 0, 0, 3, 0x02, 1, 1 };
	const char *not_array = "body is not an array";
	msgpack_sbuffer sb;
	msgpack_packer pk;
	size_t k;

	(void)state;
	for (k = 0; k < 4 + 11 + 5 + 3 + 8 + 1; k++) {
		msgpack_sbuffer_init(&sb);
		msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
		if (k == 0)
			msgpack_pack_nil(&pk);
		else if (k == 1)
			msgpack_pack_true(&pk);
		else if (k == 2)
			msgpack_pack_float(&pk, 1.5f);
		else if (k == 3)
			msgpack_pack_double(&pk, 1.5);
		else if (k < 15)
			msgpack_pack_int64(&pk, ints[k - 4]);
		else if (k < 20)
			msgpack_pack_str_with_body(&pk, zeros, strs[k - 15]);
		else if (k < 23)
			msgpack_pack_bin_with_body(&pk, zeros, strs[k - 18]);
		else if (k < 31)
			msgpack_pack_ext_with_body(&pk, zeros, exts[k - 23], 7);
		else
			assert_false(msgpack_pack_map(&pk, 1) ||
			    msgpack_pack_int(&pk, 1) ||
			    msgpack_pack_int(&pk, 1));
		expect(sb.data, sb.size, 4, not_array);
		msgpack_sbuffer_destroy(&sb);
	}
	expect(maps[0], 5, 4, not_array);
	expect(maps[1], 7, 4, not_array);
	expect(clock16, sizeof(clock16), 4, NULL);
	assert_true(dec.type == BFT_CLOCK && dec.id == 1 && dec.block == 9);
	expect(clock32, sizeof(clock32), 4, NULL);
	assert_true(dec.type == BFT_CLOCK && dec.id == 1 && dec.block == 1);
}

/*
 * A slice COLLECT and its reply (common/hashtree.h): both round trip,
 * and their bounds and shapes are refused as the decoder's comment says.
 */
static void
test_slices(void **state)
{
	static uint8_t frag[5 * 1024], proof[3][BFT_HASH_LEN];
	static struct bft_msg m;
	struct bft_buf b = { 0 };
	const char *why;
	struct tree t;
	uint32_t bl;

	(void)state;
	memset(&m, 0, sizeof m);
	m.type = BFT_COLLECT;
	m.id = 9;
	m.block = 7;
	m.want_frag = m.slice = true;
	m.slice_first = 28;
	m.slice_count = 5;
	bl = encode_one(&m, 4, &b);
	assert_int_equal(bft_wire_decode(b.data + 4, bl, 4, &dec, &why), 0);
	assert_true(dec.slice && dec.want_frag);
	assert_int_equal(dec.slice_first, 28);
	assert_int_equal(dec.slice_count, 5);
	/* Bounds, and slices of a view refused before anything is sent. */
	m.slice_count = 0;
	assert_int_equal(bft_wire_encode(&m, 4, &b), -EINVAL);
	m.slice_count = BFT_TREE_MAX_CHUNKS - 27;
	assert_int_equal(bft_wire_encode(&m, 4, &b), -EINVAL);
	m.slice_count = 5;
	m.type = BFT_VCOLLECT;
	assert_int_equal(bft_wire_encode(&m, 4, &b), -EINVAL);
	m.type = BFT_COLLECT;

	tree_of(&t, &m, 4);
	t.a[5].via.u64 = 0;
	texpect(&t, "COLLECT: slice is not 1 and chunks first, count with "
	    "1 <= count, first + count <= BFT_TREE_MAX_CHUNKS");
	t.a[5].via.u64 = BFT_TREE_MAX_CHUNKS - 28;
	texpect(&t, NULL);
	t.a[5].via.u64 = BFT_TREE_MAX_CHUNKS - 27;
	texpect(&t, ANY);
	t.a[5].via.u64 = 5;
	t.a[4].via.u64 = UINT32_MAX;
	texpect(&t, ANY);
	t.a[4].type = MSGPACK_OBJECT_NIL;
	texpect(&t, ANY);
	t.a[4].type = MSGPACK_OBJECT_POSITIVE_INTEGER;
	t.a[4].via.u64 = 28;
	t.a[3].via.u64 = 0;
	texpect(&t, ANY);
	t.a[3].via.u64 = 1;
	texpect(&t, NULL);
	/* One of the two is a COLLECT of neither shape. */
	t.u.data.via.array.size = 5;
	texpect(&t, "COLLECT: wrong number of elements");
	tree_free(&t);

	memset(&m, 0, sizeof m);
	m.type = BFT_COLLECT | BFT_ACK;
	m.id = 9;
	m.block = 7;
	m.ncands = 1;
	rnd_bytes(&m.cands[0], offsetof(struct bft_cand, vec) +
	    4 * BFT_MAC_LEN);
	m.has_cc = m.slice = true;
	rnd_bytes(m.cc, 4 * BFT_HASH_LEN);
	rnd_bytes(frag, sizeof frag);
	rnd_bytes(proof, sizeof proof);
	m.frag = frag;
	m.frag_len = sizeof frag;
	m.proof = proof[0];
	m.proof_cvs = 3;
	bl = encode_one(&m, 4, &b);
	assert_int_equal(bft_wire_decode(b.data + 4, bl, 4, &dec, &why), 0);
	assert_true(dec.slice && dec.has_cc);
	assert_int_equal(dec.proof_cvs, 3);
	assert_memory_equal(dec.proof, proof, sizeof proof);
	assert_int_equal(dec.frag_len, sizeof frag);
	assert_memory_equal(dec.frag, frag, sizeof frag);
	m.proof_cvs = BFT_TREE_PROOF_MAX + 1;
	assert_int_equal(bft_wire_encode(&m, 4, &b), -EINVAL);
	m.proof_cvs = 3;

	tree_of(&t, &m, 4);
	t.a[6].via.bin.size = 3 * BFT_HASH_LEN + 1;
	texpect(&t, "COLLECT_ACK: proof not 32-byte CVs, at most "
	    "BFT_TREE_PROOF_MAX");
	t.a[6].via.bin.ptr = (const char *)fragbuf;
	t.a[6].via.bin.size = (BFT_TREE_PROOF_MAX + 1) * BFT_HASH_LEN;
	texpect(&t, ANY);
	t.a[6].via.bin.size = BFT_TREE_PROOF_MAX * BFT_HASH_LEN;
	texpect(&t, NULL);
	t.a[6].type = MSGPACK_OBJECT_NIL;
	texpect(&t, "COLLECT_ACK: proof is not a bin");
	t.a[6].type = MSGPACK_OBJECT_BIN;
	/* Without cc, neither a slice nor a proof. */
	t.a[5].via.bin.size = 0;
	texpect(&t, "COLLECT_ACK: frag without cc");
	t.a[7].via.bin.size = 0;
	texpect(&t, "COLLECT_ACK: frag without cc");
	t.a[6].via.bin.size = 0;
	texpect(&t, NULL);
	assert_false(dec.has_cc);
	assert_true(dec.slice);
	t.a[7].via.bin.size = 16;
	texpect(&t, "COLLECT_ACK: frag without cc");
	tree_free(&t);

	/* An error reply is four elements, slice or not. */
	m.status = 5;
	bl = encode_one(&m, 4, &b);
	assert_int_equal(bft_wire_decode(b.data + 4, bl, 4, &dec, &why), 0);
	assert_false(dec.slice);
	assert_int_equal(dec.status, 5);
	bft_buf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_reject_every_field, setup),
		cmocka_unit_test_setup(test_reject_values, setup),
		cmocka_unit_test_setup(test_reject_heal, setup),
		cmocka_unit_test_setup(test_reject_raw, setup),
		cmocka_unit_test_setup(test_slices, setup),
		cmocka_unit_test(test_every_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
