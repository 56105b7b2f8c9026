/*
 * bftblk server rotate: gives server I a new channel key in place, with
 * no moment in which anyone is locked out of it.
 *
 *   rotate            writes DIR/server-I.key.new (server I's MAC key
 *                     and index, a new channel key pair) and adds
 *                     server.I.pk.next, its public half, to bftblk.conf.
 *   (the operator)    copies bftblk.conf to every host (servers take it
 *                     on SIGHUP, libbftblk by itself), then installs
 *                     server-I.key.new as server I's key and restarts it.
 *   rotate --finish   moves server.I.pk.next over server.I.pk and
 *                     renames server-I.key.new over server-I.key.
 *
 * Why nobody is locked out: a client (and a server reaching its peers)
 * checks the server hello under server.I.pk and, failing that, under
 * server.I.pk.next (common/channel.h), and a server lets a peer in under
 * either.  Before the restart server I proves its old key, which every
 * copy of the file lists; after it, its new one, which every copy made
 * after `rotate` lists; and --finish, which removes the old key, refuses
 * until a handshake with server I shows it proving the new key.  Each
 * step's file thus lists the key server I runs under, whichever of the
 * two that is, so a host that has the file of the step at hand always
 * reaches it.  Connections under a key that stays listed are kept across
 * both reloads.
 *
 * Release 0.2.0 refuses the .next line, so rotating needs the cluster
 * finalized (BFT_FEAT_SERVER_KEY_ROTATION), when no 0.2.0 host is let in.
 * The file is rewritten through a temporary one that must load before
 * it replaces the old, as client_keys.c does.
 */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "bftblk.h"
#include "channel.h"
#include "config.h"
#include "crypto.h"
#include "featureset.h"
#include "keys.h"
#include "log.h"
#include "session.h"

struct rotate_args {
	const char *dir, *keys;
	unsigned index, timeout_s;
	char conf[ADMIN_PATH_MAX], tmp[ADMIN_PATH_MAX];
	char keyf[ADMIN_PATH_MAX], newf[ADMIN_PATH_MAX];
};

/* Whether line sets key ("key = ..."), blanks around it allowed. */
static bool
sets_key(const char *line, const char *key)
{
	size_t kl = strlen(key);

	while (*line == ' ' || *line == '\t')
		line++;
	if (strncmp(line, key, kl) != 0)
		return false;
	line += kl;
	while (*line == ' ' || *line == '\t')
		line++;
	return *line == '=';
}

/* What rewrite_conf does to each line (admin_conf_edit). */
struct rotate_edit {
	char pkkey[32], nextkey[40];
	const char *pk;
};

static void
rotate_line(const char *line, FILE *out, void *arg)
{
	const struct rotate_edit *e = arg;

	if (sets_key(line, e->nextkey))
		return;
	if (e->pk != NULL && sets_key(line, e->pkkey))
		fprintf(out, "%s = %s\n", e->pkkey, e->pk);
	else
		fputs(line, out);
}

/*
 * Rewrites bftblk.conf without server I's .next line and, with pk,
 * with pk as its server.I.pk, or with add as its .next line.  0, or -1
 * after saying why.
 */
static int
rewrite_conf(struct rotate_args *a, const char *pk, const char *add)
{
	struct rotate_edit e = { .pk = pk };
	char line[160];

	snprintf(e.pkkey, sizeof e.pkkey, "server.%u.pk", a->index);
	snprintf(e.nextkey, sizeof e.nextkey, "server.%u.pk.next", a->index);
	if (add != NULL)
		snprintf(line, sizeof line, "%s = %s", e.nextkey, add);
	return admin_conf_edit(a->conf, a->tmp, rotate_line, &e,
	    add != NULL ? line : NULL);
}

/*
 * Server I's key file as it is, for its MAC key: DIR/server-I.key, or
 * else the writer's key file, which holds every server's (as server
 * replace takes it).  0, or -1 after saying why.
 */
static int
load_server_key(const struct rotate_args *a, const struct bft_config *cfg,
    struct bft_server_key *sk)
{
	static struct bft_client_key ck;
	char err[512], err2[512], keypath[ADMIN_PATH_MAX];

	if (bft_server_key_load(a->keyf, sk, err, sizeof err) == 0) {
		if (sk->index == a->index && memcmp(sk->cluster_id,
		    cfg->cluster_id, BFT_CLUSTER_ID_LEN) == 0)
			return 0;
		bft_log("%s is not server %u's key of this cluster", a->keyf,
		    a->index);
		return -1;
	}
	if (admin_cluster_paths(a->dir, a->keys, err2, keypath) != 0 ||
	    bft_client_key_load(keypath, &ck, err2, sizeof err2) != 0 ||
	    ck.role != BFT_ROLE_RW || ck.n != cfg->n) {
		bft_log("%s; and no writer's key file to take server %u's MAC "
		    "key from", err, a->index);
		bft_wipe(&ck, sizeof ck);
		return -1;
	}
	memset(sk, 0, sizeof *sk);
	memcpy(sk->cluster_id, cfg->cluster_id, BFT_CLUSTER_ID_LEN);
	sk->index = a->index;
	memcpy(sk->k, ck.k[a->index], BFT_KEY_LEN);
	bft_wipe(&ck, sizeof ck);
	return 0;
}

static int
start(struct rotate_args *a, const struct bft_config *cfg)
{
	static struct bft_server_key sk;
	char pk[65];
	int r;

	if (bft_config_pk_next(cfg, a->index) != NULL) {
		bft_log("server %u is being rotated already: install %s as its "
		    "key, restart it, then run bftblk server rotate --dir %s "
		    "--index %u --finish", a->index, a->newf, a->dir, a->index);
		return 1;
	}
	if ((r = admin_feature_usable(a->dir, a->keys, a->timeout_s,
	    BFT_FEAT_SERVER_KEY_ROTATION)) < 0)
		return 1;
	if (r == 0) {
		bft_log("server keys can be rotated only once the cluster is "
		    "finalized (every server and client on release %s or "
		    "later, then bftblk cluster finalize): release 0.2.0 "
		    "refuses the server.I.pk.next line rotating adds to "
		    "bftblk.conf", BFTBLK_VERSION_STRING);
		return 1;
	}
	if (load_server_key(a, cfg, &sk) != 0) {
		r = -1;
		goto out_wipe;
	}
	bft_chan_keypair_new(&sk.chan);
	if ((r = bft_server_key_write(a->newf, &sk)) != 0) {
		bft_log("%s: %s%s", a->newf, strerror(-r), r == -EEXIST ?
		    " (left by a rotation that did not finish? remove it)" :
		    "");
		goto out_wipe;
	}
	bft_format_hex(sk.chan.pk, 32, pk);
	if (rewrite_conf(a, NULL, pk) != 0) {
		unlink(a->newf);
		r = -1;
		goto out_wipe;
	}
	printf("server %u: new key in %s, listed as server.%u.pk.next in %s.\n"
	    "1. copy %s to every server and client host and send the "
	    "servers SIGHUP\n   (libbftblk and the plugin reread it by "
	    "themselves);\n"
	    "2. install %s as server %u's key file and restart server %u;\n"
	    "3. bftblk server rotate --dir %s --index %u --finish\n",
	    a->index, a->newf, a->index, a->conf, a->conf, a->newf, a->index,
	    a->index, a->dir, a->index);
out_wipe:
	bft_wipe(&sk, sizeof sk);
	return r == 0 ? 0 : 1;
}

/*
 * Whether server I proves its next key: a handshake under that key
 * alone.  0 when it does, or 1 after saying why not.
 */
static int
check_runs_next(const struct rotate_args *a, const struct bft_config *cfg)
{
	static struct bft_config one;
	static struct bft_client_key key;
	struct bft_session_fail f;
	struct bft_session s;
	char err[512], why[256];
	int r;

	if (admin_load_cluster(a->dir, a->keys, &one, &key, err,
	    sizeof err) != 0) {
		bft_log("%s", err);
		return 1;
	}
	memcpy(one.server_pk[a->index], cfg->server_pk_next[a->index], 32);
	one.has_pk_next &= ~(1u << a->index);
	r = bft_session_open(&s, &one, &key, a->index, a->timeout_s * 1000,
	    false, &f);
	bft_wipe(&key, sizeof key);
	if (r == 0) {
		bft_session_close(&s);
		return 0;
	}
	bft_session_fail_str(&f, why, sizeof why);
	if (r == -EACCES)
		bft_log("server %u still proves its old key: install %s as its "
		    "key file and restart it first; finishing now would lock "
		    "everyone out of it", a->index, a->newf);
	else
		bft_log("cannot tell which key server %u runs under (%s): not "
		    "finishing, since finishing while it runs the old one "
		    "would lock everyone out of it", a->index, why);
	return 1;
}

static int
finish(struct rotate_args *a, const struct bft_config *cfg)
{
	char pk[65];

	if (bft_config_pk_next(cfg, a->index) == NULL) {
		bft_log("server %u has no rotation under way (bftblk server "
		    "rotate --dir %s --index %u starts one)", a->index, a->dir,
		    a->index);
		return 1;
	}
	if (check_runs_next(a, cfg) != 0)
		return 1;
	bft_format_hex(cfg->server_pk_next[a->index], 32, pk);
	if (rewrite_conf(a, pk, NULL) != 0)
		return 1;
	/* The old secret goes: a leaked copy is what this is for. */
	if (rename(a->newf, a->keyf) != 0)
		bft_log("%s: %s (the configuration is rotated; put the new key "
		    "file in place of the old by hand)", a->newf,
		    strerror(errno));
	printf("server %u rotated: only its new key is listed in %s; copy it "
	    "to every server and client host and send the servers SIGHUP\n",
	    a->index, a->conf);
	return 0;
}

int
admin_server_rotate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "keys", required_argument, NULL, 'k' },
		{ "index", required_argument, NULL, 'i' },
		{ "timeout", required_argument, NULL, 't' },
		{ "finish", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	static struct bft_config cfg;
	static struct rotate_args a = { .timeout_s = 5 };
	unsigned long index = ULONG_MAX;
	bool fin = false;
	char err[1024], name[64], *end;
	int c;

	optind = 2;
	while ((c = getopt_long(argc, argv, "d:k:i:t:", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			a.dir = optarg;
			break;
		case 'k':
			a.keys = optarg;
			break;
		case 'i':
			index = strtoul(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end != '\0')
				index = ULONG_MAX;
			break;
		case 't':
			if (admin_parse_timeout(optarg, &a.timeout_s) != 0)
				return 2;
			break;
		case 'f':
			fin = true;
			break;
		default:
			admin_usage(stderr);
			return 2;
		}
	}
	if (a.dir == NULL || index >= BFT_MAX_N || optind != argc) {
		admin_usage(stderr);
		return 2;
	}
	a.index = (unsigned)index;
	if (admin_path_in(a.conf, sizeof a.conf, a.dir, "bftblk.conf") ||
	    admin_path_in(a.tmp, sizeof a.tmp, a.dir, ".bftblk.conf.new"))
		return 2;
	snprintf(name, sizeof name, "server-%u.key", a.index);
	if (admin_path_in(a.keyf, sizeof a.keyf, a.dir, name))
		return 2;
	snprintf(name, sizeof name, "server-%u.key.new", a.index);
	if (admin_path_in(a.newf, sizeof a.newf, a.dir, name))
		return 2;
	if (bft_config_load(a.conf, &cfg, err, sizeof err) != 0) {
		bft_log("%s", err);
		return 1;
	}
	if (a.index >= cfg.n) {
		bft_log("--index %u: the cluster has servers 0..%u", a.index,
		    cfg.n - 1);
		return 2;
	}
	return fin ? finish(&a, &cfg) : start(&a, &cfg);
}
