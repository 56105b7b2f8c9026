/*
 * --metrics ADDR:PORT: the server's counters for Prometheus, served
 * over plain HTTP on the server's own loop (common/promhttp.h says how
 * the endpoint bounds what a scraper can take).  Names start with
 * bftblk_server_; man bftblk-server(8) lists them.
 */
#ifndef BFTBLK_SERVER_METRICS_H
#define BFTBLK_SERVER_METRICS_H

#include <stddef.h>

#include <uv.h>

struct bft_net;
struct bft_metrics;

/*
 * Listens on addr and serves what net, its handler, store and heal
 * progress count.  NULL with a reason in err.
 */
struct bft_metrics *bft_metrics_start(uv_loop_t *loop, const char *addr,
    struct bft_net *net, char *err, size_t errlen);
/* "127.0.0.1:9100" */
const char *bft_metrics_where(const struct bft_metrics *m);
/* Closes the endpoint (the loop frees it); NULL is a no-op. */
void bft_metrics_stop(struct bft_metrics *m);

#endif
