/*
 * Clients' stats files for `bftblk status --client-stats` (the
 * stats-file= option of libbftblk and the plugin): what each client saw
 * of each server, loaded into a struct status_client for status_format.c
 * to judge.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvfile.h"
#include "status_format.h"

const char *const status_cli_keys[CLI_KINDS] = {
	"bad-fragments", "forged-ts", "mismatched", "error-replies",
	"timeouts",
};

struct load_ctx {
	struct status_client *c;
	unsigned n;
	bool have_format, have_updated;
};

static int
number(const char *key, const char *value, uint64_t *out, char *err,
    size_t errlen)
{
	char *end;

	errno = 0;
	*out = strtoull(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || value[0] == '-') {
		snprintf(err, errlen, "%s: not a number: %s", key, value);
		return -1;
	}
	return 0;
}

/* server.I.KEY or server.I.recent.KEY. */
static int
server_key(struct load_ctx *x, const char *key, uint64_t v, char *err,
    size_t errlen)
{
	struct status_client_server *s;
	const char *rest;
	char *end;
	unsigned long i;
	bool recent = false;

	i = strtoul(key + 7, &end, 10);
	if (end == key + 7 || *end != '.' || i >= x->n) {
		snprintf(err, errlen, "%s: no such server", key);
		return -EINVAL;
	}
	s = &x->c->servers[i];
	rest = end + 1;
	if (strncmp(rest, "recent.", 7) == 0) {
		recent = true;
		rest += 7;
	}
	for (int k = 0; k < CLI_KINDS; k++)
		if (strcmp(rest, status_cli_keys[k]) == 0) {
			(recent ? s->recent : s->total)[k] = v;
			return 0;
		}
	if (recent)
		return 0;
	if (strcmp(rest, "connected") == 0)
		s->connected = v != 0;
	else if (strcmp(rest, "replies") == 0)
		s->replies = v;
	else if (strcmp(rest, "disconnects") == 0)
		s->disconnects = v;
	/* Keys this version does not know are a newer client's: fine. */
	return 0;
}

static int
on_pair(void *ctx, const char *key, const char *value, char *err,
    size_t errlen)
{
	struct load_ctx *x = ctx;
	struct status_client *c = x->c;
	uint64_t v = 0;

	if (strcmp(key, "client") == 0) {
		snprintf(c->name, sizeof c->name, "%s", value);
		return 0;
	}
	if (number(key, value, &v, err, errlen) != 0)
		return -EINVAL;
	if (strncmp(key, "server.", 7) == 0)
		return server_key(x, key, v, err, errlen);
	if (strcmp(key, "format") == 0) {
		if (v != 1) {
			snprintf(err, errlen, "format %" PRIu64 " is not one "
			    "this bftblk reads", v);
			return -EINVAL;
		}
		x->have_format = true;
	} else if (strcmp(key, "n") == 0) {
		if (v != x->n) {
			snprintf(err, errlen, "a client of a cluster of %"
			    PRIu64 " servers, not %u", v, x->n);
			return -EINVAL;
		}
		c->n = (unsigned)v;
	} else if (strcmp(key, "pid") == 0) {
		c->pid = (long)v;
	} else if (strcmp(key, "updated") == 0) {
		c->updated = (int64_t)v;
		x->have_updated = true;
	} else if (strcmp(key, "interval") == 0) {
		c->interval = (unsigned)v;
	} else if (strcmp(key, "closed") == 0) {
		c->closed = v != 0;
	}
	return 0;
}

int
status_client_load(const char *path, unsigned n, struct status_client *c,
    char *err, size_t errlen)
{
	struct load_ctx x = { .c = c, .n = n };

	memset(c, 0, sizeof *c);
	snprintf(c->path, sizeof c->path, "%s", path);
	if (bft_kv_parse(path, 0, on_pair, &x, err, errlen) != 0)
		return -1;
	if (!x.have_format || !x.have_updated || c->n != n ||
	    c->interval == 0) {
		snprintf(err, errlen, "%s: not a client stats file (no "
		    "format, n, interval or updated)", path);
		return -1;
	}
	return 0;
}
