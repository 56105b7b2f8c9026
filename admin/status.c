/*
 * bftblk status: how the cluster is, from what each server says of
 * itself.  Every server is asked STATUS over a session of its own (the
 * channel handshake and HELLO as any client, then one request), all at
 * once, each on a thread, so that servers that hang cost one timeout in
 * all rather than one each.  The judging and printing are
 * status_format.c's.
 */
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin.h"
#include "config.h"
#include "crypto.h"
#include "keys.h"
#include "log.h"
#include "session.h"
#include "status_format.h"
#include "summary.h"

/* Exit status when the status cannot be known: usage, files. */
#define EXIT_UNKNOWN	3

struct asker {
	pthread_t thread;
	bool started;
	const struct bft_config *cfg;
	const struct bft_client_key *key;
	unsigned timeout_ms;
	struct status_server *out;
};

/* The server's first volumes; a server too old to know VOLUMES has none. */
static void
ask_volumes(struct bft_session *s, struct bft_msg *req, struct bft_msg *rep,
    struct status_server *out)
{
	const char *why;

	memset(req, 0, sizeof *req);
	req->type = BFT_VOLUMES;
	if (bft_session_call(s, req, rep, &why) != BFT_OK)
		return;
	for (uint32_t e = 0; e < rep->nentries; e++) {
		uint64_t id, end, live;

		if (out->nvols == STATUS_MAX_VOLS) {
			out->more_vols = true;
			break;
		}
		bft_volentry_get(rep->entries + (size_t)e * BFT_VOLENTRY_LEN,
		    &id, &end, &live);
		out->vols[out->nvols++] = (struct status_vol){
		    .id = (uint32_t)id, .end = end, .live = live };
	}
}

static void *
ask(void *arg)
{
	struct asker *a = arg;
	struct status_server *out = a->out;
	struct bft_session_fail f;
	struct bft_session s;
	struct bft_msg *req, *rep;
	const char *why = "";
	int st;

	req = calloc(1, sizeof *req);
	rep = calloc(1, sizeof *rep);
	if (req == NULL || rep == NULL) {
		snprintf(out->why, sizeof out->why, "out of memory");
		goto out_free;
	}
	if (bft_session_open(&s, a->cfg, a->key, out->index, a->timeout_ms,
	    true, &f) != 0) {
		bft_session_fail_str(&f, out->why, sizeof out->why);
		goto out_free;
	}
	req->type = BFT_STATUS;
	st = bft_session_call(&s, req, rep, &why);
	if (st < 0) {
		snprintf(out->why, sizeof out->why, "STATUS: %s", why);
	} else if (st != BFT_OK) {
		snprintf(out->why, sizeof out->why, "STATUS refused: %s",
		    bft_status_str(st));
	} else {
		out->info = rep->info;
		out->reachable = true;
		ask_volumes(&s, req, rep, out);
	}
	bft_session_close(&s);
out_free:
	free(req);
	free(rep);
	return NULL;
}

/* The identity to ask with: a client key file of any role. */
static int
load_key(const char *path, const struct bft_config *cfg,
    struct bft_client_key *key)
{
	char err[512];

	if (bft_client_key_load(path, key, err, sizeof err) != 0) {
		bft_log("%s", err);
		return -1;
	}
	if (memcmp(key->cluster_id, cfg->cluster_id, BFT_CLUSTER_ID_LEN)) {
		bft_log("%s is a key of another cluster", path);
		return -1;
	}
	return 0;
}

/* The clients' stats files named with --client-stats, into r. */
static int
load_clients(struct status_report *r, char **paths, unsigned npaths)
{
	time_t now = time(NULL);
	char err[512];

	for (unsigned c = 0; c < npaths; c++) {
		struct status_client *cl = &r->clients[c];

		if (status_client_load(paths[c], r->n, cl, err,
		    sizeof err) != 0) {
			bft_log("--client-stats: %s", err);
			return -1;
		}
		cl->age_s = (int64_t)now - cl->updated;
		r->nclients = c + 1;
	}
	return 0;
}

/* Adds id to the sorted set ids[0..*n) unless present or full. */
static void
add_id(uint32_t *ids, unsigned *n, uint32_t id)
{
	unsigned k = 0;

	while (k < *n && ids[k] < id)
		k++;
	if ((k < *n && ids[k] == id) || *n == STATUS_MAX_VOLS)
		return;
	memmove(ids + k + 1, ids + k, (*n - k) * sizeof *ids);
	ids[k] = id;
	(*n)++;
}

/*
 * Reads the lease of every volume the servers list, through the
 * protocol like any client (a lease is a register), with a handle of
 * the status key's: read-only keys can.  The reserved volumes have no
 * lease of their own.
 */
static void
read_leases(struct status_report *r, const char *conf, const char *keypath,
    unsigned timeout_s)
{
	uint32_t ids[STATUS_MAX_VOLS];
	unsigned nids = 0;
	struct timespec now;
	struct bftblk *h;
	char opts[96];

	for (unsigned i = 0; i < r->n; i++)
		for (unsigned k = 0; k < r->servers[i].nvols; k++)
			if (r->servers[i].vols[k].id < BFT_VOL_TABLE)
				add_id(ids, &nids, r->servers[i].vols[k].id);
	if (nids == 0)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	r->now_ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec /
	    1000000;
	snprintf(opts, sizeof opts, "shared=on cache=0 timeout=%u "
	    "io-timeout=%u", timeout_s, timeout_s);
	if (bftblk_open(conf, keypath, opts, &h) != 0) {
		snprintf(r->lease_err, sizeof r->lease_err, "%s",
		    bftblk_errmsg(NULL));
		return;
	}
	for (unsigned k = 0; k < nids; k++) {
		struct status_lease *sl = &r->leases[r->nleases];

		sl->id = ids[k];
		if (bftblk_lease_get(h, ids[k], &sl->l, sizeof sl->l) != 0) {
			snprintf(r->lease_err, sizeof r->lease_err, "volume %"
			    PRIu32 ": %s", ids[k], bftblk_errmsg(h));
			break;
		}
		r->nleases++;
	}
	bftblk_close(h);
}

/* A MAC key reauth pass under way or stopped, from DIR's state file. */
static void
read_reauth(struct status_report *r, const char *dir)
{
	char path[ADMIN_PATH_MAX];
	int64_t now = (int64_t)time(NULL);

	if (dir == NULL || admin_path_in(path, sizeof path, dir,
	    REAUTH_STATE_FILE) != 0 || reauth_state_read(path, &r->reauth) != 0)
		return;
	r->has_reauth = true;
	r->reauth_stopped = reauth_state_stopped(&r->reauth, now);
	r->reauth_age_s = r->reauth.progress ? now - r->reauth.at : 0;
}

static int
status(const char *dir, const char *keys, bool json, unsigned timeout_s,
    char **clients, unsigned nclients)
{
	static struct bft_config cfg;
	static struct bft_client_key key;
	static struct status_report r;
	struct asker a[BFT_MAX_N];
	char conf[ADMIN_PATH_MAX], keypath[ADMIN_PATH_MAX], err[512];
	int rc = EXIT_UNKNOWN;

	if (admin_cluster_paths(dir, keys, conf, keypath) != 0)
		return EXIT_UNKNOWN;
	if (bft_config_load(conf, &cfg, err, sizeof err) != 0) {
		bft_log("%s", err);
		return EXIT_UNKNOWN;
	}
	if (load_key(keypath, &cfg, &key) != 0)
		goto out_wipe;
	memset(&r, 0, sizeof r);
	r.n = cfg.n;
	r.t = cfg.t;
	if (load_clients(&r, clients, nclients) != 0)
		goto out_wipe;
	for (unsigned i = 0; i < cfg.n; i++) {
		r.servers[i].index = i;
		bft_format_addr(&cfg.servers[i], r.servers[i].addr,
		    sizeof r.servers[i].addr);
		a[i] = (struct asker){ .cfg = &cfg, .key = &key,
		    .timeout_ms = timeout_s * 1000, .out = &r.servers[i] };
		a[i].started = pthread_create(&a[i].thread, NULL, ask,
		    &a[i]) == 0;
		if (!a[i].started)
			ask(&a[i]);
	}
	for (unsigned i = 0; i < cfg.n; i++)
		if (a[i].started)
			pthread_join(a[i].thread, NULL);
	read_leases(&r, conf, keypath, timeout_s);
	read_reauth(&r, dir);
	status_assess(&r);
	if ((json ? status_print_json(&r, stdout) :
	    status_print_text(&r, stdout)) != 0 || fflush(stdout) != 0) {
		bft_log("cannot write the report");
		goto out_wipe;
	}
	rc = status_exit_code(r.health);
out_wipe:
	bft_wipe(&key, sizeof key);
	return rc;
}

int
admin_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "keys", required_argument, NULL, 'k' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "client-stats", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = NULL, *keys = NULL;
	char *clients[STATUS_MAX_CLIENTS];
	unsigned nclients = 0;
	unsigned timeout_s = 3;
	bool json = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:k:jt:c:", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (nclients == STATUS_MAX_CLIENTS) {
				bft_log("--client-stats: at most %d files",
				    STATUS_MAX_CLIENTS);
				return EXIT_UNKNOWN;
			}
			clients[nclients++] = optarg;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'k':
			keys = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 't':
			if (admin_parse_timeout(optarg, &timeout_s) != 0)
				return EXIT_UNKNOWN;
			break;
		default:
			admin_usage(stderr);
			return EXIT_UNKNOWN;
		}
	}
	if (dir == NULL || optind != argc) {
		admin_usage(stderr);
		return EXIT_UNKNOWN;
	}
	return status(dir, keys, json, timeout_s, clients, nclients);
}
