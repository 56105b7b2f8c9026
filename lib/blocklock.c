/* Range locks over addresses: a list of held ranges and a condvar. */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "blocklock_int.h"

void
bftblk__block_locks_init(struct block_locks *bl)
{
	pthread_mutex_init(&bl->lock, NULL);
	pthread_cond_init(&bl->released, NULL);
	bl->held = NULL;
}

void
bftblk__block_locks_destroy(struct block_locks *bl)
{
	pthread_cond_destroy(&bl->released);
	pthread_mutex_destroy(&bl->lock);
}

static bool
overlaps_held(const struct block_locks *bl, uint64_t first, uint64_t last)
{
	for (struct block_range *r = bl->held; r != NULL; r = r->next)
		if (first <= r->last && r->first <= last)
			return true;
	return false;
}

void
bftblk__block_lock(struct block_locks *bl, struct block_range *r,
    uint64_t first, uint64_t last)
{
	r->first = first;
	r->last = last;
	pthread_mutex_lock(&bl->lock);
	while (overlaps_held(bl, first, last))
		pthread_cond_wait(&bl->released, &bl->lock);
	r->next = bl->held;
	bl->held = r;
	pthread_mutex_unlock(&bl->lock);
}

void
bftblk__block_unlock(struct block_locks *bl, struct block_range *r)
{
	struct block_range **pp;

	pthread_mutex_lock(&bl->lock);
	for (pp = &bl->held; *pp != NULL; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	pthread_cond_broadcast(&bl->released);
	pthread_mutex_unlock(&bl->lock);
}
