/*
 * bftblk volume: the cluster's named volumes (create, list, info,
 * resize, delete), through libbftblk's volume table.  Each is an NBD
 * export of the plugin by its name.  What a volume takes on the servers
 * comes from each server's own VOLUMES answer: the table is the truth
 * of what exists, the servers of what they store.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "bftblk.h"
#include "config.h"
#include "crypto.h"
#include "keys.h"
#include "log.h"
#include "progress.h"
#include "session.h"
#include "status_format.h"
#include "summary.h"
#include "volcrypt.h"

/* What the servers store of each volume id. */
struct used {
	unsigned answered;		/* servers that said */
	size_t n;
	struct { uint32_t id; uint64_t live; } v[BFT_VOLLIST_MAX];
};

struct args {
	const char *dir, *keys, *name, *size, *from;
	bool encrypt, force, json;
	unsigned timeout_s;
};

bool admin_verbose;

/*
 * Warnings and errors: what a command did, it prints itself; with
 * --verbose also the library's account of it (the admin lock, a
 * snapshot's cut).
 */
static void
lib_log(void *opaque, enum bftblk_log_level level, const char *msg)
{
	(void)opaque;
	if (level <= BFTBLK_LOG_WARN ||
	    (admin_verbose && level <= BFTBLK_LOG_INFO))
		bft_log("%s", msg);
}

/* Adds what server i stores of each volume into u. */
static void
ask_used(const struct bft_config *cfg, const struct bft_client_key *key,
    unsigned i, unsigned timeout_ms, struct used *u)
{
	struct bft_session_fail f;
	struct bft_session s;
	struct bft_msg *req = calloc(1, sizeof *req);
	struct bft_msg *rep = calloc(1, sizeof *rep);
	const char *why;

	if (req == NULL || rep == NULL ||
	    bft_session_open(&s, cfg, key, i, timeout_ms, true, &f) != 0)
		goto out;
	req->type = BFT_VOLUMES;
	if (bft_session_call(&s, req, rep, &why) == BFT_OK) {
		u->answered++;
		for (uint32_t e = 0; e < rep->nentries; e++) {
			uint64_t id, end, live;
			size_t k;

			bft_volentry_get(rep->entries +
			    (size_t)e * BFT_VOLENTRY_LEN, &id, &end, &live);
			for (k = 0; k < u->n && u->v[k].id != id; k++)
				;
			if (k == u->n) {
				if (u->n == BFT_VOLLIST_MAX)
					continue;
				u->v[u->n].id = (uint32_t)id;
				u->v[u->n++].live = 0;
			}
			u->v[k].live += live;
		}
	}
	bft_session_close(&s);
out:
	free(req);
	free(rep);
}

static uint64_t
used_of(const struct used *u, uint32_t id)
{
	for (size_t k = 0; k < u->n; k++)
		if (u->v[k].id == id)
			return u->v[k].live;
	return 0;
}

/* Fills u from every server; a server that does not answer is skipped. */
static int
gather_used(const struct args *a, struct used *u)
{
	static struct bft_config cfg;
	static struct bft_client_key key;
	char err[512];

	memset(u, 0, sizeof *u);
	if (admin_load_cluster(a->dir, a->keys, &cfg, &key, err,
	    sizeof err) != 0)
		return -1;
	for (unsigned i = 0; i < cfg.n; i++)
		ask_used(&cfg, &key, i, a->timeout_s * 1000, u);
	bft_wipe(&key, sizeof key);
	return 0;
}

struct bftblk *
admin_open_cluster(const char *dir, const char *keys, unsigned timeout_s)
{
	return admin_open_cluster_as(dir, keys, timeout_s, false);
}

struct bftblk *
admin_open_cluster_as(const char *dir, const char *keys, unsigned timeout_s,
    bool sealed)
{
	char conf[ADMIN_PATH_MAX], keypath[ADMIN_PATH_MAX], opts[128];
	struct bftblk *h;

	if (admin_cluster_paths(dir, keys, conf, keypath) != 0)
		return NULL;
	if ((h = bftblk_create()) == NULL) {
		bft_log("out of memory");
		return NULL;
	}
	bftblk_set_log(h, lib_log, NULL);
	/*
	 * Short timeouts: the admin lock waits out one I/O timeout before
	 * it trusts its claim, so that is what every change costs.
	 */
	snprintf(opts, sizeof opts, "%u", timeout_s);
	if (bftblk_set_option(h, "config", conf) != 0 ||
	    bftblk_set_option(h, "keys", keypath) != 0 ||
	    bftblk_set_option(h, "timeout", opts) != 0 ||
	    bftblk_set_option(h, "io-timeout", opts) != 0 ||
	    bftblk_set_option(h, "cache", "0") != 0 ||
	    /* It writes the table's registers, never volume 0's blocks. */
	    bftblk_set_option(h, "shared", "on") != 0 ||
	    bftblk_set_option(h, "sealed", sealed ? "on" : "off") != 0 ||
	    bftblk_connect(h) != 0) {
		bft_log("%s", bftblk_errmsg(h));
		bftblk_close(h);
		return NULL;
	}
	return h;
}

static void
human(uint64_t v, char *out, size_t len)
{
	status_human_bytes(v, out, len);
}

static void
print_json_string(const char *s)
{
	putchar('"');
	for (; *s; s++)		/* names are [A-Za-z0-9._-]: no escapes */
		putchar(*s);
	putchar('"');
}

static int
cmd_list(const struct args *a, struct bftblk *h)
{
	struct bftblk_volume *v;
	static struct used u;
	char size[32], used[32];
	size_t n;

	if (bftblk_volume_list(h, &v, &n) != 0) {
		bft_log("%s", bftblk_errmsg(h));
		return 1;
	}
	gather_used(a, &u);
	if (a->json) {
		printf("{\"servers_answered\": %u, \"volumes\": [", u.answered);
		for (size_t i = 0; i < n; i++) {
			printf("%s\n  {\"name\": ", i ? "," : "");
			print_json_string(v[i].name);
			printf(", \"id\": %" PRIu32 ", \"size\": %" PRIu64
			    ", \"used\": %" PRIu64 ", \"encrypted\": %s, "
			    "\"state\": \"%s\", \"generation\": %" PRIu64 "}",
			    v[i].id, v[i].size, used_of(&u, v[i].id),
			    v[i].encrypted ? "true" : "false", v[i].deleting ?
			    "deleting" : "live", v[i].generation);
		}
		printf("\n]}\n");
	} else {
		printf("%-24s %9s %10s %10s %-9s %s\n", "NAME", "ID", "SIZE",
		    "USED", "ENCRYPTED", "STATE");
		for (size_t i = 0; i < n; i++) {
			human(v[i].size, size, sizeof size);
			human(used_of(&u, v[i].id), used, sizeof used);
			printf("%-24s %9" PRIu32 " %10s %10s %-9s %s\n",
			    v[i].name, v[i].id, size, used, v[i].encrypted ?
			    "yes" : "no", v[i].deleting ? "deleting" : "live");
		}
		printf("%zu volume%s; USED is what the %u server%s that "
		    "answered store, all copies together\n", n, n == 1 ? "" :
		    "s", u.answered, u.answered == 1 ? "" : "s");
	}
	free(v);
	return 0;
}

static int
cmd_info(const struct args *a, struct bftblk *h)
{
	struct bftblk_volume v;
	static struct used u;
	char size[32], used[32], when[64];
	char pvol[BFTBLK_VOLUME_NAME_MAX + 1], psnap[BFTBLK_VOLUME_NAME_MAX + 1];
	time_t t;
	struct tm tm;

	if (bftblk_volume_get(h, a->name, &v) != 0) {
		bft_log("%s", bftblk_errmsg(h));
		return 1;
	}
	gather_used(a, &u);
	t = (time_t)v.created;
	gmtime_r(&t, &tm);
	strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
	if (bftblk_volume_parent(h, a->name, pvol, sizeof pvol, psnap,
	    sizeof psnap) != 0) {
		bft_log("%s", bftblk_errmsg(h));
		return 1;
	}
	human(v.size, size, sizeof size);
	human(used_of(&u, v.id), used, sizeof used);
	if (psnap[0] != '\0')
		printf("parent: %s@%s (a clone: blocks it never wrote read "
		    "from there)\n", pvol, psnap);
	printf("name: %s\nid: %" PRIu32 "\nsize: %" PRIu64 " (%s)\n"
	    "used on servers: %" PRIu64 " (%s, %u servers answered)\n"
	    "state: %s\nencrypted: %s%s%s\ncreated: %s\nresized: %" PRIu64
	    " times\nexport: nbd://HOST/%s (the plugin serves it by name)\n",
	    v.name, v.id, v.size, size, used_of(&u, v.id), used, u.answered,
	    v.deleting ? "deleting" : "live", v.encrypted ? "yes, key id " :
	    "no", v.key_id, v.encrypted ? " (DIR/volumes/NAME.key)" : "",
	    when, v.generation, v.name);
	return 0;
}

/* --encrypt: a new key in DIR/volumes/NAME.key, which must not exist. */
static int
make_key(const struct args *a, char *path, size_t len)
{
	struct bft_volume_key vk = { .aead = bft_aead_default() };
	char sub[ADMIN_PATH_MAX];
	int n;

	if (admin_path_in(sub, sizeof sub, a->dir, "volumes") != 0)
		return -1;
	if (mkdir(sub, 0700) != 0 && errno != EEXIST) {
		bft_log("%s: %s", sub, strerror(errno));
		return -1;
	}
	n = snprintf(path, len, "%s/%s.key", sub, a->name);
	if (n < 0 || (size_t)n >= len)
		return -1;
	bft_random(vk.key, sizeof vk.key);
	n = bft_volume_key_write(path, &vk);
	bft_wipe(&vk, sizeof vk);
	if (n != 0) {
		bft_log("%s: %s%s", path, strerror(-n), n == -EEXIST ?
		    " (a key of an earlier volume of that name? move it "
		    "away first: it is never replaced)" : "");
		return -1;
	}
	return 0;
}

static int
cmd_create(const struct args *a, struct bftblk *h)
{
	char key[ADMIN_PATH_MAX], size[32];
	struct bftblk_volume v;
	uint64_t bytes;

	if (bft_parse_size(a->size, &bytes) != 0) {
		bft_log("--size: not a size: %s", a->size);
		return 2;
	}
	if (a->encrypt && make_key(a, key, sizeof key) != 0)
		return 1;
	if (bftblk_volume_create(h, a->name, bytes, a->encrypt ? key : NULL,
	    &v) != 0) {
		bft_log("%s", bftblk_errmsg(h));
		if (a->encrypt)
			unlink(key);
		return 1;
	}
	human(v.size, size, sizeof size);
	printf("created volume '%s': id %" PRIu32 ", %s%s%s\n", v.name, v.id,
	    size, a->encrypt ? ", encrypted with " : "", a->encrypt ? key :
	    "");
	return 0;
}

static int
cmd_resize(const struct args *a, struct bftblk *h)
{
	uint64_t bytes;

	if (bft_parse_size(a->size, &bytes) != 0) {
		bft_log("--size: not a size: %s", a->size);
		return 2;
	}
	if (bftblk_volume_resize(h, a->name, bytes, a->force) != 0) {
		bft_log("%s", bftblk_errmsg(h));
		return 1;
	}
	printf("resized volume '%s' to %" PRIu64 " bytes\n", a->name, bytes);
	return 0;
}

static int
cmd_delete(const struct args *a, struct bftblk *h)
{
	unsigned pending = 0;

	if (bftblk_volume_delete(h, a->name, a->force, &pending) != 0) {
		bft_log("%s", bftblk_errmsg(h));
		return 1;
	}
	if (pending > 0)
		printf("deleted volume '%s'; %u server%s did not drop its "
		    "blocks yet, and will at a later volume command\n",
		    a->name, pending, pending == 1 ? "" : "s");
	else
		printf("deleted volume '%s'; every server dropped its "
		    "blocks\n", a->name);
	return 0;
}

/*
 * An encrypted parent's key, copied to DIR/volumes/CLONE.key: the clone
 * reads the parent's blocks, so it is opened with the same key.
 */
static int
copy_key(const struct args *a, const char *parent, char *path, size_t len)
{
	char from[ADMIN_PATH_MAX], sub[ADMIN_PATH_MAX], err[256];
	struct bft_volume_key vk;
	int n;

	if (admin_path_in(sub, sizeof sub, a->dir, "volumes") != 0)
		return -1;
	n = snprintf(from, sizeof from, "%s/%s.key", sub, parent);
	if (n < 0 || (size_t)n >= sizeof from)
		return -1;
	n = snprintf(path, len, "%s/%s.key", sub, a->name);
	if (n < 0 || (size_t)n >= len)
		return -1;
	if ((n = bft_volume_key_load(from, &vk, err, sizeof err)) != 0) {
		bft_log("the parent is encrypted, and its key cannot be read: "
		    "%s", err);
		return -1;
	}
	n = bft_volume_key_write(path, &vk);
	bft_wipe(&vk, sizeof vk);
	if (n != 0) {
		bft_log("%s: %s", path, strerror(-n));
		return -1;
	}
	return 0;
}

/* --from V@S: a new volume that reads as S until written. */
static int
cmd_clone(const struct args *a, struct bftblk *h)
{
	char vol[BFTBLK_VOLUME_NAME_MAX + 1], key[ADMIN_PATH_MAX];
	const char *at = strchr(a->from, '@');
	struct bftblk_volume v;

	if (at == NULL || (size_t)(at - a->from) >= sizeof vol) {
		bft_log("--from: '%s' is not VOLUME@SNAPSHOT", a->from);
		return 2;
	}
	memcpy(vol, a->from, (size_t)(at - a->from));
	vol[at - a->from] = '\0';
	if (bftblk_volume_clone(h, vol, at + 1, a->name, &v) != 0) {
		bft_log("%s", bftblk_errmsg(h));
		return 1;
	}
	if (v.encrypted && copy_key(a, vol, key, sizeof key) != 0) {
		bft_log("clone '%s' was made; copy %s's key to "
		    "DIR/volumes/%s.key by hand", a->name, vol, a->name);
		return 1;
	}
	printf("cloned volume '%s' from '%s': id %" PRIu32 ", %" PRIu64
	    " bytes%s%s\n", v.name, a->from, v.id, v.size, v.encrypted ?
	    ", encrypted with a copy of its parent's key, " : "",
	    v.encrypted ? key : "");
	return 0;
}

static int
cmd_flatten(const struct args *a, struct bftblk *h)
{
	struct admin_progress pr;

	admin_progress_start(&pr, "flatten", "blocks", 1);
	if (bftblk_volume_flatten(h, a->name, admin_progress_fn, &pr) != 0) {
		bft_log("%s", bftblk_errmsg(h));
		return 1;
	}
	printf("flattened volume '%s': it no longer reads from a parent\n",
	    a->name);
	return 0;
}

int
admin_volume(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "keys", required_argument, NULL, 'k' },
		{ "name", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "from", required_argument, NULL, 'F' },
		{ "timeout", required_argument, NULL, 't' },
		{ "encrypt", no_argument, NULL, 'e' },
		{ "force", no_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct {
		const char *name;
		int (*fn)(const struct args *, struct bftblk *);
		bool needs_name, needs_size;
	} cmds[] = {
		{ "list", cmd_list, false, false },
		{ "info", cmd_info, true, false },
		{ "create", cmd_create, true, true },
		{ "resize", cmd_resize, true, true },
		{ "delete", cmd_delete, true, false },
		{ "clone", cmd_clone, true, false },
		{ "flatten", cmd_flatten, true, false },
	};
	struct args a = { .timeout_s = 3 };
	struct bftblk *h;
	size_t ci;
	int c, rc;

	if (argc < 2) {
		admin_usage(stderr);
		return 2;
	}
	for (ci = 0; ci < sizeof cmds / sizeof cmds[0]; ci++)
		if (strcmp(argv[1], cmds[ci].name) == 0)
			break;
	if (ci == sizeof cmds / sizeof cmds[0]) {
		bft_log("unknown volume command '%s'", argv[1]);
		admin_usage(stderr);
		return 2;
	}
	optind = 2;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': a.dir = optarg; break;
		case 'k': a.keys = optarg; break;
		case 'n': a.name = optarg; break;
		case 's': a.size = optarg; break;
		case 'F': a.from = optarg; break;
		case 'e': a.encrypt = true; break;
		case 'f': a.force = true; break;
		case 'j': a.json = true; break;
		case 't':
			if (admin_parse_timeout(optarg, &a.timeout_s) != 0)
				return 2;
			break;
		case 'h':
			admin_usage(stdout);
			return 0;
		default:
			admin_usage(stderr);
			return 2;
		}
	}
	if (a.dir == NULL || optind != argc ||
	    (cmds[ci].needs_name && a.name == NULL) ||
	    (cmds[ci].needs_size && a.size == NULL) ||
	    ((cmds[ci].fn == cmd_clone) != (a.from != NULL))) {
		bft_log("volume %s needs --dir DIR%s%s%s", cmds[ci].name,
		    cmds[ci].needs_name ? " --name NAME" : "",
		    cmds[ci].needs_size ? " --size SIZE" : "",
		    cmds[ci].fn == cmd_clone ? " --from VOLUME@SNAPSHOT" :
		    " (--from is clone's)");
		return 2;
	}
	if ((h = admin_open_cluster(a.dir, a.keys, a.timeout_s)) == NULL)
		return 1;
	rc = cmds[ci].fn(&a, h);
	bftblk_close(h);
	return rc;
}
