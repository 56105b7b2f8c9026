/*
 * The queues of small writes per block, and the hand-over of the
 * leader's role.  One mutex guards every queue: it is held only to
 * link and unlink waiters, never across a write.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "coalesce_int.h"
#include "error_int.h"

#define NBUCKETS 256		/* a power of two */

struct waiter {
	struct wpatch *patch;
	int result;
	char why[256];			/* the batch's reason when it failed */
	bool done;
	struct waiter *next;
};

/* A block some request is writing or waiting to write. */
struct batch {
	uint64_t block;
	struct waiter *head, **tail;	/* queued, not yet taken */
	unsigned users;			/* requests inside coalesce_write */
	bool leading;			/* a taken batch is being written */
	pthread_cond_t turn;		/* a batch finished */
	struct batch *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct batch *buckets[NBUCKETS];

static struct batch **
bucket(uint64_t block)
{
	return &buckets[(block ^ block >> 17) & (NBUCKETS - 1)];
}

static struct batch *
batch_get(uint64_t block)
{
	struct batch **pp = bucket(block), *b;

	for (b = *pp; b != NULL; b = b->next)
		if (b->block == block)
			return b;
	if ((b = calloc(1, sizeof *b)) == NULL)
		return NULL;
	if (pthread_cond_init(&b->turn, NULL) != 0) {
		free(b);
		return NULL;
	}
	b->block = block;
	b->tail = &b->head;
	b->next = *pp;
	*pp = b;
	return b;
}

static void
batch_put(struct batch *b)
{
	struct batch **pp;

	if (--b->users > 0)
		return;
	for (pp = bucket(b->block); *pp != b; pp = &(*pp)->next)
		;
	*pp = b->next;
	pthread_cond_destroy(&b->turn);
	free(b);
}

/*
 * Takes every queued waiter, writes their patches as one block with the
 * lock dropped, and hands each its result.  Called with the lock held.
 */
static void
lead(struct batch *b, coalesce_write_fn write, void *ctx, unsigned *merged)
{
	struct waiter *taken = b->head, *w;
	struct wpatch **pp;
	unsigned n;
	int r;

	b->head = NULL;
	b->tail = &b->head;
	b->leading = true;
	/* The caller owns each patch and waits, so linking them is safe. */
	pp = &taken->patch->next;
	n = 1;
	for (w = taken->next; w != NULL; w = w->next, n++) {
		*pp = w->patch;
		pp = &w->patch->next;
	}
	*pp = NULL;
	pthread_mutex_unlock(&lock);
	r = write(ctx, b->block, taken->patch);
	pthread_mutex_lock(&lock);
	/* The reason is this thread's: each waiter takes a copy home. */
	for (w = taken; w != NULL; w = w->next) {
		w->result = r;
		if (r != 0)
			snprintf(w->why, sizeof w->why, "%s", lib_errmsg());
		w->done = true;
	}
	*merged += n - 1;
	b->leading = false;
	pthread_cond_broadcast(&b->turn);
}

int
coalesce_write(uint64_t block, struct wpatch *p, coalesce_write_fn write,
    void *ctx, unsigned *merged)
{
	struct waiter self = { .patch = p };
	struct batch *b;
	int r;

	p->next = NULL;
	pthread_mutex_lock(&lock);
	if ((b = batch_get(block)) == NULL) {
		/* No memory for a queue: this request goes alone. */
		pthread_mutex_unlock(&lock);
		return write(ctx, block, p);
	}
	b->users++;
	*b->tail = &self;
	b->tail = &self.next;
	/*
	 * While no batch is being written, a waiter still queued is taken
	 * by whoever leads next; the first to wake takes the role, so a
	 * leader never serves more than the one batch it took.
	 */
	while (!self.done) {
		if (!b->leading)
			lead(b, write, ctx, merged);
		else
			pthread_cond_wait(&b->turn, &lock);
	}
	r = self.result;
	batch_put(b);
	pthread_mutex_unlock(&lock);
	if (r != 0)
		lib_fail(r, "%s", self.why);
	return r;
}
