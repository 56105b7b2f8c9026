/*
 * bftblk-server: one storage server of a bftblk cluster.  Loads the
 * cluster configuration and this server's key, opens the data
 * directory, and serves M-PoWerStore requests until SIGTERM or SIGINT.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "config.h"
#include "crypto.h"
#include "keys.h"
#include "log.h"
#include "handler.h"
#include "metrics.h"
#include "net.h"
#include "reload.h"
#include "rebuild.h"
#include "scrub.h"
#include "sdnotify.h"
#include "store.h"
#include "test_hooks.h"

struct opts {
	const char *config, *key, *data, *listen, *unix_path, *pidfile;
	const char *metrics;		/* --metrics ADDR:PORT */
	unsigned max_pending;
	struct bft_net_limits lim;
	int verbose;
	bool create_data;		/* --create-data-dir */
	struct bft_rebuild_opts rebuild;
	struct bft_scrub_opts scrub;
	struct bft_store_opts store;
};

struct server {
	struct bft_net *net;
	uv_signal_t sigterm, sigint, sighup;
	bool signals;
	const char *config;
	struct bft_config *cfg;
	unsigned self;			/* this server's index */
	struct bft_rebuild *rb;
	struct bft_scrub *scrub;
	struct bft_heal_progress heal;	/* what STATUS reports */
	struct bft_metrics *metrics;	/* --metrics, or NULL */
};

static void
usage(FILE *f)
{
	fprintf(f, "usage: bftblk-server --config FILE --key FILE --data DIR "
	    "[--create-data-dir]\n"
	    "                     [--listen HOST:PORT]"
	    " [--pidfile FILE] [-v]\n"
	    "                     [--unix PATH] [--compact-pct P] "
	    "[--segment-mb MB]\n"
	    "                     [--meta-cache-mb MB] [--checkpoint-mb MB]\n"
	    "                     [--max-pending N] "
	    "[--max-conns N]\n"
	    "                     [--max-client-conns N] [--max-inflight N] "
	    "[--max-client-stores N]\n"
	    "                     [--rebuild-rate MB] [--rebuild-busy-rate MB]\n"
	    "                     [--rebuild-interval S]\n"
	    "                     [--scrub-rate MB] [--scrub-interval S]\n"
	    "                     [--handshake-timeout MS] "
	    "[--client-store-window MS]\n"
	    "                     [--max-preauth N] [--max-preauth-per-addr N]\n"
	    "                     [--metrics HOST:PORT]\n"
	    BFT_TEST_USAGE);
}

/* A decimal number from min to 1000000; 0 or -1. */
static int
parse_number(const char *s, unsigned long min, unsigned *out)
{
	unsigned long v;
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end != '\0' || v < min || v > 1000000)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int
parse_count(const char *s, unsigned *out)
{
	return parse_number(s, 1, out);
}

/*
 * --meta-cache-mb (0: no cache), --checkpoint-mb (0: only at shutdown)
 * and --segment-mb (1 to 1024), all in MiB.
 */
static int
parse_store_mb(int ch, const char *arg, struct bft_store_opts *so)
{
	const char *name = ch == 'X' ? "--meta-cache-mb" : ch == 'Y' ?
	    "--checkpoint-mb" : "--segment-mb";
	unsigned v, min = ch == 'Z', max = ch == 'Z' ? 1024 : 1000000;

	if (parse_number(arg, min, &v) < 0 || v > max) {
		bft_error("%s: not a size in MiB from %u to %u: %s", name, min,
		    max, arg);
		return -1;
	}
	if (ch == 'X') {
		so->cache_bytes = (uint64_t)v << 20;
		so->cache_off = v == 0;
	} else if (ch == 'Y') {
		so->checkpoint_bytes = (uint64_t)v << 20;
		so->checkpoint_off = v == 0;
	} else {
		so->segment_size = (uint64_t)v << 20;
	}
	return 0;
}

static int
parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "key", required_argument, NULL, 'k' },
		{ "data", required_argument, NULL, 'd' },
		{ "create-data-dir", no_argument, NULL, 'D' },
		{ "rebuild-rate", required_argument, NULL, 'R' },
		{ "rebuild-interval", required_argument, NULL, 'N' },
		{ "rebuild-busy-rate", required_argument, NULL, 'b' },
		{ "scrub-rate", required_argument, NULL, 'r' },
		{ "scrub-interval", required_argument, NULL, 'i' },
		{ "listen", required_argument, NULL, 'l' },
		{ "unix", required_argument, NULL, 'u' },
		{ "max-pending", required_argument, NULL, 'P' },
		{ "compact-pct", required_argument, NULL, 'K' },
		{ "meta-cache-mb", required_argument, NULL, 'X' },
		{ "checkpoint-mb", required_argument, NULL, 'Y' },
		{ "segment-mb", required_argument, NULL, 'Z' },
		{ "max-conns", required_argument, NULL, 'C' },
		{ "max-client-conns", required_argument, NULL, 'M' },
		{ "max-inflight", required_argument, NULL, 'I' },
		{ "max-client-stores", required_argument, NULL, 'T' },
		{ "client-store-window", required_argument, NULL, 'W' },
		{ "handshake-timeout", required_argument, NULL, 'H' },
		{ "max-preauth", required_argument, NULL, 'A' },
		{ "max-preauth-per-addr", required_argument, NULL, 'a' },
		{ "pidfile", required_argument, NULL, 'p' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		BFT_TEST_LONGOPTS
		{ NULL, 0, NULL, 0 },
	};
	int ch, r;

	memset(o, 0, sizeof *o);
	o->max_pending = BFT_DEFAULT_MAX_PENDING;
	o->lim.max_conns = BFT_DEFAULT_MAX_CONNS;
	o->rebuild.rate = BFT_REBUILD_DEFAULT_RATE;
	o->rebuild.busy_rate = BFT_REBUILD_DEFAULT_BUSY_RATE;
	o->rebuild.interval_s = BFT_REBUILD_DEFAULT_INTERVAL;
	o->scrub.rate = BFT_SCRUB_DEFAULT_RATE;
	o->scrub.interval_s = BFT_SCRUB_DEFAULT_INTERVAL;
	while ((ch = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': o->config = optarg; break;
		case 'k': o->key = optarg; break;
		case 'd': o->data = optarg; break;
		case 'm': o->metrics = optarg; break;
		case 'D': o->create_data = true; break;
		case 'R':
		case 'N':
		case 'r':
		case 'i':
		case 'b': {
			static const char *names[] = { "--rebuild-rate",
			    "--rebuild-interval", "--scrub-rate",
			    "--scrub-interval", "--rebuild-busy-rate" };
			const char *name = names[ch == 'R' ? 0 : ch == 'N' ?
			    1 : ch == 'r' ? 2 : ch == 'i' ? 3 : 4];
			unsigned v;

			/* 0: no limit (rates), only when asked (scrub). */
			if (parse_number(optarg, ch == 'N', &v) < 0) {
				bft_error("%s: not a number from %d to 1000000: "
				    "%s", name, ch == 'N', optarg);
				return -1;
			}
			if (ch == 'R')
				o->rebuild.rate = (uint64_t)v * 1000000;
			else if (ch == 'N')
				o->rebuild.interval_s = v;
			else if (ch == 'b')
				o->rebuild.busy_rate = (uint64_t)v * 1000000;
			else if (ch == 'r')
				o->scrub.rate = (uint64_t)v * 1000000;
			else
				o->scrub.interval_s = v;
			break;
		}
		case 'l': o->listen = optarg; break;
		case 'u': o->unix_path = optarg; break;
		case 'p': o->pidfile = optarg; break;
		case 'v': o->verbose = 1; break;
		case 'X':
		case 'Y':
		case 'Z':
			if (parse_store_mb(ch, optarg, &o->store) < 0)
				return -1;
			break;
		case 'K':
			if (parse_count(optarg, &o->store.compact_pct) < 0 ||
			    o->store.compact_pct < 10 ||
			    o->store.compact_pct > 95) {
				bft_log("--compact-pct: not a percentage from "
				    "10 to 95: %s", optarg);
				return -1;
			}
			break;
		case 'P':
			if (parse_count(optarg, &o->max_pending) < 0) {
				bft_error("--max-pending: not a count: %s",
				    optarg);
				return -1;
			}
			break;
		case 'C':
		case 'M':
		case 'I':
		case 'T':
		case 'W':
		case 'H':
		case 'A':
		case 'a': {
			unsigned v, *dst = ch == 'C' ? &o->lim.max_conns :
			    ch == 'M' ? &o->lim.max_client_conns :
			    ch == 'I' ? &o->lim.max_inflight :
			    ch == 'T' ? &o->lim.max_client_stores :
			    ch == 'A' ? &o->lim.max_preauth :
			    ch == 'a' ? &o->lim.max_preauth_per_addr : &v;

			if (parse_count(optarg, dst) < 0) {
				bft_error("%s: not a count: %s",
				    argv[optind - 1], optarg);
				return -1;
			}
			if (ch == 'H')
				o->lim.handshake_ms = v;
			if (ch == 'W')
				o->lim.store_window_ms = v;
			break;
		}
		case 'h':
			usage(stdout);
			exit(0);
		default:
			/* The test server's options; production has none. */
			r = bft_test_option(ch, optarg);
			if (r > 0)
				break;
			if (r == 0)
				usage(stderr);
			return -1;
		}
	}
	if (optind != argc || !o->config || !o->key || !o->data) {
		usage(stderr);
		return -1;
	}
	return 0;
}

/*
 * A missing data directory is most likely a disk that failed to mount:
 * creating it would make an empty server out of one that holds data, and
 * it would then serve as if it had never been written.  Only a new
 * server, said so with --create-data-dir, gets one created (by the
 * store).  An existing empty directory is a new server's as before.
 */
static int
check_data_dir(const struct opts *o)
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
check_key(const struct opts *o, const struct bft_config *cfg,
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
	if (!bft_equal(key->chan.pk, cfg->server_pk[key->index], 32)) {
		bft_error("%s: its chan-key does not match server.%u.pk in %s",
		    o->key, key->index, o->config);
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
	bft_scrub_stop(srv->scrub);
	srv->scrub = NULL;
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
	if (bft_sd_notifyf("READY=1\nSTATUS=listening on %s",
	    bft_net_where(srv->net)) < 0)
		bft_warn("NOTIFY_SOCKET: %s", strerror(errno));
}

/* RELOADING=1 carries the time it started, as systemd asks. */
static void
notify_reloading(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (bft_sd_notifyf("RELOADING=1\nMONOTONIC_USEC=%llu",
	    (unsigned long long)now.tv_sec * 1000000 +
	    (unsigned long long)now.tv_nsec / 1000) < 0)
		bft_warn("NOTIFY_SOCKET: %s", strerror(errno));
}

static void
on_sighup(uv_signal_t *sig, int signum)
{
	struct server *srv = sig->data;

	(void)signum;
	notify_reloading();
	if (bft_reload_clients(srv->config, srv->cfg, srv->self) == 0)
		bft_net_reload(srv->net);
	notify_ready(srv);
}

static void
on_signal(uv_signal_t *sig, int signum)
{
	bft_log("%s: shutting down", strsignal(signum));
	if (bft_sd_notify("STOPPING=1") < 0)
		bft_warn("NOTIFY_SOCKET: %s", strerror(errno));
	stop(sig->data);
}

/* Sets up listeners and signals; 0 or -1 after logging why. */
static int
start(struct server *srv, uv_loop_t *loop, const struct opts *o,
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
	struct opts o;
	uv_loop_t loop;
	char err[512];
	uint64_t open_ms;
	int rc = 1, e;

	/* A client that goes away mid-write must cost a connection only. */
	signal(SIGPIPE, SIG_IGN);
	bft_log_init(argv[0], 0);
	if (parse_args(argc, argv, &o) < 0)
		return 1;
	bft_log_init(argv[0], o.verbose);
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
	if (bft_store_created(st) && bft_rebuild_mark_new(o.data) < 0) {
		bft_error("%s/%s: %s", o.data, BFT_REBUILD_MARKER,
		    strerror(errno));
		goto out_store;
	}
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
	srv.net = bft_net_new(&loop, &h, &key, &o.lim);
	if (srv.net == NULL) {
		bft_error("out of memory");
		goto out_loop;
	}
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
	h.heal = &srv.heal;
	srv.rb = bft_rebuild_start(&loop, &h, &cfg, &key, &o.rebuild,
	    &srv.heal);
	if (srv.rb == NULL)
		bft_warn("cannot start the rebuild; this server will "
		    "not catch up with its peers by itself");
	srv.scrub = bft_scrub_start(&loop, &h, &srv.heal, &o.scrub, kick,
	    srv.rb);
	if (srv.scrub == NULL)
		bft_warn("cannot start the scrub; out of memory");
	uv_run(&loop, UV_RUN_DEFAULT);
	rc = 0;
	if (o.pidfile)
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
	if (rc == 0)
		bft_log("stopped");
	return rc;
}
