/* Range locks over block numbers: a list of held ranges and a condvar. */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "blocklock_int.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t released = PTHREAD_COND_INITIALIZER;
static struct block_range *held;

static bool
overlaps_held(uint64_t first, uint64_t last)
{
	for (struct block_range *r = held; r != NULL; r = r->next)
		if (first <= r->last && r->first <= last)
			return true;
	return false;
}

void
block_lock(struct block_range *r, uint64_t first, uint64_t last)
{
	r->first = first;
	r->last = last;
	pthread_mutex_lock(&lock);
	while (overlaps_held(first, last))
		pthread_cond_wait(&released, &lock);
	r->next = held;
	held = r;
	pthread_mutex_unlock(&lock);
}

void
block_unlock(struct block_range *r)
{
	struct block_range **pp;

	pthread_mutex_lock(&lock);
	for (pp = &held; *pp != NULL; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	pthread_cond_broadcast(&released);
	pthread_mutex_unlock(&lock);
}
