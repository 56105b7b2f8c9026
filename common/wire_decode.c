/*
 * Checked decoding of protocol messages (see wire.h); encoding is in
 * wire.c.
 *
 * msgpack-c allocates every array's declared element count before it
 * reads a single element, so a five-byte body claiming 2^32 elements asks
 * for 128 GiB.  bft_wire_scan() (wire_scan.c) therefore walks the raw
 * bytes first and refuses anything that is truncated, has trailing bytes,
 * or nests or counts beyond what a message can hold; only then does
 * msgpack-c build objects.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "wire.h"
#include "hashtree.h"
#include "wire_int.h"
#include "wire_scan.h"

/*
 * Per-field reasons, each message type getting a copy with its own name.
 * A bin field's length reason directly follows its type reason.
 */
enum werr {
	E_OK, E_SHAPE, E_ID, E_BLOCK, E_BLOCK0, E_STATUS, E_TS, E_TS_MAC,
	E_NONCE, E_NONCE_LEN, E_NH, E_NH_LEN, E_VEC, E_VEC_LEN, E_CC,
	E_CC_LEN, E_FRAG, E_FRAG_LEN, E_CAND, E_CANDS, E_NCANDS, E_CID,
	E_CID_LEN, E_HELLO_N, E_HELLO_T, E_BSIZE, E_NBLOCKS, E_SINDEX,
	E_WANT, E_FRAG_NOCC, E_NUM, E_NUM0, E_SPAN, E_SPAN0, E_RANGES,
	E_LCCOUNT, E_DIGESTS, E_DIGESTS_LEN, E_ENTRIES, E_ENTRIES_LEN, E_VOLS,
	E_VOLS_LEN, E_DROPBLK, E_GEN, E_SNAPOP, E_VLCOUNT, E_NEXT, E_VL,
	E_VL_LEN, E_LEVEL, E_INFO_LEVEL,
	E_INFO, E_INFO_FIELD, E_SLICE, E_PROOF, E_PROOF_LEN, E_COUNT
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
	[E_NUM] = T ": count is not a uint32",				\
	[E_NUM0] = T ": count is 0",					\
	[E_SPAN] = T ": span is not a uint32",				\
	[E_SPAN0] = T ": span is 0",					\
	[E_RANGES] = T ": more than BFT_SUMMARY_MAX ranges",		\
	[E_LCCOUNT] = T ": count over BFT_LCLIST_MAX",			\
	[E_DIGESTS] = T ": digests is not a bin",			\
	[E_DIGESTS_LEN] = T ": digests not 32-byte records, at most "	\
	    "BFT_SUMMARY_MAX",						\
	[E_ENTRIES] = T ": entries is not a bin",			\
	[E_ENTRIES_LEN] = T ": entries not 24-byte records, at most "	\
	    "BFT_LCLIST_MAX",						\
	[E_VOLS] = T ": entries is not a bin",				\
	[E_VOLS_LEN] = T ": entries not 24-byte records, at most "	\
	    "BFT_VOLLIST_MAX",						\
	[E_DROPBLK] = T ": block is not a volume's block 0",		\
	[E_GEN] = T ": gen is not a uint",				\
	[E_SNAPOP] = T ": op is not 0 or 1",				\
	[E_VLCOUNT] = T ": count not in 1..BFT_VOL_MAX_BLOCKS",		\
	[E_NEXT] = T ": next is not a uint",				\
	[E_VL] = T ": entries is not a bin",				\
	[E_VL_LEN] = T ": entries not 8-byte records, at most "		\
	    "BFT_LCLIST_MAX",						\
	[E_LEVEL] = T ": level not in 1..BFT_LEVEL_MAX",		\
	[E_INFO_LEVEL] = T ": nested info fields with level 0",		\
	[E_INFO] = T ": info is not an array of BFT_STATUS_NFIELDS_0 "	\
	    "uints, maybe with the nested ones",			\
	[E_INFO_FIELD] = T ": info field is not a uint",		\
	[E_SLICE] = T ": slice is not 1 and chunks first, count with "	\
	    "1 <= count, first + count <= BFT_TREE_MAX_CHUNKS",	\
	[E_PROOF] = T ": proof is not a bin",				\
	[E_PROOF_LEN] = T ": proof not 32-byte CVs, at most "		\
	    "BFT_TREE_PROOF_MAX",					\
}

/* In bft_wire_type_index() order. */
static const char *const whys[BFT_MSG_NTYPES][E_COUNT] = {
	WHYS("HELLO"), WHYS("CLOCK"), WHYS("STORE"), WHYS("COMPLETE"),
	WHYS("COLLECT"), WHYS("FILTER"), WHYS("REPAIR"), WHYS("FLUSH"),
	WHYS("SUMMARY"), WHYS("LCLIST"), WHYS("STATUS"), WHYS("SCRUB"),
	WHYS("VOLUMES"), WHYS("DROP"), WHYS("SNAP"), WHYS("VCOLLECT"),
	WHYS("VFILTER"), WHYS("VREPAIR"), WHYS("VLIST"), WHYS("FINALIZE"),
	WHYS("SNAPSPACE"), WHYS("REAUTH"), WHYS("HELLO_ACK"),
	WHYS("CLOCK_ACK"),
	WHYS("STORE_ACK"), WHYS("COMPLETE_ACK"), WHYS("COLLECT_ACK"),
	WHYS("FILTER_ACK"), WHYS("REPAIR_ACK"), WHYS("FLUSH_ACK"),
	WHYS("SUMMARY_ACK"), WHYS("LCLIST_ACK"), WHYS("STATUS_ACK"),
	WHYS("SCRUB_ACK"), WHYS("VOLUMES_ACK"), WHYS("DROP_ACK"),
	WHYS("SNAP_ACK"), WHYS("VCOLLECT_ACK"), WHYS("VFILTER_ACK"),
	WHYS("VREPAIR_ACK"), WHYS("VLIST_ACK"), WHYS("FINALIZE_ACK"),
	WHYS("SNAPSPACE_ACK"), WHYS("REAUTH_ACK"),
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
 * Whether bin object o lies inside body.  msgpack_unpack() leaves
 * bin objects pointing into the input, which this makes certain before
 * a message keeps such a pointer instead of a copy.
 */
static bool
in_body(const msgpack_object *o, const uint8_t *body, size_t len)
{
	const uint8_t *p = (const uint8_t *)o->via.bin.ptr;

	return p >= body && o->via.bin.size <= len &&
	    p <= body + len - o->via.bin.size;
}

/* frag is not copied: it points into body. */
static enum werr
get_frag(const msgpack_object *o, const uint8_t *body, size_t len,
	 struct bft_msg *m)
{
	if (o->type != MSGPACK_OBJECT_BIN)
		return E_FRAG;
	if (o->via.bin.size > BFT_MAX_FRAG)
		return E_FRAG_LEN;
	if (!in_body(o, body, len))
		return E_FRAG;
	m->frag = (const uint8_t *)o->via.bin.ptr;
	m->frag_len = o->via.bin.size;
	return E_OK;
}

/*
 * A bin of at most max records of rec bytes each, left in body like
 * frag; e names a type error, e + 1 a length error.
 */
static enum werr
get_records(const msgpack_object *o, const uint8_t *body, size_t len,
    size_t rec, uint32_t max, const uint8_t **p, uint32_t *count,
    enum werr e)
{
	if (o->type != MSGPACK_OBJECT_BIN)
		return e;
	if (o->via.bin.size % rec != 0 || o->via.bin.size / rec > max)
		return e + 1;
	if (!in_body(o, body, len))
		return e;
	*p = (const uint8_t *)o->via.bin.ptr;
	*count = (uint32_t)(o->via.bin.size / rec);
	return E_OK;
}

/* SUMMARY's count and span, each reason its own. */
static enum werr
get_summary(const msgpack_object *a, struct bft_msg *m)
{
	if (get_u32(&a[3], &m->count))
		return E_NUM;
	if (get_u32(&a[4], &m->span))
		return E_SPAN;
	if (m->count == 0)
		return E_NUM0;
	if (m->span == 0)
		return E_SPAN0;
	if (!bft_wire_summary_ok(m->count, m->span))
		return E_RANGES;
	return E_OK;
}

/* STATUS_ACK's fields, in bft_status_fields[] order (wire.h). */
static enum werr
get_info(const msgpack_object *o, struct bft_status_info *info)
{
	uint8_t *base = (uint8_t *)info;
	const msgpack_object *f = NULL, *x = NULL;
	uint64_t v;

	if (o->type != MSGPACK_OBJECT_ARRAY ||
	    (o->via.array.size != BFT_STATUS_NFIELDS_0 &&
	    o->via.array.size != BFT_STATUS_NFIELDS_0 + 1))
		return E_INFO;
	if (o->via.array.size > BFT_STATUS_NFIELDS_0) {
		x = &o->via.array.ptr[BFT_STATUS_NFIELDS_0];
		if (x->type != MSGPACK_OBJECT_ARRAY || x->via.array.size !=
		    BFT_STATUS_NFIELDS - BFT_STATUS_NFIELDS_0)
			return E_INFO;
	}
	for (unsigned i = 0; i < BFT_STATUS_NFIELDS; i++) {
		if (i < BFT_STATUS_NFIELDS_0)
			f = &o->via.array.ptr[i];
		else if (x != NULL)
			f = &x->via.array.ptr[i - BFT_STATUS_NFIELDS_0];
		else
			break;
		if (get_u64(f, &v))
			return E_INFO_FIELD;
		memcpy(base + bft_status_fields[i].offset, &v, sizeof v);
	}
	/* Level 0 is what a reply without the nested fields means. */
	return x != NULL && info->level == 0 ? E_INFO_LEVEL : E_OK;
}

/* Decodes the fields after the header of a status 0 message of a[]. */
static enum werr
get_base_fields(const msgpack_object *a, const uint8_t *body, size_t len,
	   unsigned n, struct bft_msg *m)
{
	size_t vl = (size_t)n * BFT_MAC_LEN, cl = (size_t)n * BFT_HASH_LEN;
	const msgpack_object *c;
	enum werr e;
	uint32_t i;
	unsigned fa;

	switch (bft_view_base(m->type)) {
	case BFT_SNAP:
		/* A volume is named by its first address, nothing else. */
		if (bft_addr_block(m->block) != 0)
			return E_DROPBLK;
		if (get_u64(&a[3], &m->gen))
			return E_GEN;
		if (a[4].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
		    a[4].via.u64 > BFT_SNAP_REMOVE)
			return E_SNAPOP;
		m->snap_op = (uint8_t)a[4].via.u64;
		return get_bin(&a[5], m->vec, vl, E_VEC);
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
	case BFT_REAUTH:
		if ((e = get_ts(&a[3], &m->ts)) ||
		    (e = get_bin(&a[4], m->nh, BFT_HASH_LEN, E_NH)) ||
		    (e = get_bin(&a[5], m->vec, vl, E_VEC)))
			return e;
		return get_u64(&a[6], &m->gen) ? E_GEN : E_OK;
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
	case BFT_DROP:
		/* A volume is named by its first address, nothing else. */
		if (bft_addr_block(m->block) != 0)
			return E_DROPBLK;
		return get_bin(&a[3], m->vec, vl, E_VEC);
	case BFT_CLOCK | BFT_ACK:
	case BFT_STORE | BFT_ACK:
		return get_ts(&a[4], &m->ts);
	case BFT_COLLECT:
		if (a[3].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
		    a[3].via.u64 > 1)
			return E_WANT;
		m->want_frag = a[3].via.u64 == 1;
		if (!m->slice)
			return E_OK;
		if (!m->want_frag || get_u32(&a[4], &m->slice_first) ||
		    get_u32(&a[5], &m->slice_count) ||
		    !bft_wire_slice_ok(m->slice_first, m->slice_count))
			return E_SLICE;
		return E_OK;
	case BFT_COLLECT | BFT_ACK:
		m->ncands = 1;
		if ((e = get_cand(&a[4], &m->cands[0], n)))
			return e;
		/*
		 * cc is all or nothing; a fragment, or a slice and its proof,
		 * needs its cc to be checked.
		 */
		fa = m->slice ? 7 : 6;
		if (a[5].type == MSGPACK_OBJECT_BIN && a[5].via.bin.size == 0) {
			if ((a[fa].type == MSGPACK_OBJECT_BIN &&
			    a[fa].via.bin.size != 0) || (m->slice &&
			    a[6].type == MSGPACK_OBJECT_BIN &&
			    a[6].via.bin.size != 0))
				return E_FRAG_NOCC;
		} else {
			if ((e = get_bin(&a[5], m->cc, cl, E_CC)))
				return e;
			m->has_cc = true;
		}
		if (m->slice && (e = get_records(&a[6], body, len,
		    BFT_HASH_LEN, BFT_TREE_PROOF_MAX, &m->proof, &m->proof_cvs,
		    E_PROOF)))
			return e;
		return get_frag(&a[fa], body, len, m);
	case BFT_FILTER | BFT_ACK:
		if ((e = get_ts(&a[4], &m->ts)) ||
		    (e = get_bin(&a[5], m->vec, vl, E_VEC)) ||
		    (e = get_bin(&a[6], m->cc, cl, E_CC)))
			return e;
		return get_frag(&a[7], body, len, m);
	case BFT_SUMMARY:
		return get_summary(a, m);
	case BFT_LCLIST:
		if (get_u32(&a[3], &m->count))
			return E_NUM;
		if (m->count == 0)
			return E_NUM0;
		return m->count > BFT_LCLIST_MAX ? E_LCCOUNT : E_OK;
	case BFT_SUMMARY | BFT_ACK:
		return get_records(&a[4], body, len, BFT_SUMMARY_DIGEST_LEN,
		    BFT_SUMMARY_MAX, &m->digests, &m->ndigests, E_DIGESTS);
	case BFT_LCLIST | BFT_ACK:
		return get_records(&a[4], body, len, BFT_LCENTRY_LEN,
		    BFT_LCLIST_MAX, &m->entries, &m->nentries, E_ENTRIES);
	case BFT_VLIST:
		if (get_u32(&a[3], &m->count))
			return E_NUM;
		if (m->count < 1 || m->count > BFT_VOL_MAX_BLOCKS)
			return E_VLCOUNT;
		if (get_u64(&a[4], &m->gen) || get_u64(&a[5], &m->gen_to))
			return E_GEN;
		return E_OK;
	case BFT_SNAPSPACE:
		return get_u64(&a[3], &m->gen) ? E_GEN : E_OK;
	case BFT_SNAPSPACE | BFT_ACK:
		if (get_u64(&a[4], &m->next))
			return E_NEXT;
		if (get_u64(&a[5], &m->space_excl) ||
		    get_u64(&a[6], &m->space_total))
			return E_NUM;
		return E_OK;
	case BFT_FINALIZE:
		if (get_u32(&a[3], &m->level) || m->level < 1 ||
		    m->level > BFT_LEVEL_MAX)
			return E_LEVEL;
		return E_OK;
	case BFT_VLIST | BFT_ACK:
		if (get_u64(&a[4], &m->next))
			return E_NEXT;
		return get_records(&a[5], body, len, BFT_VLENTRY_LEN,
		    BFT_LCLIST_MAX, &m->entries, &m->nentries, E_VL);
	case BFT_VOLUMES | BFT_ACK:
		return get_records(&a[4], body, len, BFT_VOLENTRY_LEN,
		    BFT_VOLLIST_MAX, &m->entries, &m->nentries, E_VOLS);
	case BFT_STATUS | BFT_ACK:
		return get_info(&a[4], &m->info);
	default:
		return E_OK;
	}
}

/* A view request is its live twin's fields, then the boundary. */
static enum werr
get_fields(const msgpack_object *a, const uint8_t *body, size_t len,
	   unsigned n, struct bft_msg *m)
{
	enum werr e = get_base_fields(a, body, len, n, m);

	if (e != E_OK || !bft_is_view(m->type) || (m->type & BFT_ACK))
		return e;
	return get_u64(&a[bft_wire_req_len[m->type] - 1], &m->gen) ?
	    E_GEN : E_OK;
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
	if (a[0].via.u64 > 0xff ||
	    (ti = bft_wire_type_index((uint8_t)a[0].via.u64)) < 0)
		return "unknown message type";
	m->type = (uint8_t)a[0].via.u64;
	base = m->type & ~BFT_ACK;
	if (get_u64(&a[1], &m->id)) {
		e = E_ID;
	} else if (get_u64(&a[2], &m->block)) {
		e = E_BLOCK;
	} else if (!(m->type & BFT_ACK)) {
		/* A slice COLLECT has two more. */
		m->slice = m->type == BFT_COLLECT &&
		    cnt == bft_wire_req_len[base] + 2u;
		if (cnt != bft_wire_req_len[base] + (m->slice ? 2u : 0))
			e = E_SHAPE;
		else if (bft_wire_no_block(base) && m->block)
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
			/* A reply to a slice COLLECT has the proof more. */
			m->slice = m->type == (BFT_COLLECT | BFT_ACK) &&
			    m->status == 0 &&
			    cnt == bft_wire_rep_len[base] + 1u;
			want = m->status ? 4 : bft_wire_rep_len[base] +
			    (m->slice ? 1u : 0);
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

/* Unpacks body with z for its objects, and reads the message out. */
static const char *
unpack(msgpack_zone *z, const uint8_t *body, size_t len, unsigned n,
    struct bft_msg *m)
{
	msgpack_object o;
	size_t off = 0;

	if (msgpack_unpack((const char *)body, len, &off, z, &o) !=
	    MSGPACK_UNPACK_SUCCESS || off != len)
		return "msgpack-c rejected the body";
	return get_msg(&o, body, len, n, m);
}

static int
decode(struct bft_wire_scratch *s, const uint8_t *body, size_t len,
    unsigned n, struct bft_msg *m, const char **why)
{
	msgpack_zone z;
	size_t nelem = 0;
	const char *w;
	int r = -EBADMSG;

	memset(m, 0, sizeof(*m));
	if (n < 4 || n > BFT_MAX_N) {
		w = "cluster size n out of range";
		r = -EINVAL;
	} else if (len > BFT_MAX_FRAME)
		w = "body longer than BFT_MAX_FRAME";
	else
		w = bft_wire_scan(body, len, &nelem);
	if (w != NULL)
		goto out;
	if (s != NULL) {
		/* Emptied after each body, keeping the first chunk. */
		if (s->zone == NULL &&
		    (s->zone = msgpack_zone_new(MSGPACK_ZONE_CHUNK_SIZE)) ==
		    NULL) {
			w = "out of memory";
			r = -ENOMEM;
			goto out;
		}
		w = unpack(s->zone, body, len, n, m);
		msgpack_zone_clear(s->zone);
		goto out;
	}
	/*
	 * A zone of one chunk sized to the objects the scan counted (bins
	 * point into body): msgpack_unpack_next() would make a zone of two
	 * 8 KiB allocations per message, where most messages need a few
	 * hundred bytes.  One object more, so that the chunk is never empty
	 * (the zone doubles a chunk's size when it must grow).
	 */
	if (!msgpack_zone_init(&z, (nelem + 1) * sizeof(msgpack_object))) {
		w = "out of memory";
		r = -ENOMEM;
		goto out;
	}
	w = unpack(&z, body, len, n, m);
	msgpack_zone_destroy(&z);
out:
	if (w == NULL)
		return 0;
	/* A half-filled message must not be mistaken for a decoded one. */
	memset(m, 0, sizeof(*m));
	if (why != NULL)
		*why = w;
	return r;
}

int
bft_wire_decode(const uint8_t *body, size_t len, unsigned n,
		struct bft_msg *m, const char **why)
{
	return decode(NULL, body, len, n, m, why);
}

int
bft_wire_decode_with(struct bft_wire_scratch *s, const uint8_t *body,
    size_t len, unsigned n, struct bft_msg *m, const char **why)
{
	return decode(s, body, len, n, m, why);
}

void
bft_wire_scratch_free(struct bft_wire_scratch *s)
{
	msgpack_zone_free(s->zone);
	s->zone = NULL;
}
