/* bftblk-server's command line (options.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bftblk.h"
#include "log.h"
#include "options.h"
#include "rejuv.h"
#include "test_hooks.h"

static void
usage(FILE *f)
{
	fprintf(f, "usage: bftblk-server --config FILE --key FILE --data DIR "
	    "[--create-data-dir]\n"
	    "                     [--listen HOST:PORT]"
	    " [--pidfile FILE] [-v]\n"
	    "                     [--unix PATH] [--compact-pct P] "
	    "[--segment-mb MB]\n"
	    "                     [--meta-cache-mb MB] [--checkpoint-mb MB]\n"
	    "                     [--page-cache-mb MB]\n"
	    "                     [--max-pending N] "
	    "[--max-conns N]\n"
	    "                     [--max-client-conns N] [--max-inflight N] "
	    "[--max-client-stores N]\n"
	    "                     [--rebuild-rate MB] [--rebuild-busy-rate MB]\n"
	    "                     [--rebuild-interval S]\n"
	    "                     [--scrub-rate MB] [--scrub-interval S]\n"
	    "                     [--handshake-timeout MS] "
	    "[--client-store-window MS]\n"
	    "                     [--max-preauth N] [--max-preauth-per-addr N]\n"
	    "                     [--metrics HOST:PORT] "
	    "[--recover-every DURATION]\n"
	    "       bftblk-server --help | --version\n"
	    BFT_TEST_USAGE);
}

/* A decimal number from min to 1000000; 0 or -1. */
static int
parse_number(const char *s, unsigned long min, unsigned *out)
{
	unsigned long v;
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end != '\0' || v < min || v > 1000000)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int
parse_count(const char *s, unsigned *out)
{
	return parse_number(s, 1, out);
}

/*
 * --meta-cache-mb (0: no cache), --checkpoint-mb (0: only at shutdown),
 * --page-cache-mb (0: no bound) and --segment-mb (1 to 1024), all in
 * MiB.
 */
static int
parse_store_mb(int ch, const char *arg, struct bft_store_opts *so)
{
	const char *name = ch == 'X' ? "--meta-cache-mb" : ch == 'Y' ?
	    "--checkpoint-mb" : ch == 'G' ? "--page-cache-mb" :
	    "--segment-mb";
	unsigned v, min = ch == 'Z', max = ch == 'Z' ? 1024 : 1000000;

	if (parse_number(arg, min, &v) < 0 || v > max) {
		bft_error("%s: not a size in MiB from %u to %u: %s", name, min,
		    max, arg);
		return -1;
	}
	if (ch == 'X') {
		so->cache_bytes = (uint64_t)v << 20;
		so->cache_off = v == 0;
	} else if (ch == 'Y') {
		so->checkpoint_bytes = (uint64_t)v << 20;
		so->checkpoint_off = v == 0;
	} else if (ch == 'G') {
		so->page_cache_bytes = (uint64_t)v << 20;
		so->page_cache_all = v == 0;
	} else {
		so->segment_size = (uint64_t)v << 20;
	}
	return 0;
}

int
bft_server_parse_args(int argc, char **argv, struct bft_server_opts *o)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "key", required_argument, NULL, 'k' },
		{ "data", required_argument, NULL, 'd' },
		{ "create-data-dir", no_argument, NULL, 'D' },
		{ "rebuild-rate", required_argument, NULL, 'R' },
		{ "rebuild-interval", required_argument, NULL, 'N' },
		{ "rebuild-busy-rate", required_argument, NULL, 'b' },
		{ "scrub-rate", required_argument, NULL, 'r' },
		{ "scrub-interval", required_argument, NULL, 'i' },
		{ "listen", required_argument, NULL, 'l' },
		{ "unix", required_argument, NULL, 'u' },
		{ "max-pending", required_argument, NULL, 'P' },
		{ "compact-pct", required_argument, NULL, 'K' },
		{ "meta-cache-mb", required_argument, NULL, 'X' },
		{ "checkpoint-mb", required_argument, NULL, 'Y' },
		{ "segment-mb", required_argument, NULL, 'Z' },
		{ "page-cache-mb", required_argument, NULL, 'G' },
		{ "max-conns", required_argument, NULL, 'C' },
		{ "max-client-conns", required_argument, NULL, 'M' },
		{ "max-inflight", required_argument, NULL, 'I' },
		{ "max-client-stores", required_argument, NULL, 'T' },
		{ "client-store-window", required_argument, NULL, 'W' },
		{ "handshake-timeout", required_argument, NULL, 'H' },
		{ "max-preauth", required_argument, NULL, 'A' },
		{ "max-preauth-per-addr", required_argument, NULL, 'a' },
		{ "pidfile", required_argument, NULL, 'p' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "recover-every", required_argument, NULL, 'E' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		BFT_TEST_LONGOPTS
		{ NULL, 0, NULL, 0 },
	};
	int ch, r;

	memset(o, 0, sizeof *o);
	o->max_pending = BFT_DEFAULT_MAX_PENDING;
	o->lim.max_conns = BFT_DEFAULT_MAX_CONNS;
	o->rebuild.rate = BFT_REBUILD_DEFAULT_RATE;
	o->rebuild.busy_rate = BFT_REBUILD_DEFAULT_BUSY_RATE;
	o->rebuild.interval_s = BFT_REBUILD_DEFAULT_INTERVAL;
	o->scrub.rate = BFT_SCRUB_DEFAULT_RATE;
	o->scrub.interval_s = BFT_SCRUB_DEFAULT_INTERVAL;
	while ((ch = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': o->config = optarg; break;
		case 'k': o->key = optarg; break;
		case 'd': o->data = optarg; break;
		case 'm': o->metrics = optarg; break;
		case 'D': o->create_data = true; break;
		case 'E':
			if (bft_rejuv_parse_duration(optarg,
			    &o->recover_every_s) < 0) {
				bft_error("--recover-every: not a duration "
				    "(90s, 30m, 6h, 1d; 0: off): %s", optarg);
				return -1;
			}
			break;
		case 'R':
		case 'N':
		case 'r':
		case 'i':
		case 'b': {
			static const char *names[] = { "--rebuild-rate",
			    "--rebuild-interval", "--scrub-rate",
			    "--scrub-interval", "--rebuild-busy-rate" };
			const char *name = names[ch == 'R' ? 0 : ch == 'N' ?
			    1 : ch == 'r' ? 2 : ch == 'i' ? 3 : 4];
			unsigned v;

			/* 0: no limit (rates), only when asked (scrub). */
			if (parse_number(optarg, ch == 'N', &v) < 0) {
				bft_error("%s: not a number from %d to 1000000: "
				    "%s", name, ch == 'N', optarg);
				return -1;
			}
			if (ch == 'R')
				o->rebuild.rate = (uint64_t)v * 1000000;
			else if (ch == 'N')
				o->rebuild.interval_s = v;
			else if (ch == 'b')
				o->rebuild.busy_rate = (uint64_t)v * 1000000;
			else if (ch == 'r')
				o->scrub.rate = (uint64_t)v * 1000000;
			else
				o->scrub.interval_s = v;
			break;
		}
		case 'l': o->listen = optarg; break;
		case 'u': o->unix_path = optarg; break;
		case 'p': o->pidfile = optarg; break;
		case 'v': o->verbose = 1; break;
		case 'X':
		case 'Y':
		case 'G':
		case 'Z':
			if (parse_store_mb(ch, optarg, &o->store) < 0)
				return -1;
			break;
		case 'K':
			if (parse_count(optarg, &o->store.compact_pct) < 0 ||
			    o->store.compact_pct < 10 ||
			    o->store.compact_pct > 95) {
				bft_log("--compact-pct: not a percentage from "
				    "10 to 95: %s", optarg);
				return -1;
			}
			break;
		case 'P':
			if (parse_count(optarg, &o->max_pending) < 0) {
				bft_error("--max-pending: not a count: %s",
				    optarg);
				return -1;
			}
			break;
		case 'C':
		case 'M':
		case 'I':
		case 'T':
		case 'W':
		case 'H':
		case 'A':
		case 'a': {
			unsigned v, *dst = ch == 'C' ? &o->lim.max_conns :
			    ch == 'M' ? &o->lim.max_client_conns :
			    ch == 'I' ? &o->lim.max_inflight :
			    ch == 'T' ? &o->lim.max_client_stores :
			    ch == 'A' ? &o->lim.max_preauth :
			    ch == 'a' ? &o->lim.max_preauth_per_addr : &v;

			if (parse_count(optarg, dst) < 0) {
				bft_error("%s: not a count: %s",
				    argv[optind - 1], optarg);
				return -1;
			}
			if (ch == 'H')
				o->lim.handshake_ms = v;
			if (ch == 'W')
				o->lim.store_window_ms = v;
			break;
		}
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("bftblk-server %s\n", BFTBLK_VERSION_STRING);
			exit(0);
		default:
			/* The test server's options; production has none. */
			r = bft_test_option(ch, optarg);
			if (r > 0)
				break;
			if (r == 0)
				usage(stderr);
			return -1;
		}
	}
	if (optind != argc || !o->config || !o->key || !o->data) {
		usage(stderr);
		return -1;
	}
	return 0;
}
