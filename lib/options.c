/*
 * A handle's options (bftblk_set_option): each parameter checked as it
 * is given, and kept as given, so that a handle opened from this one on
 * another volume (volume_open.c) can be given the same.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "error_int.h"
#include "handle_int.h"
#include "options_int.h"

static int
set_path(struct bftblk *h, char **dst, const char *value)
{
	char *p = strdup(value);

	if (p == NULL)
		return bftblk__handle_fail(h, ENOMEM, "out of memory");
	free(*dst);
	*dst = p;
	return 0;
}

/* A decimal or 0x number up to max; 0 or -1. */
static int
parse_num(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0' || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Keeps k=value, so that bftblk_open_volume can give a new handle h's. */
static int
remember(struct bftblk *h, const char *k, const char *value)
{
	char **opts = realloc(h->opts, (h->nopts + 1) * sizeof *opts);
	size_t len = strlen(k) + strlen(value) + 2;

	if (opts == NULL)
		return bftblk__handle_fail(h, ENOMEM, "out of memory");
	h->opts = opts;
	if ((opts[h->nopts] = malloc(len)) == NULL)
		return bftblk__handle_fail(h, ENOMEM, "out of memory");
	snprintf(opts[h->nopts++], len, "%s=%s", k, value);
	return 0;
}

/*
 * Setters, called with the value checked as its type says (v its number
 * for OPT_NUM and OPT_SIZE); they check what is particular to them.
 */
static int
set_volume(struct bftblk *h, const char *value, uint64_t v)
{
	(void)v;
	/* NAME, or NAME@SNAPSHOT: a snapshot, read-only. */
	if (strlen(value) > 2 * BFTBLK_VOLUME_NAME_MAX + 1)
		return bftblk__handle_fail(h, EINVAL, "volume names are at "
		    "most %u bytes", BFTBLK_VOLUME_NAME_MAX);
	return set_path(h, &h->volume_name, value);
}

static int
set_metrics(struct bftblk *h, const char *value, uint64_t v)
{
	char host[256];
	uint16_t port;

	(void)v;
	if (bft_parse_hostport(value, host, sizeof host, &port) != 0)
		return bftblk__handle_fail(h, EINVAL, "metrics must be "
		    "HOST:PORT, [ADDR]:PORT or :PORT");
	return set_path(h, &h->metrics_addr, value);
}

static int
set_size(struct bftblk *h, const char *value, uint64_t v)
{
	(void)value;
	if (v == 0 || v % BFT_BLOCK_SIZE)
		return bftblk__handle_fail(h, EINVAL, "size must be a "
		    "positive multiple of %u", BFT_BLOCK_SIZE);
	h->export_size = v;
	return 0;
}

static int
set_cache(struct bftblk *h, const char *value, uint64_t v)
{
	(void)value;
	if (v > 0 && v < BFT_BLOCK_SIZE)
		return bftblk__handle_fail(h, EINVAL, "cache must be 0 (off) "
		    "or at least %u", BFT_BLOCK_SIZE);
	h->cache_bytes = v;
	return 0;
}

/* One setter per field, each a line: the table names them. */
#define PATH_SETTER(fn, field)						\
static int								\
fn(struct bftblk *h, const char *value, uint64_t v)			\
{									\
	(void)v;							\
	return set_path(h, &h->field, value);				\
}
#define NUM_SETTER(fn, field, type)					\
static int								\
fn(struct bftblk *h, const char *value, uint64_t v)			\
{									\
	(void)value;							\
	h->field = (type)v;						\
	return 0;							\
}
PATH_SETTER(set_config, config_path)
PATH_SETTER(set_keys, keys_path)
PATH_SETTER(set_server_key, server_key_path)
PATH_SETTER(set_volume_keys, volume_keys_dir)
PATH_SETTER(set_ec_backend, ec_backend)
PATH_SETTER(set_volume_key, volume_key_path)
PATH_SETTER(set_stats_file, stats_path)
NUM_SETTER(set_volume_id, volume_id, uint32_t)
NUM_SETTER(set_timeout, timeout_s, unsigned)
NUM_SETTER(set_io_timeout, io_timeout_s, unsigned)
NUM_SETTER(set_senders, senders, int)
NUM_SETTER(set_writer_id, writer_id, uint64_t)
NUM_SETTER(set_t, want_t, unsigned)
NUM_SETTER(set_lease, lease_s, unsigned)
NUM_SETTER(set_sealed, sealed, bool)
NUM_SETTER(set_shared, shared, bool)
NUM_SETTER(set_encrypt, encrypt, bool)

/*
 * Every option, in the order the help lists them: what it is called,
 * how its value is checked, what the help says (a '\n' starts a line
 * of its own, indented) and what takes it.  bftblk_set_option and
 * bftblk_options_help both read this table and nothing else, so an
 * option cannot be accepted and left out of the help, or the reverse.
 */
const struct bftblk__option bftblk__options[] = {
	{ "config", "FILE", OPT_PATH, 0, 0, NULL,
	    "(required) cluster configuration, bftblk.conf(5)", set_config },
	{ "keys", "FILE", OPT_PATH, 0, 0, NULL,
	    "client key file from bftblk keygen or bftblk\n"
	    "client add (role ro: read-only export)", set_keys },
	{ "server-key", "FILE", OPT_PATH, 0, 0, NULL,
	    "instead of keys=: a server's key file; connects as\n"
	    "that server, a read-only peer of the others", set_server_key },
	{ "sealed", "on|off", OPT_BOOL, 0, 0, NULL,
	    "with server-key=: read what encrypt=on writers\n"
	    "sealed as it is, unopened (a rebuilding server)", set_sealed },
	{ "size", "SIZE", OPT_SIZE, 0, 0, NULL,
	    "export only the first SIZE bytes", set_size },
	{ "volume", "NAME", OPT_PATH, 0, 0, NULL,
	    "serve volume NAME, or NAME@SNAP: a snapshot, read-only",
	    set_volume },
	{ "volume-keys", "DIR", OPT_PATH, 0, 0, NULL,
	    "where encrypted volumes' keys are, as NAME.key\n"
	    "(default: volumes/ beside config=)", set_volume_keys },
	{ "volume-id", "N", OPT_NUM, 0, BFT_ADDR_MAX_VOL, NULL,
	    "serve volume N of the cluster (default 0, the disk\n"
	    "bftblk.conf sizes); another volume needs size=", set_volume_id },
	{ "shared", "on|off", OPT_BOOL, 0, 0, NULL,
	    "off (default): take the volume's lease, one writer\n"
	    "at a time; on: no lease, the writers coordinate", set_shared },
	{ "lease", "SECS", OPT_NUM, 1, 3600, "seconds",
	    "with shared=off, the lease lapses SECS after its\n"
	    "holder's last renewal (default 15)", set_lease },
	{ "timeout", "SECS", OPT_NUM, 1, 3600, "seconds",
	    "per-round timeout (default 10)", set_timeout },
	{ "io-timeout", "SECS", OPT_NUM, 1, 86400, "seconds",
	    "an I/O that cannot finish fails with EIO after this\n"
	    "many seconds, naming silent servers (default 30)",
	    set_io_timeout },
	{ "senders", "on|off", OPT_BOOL, 0, 0, NULL,
	    "a thread per server seals and sends its frames\n"
	    "(default on with more than two CPUs; off: the\n"
	    "event loop's thread does it)", set_senders },
	{ "writer-id", "N", OPT_NUM, 1, UINT64_MAX, NULL,
	    "this writer's id (default random)", set_writer_id },
	{ "t", "T", OPT_NUM, 0, BFT_MAX_T, NULL,
	    "check that the cluster tolerates T faults", set_t },
	{ "ec-backend", "NAME", OPT_PATH, 0, 0, NULL,
	    "liberasurecode backend (default isa_l_rs_cauchy)",
	    set_ec_backend },
	{ "cache", "SIZE", OPT_SIZE, 0, 0, NULL,
	    "block cache for small writes (default 128M, 0 off)", set_cache },
	{ "encrypt", "on|off", OPT_BOOL, 0, 0, NULL,
	    "seal every block with the volume key (default off)",
	    set_encrypt },
	{ "volume-key", "FILE", OPT_PATH, 0, 0, NULL,
	    "volume key from bftblk volume-key (for encrypt=on)",
	    set_volume_key },
	{ "stats-file", "FILE", OPT_PATH, 0, 0, NULL,
	    "rewrite FILE every 10 s with what this client saw\n"
	    "of each server (bftblk status --client-stats)", set_stats_file },
	{ "metrics", "HOST:PORT", OPT_PATH, 0, 0, NULL,
	    "serve Prometheus metrics at http://HOST:PORT/metrics\n"
	    "([ADDR]:PORT for IPv6; bftblk_client_* names)", set_metrics },
};
const size_t bftblk__noptions =
    sizeof bftblk__options / sizeof bftblk__options[0];

static const struct bftblk__option *
find_option(const char *k)
{
	for (size_t i = 0; i < bftblk__noptions; i++)
		if (strcmp(bftblk__options[i].name, k) == 0)
			return &bftblk__options[i];
	return NULL;
}

/* on, 1, true, yes or off, 0, false, no; 1, 0, or -1 for anything else. */
static int
parse_bool(const char *s)
{
	if (strcmp(s, "on") == 0 || strcmp(s, "1") == 0 ||
	    strcmp(s, "true") == 0 || strcmp(s, "yes") == 0)
		return 1;
	if (strcmp(s, "off") == 0 || strcmp(s, "0") == 0 ||
	    strcmp(s, "false") == 0 || strcmp(s, "no") == 0)
		return 0;
	return -1;
}

/* An unknown key is told the known ones, from the table. */
static int
unknown(struct bftblk *h, const char *k)
{
	char names[512];
	size_t len = 0;

	names[0] = '\0';
	for (size_t i = 0; i < bftblk__noptions && len < sizeof names; i++)
		len += (size_t)snprintf(names + len, sizeof names - len,
		    "%s%s", i > 0 ? " " : "", bftblk__options[i].name);
	return bftblk__handle_fail(h, EINVAL, "unknown option '%s'; the "
	    "options are: %s", k, names);
}

static int
set_option(struct bftblk *h, const char *k, const char *value)
{
	const struct bftblk__option *o = find_option(k);
	uint64_t v = 0;
	int b;

	if (o == NULL)
		return unknown(h, k);
	switch (o->type) {
	case OPT_PATH:
		break;
	case OPT_NUM:
		if (parse_num(value, o->max, &v) == 0 && v >= o->min)
			break;
		if (o->max == UINT64_MAX)
			return bftblk__handle_fail(h, EINVAL, "%s must be an "
			    "integer, at least %" PRIu64, k, o->min);
		return bftblk__handle_fail(h, EINVAL, "%s must be %" PRIu64
		    "..%" PRIu64 "%s%s", k, o->min, o->max,
		    o->unit != NULL ? " " : "", o->unit != NULL ? o->unit : "");
	case OPT_SIZE:
		if (bft_parse_size(value, &v) != 0)
			return bftblk__handle_fail(h, EINVAL, "%s: not a size: "
			    "%s", k, value);
		break;
	case OPT_BOOL:
		if ((b = parse_bool(value)) < 0)
			return bftblk__handle_fail(h, EINVAL, "%s must be on "
			    "or off", k);
		v = (uint64_t)b;
		break;
	}
	return o->set(h, value, v);
}

int
bftblk_set_option(struct bftblk *h, const char *k, const char *value)
{
	int r;

	if (h->loaded)
		return bftblk__handle_fail(h, EBUSY, "options must come before "
		    "loading");
	if ((r = set_option(h, k, value)) != 0)
		return r;
	return remember(h, k, value);
}

/*
 * The help, made from the table once: "name=ARG" in 15 columns and a
 * blank, the text's further lines indented to match.  A fixed buffer,
 * so that the text is there even before anything could be allocated
 * (the plugin hands it to nbdkit as it is loaded); test_options checks
 * that every option fits.
 */
static char help[4096];
static pthread_once_t help_once = PTHREAD_ONCE_INIT;

static void
make_help(void)
{
	size_t len = 0;

	for (size_t i = 0; i < bftblk__noptions && len < sizeof help; i++) {
		const struct bftblk__option *o = &bftblk__options[i];
		char head[32];
		const char *t, *nl;

		snprintf(head, sizeof head, "%s=%s", o->name, o->arg);
		len += (size_t)snprintf(help + len, sizeof help - len,
		    "%s%-15s ", i > 0 ? "\n" : "", head);
		for (t = o->help; len < sizeof help; t = nl + 1) {
			nl = strchr(t, '\n');
			len += (size_t)snprintf(help + len, sizeof help - len,
			    "%.*s%s", nl != NULL ? (int)(nl - t) :
			    (int)strlen(t), t, nl != NULL ?
			    "\n                " : "");
			if (nl == NULL)
				break;
		}
	}
}

const char *
bftblk_options_help(void)
{
	pthread_once(&help_once, make_help);
	return help;
}

/* "k=v k=v": the plugin's parameters, separated by blanks. */
int
bftblk__set_options(struct bftblk *h, const char *options)
{
	char *copy, *save, *tok;
	int r = 0;

	if (options == NULL)
		return 0;
	if ((copy = strdup(options)) == NULL)
		return bftblk__handle_fail(h, ENOMEM, "out of memory");
	for (tok = strtok_r(copy, " \t\n", &save); tok != NULL && r == 0;
	    tok = strtok_r(NULL, " \t\n", &save)) {
		char *eq = strchr(tok, '=');

		if (eq == NULL) {
			r = bftblk__handle_fail(h, EINVAL, "option '%s' is not "
			    "key=value", tok);
			break;
		}
		*eq = '\0';
		r = bftblk_set_option(h, tok, eq + 1);
	}
	free(copy);
	return r;
}

