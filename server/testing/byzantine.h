/*
 * Test-only Byzantine behaviour of the test server, build/tests/
 * bftblk-server-test (--byzantine=MODES); the production bftblk-server
 * is built without it (server/test_hooks.h).
 *
 * The protocol handler always runs honestly, so the server's own state
 * stays that of a correct server; this layer then lies about it: given a
 * request and the honest reply, it rewrites the reply, drops it, or holds
 * it back for later.  Every rewritten reply is still a well-formed frame,
 * so a client has to reject it on its content, not on its framing.
 *
 * The option is refused unless the environment has BFTBLK_TEST_BYZANTINE=1,
 * so a stray option in a unit file that names the test build cannot
 * turn a server into a liar.
 */
#ifndef BFTBLK_BYZANTINE_H
#define BFTBLK_BYZANTINE_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "handler.h"
#include "wire.h"

#define BFT_BYZ_ENV "BFTBLK_TEST_BYZANTINE"

/*
 * The modes, and what each attacks in the client (nbd-plugin/op_read.c,
 * op_write.c, common/predicates.c).  Modes combine; the server's exit
 * line counts the replies each one changed.
 */
enum bft_byz_mode {
	/*
	 * A FILTER_ACK or COLLECT_ACK fragment with one bit flipped, cc
	 * untouched: the hash check (frag_ok, and the 1-round read's fh
	 * against the agreed cc) must keep it out of safe() and decoding.
	 */
	BFT_BYZ_CORRUPT_FRAGMENT = 1u << 0,
	/*
	 * A forged fragment with our own cc entry made to match it, the
	 * other entries as stored: it passes the hash check, so only the
	 * agreement on cc in safe() and RESTORE's use of the quorum's cc
	 * keep it out (and the t+1 agreement of bft_fast_read()).  A
	 * COLLECT_ACK not asked for a fragment gets our cc entry garbled.
	 */
	BFT_BYZ_BAD_CHECKSUM = 1u << 1,
	/*
	 * CLOCK, STORE_ACK, COLLECT and FILTER answered from a rollback
	 * point (each block's first completed value seen, or c0): old but
	 * authentic data (COLLECT with the old lc's own cc and fragment).
	 * Attacks the writer's choice of the highest timestamp (with or
	 * without CLOCK), invalid(), the reader's choice of the highest
	 * candidate and the n-t agreement of the 1-round read.
	 */
	BFT_BYZ_STALE = 1u << 2,
	/*
	 * Timestamps near 2^63 that no writer signed, in CLOCK, STORE_ACK,
	 * COLLECT and FILTER (each with a fragment matching its cc entry,
	 * COLLECT's only when asked for one): attacks
	 * bft_ts_verify() in both rounds, and the restart rule
	 * (bft_count_newer() >= t+1), which t liars must not trigger.
	 */
	BFT_BYZ_FORGE = 1u << 3,
	/*
	 * Every vec entry but our own broken (so our own checks would pass)
	 * in COLLECT's lc and FILTER's Hist.  A reader that selects our
	 * copy of a candidate holds a vec other than the one t+1 servers
	 * agree on and must REPAIR it (Algorithm 6, lines 170-173), or the
	 * value might be written back to fewer than t+1 correct servers.
	 */
	BFT_BYZ_BAD_MAC = 1u << 4,
	/*
	 * Every other connection is lied to, alternately stale and forged,
	 * the rest get the truth: a value one client saw complete must be
	 * found by the next whatever this server tells either.
	 */
	BFT_BYZ_EQUIVOCATE = 1u << 5,
	/*
	 * No reply after HELLO (mute) or every reply two seconds late
	 * (slow): attacks liveness, as rounds must go on with the n-t
	 * others and ignore late replies to finished rounds.
	 */
	BFT_BYZ_MUTE = 1u << 6,
	BFT_BYZ_SLOW = 1u << 7,
	/*
	 * A fragment and a whole cc forged from the seed, so colluders
	 * sharing --byzantine-seed agree on (ts, cc, vec) and each one's
	 * fragment matches: all safe() asks but the count, which only t+1
	 * agreeing replies may reach (in FILTER's safe() and in the cc
	 * agreement of the 1-round read's COLLECT).
	 */
	BFT_BYZ_COLLUDE = 1u << 8,
	/*
	 * Every reply an error status (EBUSY, ESTALE, EIO, EAUTH, ENOSPC in
	 * turn) or, now and then, an OK reply naming the wrong block: t such
	 * replies must neither fail an I/O nor be taken as an answer.
	 */
	BFT_BYZ_REFUSE = 1u << 9,
	/*
	 * Lies to a server that rebuilds itself (server/rebuild/rebuild_scan.c):
	 * every SUMMARY_ACK digest random bytes, so every range looks
	 * different, and every LCLIST_ACK listing each block of the range,
	 * written or not, under a forged timestamp far newer than any
	 * writer's, and every VOLUMES_ACK naming, instead of its own, 64
	 * volumes nobody wrote, each of the largest size.  STATUS and the
	 * protocol's own requests are answered honestly.  The comparison must only ever read more blocks: each
	 * is still read through the protocol and adopted only when t+1
	 * servers agree on it, so the forged timestamps never reach lc, and
	 * a rebuild that has to read the whole disk must still finish.
	 */
	BFT_BYZ_LIE_HEAL = 1u << 10,
	/*
	 * Says that every written block was trimmed: its COLLECT_ACKs and
	 * FILTER_ACKs carry the candidate it holds with the zero value's
	 * cross-checksum and no fragment (common/predicates.h).  Liars
	 * agree with each other, but the zero value needs t+1 servers like
	 * any cc: reads must return the data, never zeros.
	 */
	BFT_BYZ_TRIM_LIE = 1u << 11,
	/*
	 * Answers a snapshot's view (VCOLLECT, VFILTER, VREPAIR) from the
	 * block's live state: the head's data, authentic and with its
	 * proof of writing, offered as the snapshot's.  Its generation is
	 * above the boundary, under the writer's MACs: readers must drop it
	 * (docs/snapshots.md), and a snapshot must read as it was.
	 */
	BFT_BYZ_VIEW_HEAD = 1u << 12,
	/*
	 * Says no block was ever written: COLLECT and FILTER (live or of a
	 * view) answered as for a block it never held, the initial value
	 * and nothing else.  Attacks a clone's reads, which go to the
	 * parent snapshot for a block that was never written: one liar's
	 * "never written" must not send a reader there while a write to
	 * the clone's block completed (docs/snapshots.md, Clones).
	 */
	BFT_BYZ_HIDE = 1u << 13,
	/*
	 * Answers a slice COLLECT (a part read's, common/hashtree.h) with
	 * the chunks one place on (one place back at the fragment's end)
	 * and their own valid proof: chunks of the writer's fragment that
	 * hash with their proof to its very root, at another place.  The
	 * reader must not take them for the chunks it asked for.  Every
	 * other mode lies about the whole fragment first and sends the
	 * slice of its lie with the lie's own proof.
	 */
	BFT_BYZ_SLICE_SHIFT = 1u << 14,
};

/* What to do with a reply after bft_byz_reply(). */
enum bft_byz_verdict {
	BFT_BYZ_SEND,		/* encode and send rep (maybe rewritten) now */
	BFT_BYZ_DROP,		/* send nothing */
	BFT_BYZ_HELD,		/* the layer sends it later by itself */
};

struct bft_byz;
struct bft_byz_conn;

/*
 * Parses "mode[,mode...]" into a mask of enum bft_byz_mode.  Returns 0,
 * or -1 with a reason (naming the valid modes) in err.
 */
int bft_byz_parse(const char *spec, unsigned *modes, char *err,
    size_t errlen);

/*
 * Server-wide state for modes over the handler h (whose store the stale
 * mode reads its old states from), announced loudly in the log.  seed
 * makes every forged byte reproducible.  NULL when out of memory.
 */
struct bft_byz *bft_byz_new(uv_loop_t *loop, struct bft_handler *h,
    unsigned modes, uint64_t seed);

/* Logs what was injected and frees b; after the loop has run dry. */
void bft_byz_free(struct bft_byz *b);

/*
 * Sends a held reply, an encoded frame, on its connection: the
 * connection seals it in its turn, so the channel's frame counter stays
 * in step.
 */
typedef void bft_byz_send_fn(void *ctx, const uint8_t *frame, size_t len);

/* Per-connection state for a newly accepted one; NULL on ENOMEM. */
struct bft_byz_conn *bft_byz_conn_new(struct bft_byz *b,
    bft_byz_send_fn *send, void *ctx);

/*
 * Called before the stream is closed: replies still held back are
 * discarded, and bc is freed once its timer has closed.
 */
void bft_byz_conn_close(struct bft_byz_conn *bc);

/*
 * The hook: req was handled honestly into rep.  May rewrite rep in
 * place (rep->frag may then point into the layer's buffer, valid until
 * the next call).  Returns an enum bft_byz_verdict.
 */
int bft_byz_reply(struct bft_byz_conn *bc, const struct bft_msg *req,
    struct bft_msg *rep);

#endif
