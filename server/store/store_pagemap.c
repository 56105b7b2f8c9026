/*
 * Which page slots of a volume's page table hold a page: a bitmap per
 * level, a bit of level l + 1 set when word i of level l is not zero.
 * A walk over the index (SUMMARY, LCLIST, the scrub, a checkpoint) asks
 * for the next page at or after a slot; scanning the page table itself
 * costs a step per empty slot, and a 256 TiB volume written only at its
 * two ends has four million of them.  Here the same question costs at
 * most two steps per level, whatever lies between the pages.
 *
 * Pages are only added one at a time and removed all together (a DROP,
 * or closing the store), so there is no clearing of a single bit.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

/* Words of level l for nslots slots. */
static uint64_t
pm_words(uint64_t nslots, unsigned l)
{
	unsigned shift = 6 * (l + 1);

	return (nslots + (UINT64_C(1) << shift) - 1) >> shift;
}

int
st_pm_grow(struct pagemap *m, uint64_t nslots)
{
	uint64_t *nw;

	if (nslots <= m->nslots)
		return 0;
	/* Bits do not move when the map grows: each level only lengthens. */
	for (unsigned l = 0; l < PM_LEVELS; l++) {
		uint64_t had = m->nslots ? pm_words(m->nslots, l) : 0;
		uint64_t want = pm_words(nslots, l);

		if (want == had)
			continue;
		if ((nw = realloc(m->w[l], (size_t)want * sizeof *nw)) == NULL)
			return -ENOMEM;
		memset(nw + had, 0, (size_t)(want - had) * sizeof *nw);
		m->w[l] = nw;
	}
	m->nslots = nslots;
	return 0;
}

void
st_pm_set(struct pagemap *m, uint64_t slot)
{
	for (unsigned l = 0; l < PM_LEVELS; l++) {
		uint64_t *w = &m->w[l][slot >> 6];
		bool was = *w != 0;

		*w |= UINT64_C(1) << (slot & 63);
		/* The levels above knew of this word already. */
		if (was)
			return;
		slot >>= 6;
	}
}

void
st_pm_free(struct pagemap *m)
{
	for (unsigned l = 0; l < PM_LEVELS; l++)
		free(m->w[l]);
	memset(m, 0, sizeof *m);
}

uint64_t
st_pm_next(const struct pagemap *m, uint64_t slot, uint64_t *steps)
{
	unsigned l = 0;
	uint64_t i = slot, w;

	if (slot >= m->nslots)
		return UINT64_MAX;
	/* Up: the first level with a set bit at or after i's place. */
	for (;;) {
		uint64_t wi = i >> 6, nw = pm_words(m->nslots, l);

		if (wi >= nw)
			return UINT64_MAX;
		(*steps)++;
		w = m->w[l][wi] & (~UINT64_C(0) << (i & 63));
		if (l == PM_LEVELS - 1) {
			/* The top level is scanned: it is a few words long. */
			while (w == 0 && ++wi < nw) {
				(*steps)++;
				w = m->w[l][wi];
			}
			if (w == 0)
				return UINT64_MAX;
		}
		if (w != 0) {
			i = wi << 6 | (uint64_t)__builtin_ctzll(w);
			break;
		}
		i = wi + 1;
		l++;
	}
	/* Down: the lowest set bit of each word below. */
	while (l-- > 0) {
		(*steps)++;
		i = i << 6 | (uint64_t)__builtin_ctzll(m->w[l][i]);
	}
	return i;
}
