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
 *
 * L is a comma-separated list of server indices (default: all).  With
 * --hang, partial-write waits to be killed where it would have exited.
 * The forgers, probe, tamper, peek and pipeline take any client key
 * file, a read-only one too; partial-write and stutter need a writer's
 * (they sign timestamps and MAC vectors).
 *
 * probe sends CLOCK, STORE (made-up fragment and MACs), COMPLETE,
 * COLLECT and FLUSH to each server and prints "server I: TYPE status
 * N (name)" for each: what a role may do.
 *
 * tamper, to the first server of L, after HELLO (M: what the frames
 * that follow suffer):
 *   flip      one ciphertext bit of a COLLECT flipped
 *   replay    a COLLECT answered, then the same bytes sent again
 *   reorder   two COLLECTs sealed in order and sent swapped
 *   drop      two COLLECTs sealed, only the second sent
 *   truncate  a COLLECT cut by 8 bytes, its length prefix adjusted
 *   cut       half a COLLECT, then EOF
 *   none      a COLLECT as sealed (the control: must exit 1)
 * and exits 0 when the server closed the connection without answering
 * the tampered frame.
 *
 * peek COLLECTs the block's lc and FILTERs it back to get a fragment,
 * keeping the reply's bytes as they came off the wire: exits 0 when
 * those do not decode and hold no 32-byte run of the opened plaintext,
 * 3 when the plaintext is visible (channel = plain).
 *
 * pipeline sends --count FILTERs of the block's lc (each answered with a
 * fragment) to the first server of L without reading a reply, until the
 * server stops reading (no progress for 2 s) or all are sent; prints
 * "holding", sleeps --hold seconds, then reads every reply while sending
 * the rest: exits 0 when all came back, in order and ok.
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel.h"
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
static struct bft_chan chans[BFT_MAX_N];	/* of the connected ones */
static uint8_t *rbuf;			/* one frame body; rep points into it */
static unsigned n, t;
static uint64_t next_id = 1;
static struct bft_msg req, rep;		/* big: kept off the stack */

static struct {
	const char *config, *keys, *seed, *stop, *servers, *complete_to;
	const char *mode, *cmd;
	uint64_t block, count, hold;
	int hang, forgery, complete_last;
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
	bft_chan_clear(&chans[i]);
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

static uint32_t
get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/*
 * Appends req to out as a frame sealed for server i, under a new id.
 * Returns the frame's offset in out.
 */
static size_t
seal_req(unsigned i, struct bft_buf *out)
{
	size_t off = out->len;

	req.id = next_id++;
	if (bft_wire_encode(&req, n, out) != 0)
		errx(1, "cannot encode a %s", bft_msg_type_str(req.type));
	if (bft_chan_seal(&chans[i], out, off) != 0)
		errx(1, "cannot seal a %s", bft_msg_type_str(req.type));
	return off;
}

/*
 * Reads one frame from server i into rbuf (body, *len bytes; the raw
 * frame as it came off the wire is copied to raw when not NULL), opens
 * and decodes it into rep.  Returns 0, or -1 with a reason in *why.
 */
static int
recv_reply(unsigned i, uint8_t *raw, size_t *rawlen, const char **why)
{
	uint8_t pre[4];
	uint32_t len;

	if (io_all(fds[i], pre, 4, false) != 0) {
		*why = "no reply (closed or timed out)";
		return -1;
	}
	len = get_be32(pre);
	if (len > BFT_MAX_FRAME || io_all(fds[i], rbuf, len, false) != 0) {
		*why = "reply frame too long or cut short";
		return -1;
	}
	if (raw != NULL) {
		memcpy(raw, pre, 4);
		memcpy(raw + 4, rbuf, len);
		*rawlen = 4 + (size_t)len;
	}
	if (bft_chan_open(&chans[i], pre, rbuf, &len) != 0) {
		*why = "a reply failed authentication";
		return -1;
	}
	return bft_wire_decode(rbuf, len, n, &rep, why) == 0 ? 0 : -1;
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

	if (fds[i] < 0)
		return -1;
	seal_req(i, &out);
	if (io_all(fds[i], out.data, out.len, true) != 0)
		why = "send failed";
	bft_buf_free(&out);
	while (why == NULL) {
		if (recv_reply(i, NULL, NULL, &why) != 0)
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

/*
 * The channel handshake with server i under our identity.  Returns 0,
 * or -1 (server i then down) after printing why.
 */
static int
handshake(unsigned i)
{
	struct bft_chan_client hs;
	uint8_t ch[BFT_CHAN_CHELLO_LEN], sh[BFT_CHAN_SHELLO_LEN];
	uint8_t fin[BFT_CHAN_FINISH_LEN];
	const char *why;
	int r;

	bft_chan_client_hello(&hs, &key.chan, cfg.server_pk[i],
	    cfg.cluster_id, i, (enum bft_chan_mode)cfg.channel, ch);
	if (io_all(fds[i], ch, sizeof ch, true) != 0 ||
	    io_all(fds[i], sh, sizeof sh, false) != 0) {
		disconnect(i, "no server hello (closed or timed out)");
		return -1;
	}
	r = bft_chan_client_finish(&hs, sh, &chans[i], fin, &why);
	if (r != 0) {
		printf("server %u: channel refused (status %d): %s\n", i,
		    r, why);
		disconnect(i, "channel refused");
		return -1;
	}
	if (io_all(fds[i], fin, sizeof fin, true) != 0) {
		disconnect(i, "cannot send the client finish");
		return -1;
	}
	return 0;
}

/* Connects to the servers of mask, authenticates and says HELLO. */
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
		if (handshake(i) != 0)
			continue;
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

/*
 * Loads the configuration and the client key file (any role).  A
 * subcommand that signs (need_mac) refuses a read-only key file.
 */
static void
load(bool need_mac)
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
	if (opt.keys == NULL)
		errx(1, "--keys is required (a client key file: the channel "
		    "needs an identity)");
	if (bft_client_key_load(opt.keys, &key, e, sizeof e) != 0)
		errx(1, "%s", e);
	if (memcmp(key.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN) != 0)
		errx(1, "%s is a key of another cluster", opt.keys);
	if (key.role != BFT_ROLE_RW) {
		if (need_mac)
			errx(1, "%s is the read-only client '%s': it holds no "
			    "MAC keys, and %s signs timestamps and MAC vectors; "
			    "use a writer's key file", opt.keys, key.name,
			    opt.cmd);
		return;
	}
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
	/* The last write completed retires every earlier one. */
	if (opt.complete_last && opt.count > 0)
		FOR_EACH(i, mask)
			printf("server %u: COMPLETE of the last write: %s\n",
			    i, status_name(write_send(BFT_COMPLETE, i)));
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
 * A Byzantine reader (an authorized client, read-only keys are enough:
 * it never needs a MAC key): COLLECTs the real candidates, then writes back
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

/* The first server of --servers: the one the channel tests talk to. */
static unsigned
first_server(void)
{
	uint32_t mask = parse_list(opt.servers);

	for (unsigned i = 0; i < n; i++)
		if (mask & (1u << i))
			return i;
	errx(1, "no server given");
}

/* Connects to server i alone; exits when that fails. */
static void
connect_one(unsigned i)
{
	connect_servers(1u << i);
	if (fds[i] < 0)
		errx(1, "server %u: no channel (see above)", i);
}

/*
 * What each request type gets from every server under this key's role:
 * CLOCK, a STORE and a COMPLETE with made-up MACs, COLLECT and FLUSH.
 */
static int
cmd_probe(void)
{
	static const uint8_t types[] = {
		BFT_CLOCK, BFT_STORE, BFT_COMPLETE, BFT_COLLECT, BFT_FLUSH,
	};
	static uint8_t frag[4096];
	uint32_t mask;
	int st;

	load(false);
	mask = parse_list(opt.servers);
	connect_servers(mask);
	bft_random(frag, sizeof frag);
	printf("probe: %s client '%s'\n", bft_role_str(key.role), key.name);
	FOR_EACH(i, mask) {
		for (size_t k = 0; k < sizeof types; k++) {
			new_req(types[k]);
			req.ts.num = 1ull << 40;
			req.ts.wid = 0x5eed1;
			bft_random(req.ts.mac, sizeof req.ts.mac);
			bft_random(req.nonce, sizeof req.nonce);
			bft_random(req.nh, sizeof req.nh);
			bft_random(req.vec, sizeof req.vec);
			bft_random(req.cc, sizeof req.cc);
			if (types[k] == BFT_STORE) {
				req.frag = frag;
				req.frag_len = sizeof frag;
			}
			st = xfer(i);
			printf("server %u: %s status %d (%s)\n", i,
			    bft_msg_type_str(types[k]), st, status_name(st));
		}
	}
	return 0;
}

/* Sends bytes as they are; a server that closed first is no error. */
static void
send_raw(unsigned i, const uint8_t *p, size_t len)
{
	if (io_all(fds[i], (uint8_t *)p, len, true) != 0)
		printf("(send of %zu bytes failed: %s)\n", len,
		    strerror(errno));
}

/*
 * After a tampered frame: the server must close the connection (EOF or
 * reset) without sending anything.  0 if it did, 1 otherwise.
 */
static int
expect_closed(unsigned i)
{
	uint8_t buf[4096];
	ssize_t r;

	for (;;) {
		r = recv(fds[i], buf, sizeof buf, 0);
		if (r < 0 && errno == EINTR)
			continue;
		break;
	}
	if (r == 0 || (r < 0 && (errno == ECONNRESET || errno == EPIPE))) {
		printf("server %u closed the connection (%s)\n", i,
		    r == 0 ? "EOF" : strerror(errno));
		return 0;
	}
	if (r > 0) {
		printf("FAILED: server %u sent %zd bytes after the tampered "
		    "frame\n", i, r);
		return 1;
	}
	printf("FAILED: server %u kept the connection open (%s)\n", i,
	    strerror(errno));
	return 1;
}

static void
put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static int
cmd_tamper(void)
{
	struct bft_buf out = { 0 };
	const char *m = opt.mode ? opt.mode : "", *why = NULL;
	size_t a, b, blen;
	unsigned i;
	int rc;

	if (strcmp(m, "flip") && strcmp(m, "replay") && strcmp(m, "reorder") &&
	    strcmp(m, "drop") && strcmp(m, "truncate") && strcmp(m, "cut") &&
	    strcmp(m, "none"))
		errx(1, "--mode must be flip, replay, reorder, drop, truncate, "
		    "cut or none");
	load(false);
	i = first_server();
	connect_one(i);
	if (cfg.channel != BFT_CHAN_AEAD)
		errx(1, "tamper needs channel = aead");
	new_req(BFT_COLLECT);
	a = seal_req(i, &out);
	blen = out.len - a - 4;
	if (strcmp(m, "flip") == 0) {
		out.data[a + 4 + blen / 3] ^= 0x10;
		printf("tamper: a COLLECT with bit 4 of ciphertext byte %zu "
		    "of %zu flipped\n", blen / 3, blen);
		send_raw(i, out.data, out.len);
	} else if (strcmp(m, "replay") == 0) {
		send_raw(i, out.data, out.len);
		if (recv_reply(i, NULL, NULL, &why) != 0)
			errx(1, "the COLLECT was not answered: %s", why);
		if (rep.id != req.id || rep.status != BFT_OK)
			errx(1, "the COLLECT got %s", status_name(rep.status));
		printf("tamper: COLLECT answered; the same %zu bytes again\n",
		    out.len);
		send_raw(i, out.data, out.len);
	} else if (strcmp(m, "reorder") == 0) {
		b = seal_req(i, &out);
		printf("tamper: COLLECTs %" PRIu64 " and %" PRIu64 " sent "
		    "swapped\n", req.id - 1, req.id);
		send_raw(i, out.data + b, out.len - b);
		send_raw(i, out.data + a, b - a);
	} else if (strcmp(m, "drop") == 0) {
		b = seal_req(i, &out);
		printf("tamper: COLLECT %" PRIu64 " sealed and dropped, %"
		    PRIu64 " sent\n", req.id - 1, req.id);
		send_raw(i, out.data + b, out.len - b);
	} else if (strcmp(m, "truncate") == 0) {
		put_be32(out.data + a, (uint32_t)(blen - 8));
		printf("tamper: a COLLECT cut from %zu to %zu bytes, length "
		    "prefix to match\n", blen, blen - 8);
		send_raw(i, out.data + a, 4 + blen - 8);
	} else if (strcmp(m, "none") == 0) {
		printf("tamper: a COLLECT as it was sealed\n");
		send_raw(i, out.data, out.len);
	} else {
		printf("tamper: %zu of the %zu bytes of a COLLECT, then EOF\n",
		    4 + blen / 2, 4 + blen);
		send_raw(i, out.data + a, 4 + blen / 2);
		shutdown(fds[i], SHUT_WR);
	}
	rc = expect_closed(i);
	bft_buf_free(&out);
	return rc;
}

/* The block's lc at server i, which must be a completed write. */
static struct bft_cand
get_lc(unsigned i)
{
	new_req(BFT_COLLECT);
	if (xfer(i) != BFT_OK || rep.ncands != 1 ||
	    bft_ts_is_zero(&rep.cands[0].ts))
		errx(1, "server %u: no completed write on block %" PRIu64,
		    i, opt.block);
	return rep.cands[0];
}

/* Whether needle[0..len) occurs in hay[0..hlen). */
static bool
contains(const uint8_t *hay, size_t hlen, const uint8_t *needle, size_t len)
{
	return memmem(hay, hlen, needle, len) != NULL;
}

static int
cmd_peek(void)
{
	static uint8_t raw[4 + BFT_MAX_FRAME];
	static struct bft_msg dec;
	struct bft_buf out = { 0 };
	struct bft_cand lc;
	const char *why = NULL;
	size_t rawlen = 0;
	unsigned i, runs = 0, seen = 0;
	bool decodes;

	load(false);
	i = first_server();
	connect_one(i);
	lc = get_lc(i);		/* before new_req: it sends a COLLECT */
	new_req(BFT_FILTER);
	req.cands[0] = lc;
	req.ncands = 1;
	seal_req(i, &out);
	send_raw(i, out.data, out.len);
	bft_buf_free(&out);
	if (recv_reply(i, raw, &rawlen, &why) != 0)
		errx(1, "server %u: FILTER: %s", i, why);
	if (rep.type != (BFT_FILTER | BFT_ACK) || rep.status != BFT_OK ||
	    rep.frag_len < 64)
		errx(1, "server %u: FILTER answered without a fragment (%s)",
		    i, status_name(rep.status));
	decodes = bft_wire_decode(raw + 4, rawlen - 4, n, &dec, &why) == 0;
	for (uint32_t off = 0; off + 32 <= rep.frag_len; off += 32, runs++)
		if (contains(raw, rawlen, rep.frag + off, 32))
			seen++;
	printf("peek: FILTER_ACK of %zu bytes on the wire, %s; %u of the "
	    "%u 32-byte runs of its %u-byte fragment appear in them\n",
	    rawlen, decodes ? "decodes as it is" : "does not decode", seen,
	    runs, rep.frag_len);
	if (decodes || seen > 0) {
		printf("PLAINTEXT on the wire\n");
		return 3;
	}
	printf("ciphertext only\n");
	return 0;
}

static int
cmd_pipeline(void)
{
	static uint8_t acc[2 * (4 + BFT_MAX_FRAME)];
	struct bft_buf out = { 0 };
	struct bft_cand lc;
	uint64_t first_id, got = 0, bad = 0, whole = 0;
	size_t sent = 0, alen = 0, *ends;
	const char *why;
	unsigned i;
	int fd;

	if (opt.count == 0)
		errx(1, "--count is required");
	load(false);
	i = first_server();
	connect_one(i);
	fd = fds[i];
	lc = get_lc(i);
	first_id = next_id;
	if ((ends = malloc(opt.count * sizeof *ends)) == NULL)
		err(1, "malloc");
	for (uint64_t k = 0; k < opt.count; k++) {
		new_req(BFT_FILTER);
		req.cands[0] = lc;
		req.ncands = 1;
		seal_req(i, &out);
		ends[k] = out.len;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0)
		err(1, "fcntl");
	while (sent < out.len) {
		ssize_t r = send(fd, out.data + sent, out.len - sent,
		    MSG_NOSIGNAL);
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int pr;

		if (r > 0) {
			sent += (size_t)r;
			continue;
		}
		if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
		    errno != EINTR)
			err(1, "send");
		pr = poll(&p, 1, 2000);
		if (pr < 0 && errno != EINTR)
			err(1, "poll");
		if (pr == 0)
			break;		/* no progress for 2 s */
	}
	while (whole < opt.count && ends[whole] <= sent)
		whole++;
	free(ends);
	printf("sent %zu of %zu bytes: %" PRIu64 " of %" PRIu64 " FILTERs "
	    "whole%s\n", sent, out.len, whole, opt.count, sent < out.len ?
	    ", then the server stopped reading" : "");
	printf("holding %" PRIu64 " s\n", opt.hold);
	fflush(stdout);
	sleep((unsigned)opt.hold);
	while (got < opt.count) {
		struct pollfd p = { .fd = fd, .events = POLLIN |
		    (sent < out.len ? POLLOUT : 0) };
		size_t off = 0;
		ssize_t r;
		int pr = poll(&p, 1, 10000);

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			err(1, "poll");
		if (pr == 0)
			errx(1, "no progress for 10 s: %" PRIu64 " replies of %"
			    PRIu64 ", %zu of %zu bytes sent", got, opt.count,
			    sent, out.len);
		if ((p.revents & POLLOUT) && sent < out.len) {
			r = send(fd, out.data + sent, out.len - sent,
			    MSG_NOSIGNAL);
			if (r > 0)
				sent += (size_t)r;
			else if (r < 0 && errno != EAGAIN && errno != EINTR)
				err(1, "send");
		}
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = recv(fd, acc + alen, sizeof acc - alen, 0);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r < 0)
			err(1, "recv after %" PRIu64 " replies", got);
		if (r == 0)
			errx(1, "server %u closed the connection after %"
			    PRIu64 " replies", i, got);
		alen += (size_t)r;
		while (alen - off >= 4) {
			uint32_t flen = get_be32(acc + off), len = flen;

			if (flen > BFT_MAX_FRAME)
				errx(1, "reply frame of %u bytes", flen);
			if (alen - off - 4 < flen)
				break;
			if (bft_chan_open(&chans[i], acc + off, acc + off + 4,
			    &len) != 0)
				errx(1, "reply %" PRIu64 " failed "
				    "authentication", got);
			if (bft_wire_decode(acc + off + 4, len, n, &rep,
			    &why) != 0)
				errx(1, "reply %" PRIu64 ": %s", got, why);
			if (rep.id != first_id + got || rep.status != BFT_OK ||
			    rep.type != (BFT_FILTER | BFT_ACK)) {
				if (bad++ < 10)
					printf("reply %" PRIu64 ": id %" PRIu64
					    " %s %s\n", got, rep.id,
					    bft_msg_type_str(rep.type),
					    status_name(rep.status));
			}
			got++;
			off += 4 + (size_t)flen;
		}
		memmove(acc, acc + off, alen - off);
		alen -= off;
	}
	printf("got %" PRIu64 " replies of %" PRIu64 ", %" PRIu64 " out of "
	    "order or not ok\n", got, opt.count, bad);
	bft_buf_free(&out);
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
		{ "mode", 1, NULL, 'm' }, { "hold", 1, NULL, 'o' },
		{ "complete-last", 0, NULL, 'L' },
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
	if (strcmp(cmd, "probe") == 0)
		return cmd_probe();
	if (strcmp(cmd, "tamper") == 0)
		return cmd_tamper();
	if (strcmp(cmd, "peek") == 0)
		return cmd_peek();
	if (strcmp(cmd, "pipeline") == 0)
		return cmd_pipeline();
usage:
	fprintf(stderr, "usage: %s pattern|partial-write|stutter|forge-filter"
	    "|forge-repair|probe|tamper|peek|pipeline [options] (see the "
	    "source)\n", argv[0]);
	return 1;
}
