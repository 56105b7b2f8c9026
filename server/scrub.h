/*
 * Scrub: the server checks its own fragments in the background at a
 * bounded rate, and a damaged one is rebuilt from the peers (scrub.c).
 */
#ifndef BFTBLK_SCRUB_H
#define BFTBLK_SCRUB_H

#include <stdint.h>

#include <uv.h>

#include "handler.h"
#include "heal.h"

/* Defaults of --scrub-rate (bytes/s) and --scrub-interval (s). */
#define BFT_SCRUB_DEFAULT_RATE		(20u * 1000 * 1000)
#define BFT_SCRUB_DEFAULT_INTERVAL	(7u * 24 * 3600)

struct bft_scrub_opts {
	uint64_t rate;			/* fragment bytes/s read; 0: no limit */
	unsigned interval_s;		/* between passes; 0: only when asked */
};

struct bft_scrub;

/*
 * Starts the scrub's timer on loop over h's store; progress and damage
 * go to prog, and kick(kick_ctx) asks for a rebuild pass now.  NULL
 * when out of memory.
 */
struct bft_scrub *bft_scrub_start(uv_loop_t *loop, struct bft_handler *h,
    struct bft_heal_progress *prog, const struct bft_scrub_opts *o,
    void (*kick)(void *), void *kick_ctx);
/* Stops it; the memory goes once the loop has closed the timer. */
void bft_scrub_stop(struct bft_scrub *s);

#endif
