/*
 * bftblk-server: one storage server of a bftblk cluster.  Loads the
 * cluster configuration and this server's key, opens the data
 * directory, and serves M-PoWerStore requests until SIGTERM or SIGINT.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "compact_timer.h"
#include "config.h"
#include "crypto.h"
#include "keys.h"
#include "keys_census.h"
#include "log.h"
#include "handler.h"
#include "metrics.h"
#include "net.h"
#include "options.h"
#include "reload.h"
#include "rebuild/rebuild.h"
#include "rejuv.h"
#include "scrub.h"
#include "sdnotify.h"
#include "store/store.h"
#include "test_hooks.h"

struct server {
	struct bft_net *net;
	uv_signal_t sigterm, sigint, sighup;
	bool signals;
	const char *config;
	struct bft_config *cfg;
	unsigned self;			/* this server's index */
	const char *key_path;		/* its key file, for MAC epochs */
	struct bft_server_key *key;
	struct bft_rebuild *rb;
	struct bft_scrub *scrub;
	struct bft_census *census;	/* MAC key census and retire */
	struct bft_handler *h;		/* what STATUS reads it through */
	struct bft_compact_timer *compact;	/* compaction when idle */
	struct bft_heal_progress heal;	/* what STATUS reports */
	struct bft_metrics *metrics;	/* --metrics, or NULL */
	struct bft_rejuv *rejuv;	/* proactive recovery, or NULL */
	bool reexec;			/* stopped to restart: recovery */
};


/*
 * A missing data directory is most likely a disk that failed to mount:
 * creating it would make an empty server out of one that holds data, and
 * it would then serve as if it had never been written.  Only a new
 * server, said so with --create-data-dir, gets one created (by the
 * store).  An existing empty directory is a new server's as before.
 */
static int
check_data_dir(const struct bft_server_opts *o)
{
	struct stat sb;

	if (stat(o->data, &sb) == 0 || errno != ENOENT || o->create_data)
		return 0;
	bft_error("data directory %s does not exist; create it (mkdir) or "
	    "pass --create-data-dir if this is a new server", o->data);
	return -1;
}

/* Checks that the key belongs to the configured cluster. */
static int
check_key(const struct bft_server_opts *o, const struct bft_config *cfg,
    const struct bft_server_key *key)
{
	char a[2 * BFT_CLUSTER_ID_LEN + 1], b[2 * BFT_CLUSTER_ID_LEN + 1];

	if (!bft_equal(key->cluster_id, cfg->cluster_id, BFT_CLUSTER_ID_LEN)) {
		bft_format_hex(key->cluster_id, BFT_CLUSTER_ID_LEN, a);
		bft_format_hex(cfg->cluster_id, BFT_CLUSTER_ID_LEN, b);
		bft_error("%s: key of cluster %s, but %s is cluster %s", o->key,
		    a, o->config, b);
		return -1;
	}
	if (key->index >= cfg->n) {
		bft_error("%s: key of server %u, but %s has only n=%u servers",
		    o->key, key->index, o->config, cfg->n);
		return -1;
	}
	/*
	 * Its next key too: a server being rotated restarts with its new
	 * key file before the old key leaves bftblk.conf.
	 */
	if (!bft_equal(key->chan.pk, cfg->server_pk[key->index], 32) &&
	    (bft_config_pk_next(cfg, key->index) == NULL ||
	    !bft_equal(key->chan.pk, cfg->server_pk_next[key->index], 32))) {
		bft_error("%s: its chan-key matches neither server.%u.pk nor "
		    "server.%u.pk.next in %s", o->key, key->index, key->index,
		    o->config);
		return -1;
	}
	if (cfg->nclients == 0)
		bft_warn("%s lists no client.NAME lines: nobody can connect "
		    "until one is added (bftblk client add) and SIGHUP sent",
		    o->config);
	if (cfg->channel == BFT_CHAN_PLAIN)
		bft_warn("channel = plain: frames travel unencrypted and "
		    "unauthenticated; for measurements on a private network "
		    "only");
	return 0;
}

static int
write_pidfile(const char *path)
{
	char line[32];
	int fd, len, ok;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	len = snprintf(line, sizeof line, "%ld\n", (long)getpid());
	ok = write(fd, line, (size_t)len) == len;
	if (close(fd) < 0 || !ok)
		return -1;
	return 0;
}

/* The scrub found damage: the rebuild fetches it now. */
static void
kick(void *rb)
{
	bft_rebuild_kick(rb);
}

static void
stop(struct server *srv)
{
	bft_rejuv_stop(srv->rejuv);
	srv->rejuv = NULL;
	bft_scrub_stop(srv->scrub);
	srv->scrub = NULL;
	/* STATUS and the metrics report zeros from here on. */
	if (srv->census != NULL)
		srv->h->census = NULL;
	bft_census_stop(srv->census);
	srv->census = NULL;
	bft_compact_timer_stop(srv->compact);
	srv->compact = NULL;
	bft_rebuild_stop(srv->rb);
	srv->rb = NULL;
	bft_metrics_stop(srv->metrics);
	srv->metrics = NULL;
	bft_net_shutdown(srv->net);
	if (srv->signals) {
		srv->signals = false;
		uv_close((uv_handle_t *)&srv->sigterm, NULL);
		uv_close((uv_handle_t *)&srv->sigint, NULL);
		uv_close((uv_handle_t *)&srv->sighup, NULL);
	}
}

/*
 * Tells systemd (Type=notify) how the server is: READY=1 once it
 * listens and after each reload, RELOADING=1 while it rereads the
 * configuration, STOPPING=1 on the way out.  Without NOTIFY_SOCKET
 * these do nothing.
 */
static void
notify_ready(struct server *srv)
{
	int r;

	if ((r = bft_sd_notifyf("READY=1\nSTATUS=listening on %s",
	    bft_net_where(srv->net))) < 0)
		bft_warn("NOTIFY_SOCKET: %s", strerror(-r));
}

/* RELOADING=1 carries the time it started, as systemd asks. */
static void
notify_reloading(void)
{
	struct timespec now;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((r = bft_sd_notifyf("RELOADING=1\nMONOTONIC_USEC=%llu",
	    (unsigned long long)now.tv_sec * 1000000 +
	    (unsigned long long)now.tv_nsec / 1000)) < 0)
		bft_warn("NOTIFY_SOCKET: %s", strerror(-r));
}

static void
on_sighup(uv_signal_t *sig, int signum)
{
	struct server *srv = sig->data;

	(void)signum;
	notify_reloading();
	if (bft_reload_clients(srv->config, srv->cfg, srv->self) == 0)
		bft_net_reload(srv->net);
	(void)bft_reload_key(srv->key_path, srv->key);
	notify_ready(srv);
}

static void
on_signal(uv_signal_t *sig, int signum)
{
	int r;

	bft_log("%s: shutting down", strsignal(signum));
	if ((r = bft_sd_notify("STOPPING=1")) < 0)
		bft_warn("NOTIFY_SOCKET: %s", strerror(-r));
	stop(sig->data);
}

/*
 * Proactive recovery restarts: the same way out as SIGTERM's, and then
 * main runs the binary anew in this process.  The PID stays, so to
 * systemd (Type=notify) this is a reload: READY=1 comes again once the
 * new image listens.
 */
static void
on_restart(void *ctx)
{
	struct server *srv = ctx;

	srv->reexec = true;
	notify_reloading();
	stop(srv);
}

/* Sets up listeners and signals; 0 or -1 after logging why. */
static int
start(struct server *srv, uv_loop_t *loop, const struct bft_server_opts *o,
    const struct bft_config *cfg, const struct bft_server_key *key)
{
	char host[BFT_HOST_LEN], err[512];
	uint16_t port;

	if (o->listen) {
		if (bft_parse_hostport(o->listen, host, sizeof host, &port) < 0) {
			bft_error("--listen: not HOST:PORT: %s", o->listen);
			return -1;
		}
	} else {
		snprintf(host, sizeof host, "%s", cfg->servers[key->index].host);
		port = cfg->servers[key->index].port;
	}
	if (bft_net_listen_tcp(srv->net, host, port, err, sizeof err) < 0 ||
	    (o->unix_path &&
	    bft_net_listen_unix(srv->net, o->unix_path, err, sizeof err) < 0)) {
		bft_error("%s", err);
		return -1;
	}
	if (o->metrics) {
		srv->metrics = bft_metrics_start(loop, o->metrics, srv->net,
		    err, sizeof err);
		if (srv->metrics == NULL) {
			bft_error("--metrics: %s", err);
			return -1;
		}
		bft_log("metrics on http://%s/metrics",
		    bft_metrics_where(srv->metrics));
	}
	if (uv_signal_init(loop, &srv->sigterm) < 0 ||
	    uv_signal_init(loop, &srv->sigint) < 0 ||
	    uv_signal_init(loop, &srv->sighup) < 0) {
		bft_error("cannot set up signal handling");
		return -1;
	}
	srv->signals = true;
	srv->sigterm.data = srv->sigint.data = srv->sighup.data = srv;
	if (uv_signal_start(&srv->sigterm, on_signal, SIGTERM) < 0 ||
	    uv_signal_start(&srv->sigint, on_signal, SIGINT) < 0 ||
	    uv_signal_start(&srv->sighup, on_sighup, SIGHUP) < 0) {
		bft_error("cannot set up signal handling");
		return -1;
	}
	return 0;
}

/*
 * How the index came back, and how long it took: what a restart costs.
 * A crash leaves a torn tail; anything else found damaged is news.
 */
static void
log_replay(const char *dir, const struct bft_store *st, uint64_t ms)
{
	struct bft_store_ckpt_info ck;
	struct bft_store_replay r;
	struct bft_store_stats ss;

	bft_store_ckpt_info(st, &ck);
	bft_store_stats(st, &ss);
	if (ck.loaded)
		bft_log("%s: index from its checkpoint and %.1f MB of log "
		    "after it (%" PRIu64 " records) in %.2f s", dir,
		    (double)ck.tail_bytes / 1e6, ss.records_replayed,
		    (double)ms / 1000);
	else
		bft_log("%s: index from the whole log (%" PRIu64 " records, "
		    "%.1f MB; %s) in %.2f s", dir, ss.records_replayed,
		    (double)ss.bytes_total / 1e6, ck.why, (double)ms / 1000);
	bft_store_replay_info(st, &r);
	if (r.torn_records || r.corrupt_records)
		bft_warn("%s: discarded %" PRIu64 " torn records (%" PRIu64
		    " bytes) and %" PRIu64 " corrupt ones (%" PRIu64
		    " bytes)", dir, r.torn_records, r.torn_bytes,
		    r.corrupt_records, r.corrupt_bytes);
}

static void
log_store_stats(const struct bft_store *st)
{
	struct bft_store_stats ss;

	bft_store_stats(st, &ss);
	bft_debug("store: %" PRIu64 " records replayed, %" PRIu64
	    " discarded, %" PRIu64 " segments, %" PRIu64 " of %" PRIu64
	    " bytes live, %" PRIu64 " compactions copying %" PRIu64 " bytes",
	    ss.records_replayed, ss.records_discarded, ss.segments,
	    ss.bytes_live, ss.bytes_total, ss.compactions, ss.bytes_copied);
}

int
main(int argc, char **argv)
{
	static struct bft_config cfg;
	static struct bft_server_key key;
	struct bft_store_identity id;
	struct bft_handler h;
	struct bft_store *st = NULL;
	struct server srv;
	struct bft_server_opts o;
	struct bft_rejuv_opts ro;
	uv_loop_t loop;
	char err[512], exe[4096];
	/* Static: held until exit, whichever way main leaves. */
	static char **args;
	uint64_t open_ms;
	int rc = 1, e;

	/* A client that goes away mid-write must cost a connection only. */
	signal(SIGPIPE, SIG_IGN);
	bft_log_init(argv[0], 0);
	/* getopt reorders argv; a recovery's restart wants it as given. */
	if ((args = calloc((size_t)argc + 1, sizeof *args)) == NULL) {
		bft_error("out of memory");
		return 1;
	}
	memcpy(args, argv, (size_t)argc * sizeof *args);
	if (bft_server_parse_args(argc, argv, &o) < 0)
		return 1;
	bft_log_init(argv[0], o.verbose);
	/*
	 * Resolved now, not from /proc/self/exe at restart: the path, so
	 * that a recovery runs the binary installed there by then.
	 */
	if (bft_rejuv_resolve_exe(args[0], exe, sizeof exe) < 0) {
		if (o.recover_every_s > 0) {
			bft_error("--recover-every: cannot find this program's "
			    "path from %s; start it by its path", args[0]);
			return 1;
		}
		exe[0] = '\0';
	}
	if (bft_config_load(o.config, &cfg, err, sizeof err) < 0) {
		bft_error("%s", err);
		return 1;
	}
	if (bft_server_key_load(o.key, &key, err, sizeof err) < 0) {
		bft_error("%s", err);
		return 1;
	}
	if (check_key(&o, &cfg, &key) < 0)
		return 1;
	if (bft_crypto_init() < 0) {
		bft_error("cannot initialize the crypto libraries");
		return 1;
	}
	if (check_data_dir(&o) < 0)
		return 1;
	memset(&id, 0, sizeof id);
	memcpy(id.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN);
	id.server_index = key.index;
	id.n = cfg.n;
	id.t = cfg.t;
	id.block_size = cfg.block_size;
	id.nblocks = cfg.nblocks;
	open_ms = uv_hrtime() / 1000000;
	st = bft_store_open_opts(o.data, &id, &o.store, err, sizeof err);
	if (st == NULL) {
		bft_error("%s", err);
		return 1;
	}
	log_replay(o.data, st, uv_hrtime() / 1000000 - open_ms);
	/*
	 * A new data directory cannot tell a new cluster from a lost disk:
	 * the rebuild asks the peers, and the marker keeps the question
	 * open across restarts until it has an answer.
	 */
	if (bft_store_created(st) && bft_rebuild_mark_new(o.data) < 0)
		goto out_store;
	if (bft_handler_init(&h, &cfg, &key, st, o.max_pending) < 0) {
		bft_error("out of memory");
		goto out_store;
	}
	e = uv_loop_init(&loop);
	if (e < 0) {
		bft_error("uv_loop_init: %s", uv_strerror(e));
		goto out_handler;
	}
	memset(&srv, 0, sizeof srv);
	srv.config = o.config;
	srv.cfg = &cfg;
	srv.self = key.index;
	srv.key_path = o.key;
	srv.key = &key;
	srv.h = &h;
	srv.net = bft_net_new(&loop, &h, &key, &o.lim);
	if (srv.net == NULL) {
		bft_error("out of memory");
		goto out_loop;
	}
	/*
	 * A recovery's restart answers STATUS as recovering from the first
	 * connection on: a peer must never find it otherwise meanwhile.
	 */
	h.heal = &srv.heal;
	if (bft_rejuv_pending(o.data))
		srv.heal.recovering = BFT_RECOVERING_YES;
	if (bft_test_start(&loop, &h) < 0 ||
	    start(&srv, &loop, &o, &cfg, &key) < 0)
		goto out_net;
	bft_log("listening on %s (server %u of %u, t=%u, %" PRIu64 " blocks)",
	    bft_net_where(srv.net), key.index, cfg.n, cfg.t, cfg.nblocks);
	if (o.pidfile && write_pidfile(o.pidfile) < 0) {
		bft_error("%s: %s", o.pidfile, strerror(errno));
		goto out_net;
	}
	notify_ready(&srv);
	o.rebuild.config_path = o.config;
	o.rebuild.key_path = o.key;
	o.rebuild.data_dir = o.data;
	srv.rb = bft_rebuild_start(&loop, &h, &cfg, &key, &o.rebuild,
	    &srv.heal);
	if (srv.rb == NULL)
		bft_warn("cannot start the rebuild; this server will "
		    "not catch up with its peers by itself");
	srv.scrub = bft_scrub_start(&loop, &h, &srv.heal, &o.scrub, kick,
	    srv.rb);
	if (srv.scrub == NULL)
		bft_warn("cannot start the scrub; out of memory");
	/*
	 * Without the census the server still takes a rotation and
	 * retiring's checks, but never drops the older key.
	 */
	srv.census = bft_census_start(&loop, &h, &key);
	if (srv.census != NULL)
		h.census = bft_census_progress(srv.census);
	else
		bft_warn("cannot start the MAC key census; out of memory");
	srv.compact = bft_compact_timer_start(&loop, &h);
	if (srv.compact == NULL)
		bft_warn("cannot start compaction when idle; out of memory");
	/*
	 * Without a rebuild or a scrub (out of memory) a recovery would
	 * wait for them forever, and every peer with it.
	 */
	if (srv.rb == NULL)
		srv.heal.rebuild_caught_up = 1;
	if (srv.scrub == NULL)
		srv.heal.scrub_passes = 1;
	ro = (struct bft_rejuv_opts){ .every_s = o.recover_every_s,
	    .exe = exe, .argv = args, .data_dir = o.data,
	    .config_path = o.config };
	if ((o.recover_every_s > 0 || srv.heal.recovering) && (srv.rejuv =
	    bft_rejuv_start(&loop, &h, &key, cfg.n, &ro, &srv.heal, kick,
	    srv.rb, on_restart, &srv)) == NULL)
		bft_warn("cannot start proactive recovery; out of memory");
	uv_run(&loop, UV_RUN_DEFAULT);
	rc = 0;
	/* The same process comes back: its PID stays right. */
	if (o.pidfile && !srv.reexec)
		unlink(o.pidfile);
out_net:
	/* Closing the handles needs the loop to run their callbacks. */
	stop(&srv);
	uv_run(&loop, UV_RUN_DEFAULT);
	bft_net_free(srv.net);
	bft_test_stop();
out_loop:
	uv_loop_close(&loop);
out_handler:
	if (o.verbose)
		bft_handler_log_stats(&h);
	bft_handler_fini(&h);
out_store:
	e = bft_store_sync(st);
	if (e < 0) {
		bft_error("%s: sync: %s", o.data, strerror(-e));
		rc = 1;
	}
	if (o.verbose)
		log_store_stats(st);
	bft_store_close(st);
	if (rc == 0 && srv.reexec) {
		bft_rejuv_exec(&ro);
		rc = 1;
	} else if (rc == 0) {
		bft_log("stopped");
	}
	return rc;
}
