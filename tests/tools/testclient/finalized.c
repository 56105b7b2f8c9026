/*
 * finalized: what libbftblk's bftblk__cluster_finalized (lib/cluster_int.h)
 * answers for feature --count F (default 0, clone entries), through a
 * handle opened with --config and --keys (shared=on: it must not take
 * the lease of a running writer).  Prints "finalized N" (1 or
 * 0) and exits 0, or prints the error and exits 1.
 */
#include <err.h>
#include <stdio.h>

#include "bftblk.h"
#include "cluster_int.h"
#include "testclient.h"

int
tc_cmd_finalized(void)
{
	struct bftblk *h;
	int r;

	if (opt.config == NULL || opt.keys == NULL)
		errx(1, "--config and --keys are required");
	if (bftblk_open(opt.config, opt.keys, "shared=on timeout=3", &h) != 0)
		errx(1, "open: %s", bftblk_errmsg(NULL));
	r = bftblk__cluster_finalized(h, (unsigned)opt.count);
	if (r < 0)
		printf("error %d: %s\n", r, bftblk_errmsg(h));
	else
		printf("finalized %d\n", r);
	bftblk_close(h);
	return r < 0 ? 1 : 0;
}
