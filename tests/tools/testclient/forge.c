/*
 * A Byzantine reader: forge-filter and forge-repair write back
 * candidates it made up and check that no server takes them.
 */
#include <err.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "crypto.h"
#include "testclient.h"

/* Equality of the parts of a candidate a server keeps for n servers. */
static bool
cand_eq(const struct bft_cand *a, const struct bft_cand *b)
{
	return a->ts.num == b->ts.num && a->ts.wid == b->ts.wid &&
	    memcmp(a->ts.mac, b->ts.mac, BFT_MAC_LEN) == 0 &&
	    memcmp(a->nonce, b->nonce, BFT_NONCE_LEN) == 0 &&
	    memcmp(a->vec, b->vec, (size_t)n * BFT_MAC_LEN) == 0;
}

/* Every server's lc; up[i] false when server i did not answer. */
static void
collect_all(struct bft_cand lc[BFT_MAX_N], bool up[BFT_MAX_N])
{
	for (unsigned i = 0; i < n; i++) {
		tc_new_req(BFT_COLLECT);
		up[i] = tc_xfer(i) == BFT_OK && rep.ncands == 1;
		memset(&lc[i], 0, sizeof lc[i]);
		if (up[i])
			lc[i] = rep.cands[0];
	}
}

#define NSAME 3

static struct {
	const char *name;
	struct bft_cand c;
} f[NFORGED];

/*
 * Forgeries of the real candidate r; none carries a proof of writing.
 * The first NSAME keep r's timestamp, so only a server whose lc is
 * older than r can take them.
 */
static void
make_forged(const struct bft_cand *r)
{
	static const char *names[NFORGED] = {
		"real nonce and vec, garbled ts MAC",
		"real ts and vec, wrong nonce",
		"real ts and nonce, garbled vec",
		"random nonce, vec and MAC under a huge ts",
		"highest possible ts, random nonce and vec",
		"real candidate with ts.num + 1",
		"real candidate with ts.num + 1000000",
		"real candidate under another writer id",
	};

	for (unsigned k = 0; k < NFORGED; k++) {
		f[k].name = names[k];
		f[k].c = *r;
	}
	f[0].c.ts.mac[3] ^= 0x01;
	bft_random(f[1].c.nonce, BFT_NONCE_LEN);
	for (unsigned i = 0; i < n; i++)
		f[2].c.vec[i][i % BFT_MAC_LEN] ^= 0x5a;
	bft_random(&f[3].c, sizeof f[3].c);
	f[3].c.ts.num = r->ts.num + (1ull << 40);
	f[3].c.ts.wid = r->ts.wid;
	bft_random(&f[4].c, sizeof f[4].c);
	f[4].c.ts.num = f[4].c.ts.wid = UINT64_MAX;
	f[5].c.ts.num++;
	f[6].c.ts.num += 1000000;
	f[7].c.ts.wid ^= 0x2;
}

/*
 * COLLECTs from every server and counts the lc values that changed since
 * prev to a forgery; prev is updated.
 */
static unsigned
check_lc(const struct bft_cand *real, struct bft_cand prev[BFT_MAX_N])
{
	struct bft_cand lc[BFT_MAX_N];
	bool up[BFT_MAX_N];
	unsigned bad = 0;

	collect_all(lc, up);
	for (unsigned i = 0; i < n; i++) {
		if (!up[i] || cand_eq(&lc[i], &prev[i]))
			continue;
		printf("server %u: lc changed to ts %" PRIu64 "/%016" PRIx64
		    "\n", i, lc[i].ts.num, lc[i].ts.wid);
		for (unsigned j = 0; j < NFORGED; j++)
			if (cand_eq(&lc[i], &f[j].c)) {
				printf("FORGED ACCEPTED: server %u set lc to "
				    "forgery '%s'\n", i, f[j].name);
				bad++;
			}
		if (cand_eq(&lc[i], real))
			printf("server %u: lc is the real candidate (an "
			    "honest write-back)\n", i);
		prev[i] = lc[i];
	}
	return bad;
}

static void
send_forged(unsigned type, const struct bft_cand *c, unsigned nc,
    uint32_t mask)
{
	int st;

	FOR_EACH(i, mask) {
		tc_new_req(type);
		memcpy(req.cands, c, nc * sizeof *c);
		req.ncands = nc;
		st = tc_xfer(i);
		if (st != BFT_OK)
			printf("server %u: %s: %s\n", i, bft_msg_type_str(type),
			    tc_status_name(st));
		else if (type == BFT_FILTER)
			printf("server %u: FILTER_ACK ts %" PRIu64 "/%016"
			    PRIx64 "%s\n", i, rep.ts.num, rep.ts.wid,
			    rep.frag_len ? " with a fragment" : "");
	}
}

/*
 * A Byzantine reader (an authorized client, read-only keys are enough:
 * it never needs a MAC key): COLLECTs the real candidates, then writes back
 * forgeries of the highest one, alone and mixed with the real one, and
 * checks after each that no server's lc became a forgery.  A forgery
 * under the real timestamp can be tried only once per server whose lc
 * is older, so each of those goes to a different such server.
 */
int
tc_cmd_forge(unsigned type)
{
	struct bft_cand lc[BFT_MAX_N], real, mix[BFT_MAX_N];
	bool up[BFT_MAX_N];
	unsigned bad = 0;
	uint32_t lag = 0, mask;
	int h = -1;

	tc_load(false);
	tc_connect_servers(ALL);
	collect_all(lc, up);
	FOR_EACH(i, ALL) {
		if (!up[i])
			continue;
		printf("server %u: lc ts %" PRIu64 "/%016" PRIx64 "\n", i,
		    lc[i].ts.num, lc[i].ts.wid);
		if (!bft_ts_is_zero(&lc[i].ts) &&
		    (h < 0 || bft_ts_cmp(&lc[i].ts, &lc[h].ts) > 0))
			h = (int)i;
	}
	if (h < 0)
		errx(1, "no server has a completed write on this block");
	real = lc[h];
	tc_print_ts("forging from", &real.ts);
	make_forged(&real);
	FOR_EACH(i, ALL)
		if (up[i] && bft_ts_cmp(&lc[i].ts, &real.ts) < 0)
			lag |= 1u << i;
	printf("servers with an older lc: 0x%x\n", lag);
	for (unsigned j = 0; j < NFORGED; j++) {
		if (opt.forgery >= 0 && (unsigned)opt.forgery != j)
			continue;
		mask = ALL;
		if (opt.forgery < 0 && j < NSAME && lag != 0) {
			mask = lag & -lag;
			lag &= lag - 1;
		}
		printf("%s of '%s' to servers 0x%x\n", bft_msg_type_str(type),
		    f[j].name, mask);
		send_forged(type, &f[j].c, 1, mask);
		bad += check_lc(&real, lc);
	}
	/* Forgeries listed before the real candidate must not win c_wb. */
	for (unsigned j = 0; type == BFT_FILTER && opt.forgery < 0 &&
	    j < NFORGED; j += n - 1) {
		for (unsigned m = 0; m + 1 < n; m++)
			mix[m] = f[(j + m) % NFORGED].c;
		mix[n - 1] = real;
		printf("FILTER of %u forgeries from '%s' on, then the real "
		    "candidate\n", n - 1, f[j].name);
		send_forged(type, mix, n, ALL);
		bad += check_lc(&real, lc);
	}
	printf("%s: %u forgeries accepted\n", bft_msg_type_str(type), bad);
	return bad ? 1 : 0;
}

/*
 * Whoever holds a writer's key file (a leaked one, perhaps of a retired
 * MAC key epoch) with a Byzantine server's help: a candidate above
 * every server's lc, its MACs under the file's keys, written back with
 * REPAIR to every server as that server's reads would.  Prints what
 * each server did; 1 when any took it as lc, 0 when none did.
 */
int
tc_cmd_forge_keys(void)
{
	struct bft_cand lc[BFT_MAX_N], c;
	uint8_t nh[BFT_HASH_LEN];
	bool up[BFT_MAX_N];
	unsigned took = 0, answered = 0;
	int h = -1, st;

	tc_load(true);
	tc_connect_servers(ALL);
	collect_all(lc, up);
	FOR_EACH(i, ALL)
		if (up[i] && (h < 0 || bft_ts_cmp(&lc[i].ts, &lc[h].ts) > 0))
			h = (int)i;
	if (h < 0)
		errx(2, "no server answered COLLECT");
	memset(&c, 0, sizeof c);
	c.ts.num = lc[h].ts.num + 1000;
	c.ts.wid = lc[h].ts.wid;
	bft_random(c.nonce, BFT_NONCE_LEN);
	bft_ts_sign(&c.ts, opt.block, key.kw);
	bft_hash(c.nonce, BFT_NONCE_LEN, nh);
	FOR_EACH(i, ALL)
		bft_vec_mac(&c.ts, opt.block, nh, key.k[i], c.vec[i]);
	tc_print_ts("forged", &c.ts);
	FOR_EACH(i, ALL) {
		tc_new_req(BFT_REPAIR);
		req.cands[0] = c;
		req.ncands = 1;
		st = tc_xfer(i);
		printf("server %u: REPAIR %s\n", i, tc_status_name(st));
	}
	collect_all(lc, up);
	FOR_EACH(i, ALL) {
		if (!up[i])
			continue;
		answered++;
		if (cand_eq(&lc[i], &c)) {
			printf("server %u: took the forgery as lc\n", i);
			took++;
		} else {
			printf("server %u: lc unchanged\n", i);
		}
	}
	printf("forge-keys: %u of %u servers took it\n", took, answered);
	return took ? 1 : 0;
}
