/*
 * M-PoWerStore predicates (Algorithm 5, lines 132-133; Algorithm 6,
 * lines 175-178).  Pure: the same inputs give the same answer.
 */
#include <string.h>

#include "crypto.h"
#include "predicates.h"

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
    unsigned i, const uint8_t ki[BFT_KEY_LEN])
{
	uint8_t nh[BFT_HASH_LEN];

	if (bft_ts_is_zero(&c->ts) || i >= BFT_MAX_N)
		return false;
	if (bft_valid_by_hist(c, hist))
		return true;
	/*
	 * The MAC binds ts to H(N): only a writer that ran STORE can have
	 * made it, and only the revealed N hashes to that H(N), so a valid
	 * MAC is a proof of writing even without the history entry.
	 */
	bft_hash(c->nonce, BFT_NONCE_LEN, nh);
	return bft_vec_verify(&c->ts, nh, ki, c->vec[i]);
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
	return best;
}
