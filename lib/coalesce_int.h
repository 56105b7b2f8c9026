/*
 * Group commit of small writes to one block.  A write that covers part
 * of a single block, arriving while another such write of that block is
 * being written, waits in the block's queue instead of taking its own
 * turn.  When the running write finishes, one waiter becomes the leader:
 * it takes every patch queued so far, builds the block once and writes
 * it once, and every submitter it took returns with that write's result.
 * So sixteen 4 KiB writes in flight to one block cost about two block
 * writes instead of sixteen.
 *
 * Each request is still atomic and linearizable: its patch is applied
 * by a write that begins after the request arrived and completes before
 * it returns.  NBD orders no two requests in flight together, so patches
 * that overlap apply in arrival order.
 *
 * The queues belong to an engine (its writer), so two handles in one
 * process never wait for each other.  Nothing here writes: the leader
 * is handed its batch, writes it on its own, and says how it went.
 */
#ifndef BFTBLK_COALESCE_INT_H
#define BFTBLK_COALESCE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "plan_int.h"

#define COALESCE_BUCKETS 256		/* a power of two */

struct coalesce {
	pthread_mutex_t lock;		/* links and unlinks, never a write */
	struct coalesce_batch *buckets[COALESCE_BUCKETS];
};

/* One request's place in its block's queue, on its caller's stack. */
struct coalesce_waiter {
	struct wpatch *patch;
	struct coalesce_batch *batch;	/* NULL: no memory, it went alone */
	struct coalesce_waiter *next;
	struct coalesce_waiter *taken;	/* a leader's: the batch it writes */
	unsigned ntaken;
	int result;
	char why[256];			/* the batch's reason when it failed */
	bool done;
};

void bftblk__coalesce_init(struct coalesce *co);
void bftblk__coalesce_destroy(struct coalesce *co);

/*
 * Queues p (which must lie inside block) and waits for its turn.
 * Returns the patches to write, p's among them, when the caller leads a
 * batch: it writes them as one block and then calls bftblk__coalesce_leave.
 * NULL when another request's batch carried p: w->result is then 0, or
 * the errno it failed with, its reason recorded on this thread
 * (error_int.h).  p and w must stay valid until then.
 */
const struct wpatch *bftblk__coalesce_enter(struct coalesce *co, uint64_t block,
    struct wpatch *p, struct coalesce_waiter *w);
/*
 * The leader's write of its batch ended with result (0 or an errno, its
 * reason recorded on this thread): every request in the batch gets it.
 * Returns result; *merged grows by the patches that rode along.
 */
int bftblk__coalesce_leave(struct coalesce *co, struct coalesce_waiter *w,
    int result, unsigned *merged);

#endif
