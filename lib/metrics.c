/*
 * metrics=ADDR:PORT: what this client saw, for Prometheus, served from
 * the engine's loop thread (common/promhttp.h bounds what scrapers can
 * take).  Names start with bftblk_client_.  The op latency histograms
 * and the servers' reply times belong to the loop thread and are read
 * here without locks; the counters are atomics.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "conn_int.h"
#include "lease_int.h"
#include "promhttp.h"

#define P "bftblk_client_"

struct eng_metrics {
	struct bft_promhttp *http;
	struct bft_engine *cl;
};

static void
put_engine(struct bft_prom *p, const struct bft_engine_stats *s)
{
	const struct { const char *name, *help; uint64_t v; } c[] = {
		{ P "fast_reads_total", "Reads decided in one round.",
		  s->fast_reads },
		{ P "part_reads_total", "Reads in one round of the one "
		  "fragment that holds the bytes asked for.", s->part_reads },
		{ P "slice_reads_total", "Part reads that moved and checked "
		  "only the chunks of that fragment holding the bytes asked "
		  "for.", s->slice_reads },
		{ P "fast_read_fallbacks_total", "Reads that tried one round "
		  "and needed the full protocol.", s->fast_read_fallbacks },
		{ P "fast_writes_total", "Writes that skipped CLOCK on a "
		  "cached timestamp.", s->fast_writes },
		{ P "fast_write_fallbacks_total", "Writes whose cached "
		  "timestamp was refused, done again with CLOCK.",
		  s->fast_fallbacks },
		{ P "read_restarts_total", "Read rounds started again "
		  "because the servers moved on.", s->read_restarts },
		{ P "repairs_total", "Blocks a reader wrote back to servers "
		  "that lagged.", s->repairs },
		{ P "timeouts_total", "Rounds that ran out of time.",
		  s->timeouts },
		{ P "reconnects_total", "Connections to servers made again "
		  "after one dropped.", s->reconnects },
		{ P "forged_timestamps_total", "Timestamps no writer signed, "
		  "from any server.", s->forged_ts },
		{ P "cache_hits_total", "Partial writes whose block was in "
		  "the block cache.", s->cache_hits },
		{ P "cache_misses_total", "Partial writes that had to read "
		  "their block first.", s->cache_misses },
		{ P "cache_stale_total", "Partial writes whose cached block "
		  "was stale, read and written again.", s->cache_stale },
		{ P "coalesced_writes_total", "Small writes that went out in "
		  "another request's block write.", s->coalesced },
	};

	bft_prom_family(p, P "ops_total", "counter",
	    "Block operations finished, by kind.");
	bft_prom_u64(p, P "ops_total", "op=\"read\"", s->reads);
	bft_prom_u64(p, P "ops_total", "op=\"write\"", s->writes);
	bft_prom_u64(p, P "ops_total", "op=\"flush\"", s->flushes);
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
		bft_prom_one(p, c[i].name, "counter", c[i].help, c[i].v);
}

static void
put_servers(struct bft_prom *p, const struct bft_engine *cl)
{
	static const struct { const char *name, *type, *help; size_t off; }
	    f[] = {
#define F(n, t, h, m) { P "server_" n, t, h, \
	offsetof(struct engine_server_stats, m) }
		F("connects_total", "counter", "Connections made to the "
		  "server.", connects),
		F("disconnects_total", "counter", "Connections to the server "
		  "that dropped or were closed.", disconnects),
		F("replies_total", "counter", "Replies from the server.",
		  replies),
		F("error_replies_total", "counter", "Replies with an error "
		  "status.", error_replies),
		F("timeouts_total", "counter", "Rounds the server left "
		  "unanswered.", timeouts),
		F("mismatched_replies_total", "counter", "Replies to requests "
		  "never made.", mismatched),
		F("forged_timestamps_total", "counter", "Timestamps from the "
		  "server that no writer signed.", forged_ts),
		F("bad_fragments_total", "counter", "Fragments from the server "
		  "that failed their hash.", bad_fragments),
#undef F
	};
	char l[32];

	bft_prom_family(p, P "server_connected", "gauge",
	    "1 when the channel to the server is up and its HELLO accepted.");
	for (unsigned i = 0; i < cl->n; i++) {
		snprintf(l, sizeof l, "server=\"%u\"", i);
		bft_prom_u64(p, P "server_connected", l,
		    atomic_load(&cl->stats.server[i].connected) ? 1 : 0);
	}
	for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
		bft_prom_family(p, f[k].name, f[k].type, f[k].help);
		for (unsigned i = 0; i < cl->n; i++) {
			const atomic_ullong *v = (const atomic_ullong *)
			    ((const char *)&cl->stats.server[i] + f[k].off);

			snprintf(l, sizeof l, "server=\"%u\"", i);
			bft_prom_u64(p, f[k].name, l, atomic_load(v));
		}
	}
	bft_prom_family(p, P "server_reply_latency_seconds", "gauge",
	    "The server's reply time, a moving average (0: no reply yet).");
	for (unsigned i = 0; i < cl->n; i++) {
		snprintf(l, sizeof l, "server=\"%u\"", i);
		bft_prom_double(p, P "server_reply_latency_seconds", l,
		    (double)cl->lat_ns[i] / 1e9);
	}
}

/* The writer lease this handle holds, if it took one (lease.c). */
static void
put_lease(struct bft_prom *p, const struct bft_engine *cl)
{
	const struct bft_lease *l = __atomic_load_n(&cl->lease,
	    __ATOMIC_ACQUIRE);

	if (l == NULL)
		return;
	bft_prom_one(p, P "lease_state", "gauge", "The volume's writer lease: "
	    "1 held, 2 fenced (not confirmed for a period: writes fail), 3 "
	    "lost to another holder.", (uint64_t)bftblk__lease_state(l));
	bft_prom_one(p, P "lease_generation", "gauge", "The lease generation "
	    "this holder's writes carry.", bftblk__engine_gen(cl));
	bft_prom_family(p, P "lease_renewed_age_seconds", "gauge",
	    "Since the lease's last confirmed renewal.");
	bft_prom_double(p, P "lease_renewed_age_seconds", "",
	    (double)bftblk__lease_renewed_age_ms(l) / 1000);
}

static void
fill(void *arg, struct bft_prom *p)
{
	static const char *const kinds[] = { "read", "write", "flush" };
	struct eng_metrics *m = arg;
	const struct bft_engine *cl = m->cl;
	struct bft_promhttp_stats hs;
	char l[64];

	snprintf(l, sizeof l, "n=\"%u\",t=\"%u\"", cl->n, cl->t);
	bft_prom_family(p, P "info", "gauge", "The cluster's n and t.");
	bft_prom_u64(p, P "info", l, 1);
	put_engine(p, &cl->stats);
	put_servers(p, cl);
	put_lease(p, cl);
	bft_prom_family(p, P "op_duration_seconds", "histogram",
	    "Time from an operation's start on the engine to its end, by "
	    "kind.");
	for (int k = 0; k < 3; k++) {
		snprintf(l, sizeof l, "op=\"%s\"", kinds[k]);
		bft_prom_hist(p, P "op_duration_seconds", l,
		    &cl->stats.op_ns[k]);
	}
	bft_promhttp_stats(m->http, &hs);
	bft_prom_one(p, P "metrics_scrapes_total", "counter",
	    "Scrapes of this endpoint answered, this one included.",
	    hs.scrapes + 1);
	bft_prom_family(p, P "metrics_rejected_total", "counter",
	    "Connections to this endpoint refused (over the limit), "
	    "answered with an error, or closed at the deadline.");
	bft_prom_u64(p, P "metrics_rejected_total", "reason=\"refused\"",
	    hs.refused);
	bft_prom_u64(p, P "metrics_rejected_total", "reason=\"bad_request\"",
	    hs.bad_requests);
	bft_prom_u64(p, P "metrics_rejected_total", "reason=\"timeout\"",
	    hs.timeouts);
}

struct eng_metrics *
bftblk__eng_metrics_start(struct bft_engine *cl, const char *addr, char *err,
    size_t errlen)
{
	struct eng_metrics *m = calloc(1, sizeof *m);

	if (m == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->cl = cl;
	if (bft_promhttp_start(&cl->lp->loop, addr, fill, m, &m->http, err,
	    errlen) != 0) {
		free(m);
		return NULL;
	}
	return m;
}

const char *
bftblk__eng_metrics_where(const struct eng_metrics *m)
{
	return bft_promhttp_where(m->http);
}

void
bftblk__eng_metrics_stop(struct eng_metrics *m)
{
	if (m == NULL)
		return;
	bft_promhttp_stop(m->http);
	free(m);
}
