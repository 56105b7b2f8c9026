/*
 * bftblk server replace: a server whose host or key file is lost gets a
 * new channel key and, when it moves, a new address, in DIR/bftblk.conf
 * and a new DIR/server-I.key.  Its MAC key stays: it is the cluster's,
 * held by every writer (client.key), and every MAC vector already
 * written has an entry under it, which the new server must be able to
 * check as it rebuilds.  Servers take the change on SIGHUP, plugins
 * within seconds (they watch bftblk.conf); the new server starts on an
 * empty data directory and rebuilds from its peers.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "config.h"
#include "crypto.h"
#include "keys.h"
#include "log.h"

/* HOST[:PORT] or [V6ADDR][:PORT]; the port stays when not given. */
static int
parse_host(const char *s, struct bft_server_addr *a)
{
	char host[BFT_HOST_LEN];
	unsigned port;

	if (admin_parse_hostport(s, host, &port) != 0)
		return -1;
	memcpy(a->host, host, sizeof a->host);
	if (port != 0)
		a->port = (uint16_t)port;
	return 0;
}

static int
replace(const char *dir, unsigned index, const char *host)
{
	static struct bft_config cfg;
	static struct bft_client_key ck;
	struct bft_server_key sk = { .index = index };
	char conf[4096], tmp[4096], keyf[4096], old[4096], name[64];
	char err[512], addr[BFT_ADDR_STRLEN];
	int r;

	if (admin_path_in(conf, sizeof conf, dir, "bftblk.conf") ||
	    admin_path_in(tmp, sizeof tmp, dir, ".bftblk.conf.new") ||
	    admin_path_in(keyf, sizeof keyf, dir, "client.key"))
		return 2;
	if (bft_config_load(conf, &cfg, err, sizeof err) != 0 ||
	    bft_client_key_load(keyf, &ck, err, sizeof err) != 0) {
		bft_log("%s", err);
		return 1;
	}
	if (index >= cfg.n) {
		bft_log("--index %u: the cluster has servers 0..%u", index,
		    cfg.n - 1);
		return 2;
	}
	if (ck.role != BFT_ROLE_RW || ck.n != cfg.n) {
		bft_log("%s is not a writer's key file of this cluster: the "
		    "new server's MAC key comes from one", keyf);
		return 1;
	}
	if (host != NULL && parse_host(host, &cfg.servers[index]) != 0) {
		bft_log("--host: not HOST or HOST:PORT: %s", host);
		return 2;
	}
	snprintf(name, sizeof name, "server-%u.key", index);
	if (admin_path_in(keyf, sizeof keyf, dir, name))
		return 2;
	snprintf(name, sizeof name, "server-%u.key.replaced", index);
	if (admin_path_in(old, sizeof old, dir, name))
		return 2;
	/* The old key file, if the admin still has it, is kept aside. */
	if (access(old, F_OK) == 0) {
		bft_log("%s exists: a replacement is pending; remove it first",
		    old);
		return 1;
	}
	if (access(keyf, F_OK) == 0 && rename(keyf, old) != 0) {
		bft_log("%s: %s", keyf, strerror(errno));
		return 1;
	}
	memcpy(sk.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN);
	/*
	 * Its MAC keys of the epochs the writers hold, under their epoch
	 * numbers: a key of epoch 1 reported as epoch 0 would keep writers
	 * from signing under the next one, and a rotation under way needs
	 * the next key too (docs/key-epochs.md).
	 */
	memcpy(sk.k, ck.k[index], BFT_KEY_LEN);
	sk.epoch = ck.epoch;
	if (ck.has_alt) {
		sk.has_alt = true;
		sk.alt_epoch = ck.alt_epoch;
		memcpy(sk.k_alt, ck.k_alt[index], BFT_KEY_LEN);
	}
	bft_chan_keypair_new(&sk.chan);
	memcpy(cfg.server_pk[index], sk.chan.pk, 32);
	/* A rotation under way is void: its next key was never run. */
	cfg.has_pk_next &= ~(1u << index);
	unlink(tmp);
	if ((r = bft_server_key_write(keyf, &sk)) != 0 ||
	    (r = bft_config_write(tmp, &cfg)) != 0 ||
	    (r = rename(tmp, conf) != 0 ? -errno : 0) != 0) {
		bft_log("%s: %s", keyf, strerror(-r));
		bft_wipe(&sk, sizeof sk);
		return 1;
	}
	bft_wipe(&sk, sizeof sk);
	printf("server %u is now %s with a new key in %s\n"
	    "copy bftblk.conf to every server and plugin host and send the "
	    "servers SIGHUP;\nthen start server %u there with %s on an empty "
	    "data directory: it rebuilds\n", index, bft_format_addr(
	    &cfg.servers[index], addr, sizeof addr), keyf, index, name);
	return 0;
}

int
admin_server(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "index", required_argument, NULL, 'i' },
		{ "host", required_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = NULL, *host = NULL;
	unsigned long index = ULONG_MAX;
	char *end;
	int c;

	if (argc >= 2 && strcmp(argv[1], "rotate") == 0)
		return admin_server_rotate(argc, argv);
	if (argc < 2 || strcmp(argv[1], "replace") != 0) {
		admin_usage(stderr);
		return 2;
	}
	optind = 2;
	while ((c = getopt_long(argc, argv, "d:i:H:", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'i':
			index = strtoul(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end != '\0')
				index = ULONG_MAX;
			break;
		case 'H':
			host = optarg;
			break;
		default:
			admin_usage(stderr);
			return 2;
		}
	}
	if (dir == NULL || index >= BFT_MAX_N || optind != argc) {
		admin_usage(stderr);
		return 2;
	}
	return replace(dir, (unsigned)index, host);
}
