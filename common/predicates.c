/*
 * M-PoWerStore predicates (Algorithm 5, lines 132-133; Algorithm 6,
 * lines 175-178).  Pure: the same inputs give the same answer.
 */
#include <errno.h>
#include <string.h>

#include "crypto.h"
#include "predicates.h"

/* BLAKE3 of no bytes: every entry of the zero value's cross-checksum. */
static const uint8_t empty_hash[BFT_HASH_LEN] = {
	0xaf, 0x13, 0x49, 0xb9, 0xf5, 0xf9, 0xa1, 0xa6, 0xa0, 0x40, 0x4d,
	0xea, 0x36, 0xdc, 0xc9, 0x49, 0x9b, 0xcb, 0x25, 0xc9, 0xad, 0xc1,
	0x12, 0xb7, 0xcc, 0x9a, 0x93, 0xca, 0xe4, 0x1f, 0x32, 0x62,
};

bool
bft_cc_is_zero(const void *cc, unsigned n)
{
	const uint8_t *p = cc;

	if (n == 0)
		return false;
	for (unsigned i = 0; i < n; i++)
		if (memcmp(p + (size_t)i * BFT_HASH_LEN, empty_hash,
		    BFT_HASH_LEN) != 0)
			return false;
	return true;
}

void
bft_cc_set_zero(void *cc, unsigned n)
{
	uint8_t *p = cc;

	for (unsigned i = 0; i < n; i++)
		memcpy(p + (size_t)i * BFT_HASH_LEN, empty_hash, BFT_HASH_LEN);
}

bool
bft_valid_by_hist(const struct bft_cand *c, const struct bft_hist_meta *hist)
{
	uint8_t nh[BFT_HASH_LEN];

	/*
	 * The timestamp's MAC must be the one the writer stored: otherwise a
	 * reader could write back a real (ts, N) with a garbled MAC, which
	 * every writer's CLOCK and every reader would then ignore.
	 */
	if (hist == NULL || bft_ts_cmp(&hist->ts, &c->ts) != 0 ||
	    !bft_equal(hist->ts.mac, c->ts.mac, BFT_MAC_LEN))
		return false;
	bft_hash(c->nonce, BFT_NONCE_LEN, nh);
	return bft_equal(nh, hist->nh, BFT_HASH_LEN);
}

bool
bft_valid(const struct bft_cand *c, const struct bft_hist_meta *hist,
    uint64_t block, unsigned i, const struct bft_mac_keys *ki)
{
	uint8_t nh[BFT_HASH_LEN];

	if (bft_ts_is_zero(&c->ts) || i >= BFT_MAX_N)
		return false;
	/*
	 * Hist backs c only while the entry's own MAC still verifies under
	 * the keys this check takes: an entry stored under a MAC key epoch
	 * retired since (docs/key-epochs.md) proves nothing any more, else
	 * a leaked old writer key could STORE a version during a rotation
	 * and have it written back as lc after the epoch is gone.
	 */
	if (bft_valid_by_hist(c, hist) && bft_vec_check(&hist->ts, block,
	    hist->nh, ki, hist->vec[i]))
		return true;
	/*
	 * The MAC binds ts to H(N): only a writer that ran STORE can have
	 * made it, and only the revealed N hashes to that H(N), so a valid
	 * MAC is a proof of writing even without the history entry, and
	 * it names the block, so another block's write does not pass.
	 */
	bft_hash(c->nonce, BFT_NONCE_LEN, nh);
	return bft_vec_check(&c->ts, block, nh, ki, c->vec[i]);
}

bool
bft_highcand(const struct bft_cand *c, const struct bft_cand *C, unsigned nc)
{
	for (unsigned j = 0; j < nc; j++)
		if (bft_ts_cmp(&C[j].ts, &c->ts) > 0)
			return false;
	return true;
}

bool
bft_invalid(const struct bft_ts *cts, const struct bft_reply *W, unsigned n,
    unsigned t)
{
	unsigned lower = 0;

	for (unsigned i = 0; i < n; i++)
		if (W[i].present && bft_ts_cmp(&W[i].ts, cts) < 0)
			lower++;
	return lower >= n - t;
}

static bool
agree(const struct bft_reply *a, const struct bft_reply *b, unsigned n)
{
	return memcmp(a->cc, b->cc, (size_t)n * BFT_HASH_LEN) == 0 &&
	    memcmp(a->vec, b->vec, (size_t)n * BFT_MAC_LEN) == 0;
}

bool
bft_safe(const struct bft_ts *cts, const struct bft_reply *W, unsigned n,
    unsigned t, uint32_t *quorum)
{
	/*
	 * Group the matching replies by (cc, vec).  Agreement on cc means
	 * each member's own cc[i] is the group's, so frag_ok (checked
	 * against the reply's own cc) is the paper's H(W[i].fr) = W[j].cc[i].
	 */
	for (unsigned a = 0; a < n; a++) {
		uint32_t set = 0;
		unsigned count = 0;

		if (!W[a].present || !W[a].frag_ok ||
		    bft_ts_cmp(&W[a].ts, cts) != 0)
			continue;
		for (unsigned b = a; b < n; b++) {
			if (!W[b].present || !W[b].frag_ok ||
			    bft_ts_cmp(&W[b].ts, cts) != 0 ||
			    !agree(&W[a], &W[b], n))
				continue;
			set |= 1u << b;
			count++;
		}
		if (count >= t + 1) {
			if (quorum)
				*quorum = set;
			return true;
		}
	}
	return false;
}

unsigned
bft_count_newer(const struct bft_ts *cts, const struct bft_reply *W,
    unsigned n)
{
	unsigned newer = 0;

	for (unsigned i = 0; i < n; i++)
		if (W[i].present && bft_ts_cmp(&W[i].ts, cts) > 0)
			newer++;
	return newer;
}

unsigned
bft_drop_invalid(struct bft_cand *C, unsigned nc, const struct bft_reply *W,
    unsigned n, unsigned t)
{
	unsigned kept = 0;

	for (unsigned j = 0; j < nc; j++) {
		if (bft_invalid(&C[j].ts, W, n, t))
			continue;
		if (kept != j)
			C[kept] = C[j];
		kept++;
	}
	return kept;
}

int
bft_highest(const struct bft_cand *C, unsigned nc)
{
	int best = -1;

	for (unsigned j = 0; j < nc; j++)
		if (best < 0 || bft_ts_cmp(&C[j].ts, &C[best].ts) > 0)
			best = (int)j;
	return best < 0 ? -ENOENT : best;
}

static bool
cand_equal(const struct bft_cand *a, const struct bft_cand *b, unsigned n)
{
	return bft_ts_cmp(&a->ts, &b->ts) == 0 &&
	    memcmp(a->ts.mac, b->ts.mac, BFT_MAC_LEN) == 0 &&
	    memcmp(a->nonce, b->nonce, BFT_NONCE_LEN) == 0 &&
	    memcmp(a->vec, b->vec, (size_t)n * BFT_MAC_LEN) == 0;
}

/*
 * Why YES may return c after COLLECT alone (n = 3t+1, at most t liars):
 *
 * - c was written: its timestamp carries the writer's MAC (or, read by
 *   a server as a peer, c.vec's entry for that server verifies over
 *   c.ts and H(c.N) under its own key, which only a writer could make:
 *   bft_cand_written()), and t+1
 *   replies agreeing on cc include a correct server, which sends cc only
 *   when its Hist[c.ts] backs c (validByHist: H(c.N) matches).  The
 *   nonce is revealed only by COMPLETE, after STORE reached n-t servers.
 *   The same correct server makes the agreed cc the writer's, so
 *   fragments that hash to it decode to the value written under c.ts.
 * - No write that completed before the read began is newer than c: it
 *   set lc at n-t servers, which meet the n-t replies for c in t+1
 *   servers, one of them correct; a correct server's lc never goes back,
 *   so it would have replied with a newer lc, not with c.
 * - Every read that begins after this one returns c or newer: the n-t
 *   replies for c include n-2t = t+1 correct servers whose lc is now c
 *   or newer, which is all a completed WRITE of c guarantees (and all
 *   FILTER's write-back would have added).  Any later n-t replies meet
 *   those t+1 in a correct server, so c or a newer candidate is in the
 *   later read's C, and (Lemma A.16) it is never excluded there.
 *
 * Two different candidates cannot both have n-t replies (2(n-t) > n and
 * each server sends one lc), so the candidate found is the only one.
 */
bool
bft_cand_written(const struct bft_cand *c, uint64_t block,
    const struct bft_written_key *k)
{
	uint8_t nh[BFT_HASH_LEN];

	if (k->kw != NULL)
		return bft_ts_check(&c->ts, block,
		    &(struct bft_mac_keys){ k->kw, k->kw_alt });
	if (k->ki == NULL || k->self >= BFT_MAX_N)
		return false;
	bft_hash(c->nonce, BFT_NONCE_LEN, nh);
	return bft_vec_check(&c->ts, block, nh,
	    &(struct bft_mac_keys){ k->ki, k->ki_alt }, c->vec[k->self]);
}

/*
 * Both 1-round reads: the fragments that count are those of servers in
 * from, and need of them must hash to the agreed cc.
 */
static enum bft_fast_verdict
fast_read(const struct bft_collect_reply *A, unsigned n, unsigned t,
    uint32_t pending, uint32_t want, uint64_t block,
    const struct bft_written_key *k, uint32_t from, unsigned need,
    int *pick, uint32_t *have)
{
	unsigned missing = (unsigned)__builtin_popcount(pending);
	unsigned best_cnt = 0, cc_cnt = 0, nfrag = 0, more;
	int best = -1, cc_src = -1;
	const struct bft_cand *c;

	*pick = -1;
	*have = 0;
	/* The candidate the most replies carry. */
	for (unsigned a = 0; a < n; a++) {
		unsigned cnt = 0;

		if (!A[a].present || bft_ts_is_zero(&A[a].lc.ts))
			continue;
		for (unsigned b = 0; b < n; b++)
			if (A[b].present && cand_equal(&A[a].lc, &A[b].lc, n))
				cnt++;
		if (cnt > best_cnt) {
			best = (int)a;
			best_cnt = cnt;
		}
	}
	if (best_cnt + missing < n - t)
		return BFT_FAST_NO;
	if (best_cnt < n - t)
		return BFT_FAST_WAIT;
	c = &A[best].lc;
	if (!bft_cand_written(c, block, k))
		return BFT_FAST_NO;
	/* The cc the most replies for c agree on. */
	for (unsigned a = 0; a < n; a++) {
		unsigned cnt = 0;

		if (!A[a].present || !A[a].has_cc ||
		    !cand_equal(&A[a].lc, c, n))
			continue;
		for (unsigned b = 0; b < n; b++)
			if (A[b].present && A[b].has_cc &&
			    cand_equal(&A[b].lc, c, n) &&
			    memcmp(A[a].cc, A[b].cc,
			    (size_t)n * BFT_HASH_LEN) == 0)
				cnt++;
		if (cnt > cc_cnt) {
			cc_src = (int)a;
			cc_cnt = cnt;
		}
	}
	if (cc_cnt + missing < t + 1)
		return BFT_FAST_NO;
	if (cc_cnt < t + 1)
		return BFT_FAST_WAIT;
	*pick = cc_src;
	/* The zero value has no fragments to wait for. */
	if (bft_cc_is_zero(A[cc_src].cc, n))
		return BFT_FAST_YES;
	/* Fragments of c that hash to the agreed cc: any t+1 decode. */
	for (unsigned i = 0; i < n; i++) {
		if (!(from & (1u << i)) || !A[i].present || !A[i].has_frag ||
		    !cand_equal(&A[i].lc, c, n) ||
		    !bft_equal(A[i].fh, A[cc_src].cc[i], BFT_HASH_LEN))
			continue;
		*have |= 1u << i;
		nfrag++;
	}
	if (nfrag >= need)
		return BFT_FAST_YES;
	more = (unsigned)__builtin_popcount(pending & want & from);
	return nfrag + more < need ? BFT_FAST_NO : BFT_FAST_WAIT;
}

enum bft_fast_verdict
bft_fast_read(const struct bft_collect_reply *A, unsigned n, unsigned t,
    uint32_t pending, uint32_t want, uint64_t block,
    const struct bft_written_key *k,
    int *pick, uint32_t *have)
{
	return fast_read(A, n, t, pending, want, block, k, UINT32_MAX, t + 1,
	    pick, have);
}

enum bft_fast_verdict
bft_fast_read_part(const struct bft_collect_reply *A, unsigned n, unsigned t,
    uint32_t pending, uint32_t want, uint64_t block,
    const struct bft_written_key *k, unsigned part, int *pick,
    uint32_t *have)
{
	if (part >= n)
		return BFT_FAST_NO;
	return fast_read(A, n, t, pending, want, block, k, 1u << part, 1,
	    pick, have);
}

bool
bft_fenced(const struct bft_ts *ts, const struct bft_ts *top)
{
	return bft_ts_gen(ts) < bft_ts_gen(top);
}

bool
bft_fenced_proven(uint32_t fenced, unsigned t)
{
	return (unsigned)__builtin_popcount(fenced) >= t + 1;
}

bool
bft_is_lock_register(uint64_t block)
{
	return block == bft_fence_addr(bft_addr(BFT_VOL_TABLE, 0));
}

bool
bft_lock_claim_refused(uint64_t block, const struct bft_ts *lc,
    const struct bft_ts *ts)
{
	return bft_is_lock_register(block) && !bft_ts_is_zero(lc) &&
	    bft_ts_gen(lc) == bft_ts_gen(ts) && lc->wid != ts->wid;
}

uint64_t
bft_write_num(uint64_t known, uint64_t gen)
{
	uint64_t floor = bft_gen_floor(gen);

	if (gen > BFT_GEN_MAX)
		return 0;
	if (known < floor)
		return floor + 1;
	/* Past the generation's last num the next would read as gen + 1. */
	if ((known + 1) >> BFT_GEN_SHIFT != gen)
		return 0;
	return known + 1;
}

uint64_t
bft_next_gen(const struct bft_ts *claim)
{
	uint64_t g = bft_ts_gen(claim);

	return g >= BFT_GEN_MAX ? 0 : g + 1;
}

uint64_t
bft_snap_boundary(const struct bft_ts *claim)
{
	return bft_ts_gen(claim);
}

bool
bft_view_admits(const struct bft_ts *ts, uint64_t g)
{
	return bft_ts_gen(ts) <= g;
}

enum bft_view_src
bft_view_src(const struct bft_ts *lc, bool kept, uint64_t g)
{
	if (bft_view_admits(lc, g))
		return BFT_VIEW_LIVE;
	return kept ? BFT_VIEW_KEPT : BFT_VIEW_UNKNOWN;
}
