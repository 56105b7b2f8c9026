/* bftblk.conf(5): loading, validation and writing. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "kvfile.h"
#include "wire.h"

int
bft_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -EINVAL;
	switch (*end) {
	case '\0':			break;
	case 'k': case 'K':	shift = 10; end++; break;
	case 'm': case 'M':	shift = 20; end++; break;
	case 'g': case 'G':	shift = 30; end++; break;
	case 't': case 'T':	shift = 40; end++; break;
	default:		return -EINVAL;
	}
	if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
bft_parse_hex(const char *s, uint8_t *out, size_t len)
{
	if (strlen(s) != 2 * len)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

void
bft_format_hex(const uint8_t *in, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * len] = '\0';
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out);

struct load_ctx {
	struct bft_config *cfg;
	int have_id, have_t, have_size;
	uint32_t have_server;		/* bitmask of server.I seen */
	uint32_t have_pk;		/* bitmask of server.I.pk seen */
};

static int parse_uint(const char *s, unsigned long max, unsigned long *out);

/*
 * I of a key "server.I" + a suffix suffix_len long (".pk", ".pk.next"),
 * which the caller matched, into *v: 0, or -1 when I is no server index.
 */
static int
server_key_index(const char *key, size_t suffix_len, unsigned long *v)
{
	size_t il = strlen(key) - strlen("server.") - suffix_len;
	char idx[8];

	if (il >= sizeof idx)
		il = sizeof idx - 1;
	memcpy(idx, key + strlen("server."), il);
	idx[il] = '\0';
	return parse_uint(idx, BFT_MAX_N - 1, v) ? -1 : 0;
}

/*
 * "server.I.pk.next": the key server I is being rotated to.  A line of
 * its own rather than a second value on .pk, so that dropping it (at
 * the end of a rotation) leaves the rest of the file as it was.
 */
static int
load_pk_next(struct load_ctx *ctx, const char *key, const char *value,
    char *err, size_t errlen)
{
	struct bft_config *cfg = ctx->cfg;
	unsigned long v;

	if (server_key_index(key, strlen(".pk.next"), &v) != 0 ||
	    bft_parse_hex(value, cfg->server_pk_next[v], 32)) {
		snprintf(err, errlen, "bad %s (want server.I.pk.next = 64 hex "
		    "digits)", key);
		return -EINVAL;
	}
	if (cfg->has_pk_next & 1u << v) {
		snprintf(err, errlen, "%s listed twice", key);
		return -EINVAL;
	}
	cfg->has_pk_next |= 1u << v;
	return 0;
}

/* Client names appear in logs and file names: keep them plain. */
bool
bft_config_name_ok(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > BFT_NAME_LEN)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' &&
		    *s != '.')
			return false;
	return true;
}

static int
load_client(struct bft_config *cfg, const char *name, const char *value,
    char *err, size_t errlen)
{
	struct bft_client_ident *ci;
	const char *sp = strchr(value, ' ');

	if (!bft_config_name_ok(name)) {
		snprintf(err, errlen, "client name '%s' must be 1..%d of "
		    "[A-Za-z0-9._-]", name, BFT_NAME_LEN);
		return -EINVAL;
	}
	if (cfg->nclients == BFT_MAX_CLIENTS) {
		snprintf(err, errlen, "more than %d clients", BFT_MAX_CLIENTS);
		return -EINVAL;
	}
	for (unsigned i = 0; i < cfg->nclients; i++)
		if (strcmp(cfg->clients[i].name, name) == 0) {
			snprintf(err, errlen, "client '%s' listed twice", name);
			return -EINVAL;
		}
	ci = &cfg->clients[cfg->nclients];
	if (sp != NULL && sp - value == 2 && strncmp(value, "rw", 2) == 0)
		ci->role = BFT_ROLE_RW;
	else if (sp != NULL && sp - value == 2 && strncmp(value, "ro", 2) == 0)
		ci->role = BFT_ROLE_RO;
	else
		goto bad;
	while (*sp == ' ')
		sp++;
	if (bft_parse_hex(sp, ci->pk, sizeof ci->pk))
		goto bad;
	if (bft_config_find_client(cfg, ci->pk) != NULL) {
		snprintf(err, errlen, "client '%s' has the key of another "
		    "client", name);
		return -EINVAL;
	}
	strcpy(ci->name, name);
	cfg->nclients++;
	return 0;
bad:
	snprintf(err, errlen, "client.%s must be 'rw KEY' or 'ro KEY' with a "
	    "64-hex-digit public key", name);
	return -EINVAL;
}

static int
parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return (errno || *end || *out > max) ? -EINVAL : 0;
}

static int
parse_addr(const char *value, struct bft_server_addr *a)
{
	const char *colon = strrchr(value, ':'), *host = value;
	unsigned long port;
	size_t hl;

	if (colon == NULL || colon == value)
		return -EINVAL;
	hl = (size_t)(colon - value);
	/* [IPv6]:PORT; the bare form of older files still parses. */
	if (value[0] == '[') {
		if (hl < 3 || value[hl - 1] != ']')
			return -EINVAL;
		host++;
		hl -= 2;
	}
	if (hl >= sizeof a->host || parse_uint(colon + 1, 65535, &port) ||
	    port == 0)
		return -EINVAL;
	memcpy(a->host, host, hl);
	a->host[hl] = '\0';
	a->port = (uint16_t)port;
	return 0;
}

int
bft_parse_hostport(const char *s, char *host, size_t hostlen,
    uint16_t *port)
{
	const char *colon, *h = s;
	unsigned long p;
	size_t hlen;
	char *end;

	if (s[0] == '[') {
		colon = strchr(s, ']');
		if (colon == NULL || colon[1] != ':')
			return -EINVAL;
		h = s + 1;
		hlen = (size_t)(colon - h);
		colon++;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL || memchr(s, ':', (size_t)(colon - s)))
			return -EINVAL;
		hlen = (size_t)(colon - s);
	}
	if (hlen >= hostlen || colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (errno || *end != '\0' || p > 65535)
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	*port = (uint16_t)p;
	return 0;
}

const char *
bft_format_addr(const struct bft_server_addr *a, char *out, size_t len)
{
	bool v6 = strchr(a->host, ':') != NULL;

	snprintf(out, len, "%s%s%s:%u", v6 ? "[" : "", a->host, v6 ? "]" : "",
	    a->port);
	return out;
}

static int
load_pair(void *vctx, const char *key, const char *value, char *err,
    size_t errlen)
{
	struct load_ctx *ctx = vctx;
	struct bft_config *cfg = ctx->cfg;
	unsigned long v;

	if (strcmp(key, "cluster-id") == 0) {
		if (bft_parse_hex(value, cfg->cluster_id,
		    BFT_CLUSTER_ID_LEN)) {
			snprintf(err, errlen, "cluster-id must be %d hex "
			    "digits", 2 * BFT_CLUSTER_ID_LEN);
			return -EINVAL;
		}
		ctx->have_id = 1;
	} else if (strcmp(key, "t") == 0) {
		if (parse_uint(value, BFT_MAX_T, &v) || v < 1) {
			snprintf(err, errlen, "t must be 1..%d", BFT_MAX_T);
			return -EINVAL;
		}
		cfg->t = (unsigned)v;
		ctx->have_t = 1;
	} else if (strcmp(key, "size") == 0) {
		if (bft_parse_size(value, &cfg->size) || cfg->size == 0) {
			snprintf(err, errlen, "bad size '%s'", value);
			return -EINVAL;
		}
		ctx->have_size = 1;
	} else if (strcmp(key, "block-size") == 0) {
		if (parse_uint(value, UINT32_MAX, &v) ||
		    v != BFT_BLOCK_SIZE) {
			snprintf(err, errlen, "block-size must be %u",
			    BFT_BLOCK_SIZE);
			return -EINVAL;
		}
		cfg->block_size = (uint32_t)v;
	} else if (strcmp(key, "channel") == 0) {
		if (strcmp(value, "aead") == 0)
			cfg->channel = 0;
		else if (strcmp(value, "plain") == 0)
			cfg->channel = 1;
		else {
			snprintf(err, errlen, "channel must be aead or plain");
			return -EINVAL;
		}
	} else if (strncmp(key, "client.", 7) == 0) {
		return load_client(cfg, key + 7, value, err, errlen);
	} else if (strncmp(key, "server.", 7) == 0 &&
	    strlen(key) > 15 && strcmp(key + strlen(key) - 8,
	    ".pk.next") == 0) {
		return load_pk_next(ctx, key, value, err, errlen);
	} else if (strncmp(key, "server.", 7) == 0 &&
	    strlen(key) > 10 && strcmp(key + strlen(key) - 3, ".pk") == 0) {
		if (server_key_index(key, strlen(".pk"), &v) != 0 ||
		    bft_parse_hex(value, cfg->server_pk[v], 32)) {
			snprintf(err, errlen, "bad %s (want server.I.pk = 64 "
			    "hex digits)", key);
			return -EINVAL;
		}
		ctx->have_pk |= 1u << v;
	} else if (strncmp(key, "server.", 7) == 0) {
		if (parse_uint(key + 7, BFT_MAX_N - 1, &v)) {
			snprintf(err, errlen, "server index must be 0..%d",
			    BFT_MAX_N - 1);
			return -EINVAL;
		}
		if (parse_addr(value, &cfg->servers[v])) {
			snprintf(err, errlen, "bad address '%s' (want "
			    "HOST:PORT)", value);
			return -EINVAL;
		}
		ctx->have_server |= 1u << v;
	} else {
		snprintf(err, errlen, "unknown key '%s'", key);
		return -EINVAL;
	}
	return 0;
}

int
bft_config_load(const char *path, struct bft_config *cfg, char *err,
    size_t errlen)
{
	struct load_ctx ctx = { .cfg = cfg };
	uint32_t want;
	int r;

	memset(cfg, 0, sizeof *cfg);
	cfg->block_size = BFT_BLOCK_SIZE;
	if ((r = bft_kv_parse(path, 0, load_pair, &ctx, err, errlen)) != 0)
		return r;
	if (!ctx.have_id || !ctx.have_t || !ctx.have_size) {
		snprintf(err, errlen, "%s: missing %s", path,
		    !ctx.have_id ? "cluster-id" : !ctx.have_t ? "t" : "size");
		return -EINVAL;
	}
	cfg->n = 3 * cfg->t + 1;
	if (cfg->size % cfg->block_size) {
		snprintf(err, errlen, "%s: size %" PRIu64 " is not a multiple "
		    "of the block size %u", path, cfg->size, cfg->block_size);
		return -EINVAL;
	}
	cfg->nblocks = cfg->size / cfg->block_size;
	want = (1u << cfg->n) - 1;
	if (ctx.have_server != want) {
		snprintf(err, errlen, "%s: t=%u needs exactly server.0 .. "
		    "server.%u", path, cfg->t, cfg->n - 1);
		return -EINVAL;
	}
	if (ctx.have_pk != want) {
		snprintf(err, errlen, "%s: t=%u needs exactly server.0.pk .. "
		    "server.%u.pk (the servers' channel keys; bftblk keygen "
		    "writes them)", path, cfg->t, cfg->n - 1);
		return -EINVAL;
	}
	if ((cfg->has_pk_next & ~want) != 0) {
		snprintf(err, errlen, "%s: server.I.pk.next for a server t=%u "
		    "does not have (0..%u)", path, cfg->t, cfg->n - 1);
		return -EINVAL;
	}
	/* Two servers under one key could stand in for each other. */
	for (unsigned i = 0; i < cfg->n; i++) {
		const uint8_t *nx = bft_config_pk_next(cfg, i);
		int j;

		if (nx == NULL)
			continue;
		if ((j = bft_config_find_server(cfg, nx)) != (int)i ||
		    memcmp(nx, cfg->server_pk[i], 32) == 0) {
			snprintf(err, errlen, "%s: server.%u.pk.next is %s",
			    path, i, j == (int)i ? "its server.I.pk itself" :
			    "another server's key");
			return -EINVAL;
		}
	}
	/*
	 * A server's key identifies that server, whose connections to its
	 * peers are those of a peer; listed as a client too, it would be
	 * two identities at once.
	 */
	for (unsigned i = 0; i < cfg->nclients; i++) {
		int j = bft_config_find_server(cfg, cfg->clients[i].pk);

		if (j >= 0) {
			snprintf(err, errlen, "%s: client '%s' has the key of "
			    "server %d", path, cfg->clients[i].name, j);
			return -EINVAL;
		}
	}
	return 0;
}

const struct bft_client_ident *
bft_config_find_client(const struct bft_config *cfg, const uint8_t *pk)
{
	for (unsigned i = 0; i < cfg->nclients; i++)
		if (memcmp(cfg->clients[i].pk, pk, 32) == 0)
			return &cfg->clients[i];
	return NULL;
}

int
bft_config_find_server(const struct bft_config *cfg, const uint8_t *pk)
{
	for (unsigned i = 0; i < cfg->n; i++)
		if (memcmp(cfg->server_pk[i], pk, 32) == 0)
			return (int)i;
	for (unsigned i = 0; i < cfg->n; i++)
		if ((cfg->has_pk_next & 1u << i) &&
		    memcmp(cfg->server_pk_next[i], pk, 32) == 0)
			return (int)i;
	return -ENOENT;
}

const uint8_t *
bft_config_pk_next(const struct bft_config *cfg, unsigned i)
{
	return i < BFT_MAX_N && (cfg->has_pk_next & 1u << i) ?
	    cfg->server_pk_next[i] : NULL;
}

bool
bft_role_permits(enum bft_role role, uint8_t type)
{
	switch (type) {
	case BFT_HELLO:
	case BFT_COLLECT:
	case BFT_FILTER:
	case BFT_REPAIR:
	/* A snapshot is read as the head is, by whoever may read. */
	case BFT_VCOLLECT:
	case BFT_VFILTER:
	case BFT_VREPAIR:
	/* What changed between snapshots: an incremental backup's reader. */
	case BFT_VLIST:
	/* The space a snapshot holds: what `snap list` shows. */
	case BFT_SNAPSPACE:
	case BFT_FLUSH:
	case BFT_STATUS:
	case BFT_VOLUMES:
		return role == BFT_ROLE_RO || role == BFT_ROLE_RW ||
		    role == BFT_ROLE_PEER;
	/*
	 * Comparing states is the rebuild's (server to server) and walks
	 * the index: readers have no use for it, so it is no load they
	 * can put on a server.
	 */
	case BFT_SUMMARY:
	case BFT_LCLIST:
		return role == BFT_ROLE_RW || role == BFT_ROLE_PEER;
	case BFT_CLOCK:
	case BFT_STORE:
	case BFT_COMPLETE:
	/* New MACs for a stored version: a writer's, as a STORE's are. */
	case BFT_REAUTH:
	/* Scrubbing costs the server disk reads: writers may ask for it. */
	case BFT_SCRUB:
	/* Forgetting a volume destroys data, as overwriting it does. */
	case BFT_DROP:
	/* Forgetting a snapshot frees its versions: the same. */
	case BFT_SNAP:
	/*
	 * Finalizing ends the way back to the previous release, and lets
	 * writers use what it cannot read: a writer's decision.
	 */
	case BFT_FINALIZE:
		return role == BFT_ROLE_RW;
	default:
		return false;
	}
}

const char *
bft_role_str(enum bft_role role)
{
	return role == BFT_ROLE_RW ? "read-write" : role == BFT_ROLE_RO ?
	    "read-only" : role == BFT_ROLE_PEER ? "peer" : "none";
}

int
bft_config_write(const char *path, const struct bft_config *cfg)
{
	char hex[2 * BFT_CLUSTER_ID_LEN + 1], pk[65];
	FILE *fp;

	fp = fopen(path, "wx");
	if (fp == NULL)
		return -errno;
	bft_format_hex(cfg->cluster_id, BFT_CLUSTER_ID_LEN, hex);
	fprintf(fp, "# bftblk cluster configuration, see bftblk.conf(5).\n"
	    "cluster-id = %s\nt = %u\nsize = %" PRIu64 "\n"
	    "block-size = %u\n", hex, cfg->t, cfg->size, cfg->block_size);
	if (cfg->channel == 1)
		fprintf(fp, "channel = plain\n");
	for (unsigned i = 0; i < cfg->n; i++) {
		char addr[BFT_ADDR_STRLEN];

		bft_format_hex(cfg->server_pk[i], 32, pk);
		fprintf(fp, "server.%u = %s\nserver.%u.pk = %s\n", i,
		    bft_format_addr(&cfg->servers[i], addr, sizeof addr), i,
		    pk);
		if (bft_config_pk_next(cfg, i) != NULL) {
			bft_format_hex(cfg->server_pk_next[i], 32, pk);
			fprintf(fp, "server.%u.pk.next = %s\n", i, pk);
		}
	}
	fprintf(fp, "# Clients allowed in: client.NAME = rw|ro PUBLIC-KEY.\n"
	    "# Servers reread these lines on SIGHUP.\n");
	for (unsigned i = 0; i < cfg->nclients; i++) {
		bft_format_hex(cfg->clients[i].pk, 32, pk);
		fprintf(fp, "client.%s = %s %s\n", cfg->clients[i].name,
		    cfg->clients[i].role == BFT_ROLE_RW ? "rw" : "ro", pk);
	}
	if (fclose(fp) != 0)
		return -errno;
	return 0;
}
