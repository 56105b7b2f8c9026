/*
 * Compaction while the server is idle.  Appends drive compaction, a
 * bounded step after each (store_compact.c), so the garbage a DROP of
 * a deleted volume leaves, or trims just before the writes stopped,
 * stayed on disk for as long as nobody wrote: 546 MB of a server's
 * data directory went to 345 MB after a 1 GiB volume was deleted, and
 * stayed there.  This timer runs bft_store_compact_idle() on the event
 * loop, which owns the store, a bounded budget per tick, until nothing
 * is left to compact and the emptied segments are unlinked.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "compact_timer.h"
#include "log.h"
#include "store/store.h"

/*
 * Bytes of log read and copied per tick: 1 MiB every 25 ms, 40 MiB/s
 * at most, so that a pass over half-live segments frees about 20 MB/s
 * (docs/store.md has the measurements).  A segment holding nothing
 * live costs no read and goes as fast as the background sync unlinks
 * it.  A tick holds up the loop for as long as its reads and writes
 * take, 1-2 ms from the page cache; short ticks keep that small for
 * the requests that arrive meanwhile.
 */
#define TICK_MS		25
#define TICK_BUDGET	(1u << 20)
/*
 * Retained blocks a tick prunes after a snapshot was removed: each is
 * a few hundred ns of RAM work, so a tick stays near a millisecond.
 */
#define SNAP_GC_BUDGET	4096u
/*
 * The same while clients keep the server busy: 512 blocks a tick,
 * 20,480 a second (1.25 GiB of 64 KiB blocks), at a fraction of a
 * millisecond a tick.
 */
#define SNAP_GC_BUSY_BUDGET	512u
/* How often a server with nothing to compact looks again. */
#define RECHECK_MS	1000
/*
 * A tick is skipped when more client reads and writes than this came
 * in since the last one (8 a tick: 320 a second).  Under writes
 * compaction needs no help, since every append runs a step of four
 * times its bytes; and reads would wait behind the tick's I/O.  So the
 * timer works only when the server is idle or nearly so, where a
 * writer's lease renewals, a few every few seconds, still count as
 * idle.
 */
#define IDLE_REQS	8

struct bft_compact_timer {
	struct bft_handler *h;
	uv_timer_t timer;
	uint64_t io_seen;		/* h->io_requests at the last tick */
	uint64_t next_ms;		/* when to look for work again */
	bool running;			/* a pass is under way */
	uint64_t start_ms;
	uint64_t longest_ns;		/* the pass's longest tick */
	struct bft_store_stats at_start;
};

/*
 * What the store did over the pass, appends' compaction included if
 * clients came back meanwhile: segments emptied and the bytes they
 * held, less the live records copied out of them.
 */
static void
log_done(struct bft_compact_timer *t, uint64_t now)
{
	const struct bft_store_stats *a = &t->at_start;
	struct bft_store_stats b;
	uint64_t removed, copied;

	bft_store_stats(t->h->st, &b);
	removed = b.bytes_removed - a->bytes_removed;
	copied = b.bytes_copied - a->bytes_copied;
	bft_log("idle compaction: done in %.1f s: %" PRIu64 " segments "
	    "emptied, %.1f MB freed (%.1f MB removed, %.1f MB copied); the "
	    "log went from %.1f to %.1f MB, %.1f MB live; longest tick %.1f "
	    "ms", (double)(now - t->start_ms) / 1000,
	    b.compactions - a->compactions,
	    (double)(removed > copied ? removed - copied : 0) / 1e6,
	    (double)removed / 1e6, (double)copied / 1e6,
	    (double)a->bytes_total / 1e6, (double)b.bytes_total / 1e6,
	    (double)b.bytes_live / 1e6, (double)t->longest_ns / 1e6);
}

static void
on_tick(uv_timer_t *tm)
{
	struct bft_compact_timer *t = tm->data;
	struct bft_store *st = t->h->st;
	uint64_t now = uv_now(tm->loop);
	uint64_t io = atomic_load_explicit(&t->h->io_requests,
	    memory_order_relaxed);
	uint64_t reqs = io - t->io_seen;
	struct bft_store_stats ss;
	uint64_t t0;
	bool more;

	t->io_seen = io;
	if (reqs > IDLE_REQS) {
		/*
		 * A removed snapshot's pruning is RAM work that a sustained
		 * writer would otherwise hold back for as long as it writes
		 * (the space freed only when it stopped): a small share of
		 * it runs on every busy tick too.
		 */
		(void)bft_store_snap_gc_step(st, SNAP_GC_BUSY_BUDGET);
		return;
	}
	if (now < t->next_ms)
		return;
	if (!t->running)
		bft_store_stats(st, &t->at_start);
	t0 = uv_hrtime();
	more = bft_store_compact_idle(st, TICK_BUDGET);
	/* What a removed snapshot kept, freed in steps as well. */
	more = bft_store_snap_gc_step(st, SNAP_GC_BUDGET) || more;
	t0 = uv_hrtime() - t0;
	/*
	 * A pass is what did work: a look that found only the background
	 * sync of the appends' compaction still running is none.
	 */
	if (!t->running) {
		bft_store_stats(st, &ss);
		if (ss.compactions != t->at_start.compactions ||
		    ss.bytes_copied != t->at_start.bytes_copied) {
			t->running = true;
			t->start_ms = now;
			t->longest_ns = 0;
			bft_log("idle compaction: starting: the log holds %.1f "
			    "MB, %.1f MB live", (double)t->at_start.bytes_total
			    / 1e6, (double)t->at_start.bytes_live / 1e6);
		}
	}
	if (t->running && t0 > t->longest_ns)
		t->longest_ns = t0;
	if (t->running && !more) {
		log_done(t, now);
		t->running = false;
	}
	t->next_ms = more ? now : now + RECHECK_MS;
}

struct bft_compact_timer *
bft_compact_timer_start(uv_loop_t *loop, struct bft_handler *h)
{
	struct bft_compact_timer *t = calloc(1, sizeof *t);

	if (t == NULL)
		return NULL;
	t->h = h;
	t->io_seen = atomic_load_explicit(&h->io_requests,
	    memory_order_relaxed);
	uv_timer_init(loop, &t->timer);
	t->timer.data = t;
	uv_timer_start(&t->timer, on_tick, TICK_MS, TICK_MS);
	return t;
}

static void
on_closed(uv_handle_t *handle)
{
	free(handle->data);
}

void
bft_compact_timer_stop(struct bft_compact_timer *t)
{
	if (t != NULL)
		uv_close((uv_handle_t *)&t->timer, on_closed);
}
