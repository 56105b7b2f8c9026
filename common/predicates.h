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
 */
#ifndef BFTBLK_PREDICATES_H
#define BFTBLK_PREDICATES_H

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"

/* hist is Hist[c->ts] at this server, or NULL when there is none. */
bool bft_valid_by_hist(const struct bft_cand *c,
		       const struct bft_hist_meta *hist);
bool bft_valid(const struct bft_cand *c, const struct bft_hist_meta *hist,
	       unsigned i, const uint8_t ki[BFT_KEY_LEN]);

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

/* Index in C of the highest candidate, or -1 when nc == 0. */
int bft_highest(const struct bft_cand *C, unsigned nc);

#endif
