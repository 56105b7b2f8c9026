/* The Prometheus text format (promtext.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "promtext.h"

const uint64_t bft_prom_bucket_ns[BFT_PROM_NBUCKETS] = {
	50000, 100000, 250000, 500000,
	1000000, 2500000, 5000000, 10000000, 25000000, 50000000,
	100000000, 250000000, 500000000, 1000000000,
};

void
bft_prom_free(struct bft_prom *p)
{
	free(p->buf);
	memset(p, 0, sizeof *p);
}

void
bft_prom_printf(struct bft_prom *p, const char *fmt, ...)
{
	va_list ap;
	size_t need;
	char *nb;
	int w;

	if (p->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		w = vsnprintf(p->buf ? p->buf + p->len : NULL,
		    p->cap - p->len, fmt, ap);
		va_end(ap);
		if (w < 0) {
			p->oom = true;
			return;
		}
		if ((size_t)w < p->cap - p->len) {
			p->len += (size_t)w;
			return;
		}
		need = p->len + (size_t)w + 1;
		if (need < 2 * p->cap)
			need = 2 * p->cap;
		if (need < 4096)
			need = 4096;
		if ((nb = realloc(p->buf, need)) == NULL) {
			p->oom = true;
			return;
		}
		p->buf = nb;
		p->cap = need;
	}
}

void
bft_prom_family(struct bft_prom *p, const char *name, const char *type,
    const char *help)
{
	bft_prom_printf(p, "# HELP %s ", name);
	/* HELP escapes backslash and newline only. */
	for (const char *s = help; *s; s++) {
		if (*s == '\\')
			bft_prom_printf(p, "\\\\");
		else if (*s == '\n')
			bft_prom_printf(p, "\\n");
		else
			bft_prom_printf(p, "%c", *s);
	}
	bft_prom_printf(p, "\n# TYPE %s %s\n", name, type);
}

void
bft_prom_u64(struct bft_prom *p, const char *name, const char *labels,
    uint64_t v)
{
	bft_prom_printf(p, "%s%s%s%s %llu\n", name, labels ? "{" : "",
	    labels ? labels : "", labels ? "}" : "", (unsigned long long)v);
}

void
bft_prom_double(struct bft_prom *p, const char *name, const char *labels,
    double v)
{
	bft_prom_printf(p, "%s%s%s%s %.9g\n", name, labels ? "{" : "",
	    labels ? labels : "", labels ? "}" : "", v);
}

void
bft_prom_one(struct bft_prom *p, const char *name, const char *type,
    const char *help, uint64_t v)
{
	bft_prom_family(p, name, type, help);
	bft_prom_u64(p, name, NULL, v);
}

void
bft_prom_label(char *out, size_t outlen, const char *key, const char *value)
{
	size_t o = 0;
	int w;

	if (outlen == 0)
		return;
	w = snprintf(out, outlen, "%s=\"", key);
	if (w < 0 || (size_t)w >= outlen) {
		out[0] = '\0';
		return;
	}
	o = (size_t)w;
	/* Room is kept for an escape pair, the closing quote and NUL. */
	for (const char *s = value; *s && o + 4 <= outlen; s++) {
		if (*s == '\\' || *s == '"') {
			out[o++] = '\\';
			out[o++] = *s;
		} else if (*s == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else {
			out[o++] = *s;
		}
	}
	out[o++] = '"';
	out[o] = '\0';
}

void
bft_prom_observe(struct bft_prom_hist *h, uint64_t ns)
{
	for (unsigned i = 0; i < BFT_PROM_NBUCKETS; i++)
		if (ns <= bft_prom_bucket_ns[i]) {
			h->bucket[i]++;
			break;
		}
	h->count++;
	h->sum_ns += ns;
}

void
bft_prom_observe_atomic(struct bft_prom_hist *h, uint64_t ns)
{
	for (unsigned i = 0; i < BFT_PROM_NBUCKETS; i++)
		if (ns <= bft_prom_bucket_ns[i]) {
			__atomic_fetch_add(&h->bucket[i], 1, __ATOMIC_RELAXED);
			break;
		}
	__atomic_fetch_add(&h->count, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->sum_ns, ns, __ATOMIC_RELAXED);
}

void
bft_prom_hist(struct bft_prom *p, const char *name, const char *labels,
    const struct bft_prom_hist *h)
{
	const char *sep = labels && labels[0] ? "," : "";
	uint64_t cum = 0;

	if (labels == NULL)
		labels = "";
	for (unsigned i = 0; i < BFT_PROM_NBUCKETS; i++) {
		cum += h->bucket[i];
		bft_prom_printf(p, "%s_bucket{%s%sle=\"%.9g\"} %llu\n", name,
		    labels, sep, (double)bft_prom_bucket_ns[i] / 1e9,
		    (unsigned long long)cum);
	}
	bft_prom_printf(p, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels,
	    sep, (unsigned long long)h->count);
	bft_prom_printf(p, "%s_sum%s%s%s %.9g\n", name, labels[0] ? "{" : "",
	    labels, labels[0] ? "}" : "", (double)h->sum_ns / 1e9);
	bft_prom_printf(p, "%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "",
	    labels, labels[0] ? "}" : "", (unsigned long long)h->count);
}
