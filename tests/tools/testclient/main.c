/*
 * A misbehaving bftblk client for the fault scenarios in tests/faults/
 * and the channel tests in tests/integration/.  It speaks the protocol
 * directly, one blocking socket per server: the channel handshake of
 * common/channel.h with the identity of --keys, then sealed frames (or
 * plain ones under channel = plain).  It does what the plugin never
 * does: stops a write half-way, leaves STOREs behind without ever
 * completing them, writes back candidates it made up, tampers with its
 * own sealed frames, or pipelines requests without reading the replies.
 * Exit status: 0 when the cluster behaved, 1 when a server accepted what
 * it must refuse (or the tool failed), 2 when an expected refusal was
 * not seen (stutter only), 3 when peek saw plaintext on the wire.
 *
 *   pattern       --data-seed S                      (64 KiB to stdout)
 *   partial-write --config C --keys K --block B --stop-after clock|store|
 *                 complete [--data-seed S] [--servers L] [--complete-to L]
 *                 [--hang]
 *   stutter       --config C --keys K --block B --count N [--servers L]
 *                 [--complete-last]
 *   forge-filter  --config C --keys K --block B [--forgery I]
 *   forge-repair  --config C --keys K --block B [--forgery I]
 *   probe         --config C --keys K --block B [--servers L]
 *   tamper        --config C --keys K --block B --mode M [--servers L]
 *   peek          --config C --keys K --block B [--servers L]
 *   pipeline      --config C --keys K --block B --count N [--hold S]
 *                 [--servers L]
 *   finalized     --config C --keys K [--count F]
 *   view-lc       --config C --keys K --block B --count N --view GEN
 *                 [--servers L]
 *
 * L is a comma-separated list of server indices (default: all).  With
 * --hang, partial-write waits to be killed where it would have exited.
 * The forgers, probe, tamper, peek and pipeline take any client key
 * file, a read-only one too, or a server's key file (the tool is then
 * that server, a peer of the others); partial-write and stutter need a
 * writer's (they sign timestamps and MAC vectors).
 *
 * The code: main.c (options, loading, dispatch), chan.c (connections,
 * the channel handshake, sealed requests and replies), write.c
 * (pattern, partial-write, stutter), forge.c (forge-filter,
 * forge-repair), probe.c (probe, tamper, peek, pipeline), attack.c (flood,
 * collect-save, filter-back, view-lc), finalized.c
 * (finalized).
 */
#include <err.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "testclient.h"

struct tc_opt opt = { .seed = "0", .forgery = -1 };

uint32_t
tc_parse_list(const char *s)
{
	uint32_t mask = 0;
	char *end;

	if (s == NULL)
		return ALL;
	while (*s) {
		unsigned long i = strtoul(s, &end, 10);

		if (end == s || i >= n || (*end && *end != ','))
			errx(1, "bad server list '%s' (n = %u)", s, n);
		mask |= 1u << i;
		s = *end ? end + 1 : end;
	}
	return mask;
}

/*
 * Loads the configuration and the client key file (any role, or a
 * server's key file, which connects as that server: a peer).  A
 * subcommand that signs (need_mac) refuses a key file without MAC keys.
 */
void
tc_load(bool need_mac)
{
	char e[512];

	if (bft_crypto_init() != 0 || opt.config == NULL)
		errx(1, "--config is required (or libsodium failed)");
	if (bft_config_load(opt.config, &cfg, e, sizeof e) != 0)
		errx(1, "%s", e);
	n = cfg.n;
	t = cfg.t;
	/* An address (proto.h): volume 0's blocks, or another volume's. */
	if (!bft_addr_ok(opt.block, cfg.nblocks))
		errx(1, "block %" PRIu64 " is beyond the disk", opt.block);
	if (opt.keys == NULL)
		errx(1, "--keys is required (a client key file: the channel "
		    "needs an identity)");
	if (bft_client_key_load(opt.keys, &key, e, sizeof e) != 0) {
		struct bft_server_key sk;
		char e2[512];

		/* A server's key file: connect as that server, a peer. */
		if (bft_server_key_load(opt.keys, &sk, e2, sizeof e2) != 0)
			errx(1, "%s", e);
		bft_peer_key(&sk, &key);
		bft_wipe(&sk, sizeof sk);
	}
	if (memcmp(key.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN) != 0)
		errx(1, "%s is a key of another cluster", opt.keys);
	if (key.role != BFT_ROLE_RW) {
		if (need_mac)
			errx(1, "%s is the %s client '%s': it holds no MAC "
			    "keys, and %s signs timestamps and MAC vectors; "
			    "use a writer's key file", opt.keys,
			    bft_role_str(key.role), key.name, opt.cmd);
		return;
	}
	if (key.n != n)
		errx(1, "the key file is for n = %u, not %u", key.n, n);
}

static uint64_t
parse_u64(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	if (*s == '\0' || *s == '-' || *end)
		errx(1, "not a number: %s", s);
	return v;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "config", 1, NULL, 'c' }, { "keys", 1, NULL, 'k' },
		{ "block", 1, NULL, 'b' }, { "count", 1, NULL, 'n' },
		{ "data-seed", 1, NULL, 'd' }, { "stop-after", 1, NULL, 's' },
		{ "servers", 1, NULL, 'S' }, { "complete-to", 1, NULL, 'C' },
		{ "forgery", 1, NULL, 'f' }, { "hang", 0, NULL, 'H' },
		{ "mode", 1, NULL, 'm' }, { "hold", 1, NULL, 'o' },
		{ "complete-last", 0, NULL, 'L' }, { "view", 1, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static uint8_t data[BFT_BLOCK_SIZE];
	const char *cmd = argc > 1 ? argv[1] : "";
	int ch;

	setvbuf(stdout, NULL, _IOLBF, 0);
	opt.cmd = cmd;
	while ((ch = getopt_long(argc - 1, argv + 1, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'c': opt.config = optarg; break;
		case 'k': opt.keys = optarg; break;
		case 'b': opt.block = parse_u64(optarg); break;
		case 'n': opt.count = parse_u64(optarg); break;
		case 'd': opt.seed = optarg; break;
		case 's': opt.stop = optarg; break;
		case 'S': opt.servers = optarg; break;
		case 'C': opt.complete_to = optarg; break;
		case 'f': opt.forgery = (int)(parse_u64(optarg) % NFORGED);
			break;
		case 'H': opt.hang = 1; break;
		case 'm': opt.mode = optarg; break;
		case 'o': opt.hold = parse_u64(optarg); break;
		case 'L': opt.complete_last = 1; break;
		case 'V':
			opt.has_view = 1;
			opt.view = parse_u64(optarg);
			break;
		default: goto usage;
		}
	}
	if (optind + 1 != argc)
		goto usage;
	if (strcmp(cmd, "pattern") == 0) {
		if (bft_crypto_init() != 0)
			errx(1, "libsodium failed to initialise");
		tc_pattern(opt.seed, data);
		return fwrite(data, 1, sizeof data, stdout) == sizeof data ?
		    0 : 1;
	}
	if (strcmp(cmd, "partial-write") == 0)
		return tc_cmd_partial_write();
	if (strcmp(cmd, "stutter") == 0)
		return tc_cmd_stutter();
	if (strcmp(cmd, "forge-filter") == 0)
		return tc_cmd_forge(BFT_FILTER);
	if (strcmp(cmd, "forge-repair") == 0)
		return tc_cmd_forge(BFT_REPAIR);
	if (strcmp(cmd, "forge-keys") == 0)
		return tc_cmd_forge_keys();
	if (strcmp(cmd, "probe") == 0)
		return tc_cmd_probe();
	if (strcmp(cmd, "tamper") == 0)
		return tc_cmd_tamper();
	if (strcmp(cmd, "peek") == 0)
		return tc_cmd_peek();
	if (strcmp(cmd, "pipeline") == 0)
		return tc_cmd_pipeline();
	if (strcmp(cmd, "flood") == 0)
		return tc_cmd_flood();
	if (strcmp(cmd, "collect-save") == 0)
		return tc_cmd_collect_save();
	if (strcmp(cmd, "filter-back") == 0)
		return tc_cmd_filter_back();
	if (strcmp(cmd, "finalized") == 0)
		return tc_cmd_finalized();
	if (strcmp(cmd, "view-lc") == 0)
		return tc_cmd_view_lc();
usage:
	fprintf(stderr, "usage: %s pattern|partial-write|stutter|forge-filter"
	    "|forge-repair|forge-keys|probe|tamper|peek|pipeline|flood|view-lc"
	    "|collect-save|filter-back|finalized [options] (see the "
	    "source)\n",
	    argv[0]);
	return 1;
}
