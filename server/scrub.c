/*
 * Scrub: the server reads back its own fragments at a bounded rate and
 * checks each against its record's CRC and against its entry in the
 * cross-checksum stored with it.  A damaged one is forgotten (it is no
 * longer served or counted as held), so the rebuild, kicked at once,
 * finds the block missing here and fetches it from the peers.  A block
 * that was damaged and is held and sound again counts as repaired.
 *
 * It runs on the event loop, a few blocks per tick, since the store is
 * the loop's alone.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "log.h"
#include "scrub.h"

#define TICK_MS		100
/*
 * Blocks a tick visits at most, whatever the rate: blocks holding no
 * fragment cost no budget, and a tick must not hold the loop for a
 * whole volume of them.
 */
#define TICK_BLOCKS	16384
#define MAX_DAMAGED	4096	/* remembered until repaired */

struct bft_scrub {
	struct bft_scrub_opts o;
	struct bft_handler *h;
	struct bft_heal_progress *prog;
	void (*kick)(void *);
	void *kick_ctx;
	uv_timer_t timer;
	uint8_t *buf;			/* one fragment */
	bool running;			/* a pass is under way */
	uint64_t next;			/* its next block */
	uint64_t next_pass_ms;
	uint64_t pass_start_ms, pass_checked, pass_damaged;
	uint64_t damaged[MAX_DAMAGED];	/* awaiting repair */
	unsigned ndamaged;
};

/*
 * Reads and checks the fragment backing block's lc, if this server
 * holds it: 0 when it is sound, -ENOENT when there is nothing to check,
 * else -EIO.  One read of the record gives its metadata and fragment.
 */
static int
check_held(struct bft_scrub *s, uint64_t block, struct bft_hist_entry *e)
{
	uint8_t hash[BFT_HASH_LEN];
	struct bft_ts ts;
	int err;

	if (!bft_store_lc_held(s->h->st, block))
		return -ENOENT;
	ts = bft_store_lc_ts(s->h->st, block);
	err = bft_store_read_hist(s->h->st, block, &ts, e, s->buf);
	/* A damaged record is forgotten by the store; -EIO says so. */
	if (err < 0)
		return err == -ENOENT ? -ENOENT : -EIO;
	bft_hash(s->buf, e->meta.frag_len, hash);
	if (bft_equal(hash, e->meta.cc[s->h->key->index], BFT_HASH_LEN))
		return 0;
	bft_store_forget_hist(s->h->st, block, &ts);
	return -EIO;
}

/* Checks one block; returns the fragment bytes it read. */
static uint32_t
check_block(struct bft_scrub *s, uint64_t block)
{
	struct bft_hist_entry e;
	struct bft_ts ts = bft_store_lc_ts(s->h->st, block);
	int err = check_held(s, block, &e);

	if (err == -ENOENT)
		return 0;
	s->pass_checked++;
	if (err == 0)
		return e.meta.frag_len;
	s->prog->damaged_records_later++;
	s->pass_damaged++;
	bft_warn("scrub: block %" PRIu64 ": the fragment of ts %" PRIu64 "/%"
	    PRIu64 " is damaged; no longer served, rebuilding it from the "
	    "peers", block, ts.num, ts.wid);
	if (s->ndamaged < MAX_DAMAGED)
		s->damaged[s->ndamaged++] = block;
	s->kick(s->kick_ctx);
	return 0;
}

/* Damaged blocks held and sound again count as repaired. */
static void
note_repairs(struct bft_scrub *s)
{
	unsigned w = 0;

	for (unsigned k = 0; k < s->ndamaged; k++) {
		struct bft_hist_entry e;

		if (check_held(s, s->damaged[k], &e) == 0) {
			s->prog->repaired_records++;
			bft_log("scrub: block %" PRIu64 " repaired",
			    s->damaged[k]);
		} else {
			s->damaged[w++] = s->damaged[k];
		}
	}
	s->ndamaged = w;
}

static void
start_pass(struct bft_scrub *s, uint64_t now, const char *why)
{
	s->running = true;
	s->next = 0;
	s->pass_start_ms = now;
	s->pass_checked = s->pass_damaged = 0;
	s->prog->scrub_done = 0;
	/* Blocks outside the index's pages were never written: skipped. */
	s->prog->scrub_total = bft_store_indexed(s->h->st);
	bft_log("scrub: starting (%s)", why);
}

static void
on_tick(uv_timer_t *t)
{
	struct bft_scrub *s = t->data;
	uint64_t now = uv_now(t->loop);
	uint64_t budget;
	unsigned visits = 0;

	if (s->ndamaged > 0)
		note_repairs(s);
	if (s->h->scrub_requested) {
		s->h->scrub_requested = false;
		if (!s->running)
			start_pass(s, now, "asked for");
	}
	if (!s->running && s->o.interval_s > 0 && now >= s->next_pass_ms)
		start_pass(s, now, "periodic");
	if (!s->running)
		return;
	/* Fragments' bytes this tick may read; unlimited: the whole disk. */
	budget = s->o.rate ? s->o.rate * TICK_MS / 1000 : UINT64_MAX;
	/* The last fragment may overrun the budget; the next tick pays. */
	while (budget > 0 && visits++ < TICK_BLOCKS &&
	    (s->next = bft_store_next_page(s->h->st, s->next)) != UINT64_MAX) {
		uint32_t used = check_block(s, s->next++);

		s->prog->scrub_done++;
		budget = used < budget ? budget - used : 0;
	}
	if (s->next != UINT64_MAX)
		return;
	s->running = false;
	s->prog->scrub_checked = s->pass_checked;
	s->prog->scrub_passes++;
	s->next_pass_ms = now + (uint64_t)s->o.interval_s * 1000;
	bft_log("scrub: done: %" PRIu64 " fragments checked, %" PRIu64
	    " damaged, in %.1f s", s->pass_checked, s->pass_damaged,
	    (double)(now - s->pass_start_ms) / 1000);
}

struct bft_scrub *
bft_scrub_start(uv_loop_t *loop, struct bft_handler *h,
    struct bft_heal_progress *prog, const struct bft_scrub_opts *o,
    void (*kick)(void *), void *kick_ctx)
{
	struct bft_scrub *s = calloc(1, sizeof *s);

	if (s == NULL || (s->buf = malloc(BFT_MAX_FRAG)) == NULL) {
		free(s);
		return NULL;
	}
	s->o = *o;
	s->h = h;
	s->prog = prog;
	s->kick = kick;
	s->kick_ctx = kick_ctx;
	/* The first periodic pass waits a whole interval after start. */
	s->next_pass_ms = uv_now(loop) + (uint64_t)o->interval_s * 1000;
	uv_timer_init(loop, &s->timer);
	s->timer.data = s;
	uv_timer_start(&s->timer, on_tick, TICK_MS, TICK_MS);
	return s;
}

static void
on_closed(uv_handle_t *handle)
{
	struct bft_scrub *s = handle->data;

	free(s->buf);
	free(s);
}

void
bft_scrub_stop(struct bft_scrub *s)
{
	if (s != NULL)
		uv_close((uv_handle_t *)&s->timer, on_closed);
}
