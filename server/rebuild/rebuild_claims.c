/*
 * What the peers claim in a rebuild's comparison (rebuild_int.h).  A
 * block that t+1 peers list newer than ours is newer at a correct peer:
 * it is rebuilt.  A block that only 1..t peers list newer may still be
 * one a liar hides from us, so it is rebuilt too, but the claim is
 * remembered and checked against what the protocol read of the block
 * found.  A peer whose lone claims were mostly false (the read found
 * nothing newer than what we held) is a liar making us reread the disk:
 * its lone claims are ignored for a while, ten minutes at first and
 * twice as long each time again, up to a day.  A correct peer's claim
 * is never false: it lists an lc only after the write's COMPLETE, when
 * the value is stored at n-t servers and every later read returns it
 * or something newer.
 *
 * Judging only at the end of a pass would let a liar that lists every
 * block cost a whole-disk read each time its distrust ends.  So reads
 * judge as they go: once RB_EARLY_FALSE (64) of a peer's lone claims
 * were found false, more than were found true, it is distrusted at
 * once and the blocks only it listed are not read.  Reads go in
 * batches of BFTBLK__PEER_BATCH (32), so a liar with k true claims costs
 * at most max(64, k + 1) + 32 block reads of its lies per pass, and a
 * pass only after its distrust ends.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rebuild_int.h"

#define LONE_MAX	65536	/* lone claims checked per pass */
#define JUDGE_MIN	8	/* false claims before a peer is ignored */
#define BACKOFF_FIRST_S	600
#define BACKOFF_MAX_S	86400

void
rb_claims_begin(struct bft_rebuild *rb)
{
	double now = rb_now_s();

	rb->nlone = 0;
	rb->ignored = 0;
	rb->deferred = 0;
	rb->judged = 0;
	memset(rb->pass_false, 0, sizeof rb->pass_false);
	memset(rb->pass_true, 0, sizeof rb->pass_true);
	for (unsigned j = 0; j < rb->cfg->n; j++)
		if ((rb->distrust & (1u << j)) &&
		    now >= rb->distrust_until[j]) {
			rb->distrust &= ~(1u << j);
			bft_log("rebuild: peer %u's claims count again", j);
		}
}

bool
rb_claim(struct bft_rebuild *rb, uint64_t block, const struct bft_ts *own,
    uint32_t who)
{
	if ((unsigned)__builtin_popcount(who) > rb->cfg->t)
		return true;
	if ((who & ~rb->distrust) == 0) {
		rb->ignored++;
		return false;
	}
	if (rb->nlone == rb->lonecap && rb->lonecap < LONE_MAX) {
		size_t cap = rb->lonecap ? 2 * rb->lonecap : 1024;
		struct rb_lone *p = realloc(rb->lone, cap * sizeof *p);

		if (p != NULL) {
			rb->lone = p;
			rb->lonecap = cap;
		}
	}
	/*
	 * Beyond the cap a claim waits for the next pass (the peer lists it
	 * again): rebuilt unchecked, a liar's would cost reads unbounded.
	 */
	if (rb->nlone == rb->lonecap) {
		rb->deferred++;
		return false;
	}
	rb->lone[rb->nlone++] = (struct rb_lone){
		.block = block, .own = *own, .who = who,
	};
	return true;
}

/* Peer j's lone claims are ignored from now, for its backoff. */
static void
distrust(struct bft_rebuild *rb, unsigned j, unsigned nfalse,
    unsigned nclaims, const char *when)
{
	unsigned b = rb->backoff_s[j] ? rb->backoff_s[j] : BACKOFF_FIRST_S;

	rb->distrust |= 1u << j;
	rb->judged |= 1u << j;
	rb->distrust_until[j] = rb_now_s() + b;
	rb->backoff_s[j] = 2 * b < BACKOFF_MAX_S ? 2 * b : BACKOFF_MAX_S;
	bft_warn("rebuild: peer %u alone listed %u blocks newer that "
	    "reads found no newer (of %u it alone listed and were read%s): "
	    "ignoring what it alone lists for %u s", j, nfalse, nclaims,
	    when, b);
}

bool
rb_claims_liar(unsigned nfalse, unsigned ntrue)
{
	return nfalse >= RB_EARLY_FALSE && nfalse > ntrue;
}

/* The lone claim of block, or NULL; the scan lists blocks ascending. */
static struct rb_lone *
lone_find(struct bft_rebuild *rb, uint64_t block)
{
	size_t lo = 0, hi = rb->nlone;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rb->lone[mid].block < block)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < rb->nlone && rb->lone[lo].block == block ?
	    &rb->lone[lo] : NULL;
}

bool
rb_claim_wanted(struct bft_rebuild *rb, uint64_t block)
{
	const struct rb_lone *l = lone_find(rb, block);

	if (l == NULL || l->read || (l->who & ~rb->distrust) != 0)
		return true;
	rb->ignored++;
	return false;
}

void
rb_claim_read(struct bft_rebuild *rb, uint64_t block,
    const struct bftblk__proof *p)
{
	struct rb_lone *l = lone_find(rb, block);

	if (l == NULL || l->read)
		return;
	l->read = true;
	l->stale = p->zero || bft_ts_cmp(&p->cand.ts, &l->own) <= 0;
	for (unsigned j = 0; j < rb->cfg->n; j++) {
		if (!(l->who & (1u << j)))
			continue;
		if (l->stale)
			rb->pass_false[j]++;
		else
			rb->pass_true[j]++;
		if (!(rb->distrust & (1u << j)) &&
		    rb_claims_liar(rb->pass_false[j], rb->pass_true[j]))
			distrust(rb, j, rb->pass_false[j], rb->pass_false[j] +
			    rb->pass_true[j], ", judged during the pass");
	}
}

void
rb_claims_judge(struct bft_rebuild *rb)
{
	unsigned claims[BFT_MAX_N] = { 0 }, stale[BFT_MAX_N] = { 0 };

	for (size_t k = 0; k < rb->nlone; k++) {
		const struct rb_lone *l = &rb->lone[k];

		if (!l->read)
			continue;
		for (unsigned j = 0; j < rb->cfg->n; j++)
			if (l->who & (1u << j)) {
				claims[j]++;
				stale[j] += l->stale;
			}
	}
	for (unsigned j = 0; j < rb->cfg->n; j++) {
		/* Judged already while the pass read. */
		if (rb->judged & (1u << j))
			continue;
		if (stale[j] < JUDGE_MIN || 2 * stale[j] <= claims[j]) {
			if (claims[j] > 0 && stale[j] == 0)
				rb->backoff_s[j] = 0;
			continue;
		}
		distrust(rb, j, stale[j], claims[j], "");
	}
	if (rb->ignored > 0)
		bft_log("rebuild: %" PRIu64 " blocks listed newer only by "
		    "ignored peers were left alone", rb->ignored);
	rb->nlone = 0;
}
