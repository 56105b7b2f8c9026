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
 */
#include <inttypes.h>
#include <stdlib.h>

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
	/* Beyond the cap a claim is rebuilt unchecked: never lost. */
	if (rb->nlone < rb->lonecap)
		rb->lone[rb->nlone++] = (struct rb_lone){
			.block = block, .own = *own, .who = who,
		};
	return true;
}

void
rb_claim_read(struct bft_rebuild *rb, uint64_t block,
    const struct bftblk_proof *p)
{
	size_t lo = 0, hi = rb->nlone;

	/* The scan lists blocks in ascending order. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rb->lone[mid].block < block)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == rb->nlone || rb->lone[lo].block != block)
		return;
	rb->lone[lo].read = true;
	rb->lone[lo].stale = p->zero ||
	    bft_ts_cmp(&p->cand.ts, &rb->lone[lo].own) <= 0;
}

void
rb_claims_judge(struct bft_rebuild *rb)
{
	unsigned claims[BFT_MAX_N] = { 0 }, stale[BFT_MAX_N] = { 0 };
	double now = rb_now_s();

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
		unsigned b;

		if (stale[j] < JUDGE_MIN || 2 * stale[j] <= claims[j]) {
			if (claims[j] > 0 && stale[j] == 0)
				rb->backoff_s[j] = 0;
			continue;
		}
		b = rb->backoff_s[j] ? rb->backoff_s[j] : BACKOFF_FIRST_S;
		rb->distrust |= 1u << j;
		rb->distrust_until[j] = now + b;
		rb->backoff_s[j] = 2 * b < BACKOFF_MAX_S ? 2 * b :
		    BACKOFF_MAX_S;
		bft_warn("rebuild: peer %u alone listed %u blocks newer that "
		    "reads found no newer (of %u it alone listed): ignoring "
		    "what it alone lists for %u s", j, stale[j], claims[j], b);
	}
	if (rb->ignored > 0)
		bft_log("rebuild: %" PRIu64 " blocks listed newer only by "
		    "ignored peers were left alone", rb->ignored);
	rb->nlone = 0;
}
