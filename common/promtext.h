/*
 * Writing the Prometheus text exposition format, version 0.0.4: the
 * HELP and TYPE lines of a family, its samples, label values escaped,
 * and latency histograms with one fixed set of buckets.  The server's
 * and the client library's /metrics (server/metrics.c, lib/metrics.c)
 * both write with these.
 */
#ifndef BFTBLK_PROMTEXT_H
#define BFTBLK_PROMTEXT_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#define BFT_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* A growing text buffer; oom is set when it could not grow. */
struct bft_prom {
	char *buf;
	size_t len, cap;
	bool oom;
};

void bft_prom_free(struct bft_prom *p);
void bft_prom_printf(struct bft_prom *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/*
 * Starts family name: its "# HELP" (help escaped) and "# TYPE" lines.
 * type is "counter", "gauge" or "histogram".
 */
void bft_prom_family(struct bft_prom *p, const char *name, const char *type,
    const char *help);
/*
 * One sample.  labels is NULL or what goes between the braces, already
 * escaped (bft_prom_label), e.g. `type="clock"`.
 */
void bft_prom_u64(struct bft_prom *p, const char *name, const char *labels,
    uint64_t v);
void bft_prom_double(struct bft_prom *p, const char *name,
    const char *labels, double v);
/* A whole family of one unlabelled sample. */
void bft_prom_one(struct bft_prom *p, const char *name, const char *type,
    const char *help, uint64_t v);
/*
 * Writes key="value" into out with value escaped (backslash, double
 * quote, newline); the result is cut short to fit outlen.
 */
void bft_prom_label(char *out, size_t outlen, const char *key,
    const char *value);

/* Upper bounds of the histogram buckets, in nanoseconds: 50 us .. 1 s. */
#define BFT_PROM_NBUCKETS 14
extern const uint64_t bft_prom_bucket_ns[BFT_PROM_NBUCKETS];

/* A latency histogram; zeroed is empty.  Not thread safe. */
struct bft_prom_hist {
	uint64_t bucket[BFT_PROM_NBUCKETS];	/* not cumulative */
	uint64_t count;
	uint64_t sum_ns;
};

void bft_prom_observe(struct bft_prom_hist *h, uint64_t ns);
/* The same, for a histogram that several threads observe into. */
void bft_prom_observe_atomic(struct bft_prom_hist *h, uint64_t ns);
/*
 * The samples of h: name_bucket{labels,le="..."} cumulative, +Inf,
 * name_sum (seconds) and name_count.  The family line is the caller's.
 */
void bft_prom_hist(struct bft_prom *p, const char *name, const char *labels,
    const struct bft_prom_hist *h);

#endif
