/*
 * Wire format: a frame is a 4-byte big-endian body length followed by a
 * msgpack body.  The body is always a msgpack array whose first three
 * elements are [type, id, block]; the rest depends on the type, as listed
 * below.  Replies carry the request type with BFT_ACK set and the
 * request's id, so a client can have many requests in flight on one
 * connection and match replies by id.
 *
 * Encodings of compound fields:
 *   ts    = [num (uint), wid (uint), mac (bin 16)]
 *   vec   = bin of n * 16 bytes (one MAC per server, server order)
 *   cc    = bin of n * 32 bytes (one hash per fragment, server order)
 *   cand  = [ts, nonce (bin 32), vec]
 *
 * Requests (client -> server):
 *   HELLO    [type, id, 0, cluster_id (bin 16), n, t, block_size, nblocks,
 *             server_index]
 *   CLOCK    [type, id, block]
 *   STORE    [type, id, block, ts, nh (bin 32), vec, cc, frag (bin)]
 *   COMPLETE [type, id, block, ts, nonce (bin 32), vec]
 *   COLLECT  [type, id, block, want (uint 0 or 1)]
 *            (want = 1: send the fragment of lc too, for the 1-round
 *             read; the reader asks only k = t+1 servers for one)
 *            or [type, id, block, 1, first (uint), count (uint)]
 *            (a slice: chunks [first, first + count) of lc's fragment
 *             and their proof instead of all of it, common/hashtree.h;
 *             1 <= count, first + count <= BFT_TREE_MAX_CHUNKS.  From
 *             level 1 on, sent only to servers whose hello said a level)
 *   FILTER   [type, id, block, [cand, ...]]   (1..n candidates)
 *   REPAIR   [type, id, block, cand]
 *   FLUSH    [type, id, 0]
 *   SUMMARY  [type, id, block, count (uint), span (uint)]
 *            (digests of lc over blocks [block, block+count) in ranges of
 *             span blocks; 1 <= span, 1 <= count, ceil(count/span) <=
 *             BFT_SUMMARY_MAX; the digest is common/summary.h's)
 *   LCLIST   [type, id, block, count (uint)]
 *            (the written blocks of [block, block+count) and their lc
 *             timestamps; count 1..BFT_LCLIST_MAX.  Both count a block
 *             only where the server holds the fragment backing its lc,
 *             so a server that has lc from a write-back but not the
 *             fragment differs from its peers and rebuilds it)
 *   STATUS   [type, id, 0]
 *            (the server's health: struct bft_status_info)
 *   SCRUB    [type, id, 0]
 *            (start a scrub of the server's own records now)
 *   VOLUMES  [type, id, block]
 *            (the volumes of which the server holds blocks, from
 *             block's volume on: what a rebuilding peer must compare)
 *   DROP     [type, id, block, vec]
 *            (forget volume V, block = bft_addr(V, 0): its blocks and
 *             their records; vec[i] = bft_drop_mac(V, k_i) (crypto.h),
 *             checked as a STORE's is, so only a writer can send it.
 *             EPROTO for volume 0 and the reserved volumes; acked once
 *             durable, also when the server held nothing of V)
 *   SNAP     [type, id, block, gen (uint), op (uint 0 or 1), vec]
 *            (op 0: keep volume V's view at boundary generation gen,
 *             block = bft_addr(V, 0), docs/snapshots.md; op 1: forget
 *             that boundary.  vec[i] = bft_snap_mac(V, gen, op, k_i)
 *             (crypto.h), a writer's, as DROP's.  EPROTO for the
 *             reserved volumes; acked once durable)
 *   VCOLLECT [type, id, block, want, gen]
 *   VFILTER  [type, id, block, [cand, ...], gen]
 *   VREPAIR  [type, id, block, cand, gen]
 *            (COLLECT, FILTER and REPAIR over the block's view at
 *             boundary gen instead of its live state; their replies
 *             are COLLECT_ACK's, FILTER_ACK's and REPAIR_ACK's.  EAGAIN
 *             when this server cannot tell what the view holds)
 *   VLIST    [type, id, block, count (uint), from (uint), to (uint)]
 *            (the blocks of [block, block+count), all of block's
 *             volume, that completed a write of a generation above
 *             boundary from since this server kept it, and whose view
 *             at boundary to (BFT_GEN_MAX: the head) is of a generation
 *             above from, where this server keeps to: what changed
 *             between two snapshots.  count 1..BFT_VOL_MAX_BLOCKS.
 *             EAGAIN when from is not a boundary kept here)
 *   REAUTH   [type, id, block, ts, nh, vec, gen]
 *            (re-authenticate a version this server stores: lc, or a
 *             Hist entry, of block with ts's (num, wid) and H(N) = nh
 *             takes ts.mac and vec, checked as a STORE's vec[i] is,
 *             so only a writer can send it (docs/key-epochs.md); in
 *             block's view at boundary gen, BFT_GEN_MAX for the live
 *             state, a frozen view's retained records taking them.  It
 *             never stores a value the server did not have: EGONE when
 *             it holds no such version.  From level 1 on)
 *   SNAPSPACE [type, id, block, gen]  (the space snapshot boundary gen
 *             of block's volume holds here, walked from block on, a
 *             bounded piece per request: from level 1 on, sent only to
 *             servers whose hello said a level)
 *
 * SUMMARY, LCLIST and STATUS let one server compare its state with its
 * peers' and report progress; any authenticated identity may send them.
 *
 * Replies (server -> client), type | BFT_ACK:
 *   every reply: [type|ACK, id, block, status, ...]; when status != 0
 *   nothing follows status.
 *   HELLO_ACK, COMPLETE_ACK, REPAIR_ACK, FLUSH_ACK, SCRUB_ACK,
 *   DROP_ACK: nothing more
 *   CLOCK_ACK    [..., status, ts]           (the server's lc.ts)
 *   STORE_ACK    [..., status, ts]           (lc.ts after the STORE: a
 *                 writer that skipped CLOCK checks it was not overtaken)
 *   COLLECT_ACK  [..., status, cand, cc, frag]  (the server's lc; cc is
 *                 Hist[lc.ts].cc when the server holds that entry and it
 *                 backs lc (validByHist), else an empty bin; frag is
 *                 Hist[lc.ts].fr when the request had want = 1 and cc is
 *                 there, else an empty bin: a fragment never comes
 *                 without its cross-checksum)
 *                 or, to a slice, [..., status, cand, cc, proof, frag]
 *                 (frag the chunks asked for, proof their proof's CVs,
 *                 a bin of 32 bytes per CV, at most BFT_TREE_PROOF_MAX;
 *                 both empty when cc is, or when the chunks asked for
 *                 are not all inside the fragment)
 *   FILTER_ACK   [..., status, ts, vec, cc, frag]  (Hist[c_rt.ts]; when
 *                 c_rt is c0, ts is zero, vec and cc all zero, frag empty)
 *   SUMMARY_ACK  [..., status, digests (bin)]  (32 bytes per range, in
 *                 order; the all-zero digest for a range with no written
 *                 block)
 *   LCLIST_ACK   [..., status, entries (bin)]  (24 bytes per written
 *                 block, in increasing block order: be64(block) ||
 *                 be64(lc.ts.num) || be64(lc.ts.wid))
 *   VOLUMES_ACK  [..., status, entries (bin)]  (24 bytes per volume, in
 *                 increasing id order, at most BFT_VOLLIST_MAX:
 *                 be64(volume id) || be64(end) || be64(live), end being
 *                 one past the last block of the highest index page it
 *                 holds, live the bytes of the records its blocks' lc
 *                 and Hist entries are; a full reply is continued by
 *                 asking from the last id + 1)
 *   VLIST_ACK    [..., status, next (uint), entries (bin)]  (8 bytes
 *                 per block, be64(block), in increasing order, at most
 *                 BFT_LCLIST_MAX; next is where to ask from to go on,
 *                 past the range when the walk is done)
 *   STATUS_ACK   [..., status, [u0, ..., u14]] or [..., status, [u0,
 *                 ..., u14, [u15, ..., u19]]]  (the fields of struct
 *                 bft_status_info in bft_status_fields[] order; the
 *                 first BFT_STATUS_NFIELDS_0 alone to a client whose
 *                 hello said no level, as release 0.2.0 takes no other
 *                 shape; the rest nested, as a flat array of all would
 *                 pass the pre-scan's bound on array sizes)
 *   FINALIZE_ACK: nothing more
 *   SNAPSPACE_ACK [..., status, next (uint), exclusive (uint), total
 *                 (uint)]  (exclusive: the bytes of records this server
 *                 keeps only for the boundary, among the volume's
 *                 retained blocks from the request's block up to next;
 *                 total: every record it retains for the volume's
 *                 boundaries; next as VLIST_ACK's, UINT64_MAX once the
 *                 walk is done)
 *
 * The decoder checks every field: types, array lengths, bin lengths
 * (vec exactly n*16, cc exactly n*32 (COLLECT_ACK: 0 or n*32), nonce
 * and nh exactly 32, mac 16, cluster id 16, frag at most BFT_MAX_FRAG,
 * and empty in a COLLECT_ACK without cc), want 0 or 1, DROP's block a
 * volume's block 0, candidate counts
 * (1..BFT_MAX_N), SUMMARY's count and span and LCLIST's count (as
 * above), digests a multiple of 32 bytes and at most BFT_SUMMARY_MAX of
 * them, entries a multiple of 24 and at most BFT_LCLIST_MAX, STATUS_ACK's
 * field count, trailing garbage, and the frame limit.  It never reads
 * outside the buffer it is given.
 */
#ifndef BFTBLK_WIRE_H
#define BFTBLK_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "featureset.h"
#include "proto.h"

#define BFT_ACK 0x80u

enum bft_msg_type {
	BFT_HELLO = 1,
	BFT_CLOCK = 2,
	BFT_STORE = 3,
	BFT_COMPLETE = 4,
	BFT_COLLECT = 5,
	BFT_FILTER = 6,
	BFT_REPAIR = 7,
	BFT_FLUSH = 8,
	BFT_SUMMARY = 9,
	BFT_LCLIST = 10,
	BFT_STATUS = 11,
	BFT_SCRUB = 12,
	BFT_VOLUMES = 13,
	BFT_DROP = 14,
	BFT_SNAP = 15,
	BFT_VCOLLECT = 16,
	BFT_VFILTER = 17,
	BFT_VREPAIR = 18,
	BFT_VLIST = 19,
	BFT_FINALIZE = 20,
	BFT_SNAPSPACE = 21,
	BFT_REAUTH = 22,
};
/* The highest request type; replies are these | BFT_ACK. */
#define BFT_MSG_TYPE_MAX	BFT_REAUTH

/* What a SNAP asks. */
enum bft_snap_op {
	BFT_SNAP_ADD = 0,
	BFT_SNAP_REMOVE = 1,
};

/*
 * The live-state request a view request mirrors (VCOLLECT: COLLECT),
 * or type itself; the ACK bit is kept.  Replies and handling follow it.
 */
static inline uint8_t
bft_view_base(uint8_t type)
{
	uint8_t ack = type & BFT_ACK, base = type & ~BFT_ACK;

	if (base == BFT_VCOLLECT)
		return BFT_COLLECT | ack;
	if (base == BFT_VFILTER)
		return BFT_FILTER | ack;
	if (base == BFT_VREPAIR)
		return BFT_REPAIR | ack;
	return type;
}

static inline bool
bft_is_view(uint8_t type)
{
	return bft_view_base(type) != type;
}
/* Request and reply types together (type_names in wire.c). */
#define BFT_MSG_NTYPES		(2 * BFT_MSG_TYPE_MAX)

/* Ranges of one SUMMARY, blocks of one LCLIST, and their record sizes. */
#define BFT_SUMMARY_MAX		1024u
#define BFT_SUMMARY_DIGEST_LEN	BFT_HASH_LEN
#define BFT_LCLIST_MAX		4096u
#define BFT_LCENTRY_LEN		24u
/* Volumes of one VOLUMES_ACK, and their record size. */
#define BFT_VOLLIST_MAX		4096u
#define BFT_VOLENTRY_LEN	24u
/* A VLIST_ACK's record: one block's address. */
#define BFT_VLENTRY_LEN		8u

/* What a STATUS_ACK's rebuild_state says. */
enum bft_rebuild_state {
	BFT_REBUILD_IDLE = 0,
	BFT_REBUILD_SCANNING = 1,	/* comparing with peers */
	BFT_REBUILD_REBUILDING = 2,	/* copying blocks in */
	BFT_REBUILD_WAITING = 3,	/* too few peers to rebuild from */
	BFT_REBUILD_DONE = 4,
};

/*
 * What a STATUS_ACK's recovering says.  Anything but NONE tells a peer
 * due for its own recovery to wait: CLAIMED is a server that has found
 * no other recovering and is checking again before it restarts, so that
 * two never restart at once (server/rejuv.c).
 */
enum bft_recovering {
	BFT_RECOVERING_NONE = 0,
	BFT_RECOVERING_YES = 1,		/* restarted: scrub and catch-up */
	BFT_RECOVERING_CLAIMED = 2,	/* about to restart */
};

/*
 * A server's answer to STATUS, every field a uint on the wire.  To add
 * one: append it here, append its row to bft_status_fields[] (wire.c)
 * and raise BFT_STATUS_NFIELDS.  Older peers then refuse the longer
 * STATUS_ACK, so bump version along with it when that matters.
 */
struct bft_status_info {
	uint64_t version;		/* data directory format (BFT_STORE_FORMAT) */
	uint64_t server_index;
	uint64_t uptime_s;
	uint64_t blocks_held;		/* blocks whose lc is not c0 */
	uint64_t bytes_total;		/* log bytes on disk */
	uint64_t bytes_live;		/* of which still referenced */
	uint64_t damaged_records;	/* torn or corrupt: at open, and later */
	uint64_t repaired_records;
	uint64_t rebuild_state;		/* enum bft_rebuild_state */
	uint64_t rebuild_done, rebuild_total;	/* blocks */
	uint64_t rebuild_bytes;		/* rebuilt so far */
	uint64_t rebuild_rate;		/* bytes/s, recently */
	uint64_t scrub_done, scrub_total;
	/*
	 * From level 1 on (featureset.h): bft_release_code() of the
	 * server's release, its level and the level its data directory was
	 * finalized at.  A STATUS_ACK without them is release 0.2.0's, or
	 * was sent to it: they then read as 0.
	 */
	uint64_t release, level, finalized;
	/*
	 * Also from level 1: deleted snapshots' space being freed, retained
	 * blocks visited of those there were (bft_store_snap_gc_progress).
	 */
	uint64_t snap_gc_done, snap_gc_total;
	/*
	 * Also from level 1: proactive recovery (enum bft_recovering) and
	 * the recoveries this server finished since it last started other
	 * than by recovering.
	 */
	uint64_t recovering, recoveries;
	/*
	 * Also from level 1: the MAC key epoch the server holds and the
	 * next one it accepts beside it during a rotation, or 0
	 * (docs/key-epochs.md).
	 */
	uint64_t mac_epoch, mac_next_epoch;
	/*
	 * Also from level 1: the MAC key census (server/keys_census.h),
	 * all 0 while the server holds one epoch.  The counts are of the
	 * last complete pass, versions whose entry for this server does
	 * not verify under the newest epoch's key: lc with the Hist entry
	 * backing it (old_versions), Hist entries above lc (old_pending)
	 * and versions snapshots' views retain (old_retained).  done of
	 * total: the current pass's live blocks.  passes: complete passes
	 * since the newest epoch was taken.  retiring: 1 while the older
	 * epoch is being retired; its key goes once a pass begun after
	 * that counts no current or retained version under it.
	 */
	uint64_t mac_old_versions, mac_old_pending;
	uint64_t mac_census_done, mac_census_total, mac_census_passes;
	uint64_t mac_retiring;
	uint64_t mac_old_retained;
};
#define BFT_STATUS_NFIELDS	31
/* The fields release 0.2.0 sends and takes: version to scrub_total. */
#define BFT_STATUS_NFIELDS_0	15

/* Whether a STATUS_ACK of info carries the nested fields: level says. */
static inline bool
bft_status_nested(const struct bft_status_info *info)
{
	return info->level > 0;
}

/* One field of struct bft_status_info: its name (for JSON) and place. */
struct bft_status_field {
	const char *name;
	size_t offset;
};
/* The wire order of STATUS_ACK's fields. */
extern const struct bft_status_field bft_status_fields[BFT_STATUS_NFIELDS];

/*
 * One decoded or to-be-encoded message.  Which fields matter depends on
 * type (see above); the others are ignored by the encoder and left zero
 * by the decoder.  frag points into the buffer that was decoded (no
 * copy), or to the caller's data when encoding.
 */
struct bft_msg {
	uint8_t type;			/* enum bft_msg_type, | BFT_ACK for replies */
	uint64_t id;
	uint64_t block;
	int32_t status;			/* replies only */
	/*
	 * COLLECT of a slice: chunks [slice_first, slice_first +
	 * slice_count) of the fragment in place of all of it.  Its
	 * COLLECT_ACK has slice set, frag the chunks and proof the
	 * proof_cvs CVs of their proof (BFT_HASH_LEN bytes each; like
	 * frag, in the decoded body or the caller's data).  Here, among
	 * the fields a reply's header is cleared up to (server/net.c), so
	 * no other reply inherits them.
	 */
	bool slice;
	uint32_t slice_first, slice_count;
	const uint8_t *proof;
	uint32_t proof_cvs;

	struct bft_ts ts;		/* CLOCK_ACK, STORE(_ACK), COMPLETE, FILTER_ACK */
	uint8_t nonce[BFT_NONCE_LEN];	/* COMPLETE */
	uint8_t nh[BFT_HASH_LEN];	/* STORE */
	/* STORE, COMPLETE, FILTER_ACK, DROP */
	uint8_t vec[BFT_MAX_N][BFT_MAC_LEN];
	uint8_t cc[BFT_MAX_N][BFT_HASH_LEN];	/* STORE, FILTER_ACK, COLLECT_ACK */
	const uint8_t *frag;		/* STORE, FILTER_ACK, COLLECT_ACK */
	uint32_t frag_len;

	struct bft_cand cands[BFT_MAX_N];	/* FILTER: C; COLLECT_ACK, REPAIR: [0] */
	uint32_t ncands;

	bool want_frag;			/* COLLECT: answer with lc's fragment */
	uint64_t gen;			/* SNAP, V*, REAUTH; VLIST's from */
	uint64_t gen_to;		/* VLIST */
	uint64_t next;			/* VLIST_ACK, SNAPSPACE_ACK */
	uint64_t space_excl, space_total;	/* SNAPSPACE_ACK */
	uint8_t snap_op;		/* SNAP: enum bft_snap_op */
	bool has_cc;			/* COLLECT_ACK: cc (and maybe frag) present */

	uint32_t level;			/* FINALIZE */

	/* HELLO */
	uint8_t cluster_id[BFT_CLUSTER_ID_LEN];
	uint32_t hello_n, hello_t, block_size, server_index;
	uint64_t nblocks;

	uint32_t count, span;		/* SUMMARY (both), LCLIST (count) */
	/*
	 * SUMMARY_ACK: ndigests digests of BFT_SUMMARY_DIGEST_LEN bytes;
	 * LCLIST_ACK: nentries entries of BFT_LCENTRY_LEN bytes;
	 * VOLUMES_ACK: of BFT_VOLENTRY_LEN bytes.  Like frag,
	 * they point into the decoded body, or to the caller's data.
	 */
	const uint8_t *digests;
	uint32_t ndigests;
	const uint8_t *entries;
	uint32_t nentries;
	struct bft_status_info info;	/* STATUS_ACK */
};

/* Writes a frame's 4-byte big-endian length prefix. */
static inline void
bft_wire_put_len(uint8_t *p, uint32_t len)
{
	p[0] = (uint8_t)(len >> 24);
	p[1] = (uint8_t)(len >> 16);
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
}

/* A growable output buffer; the frame's length prefix is included. */
struct bft_buf {
	uint8_t *data;
	size_t len, cap;
};

void bft_buf_free(struct bft_buf *b);
/* Exchanges two buffers, contents and memory: a hand-over without a copy. */
static inline void
bft_buf_swap(struct bft_buf *a, struct bft_buf *b)
{
	struct bft_buf t = *a;

	*a = *b;
	*b = t;
}
/* Appends len bytes, growing b.  Returns 0, or -ENOMEM. */
int bft_buf_append(struct bft_buf *b, const void *p, size_t len);
/*
 * Grows b by len bytes, left for the caller to fill.  Returns where they
 * start (valid until b next grows), or NULL when out of memory.
 */
uint8_t *bft_buf_extend(struct bft_buf *b, size_t len);

/*
 * Appends one whole frame (length prefix + body) for m to out.  n is the
 * cluster size, which fixes the lengths of vec and cc.  Returns 0, or
 * -EINVAL when m cannot be encoded (bad type, too many candidates, a
 * count out of range: what the decoder would refuse), -EMSGSIZE when
 * the frame would pass BFT_MAX_FRAME, -ENOMEM when out cannot grow; out
 * is then as it was.
 */
int bft_wire_encode(const struct bft_msg *m, unsigned n, struct bft_buf *out);

/*
 * bft_wire_encode without the fragment's bytes: appends the frame up to
 * them (its length prefix already counting them) and sets *tail and
 * *tail_len to what the caller must append to finish it (NULL and 0 for
 * a message without a fragment).  bft_chan_seal_tail encrypts the tail
 * straight into the frame; copying it first would cost a pass over it.
 * Returns as bft_wire_encode does.
 */
int bft_wire_encode_head(const struct bft_msg *m, unsigned n,
    struct bft_buf *out, const uint8_t **tail, size_t *tail_len);

/*
 * Decodes one frame body (without the length prefix) of len bytes.
 * Returns 0, or -EBADMSG for a malformed body (-EINVAL for n out of
 * range) with *why, when why is not NULL, set to a static string that
 * names what is wrong: the errno is the failure, why its detail for a
 * log line.  m is all zeros after a failure; m->frag points into body
 * on success.
 */
int bft_wire_decode(const uint8_t *body, size_t len, unsigned n,
		    struct bft_msg *m, const char **why);

/*
 * msgpack-c's zone for the objects of a body, kept from one decode to
 * the next by a caller that decodes message after message and wants no
 * allocation per message (bft_wire_decode() makes one per call).  Start
 * from all zeros; one thread at a time; bft_wire_scratch_free() lets
 * the memory go.
 */
struct bft_wire_scratch {
	void *zone;
};

/* bft_wire_decode() with s's zone; -ENOMEM if it cannot be made. */
int bft_wire_decode_with(struct bft_wire_scratch *s, const uint8_t *body,
    size_t len, unsigned n, struct bft_msg *m, const char **why);
void bft_wire_scratch_free(struct bft_wire_scratch *s);

/*
 * Frame splitter for a byte stream.  Reads the 4-byte prefix at buf;
 * returns one of three: 0 and sets *body_len when a whole frame of
 * 4 + *body_len bytes is present; 1 when more bytes are needed (no
 * failure: read more); -EMSGSIZE when the prefix exceeds BFT_MAX_FRAME
 * (the connection must be closed).
 */
int bft_wire_frame(const uint8_t *buf, size_t avail, uint32_t *body_len);

const char *bft_msg_type_str(uint8_t type);

#endif
