/*
 * Wire format: round trips of every message, rejection of every malformed
 * field, frame splitting, and a fixed-seed mutation loop that must never
 * crash (ASan turns any overread into a failure).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <msgpack.h>

#include "wire.h"

static const uint8_t all_types[16] = {
	1, 2, 3, 4, 5, 6, 7, 8, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88,
};

static uint64_t rng_state;
static uint8_t fragbuf[BFT_MAX_FRAG + 2];
static const uint8_t zeros[BFT_MAX_FRAG + 2];
/* The last message that expect() decoded. */
static struct bft_msg dec;
/* For expect(): refused, for whatever reason. */
static const char ANY[] = "any reason";

static uint64_t
rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void
rnd_bytes(void *p, size_t len)
{
	uint8_t *b = p;

	while (len--)
		*b++ = (uint8_t)rnd();
}

/* Fills exactly the fields that type (with status) carries on the wire. */
static void
make_msg(struct bft_msg *m, uint8_t type, int32_t status, unsigned n,
	 uint32_t max_frag)
{
	unsigned i;

	memset(m, 0, sizeof(*m));
	m->type = type;
	m->id = rnd();
	m->block = (type == BFT_HELLO || type == BFT_FLUSH) ? 0 : rnd();
	m->status = (type & BFT_ACK) ? status : 0;
	if (m->status != 0)
		return;
	switch (type) {
	case BFT_HELLO:
		rnd_bytes(m->cluster_id, sizeof(m->cluster_id));
		rnd_bytes(&m->hello_n, sizeof(m->hello_n));
		rnd_bytes(&m->hello_t, sizeof(m->hello_t));
		rnd_bytes(&m->block_size, sizeof(m->block_size));
		rnd_bytes(&m->nblocks, sizeof(m->nblocks));
		rnd_bytes(&m->server_index, sizeof(m->server_index));
		break;
	case BFT_STORE:
	case BFT_FILTER | BFT_ACK:
		rnd_bytes(&m->ts, sizeof(m->ts));
		if (type == BFT_STORE)
			rnd_bytes(m->nh, sizeof(m->nh));
		rnd_bytes(m->vec, n * BFT_MAC_LEN);
		rnd_bytes(m->cc, n * BFT_HASH_LEN);
		/* Both limits, and anything between. */
		m->frag_len = (uint32_t[]){ 0, max_frag,
		    (uint32_t)(rnd() % (max_frag + 1)) }[rnd() % 3];
		m->frag = fragbuf + rnd() % 2;
		break;
	case BFT_COMPLETE:
		rnd_bytes(&m->ts, sizeof(m->ts));
		rnd_bytes(m->nonce, sizeof(m->nonce));
		rnd_bytes(m->vec, n * BFT_MAC_LEN);
		break;
	case BFT_FILTER:
		m->ncands = 1 + (uint32_t)(rnd() % BFT_MAX_N);
		for (i = 0; i < m->ncands; i++)
			rnd_bytes(&m->cands[i], offsetof(struct bft_cand, vec) +
			    n * BFT_MAC_LEN);
		break;
	case BFT_COLLECT:
		m->want_frag = rnd() & 1;
		break;
	case BFT_COLLECT | BFT_ACK:
		/* Mostly with cc (and a fragment of any allowed length). */
		m->has_cc = rnd() % 4 != 0;
		if (m->has_cc) {
			rnd_bytes(m->cc, n * BFT_HASH_LEN);
			m->frag_len = (uint32_t[]){ 0, max_frag,
			    (uint32_t)(rnd() % (max_frag + 1)) }[rnd() % 3];
			m->frag = fragbuf + rnd() % 2;
		}
		/* FALLTHROUGH */
	case BFT_REPAIR:
		m->ncands = 1;
		rnd_bytes(&m->cands[0], offsetof(struct bft_cand, vec) +
		    n * BFT_MAC_LEN);
		break;
	case BFT_CLOCK | BFT_ACK:
		rnd_bytes(&m->ts, sizeof(m->ts));
		break;
	}
}

static void
assert_msg_equal(const struct bft_msg *a, const struct bft_msg *b)
{
	assert_int_equal(a->type, b->type);
	assert_true(a->id == b->id && a->block == b->block);
	assert_int_equal(a->status, b->status);
	assert_memory_equal(&a->ts, &b->ts, sizeof(a->ts));
	assert_memory_equal(a->nonce, b->nonce, sizeof(a->nonce));
	assert_memory_equal(a->nh, b->nh, sizeof(a->nh));
	assert_memory_equal(a->vec, b->vec, sizeof(a->vec));
	assert_memory_equal(a->cc, b->cc, sizeof(a->cc));
	assert_int_equal(a->ncands, b->ncands);
	assert_memory_equal(a->cands, b->cands, sizeof(a->cands));
	assert_memory_equal(a->cluster_id, b->cluster_id, BFT_CLUSTER_ID_LEN);
	assert_int_equal(a->hello_n, b->hello_n);
	assert_int_equal(a->hello_t, b->hello_t);
	assert_int_equal(a->block_size, b->block_size);
	assert_int_equal(a->server_index, b->server_index);
	assert_true(a->nblocks == b->nblocks);
	assert_int_equal(a->want_frag, b->want_frag);
	assert_int_equal(a->has_cc, b->has_cc);
	assert_int_equal(a->frag_len, b->frag_len);
	if (a->frag_len)
		assert_memory_equal(a->frag, b->frag, a->frag_len);
}

/* Encodes m alone into b (emptied first) and returns the body length. */
static uint32_t
encode_one(const struct bft_msg *m, unsigned n, struct bft_buf *b)
{
	uint32_t bl = 0;

	b->len = 0;
	assert_int_equal(bft_wire_encode(m, n, b), 0);
	assert_int_equal(bft_wire_frame(b->data, b->len, &bl), 0);
	assert_int_equal((size_t)bl + 4, b->len);
	return bl;
}

/*
 * Decodes a private, exactly sized copy of body, so that ASan sees any
 * overread, into dec.  want is NULL for success, ANY for any refusal, or
 * the exact reason expected.
 */
static void
expect(const void *body, size_t len, unsigned n, const char *want)
{
	uint8_t *copy = malloc(len ? len : 1);
	const char *why = NULL;
	int rc;

	assert_non_null(copy);
	if (len)
		memcpy(copy, body, len);
	rc = bft_wire_decode(copy, len, n, &dec, &why);
	if (want == NULL) {
		assert_int_equal(rc, 0);
		assert_true(dec.frag_len == 0 || (dec.frag >= copy &&
		    dec.frag + dec.frag_len <= copy + len));
	} else {
		assert_int_equal(rc, -1);
		assert_true(why != NULL && *why != '\0');
		if (want != ANY)
			assert_string_equal(why, want);
	}
	free(copy);
}

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
		for (ti = 0; ti < 16; ti++) {
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
	static const uint8_t bad_types[] = { 0, 9, 0x7f, 0x80, 0x89, 0xff };
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
		assert_int_equal(bft_wire_encode(&m1, 4, &b), -1);
	}
	m2.ncands = 0;
	assert_int_equal(bft_wire_encode(&m2, 4, &b), -1);
	m2.ncands = BFT_MAX_N + 1;
	assert_int_equal(bft_wire_encode(&m2, 4, &b), -1);
	m2.ncands = BFT_MAX_N;
	assert_int_equal(bft_wire_encode(&m2, 3, &b), -1);
	assert_int_equal(bft_wire_encode(&m2, BFT_MAX_N + 1, &b), -1);
	assert_int_equal((size_t)l1 + l2 + 8, b.len);
	assert_int_equal(bft_wire_encode(&m2, BFT_MAX_N, &b), 0);

	make_msg(&m1, BFT_STORE, 0, 4, 0);
	m1.frag = fragbuf;
	m1.frag_len = BFT_MAX_FRAG + 1;
	assert_int_equal(bft_wire_encode(&m1, 4, &b), -1);
	m1.type = BFT_FILTER | BFT_ACK;
	assert_int_equal(bft_wire_encode(&m1, 4, &b), -1);
	m1.frag = NULL;
	m1.frag_len = 5;
	assert_int_equal(bft_wire_encode(&m1, 4, &b), -1);
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
	assert_string_equal(bft_msg_type_str(0), "UNKNOWN");
	assert_string_equal(bft_msg_type_str(0x89), "UNKNOWN");
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
	assert_int_equal(bft_wire_frame(buf, 32, &bl), -1);
	memset(buf, 0xff, 4);
	assert_int_equal(bft_wire_frame(buf, 4, &bl), -1);
}

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

static void
tree_make(struct tree *t, uint8_t type, int32_t status, unsigned n,
	  uint32_t max_frag)
{
	static struct bft_msg m;
	size_t off = 0;
	uint32_t bl;

	memset(t, 0, sizeof(*t));
	t->n = n;
	make_msg(&m, type, status, n, max_frag);
	bl = encode_one(&m, n, &t->enc);
	msgpack_unpacked_init(&t->u);
	assert_int_equal(msgpack_unpack_next(&t->u,
	    (const char *)t->enc.data + 4, bl, &off), MSGPACK_UNPACK_SUCCESS);
	t->a = t->u.data.via.array.ptr;
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

/* R_OPTCC: COLLECT_ACK's cc, which may also be empty. */
enum role { R_PLAIN, R_STATUS, R_CANDS, R_FRAG, R_OPTCC };

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
	if (save.type == MSGPACK_OBJECT_BIN && role != R_FRAG &&
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
		texpect(t, ANY);
		grown = malloc((sz + 1) * sizeof(*grown));
		assert_non_null(grown);
		memcpy(grown, save.via.array.ptr, sz * sizeof(*grown));
		grown[sz] = grown[sz - 1];
		o->via.array.ptr = grown;
		o->via.array.size = sz + 1;
		texpect(t, ANY);
		free(grown);
		*tries += 2;
		*o = save;
	}
	for (i = 0; i < sz; i++) {
		role = R_PLAIN;
		if (o == &t->u.data && i == 3 && (type & BFT_ACK))
			role = R_STATUS;
		else if (o == &t->u.data && i == 3 && type == BFT_FILTER)
			role = R_CANDS;
		else if (o == &t->u.data && i == 7 && (type == BFT_STORE ||
		    type == (BFT_FILTER | BFT_ACK)))
			role = R_FRAG;
		else if (o == &t->u.data && type == (BFT_COLLECT | BFT_ACK) &&
		    i == 6)
			role = R_FRAG;
		else if (o == &t->u.data && type == (BFT_COLLECT | BFT_ACK) &&
		    i == 5)
			role = R_OPTCC;
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
		for (ti = 0; ti < 16; ti++) {
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
	static const uint64_t bad_types[] = { 0, 9, 0x7f, 0x80, 0x89, 0xff,
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
 * Flips random bytes of valid bodies.  Whatever decodes must be a
 * message the encoder accepts and that survives another round trip.
 */
static void
test_mutation_fuzz(void **state)
{
	static struct bft_msg m, d, d2;
	struct bft_buf pool[16] = { { 0 } }, b = { 0 };
	unsigned it, flips, accepted = 0;
	uint32_t plen[16], bl;
	const char *why;
	uint8_t *copy;
	size_t len, k;

	(void)state;
	for (k = 0; k < 16; k++) {
		make_msg(&m, all_types[k], 0, 4, 48);
		plen[k] = encode_one(&m, 4, &pool[k]);
	}
	for (it = 0; it < 20000; it++) {
		k = rnd() % 16;
		len = rnd() % 8 ? plen[k] : rnd() % (plen[k] + 1);
		copy = malloc(len ? len : 1);
		assert_non_null(copy);
		memcpy(copy, pool[k].data + 4, len);
		for (flips = 1 + rnd() % 4; flips > 0 && len; flips--)
			copy[rnd() % len] ^= (uint8_t)(1 + rnd() % 255);
		why = NULL;
		if (bft_wire_decode(copy, len, 4, &d, &why) == 0) {
			accepted++;
			assert_true(d.frag_len == 0 || (d.frag >= copy &&
			    d.frag + d.frag_len <= copy + len));
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
	for (k = 0; k < 16; k++)
		bft_buf_free(&pool[k]);
	bft_buf_free(&b);
}

static int
setup(void **state)
{
	(void)state;
	rng_state = 0x2545f4914f6cdd1dull;
	rnd_bytes(fragbuf, sizeof(fragbuf));
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_round_trip, setup),
		cmocka_unit_test_setup(test_encode, setup),
		cmocka_unit_test(test_frame),
		cmocka_unit_test_setup(test_reject_every_field, setup),
		cmocka_unit_test_setup(test_reject_values, setup),
		cmocka_unit_test_setup(test_reject_raw, setup),
		cmocka_unit_test(test_every_format),
		cmocka_unit_test_setup(test_mutation_fuzz, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
