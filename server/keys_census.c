/*
 * The MAC key census (docs/key-epochs.md, step 4).  While the server
 * holds two MAC key epochs it walks everything its store indexes, a
 * bounded number of blocks per tick on the event loop (the store is
 * the loop's alone), and counts the versions whose entry for this
 * server in the MAC vector does not verify under the newest epoch's
 * key: lc with the Hist entry backing it, the Hist entries above lc,
 * and the versions snapshots' views retain.  Only this server's own
 * entry is checked: it holds no other key, and a REAUTH gives every
 * entry new MACs at once, so its own entry says whether the version
 * was re-authenticated here.
 *
 * Once the older epoch is being retired (reload.c), every new value is
 * checked under the newest alone already; a pass begun after that
 * which finds no current or retained version under the older epoch
 * drops the older key for good.  A version under it would be
 * unreadable from then on, which is why the drop waits for the count.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "keys_census.h"
#include "log.h"
#include "store/store.h"

#define TICK_MS		100
/*
 * Blocks a tick visits at most: each costs a metadata read or two
 * (from the store's cache, else the page cache) and a MAC, some
 * microseconds, so a tick holds the loop for a few milliseconds.
 */
#define TICK_BLOCKS	4096
/* Between passes: they repeat for as long as the rotation lasts. */
#define PAUSE_MS	5000

enum phase {
	PH_LIVE,			/* every indexed block's lc and Hist */
	PH_RETAINED,			/* snapshots' frozen blocks */
};

struct pass {
	bool running;
	bool retiring;			/* began while retiring */
	/*
	 * Forgets the Hist entries above lc under the older epoch as it
	 * finds them (see finish_pass).
	 */
	bool purge;
	enum phase phase;
	uint64_t next;			/* PH_LIVE: the next block */
	/*
	 * PH_RETAINED: volume vol's boundary gen from address addr on;
	 * low is the highest boundary of vol walked whole (low_set), whose
	 * records that view counted already.
	 */
	bool in_vol;
	uint32_t vol;
	uint64_t gen, addr, low;
	bool low_set;
	uint64_t old_current, old_pending, old_retained;
};

struct bft_census {
	struct bft_handler *h;
	struct bft_server_key *key;
	struct bft_census_progress prog;
	struct pass p;
	bool active;			/* the server holds two epochs */
	uint32_t newest;		/* the newest of them */
	bool purge_next;		/* the next pass purges */
	/* What the last warning said, so that a stuck count is said once. */
	bool warned;
	uint64_t warned_current, warned_retained;
	uint64_t gens[BFT_STORE_MAX_SNAPS];
	/* Only with a timer (bft_census_start). */
	uv_timer_t timer;
	uint64_t resume_ms;
};

/* Whether this server's entry of the version verifies under the newest. */
static bool
entry_new(const struct bft_census *c, uint64_t block, const struct bft_ts *ts,
    const uint8_t nh[BFT_HASH_LEN], const uint8_t (*vec)[BFT_MAC_LEN])
{
	return bft_vec_verify(ts, block, nh, bft_server_newest_key(c->key),
	    vec[c->key->index]);
}

static bool
lc_new(const struct bft_census *c, uint64_t block, const struct bft_cand *lc)
{
	uint8_t nh[BFT_HASH_LEN];

	bft_hash(lc->nonce, BFT_NONCE_LEN, nh);
	return entry_new(c, block, &lc->ts, nh,
	    (const uint8_t (*)[BFT_MAC_LEN])lc->vec);
}

static bool
hist_new(const struct bft_census *c, uint64_t block,
    const struct bft_hist_meta *m)
{
	return entry_new(c, block, &m->ts, m->nh,
	    (const uint8_t (*)[BFT_MAC_LEN])m->vec);
}

/*
 * lc and Hist[lc.ts]: one version, older when either record's entry
 * is.  A record that reads back damaged shows no MAC to check, and no
 * reader gets it either (the store forgets a damaged Hist entry, and
 * COLLECT answers EIO for a damaged lc), so it is not counted.
 */
static void
count_current(struct bft_census *c, uint64_t b, const struct bft_ts *lcts)
{
	struct bft_store *st = c->h->st;
	struct bft_hist_entry e;
	struct bft_cand lc;
	bool old = false;

	if (bft_ts_is_zero(lcts))
		return;
	if (bft_store_get_lc(st, b, &lc) == 0 && !lc_new(c, b, &lc))
		old = true;
	if (bft_store_has_hist(st, b, lcts) &&
	    bft_store_get_hist(st, b, lcts, &e) == 0 &&
	    !hist_new(c, b, &e.meta))
		old = true;
	c->p.old_current += old;
}

/*
 * Hist entries above lc under the older epoch: writes that never
 * completed here.  A purging pass forgets each; the indices of Hist
 * change with it, so the walk over them starts again, finding only
 * what it kept.
 */
static void
count_pending(struct bft_census *c, uint64_t b, const struct bft_ts *lcts)
{
	struct bft_store *st = c->h->st;
	struct bft_hist_entry e;
	unsigned i, n;

again:
	n = bft_store_nhist(st, b);
	for (i = 0; i < n; i++) {
		if (bft_store_hist_at(st, b, i, &e) < 0 ||
		    bft_ts_cmp(&e.meta.ts, lcts) <= 0 ||
		    hist_new(c, b, &e.meta))
			continue;
		c->p.old_pending++;
		if (c->p.purge &&
		    bft_store_forget_hist(st, b, &e.meta.ts) == 0)
			goto again;
	}
}

/* Whether a retained version at ts is this view's to count. */
static bool
view_counts(const struct pass *p, const struct bft_ts *ts)
{
	return !bft_ts_is_zero(ts) && (!p->low_set || bft_ts_gen(ts) > p->low);
}

/*
 * A frozen block's view at gen: lc_g with the entry backing it, and the
 * entries above it.  A retained record serves every boundary whose view
 * it is; it is counted in the lowest of them, the only one where its
 * generation is above the boundary below (low), so that a record kept
 * for many snapshots counts once.
 */
static void
count_view(struct bft_census *c, uint64_t b, uint64_t gen)
{
	struct bft_store *st = c->h->st;
	struct bft_hist_entry e;
	struct bft_cand lc;
	bool mine, old = false;
	unsigned i, n;

	if (bft_store_view_lc(st, b, gen, &lc) < 0)
		memset(&lc, 0, sizeof lc);
	mine = view_counts(&c->p, &lc.ts);
	if (mine && !lc_new(c, b, &lc))
		old = true;
	n = bft_store_view_nhist(st, b, gen);
	for (i = 0; i < n; i++) {
		if (bft_store_view_hist_at(st, b, gen, i, &e) < 0 ||
		    !view_counts(&c->p, &e.meta.ts) || hist_new(c, b, &e.meta))
			continue;
		if (bft_ts_cmp(&e.meta.ts, &lc.ts) == 0)
			old = old || mine;
		else
			c->p.old_retained++;
	}
	c->p.old_retained += old;
}

/* On to the volume after p->vol; false after the last one. */
static bool
next_vol(struct pass *p)
{
	p->in_vol = false;
	if (p->vol == BFT_ADDR_MAX_VOL)
		return false;
	p->vol++;
	return true;
}

/*
 * The views of the volumes with snapshots, boundary by boundary, their
 * frozen blocks only: an unfrozen block's view is its live state,
 * counted already.  Boundaries are looked up again each time, by
 * value, since a SNAP may remove one between ticks; one removed before
 * its walk ended leaves low where it was, so what it did not count
 * the next boundary does (a record may then count twice, never not at
 * all).  A volume costs a unit of budget, a frozen block another.
 * True when done.
 */
static bool
walk_retained(struct bft_census *c, uint64_t *budget)
{
	struct bft_store *st = c->h->st;
	struct pass *p = &c->p;
	struct bft_store_vol v;
	size_t i, ng;
	uint64_t b;

	for (;;) {
		if (!p->in_vol) {
			if (*budget == 0)
				return false;
			(*budget)--;
			if (bft_store_volumes(st, p->vol, &v, 1) == 0)
				return true;
			p->vol = v.vol;
			p->in_vol = true;
			p->gen = 0;
			p->low_set = false;
			p->addr = bft_addr(p->vol, 0);
		}
		ng = bft_store_snaps(st, p->vol, c->gens, BFT_STORE_MAX_SNAPS);
		for (i = 0; i < ng && c->gens[i] < p->gen; i++)
			;
		if (i == ng) {
			if (!next_vol(p))
				return true;
			continue;
		}
		if (c->gens[i] != p->gen) {
			p->gen = c->gens[i];
			p->addr = bft_addr(p->vol, 0);
		}
		for (;;) {
			if (*budget == 0)
				return false;
			b = bft_store_view_next(st, p->vol, p->gen, p->addr);
			if (b == UINT64_MAX)
				break;
			count_view(c, b, p->gen);
			p->addr = b + 1;
			(*budget)--;
		}
		p->low = p->gen;
		p->low_set = true;
		p->gen++;
		p->addr = bft_addr(p->vol, 0);
	}
}

/* Every block the index holds, lc and Hist.  True when done. */
static bool
walk_live(struct bft_census *c, uint64_t *budget)
{
	struct bft_store *st = c->h->st;
	struct pass *p = &c->p;
	struct bft_ts lcts;

	while (*budget > 0 &&
	    (p->next = bft_store_next_page(st, p->next)) != UINT64_MAX) {
		lcts = bft_store_lc_ts(st, p->next);
		count_current(c, p->next, &lcts);
		count_pending(c, p->next, &lcts);
		p->next++;
		c->prog.done++;
		(*budget)--;
	}
	return p->next == UINT64_MAX;
}

/* Back to holding one epoch: nothing to count, zeros to report. */
static void
go_idle(struct bft_census *c)
{
	c->active = false;
	c->purge_next = false;
	c->warned = false;
	memset(&c->p, 0, sizeof c->p);
	memset(&c->prog, 0, sizeof c->prog);
}

/*
 * The older key goes: the newest becomes the only one.  Nothing stored
 * here is under the older epoch any more (the pass that decided it
 * counted none, and none can come in while retiring), so no version is
 * lost with it.
 */
static void
retire(struct bft_census *c, uint64_t forgotten)
{
	struct bft_server_key *k = c->key;
	uint32_t old;

	if (k->alt_epoch > k->epoch) {
		old = k->epoch;
		memcpy(k->k, k->k_alt, BFT_KEY_LEN);
		k->epoch = k->alt_epoch;
	} else {
		old = k->alt_epoch;
	}
	bft_wipe(k->k_alt, BFT_KEY_LEN);
	k->has_alt = false;
	k->alt_epoch = 0;
	k->retiring = false;
	bft_log("MAC key epoch %u retired: epoch %u alone from now on (%"
	    PRIu64 " STOREs above lc under epoch %u forgotten)", old,
	    k->epoch, forgotten, old);
	go_idle(c);
}

/*
 * A retiring pass found old versions: said when the count first comes
 * and whenever it changes, not every few seconds while it stands.
 */
static void
warn_old(struct bft_census *c)
{
	const struct pass *p = &c->p;
	uint32_t old = c->key->epoch < c->newest ? c->key->epoch :
	    c->key->alt_epoch;

	if (c->warned && c->warned_current == p->old_current &&
	    c->warned_retained == p->old_retained) {
		bft_debug("MAC key census: still %" PRIu64 " versions (and %"
		    PRIu64 " retained for snapshots) under epoch %u",
		    p->old_current, p->old_retained, old);
		return;
	}
	c->warned = true;
	c->warned_current = p->old_current;
	c->warned_retained = p->old_retained;
	bft_warn("MAC key census: %" PRIu64 " versions stored here (and %"
	    PRIu64 " retained for snapshots) are still under epoch %u; "
	    "retiring it waits for them to be re-authenticated (bftblk keys "
	    "reauth)%s", p->old_current, p->old_retained, old,
	    p->old_retained > 0 ? ", and a snapshot's, which REAUTH does "
	    "not reach yet, for the snapshot to be deleted" : "");
}

/*
 * A pass is over: its counts are what STATUS says.  A retiring pass
 * that counted no current or retained version under the older epoch
 * lets the key go, but not before the Hist entries above lc under it
 * are forgotten.  Once the key is gone such an entry backs nothing
 * (bft_valid checks a Hist entry's own MAC under the keys held, so a
 * write-back cannot promote it to lc); forgetting it gives its space
 * back and leaves nothing that a reader's FILTER would be sent only
 * to drop.  None can come in while
 * retiring (every STORE is checked under the newest alone), so one
 * pass that forgets them as it finds them, and still counts no
 * current version under the older epoch, is enough.  A count of none
 * lets the key go at once.
 */
static void
finish_pass(struct bft_census *c)
{
	struct pass *p = &c->p;

	p->running = false;
	c->prog.old_current = p->old_current;
	c->prog.old_pending = p->old_pending;
	c->prog.old_retained = p->old_retained;
	c->prog.passes++;
	if (!p->retiring) {
		bft_debug("MAC key census: %" PRIu64 " versions, %" PRIu64
		    " pending and %" PRIu64 " retained not under epoch %u",
		    p->old_current, p->old_pending, p->old_retained, c->newest);
		return;
	}
	if (p->old_current > 0 || p->old_retained > 0) {
		warn_old(c);
		return;
	}
	if (p->purge || p->old_pending == 0) {
		retire(c, p->purge ? p->old_pending : 0);
		return;
	}
	c->purge_next = true;
	bft_log("MAC key census: no version stored here is under the older "
	    "epoch; forgetting the %" PRIu64 " STOREs above lc still under "
	    "it before its key goes", p->old_pending);
}

static void
start_pass(struct bft_census *c)
{
	memset(&c->p, 0, sizeof c->p);
	c->p.running = true;
	c->p.retiring = c->key->retiring;
	c->p.purge = c->p.retiring && c->purge_next;
	c->purge_next = false;
	c->p.phase = PH_LIVE;
	c->prog.done = 0;
	/* Blocks outside the index's pages were never written: skipped. */
	c->prog.total = bft_store_indexed(c->h->st);
}

/*
 * Follows the key: idle with one epoch, counts from nothing when the
 * newest epoch is another, and starts the pass over when retiring
 * began or was taken back since it started.  False when idle.
 */
static bool
follow_key(struct bft_census *c)
{
	const struct bft_server_key *k = c->key;

	if (!k->has_alt) {
		if (c->active)
			go_idle(c);
		return false;
	}
	if (!c->active || bft_server_newest_epoch(k) != c->newest) {
		go_idle(c);
		c->active = true;
		c->newest = bft_server_newest_epoch(k);
	}
	if (c->p.running && c->p.retiring != k->retiring) {
		bft_log("MAC key census: starting over, %s", k->retiring ?
		    "the older epoch being retired" : "retiring taken back");
		c->p.running = false;
		c->purge_next = false;
	}
	return true;
}

bool
bft_census_step(struct bft_census *c, uint64_t budget)
{
	if (!follow_key(c))
		return false;
	if (!c->p.running)
		start_pass(c);
	if (c->p.phase == PH_LIVE) {
		if (!walk_live(c, &budget))
			return false;
		c->p.phase = PH_RETAINED;
	}
	if (!walk_retained(c, &budget))
		return false;
	finish_pass(c);
	return true;
}

const struct bft_census_progress *
bft_census_progress(const struct bft_census *c)
{
	return &c->prog;
}

struct bft_census *
bft_census_new(struct bft_handler *h, struct bft_server_key *key)
{
	struct bft_census *c = calloc(1, sizeof *c);

	if (c == NULL)
		return NULL;
	c->h = h;
	c->key = key;
	return c;
}

void
bft_census_free(struct bft_census *c)
{
	free(c);
}

/* Whether the key changed in a way the census must follow at once. */
static bool
key_moved(const struct bft_census *c)
{
	const struct bft_server_key *k = c->key;

	if (!k->has_alt)
		return c->active;
	return !c->active || bft_server_newest_epoch(k) != c->newest ||
	    k->retiring != c->p.retiring;
}

static void
on_tick(uv_timer_t *t)
{
	struct bft_census *c = t->data;
	uint64_t now = uv_now(t->loop);

	if (now < c->resume_ms && !key_moved(c))
		return;
	if (bft_census_step(c, TICK_BLOCKS))
		c->resume_ms = now + (c->purge_next ? 0 : PAUSE_MS);
}

struct bft_census *
bft_census_start(uv_loop_t *loop, struct bft_handler *h,
    struct bft_server_key *key)
{
	struct bft_census *c = bft_census_new(h, key);

	if (c == NULL)
		return NULL;
	uv_timer_init(loop, &c->timer);
	c->timer.data = c;
	uv_timer_start(&c->timer, on_tick, TICK_MS, TICK_MS);
	return c;
}

static void
on_closed(uv_handle_t *handle)
{
	bft_census_free(handle->data);
}

void
bft_census_stop(struct bft_census *c)
{
	if (c != NULL)
		uv_close((uv_handle_t *)&c->timer, on_closed);
}
