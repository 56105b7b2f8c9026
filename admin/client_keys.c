/*
 * `bftblk client add|revoke|rotate|list`: the clients a cluster lets in.
 *
 * A client is a line "client.NAME = rw|ro PUBLIC-KEY" in bftblk.conf and
 * a key file DIR/NAME.key holding its channel secret (and, for a
 * writer, the cluster's MAC keys copied from DIR/client.key).  The
 * configuration is rewritten through a temporary file that must load
 * before it replaces the old one, so a failed edit leaves the cluster's
 * file as it was.  Servers pick the change up on SIGHUP.
 *
 * Rotating a client's channel key leaves no moment in which its holder
 * is locked out: `rotate` lets the new key in beside the old one (as
 * client NAME.next, a line any release reads) and writes DIR/NAME.key.new;
 * once the holder uses the new file, `rotate --finish` drops the old
 * key and names the new one NAME again.  Servers match a connection by
 * its key, so the holder's connections under the new key stay open
 * across both reloads.
 */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "channel.h"
#include "config.h"
#include "crypto.h"
#include "keys.h"
#include "log.h"

struct client_args {
	const char *dir, *name;
	enum bft_role role;
	char conf[4096], tmp[4096];
};

/* Whether line is "client.NAME = ..." for this name. */
static int
is_client_line(const char *line, const char *name)
{
	size_t nl = strlen(name);

	while (*line == ' ' || *line == '\t')
		line++;
	if (strncmp(line, "client.", 7) != 0 || strncmp(line + 7, name, nl))
		return 0;
	line += 7 + nl;
	while (*line == ' ' || *line == '\t')
		line++;
	return *line == '=';
}

/* What rewrite_conf_rename does to each line (admin_conf_edit). */
struct client_edit {
	const char *name, *from;
	bool drop;			/* name's line goes */
	int dropped;
};

static void
client_line(const char *line, FILE *out, void *arg)
{
	struct client_edit *e = arg;
	const char *eq;

	if (e->drop && is_client_line(line, e->name)) {
		e->dropped++;
		return;
	}
	if (e->from != NULL && is_client_line(line, e->from) &&
	    (eq = strchr(line, '=')) != NULL) {
		fprintf(out, "client.%s %s", e->name, eq);
		return;
	}
	fputs(line, out);
}

/*
 * Rewrites bftblk.conf without name's line (revoke) or with add_line
 * appended; with from, also with the line of client from as name's
 * (the end of a rotation, add_line NULL).  Returns the number of lines
 * dropped, or -1.
 */
static int
rewrite_conf_rename(struct client_args *a, const char *add_line,
    const char *from)
{
	struct client_edit e = { .name = a->name, .from = from,
	    .drop = add_line == NULL };

	if (admin_conf_edit(a->conf, a->tmp, client_line, &e, add_line) != 0)
		return -1;
	return e.dropped;
}

static int
rewrite_conf(struct client_args *a, const char *add_line)
{
	return rewrite_conf_rename(a, add_line, NULL);
}

static int
client_add(struct client_args *a, const struct bft_config *cfg)
{
	static struct bft_client_key ck;
	char path[4096], err[1024], pk[65], line[256];
	int r;

	if (!bft_config_name_ok(a->name)) {
		bft_log("client names are 1..%d of [A-Za-z0-9._-]",
		    BFT_NAME_LEN);
		return 2;
	}
	for (unsigned i = 0; i < cfg->nclients; i++)
		if (strcmp(cfg->clients[i].name, a->name) == 0) {
			bft_log("client '%s' exists already; revoke it first",
			    a->name);
			return 1;
		}
	if (a->role == BFT_ROLE_RW) {
		/* Writers share the cluster's MAC keys; only the channel
		 * key is the new client's own. */
		if (admin_path_in(path, sizeof path, a->dir, "client.key") ||
		    bft_client_key_load(path, &ck, err, sizeof err) != 0) {
			bft_log("a writer needs the MAC keys of DIR/client.key: "
			    "%s", err);
			return 1;
		}
	} else {
		memset(&ck, 0, sizeof ck);
		memcpy(ck.cluster_id, cfg->cluster_id, BFT_CLUSTER_ID_LEN);
	}
	ck.role = a->role;
	strcpy(ck.name, a->name);
	bft_chan_keypair_new(&ck.chan);
	snprintf(line, sizeof line, "%s.key", a->name);
	if ((r = admin_path_in(path, sizeof path, a->dir, line)) != 0 ||
	    (r = bft_client_key_write(path, &ck)) != 0) {
		bft_log("%s: %s", path, strerror(-r));
		return 1;
	}
	bft_format_hex(ck.chan.pk, 32, pk);
	snprintf(line, sizeof line, "client.%s = %s %s", a->name,
	    a->role == BFT_ROLE_RW ? "rw" : "ro", pk);
	if (rewrite_conf(a, line) < 0) {
		unlink(path);
		return 1;
	}
	printf("added %s client '%s': key file %s; copy %s to every server "
	    "and send them SIGHUP\n", bft_role_str(a->role), a->name, path,
	    a->conf);
	return 0;
}

static int
client_revoke(struct client_args *a)
{
	int dropped = rewrite_conf(a, NULL);

	if (dropped < 0)
		return 1;
	if (dropped == 0) {
		bft_log("no client '%s' in %s", a->name, a->conf);
		return 1;
	}
	printf("revoked client '%s' in %s; copy it to every server and send "
	    "them SIGHUP (their connections are closed then)\n", a->name,
	    a->conf);
	return 0;
}

/* The config's entry for name, or NULL. */
static const struct bft_client_ident *
find_name(const struct bft_config *cfg, const char *name)
{
	for (unsigned i = 0; i < cfg->nclients; i++)
		if (strcmp(cfg->clients[i].name, name) == 0)
			return &cfg->clients[i];
	return NULL;
}

/*
 * rotate: DIR/NAME.key.new, NAME's key file with a new channel key, let
 * in as client NAME.next beside NAME's old key.  --finish: the old key
 * out, NAME.next named NAME, and DIR/NAME.key.new moved over NAME.key.
 */
static int
client_rotate(struct client_args *a, const struct bft_config *cfg,
    bool finish)
{
	static struct bft_client_key ck;
	char path[4096], newpath[4096], next[BFT_NAME_LEN + 8], err[1024];
	char pk[65], line[256];
	const struct bft_client_ident *cur = find_name(cfg, a->name);
	int r;

	if (snprintf(next, sizeof next, "%s.next", a->name) >=
	    (int)sizeof next || !bft_config_name_ok(next)) {
		bft_log("client '%s': its name is too long to rotate (at most "
		    "%d characters)", a->name, BFT_NAME_LEN - 5);
		return 2;
	}
	if (cur == NULL) {
		bft_log("no client '%s' in %s", a->name, a->conf);
		return 1;
	}
	snprintf(line, sizeof line, "%s.key", a->name);
	if (admin_path_in(path, sizeof path, a->dir, line) != 0)
		return 2;
	snprintf(line, sizeof line, "%s.key.new", a->name);
	if (admin_path_in(newpath, sizeof newpath, a->dir, line) != 0)
		return 2;
	if (finish) {
		if (find_name(cfg, next) == NULL) {
			bft_log("client '%s' has no rotation under way (bftblk "
			    "client rotate --name %s starts one)", a->name,
			    a->name);
			return 1;
		}
		if (rewrite_conf_rename(a, NULL, next) < 0)
			return 1;
		/* The old secret goes: a leaked copy is what this is for. */
		if (rename(newpath, path) != 0)
			bft_log("%s: %s (the configuration is rotated; remove "
			    "the old key file by hand)", newpath,
			    strerror(errno));
		printf("client '%s' rotated: only its new key is let in; copy "
		    "%s to every server and send them SIGHUP\n", a->name,
		    a->conf);
		return 0;
	}
	if (find_name(cfg, next) != NULL) {
		bft_log("client '%s' is being rotated already: install %s on "
		    "its host, then run rotate --finish", a->name, newpath);
		return 1;
	}
	if ((r = bft_client_key_load(path, &ck, err, sizeof err)) != 0) {
		bft_log("the client's key file is needed to keep its role and "
		    "keys: %s", err);
		return 1;
	}
	bft_chan_keypair_new(&ck.chan);
	if ((r = bft_client_key_write(newpath, &ck)) != 0) {
		bft_log("%s: %s%s", newpath, strerror(-r), r == -EEXIST ?
		    " (left by a rotation that did not finish? remove it)" :
		    "");
		bft_wipe(&ck, sizeof ck);
		return 1;
	}
	bft_format_hex(ck.chan.pk, 32, pk);
	bft_wipe(&ck, sizeof ck);
	snprintf(line, sizeof line, "client.%s = %s %s", next,
	    cur->role == BFT_ROLE_RW ? "rw" : "ro", pk);
	if (rewrite_conf(a, line) < 0) {
		unlink(newpath);
		return 1;
	}
	printf("client '%s': new key %s, let in beside the old one as '%s'; "
	    "copy %s to every server and send them SIGHUP, put the new key "
	    "file in place of the old on the client's host, then run "
	    "bftblk client rotate --dir DIR --name %s --finish\n", a->name,
	    newpath, next, a->conf, a->name);
	return 0;
}

static void
client_list(const struct bft_config *cfg)
{
	char fp[17];

	for (unsigned i = 0; i < cfg->nclients; i++) {
		bft_chan_fingerprint(cfg->clients[i].pk, fp);
		printf("%-32s %-10s %s\n", cfg->clients[i].name,
		    bft_role_str(cfg->clients[i].role), fp);
	}
}

int
admin_client(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "name", required_argument, NULL, 'n' },
		{ "role", required_argument, NULL, 'r' },
		{ "finish", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	static struct bft_config cfg;
	struct client_args a = { .role = BFT_ROLE_RW };
	const char *cmd;
	bool finish = false;
	char err[1024];
	int c;

	if (argc < 2) {
		admin_usage(stderr);
		return 2;
	}
	cmd = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "d:n:r:", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			finish = true;
			break;
		case 'd':
			a.dir = optarg;
			break;
		case 'n':
			a.name = optarg;
			break;
		case 'r':
			if (strcmp(optarg, "rw") == 0)
				a.role = BFT_ROLE_RW;
			else if (strcmp(optarg, "ro") == 0)
				a.role = BFT_ROLE_RO;
			else {
				bft_log("--role must be rw or ro");
				return 2;
			}
			break;
		default:
			admin_usage(stderr);
			return 2;
		}
	}
	if (a.dir == NULL || optind != argc ||
	    (strcmp(cmd, "list") != 0 && a.name == NULL)) {
		admin_usage(stderr);
		return 2;
	}
	if (admin_path_in(a.conf, sizeof a.conf, a.dir, "bftblk.conf") ||
	    admin_path_in(a.tmp, sizeof a.tmp, a.dir, ".bftblk.conf.new"))
		return 2;
	if (bft_config_load(a.conf, &cfg, err, sizeof err) != 0) {
		bft_log("%s", err);
		return 1;
	}
	if (strcmp(cmd, "list") == 0) {
		client_list(&cfg);
		return 0;
	}
	if (strcmp(cmd, "add") == 0)
		return client_add(&a, &cfg);
	if (strcmp(cmd, "revoke") == 0)
		return client_revoke(&a);
	if (strcmp(cmd, "rotate") == 0)
		return client_rotate(&a, &cfg, finish);
	bft_log("unknown client command '%s' (add, revoke, rotate, list)",
	    cmd);
	return 2;
}
