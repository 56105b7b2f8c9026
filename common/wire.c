/*
 * Frame encoding of protocol messages and the tables the decoder
 * (wire_decode.c) shares; see wire.h.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "hashtree.h"
#include "wire.h"
#include "wire_int.h"

/* Array lengths by type & 0x7f; replies with status != 0 have 4. */
const uint8_t bft_wire_req_len[BFT_MSG_TYPE_MAX + 1] = {
	0, 9, 3, 8, 6, 4, 4, 4, 3, 5, 4, 3, 3, 3, 4, 6, 5, 5, 5, 6, 4, 4, 7,
};
const uint8_t bft_wire_rep_len[BFT_MSG_TYPE_MAX + 1] = {
	0, 4, 5, 5, 4, 7, 8, 4, 4, 5, 5, 5, 4, 5, 4, 4, 7, 8, 4, 6, 4, 7, 4,
};

static const char *const type_names[BFT_MSG_NTYPES] = {
	"HELLO", "CLOCK", "STORE", "COMPLETE", "COLLECT", "FILTER", "REPAIR",
	"FLUSH", "SUMMARY", "LCLIST", "STATUS", "SCRUB", "VOLUMES", "DROP",
	"SNAP", "VCOLLECT", "VFILTER", "VREPAIR", "VLIST", "FINALIZE",
	"SNAPSPACE", "REAUTH",
	"HELLO_ACK", "CLOCK_ACK", "STORE_ACK", "COMPLETE_ACK", "COLLECT_ACK",
	"FILTER_ACK", "REPAIR_ACK", "FLUSH_ACK", "SUMMARY_ACK", "LCLIST_ACK",
	"STATUS_ACK", "SCRUB_ACK", "VOLUMES_ACK", "DROP_ACK", "SNAP_ACK",
	"VCOLLECT_ACK", "VFILTER_ACK", "VREPAIR_ACK", "VLIST_ACK",
	"FINALIZE_ACK", "SNAPSPACE_ACK", "REAUTH_ACK",
};

#define STATUS_FIELD(f) { #f, offsetof(struct bft_status_info, f) }
const struct bft_status_field bft_status_fields[BFT_STATUS_NFIELDS] = {
	STATUS_FIELD(version),
	STATUS_FIELD(server_index),
	STATUS_FIELD(uptime_s),
	STATUS_FIELD(blocks_held),
	STATUS_FIELD(bytes_total),
	STATUS_FIELD(bytes_live),
	STATUS_FIELD(damaged_records),
	STATUS_FIELD(repaired_records),
	STATUS_FIELD(rebuild_state),
	STATUS_FIELD(rebuild_done),
	STATUS_FIELD(rebuild_total),
	STATUS_FIELD(rebuild_bytes),
	STATUS_FIELD(rebuild_rate),
	STATUS_FIELD(scrub_done),
	STATUS_FIELD(scrub_total),
	STATUS_FIELD(release),
	STATUS_FIELD(level),
	STATUS_FIELD(finalized),
	STATUS_FIELD(snap_gc_done),
	STATUS_FIELD(snap_gc_total),
	STATUS_FIELD(recovering),
	STATUS_FIELD(recoveries),
	STATUS_FIELD(mac_epoch),
	STATUS_FIELD(mac_next_epoch),
	STATUS_FIELD(mac_old_versions),
	STATUS_FIELD(mac_old_pending),
	STATUS_FIELD(mac_census_done),
	STATUS_FIELD(mac_census_total),
	STATUS_FIELD(mac_census_passes),
	STATUS_FIELD(mac_retiring),
	STATUS_FIELD(mac_old_retained),
};
#undef STATUS_FIELD
_Static_assert(sizeof(struct bft_status_info) ==
    BFT_STATUS_NFIELDS * sizeof(uint64_t),
    "every field of struct bft_status_info is in bft_status_fields");

int
bft_wire_type_index(uint8_t type)
{
	unsigned base = type & ~BFT_ACK;

	if (base < BFT_HELLO || base > BFT_MSG_TYPE_MAX)
		return -1;
	return (int)(base - 1) + ((type & BFT_ACK) ? BFT_MSG_TYPE_MAX : 0);
}

bool
bft_wire_summary_ok(uint32_t count, uint32_t span)
{
	return count >= 1 && span >= 1 &&
	    ((uint64_t)count + span - 1) / span <= BFT_SUMMARY_MAX;
}

bool
bft_wire_slice_ok(uint32_t first, uint32_t count)
{
	return count >= 1 && first < BFT_TREE_MAX_CHUNKS &&
	    count <= BFT_TREE_MAX_CHUNKS - first;
}

const char *
bft_msg_type_str(uint8_t type)
{
	int i = bft_wire_type_index(type);

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

/*
 * The packer's sink, which wants 0 or -1; a zero-length write may come
 * with a NULL source.
 */
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
	return buf_write(b, p, len) == 0 ? 0 : -ENOMEM;
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

static int
put_info(msgpack_packer *pk, const struct bft_status_info *info)
{
	const uint8_t *base = (const uint8_t *)info;
	bool nested = bft_status_nested(info);
	uint64_t v;

	if (msgpack_pack_array(pk, BFT_STATUS_NFIELDS_0 + nested))
		return -1;
	for (unsigned i = 0; i < BFT_STATUS_NFIELDS; i++) {
		if (i == BFT_STATUS_NFIELDS_0 && !nested)
			break;
		if (i == BFT_STATUS_NFIELDS_0 && msgpack_pack_array(pk,
		    BFT_STATUS_NFIELDS - BFT_STATUS_NFIELDS_0))
			return -1;
		memcpy(&v, base + bft_status_fields[i].offset, sizeof v);
		if (msgpack_pack_uint64(pk, v))
			return -1;
	}
	return 0;
}

/* Packs the fields after [type, id, block, status] (or [type, id, block]). */
static int
put_fields(msgpack_packer *pk, const struct bft_msg *m, unsigned n,
    bool defer)
{
	size_t vl = (size_t)n * BFT_MAC_LEN, cl = (size_t)n * BFT_HASH_LEN;
	uint32_t i;

	/* A view request is its live twin's fields, then the boundary. */
	if (bft_is_view(m->type) && !(m->type & BFT_ACK)) {
		struct bft_msg twin = *m;

		twin.type = bft_view_base(m->type);
		return put_fields(pk, &twin, n, defer) ||
		    msgpack_pack_uint64(pk, m->gen);
	}
	switch (bft_view_base(m->type)) {
	case BFT_SNAP:
		return msgpack_pack_uint64(pk, m->gen) ||
		    msgpack_pack_uint8(pk, m->snap_op) ||
		    put_bin(pk, m->vec, vl);
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
	case BFT_REAUTH:
		return put_ts(pk, &m->ts) || put_bin(pk, m->nh, BFT_HASH_LEN) ||
		    put_bin(pk, m->vec, vl) || msgpack_pack_uint64(pk, m->gen);
	case BFT_FILTER:
		if (msgpack_pack_array(pk, m->ncands))
			return -1;
		for (i = 0; i < m->ncands; i++)
			if (put_cand(pk, &m->cands[i], n))
				return -1;
		return 0;
	case BFT_COLLECT:
		if (m->slice)
			return msgpack_pack_uint8(pk, 1) ||
			    msgpack_pack_uint32(pk, m->slice_first) ||
			    msgpack_pack_uint32(pk, m->slice_count);
		return msgpack_pack_uint8(pk, m->want_frag ? 1 : 0);
	case BFT_COLLECT | BFT_ACK:
		/* Absent cc and frag are empty bins: one shape, 4 bytes. */
		return put_cand(pk, &m->cands[0], n) ||
		    put_bin(pk, m->cc, m->has_cc ? cl : 0) ||
		    (m->slice && put_bin(pk, m->proof, m->has_cc ?
		    (size_t)m->proof_cvs * BFT_HASH_LEN : 0)) ||
		    put_frag(pk, m->frag, m->has_cc ? m->frag_len : 0, defer);
	case BFT_REPAIR:
		return put_cand(pk, &m->cands[0], n);
	case BFT_DROP:
		return put_bin(pk, m->vec, vl);
	case BFT_CLOCK | BFT_ACK:
	case BFT_STORE | BFT_ACK:
		return put_ts(pk, &m->ts);
	case BFT_FILTER | BFT_ACK:
		return put_ts(pk, &m->ts) || put_bin(pk, m->vec, vl) ||
		    put_bin(pk, m->cc, cl) ||
		    put_frag(pk, m->frag, m->frag_len, defer);
	case BFT_SUMMARY:
		return msgpack_pack_uint32(pk, m->count) ||
		    msgpack_pack_uint32(pk, m->span);
	case BFT_LCLIST:
		return msgpack_pack_uint32(pk, m->count);
	case BFT_FINALIZE:
		return msgpack_pack_uint32(pk, m->level);
	case BFT_SNAPSPACE:
		return msgpack_pack_uint64(pk, m->gen);
	case BFT_SNAPSPACE | BFT_ACK:
		return msgpack_pack_uint64(pk, m->next) ||
		    msgpack_pack_uint64(pk, m->space_excl) ||
		    msgpack_pack_uint64(pk, m->space_total);
	case BFT_VLIST:
		return msgpack_pack_uint32(pk, m->count) ||
		    msgpack_pack_uint64(pk, m->gen) ||
		    msgpack_pack_uint64(pk, m->gen_to);
	case BFT_VLIST | BFT_ACK:
		return msgpack_pack_uint64(pk, m->next) ||
		    put_bin(pk, m->entries,
		    (size_t)m->nentries * BFT_VLENTRY_LEN);
	case BFT_SUMMARY | BFT_ACK:
		return put_bin(pk, m->digests,
		    (size_t)m->ndigests * BFT_SUMMARY_DIGEST_LEN);
	case BFT_LCLIST | BFT_ACK:
		return put_bin(pk, m->entries,
		    (size_t)m->nentries * BFT_LCENTRY_LEN);
	case BFT_VOLUMES | BFT_ACK:
		return put_bin(pk, m->entries,
		    (size_t)m->nentries * BFT_VOLENTRY_LEN);
	case BFT_STATUS | BFT_ACK:
		return put_info(pk, &m->info);
	default:
		return 0;
	}
}

/* Refuses what the decoder would refuse, before anything is written. */
static int
encode_check(const struct bft_msg *m, unsigned n)
{
	uint8_t ty = bft_view_base(m->type);
	int carries_frag;

	if (n < 4 || n > BFT_MAX_N || bft_wire_type_index(m->type) < 0)
		return -EINVAL;
	if (ty == BFT_FILTER && (m->ncands < 1 || m->ncands > BFT_MAX_N))
		return -EINVAL;
	if (ty == BFT_SUMMARY && !bft_wire_summary_ok(m->count, m->span))
		return -EINVAL;
	if (ty == BFT_LCLIST && (m->count < 1 ||
	    m->count > BFT_LCLIST_MAX))
		return -EINVAL;
	if ((ty == BFT_DROP || ty == BFT_SNAP) &&
	    bft_addr_block(m->block) != 0)
		return -EINVAL;
	if (ty == BFT_SNAP && m->snap_op > BFT_SNAP_REMOVE)
		return -EINVAL;
	if (ty == BFT_FINALIZE && (m->level < 1 || m->level > BFT_LEVEL_MAX))
		return -EINVAL;
	if (ty == (BFT_SUMMARY | BFT_ACK) && m->status == 0 &&
	    (m->ndigests > BFT_SUMMARY_MAX ||
	    (m->digests == NULL && m->ndigests != 0)))
		return -EINVAL;
	if (ty == (BFT_LCLIST | BFT_ACK) && m->status == 0 &&
	    (m->nentries > BFT_LCLIST_MAX ||
	    (m->entries == NULL && m->nentries != 0)))
		return -EINVAL;
	if (ty == BFT_VLIST && (m->count < 1 ||
	    m->count > BFT_VOL_MAX_BLOCKS))
		return -EINVAL;
	if (ty == (BFT_VLIST | BFT_ACK) && m->status == 0 &&
	    (m->nentries > BFT_LCLIST_MAX ||
	    (m->entries == NULL && m->nentries != 0)))
		return -EINVAL;
	if (ty == (BFT_VOLUMES | BFT_ACK) && m->status == 0 &&
	    (m->nentries > BFT_VOLLIST_MAX ||
	    (m->entries == NULL && m->nentries != 0)))
		return -EINVAL;
	/* Slices are the live state's: a view's reads move whole fragments. */
	if (m->slice && m->type != BFT_COLLECT &&
	    m->type != (BFT_COLLECT | BFT_ACK))
		return -EINVAL;
	if (m->slice && m->type == BFT_COLLECT &&
	    !bft_wire_slice_ok(m->slice_first, m->slice_count))
		return -EINVAL;
	if (m->slice && ty == (BFT_COLLECT | BFT_ACK) && m->status == 0 &&
	    m->has_cc && (m->proof_cvs > BFT_TREE_PROOF_MAX ||
	    (m->proof == NULL && m->proof_cvs != 0)))
		return -EINVAL;
	carries_frag = ty == BFT_STORE ||
	    (ty == (BFT_FILTER | BFT_ACK) && m->status == 0) ||
	    (ty == (BFT_COLLECT | BFT_ACK) && m->status == 0 &&
	    m->has_cc);
	if (carries_frag && (m->frag_len > BFT_MAX_FRAG ||
	    (m->frag == NULL && m->frag_len != 0)))
		return -EINVAL;
	return 0;
}

/* The fragment body a frame of m ends with (none: 0). */
static size_t
frag_tail(const struct bft_msg *m)
{
	uint8_t ty = bft_view_base(m->type);

	if (ty == BFT_STORE ||
	    (ty == (BFT_FILTER | BFT_ACK) && m->status == 0))
		return m->frag_len;
	if (ty == (BFT_COLLECT | BFT_ACK) && m->status == 0 && m->has_cc)
		return m->frag_len;
	return 0;
}

int
bft_wire_encode(const struct bft_msg *m, unsigned n, struct bft_buf *out)
{
	size_t start = out->len, tail;
	const uint8_t *frag;
	int r;

	if ((r = bft_wire_encode_head(m, n, out, &frag, &tail)) != 0)
		return r;
	if (tail > 0 && buf_write(out, (const char *)frag, tail) != 0) {
		out->len = start;
		return -ENOMEM;
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
	int reply = (m->type & BFT_ACK) != 0, bad, r;

	if ((r = encode_check(m, n)) < 0)
		return r;
	flen = frag_tail(m);
	*tail = flen ? m->frag : NULL;
	*tail_len = flen;
	if (buf_write(out, zero_prefix, sizeof(zero_prefix)) < 0)
		return -ENOMEM;
	msgpack_packer_init(&pk, out, buf_write);
	if (reply) {
		bad = msgpack_pack_array(&pk, m->status ? 4 :
		    bft_wire_rep_len[base] + (m->slice ? 1 : 0)) ||
		    msgpack_pack_uint8(&pk, m->type) ||
		    msgpack_pack_uint64(&pk, m->id) ||
		    msgpack_pack_uint64(&pk, m->block) ||
		    msgpack_pack_int32(&pk, m->status);
	} else {
		/* HELLO, FLUSH and STATUS concern no block: theirs is 0. */
		bad = msgpack_pack_array(&pk, bft_wire_req_len[base] +
		    (m->slice ? 2 : 0)) ||
		    msgpack_pack_uint8(&pk, m->type) ||
		    msgpack_pack_uint64(&pk, m->id) ||
		    msgpack_pack_uint64(&pk, bft_wire_no_block(base) ? 0 :
		    m->block);
	}
	/* encode_check passed: only the sink, growing out, can fail. */
	r = -ENOMEM;
	if (bad || ((!reply || m->status == 0) && put_fields(&pk, m, n, true)))
		goto out_fail;
	body = out->len - start - 4 + flen;
	r = -EMSGSIZE;
	if (body > BFT_MAX_FRAME)
		goto out_fail;
	bft_wire_put_len(out->data + start, (uint32_t)body);
	return 0;

out_fail:
	/* What was in out before stays valid; only our partial frame goes. */
	out->len = start;
	return r;
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
		return -EMSGSIZE;
	if (avail - 4 < len)
		return 1;
	*body_len = len;
	return 0;
}

