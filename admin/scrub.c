/*
 * bftblk scrub: asks every server to check its own fragments now
 * (SCRUB), rather than at its next periodic pass.  A writer's key file
 * is needed: a scrub costs the servers disk reads.  What the servers
 * find and repair shows in their logs and in bftblk status.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "config.h"
#include "keys.h"
#include "log.h"
#include "session.h"

#define TIMEOUT_MS	5000

static int
scrub(const char *dir, const char *keys)
{
	static struct bft_config cfg;
	static struct bft_client_key key;
	static struct bft_msg req, rep;
	char err[512];
	int r;
	unsigned asked = 0;

	if ((r = admin_load_cluster(dir, keys, &cfg, &key, err,
	    sizeof err)) != 0) {
		if (r == -ENAMETOOLONG)
			return 2;
		bft_log("%s", err);
		return 1;
	}
	for (unsigned i = 0; i < cfg.n; i++) {
		char addr[BFT_ADDR_STRLEN];
		struct bft_session_fail f;
		struct bft_session s;
		const char *why = NULL;
		int st;

		printf("server %u %s: ", i, bft_format_addr(&cfg.servers[i],
		    addr, sizeof addr));
		if (bft_session_open(&s, &cfg, &key, i, TIMEOUT_MS, true,
		    &f) != 0) {
			printf("unreachable: %s\n", f.why);
			continue;
		}
		memset(&req, 0, sizeof req);
		req.type = BFT_SCRUB;
		st = bft_session_call(&s, &req, &rep, &why);
		if (st == BFT_OK) {
			printf("scrub started\n");
			asked++;
		} else {
			printf("refused: %s\n", st < 0 ? why :
			    bft_status_str(st));
		}
		bft_session_close(&s);
	}
	printf("%u of %u servers scrubbing; see their logs and bftblk "
	    "status\n", asked, cfg.n);
	return asked == cfg.n ? 0 : 1;
}

int
admin_scrub(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "keys", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = NULL, *keys = NULL;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:k:", opts, NULL)) != -1) {
		if (c == 'd')
			dir = optarg;
		else if (c == 'k')
			keys = optarg;
		else {
			admin_usage(stderr);
			return 2;
		}
	}
	if (dir == NULL || optind != argc) {
		admin_usage(stderr);
		return 2;
	}
	return scrub(dir, keys);
}
