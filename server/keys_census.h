/*
 * The MAC key census (keys_census.c, docs/key-epochs.md): while the
 * server holds two MAC key epochs, a walk over everything it stores
 * counts the versions whose own MAC entry does not verify under the
 * newest epoch's key, and, once the older epoch is being retired
 * (server/reload.c), drops the older key when a pass finds none.
 */
#ifndef BFTBLK_KEYS_CENSUS_H
#define BFTBLK_KEYS_CENSUS_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "handler.h"
#include "keys.h"

/*
 * What STATUS and the metrics report.  The counts are those of the
 * last complete pass (0 before the first); done and total are the
 * current pass's live blocks (bft_store_indexed), the snapshots'
 * retained versions being walked after them.  All zero while the
 * server holds one epoch.
 */
struct bft_census_progress {
	/* lc and its Hist entry, where this server's entry is older */
	uint64_t old_current;
	/* Hist entries above lc under the older epoch only */
	uint64_t old_pending;
	/* versions snapshots' views retain under the older epoch only */
	uint64_t old_retained;
	uint64_t done, total;
	/* complete passes since the newest epoch was taken */
	uint64_t passes;
};

struct bft_census;

/*
 * A census over h's store, counting against key, which it changes when
 * it retires the older epoch (h->key is the same key).  No timer:
 * bft_census_step drives it.  NULL when out of memory.
 */
struct bft_census *bft_census_new(struct bft_handler *h,
    struct bft_server_key *key);
void bft_census_free(struct bft_census *c);
/*
 * Visits at most budget blocks (and snapshot views' blocks), starting a
 * pass when none is under way and starting over when the key's epochs
 * changed since the pass began.  True when this call completed a pass:
 * its counts are published, and, while retiring, the older key may be
 * gone (key->has_alt false).  False with nothing done while the server
 * holds one epoch.
 */
bool bft_census_step(struct bft_census *c, uint64_t budget);
/* What it reports; the pointer holds until bft_census_free. */
const struct bft_census_progress *bft_census_progress(
    const struct bft_census *c);

/*
 * The census on loop's timer, a bounded step per tick and a pause
 * between passes.  NULL when out of memory.
 */
struct bft_census *bft_census_start(uv_loop_t *loop, struct bft_handler *h,
    struct bft_server_key *key);
/* Stops it; the memory goes once the loop has closed the timer. */
void bft_census_stop(struct bft_census *c);

#endif
