/*
 * Compaction while the server is idle: a timer on the event loop that
 * reclaims the garbage appends would otherwise leave until the next
 * write, a deleted volume's or a trim's (compact_timer.c).
 */
#ifndef BFTBLK_COMPACT_TIMER_H
#define BFTBLK_COMPACT_TIMER_H

#include <uv.h>

#include "handler.h"

struct bft_compact_timer;

/* Starts the timer on loop over h's store; NULL when out of memory. */
struct bft_compact_timer *bft_compact_timer_start(uv_loop_t *loop,
    struct bft_handler *h);
/* Stops it; the memory goes once the loop has closed the timer. */
void bft_compact_timer_stop(struct bft_compact_timer *t);

#endif
