/*
 * The queues of small writes per block, and the hand-over of the
 * leader's role.  One mutex per engine guards every queue: it is held
 * only to link and unlink waiters, never across a write.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coalesce_int.h"
#include "error_int.h"

/* A block some request is writing or waiting to write. */
struct coalesce_batch {
	uint64_t block;
	struct coalesce_waiter *head, **tail;	/* queued, not yet taken */
	unsigned users;			/* requests between enter and return */
	bool leading;			/* a taken batch is being written */
	pthread_cond_t turn;		/* a batch finished */
	struct coalesce_batch *next;
};

void
bftblk__coalesce_init(struct coalesce *co)
{
	memset(co, 0, sizeof *co);
	pthread_mutex_init(&co->lock, NULL);
}

void
bftblk__coalesce_destroy(struct coalesce *co)
{
	pthread_mutex_destroy(&co->lock);
}

static struct coalesce_batch **
bucket(struct coalesce *co, uint64_t block)
{
	return &co->buckets[(block ^ block >> 17) & (COALESCE_BUCKETS - 1)];
}

static struct coalesce_batch *
batch_get(struct coalesce *co, uint64_t block)
{
	struct coalesce_batch **pp = bucket(co, block), *b;

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
batch_put(struct coalesce *co, struct coalesce_batch *b)
{
	struct coalesce_batch **pp;

	if (--b->users > 0)
		return;
	for (pp = bucket(co, b->block); *pp != b; pp = &(*pp)->next)
		;
	*pp = b->next;
	pthread_cond_destroy(&b->turn);
	free(b);
}

/*
 * Takes every queued waiter as w's batch, its patches linked into one
 * list.  Called with the lock held; the caller owns each patch and
 * waits, so linking them is safe.
 */
static const struct wpatch *
take(struct coalesce_batch *b, struct coalesce_waiter *w)
{
	struct coalesce_waiter *t;
	struct wpatch **pp;

	w->taken = b->head;
	w->ntaken = 0;
	b->head = NULL;
	b->tail = &b->head;
	b->leading = true;
	pp = &w->taken->patch;
	for (t = w->taken; t != NULL; t = t->next, w->ntaken++) {
		*pp = t->patch;
		pp = &t->patch->next;
	}
	*pp = NULL;
	return w->taken->patch;
}

const struct wpatch *
bftblk__coalesce_enter(struct coalesce *co, uint64_t block, struct wpatch *p,
    struct coalesce_waiter *w)
{
	struct coalesce_batch *b;
	const struct wpatch *list = NULL;

	memset(w, 0, sizeof *w);
	w->patch = p;
	p->next = NULL;
	pthread_mutex_lock(&co->lock);
	if ((b = batch_get(co, block)) == NULL) {
		/* No memory for a queue: this request goes alone. */
		pthread_mutex_unlock(&co->lock);
		w->taken = w;
		w->ntaken = 1;
		return p;
	}
	w->batch = b;
	b->users++;
	*b->tail = w;
	b->tail = &w->next;
	/*
	 * While no batch is being written, a waiter still queued is taken
	 * by whoever leads next; the first to wake takes the role, so a
	 * leader never serves more than the one batch it took.
	 */
	while (!w->done) {
		if (!b->leading) {
			list = take(b, w);
			break;
		}
		pthread_cond_wait(&b->turn, &co->lock);
	}
	if (list == NULL)
		batch_put(co, b);
	pthread_mutex_unlock(&co->lock);
	if (list == NULL && w->result != 0)
		bftblk__fail(w->result, "%s", w->why);
	return list;
}

int
bftblk__coalesce_leave(struct coalesce *co, struct coalesce_waiter *w,
    int result, unsigned *merged)
{
	struct coalesce_batch *b = w->batch;

	*merged += w->ntaken - 1;
	if (b == NULL)
		return result;
	pthread_mutex_lock(&co->lock);
	/* The reason is this thread's: each waiter takes a copy home. */
	for (struct coalesce_waiter *t = w->taken; t != NULL; t = t->next) {
		t->result = result;
		if (result != 0 && t != w)
			snprintf(t->why, sizeof t->why, "%s", bftblk__errmsg());
		t->done = true;
	}
	b->leading = false;
	pthread_cond_broadcast(&b->turn);
	batch_put(co, b);
	pthread_mutex_unlock(&co->lock);
	return result;
}
