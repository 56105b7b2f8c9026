/*
 * Writes: pattern (the value of a seed), and partial-write and stutter,
 * which stop half-way; those two sign timestamps and MAC vectors, so
 * they need a writer's key file.
 */
#include <err.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crypto.h"
#include "ec.h"
#include "testclient.h"

/* The 64 KiB value of a seed: the scripts compare reads against it. */
void
tc_pattern(const char *seed, uint8_t *out)
{
	char in[256];

	for (uint32_t j = 0; j < BFT_BLOCK_SIZE / BFT_HASH_LEN; j++) {
		int len = snprintf(in, sizeof in, "%s/%" PRIu32, seed, j);

		bft_hash(in, (size_t)len, out + (size_t)j * BFT_HASH_LEN);
	}
}

/*
 * CLOCK to the servers of mask: the highest lc.ts carrying a valid MAC,
 * or zero.  Returns the number of servers that answered.
 */
static unsigned
clock_round(uint32_t mask, struct bft_ts *high)
{
	unsigned answered = 0;

	memset(high, 0, sizeof *high);
	FOR_EACH(i, mask) {
		tc_new_req(BFT_CLOCK);
		if (tc_xfer(i) != BFT_OK)
			continue;
		answered++;
		if (bft_ts_cmp(&rep.ts, high) > 0 &&
		    bft_ts_verify(&rep.ts, opt.block, key.kw))
			*high = rep.ts;
	}
	return answered;
}

/* One write as Algorithm 4 builds it. */
static struct {
	struct bft_ts ts;
	uint8_t nonce[BFT_NONCE_LEN], nh[BFT_HASH_LEN];
	uint8_t vec[BFT_MAX_N][BFT_MAC_LEN];
	uint8_t cc[BFT_MAX_N][BFT_HASH_LEN];
	uint8_t *frags[BFT_MAX_N];
	uint32_t flen;
} w;

/* Fragments of the seed's value, and connections to mask. */
static void
write_setup(uint32_t mask)
{
	static uint8_t data[BFT_BLOCK_SIZE];
	static struct bft_ec *ec;	/* static: still reachable at exit */
	char e[256];

	if (bft_ec_new(t, NULL, &ec, e, sizeof e) != 0)
		errx(1, "%s", e);
	tc_pattern(opt.seed, data);
	w.flen = bft_ec_frag_len(ec);
	for (unsigned i = 0; i < n; i++)
		if ((w.frags[i] = malloc(w.flen)) == NULL)
			err(1, "malloc");
	if (bft_ec_encode(ec, data, w.frags) != 0)
		errx(1, "erasure coding failed");
	for (unsigned i = 0; i < n; i++)
		bft_hash(w.frags[i], w.flen, w.cc[i]);
	tc_connect_servers(mask);
}

/* Signs w.ts; a fresh nonce and the MAC vector (lines 88-90). */
static void
write_seal(void)
{
	bft_ts_sign(&w.ts, opt.block, key.kw);
	bft_random(w.nonce, BFT_NONCE_LEN);
	bft_hash(w.nonce, BFT_NONCE_LEN, w.nh);
	for (unsigned i = 0; i < n; i++)
		bft_vec_mac(&w.ts, opt.block, w.nh, key.k[i], w.vec[i]);
}

/* One STORE or COMPLETE of w to server i; its status, or -1. */
static int
write_send(unsigned type, unsigned i)
{
	tc_new_req(type);
	req.ts = w.ts;
	memcpy(req.vec, w.vec, sizeof req.vec);
	if (type == BFT_COMPLETE) {
		memcpy(req.nonce, w.nonce, BFT_NONCE_LEN);
		return tc_xfer(i);
	}
	memcpy(req.nh, w.nh, BFT_HASH_LEN);
	memcpy(req.cc, w.cc, sizeof req.cc);
	req.frag = w.frags[i];
	req.frag_len = w.flen;
	return tc_xfer(i);
}

/* After phase `what`: exit, or with --hang wait to be killed. */
static void
maybe_stop(const char *what)
{
	if (strcmp(opt.stop, what) != 0)
		return;
	printf("stopped after %s\n", what);
	if (opt.hang) {
		printf("hanging\n");
		for (;;)
			pause();
	}
	exit(0);
}

int
tc_cmd_partial_write(void)
{
	uint32_t mask, cmask;

	if (opt.stop == NULL || (strcmp(opt.stop, "clock") &&
	    strcmp(opt.stop, "store") && strcmp(opt.stop, "complete")))
		errx(1, "--stop-after must be clock, store or complete");
	tc_load(true);
	mask = tc_parse_list(opt.servers);
	cmask = opt.complete_to ? tc_parse_list(opt.complete_to) : mask;
	write_setup(mask | cmask);
	if (clock_round(mask, &w.ts) == 0)
		errx(1, "no server answered CLOCK");
	w.ts.num++;
	bft_random(&w.ts.wid, sizeof w.ts.wid);
	w.ts.wid |= 1;
	write_seal();
	tc_print_ts("write", &w.ts);
	maybe_stop("clock");
	FOR_EACH(i, mask)
		printf("server %u: STORE %s\n", i,
		    tc_status_name(write_send(BFT_STORE, i)));
	maybe_stop("store");
	FOR_EACH(i, cmask)
		printf("server %u: COMPLETE %s\n", i,
		    tc_status_name(write_send(BFT_COMPLETE, i)));
	maybe_stop("complete");
	return 0;
}

/*
 * A writer that keeps starting writes on one block and never completes
 * them, each with a new timestamp of one writer id: the servers' cap on
 * pending STOREs must refuse it with EBUSY instead of storing forever.
 */
int
tc_cmd_stutter(void)
{
	uint64_t ok[BFT_MAX_N] = { 0 }, busy[BFT_MAX_N] = { 0 };
	uint64_t other[BFT_MAX_N] = { 0 };
	struct bft_ts high, last = { 0 };
	uint32_t mask;
	int st, rc = 0;

	tc_load(true);
	mask = tc_parse_list(opt.servers);
	write_setup(mask);
	bft_random(&last.wid, sizeof last.wid);
	last.wid |= 1;
	printf("stutter: writer %016" PRIx64 ", %" PRIu64 " writes\n",
	    last.wid, opt.count);
	for (uint64_t k = 0; k < opt.count; k++) {
		if (clock_round(mask, &high) == 0)
			errx(1, "no server answered CLOCK (write %" PRIu64 ")",
			    k);
		w.ts = bft_ts_cmp(&high, &last) > 0 ? high : last;
		w.ts.num++;
		w.ts.wid = last.wid;
		write_seal();
		last = w.ts;
		FOR_EACH(i, mask) {
			st = write_send(BFT_STORE, i);
			if (st == BFT_OK)
				ok[i]++;
			else if (st == BFT_EBUSY)
				busy[i]++;
			else if (other[i]++ < 10)
				printf("server %u: write %" PRIu64 ": %s\n", i,
				    k, tc_status_name(st));
		}
	}
	/* The last write completed retires every earlier one. */
	if (opt.complete_last && opt.count > 0)
		FOR_EACH(i, mask)
			printf("server %u: COMPLETE of the last write: %s\n",
			    i, tc_status_name(write_send(BFT_COMPLETE, i)));
	FOR_EACH(i, mask) {
		printf("server %u: accepted %" PRIu64 " ebusy %" PRIu64
		    " other %" PRIu64 "\n", i, ok[i], busy[i], other[i]);
		if (other[i] > 0)
			rc = 1;
		else if (busy[i] == 0 && rc == 0)
			rc = 2;
	}
	tc_print_ts("last", &last);
	return rc;
}
