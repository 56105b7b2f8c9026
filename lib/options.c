/*
 * A handle's options (bftblk_set_option): each parameter checked as it
 * is given, and kept as given, so that a handle opened from this one on
 * another volume (volume_open.c) can be given the same.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "error_int.h"
#include "handle_int.h"

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

static int set_option(struct bftblk *h, const char *k, const char *value);

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

static int
set_option(struct bftblk *h, const char *k, const char *value)
{
	uint64_t v;

	if (strcmp(k, "volume") == 0) {
		if (strlen(value) > BFTBLK_VOLUME_NAME_MAX)
			return bftblk__handle_fail(h, EINVAL, "volume names "
			    "are at most %u bytes", BFTBLK_VOLUME_NAME_MAX);
		return set_path(h, &h->volume_name, value);
	}
	if (strcmp(k, "volume-keys") == 0)
		return set_path(h, &h->volume_keys_dir, value);
	if (strcmp(k, "config") == 0)
		return set_path(h, &h->config_path, value);
	if (strcmp(k, "keys") == 0)
		return set_path(h, &h->keys_path, value);
	if (strcmp(k, "server-key") == 0)
		return set_path(h, &h->server_key_path, value);
	if (strcmp(k, "stats-file") == 0)
		return set_path(h, &h->stats_path, value);
	if (strcmp(k, "metrics") == 0) {
		char host[256];
		uint16_t port;

		if (bft_parse_hostport(value, host, sizeof host,
		    &port) != 0)
			return bftblk__handle_fail(h, EINVAL, "metrics must be "
			    "HOST:PORT, [ADDR]:PORT or :PORT");
		return set_path(h, &h->metrics_addr, value);
	}
	if (strcmp(k, "volume-key") == 0)
		return set_path(h, &h->volume_key_path, value);
	if (strcmp(k, "ec-backend") == 0)
		return set_path(h, &h->ec_backend, value);
	if (strcmp(k, "size") == 0) {
		if (bft_parse_size(value, &v) != 0 || v == 0 ||
		    v % BFT_BLOCK_SIZE)
			return bftblk__handle_fail(h, EINVAL, "size must be a "
			    "positive multiple of %u", BFT_BLOCK_SIZE);
		h->export_size = v;
	} else if (strcmp(k, "volume-id") == 0) {
		if (parse_num(value, BFT_ADDR_MAX_VOL, &v) != 0)
			return bftblk__handle_fail(h, EINVAL, "volume-id must "
			    "be 0..%u", BFT_ADDR_MAX_VOL);
		h->volume_id = (uint32_t)v;
	} else if (strcmp(k, "timeout") == 0) {
		if (parse_num(value, 3600, &v) != 0 || v == 0)
			return bftblk__handle_fail(h, EINVAL, "timeout must be "
			    "1..3600 seconds");
		h->timeout_s = (unsigned)v;
	} else if (strcmp(k, "io-timeout") == 0) {
		if (parse_num(value, 86400, &v) != 0 || v == 0)
			return bftblk__handle_fail(h, EINVAL, "io-timeout must "
			    "be 1..86400 seconds");
		h->io_timeout_s = (unsigned)v;
	} else if (strcmp(k, "writer-id") == 0) {
		if (parse_num(value, UINT64_MAX, &v) != 0 || v == 0)
			return bftblk__handle_fail(h, EINVAL, "writer-id must "
			    "be a non-zero integer");
		h->writer_id = v;
	} else if (strcmp(k, "t") == 0) {
		if (parse_num(value, BFT_MAX_T, &v) != 0)
			return bftblk__handle_fail(h, EINVAL, "t must be 0..%u",
			    BFT_MAX_T);
		h->want_t = (unsigned)v;
	} else if (strcmp(k, "lease") == 0) {
		if (parse_num(value, 3600, &v) != 0 || v < 1)
			return bftblk__handle_fail(h, EINVAL, "lease must be "
			    "1..3600 seconds");
		h->lease_s = (unsigned)v;
	} else if (strcmp(k, "encrypt") == 0 || strcmp(k, "sealed") == 0 ||
	    strcmp(k, "shared") == 0) {
		bool *dst = k[0] == 'e' ? &h->encrypt : k[1] == 'e' ?
		    &h->sealed : &h->shared;

		if (strcmp(value, "on") == 0 || strcmp(value, "1") == 0 ||
		    strcmp(value, "true") == 0 || strcmp(value, "yes") == 0)
			*dst = true;
		else if (strcmp(value, "off") == 0 || strcmp(value, "0") == 0 ||
		    strcmp(value, "false") == 0 || strcmp(value, "no") == 0)
			*dst = false;
		else
			return bftblk__handle_fail(h, EINVAL, "%s must be on "
			    "or off", k);
	} else if (strcmp(k, "cache") == 0) {
		if (bft_parse_size(value, &v) != 0)
			return bftblk__handle_fail(h, EINVAL, "cache: not a "
			    "size: %s", value);
		if (v > 0 && v < BFT_BLOCK_SIZE)
			return bftblk__handle_fail(h, EINVAL, "cache must be 0 "
			    "(off) or at least %u", BFT_BLOCK_SIZE);
		h->cache_bytes = v;
	} else {
		return bftblk__handle_fail(h, EINVAL, "unknown parameter '%s'",
		    k);
	}
	return 0;
}

const char *
bftblk_options_help(void)
{
	return BFTBLK_OPTIONS_HELP;
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

