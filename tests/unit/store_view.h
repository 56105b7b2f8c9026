/*
 * Short forms of the store's copy-out accessors for the tests' asserts.
 */
#ifndef BFTBLK_TEST_STORE_VIEW_H
#define BFTBLK_TEST_STORE_VIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "../../server/store/store.h"

/*
 * lc of block, copied into one of eight buffers used in turn, so that a
 * few can be compared in one assert.
 */
static inline const struct bft_cand *
store_lc(struct bft_store *st, uint64_t block)
{
	static struct bft_cand ring[8];
	static unsigned k;
	struct bft_cand *c = &ring[k++ % 8];

	bft_store_get_lc(st, block, c);
	return c;
}

static inline bool
store_has_hist(struct bft_store *st, uint64_t block, const struct bft_ts *ts)
{
	struct bft_hist_entry e;

	return bft_store_get_hist(st, block, ts, &e) == 0;
}

#endif
