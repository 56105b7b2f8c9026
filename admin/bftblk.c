/*
 * bftblk(8): the administration tool.  `bftblk keygen` creates a cluster
 * directory: bftblk.conf, one key file per server and the client key.
 * `bftblk volume-key` creates the key of an encrypted volume (the
 * plugin's encrypt=on).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "crypto.h"
#include "keys.h"
#include "log.h"
#include "volcrypt.h"

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: bftblk keygen --dir DIR [--t T] [--size SIZE] "
	    "[--host HOST]\n"
	    "                     [--base-port PORT]\n"
	    "  Creates DIR/bftblk.conf, DIR/server-I.key (I = 0..3t) and "
	    "DIR/client.key.\n"
	    "  Defaults: t=1, size=1G, host=127.0.0.1, base-port=7700.\n"
	    "       bftblk volume-key --out FILE [--aead AEAD]\n"
	    "  Creates the key of an encrypted volume (plugin encrypt=on); "
	    "AEAD is\n"
	    "  aes256gcm (default where the CPU has AES-NI) or "
	    "xchacha20poly1305.\n");
}

static int
path_in(char *out, size_t len, const char *dir, const char *name)
{
	int n = snprintf(out, len, "%s/%s", dir, name);

	return (n < 0 || (size_t)n >= len) ? -1 : 0;
}

static int
keygen(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "t", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 's' },
		{ "host", required_argument, NULL, 'H' },
		{ "base-port", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bft_config cfg = { .t = 1, .block_size = BFT_BLOCK_SIZE,
	    .size = 1ull << 30 };
	struct bft_client_key ck = { 0 };
	const char *dir = NULL, *host = "127.0.0.1";
	unsigned long port = 7700;
	char path[4096], *end;
	int c;

	while ((c = getopt_long(argc, argv, "d:t:s:H:p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 't':
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
		case 'p':
			port = strtoul(optarg, &end, 10);
			if (*end || port == 0 || port > 65535) {
				bft_log("--base-port must be 1..65535");
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (dir == NULL || optind != argc) {
		usage(stderr);
		return 2;
	}
	cfg.n = 3 * cfg.t + 1;
	if (port + cfg.n - 1 > 65535) {
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
	bft_random(ck.kw, BFT_KEY_LEN);
	for (unsigned i = 0; i < cfg.n; i++) {
		snprintf(cfg.servers[i].host, BFT_HOST_LEN, "%s", host);
		cfg.servers[i].port = (uint16_t)(port + i);
	}

	/* The client key first: O_EXCL on it refuses a second keygen early. */
	for (unsigned i = 0; i < cfg.n; i++)
		bft_random(ck.k[i], BFT_KEY_LEN);
	if (path_in(path, sizeof path, dir, "client.key") ||
	    bft_client_key_write(path, &ck) != 0)
		goto out_err;
	for (unsigned i = 0; i < cfg.n; i++) {
		struct bft_server_key sk = { .index = i };
		char name[64];

		memcpy(sk.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN);
		memcpy(sk.k, ck.k[i], BFT_KEY_LEN);
		snprintf(name, sizeof name, "server-%u.key", i);
		if (path_in(path, sizeof path, dir, name) ||
		    bft_server_key_write(path, &sk) != 0)
			goto out_err;
	}
	if (path_in(path, sizeof path, dir, "bftblk.conf") ||
	    bft_config_write(path, &cfg) != 0)
		goto out_err;
	printf("cluster in %s: t=%u, n=%u servers on %s:%lu-%lu, size %llu "
	    "bytes\n", dir, cfg.t, cfg.n, host, port, port + cfg.n - 1,
	    (unsigned long long)cfg.size);
	return 0;
out_err:
	bft_log("%s: %s%s", path, strerror(errno),
	    errno == EEXIST ? " (keys exist already; refusing to replace "
	    "them)" : "");
	return 1;
}

/*
 * The AEAD is fixed for the volume's life, so it is chosen here: the
 * faster one this CPU runs, unless the volume must also open on CPUs
 * without AES-NI (--aead xchacha20poly1305).
 */
static int
volume_key(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "aead", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bft_volume_key vk = { .aead = bft_aead_default() };
	const char *out = NULL;
	int c, rc = 1;

	while ((c = getopt_long(argc, argv, "o:a:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'a':
			if (bft_aead_parse(optarg, &vk.aead) != 0) {
				bft_log("--aead must be aes256gcm or "
				    "xchacha20poly1305");
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (out == NULL || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (!bft_aead_available(vk.aead))
		bft_log("warning: this CPU cannot run %s; the volume will "
		    "only open on CPUs with AES-NI", bft_aead_name(vk.aead));
	bft_random(vk.key, sizeof vk.key);
	if (bft_volume_key_write(out, &vk) != 0) {
		bft_log("%s: %s%s", out, strerror(errno), errno == EEXIST ?
		    " (refusing to replace a volume key: its data would be "
		    "lost)" : "");
		goto out_wipe;
	}
	printf("volume key in %s: %s\n", out, bft_aead_name(vk.aead));
	rc = 0;
out_wipe:
	bft_wipe(vk.key, sizeof vk.key);
	return rc;
}

int
main(int argc, char **argv)
{
	bft_log_init("bftblk", 0);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (bft_crypto_init() != 0) {
		bft_log("cannot initialise crypto");
		return 1;
	}
	if (strcmp(argv[1], "keygen") == 0)
		return keygen(argc - 1, argv + 1);
	if (strcmp(argv[1], "volume-key") == 0)
		return volume_key(argc - 1, argv + 1);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	bft_log("unknown command '%s'", argv[1]);
	usage(stderr);
	return 2;
}
