/*
 * bftblk keys rotate: the next epoch of the cluster's MAC keys
 * (docs/key-epochs.md).
 *
 *   rotate            makes epoch E+1's keys (a k_i per server and k_W)
 *                     and adds them, as next-*, to DIR/client.key
 *                     first, then to each writer's DIR/NAME.key and each
 *                     server's DIR/server-I.key.
 *   (the operator)    installs every writer's file on its host (libbftblk
 *                     takes it within two seconds), then every server's,
 *                     sending each SIGHUP.  A writer signs under E+1 once
 *                     every server accepts it (bftblk status says how
 *                     many do); until then, and after, both epochs pass.
 *
 * Writers before servers: a writer checks the MACs of what it reads
 * under the epochs it holds, so one without the new file would take a
 * value signed under E+1 for a forgery.  Writers switch only once every
 * server holds E+1, which the servers get last.
 *
 * Every file is replaced through a temporary one renamed over it, and
 * DIR/client.key goes first: run again after a crash, rotate finds the
 * next keys there and writes the same ones into the files it had not
 * reached.  Release 0.2.0 refuses key files with epochs, so rotating
 * needs the cluster finalized (BFT_FEAT_MAC_EPOCHS).
 */
#include <errno.h>
#include <stdint.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "bftblk.h"
#include "config.h"
#include "crypto.h"
#include "featureset.h"
#include "keys.h"
#include "keys_cmd.h"
#include "log.h"

/* path.tmp, for a file replaced by rename. */
static int
tmp_path(char *out, const char *path)
{
	int n = snprintf(out, ADMIN_PATH_MAX, "%s.tmp", path);

	return n < 0 || n >= ADMIN_PATH_MAX ? -ENAMETOOLONG : 0;
}

/* tmp, written (r == 0) or not, renamed over path. */
static int
rename_over(const char *tmp, const char *path, int r)
{
	if (r == 0 && rename(tmp, path) != 0)
		r = -errno;
	if (r != 0)
		(void)unlink(tmp);
	return r;
}

int
keys_replace_client(const char *path, const struct bft_client_key *ck)
{
	char tmp[ADMIN_PATH_MAX];
	int r;

	if ((r = tmp_path(tmp, path)) != 0)
		return r;
	(void)unlink(tmp);
	return rename_over(tmp, path, bft_client_key_write(tmp, ck));
}

int
keys_replace_server(const char *path, const struct bft_server_key *sk)
{
	char tmp[ADMIN_PATH_MAX];
	int r;

	if ((r = tmp_path(tmp, path)) != 0)
		return r;
	(void)unlink(tmp);
	return rename_over(tmp, path, bft_server_key_write(tmp, sk));
}

unsigned
keys_write_writers(const struct keys_args *a, const struct bft_config *cfg,
    const struct bft_client_key *ck)
{
	static struct bft_client_key wk;
	char path[ADMIN_PATH_MAX], err[512];
	unsigned failed = 0;
	int r;

	for (unsigned i = 0; i < cfg->nclients; i++) {
		const struct bft_client_ident *c = &cfg->clients[i];

		if (c->role != BFT_ROLE_RW || strcmp(c->name, ck->name) == 0)
			continue;
		if (snprintf(path, sizeof path, "%s/%s.key", a->dir,
		    c->name) >= (int)sizeof path)
			continue;
		if (bft_client_key_load(path, &wk, err, sizeof err) != 0) {
			bft_log("writer %s: %s; give its host the MAC keys of "
			    "%s", c->name, err, a->keypath);
			failed++;
			continue;
		}
		bft_client_key_take_macs(&wk, ck);
		if ((r = keys_replace_client(path, &wk)) != 0) {
			bft_log("%s: %s", path, strerror(-r));
			failed++;
		} else {
			printf("writer %s: %s\n", c->name, path);
		}
	}
	bft_wipe(&wk, sizeof wk);
	return failed;
}

unsigned
keys_write_servers(const struct keys_args *a, const struct bft_config *cfg,
    const struct bft_client_key *ck, uint32_t epoch, keys_server_fn *change)
{
	static struct bft_server_key sk;
	char path[ADMIN_PATH_MAX], name[32], err[512];
	unsigned failed = 0;
	int r;

	for (unsigned i = 0; i < cfg->n; i++) {
		snprintf(name, sizeof name, "server-%u.key", i);
		if (admin_path_in(path, sizeof path, a->dir, name) != 0 ||
		    bft_server_key_load(path, &sk, err, sizeof err) != 0) {
			bft_log("server %u: %s; it needs epoch %u's key.%u "
			    "from %s", i, err, epoch, i, a->keypath);
			failed++;
			continue;
		}
		if (sk.index != i || !change(&sk, ck, i)) {
			bft_log("%s is not server %u's key of epoch %u; left "
			    "alone", path, i, ck->epoch);
			failed++;
			continue;
		}
		if ((r = keys_replace_server(path, &sk)) != 0) {
			bft_log("%s: %s", path, strerror(-r));
			failed++;
		} else {
			printf("server %u: %s\n", i, path);
		}
	}
	bft_wipe(&sk, sizeof sk);
	return failed;
}

/* Server i's file of epoch E given E+1's key beside it. */
static bool
add_next(struct bft_server_key *sk, const struct bft_client_key *ck,
    unsigned i)
{
	if (!bft_equal(sk->k, ck->k[i], BFT_KEY_LEN))
		return false;
	sk->epoch = ck->epoch;
	sk->has_alt = true;
	sk->alt_epoch = ck->alt_epoch;
	memcpy(sk->k_alt, ck->k_alt[i], BFT_KEY_LEN);
	return true;
}

static int
rotate(struct keys_args *a)
{
	static struct bft_config cfg;
	static struct bft_client_key ck;
	char err[1024], conf[ADMIN_PATH_MAX];
	unsigned failed;
	int r, rc = 1;

	if (admin_load_cluster(a->dir, a->keys, &cfg, &ck, err,
	    sizeof err) != 0) {
		bft_log("%s", err);
		goto out_wipe;
	}
	(void)admin_cluster_paths(a->dir, a->keys, conf, a->keypath);
	if (ck.role != BFT_ROLE_RW) {
		bft_log("%s is not a writer's key file: it holds no MAC keys",
		    a->keypath);
		goto out_wipe;
	}
	if ((r = admin_feature_usable(a->dir, a->keys, a->timeout_s,
	    BFT_FEAT_MAC_EPOCHS)) <= 0) {
		if (r == 0)
			bft_log("MAC keys can be rotated only once the cluster "
			    "is finalized (every server and client on release "
			    "%s or later, then bftblk cluster finalize): "
			    "release 0.2.0 refuses key files with epochs",
			    BFTBLK_VERSION_STRING);
		goto out_wipe;
	}
	if (ck.has_alt && ck.alt_epoch < ck.epoch) {
		bft_log("%s signs under epoch %u already", a->keypath,
		    ck.epoch);
		goto out_wipe;
	}
	if (ck.has_alt) {
		printf("a rotation to epoch %u is under way (%s has its "
		    "keys); writing them where they are missing\n",
		    ck.alt_epoch, a->keypath);
	} else {
		ck.has_alt = true;
		ck.alt_epoch = ck.epoch + 1;
		bft_random(ck.k_alt, sizeof ck.k_alt);
		bft_random(ck.kw_alt, sizeof ck.kw_alt);
		if ((r = keys_replace_client(a->keypath, &ck)) != 0) {
			bft_log("%s: %s", a->keypath, strerror(-r));
			goto out_wipe;
		}
		printf("epoch %u: new MAC keys for %u servers and the "
		    "writers\n", ck.alt_epoch, cfg.n);
	}
	printf("writer %s: %s\n", ck.name, a->keypath);
	failed = keys_write_writers(a, &cfg, &ck) +
	    keys_write_servers(a, &cfg, &ck, ck.alt_epoch, add_next);
	printf("Install every writer's file on its host first (libbftblk "
	    "takes it within\n2 s), then every server's, with SIGHUP. "
	    "Writers sign under epoch %u once\nevery server accepts it: "
	    "bftblk status --dir %s says how many do.\n", ck.alt_epoch,
	    a->dir);
	rc = failed ? 1 : 0;
out_wipe:
	bft_wipe(&ck, sizeof ck);
	return rc;
}

int
admin_keys(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "keys", required_argument, NULL, 'k' },
		{ "timeout", required_argument, NULL, 't' },
		{ "restart", no_argument, NULL, 'r' },
		{ "epoch", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct {
		const char *name;
		int (*fn)(struct keys_args *);
		bool restart, epoch;	/* the options it takes */
	} cmds[] = {
		{ "rotate", rotate, false, false },
		{ "reauth", keys_reauth, true, false },
		{ "retire", keys_retire, false, true },
	};
	struct keys_args a = { .timeout_s = 5, .epoch = -1 };
	size_t ci;
	char *end;
	int c;

	for (ci = 0; argc >= 2 && ci < sizeof cmds / sizeof cmds[0]; ci++)
		if (strcmp(argv[1], cmds[ci].name) == 0)
			break;
	if (argc < 2 || ci == sizeof cmds / sizeof cmds[0]) {
		admin_usage(stderr);
		return 2;
	}
	optind = 2;
	while ((c = getopt_long(argc, argv, "d:k:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			a.dir = optarg;
			break;
		case 'k':
			a.keys = optarg;
			break;
		case 't':
			if (admin_parse_timeout(optarg, &a.timeout_s) != 0)
				return 2;
			break;
		case 'r':
			if (!cmds[ci].restart)
				goto out_usage;
			a.restart = true;
			break;
		case 'e':
			if (!cmds[ci].epoch)
				goto out_usage;
			errno = 0;
			a.epoch = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || a.epoch < 0 ||
			    a.epoch > UINT32_MAX) {
				bft_log("--epoch %s: not an epoch", optarg);
				return 2;
			}
			break;
		case 'h':
			admin_usage(stdout);
			return 0;
		default:
			goto out_usage;
		}
	}
	if (a.dir == NULL || optind != argc)
		goto out_usage;
	return cmds[ci].fn(&a);
out_usage:
	admin_usage(stderr);
	return 2;
}
