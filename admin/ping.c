/*
 * bftblk ping: can this host use the cluster?  It opens the cluster
 * through libbftblk, as the plugin does, with a client key from DIR,
 * and reports which servers completed the channel handshake and HELLO,
 * whether that leaves a quorum (n-t), and how long a read of block 0
 * took.  A first check after deploying, and the base of the health
 * commands to come.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin.h"
#include "bftblk.h"
#include "config.h"
#include "log.h"

#define POLL_MS	20

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Waits until every server is connected or timeout_ms passed. */
static unsigned
wait_connected(struct bftblk *h, struct bftblk_stats *s, unsigned timeout_ms)
{
	double end = now_ms() + timeout_ms;
	struct timespec pause = { .tv_nsec = POLL_MS * 1000000L };
	unsigned up;

	for (;;) {
		up = 0;
		if (bftblk_get_stats(h, s, sizeof *s) != 0)
			return 0;
		for (unsigned i = 0; i < s->nservers; i++)
			up += s->server[i].connected != 0;
		if (up == s->nservers || now_ms() >= end)
			return up;
		nanosleep(&pause, NULL);
	}
}

/* Library lines go to stderr in the admin tool's format. */
static void
ping_log(void *opaque, enum bftblk_log_level level, const char *msg)
{
	(void)opaque;
	if (level != BFTBLK_LOG_DEBUG)
		bft_log("%s", msg);
}

static int
ping(const char *dir, const char *keys, unsigned timeout_s)
{
	static struct bft_config cfg;
	static struct bftblk_stats st;
	char addr[BFT_ADDR_STRLEN];
	static uint8_t block[BFTBLK_BLOCK_SIZE];
	char conf[ADMIN_PATH_MAX], keypath[ADMIN_PATH_MAX], err[512], opt[32];
	struct bftblk_info info;
	struct bftblk *h;
	unsigned up, need;
	double t0;
	int r, rc = 1;

	if (admin_cluster_paths(dir, keys, conf, keypath) != 0)
		return 2;
	if (bft_config_load(conf, &cfg, err, sizeof err) != 0) {
		bft_log("%s", err);
		return 1;
	}
	if ((h = bftblk_create()) == NULL) {
		bft_log("out of memory");
		return 1;
	}
	bftblk_set_log(h, ping_log, NULL);
	snprintf(opt, sizeof opt, "%u", timeout_s);
	if (bftblk_set_option(h, "config", conf) != 0 ||
	    bftblk_set_option(h, "keys", keypath) != 0 ||
	    bftblk_set_option(h, "timeout", opt) != 0 ||
	    /* A check that only reads: it must not take the disk's lease. */
	    bftblk_set_option(h, "shared", "on") != 0 ||
	    bftblk_connect(h) != 0 || bftblk_get_info(h, &info, sizeof info) != 0) {
		bft_log("%s", bftblk_errmsg(h));
		goto out_close;
	}
	printf("cluster: t=%u n=%u, %" PRIu64 " bytes, client '%s' (%s)\n",
	    info.t, info.n, info.size, info.client_name,
	    info.readonly ? "read-only" : "read-write");
	up = wait_connected(h, &st, timeout_s * 1000);
	for (unsigned i = 0; i < st.nservers; i++)
		printf("server %u %s: %s\n", i, bft_format_addr(
		    &cfg.servers[i], addr, sizeof addr), st.server[i].connected ?
		    "reachable" : "unreachable");
	need = info.n - info.t;
	printf("%u of %u servers reachable, I/O needs %u: %s\n", up, info.n,
	    need, up >= need ? "ok" : "UNAVAILABLE");
	if (up < need)
		goto out_close;
	t0 = now_ms();
	if ((r = bftblk_pread(h, block, sizeof block, 0)) != 0) {
		printf("read of block 0: failed: %s\n", bftblk_errmsg(h));
		goto out_close;
	}
	printf("read of block 0: ok in %.1f ms\n", now_ms() - t0);
	rc = 0;
out_close:
	bftblk_close(h);
	return rc;
}

int
admin_ping(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "keys", required_argument, NULL, 'k' },
		{ "timeout", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = NULL, *keys = NULL;
	unsigned timeout_s = 3;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:k:t:", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'k':
			keys = optarg;
			break;
		case 't':
			if (admin_parse_timeout(optarg, &timeout_s) != 0)
				return 2;
			break;
		default:
			admin_usage(stderr);
			return 2;
		}
	}
	if (dir == NULL || optind != argc) {
		admin_usage(stderr);
		return 2;
	}
	return ping(dir, keys, timeout_s);
}
