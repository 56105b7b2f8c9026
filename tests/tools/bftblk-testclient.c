/*
 * A misbehaving bftblk client for the fault scenarios in tests/faults/.
 * It speaks the wire protocol directly, one blocking socket per server,
 * and does what the plugin never does: stops a write half-way, leaves
 * STOREs behind without ever completing them, or writes back candidates
 * it made up.  Exit status: 0 when the cluster behaved, 1 when a server
 * accepted what it must refuse (or the tool failed), 2 when an expected
 * refusal was not seen (stutter only).
 *
 *   pattern       --data-seed S                      (64 KiB to stdout)
 *   partial-write --config C --keys K --block B --stop-after clock|store|
 *                 complete [--data-seed S] [--servers L] [--complete-to L]
 *                 [--hang]
 *   stutter       --config C --keys K --block B --count N [--servers L]
 *   forge-filter  --config C --block B [--forgery I]
 *   forge-repair  --config C --block B [--forgery I]
 *
 * L is a comma-separated list of server indices (default: all).  With
 * --hang, partial-write waits to be killed where it would have exited.
 */
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "crypto.h"
#include "ec.h"
#include "keys.h"
#include "wire.h"

#define IO_TIMEOUT_S	10
#define ALL		((1u << n) - 1)
#define FOR_EACH(i, mask) \
	for (unsigned i = 0; i < n; i++) if ((mask) & (1u << i))

static struct bft_config cfg;
static struct bft_client_key key;
static int fds[BFT_MAX_N];		/* -1: down or never reached */
static uint8_t *rbuf;			/* one frame body; rep points into it */
static unsigned n, t;
static uint64_t next_id = 1;
static struct bft_msg req, rep;		/* big: kept off the stack */

static struct {
	const char *config, *keys, *seed, *stop, *servers, *complete_to;
	uint64_t block, count;
	int hang, forgery;
} opt = { .seed = "0", .forgery = -1 };

/* The 64 KiB value of a seed: the scripts compare reads against it. */
static void
pattern(const char *seed, uint8_t *out)
{
	char in[256];

	for (uint32_t j = 0; j < BFT_BLOCK_SIZE / BFT_HASH_LEN; j++) {
		int len = snprintf(in, sizeof in, "%s/%" PRIu32, seed, j);

		bft_hash(in, (size_t)len, out + (size_t)j * BFT_HASH_LEN);
	}
}

static uint32_t
parse_list(const char *s)
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

static void
disconnect(unsigned i, const char *why)
{
	printf("server %u: disconnected: %s\n", i, why);
	close(fds[i]);
	fds[i] = -1;
}

/* send() or recv() of exactly len bytes; -1 on error, EOF or timeout. */
static int
io_all(int fd, uint8_t *p, size_t len, bool out)
{
	while (len > 0) {
		ssize_t r = out ? send(fd, p, len, MSG_NOSIGNAL) :
		    recv(fd, p, len, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

/*
 * Sends req to server i and waits for the reply with the same id into
 * rep.  Returns rep.status, or -1 when the server is gone (it is then
 * marked down and skipped by later rounds).
 */
static int
xfer(unsigned i)
{
	struct bft_buf out = { 0 };
	const char *why = NULL;
	uint8_t pre[4];
	uint32_t len;

	if (fds[i] < 0)
		return -1;
	req.id = next_id++;
	if (bft_wire_encode(&req, n, &out) != 0)
		errx(1, "cannot encode a %s", bft_msg_type_str(req.type));
	if (io_all(fds[i], out.data, out.len, true) != 0)
		why = "send failed";
	bft_buf_free(&out);
	while (why == NULL) {
		if (io_all(fds[i], pre, 4, false) != 0) {
			why = "no reply (closed or timed out)";
			break;
		}
		len = (uint32_t)pre[0] << 24 | (uint32_t)pre[1] << 16 |
		    (uint32_t)pre[2] << 8 | pre[3];
		if (len > BFT_MAX_FRAME ||
		    io_all(fds[i], rbuf, len, false) != 0) {
			why = "reply frame too long or cut short";
			break;
		}
		if (bft_wire_decode(rbuf, len, n, &rep, &why) != 0)
			break;
		if (rep.id == req.id && rep.type == (req.type | BFT_ACK))
			return rep.status;
	}
	disconnect(i, why);
	return -1;
}

static const char *
status_name(int st)
{
	return st < 0 ? "no reply" : st == BFT_OK ? "ok" : bft_status_str(st);
}

/* A request of type for opt.block, to fill in before xfer(). */
static void
new_req(unsigned type)
{
	memset(&req, 0, sizeof req);
	req.type = (uint8_t)type;
	req.block = opt.block;
}

/* Connects to the servers of mask and says HELLO; no keys are needed. */
static void
connect_servers(uint32_t mask)
{
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char port[16];
	int one = 1, st;

	if ((rbuf = malloc(BFT_MAX_FRAME)) == NULL)
		err(1, "malloc");
	for (unsigned i = 0; i < n; i++)
		fds[i] = -1;
	FOR_EACH(i, mask) {
		snprintf(port, sizeof port, "%u", cfg.servers[i].port);
		if (getaddrinfo(cfg.servers[i].host, port, &hints, &ai) != 0)
			errx(1, "cannot resolve %s", cfg.servers[i].host);
		fds[i] = socket(ai->ai_family, SOCK_STREAM, 0);
		if (fds[i] < 0 || connect(fds[i], ai->ai_addr,
		    ai->ai_addrlen) != 0) {
			printf("server %u: cannot connect: %s\n", i,
			    strerror(errno));
			disconnect(i, "no connection");
		}
		freeaddrinfo(ai);
		if (fds[i] < 0)
			continue;
		setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		setsockopt(fds[i], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		new_req(BFT_HELLO);
		req.block = 0;
		memcpy(req.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN);
		req.hello_n = n;
		req.hello_t = t;
		req.block_size = cfg.block_size;
		req.nblocks = cfg.nblocks;
		req.server_index = i;
		if ((st = xfer(i)) > 0) {
			printf("server %u: HELLO: %s\n", i, status_name(st));
			disconnect(i, "HELLO refused");
		}
	}
}

static void
load(bool need_keys)
{
	char e[512];

	if (bft_crypto_init() != 0 || opt.config == NULL)
		errx(1, "--config is required (or libsodium failed)");
	if (bft_config_load(opt.config, &cfg, e, sizeof e) != 0)
		errx(1, "%s", e);
	n = cfg.n;
	t = cfg.t;
	if (opt.block >= cfg.nblocks)
		errx(1, "block %" PRIu64 " is beyond the disk", opt.block);
	if (!need_keys)
		return;
	if (opt.keys == NULL)
		errx(1, "--keys is required");
	if (bft_client_key_load(opt.keys, &key, e, sizeof e) != 0)
		errx(1, "%s", e);
	if (key.n != n)
		errx(1, "the key file is for n = %u, not %u", key.n, n);
}

static void
print_ts(const char *what, const struct bft_ts *ts)
{
	printf("%s ts %" PRIu64 "/%016" PRIx64 "\n", what, ts->num, ts->wid);
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
		new_req(BFT_CLOCK);
		if (xfer(i) != BFT_OK)
			continue;
		answered++;
		if (bft_ts_cmp(&rep.ts, high) > 0 &&
		    bft_ts_verify(&rep.ts, key.kw))
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

	if ((ec = bft_ec_new(t, NULL, e, sizeof e)) == NULL)
		errx(1, "%s", e);
	pattern(opt.seed, data);
	w.flen = bft_ec_frag_len(ec);
	for (unsigned i = 0; i < n; i++)
		if ((w.frags[i] = malloc(w.flen)) == NULL)
			err(1, "malloc");
	if (bft_ec_encode(ec, data, w.frags) != 0)
		errx(1, "erasure coding failed");
	for (unsigned i = 0; i < n; i++)
		bft_hash(w.frags[i], w.flen, w.cc[i]);
	connect_servers(mask);
}

/* Signs w.ts; a fresh nonce and the MAC vector (lines 88-90). */
static void
write_seal(void)
{
	bft_ts_sign(&w.ts, key.kw);
	bft_random(w.nonce, BFT_NONCE_LEN);
	bft_hash(w.nonce, BFT_NONCE_LEN, w.nh);
	for (unsigned i = 0; i < n; i++)
		bft_vec_mac(&w.ts, w.nh, key.k[i], w.vec[i]);
}

/* One STORE or COMPLETE of w to server i; its status, or -1. */
static int
write_send(unsigned type, unsigned i)
{
	new_req(type);
	req.ts = w.ts;
	memcpy(req.vec, w.vec, sizeof req.vec);
	if (type == BFT_COMPLETE) {
		memcpy(req.nonce, w.nonce, BFT_NONCE_LEN);
		return xfer(i);
	}
	memcpy(req.nh, w.nh, BFT_HASH_LEN);
	memcpy(req.cc, w.cc, sizeof req.cc);
	req.frag = w.frags[i];
	req.frag_len = w.flen;
	return xfer(i);
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

static int
cmd_partial_write(void)
{
	uint32_t mask, cmask;

	if (opt.stop == NULL || (strcmp(opt.stop, "clock") &&
	    strcmp(opt.stop, "store") && strcmp(opt.stop, "complete")))
		errx(1, "--stop-after must be clock, store or complete");
	load(true);
	mask = parse_list(opt.servers);
	cmask = opt.complete_to ? parse_list(opt.complete_to) : mask;
	write_setup(mask | cmask);
	if (clock_round(mask, &w.ts) == 0)
		errx(1, "no server answered CLOCK");
	w.ts.num++;
	bft_random(&w.ts.wid, sizeof w.ts.wid);
	w.ts.wid |= 1;
	write_seal();
	print_ts("write", &w.ts);
	maybe_stop("clock");
	FOR_EACH(i, mask)
		printf("server %u: STORE %s\n", i,
		    status_name(write_send(BFT_STORE, i)));
	maybe_stop("store");
	FOR_EACH(i, cmask)
		printf("server %u: COMPLETE %s\n", i,
		    status_name(write_send(BFT_COMPLETE, i)));
	maybe_stop("complete");
	return 0;
}

/*
 * A writer that keeps starting writes on one block and never completes
 * them, each with a new timestamp of one writer id: the servers' cap on
 * pending STOREs must refuse it with EBUSY instead of storing forever.
 */
static int
cmd_stutter(void)
{
	uint64_t ok[BFT_MAX_N] = { 0 }, busy[BFT_MAX_N] = { 0 };
	uint64_t other[BFT_MAX_N] = { 0 };
	struct bft_ts high, last = { 0 };
	uint32_t mask;
	int st, rc = 0;

	load(true);
	mask = parse_list(opt.servers);
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
				    k, status_name(st));
		}
	}
	FOR_EACH(i, mask) {
		printf("server %u: accepted %" PRIu64 " ebusy %" PRIu64
		    " other %" PRIu64 "\n", i, ok[i], busy[i], other[i]);
		if (other[i] > 0)
			rc = 1;
		else if (busy[i] == 0 && rc == 0)
			rc = 2;
	}
	print_ts("last", &last);
	return rc;
}

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
		new_req(BFT_COLLECT);
		up[i] = xfer(i) == BFT_OK && rep.ncands == 1;
		memset(&lc[i], 0, sizeof lc[i]);
		if (up[i])
			lc[i] = rep.cands[0];
	}
}

#define NFORGED 8
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
		new_req(type);
		memcpy(req.cands, c, nc * sizeof *c);
		req.ncands = nc;
		st = xfer(i);
		if (st != BFT_OK)
			printf("server %u: %s: %s\n", i, bft_msg_type_str(type),
			    status_name(st));
		else if (type == BFT_FILTER)
			printf("server %u: FILTER_ACK ts %" PRIu64 "/%016"
			    PRIx64 "%s\n", i, rep.ts.num, rep.ts.wid,
			    rep.frag_len ? " with a fragment" : "");
	}
}

/*
 * A reader without keys: COLLECTs the real candidates, then writes back
 * forgeries of the highest one, alone and mixed with the real one, and
 * checks after each that no server's lc became a forgery.  A forgery
 * under the real timestamp can be tried only once per server whose lc
 * is older, so each of those goes to a different such server.
 */
static int
cmd_forge(unsigned type)
{
	struct bft_cand lc[BFT_MAX_N], real, mix[BFT_MAX_N];
	bool up[BFT_MAX_N];
	unsigned bad = 0;
	uint32_t lag = 0, mask;
	int h = -1;

	load(false);
	connect_servers(ALL);
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
	print_ts("forging from", &real.ts);
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
		{ NULL, 0, NULL, 0 },
	};
	static uint8_t data[BFT_BLOCK_SIZE];
	const char *cmd = argc > 1 ? argv[1] : "";
	int ch;

	setvbuf(stdout, NULL, _IOLBF, 0);
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
		default: goto usage;
		}
	}
	if (optind + 1 != argc)
		goto usage;
	if (strcmp(cmd, "pattern") == 0) {
		if (bft_crypto_init() != 0)
			errx(1, "libsodium failed to initialise");
		pattern(opt.seed, data);
		return fwrite(data, 1, sizeof data, stdout) == sizeof data ?
		    0 : 1;
	}
	if (strcmp(cmd, "partial-write") == 0)
		return cmd_partial_write();
	if (strcmp(cmd, "stutter") == 0)
		return cmd_stutter();
	if (strcmp(cmd, "forge-filter") == 0)
		return cmd_forge(BFT_FILTER);
	if (strcmp(cmd, "forge-repair") == 0)
		return cmd_forge(BFT_REPAIR);
usage:
	fprintf(stderr, "usage: %s pattern|partial-write|stutter|forge-filter"
	    "|forge-repair [options] (see the source)\n", argv[0]);
	return 1;
}
