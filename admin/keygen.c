/*
 * `bftblk keygen`: a new cluster directory with bftblk.conf, one key file
 * per server and the first writer's client.key.
 */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin.h"
#include "channel.h"
#include "config.h"
#include "crypto.h"
#include "keys.h"
#include "log.h"

int
admin_path_in(char *out, size_t len, const char *dir, const char *name)
{
	int n = snprintf(out, len, "%s/%s", dir, name);

	return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}

int
admin_cluster_paths(const char *dir, const char *keys, char *conf,
    char *keypath)
{
	int n;

	if (admin_path_in(conf, ADMIN_PATH_MAX, dir, "bftblk.conf") != 0)
		return -ENAMETOOLONG;
	if (keys == NULL)
		return admin_path_in(keypath, ADMIN_PATH_MAX, dir,
		    "client.key");
	n = snprintf(keypath, ADMIN_PATH_MAX, "%s", keys);
	return n < 0 || n >= ADMIN_PATH_MAX ? -ENAMETOOLONG : 0;
}

int
admin_load_cluster(const char *dir, const char *keys, struct bft_config *cfg,
    struct bft_client_key *key, char *err, size_t errlen)
{
	char conf[ADMIN_PATH_MAX], keypath[ADMIN_PATH_MAX];
	int r;

	if ((r = admin_cluster_paths(dir, keys, conf, keypath)) != 0 ||
	    (r = bft_config_load(conf, cfg, err, errlen)) != 0 ||
	    (r = bft_client_key_load(keypath, key, err, errlen)) != 0)
		return r;
	return 0;
}

int
admin_parse_hostport(const char *s, char *host, unsigned *port)
{
	const char *h = s, *end, *colon;
	unsigned long p = 0;
	size_t hl;
	char *pend;

	if (s[0] == '[') {
		h = s + 1;
		end = strchr(h, ']');
		if (end == NULL || (end[1] != '\0' && end[1] != ':'))
			return -1;
		colon = end[1] == ':' ? end + 1 : NULL;
	} else {
		colon = strchr(s, ':');
		/* Two colons or more: an IPv6 address without a port. */
		if (colon != NULL && strchr(colon + 1, ':') != NULL)
			colon = NULL;
		end = colon ? colon : s + strlen(s);
	}
	hl = (size_t)(end - h);
	if (hl == 0 || hl >= BFT_HOST_LEN)
		return -1;
	if (colon != NULL) {
		if (colon[1] < '0' || colon[1] > '9')
			return -1;
		p = strtoul(colon + 1, &pend, 10);
		if (*pend != '\0' || p == 0 || p > 65535)
			return -1;
	}
	memcpy(host, h, hl);
	host[hl] = '\0';
	*port = (unsigned)p;
	return 0;
}

/*
 * --hosts: exactly n comma-separated entries into cfg->servers; an
 * entry without a port gets base_port.  0, or -1 after logging why.
 */
static int
parse_hosts(const char *list, struct bft_config *cfg, unsigned long base_port)
{
	char entry[BFT_HOST_LEN + 16];
	const char *p = list;
	unsigned count = 0, port;

	for (;;) {
		size_t len = strcspn(p, ",");

		if (count < cfg->n) {
			struct bft_server_addr *a = &cfg->servers[count];

			if (len >= sizeof entry) {
				bft_log("--hosts: entry %u is too long", count);
				return -1;
			}
			memcpy(entry, p, len);
			entry[len] = '\0';
			if (admin_parse_hostport(entry, a->host, &port) != 0) {
				bft_log("--hosts: entry %u is not HOST, HOST:PORT "
				    "or [IPV6]:PORT: \"%s\"", count, entry);
				return -1;
			}
			a->port = (uint16_t)(port ? port : base_port);
			for (unsigned j = 0; j < count; j++) {
				if (strcmp(cfg->servers[j].host, a->host) == 0 &&
				    cfg->servers[j].port == a->port) {
					bft_log("--hosts: servers %u and %u both "
					    "at %s port %u", j, count, a->host,
					    a->port);
					return -1;
				}
			}
		}
		count++;
		if (p[len] == '\0')
			break;
		p += len + 1;
	}
	if (count != cfg->n) {
		bft_log("--hosts has %u entries, but t=%u needs exactly n=%u, "
		    "one per server (n = 3t+1: 4, 7, 10, ...)", count, cfg->t,
		    cfg->n);
		return -1;
	}
	return 0;
}

int
admin_parse_timeout(const char *s, unsigned *out)
{
	unsigned long v;
	char *end;

	v = strtoul(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || v == 0 || v > 3600) {
		bft_log("--timeout must be 1..3600 seconds");
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

int
admin_keygen(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "t", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 's' },
		{ "host", required_argument, NULL, 'H' },
		{ "hosts", required_argument, NULL, 'A' },
		{ "base-port", required_argument, NULL, 'p' },
		{ "channel", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bft_config cfg = { .t = 1, .block_size = BFT_BLOCK_SIZE,
	    .size = 1ull << 30 };
	struct bft_client_key ck = { 0 };
	const char *dir = NULL, *host = NULL, *hosts = NULL;
	unsigned long port = 7700;
	char path[4096], *end;
	bool t_given = false;
	int c, r;

	while ((c = getopt_long(argc, argv, "d:t:s:H:p:c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 't':
			t_given = true;
			cfg.t = (unsigned)strtoul(optarg, &end, 10);
			if (*end || cfg.t < 1 || cfg.t > BFT_MAX_T) {
				bft_log("--t must be 1..%d", BFT_MAX_T);
				return 2;
			}
			break;
		case 's':
			if (bft_parse_size(optarg, &cfg.size) ||
			    cfg.size == 0 || cfg.size % BFT_BLOCK_SIZE) {
				bft_log("--size must be a positive multiple "
				    "of %u (K/M/G/T suffixes allowed)",
				    BFT_BLOCK_SIZE);
				return 2;
			}
			break;
		case 'H':
			if (strlen(optarg) >= BFT_HOST_LEN) {
				bft_log("--host too long");
				return 2;
			}
			host = optarg;
			break;
		case 'A':
			hosts = optarg;
			break;
		case 'p':
			port = strtoul(optarg, &end, 10);
			if (*end || port == 0 || port > 65535) {
				bft_log("--base-port must be 1..65535");
				return 2;
			}
			break;
		case 'c':
			if (strcmp(optarg, "aead") == 0)
				cfg.channel = BFT_CHAN_AEAD;
			else if (strcmp(optarg, "plain") == 0)
				cfg.channel = BFT_CHAN_PLAIN;
			else {
				bft_log("--channel must be aead or plain");
				return 2;
			}
			break;
		case 'h':
			admin_usage(stdout);
			return 0;
		default:
			admin_usage(stderr);
			return 2;
		}
	}
	if (dir == NULL || optind != argc) {
		admin_usage(stderr);
		return 2;
	}
	/* Without --t, the number of hosts says it: n = 3t+1. */
	if (hosts != NULL && !t_given) {
		unsigned count = 1;

		for (const char *q = hosts; *q; q++)
			count += *q == ',';
		if (count % 3 == 1 && count >= 4 && (count - 1) / 3 <= BFT_MAX_T)
			cfg.t = (count - 1) / 3;
	}
	cfg.n = 3 * cfg.t + 1;
	if (host != NULL && hosts != NULL) {
		bft_log("--host and --hosts: give one or the other");
		return 2;
	}
	if (hosts != NULL && parse_hosts(hosts, &cfg, port) != 0)
		return 2;
	if (hosts == NULL && host == NULL)
		host = "127.0.0.1";
	if (hosts == NULL && port + cfg.n - 1 > 65535) {
		bft_log("--base-port %lu leaves no room for %u servers", port,
		    cfg.n);
		return 2;
	}
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		bft_log("%s: %s", dir, strerror(errno));
		return 1;
	}
	bft_random(cfg.cluster_id, BFT_CLUSTER_ID_LEN);
	memcpy(ck.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN);
	ck.n = cfg.n;
	ck.role = BFT_ROLE_RW;
	strcpy(ck.name, "client");
	bft_chan_keypair_new(&ck.chan);
	bft_random(ck.kw, BFT_KEY_LEN);
	/* The first writer is allowed in; `bftblk client add` adds more. */
	strcpy(cfg.clients[0].name, ck.name);
	memcpy(cfg.clients[0].pk, ck.chan.pk, 32);
	cfg.clients[0].role = BFT_ROLE_RW;
	cfg.nclients = 1;
	for (unsigned i = 0; hosts == NULL && i < cfg.n; i++) {
		snprintf(cfg.servers[i].host, BFT_HOST_LEN, "%s", host);
		cfg.servers[i].port = (uint16_t)(port + i);
	}

	/* The client key first: O_EXCL on it refuses a second keygen early. */
	for (unsigned i = 0; i < cfg.n; i++)
		bft_random(ck.k[i], BFT_KEY_LEN);
	if ((r = admin_path_in(path, sizeof path, dir, "client.key")) != 0 ||
	    (r = bft_client_key_write(path, &ck)) != 0)
		goto out_err;
	for (unsigned i = 0; i < cfg.n; i++) {
		struct bft_server_key sk = { .index = i };
		char name[64];

		memcpy(sk.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN);
		memcpy(sk.k, ck.k[i], BFT_KEY_LEN);
		bft_chan_keypair_new(&sk.chan);
		memcpy(cfg.server_pk[i], sk.chan.pk, 32);
		snprintf(name, sizeof name, "server-%u.key", i);
		if ((r = admin_path_in(path, sizeof path, dir, name)) != 0 ||
		    (r = bft_server_key_write(path, &sk)) != 0)
			goto out_err;
	}
	if ((r = admin_path_in(path, sizeof path, dir, "bftblk.conf")) != 0 ||
	    (r = bft_config_write(path, &cfg)) != 0)
		goto out_err;
	if (hosts == NULL) {
		printf("cluster in %s: t=%u, n=%u servers on %s:%lu-%lu, size "
		    "%llu bytes\n", dir, cfg.t, cfg.n, host, port,
		    port + cfg.n - 1, (unsigned long long)cfg.size);
		return 0;
	}
	printf("cluster in %s: t=%u, n=%u servers, size %llu bytes\n", dir,
	    cfg.t, cfg.n, (unsigned long long)cfg.size);
	for (unsigned i = 0; i < cfg.n; i++)
		printf("  server %u: %s%s%s:%u (server-%u.key)\n", i,
		    strchr(cfg.servers[i].host, ':') ? "[" : "",
		    cfg.servers[i].host,
		    strchr(cfg.servers[i].host, ':') ? "]" : "",
		    cfg.servers[i].port, i);
	return 0;
out_err:
	bft_log("%s: %s%s", path, strerror(-r),
	    r == -EEXIST ? " (keys exist already; refusing to replace "
	    "them)" : "");
	return 1;
}

