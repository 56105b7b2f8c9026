/*
 * flood, collect-save and filter-back: what a client that may
 * only read (or a peer) tries against the servers' event loops and
 * against deleted volumes.
 *
 * flood sends SUMMARYs of --block (1024 ranges of 1024 blocks), or
 * with --mode flush FLUSHes, to each server of --servers in turn, one
 * at a time, for --hold seconds or --count rounds, whichever ends
 * first, and prints "flood: N answered ok, M refused (status S),
 * slowest X ms".
 *
 * collect-save COLLECTs --block's lc from the first server of
 * --servers that has one and writes the candidate to --data-seed (a file name):
 * what a reader keeps.  filter-back reads that file and sends the
 * candidate as a FILTER (whose write-back takes a newer candidate into
 * lc) to each server of --servers, printing "server I: FILTER status N
 * (name)"; both exit 0 when every request was answered.  With --view
 * GEN both go to a snapshot's view (VCOLLECT, VFILTER): a reader that
 * kept a candidate of the head sends it back as the snapshot's.
 *
 * view-lc asks each server of --servers for lc of --count blocks from
 * --block in the view at --view GEN (VCOLLECT), one line each: "server
 * I block B: TS" with TS "num/wid", "never written" or the refusal's
 * status name; what one server holds for a snapshot, which a reader's
 * quorum would hide.
 */
#include <err.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "testclient.h"

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
tc_cmd_flood(void)
{
	bool flush = opt.mode != NULL && strcmp(opt.mode, "flush") == 0;
	uint64_t ok = 0, refused = 0, rounds = opt.count ? opt.count :
	    UINT64_MAX;
	double start, t0, slowest = 0;
	int last = 0, st;
	uint32_t mask;

	tc_load(false);
	mask = tc_parse_list(opt.servers);
	tc_connect_servers(mask);
	start = now_s();
	for (uint64_t r = 0; r < rounds && (opt.hold == 0 ||
	    now_s() - start < (double)opt.hold); r++) {
		FOR_EACH(i, mask) {
			tc_new_req(flush ? BFT_FLUSH : BFT_SUMMARY);
			req.count = flush ? 0 : 1u << 20;
			req.span = flush ? 0 : 1024;
			t0 = now_s();
			if ((st = tc_xfer(i)) < 0)
				errx(1, "server %u: no answer", i);
			if (now_s() - t0 > slowest)
				slowest = now_s() - t0;
			if (st == BFT_OK) {
				ok++;
			} else {
				refused++;
				last = st;
			}
		}
	}
	if (opt.mode != NULL && !flush && strcmp(opt.mode, "summary") != 0)
		errx(1, "--mode summary or flush");
	printf("flood: %" PRIu64 " answered ok, %" PRIu64 " refused "
	    "(status %d), slowest %.0f ms\n", ok, refused, last,
	    slowest * 1000);
	return 0;
}

int
tc_cmd_collect_save(void)
{
	uint32_t mask;
	FILE *fp;
	int st;

	if (opt.seed == NULL)
		errx(1, "--data-seed FILE is required");
	tc_load(false);
	mask = tc_parse_list(opt.servers);
	tc_connect_servers(mask);
	FOR_EACH(i, mask) {
		tc_new_req(opt.has_view ? BFT_VCOLLECT : BFT_COLLECT);
		req.gen = opt.view;
		/* A write completes at n - t servers: this may lack it. */
		if ((st = tc_xfer(i)) != BFT_OK || rep.ncands != 1 ||
		    bft_ts_is_zero(&rep.cands[0].ts)) {
			printf("server %u: no completed write on block %"
			    PRIu64 " (%s)\n", i, opt.block,
			    tc_status_name(st));
			continue;
		}
		if ((fp = fopen(opt.seed, "wb")) == NULL ||
		    fwrite(&rep.cands[0], sizeof rep.cands[0], 1, fp) != 1 ||
		    fclose(fp) != 0)
			err(1, "%s", opt.seed);
		tc_print_ts("collect-save: lc", &rep.cands[0].ts);
		return 0;
	}
	errx(1, "no server holds a completed write of block %" PRIu64,
	    opt.block);
}

int
tc_cmd_filter_back(void)
{
	struct bft_cand c;
	uint32_t mask;
	FILE *fp;
	int st, rc = 0;

	if (opt.seed == NULL)
		errx(1, "--data-seed FILE is required");
	if ((fp = fopen(opt.seed, "rb")) == NULL ||
	    fread(&c, sizeof c, 1, fp) != 1)
		err(1, "%s", opt.seed);
	fclose(fp);
	tc_load(false);
	mask = tc_parse_list(opt.servers);
	tc_connect_servers(mask);
	FOR_EACH(i, mask) {
		tc_new_req(opt.has_view ? BFT_VFILTER : BFT_FILTER);
		req.gen = opt.view;
		req.cands[0] = c;
		req.ncands = 1;
		st = tc_xfer(i);
		printf("server %u: FILTER status %d (%s)\n", i, st,
		    tc_status_name(st));
		if (st < 0)
			rc = 1;
	}
	return rc;
}

int
tc_cmd_view_lc(void)
{
	uint32_t mask;
	int st;

	if (!opt.has_view || opt.count == 0)
		errx(1, "--view GEN and --count N are required");
	tc_load(false);
	mask = tc_parse_list(opt.servers);
	tc_connect_servers(mask);
	FOR_EACH(i, mask) {
		for (uint64_t b = opt.block; b < opt.block + opt.count; b++) {
			tc_new_req(BFT_VCOLLECT);
			req.block = b;
			req.gen = opt.view;
			st = tc_xfer(i);
			printf("server %u block %" PRIu64 ": ", i, b);
			if (st != BFT_OK || rep.ncands != 1)
				printf("%s\n", tc_status_name(st));
			else if (bft_ts_is_zero(&rep.cands[0].ts))
				printf("never written\n");
			else
				printf("%" PRIu64 "/%" PRIu64 "\n",
				    rep.cands[0].ts.num, rep.cands[0].ts.wid);
		}
	}
	return 0;
}
