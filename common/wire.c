/*
 * Frame encoding and checked decoding of protocol messages (see wire.h).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "wire.h"
#include "wire_scan.h"

/* Array lengths by type & 0x7f; replies with status != 0 have 4. */
static const uint8_t req_len[9] = { 0, 9, 3, 8, 6, 4, 4, 4, 3 };
static const uint8_t rep_len[9] = { 0, 4, 5, 5, 4, 7, 8, 4, 4 };

static const char *const type_names[16] = {
	"HELLO", "CLOCK", "STORE", "COMPLETE",
	"COLLECT", "FILTER", "REPAIR", "FLUSH",
	"HELLO_ACK", "CLOCK_ACK", "STORE_ACK", "COMPLETE_ACK",
	"COLLECT_ACK", "FILTER_ACK", "REPAIR_ACK", "FLUSH_ACK",
};

/* Returns the index of a known type in type_names, or -1. */
static int
type_index(uint8_t type)
{
	unsigned base = type & ~BFT_ACK;

	if (base < BFT_HELLO || base > BFT_FLUSH)
		return -1;
	return (int)(base - 1) + ((type & BFT_ACK) ? 8 : 0);
}

const char *
bft_msg_type_str(uint8_t type)
{
	int i = type_index(type);

	return i < 0 ? "UNKNOWN" : type_names[i];
}

void
bft_buf_free(struct bft_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

uint8_t *
bft_buf_extend(struct bft_buf *b, size_t len)
{
	size_t cap;
	uint8_t *nd;

	if (len > SIZE_MAX / 2 || b->len > SIZE_MAX / 2 - len)
		return NULL;
	if (b->len + len > b->cap) {
		cap = b->cap ? b->cap : 256;
		while (cap < b->len + len)
			cap *= 2;
		if ((nd = realloc(b->data, cap)) == NULL)
			return NULL;
		b->data = nd;
		b->cap = cap;
	}
	b->len += len;
	return b->data + b->len - len;
}

/* The packer's sink; a zero-length write may come with a NULL source. */
static int
buf_write(void *data, const char *p, size_t len)
{
	uint8_t *dst;

	if (len == 0)
		return 0;
	if ((dst = bft_buf_extend(data, len)) == NULL)
		return -1;
	memcpy(dst, p, len);
	return 0;
}

int
bft_buf_append(struct bft_buf *b, const void *p, size_t len)
{
	return buf_write(b, p, len);
}

static int
put_bin(msgpack_packer *pk, const void *p, size_t len)
{
	return msgpack_pack_bin(pk, len) || msgpack_pack_bin_body(pk, p, len);
}

/*
 * The fragment, always a message's last field.  With defer, only its
 * bin header is packed: the caller appends the body itself, so that
 * the channel can encrypt it straight from where it lies (one pass over
 * 32 KiB instead of a copy and then an in-place pass).
 */
static int
put_frag(msgpack_packer *pk, const void *p, size_t len, bool defer)
{
	if (defer)
		return msgpack_pack_bin(pk, len);
	return put_bin(pk, p, len);
}

static int
put_ts(msgpack_packer *pk, const struct bft_ts *ts)
{
	return msgpack_pack_array(pk, 3) || msgpack_pack_uint64(pk, ts->num) ||
	    msgpack_pack_uint64(pk, ts->wid) ||
	    put_bin(pk, ts->mac, BFT_MAC_LEN);
}

static int
put_cand(msgpack_packer *pk, const struct bft_cand *c, unsigned n)
{
	return msgpack_pack_array(pk, 3) || put_ts(pk, &c->ts) ||
	    put_bin(pk, c->nonce, BFT_NONCE_LEN) ||
	    put_bin(pk, c->vec, (size_t)n * BFT_MAC_LEN);
}

/* Packs the fields after [type, id, block, status] (or [type, id, block]). */
static int
put_fields(msgpack_packer *pk, const struct bft_msg *m, unsigned n,
    bool defer)
{
	size_t vl = (size_t)n * BFT_MAC_LEN, cl = (size_t)n * BFT_HASH_LEN;
	uint32_t i;

	switch (m->type) {
	case BFT_HELLO:
		return put_bin(pk, m->cluster_id, BFT_CLUSTER_ID_LEN) ||
		    msgpack_pack_uint32(pk, m->hello_n) ||
		    msgpack_pack_uint32(pk, m->hello_t) ||
		    msgpack_pack_uint32(pk, m->block_size) ||
		    msgpack_pack_uint64(pk, m->nblocks) ||
		    msgpack_pack_uint32(pk, m->server_index);
	case BFT_STORE:
		return put_ts(pk, &m->ts) || put_bin(pk, m->nh, BFT_HASH_LEN) ||
		    put_bin(pk, m->vec, vl) || put_bin(pk, m->cc, cl) ||
		    put_frag(pk, m->frag, m->frag_len, defer);
	case BFT_COMPLETE:
		return put_ts(pk, &m->ts) ||
		    put_bin(pk, m->nonce, BFT_NONCE_LEN) ||
		    put_bin(pk, m->vec, vl);
	case BFT_FILTER:
		if (msgpack_pack_array(pk, m->ncands))
			return -1;
		for (i = 0; i < m->ncands; i++)
			if (put_cand(pk, &m->cands[i], n))
				return -1;
		return 0;
	case BFT_COLLECT:
		return msgpack_pack_uint8(pk, m->want_frag ? 1 : 0);
	case BFT_COLLECT | BFT_ACK:
		/* Absent cc and frag are empty bins: one shape, 4 bytes. */
		return put_cand(pk, &m->cands[0], n) ||
		    put_bin(pk, m->cc, m->has_cc ? cl : 0) ||
		    put_frag(pk, m->frag, m->has_cc ? m->frag_len : 0, defer);
	case BFT_REPAIR:
		return put_cand(pk, &m->cands[0], n);
	case BFT_CLOCK | BFT_ACK:
	case BFT_STORE | BFT_ACK:
		return put_ts(pk, &m->ts);
	case BFT_FILTER | BFT_ACK:
		return put_ts(pk, &m->ts) || put_bin(pk, m->vec, vl) ||
		    put_bin(pk, m->cc, cl) ||
		    put_frag(pk, m->frag, m->frag_len, defer);
	default:
		return 0;
	}
}

/* Refuses what the decoder would refuse, before anything is written. */
static int
encode_check(const struct bft_msg *m, unsigned n)
{
	int carries_frag;

	if (n < 4 || n > BFT_MAX_N || type_index(m->type) < 0)
		return -1;
	if (m->type == BFT_FILTER && (m->ncands < 1 || m->ncands > BFT_MAX_N))
		return -1;
	carries_frag = m->type == BFT_STORE ||
	    (m->type == (BFT_FILTER | BFT_ACK) && m->status == 0) ||
	    (m->type == (BFT_COLLECT | BFT_ACK) && m->status == 0 &&
	    m->has_cc);
	if (carries_frag && (m->frag_len > BFT_MAX_FRAG ||
	    (m->frag == NULL && m->frag_len != 0)))
		return -1;
	return 0;
}

/* The fragment body a frame of m ends with (none: 0). */
static size_t
frag_tail(const struct bft_msg *m)
{
	if (m->type == BFT_STORE ||
	    (m->type == (BFT_FILTER | BFT_ACK) && m->status == 0))
		return m->frag_len;
	if (m->type == (BFT_COLLECT | BFT_ACK) && m->status == 0 && m->has_cc)
		return m->frag_len;
	return 0;
}

int
bft_wire_encode(const struct bft_msg *m, unsigned n, struct bft_buf *out)
{
	size_t start = out->len, tail;
	const uint8_t *frag;

	if (bft_wire_encode_head(m, n, out, &frag, &tail) != 0)
		return -1;
	if (tail > 0 && buf_write(out, (const char *)frag, tail) != 0) {
		out->len = start;
		return -1;
	}
	return 0;
}

int
bft_wire_encode_head(const struct bft_msg *m, unsigned n,
    struct bft_buf *out, const uint8_t **tail, size_t *tail_len)
{
	static const char zero_prefix[4];
	msgpack_packer pk;
	size_t start = out->len, body, flen;
	unsigned base = m->type & ~BFT_ACK;
	int reply = (m->type & BFT_ACK) != 0, bad;

	if (encode_check(m, n) < 0)
		return -1;
	flen = frag_tail(m);
	*tail = flen ? m->frag : NULL;
	*tail_len = flen;
	if (buf_write(out, zero_prefix, sizeof(zero_prefix)) < 0)
		return -1;
	msgpack_packer_init(&pk, out, buf_write);
	if (reply) {
		bad = msgpack_pack_array(&pk, m->status ? 4 : rep_len[base]) ||
		    msgpack_pack_uint8(&pk, m->type) ||
		    msgpack_pack_uint64(&pk, m->id) ||
		    msgpack_pack_uint64(&pk, m->block) ||
		    msgpack_pack_int32(&pk, m->status);
	} else {
		/* HELLO and FLUSH concern no block: theirs is always 0. */
		bad = msgpack_pack_array(&pk, req_len[base]) ||
		    msgpack_pack_uint8(&pk, m->type) ||
		    msgpack_pack_uint64(&pk, m->id) ||
		    msgpack_pack_uint64(&pk, (base == BFT_HELLO ||
		    base == BFT_FLUSH) ? 0 : m->block);
	}
	if (bad || ((!reply || m->status == 0) && put_fields(&pk, m, n, true)))
		goto out_fail;
	body = out->len - start - 4 + flen;
	if (body > BFT_MAX_FRAME)
		goto out_fail;
	bft_wire_put_len(out->data + start, (uint32_t)body);
	return 0;

out_fail:
	/* What was in out before stays valid; only our partial frame goes. */
	out->len = start;
	return -1;
}

int
bft_wire_frame(const uint8_t *buf, size_t avail, uint32_t *body_len)
{
	uint32_t len;

	if (avail < 4)
		return 1;
	len = (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 |
	    (uint32_t)buf[2] << 8 | buf[3];
	if (len > BFT_MAX_FRAME)
		return -1;
	if (avail - 4 < len)
		return 1;
	*body_len = len;
	return 0;
}

/*
 * Decoding.
 *
 * msgpack-c allocates every array's declared element count before it
 * reads a single element, so a five-byte body claiming 2^32 elements asks
 * for 128 GiB.  bft_wire_scan() (wire_scan.c) therefore walks the raw
 * bytes first and refuses anything that is truncated, has trailing bytes,
 * or nests or counts beyond what a message can hold; only then does
 * msgpack-c build objects.
 */

/*
 * Per-field reasons, each message type getting a copy with its own name.
 * A bin field's length reason directly follows its type reason.
 */
enum werr {
	E_OK, E_SHAPE, E_ID, E_BLOCK, E_BLOCK0, E_STATUS, E_TS, E_TS_MAC,
	E_NONCE, E_NONCE_LEN, E_NH, E_NH_LEN, E_VEC, E_VEC_LEN, E_CC,
	E_CC_LEN, E_FRAG, E_FRAG_LEN, E_CAND, E_CANDS, E_NCANDS, E_CID,
	E_CID_LEN, E_HELLO_N, E_HELLO_T, E_BSIZE, E_NBLOCKS, E_SINDEX,
	E_WANT, E_FRAG_NOCC, E_COUNT
};

#define WHYS(T) {							\
	[E_SHAPE] = T ": wrong number of elements",			\
	[E_ID] = T ": id is not a uint",				\
	[E_BLOCK] = T ": block is not a uint",				\
	[E_BLOCK0] = T ": block != 0",					\
	[E_STATUS] = T ": status is not an int32",			\
	[E_TS] = T ": ts is not [uint, uint, bin]",			\
	[E_TS_MAC] = T ": ts mac length != 16",				\
	[E_NONCE] = T ": nonce is not a bin",				\
	[E_NONCE_LEN] = T ": nonce length != 32",			\
	[E_NH] = T ": nh is not a bin",					\
	[E_NH_LEN] = T ": nh length != 32",				\
	[E_VEC] = T ": vec is not a bin",				\
	[E_VEC_LEN] = T ": vec length != n*16",				\
	[E_CC] = T ": cc is not a bin",					\
	[E_CC_LEN] = T ": cc length != n*32",				\
	[E_FRAG] = T ": frag is not a bin",				\
	[E_FRAG_LEN] = T ": frag longer than BFT_MAX_FRAG",		\
	[E_CAND] = T ": candidate is not [ts, nonce, vec]",		\
	[E_CANDS] = T ": candidates are not an array",			\
	[E_NCANDS] = T ": candidate count not in 1..BFT_MAX_N",		\
	[E_CID] = T ": cluster id is not a bin",			\
	[E_CID_LEN] = T ": cluster id length != 16",			\
	[E_HELLO_N] = T ": n is not a uint32",				\
	[E_HELLO_T] = T ": t is not a uint32",				\
	[E_BSIZE] = T ": block_size is not a uint32",			\
	[E_NBLOCKS] = T ": nblocks is not a uint",			\
	[E_SINDEX] = T ": server_index is not a uint32",		\
	[E_WANT] = T ": want is not 0 or 1",				\
	[E_FRAG_NOCC] = T ": frag without cc",				\
}

static const char *const whys[16][E_COUNT] = {
	WHYS("HELLO"), WHYS("CLOCK"), WHYS("STORE"), WHYS("COMPLETE"),
	WHYS("COLLECT"), WHYS("FILTER"), WHYS("REPAIR"), WHYS("FLUSH"),
	WHYS("HELLO_ACK"), WHYS("CLOCK_ACK"), WHYS("STORE_ACK"),
	WHYS("COMPLETE_ACK"), WHYS("COLLECT_ACK"), WHYS("FILTER_ACK"),
	WHYS("REPAIR_ACK"), WHYS("FLUSH_ACK"),
};

static int
get_u64(const msgpack_object *o, uint64_t *v)
{
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return -1;
	*v = o->via.u64;
	return 0;
}

static int
get_u32(const msgpack_object *o, uint32_t *v)
{
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
	    o->via.u64 > UINT32_MAX)
		return -1;
	*v = (uint32_t)o->via.u64;
	return 0;
}

/* Copies a bin of exactly want bytes; e names a type error, e + 1 length. */
static enum werr
get_bin(const msgpack_object *o, void *dst, size_t want, enum werr e)
{
	if (o->type != MSGPACK_OBJECT_BIN)
		return e;
	if (o->via.bin.size != want)
		return e + 1;
	memcpy(dst, o->via.bin.ptr, want);
	return E_OK;
}

static enum werr
get_ts(const msgpack_object *o, struct bft_ts *ts)
{
	const msgpack_object *a = o->via.array.ptr;

	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 3 ||
	    get_u64(&a[0], &ts->num) || get_u64(&a[1], &ts->wid))
		return E_TS;
	return get_bin(&a[2], ts->mac, BFT_MAC_LEN, E_TS);
}

static enum werr
get_cand(const msgpack_object *o, struct bft_cand *c, unsigned n)
{
	const msgpack_object *a = o->via.array.ptr;
	enum werr e;

	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 3)
		return E_CAND;
	if ((e = get_ts(&a[0], &c->ts)) ||
	    (e = get_bin(&a[1], c->nonce, BFT_NONCE_LEN, E_NONCE)) ||
	    (e = get_bin(&a[2], c->vec, (size_t)n * BFT_MAC_LEN, E_VEC)))
		return e;
	return E_OK;
}

/*
 * frag is the one field not copied: msgpack_unpack_next() leaves bin
 * objects pointing into the input, which the range check makes certain.
 */
static enum werr
get_frag(const msgpack_object *o, const uint8_t *body, size_t len,
	 struct bft_msg *m)
{
	const uint8_t *p = (const uint8_t *)o->via.bin.ptr;

	if (o->type != MSGPACK_OBJECT_BIN)
		return E_FRAG;
	if (o->via.bin.size > BFT_MAX_FRAG)
		return E_FRAG_LEN;
	if (p < body || o->via.bin.size > len ||
	    p > body + len - o->via.bin.size)
		return E_FRAG;
	m->frag = p;
	m->frag_len = o->via.bin.size;
	return E_OK;
}

/* Decodes the fields after the header of a status 0 message of a[]. */
static enum werr
get_fields(const msgpack_object *a, const uint8_t *body, size_t len,
	   unsigned n, struct bft_msg *m)
{
	size_t vl = (size_t)n * BFT_MAC_LEN, cl = (size_t)n * BFT_HASH_LEN;
	const msgpack_object *c;
	enum werr e;
	uint32_t i;

	switch (m->type) {
	case BFT_HELLO:
		if ((e = get_bin(&a[3], m->cluster_id, BFT_CLUSTER_ID_LEN,
		    E_CID)))
			return e;
		if (get_u32(&a[4], &m->hello_n))
			return E_HELLO_N;
		if (get_u32(&a[5], &m->hello_t))
			return E_HELLO_T;
		if (get_u32(&a[6], &m->block_size))
			return E_BSIZE;
		if (get_u64(&a[7], &m->nblocks))
			return E_NBLOCKS;
		if (get_u32(&a[8], &m->server_index))
			return E_SINDEX;
		return E_OK;
	case BFT_STORE:
		if ((e = get_ts(&a[3], &m->ts)) ||
		    (e = get_bin(&a[4], m->nh, BFT_HASH_LEN, E_NH)) ||
		    (e = get_bin(&a[5], m->vec, vl, E_VEC)) ||
		    (e = get_bin(&a[6], m->cc, cl, E_CC)))
			return e;
		return get_frag(&a[7], body, len, m);
	case BFT_COMPLETE:
		if ((e = get_ts(&a[3], &m->ts)) ||
		    (e = get_bin(&a[4], m->nonce, BFT_NONCE_LEN, E_NONCE)))
			return e;
		return get_bin(&a[5], m->vec, vl, E_VEC);
	case BFT_FILTER:
		if (a[3].type != MSGPACK_OBJECT_ARRAY)
			return E_CANDS;
		if (a[3].via.array.size < 1 || a[3].via.array.size > BFT_MAX_N)
			return E_NCANDS;
		c = a[3].via.array.ptr;
		for (i = 0; i < a[3].via.array.size; i++)
			if ((e = get_cand(&c[i], &m->cands[i], n)))
				return e;
		m->ncands = i;
		return E_OK;
	case BFT_REPAIR:
		m->ncands = 1;
		return get_cand(&a[3], &m->cands[0], n);
	case BFT_CLOCK | BFT_ACK:
	case BFT_STORE | BFT_ACK:
		return get_ts(&a[4], &m->ts);
	case BFT_COLLECT:
		if (a[3].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
		    a[3].via.u64 > 1)
			return E_WANT;
		m->want_frag = a[3].via.u64 == 1;
		return E_OK;
	case BFT_COLLECT | BFT_ACK:
		m->ncands = 1;
		if ((e = get_cand(&a[4], &m->cands[0], n)))
			return e;
		/* cc is all or nothing; a fragment needs its cc to be checked. */
		if (a[5].type == MSGPACK_OBJECT_BIN && a[5].via.bin.size == 0) {
			if (a[6].type == MSGPACK_OBJECT_BIN &&
			    a[6].via.bin.size != 0)
				return E_FRAG_NOCC;
		} else {
			if ((e = get_bin(&a[5], m->cc, cl, E_CC)))
				return e;
			m->has_cc = true;
		}
		return get_frag(&a[6], body, len, m);
	case BFT_FILTER | BFT_ACK:
		if ((e = get_ts(&a[4], &m->ts)) ||
		    (e = get_bin(&a[5], m->vec, vl, E_VEC)) ||
		    (e = get_bin(&a[6], m->cc, cl, E_CC)))
			return e;
		return get_frag(&a[7], body, len, m);
	default:
		return E_OK;
	}
}

/* Checks the header and the shape, then the type's own fields. */
static const char *
get_msg(const msgpack_object *o, const uint8_t *body, size_t len, unsigned n,
	struct bft_msg *m)
{
	const msgpack_object *a = o->via.array.ptr, *st;
	uint32_t cnt = o->via.array.size, want;
	unsigned base;
	enum werr e;
	int ti;

	if (o->type != MSGPACK_OBJECT_ARRAY)
		return "body is not an array";
	if (cnt < 3)
		return "body has fewer than 3 elements";
	if (a[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return "type is not a uint";
	if (a[0].via.u64 > 0xff || (ti = type_index((uint8_t)a[0].via.u64)) < 0)
		return "unknown message type";
	m->type = (uint8_t)a[0].via.u64;
	base = m->type & ~BFT_ACK;
	if (get_u64(&a[1], &m->id)) {
		e = E_ID;
	} else if (get_u64(&a[2], &m->block)) {
		e = E_BLOCK;
	} else if (!(m->type & BFT_ACK)) {
		if (cnt != req_len[base])
			e = E_SHAPE;
		else if ((base == BFT_HELLO || base == BFT_FLUSH) && m->block)
			e = E_BLOCK0;
		else
			e = get_fields(a, body, len, n, m);
	} else if (cnt < 4) {
		e = E_SHAPE;
	} else {
		st = &a[3];
		if ((st->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
		    st->via.u64 <= INT32_MAX) ||
		    (st->type == MSGPACK_OBJECT_NEGATIVE_INTEGER &&
		    st->via.i64 >= INT32_MIN)) {
			m->status = (int32_t)st->via.i64;
			want = m->status ? 4 : rep_len[base];
			if (cnt != want)
				e = E_SHAPE;
			else
				e = m->status ? E_OK :
				    get_fields(a, body, len, n, m);
		} else {
			e = E_STATUS;
		}
	}
	return e ? whys[ti][e] : NULL;
}

int
bft_wire_decode(const uint8_t *body, size_t len, unsigned n,
		struct bft_msg *m, const char **why)
{
	msgpack_unpacked u;
	size_t off = 0;
	const char *w;

	memset(m, 0, sizeof(*m));
	if (n < 4 || n > BFT_MAX_N)
		w = "cluster size n out of range";
	else if (len > BFT_MAX_FRAME)
		w = "body longer than BFT_MAX_FRAME";
	else
		w = bft_wire_scan(body, len);
	if (w != NULL)
		goto out;
	msgpack_unpacked_init(&u);
	if (msgpack_unpack_next(&u, (const char *)body, len, &off) !=
	    MSGPACK_UNPACK_SUCCESS || off != len)
		w = "msgpack-c rejected the body";
	else
		w = get_msg(&u.data, body, len, n, m);
	msgpack_unpacked_destroy(&u);
out:
	if (w == NULL)
		return 0;
	/* A half-filled message must not be mistaken for a decoded one. */
	memset(m, 0, sizeof(*m));
	if (why != NULL)
		*why = w;
	return -1;
}
