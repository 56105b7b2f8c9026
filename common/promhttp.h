/*
 * A minimal HTTP endpoint for Prometheus scrapes on a libuv loop:
 * GET /metrics answers 200 with the text the fill callback writes
 * (promtext.h); any other path 404, any other method 405, anything
 * that is not a request line 400, a request over BFT_PROMHTTP_MAX_REQ
 * bytes 431.  Every connection is closed after its one response.
 *
 * It must not become a way to hurt the program it watches: at most
 * BFT_PROMHTTP_MAX_CONNS connections at once (more are accepted and
 * closed at once), each closed BFT_PROMHTTP_TIMEOUT_MS after it was
 * accepted whatever it is doing, and each holds a request buffer of
 * BFT_PROMHTTP_MAX_REQ bytes and one response.
 */
#ifndef BFTBLK_PROMHTTP_H
#define BFTBLK_PROMHTTP_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "promtext.h"

#define BFT_PROMHTTP_MAX_CONNS	8
#define BFT_PROMHTTP_MAX_REQ	8192
#define BFT_PROMHTTP_TIMEOUT_MS	5000

struct bft_promhttp;

/* Writes the current metrics into p; called on the loop's thread. */
typedef void bft_promhttp_fill_fn(void *arg, struct bft_prom *p);

/*
 * Listens on addr (as above) on loop, the endpoint into *mp.  Returns 0,
 * or a negative errno with a reason in err: -EINVAL for an addr that is
 * not one, -EHOSTUNREACH when its host does not resolve, bind's or
 * listen's (-EADDRINUSE, ...).  Must be called on the loop's thread,
 * or before the loop runs.
 */
int bft_promhttp_start(uv_loop_t *loop, const char *addr,
    bft_promhttp_fill_fn *fill, void *arg, struct bft_promhttp **mp,
    char *err, size_t errlen);

/* Where it listens, "127.0.0.1:9100". */
const char *bft_promhttp_where(const struct bft_promhttp *m);

/* What it served: scrapes answered 200, and requests refused or cut. */
struct bft_promhttp_stats {
	uint64_t scrapes, bad_requests, refused, timeouts;
};
void bft_promhttp_stats(const struct bft_promhttp *m,
    struct bft_promhttp_stats *out);

/*
 * Closes the listener and every connection; the memory goes once the
 * loop has run their close callbacks.  NULL is a no-op.
 */
void bft_promhttp_stop(struct bft_promhttp *m);

#endif
