/*
 * bftblk cluster finalize: records on every server that all of them run
 * this release, which ends the way back to the previous one and lets
 * clients use what it cannot read (common/featureset.h,
 * docs/upgrades.md).  Every server is asked first; one that does not
 * answer, or runs an older release, stops it before any is told, so a
 * half-upgraded cluster is never finalized.  A writer's key file is
 * needed, as for scrub.  Finalizing again changes nothing.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "bftblk.h"
#include "cluster_int.h"
#include "config.h"
#include "featureset.h"
#include "keys.h"
#include "log.h"
#include "session.h"

#define TIMEOUT_MS	5000

/*
 * Asks server i its release; 0 when it runs this level or a newer one
 * within reach, else -1 with why printed.
 */
static int
check_server(const struct bft_config *cfg, const struct bft_client_key *key,
    unsigned i, struct bft_msg *req, struct bft_msg *rep)
{
	char addr[BFT_ADDR_STRLEN], rel[16], why[200];
	struct bft_session_fail f;
	struct bft_session s;
	const char *w = NULL;
	int st, rc = -1;

	printf("server %u %s: ", i, bft_format_addr(&cfg->servers[i], addr,
	    sizeof addr));
	if (bft_session_open(&s, cfg, key, i, TIMEOUT_MS, true, &f) != 0) {
		bft_session_fail_str(&f, why, sizeof why);
		printf("unreachable (%s)\n", why);
		return -1;
	}
	memset(req, 0, sizeof *req);
	req->type = BFT_STATUS;
	st = bft_session_call(&s, req, rep, &w);
	if (st != BFT_OK) {
		printf("STATUS failed: %s\n", st < 0 ? w : bft_status_str(st));
		goto out;
	}
	bft_release_str(rep->info.release, rel, sizeof rel);
	if (s.chan.peer_level < BFT_LEVEL || rep->info.level < BFT_LEVEL) {
		printf("runs release %s (level %u), older than this one: "
		    "upgrade it first\n", rel, s.chan.peer_level);
		goto out;
	}
	printf("release %s, %s\n", rel, rep->info.finalized >= BFT_LEVEL ?
	    "already finalized" : "not finalized yet");
	rc = 0;
out:
	bft_session_close(&s);
	return rc;
}

static int
finalize_server(const struct bft_config *cfg,
    const struct bft_client_key *key, unsigned i, struct bft_msg *req,
    struct bft_msg *rep)
{
	char addr[BFT_ADDR_STRLEN], why[200];
	struct bft_session_fail f;
	struct bft_session s;
	const char *w = NULL;
	int st;

	printf("server %u %s: ", i, bft_format_addr(&cfg->servers[i], addr,
	    sizeof addr));
	if (bft_session_open(&s, cfg, key, i, TIMEOUT_MS, true, &f) != 0) {
		bft_session_fail_str(&f, why, sizeof why);
		printf("unreachable (%s)\n", why);
		return -1;
	}
	memset(req, 0, sizeof *req);
	req->type = BFT_FINALIZE;
	req->level = BFT_LEVEL;
	st = bft_session_call(&s, req, rep, &w);
	if (st == BFT_OK)
		printf("finalized at level %u\n", BFT_LEVEL);
	else
		printf("FINALIZE refused: %s\n", st < 0 ? w :
		    bft_status_str(st));
	bft_session_close(&s);
	return st == BFT_OK ? 0 : -1;
}

static int
finalize(const char *dir, const char *keys)
{
	static struct bft_config cfg;
	static struct bft_client_key key;
	static struct bft_msg req, rep;
	char err[512];
	int r;
	unsigned ready = 0, done = 0;

	if ((r = admin_load_cluster(dir, keys, &cfg, &key, err,
	    sizeof err)) != 0) {
		if (r == -ENAMETOOLONG)
			return 2;
		bft_log("%s", err);
		return 1;
	}
	for (unsigned i = 0; i < cfg.n; i++)
		if (check_server(&cfg, &key, i, &req, &rep) == 0)
			ready++;
	if (ready < cfg.n) {
		printf("not finalized: %u of %u servers run release %s; "
		    "every server must, first\n", ready, cfg.n,
		    BFTBLK_VERSION_STRING);
		return 1;
	}
	for (unsigned i = 0; i < cfg.n; i++)
		if (finalize_server(&cfg, &key, i, &req, &rep) == 0)
			done++;
	if (done < cfg.n) {
		printf("%u of %u servers finalized: run bftblk cluster "
		    "finalize again once the others answer\n", done, cfg.n);
		return 1;
	}
	printf("cluster finalized at level %u (release %s): servers and "
	    "clients of older releases are refused from now on\n", BFT_LEVEL,
	    BFTBLK_VERSION_STRING);
	return 0;
}

int
admin_feature_usable(const char *dir, const char *keys, unsigned timeout_s,
    unsigned feature)
{
	struct bftblk *h;
	int r;

	if ((h = admin_open_cluster(dir, keys, timeout_s)) == NULL)
		return -1;
	r = bftblk__cluster_finalized(h, feature);
	if (r < 0)
		bft_log("%s", bftblk_errmsg(h));
	bftblk_close(h);
	return r < 0 ? -1 : r;
}

int
admin_cluster(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "keys", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = NULL, *keys = NULL;
	int c;

	if (argc < 2 || strcmp(argv[1], "finalize") != 0) {
		admin_usage(stderr);
		return 2;
	}
	argc--;
	argv++;
	optind = 1;
	while ((c = getopt_long(argc, argv, "d:k:", opts, NULL)) != -1) {
		if (c == 'd')
			dir = optarg;
		else if (c == 'k')
			keys = optarg;
		else {
			admin_usage(stderr);
			return 2;
		}
	}
	if (dir == NULL || optind != argc) {
		admin_usage(stderr);
		return 2;
	}
	return finalize(dir, keys);
}
