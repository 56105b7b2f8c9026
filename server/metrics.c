/*
 * The server's /metrics (metrics.h): the handler's, the network's, the
 * store's and the self-healing's counters in the Prometheus text format.
 * Everything read here belongs to the event loop this runs on, so it is
 * read without locks.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heal.h"
#include "keys_census.h"
#include "metrics.h"
#include "net_int.h"
#include "promhttp.h"
#include "store/store.h"
#include "wire.h"

#define P "bftblk_server_"

struct bft_metrics {
	struct bft_promhttp *http;
	struct bft_net *net;
	uint64_t start_time;		/* seconds since the epoch */
};

/* type="clock": a request type's label, lower case. */
static void
type_label(char *out, size_t len, uint8_t type)
{
	char name[32];
	size_t i;

	snprintf(name, sizeof name, "%s", bft_msg_type_str(type));
	for (i = 0; name[i]; i++)
		name[i] = (char)tolower((unsigned char)name[i]);
	bft_prom_label(out, len, "type", name);
}

static void
put_requests(struct bft_prom *p, const struct bft_net *net)
{
	const struct bft_handler_stats *s = &net->h->stats;
	const struct { const char *kind; uint64_t v; } err[] = {
		{ "eauth", s->eauth }, { "ebusy", s->ebusy },
		{ "estale", s->estale }, { "fenced", s->fenced },
		{ "store", s->store_errors },
		{ "hello_mismatch", s->hello_mismatch },
		{ "eperm", net->eperm }, { "client_stores", net->elimit },
	};
	char l[64];

	bft_prom_family(p, P "requests_total", "counter",
	    "Requests handled, by type.");
	for (uint8_t t = BFT_HELLO; t <= BFT_MSG_TYPE_MAX; t++) {
		type_label(l, sizeof l, t);
		bft_prom_u64(p, P "requests_total", l, s->requests[t]);
	}
	bft_prom_family(p, P "request_errors_total", "counter",
	    "Requests refused or failed, by kind: eauth (bad MAC), ebusy "
	    "(pending STORE cap), estale, fenced (an old lease holder's "
	    "STORE or COMPLETE), store (ENOSPC or EIO), "
	    "hello_mismatch, eperm (the client's role), client_stores "
	    "(--max-client-stores).");
	for (size_t i = 0; i < sizeof err / sizeof err[0]; i++) {
		bft_prom_label(l, sizeof l, "kind", err[i].kind);
		bft_prom_u64(p, P "request_errors_total", l, err[i].v);
	}
	bft_prom_one(p, P "superseded_stores_total", "counter",
	    "STOREs acknowledged without storing: a newer value was held.",
	    s->superseded);
	bft_prom_one(p, P "reauth_records_total", "counter",
	    "Records REAUTH gave the next MAC key epoch's MACs.",
	    s->relabelled);
	bft_prom_one(p, P "writebacks_total", "counter",
	    "Blocks whose lc a FILTER set (a reader's write-back).",
	    s->writebacks);
	bft_prom_one(p, P "repairs_total", "counter",
	    "Blocks whose lc a REPAIR set.", s->repairs);
	bft_prom_one(p, P "unsynced_flushes_total", "counter",
	    "FLUSHes of clients that cannot write, answered without a sync.",
	    s->flush_unsynced);
	bft_prom_one(p, P "lock_claims_refused_total", "counter",
	    "Claims of the volume table's admin lock not taken: another "
	    "admin held that generation here.", s->lock_refused);
	bft_prom_family(p, P "request_duration_seconds", "histogram",
	    "Time spent handling one request, by type.");
	for (uint8_t t = BFT_HELLO; t <= BFT_MSG_TYPE_MAX; t++) {
		type_label(l, sizeof l, t);
		bft_prom_hist(p, P "request_duration_seconds", l,
		    &net->handle_ns[t]);
	}
}

static void
put_net(struct bft_prom *p, const struct bft_net *net)
{
	static const char *const ev[BFT_PA_NEVENTS] = {
		[BFT_PA_EVICTED] = "evicted", [BFT_PA_REFUSED] = "refused",
		[BFT_PA_FAILED] = "failed", [BFT_PA_TIMEOUT] = "timeout",
	};
	char l[64];

	bft_prom_one(p, P "received_bytes_total", "counter",
	    "Bytes read from client and peer connections.", net->bytes_in);
	bft_prom_one(p, P "sent_bytes_total", "counter",
	    "Bytes written to client and peer connections.", net->bytes_out);
	bft_prom_one(p, P "connections", "gauge",
	    "Authenticated connections open.", net->nconns);
	bft_prom_one(p, P "connections_max", "gauge",
	    "Authenticated connections allowed (--max-conns).",
	    net->max_conns);
	bft_prom_one(p, P "preauth_connections", "gauge",
	    "Connections that have not finished the handshake.",
	    net->pa.count);
	bft_prom_one(p, P "preauth_connections_max", "gauge",
	    "Unauthenticated connections allowed (--max-preauth).",
	    net->pa.max);
	bft_prom_family(p, P "preauth_events_total", "counter",
	    "Unauthenticated connections evicted for newer ones, refused, "
	    "failed in the handshake, or timed out.");
	for (int i = 0; i < BFT_PA_NEVENTS; i++) {
		bft_prom_label(l, sizeof l, "event", ev[i]);
		bft_prom_u64(p, P "preauth_events_total", l, net->pa.total[i]);
	}
}

/* The metadata cache and the index checkpoint (docs/store.md). */
static void
put_store_index(struct bft_prom *p, const struct bft_store *st)
{
	struct bft_store_cache_stats cs;
	struct bft_store_ckpt_info ck;
	uint64_t gc_done, gc_total;

	bft_store_cache_stats(st, &cs);
	bft_store_ckpt_info(st, &ck);
	bft_prom_one(p, P "store_meta_cache_hits_total", "counter",
	    "Metadata reads the cache answered.", cs.hits);
	bft_prom_one(p, P "store_meta_cache_misses_total", "counter",
	    "Metadata reads that went to the log.", cs.misses);
	bft_prom_one(p, P "store_meta_cache_entries", "gauge",
	    "Records' metadata held in the cache.", cs.entries);
	bft_prom_one(p, P "store_meta_cache_bytes", "gauge",
	    "Memory the metadata cache has allocated.", cs.bytes);
	bft_prom_one(p, P "store_meta_damaged_total", "counter",
	    "Metadata reads that failed their checksum or named another "
	    "record.", cs.damaged);
	bft_prom_one(p, P "store_checkpoints_total", "counter",
	    "Index checkpoints written since start.", ck.written);
	bft_prom_one(p, P "store_checkpoint_failures_total", "counter",
	    "Index checkpoints that failed since start.", ck.failed);
	bft_prom_one(p, P "store_checkpoint_running", "gauge",
	    "1 while an index checkpoint is being written.", ck.running);
	bft_prom_one(p, P "store_opened_from_checkpoint", "gauge",
	    "1 if start loaded an index checkpoint, 0 if it replayed the "
	    "whole log.", ck.loaded);
	bft_prom_one(p, P "store_replayed_bytes", "gauge",
	    "Bytes of log replayed at start.", ck.tail_bytes);
	bft_store_snap_gc_progress(st, &gc_done, &gc_total);
	bft_prom_one(p, P "snapshot_free_done_blocks", "gauge",
	    "Retained blocks visited so far to free deleted snapshots' "
	    "space.", gc_done);
	bft_prom_one(p, P "snapshot_free_planned_blocks", "gauge",
	    "Retained blocks there were to visit when that began (0: "
	    "nothing left to free).", gc_total);
}

static void
put_store(struct bft_prom *p, const struct bft_net *net)
{
	const struct bft_heal_progress *hp = net->h->heal;
	struct bft_store_stats ss;
	struct bft_store_replay rp;

	bft_store_stats(net->h->st, &ss);
	bft_store_replay_info(net->h->st, &rp);
	bft_prom_one(p, P "store_live_bytes", "gauge",
	    "Bytes of the log's records still current.", ss.bytes_live);
	bft_prom_one(p, P "store_log_bytes", "gauge",
	    "Bytes of the log's segments on disk.", ss.bytes_total);
	bft_prom_one(p, P "store_segments", "gauge",
	    "Segment files of the log.", ss.segments);
	bft_prom_one(p, P "store_blocks_held", "gauge",
	    "Blocks with a completed write.", ss.blocks_held);
	bft_prom_one(p, P "store_compactions_total", "counter",
	    "Segments compacted since start.", ss.compactions);
	bft_prom_one(p, P "store_compacted_bytes_total", "counter",
	    "Bytes copied by compaction since start.", ss.bytes_copied);
	bft_prom_one(p, P "store_uncached_bytes_total", "counter",
	    "Bytes of sealed segments whose pages were given back, behind "
	    "the --page-cache-mb window.", ss.bytes_uncached);
	bft_prom_one(p, P "store_segments_reused_total", "counter",
	    "Segments written over a compacted segment's file since start.",
	    ss.segments_reused);
	bft_prom_one(p, P "store_spare_files", "gauge",
	    "Compacted segments' files kept for the next segments.",
	    ss.spares);
	bft_prom_one(p, P "store_stale_bytes", "gauge",
	    "Bytes of reused files' earlier use cut off when the log was "
	    "opened (after a crash).", rp.stale_bytes);
	bft_prom_one(p, P "store_syncs_total", "counter",
	    "Syncs of the log (FLUSH, shutdown).", ss.syncs);
	bft_prom_one(p, P "store_fsyncs_total", "counter",
	    "fsync and fdatasync calls made on the log.", ss.fsyncs);
	bft_prom_one(p, P "store_records_replayed", "gauge",
	    "Records replayed when the log was opened.", ss.records_replayed);
	bft_prom_family(p, P "damaged_records_total", "counter",
	    "Damaged records found: a torn tail or a corrupt record at "
	    "open, or later by a scrub or a failed checksum when served.");
	bft_prom_u64(p, P "damaged_records_total", "found=\"open_torn\"",
	    rp.torn_records);
	bft_prom_u64(p, P "damaged_records_total", "found=\"open_corrupt\"",
	    rp.corrupt_records);
	bft_prom_u64(p, P "damaged_records_total", "found=\"later\"",
	    hp ? hp->damaged_records_later : 0);
	bft_prom_one(p, P "repaired_records_total", "counter",
	    "Damaged records rewritten from the peers.",
	    hp ? hp->repaired_records : 0);
	put_store_index(p, net->h->st);
}

/* The MAC key census during a rotation (keys_census.h); else zeros. */
static void
put_census(struct bft_prom *p, const struct bft_net *net)
{
	static const struct bft_census_progress zero;
	const struct bft_census_progress *cp = net->h->census ?
	    net->h->census : &zero;

	bft_prom_one(p, P "mac_old_versions", "gauge",
	    "Versions (lc and its Hist entry) whose MAC entry for this "
	    "server is not under the newest MAC key epoch, as the last "
	    "census pass counted them; 0 with one epoch.", cp->old_current);
	bft_prom_one(p, P "mac_old_pending", "gauge",
	    "STOREs above lc not under the newest MAC key epoch, as the "
	    "last census pass counted them.", cp->old_pending);
	bft_prom_one(p, P "mac_old_retained", "gauge",
	    "Versions kept for snapshots not under the newest MAC key "
	    "epoch, as the last census pass counted them.", cp->old_retained);
	bft_prom_one(p, P "mac_census_passes", "gauge",
	    "Census passes completed since the newest MAC key epoch was "
	    "taken.", cp->passes);
	bft_prom_one(p, P "mac_retiring", "gauge",
	    "1 while the older MAC key epoch is being retired, else 0.",
	    net->h->key->has_alt && net->h->key->retiring);
}

static void
put_heal(struct bft_prom *p, const struct bft_net *net)
{
	static const char *const states[] = {
		[BFT_REBUILD_IDLE] = "idle", [BFT_REBUILD_SCANNING] = "scanning",
		[BFT_REBUILD_REBUILDING] = "rebuilding",
		[BFT_REBUILD_WAITING] = "waiting", [BFT_REBUILD_DONE] = "done",
	};
	static const struct bft_heal_progress zero;
	const struct bft_heal_progress *hp = net->h->heal ? net->h->heal :
	    &zero;
	char l[64];

	bft_prom_family(p, P "rebuild_state", "gauge",
	    "The rebuild from the peers: 1 for the state it is in.");
	for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
		bft_prom_label(l, sizeof l, "state", states[i]);
		bft_prom_u64(p, P "rebuild_state", l, hp->rebuild_state == i);
	}
	bft_prom_one(p, P "rebuild_done_blocks", "gauge",
	    "Blocks the current or last rebuild has done.", hp->rebuild_done);
	bft_prom_one(p, P "rebuild_planned_blocks", "gauge",
	    "Blocks the current or last rebuild has to do.",
	    hp->rebuild_total);
	bft_prom_one(p, P "rebuild_bytes", "gauge",
	    "Bytes the current or last rebuild has copied in.",
	    hp->rebuild_bytes);
	bft_prom_one(p, P "rebuild_rate_bytes_per_second", "gauge",
	    "The rebuild's recent speed.", hp->rebuild_rate);
	bft_prom_one(p, P "scrub_done_blocks", "gauge",
	    "Blocks the current or last scrub pass has checked.",
	    hp->scrub_done);
	bft_prom_one(p, P "scrub_planned_blocks", "gauge",
	    "Blocks a scrub pass checks.", hp->scrub_total);
	bft_prom_one(p, P "recovering", "gauge",
	    "Proactive recovery: 1 recovering, 2 about to restart for it, "
	    "0 neither.", hp->recovering);
	bft_prom_one(p, P "recoveries_total", "counter",
	    "Proactive recoveries finished since the server last started "
	    "other than for one.", hp->recoveries);
	bft_prom_one(p, P "mac_epoch", "gauge",
	    "The MAC key epoch the server holds (docs/key-epochs.md).",
	    net->h->key->epoch);
	bft_prom_one(p, P "mac_next_epoch", "gauge",
	    "The next MAC key epoch it accepts beside it during a rotation, "
	    "or 0.", net->h->key->has_alt ? net->h->key->alt_epoch : 0);
	put_census(p, net);
}

static void
fill(void *arg, struct bft_prom *p)
{
	struct bft_metrics *m = arg;
	struct bft_net *net = m->net;
	const struct bft_config *cfg = net->h->cfg;
	struct bft_promhttp_stats hs;
	char l[128];

	snprintf(l, sizeof l, "index=\"%u\",n=\"%u\",t=\"%u\"",
	    net->h->key->index, cfg->n, cfg->t);
	bft_prom_family(p, P "info", "gauge",
	    "This server's index in the cluster, and the cluster's n and t.");
	bft_prom_u64(p, P "info", l, 1);
	bft_prom_family(p, P "start_time_seconds", "gauge",
	    "When the server started, in seconds since the epoch.");
	bft_prom_u64(p, P "start_time_seconds", NULL, m->start_time);
	put_requests(p, net);
	put_net(p, net);
	put_store(p, net);
	put_heal(p, net);
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

struct bft_metrics *
bft_metrics_start(uv_loop_t *loop, const char *addr, struct bft_net *net,
    char *err, size_t errlen)
{
	struct bft_metrics *m = calloc(1, sizeof *m);

	if (m == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->net = net;
	m->start_time = (uint64_t)time(NULL);
	if (bft_promhttp_start(loop, addr, fill, m, &m->http, err,
	    errlen) != 0) {
		free(m);
		return NULL;
	}
	return m;
}

const char *
bft_metrics_where(const struct bft_metrics *m)
{
	return bft_promhttp_where(m->http);
}

void
bft_metrics_stop(struct bft_metrics *m)
{
	if (m == NULL)
		return;
	bft_promhttp_stop(m->http);
	free(m);
}
