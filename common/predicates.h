/*
 * The predicates of M-PoWerStore (Dobre et al., Algorithms 5 and 6) as
 * small pure functions: no I/O, no globals, everything they look at is
 * passed in.
 *
 * Server side (Algorithm 5, lines 132-133), at server i:
 *   validByHist(c) = H(c.N) == Hist[c.ts].nh (and c.ts.mac is the stored
 *                    one: see predicates.c)
 *   valid(c)       = validByHist(c) || verify(c.vec[i], c.ts, H(c.N), k_i)
 *
 * Client side (Algorithm 6, lines 175-178), over the candidate set C and
 * the FILTER replies W[1..n]:
 *   highcand(c) = c.ts is the highest timestamp in C
 *   safe(c)     = >= t+1 replies with ts == c.ts that agree on cc and vec,
 *                 and whose fragments hash to their cc entry
 *   invalid(c)  = >= n-t replies with ts < c.ts
 *
 * Not in the paper: fastread(A), the 1-round READ over the COLLECT
 * replies A[1..n] (see bft_fast_read() below and the README).
 */
#ifndef BFTBLK_PREDICATES_H
#define BFTBLK_PREDICATES_H

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"

/*
 * The zero value: what trim, discard and write-zeroes store.  Its
 * fragments are empty, so every entry of its cross-checksum is H() of
 * nothing; a coded value's fragments never are, so no written value
 * shares this cc.  A reader trusts it exactly as it trusts any cc: t+1
 * replies agreeing on it include a correct server, which stored what
 * the writer sent.  Servers then keep a block's metadata and no
 * fragment, and readers return zeros without decoding.
 */
/* cc is n entries of BFT_HASH_LEN bytes. */
bool bft_cc_is_zero(const void *cc, unsigned n);
void bft_cc_set_zero(void *cc, unsigned n);

/* hist is Hist[c->ts] at this server, or NULL when there is none. */
bool bft_valid_by_hist(const struct bft_cand *c,
		       const struct bft_hist_meta *hist);
/* ki: server i's MAC keys, in each epoch it accepts (crypto.h). */
struct bft_mac_keys;
bool bft_valid(const struct bft_cand *c, const struct bft_hist_meta *hist,
	       uint64_t block, unsigned i, const struct bft_mac_keys *ki);

/* One FILTER_ACK as the client keeps it: W[i]. */
struct bft_reply {
	bool present;			/* i is in R */
	struct bft_ts ts;
	uint8_t cc[BFT_MAX_N][BFT_HASH_LEN];
	uint8_t vec[BFT_MAX_N][BFT_MAC_LEN];
	bool frag_ok;			/* H(fr_i) == cc[i], checked on arrival */
};

bool bft_highcand(const struct bft_cand *c, const struct bft_cand *C,
		  unsigned nc);
bool bft_invalid(const struct bft_ts *cts, const struct bft_reply *W,
		 unsigned n, unsigned t);
/*
 * On true, *quorum is the bitmask of a set R' of >= t+1 agreeing replies
 * (the one RESTORE decodes from and REPAIR takes vec from).
 */
bool bft_safe(const struct bft_ts *cts, const struct bft_reply *W,
	      unsigned n, unsigned t, uint32_t *quorum);

/* Number of replies in W whose ts is greater than cts. */
unsigned bft_count_newer(const struct bft_ts *cts, const struct bft_reply *W,
			 unsigned n);

/* Removes every invalid candidate from C; returns the new count. */
unsigned bft_drop_invalid(struct bft_cand *C, unsigned nc,
			  const struct bft_reply *W, unsigned n, unsigned t);

/* Index in C of the highest candidate, or -ENOENT when nc == 0. */
int bft_highest(const struct bft_cand *C, unsigned nc);

/* One COLLECT_ACK as the reader keeps it for the 1-round read: A[i]. */
struct bft_collect_reply {
	bool present;			/* server i answered COLLECT */
	struct bft_cand lc;		/* its lc */
	bool has_cc;			/* with the cc of Hist[lc.ts] */
	uint8_t cc[BFT_MAX_N][BFT_HASH_LEN];
	bool has_frag;			/* with fragment i, whose hash is fh */
	uint8_t fh[BFT_HASH_LEN];
};

enum bft_fast_verdict {
	BFT_FAST_NO,		/* cannot succeed any more: run FILTER */
	BFT_FAST_WAIT,		/* may succeed once pending servers answer */
	BFT_FAST_YES,		/* A[*pick].lc is the value, from *have */
};

/*
 * How a reader tells a candidate that a writer made.  A writer's client
 * checks the timestamp's MAC under k_W.  A server reading from its peers
 * (a rebuild) has no k_W but its own k_i: it checks its entry of the MAC
 * vector over (ts, ts.mac, H(N)), which only a writer, holding every
 * k_i, can make either, and which binds the nonce too.  A read-only
 * client has neither, and no candidate passes.  During a MAC key
 * rotation each key has its other epoch's beside it (crypto.h).
 */
struct bft_written_key {
	const uint8_t *kw;		/* k_W, or NULL */
	const uint8_t *ki;		/* else k_self, or NULL */
	unsigned self;			/* ki's server */
	const uint8_t *kw_alt, *ki_alt;	/* the other epoch's, or NULL */
};
bool bft_cand_written(const struct bft_cand *c, uint64_t block,
    const struct bft_written_key *k);

/*
 * The 1-round READ: YES when at least n-t replies carry one and the same
 * candidate c (ts, MAC, nonce and vec) with c.ts non-zero and written
 * (bft_cand_written() under k), at least t+1 of them carry an identical cc, and at least
 * t+1 of them carry a fragment whose hash is that cc's entry for its
 * server, or the agreed cc is the zero value's, which needs none.  pending holds the servers whose reply may still come, want
 * those asked for a fragment; WAIT means the replies so far allow YES
 * later, NO that no further reply can.  *pick is set (or -1) to a reply
 * carrying c and the agreed cc as soon as those are known, *have to the
 * replies whose fragments match that cc (0 before).
 */
enum bft_fast_verdict bft_fast_read(const struct bft_collect_reply *A,
    unsigned n, unsigned t, uint32_t pending, uint32_t want, uint64_t block,
    const struct bft_written_key *k, int *pick, uint32_t *have);
/*
 * bft_fast_read() for a read of part of the value that data fragment
 * part holds alone (bft_ec_data_frag()): the same candidate and cc
 * rules, and then that one fragment hashing to the agreed cc's entry
 * in place of t+1.  The cc t+1 servers agree on is the writer's (one of
 * them is correct), so a fragment that hashes to its entry is the
 * writer's fragment, and its payload the value's bytes: the choice of
 * the value is the whole read's, only less of it is rebuilt.
 */
enum bft_fast_verdict bft_fast_read_part(const struct bft_collect_reply *A,
    unsigned n, unsigned t, uint32_t pending, uint32_t want, uint64_t block,
    const struct bft_written_key *k, unsigned part, int *pick,
    uint32_t *have);

/*
 * Lease fencing (proto.h's generations; the argument is in README,
 * "One writer per volume").  top is the highest timestamp server i
 * holds for the lease register of ts's volume (lc or any Hist entry):
 * a STORE or COMPLETE under ts is refused when its generation is below
 * top's, i.e. when a newer holder's claim reached this server first.
 */
bool bft_fenced(const struct bft_ts *ts, const struct bft_ts *top);
/*
 * Whether refusals from the servers in fenced prove a newer holder: t+1
 * of them include a correct server, which holds that holder's claim.
 */
bool bft_fenced_proven(uint32_t fenced, unsigned t);
/*
 * The volume table's admin lock is one register, and a register is not
 * compare-and-swap: two admins that read it free at once both claim the
 * next generation.  So each server lets one writer have a generation of
 * that register: a COMPLETE (or a reader's write-back) under ts is
 * refused when block is the lock's register and its lc holds another
 * writer's claim of ts's generation.  An admin holds the lock only once
 * its COMPLETE reached n-t servers, and two such sets share t+1, one of
 * them correct, which took only one writer: at most one claim of a
 * generation completes, with no waiting for rivals' writes in flight
 * (docs/volumes.md, "The admin lock").
 */
bool bft_lock_claim_refused(uint64_t block, const struct bft_ts *lc,
    const struct bft_ts *ts);
/* Whether block is the register of the volume table's admin lock. */
bool bft_is_lock_register(uint64_t block);
/*
 * The num of a write after the highest known num, by a holder of
 * generation gen: never below the generation's floor, so that it
 * orders after every write of an older holder.  0 when the generation's
 * nums are used up (the writer then fails the write).
 */
uint64_t bft_write_num(uint64_t known, uint64_t gen);
/*
 * The generation a new holder takes over a register whose newest claim
 * has timestamp claim (zero when none was ever written): one above it,
 * or 0 when the generations are used up.
 */
uint64_t bft_next_gen(const struct bft_ts *claim);

/*
 * Snapshots (docs/snapshots.md).  A snapshot of a volume is a boundary
 * generation g: its block is the newest completed version of generation
 * <= g.  bft_snap_boundary: the boundary a snapshot taken now gets,
 * given the timestamp of the volume's newest lease claim (zero when
 * none): the claim's generation, under which every write completed so
 * far was made.  The snapshot then re-asserts the claim under
 * bft_next_gen(claim), which fences the rest.
 */
uint64_t bft_snap_boundary(const struct bft_ts *claim);
/*
 * Whether a version under ts may be part of the view at boundary g.  A
 * reader drops a candidate or history entry it does not admit, and a
 * server refuses a write-back of one into the view: the generation is
 * under the writer's MACs, so no server can pass the head's data, or a
 * later snapshot's, as this one's.  The zero timestamp (c0, never
 * written) is admitted by every view.
 */
bool bft_view_admits(const struct bft_ts *ts, uint64_t g);

/* Where a server answers the view at g of one block from. */
enum bft_view_src {
	BFT_VIEW_LIVE,		/* the live state: nothing newer than g completed */
	BFT_VIEW_KEPT,		/* what the store kept when a newer one did */
	BFT_VIEW_UNKNOWN,	/* overwritten before the boundary was known */
};
/*
 * lc: the block's live lc.ts; kept: whether the store kept a view at g
 * for it (a version, or the mark that it had none).  A server that
 * learnt of g only after a newer write completed cannot tell what the
 * view held and must say so (EAGAIN), never answer c0, which a reader
 * would count as a vote that nothing was written.
 */
enum bft_view_src bft_view_src(const struct bft_ts *lc, bool kept,
    uint64_t g);

#endif
