/*
 * Fuzzes the server's request handler (server/handler.c, Algorithm 5)
 * over a real store in a temporary directory: t = 1, 64 blocks, keys
 * made deterministically, so a reproducer behaves the same anywhere.
 * Frames are split and decoded as server/net.c does, and each request
 * is handed over as net.c would: nothing before a matching HELLO, a
 * reply type or an undecodable frame ends the connection, and so does a
 * HELLO the handler refuses.  Every reply must encode and round-trip.
 *
 * Input: [flags] [stream of length-prefixed frames...].  Real clients
 * hold keys the fuzzer cannot guess, so flags let it past the checks:
 *   0x01  HELLO is made to match this server (cluster id, geometry)
 *   0x02  the MACs this server checks (vec[1] of STORE, COMPLETE and
 *         DROP, and of every FILTER and REPAIR candidate) are made valid
 *   0x04  block numbers are taken modulo the disk's 64 blocks
 *   0x08  at the end, the store is reopened and the state its log
 *         replays must equal the state the handler left in memory
 *
 * Two things cost more than all the rest of an input: the replay check
 * of 0x08, so it runs for one input in SAMPLE_EVERY that asks for it
 * (picked by a hash of its bytes); and a block near the top of a
 * volume, since the store's page table for a volume reaches up to the
 * highest page written (32 MiB near the limit), zeroed as it grows,
 * so a block of a volume other than 0 is taken modulo FOLD_BLOCKS if it
 * is below the volume's limit.  Sampling raw blocks as well did not
 * do: the fuzzer kept the sampled inputs with new coverage there, which
 * took seconds each, and they were soon 96% of the time (2026-11-26,
 * when the page table was also walked slot by slot at close).
 * fuzz_handler_replay (SAMPLE_EVERY 1, RAW_BLOCKS)
 * replays after every input that asks for it, half of them (by the
 * hash) from the whole log as a crash leaves it, the other half from
 * the index checkpoint of a close, and takes blocks as sent.
 *
 * Byte-level mutations rarely keep msgpack intact, so half of the
 * mutations are structural (LLVMFuzzerCustomMutator below): a frame is
 * decoded, one field changed the way a protocol corner needs it (a
 * timestamp moved or copied from another frame, a fragment shrunk, a
 * frame repeated or dropped), and it is encoded again.
 *
 * Each input starts from an empty store: one that changed is emptied
 * in place by bft_store_reset() (server/testing/store_reset.c), which
 * leaves it as an open of its emptied directory would, and keeps its
 * memory and the file of its first segment: discarding it, removing its
 * files and opening it again was a quarter of an input's time.  The
 * store is on tmpfs (/dev/shm, used when TMPDIR is unset).
 * Checked after every request: Hist holds nothing older than lc (the
 * GC rule), no writer has more than max_pending STOREs above lc, and lc
 * never goes back.
 */
#include <dirent.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "crypto.h"
#include "../../server/handler.h"
#include "../../server/store/store.h"
#include "../../server/testing/store_discard.h"
#include "../../server/testing/store_reset.h"
#include "util.h"

#define T	1
#define N	4
#define NBLOCKS	64
#define ME	1		/* not 0, so an index mixup shows */
#define SEGMENT	(24u << 10)	/* tiny, so that short inputs compact */

enum {
	F_HELLO = 0x01, F_MACS = 0x02, F_BLOCKMOD = 0x04, F_REPLAY = 0x08,
};

/*
 * With both at every input, the reopens and the walks of page tables up
 * to a volume's top took 80% of the time (perf, 2026-11-26).
 */
#ifndef SAMPLE_EVERY
#define SAMPLE_EVERY	16u
#endif
#ifndef RAW_BLOCKS
#define RAW_BLOCKS	0
#endif
/* 64 pages of the index: a page table of 512 bytes. */
#define FOLD_BLOCKS	(UINT64_C(1) << 16)

static struct bft_config cfg;
static struct bft_client_key ck;
static struct bft_server_key sk;
static struct bft_store_identity ident;
/*
 * The metadata cache small enough that inputs evict from it, where the
 * default's 64 MiB never fills; its buckets were also a fresh mapping
 * of 512 KiB per input under ASan.
 */
#define CACHE	(16u << 10)
static const struct bft_store_opts sopts = {
	.segment_size = SEGMENT, .cache_bytes = CACHE,
};
static char dir[256];
static struct bft_store *st;
static struct bft_handler h;
static struct bft_msg req, rep;
static struct bft_store_stats fresh;
static struct bft_ts last_lc[NBLOCKS];
/*
 * The decoder's zone, kept for the requests and the mutator's frames
 * instead of one made per body; fuzz_decode holds the two alike.
 */
static struct bft_wire_scratch scratch;

static void
derive(const char *label, unsigned j, uint8_t out[BFT_HASH_LEN])
{
	char s[64];
	int len = snprintf(s, sizeof s, "bftblk fuzz %s %u", label, j);

	bft_hash(s, (size_t)len, out);
}

static void
store_open(void)
{
	char err[256] = "";

	st = bft_store_open_opts(dir, &ident, &sopts, err, sizeof err);
	FUZZ_CHECK(st != NULL, "bft_store_open %s: %s", dir, err);
	h.st = st;
}

/* Removes the store's files and its directory, at exit. */
static void
cleanup(void)
{
	struct dirent *de;
	DIR *d;

	bft_store_discard(st);
	st = NULL;
	bft_handler_fini(&h);
	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	rmdir(dir);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	uint8_t id[BFT_HASH_LEN];
	const char *tmp = getenv("TMPDIR");

	(void)argc;
	(void)argv;
	FUZZ_CHECK(bft_crypto_init() == 0, "bft_crypto_init");
	derive("cluster", 0, id);
	cfg.t = T;
	cfg.n = N;
	cfg.block_size = BFT_BLOCK_SIZE;
	cfg.nblocks = NBLOCKS;
	cfg.size = (uint64_t)NBLOCKS * BFT_BLOCK_SIZE;
	memcpy(cfg.cluster_id, id, BFT_CLUSTER_ID_LEN);
	memcpy(ck.cluster_id, id, BFT_CLUSTER_ID_LEN);
	ck.n = N;
	for (unsigned j = 0; j < N; j++)
		derive("server key", j, ck.k[j]);
	derive("writer key", 0, ck.kw);
	memcpy(sk.cluster_id, id, BFT_CLUSTER_ID_LEN);
	sk.index = ME;
	memcpy(sk.k, ck.k[ME], BFT_KEY_LEN);
	memcpy(ident.cluster_id, id, BFT_CLUSTER_ID_LEN);
	ident.server_index = ME;
	ident.n = N;
	ident.t = T;
	ident.block_size = BFT_BLOCK_SIZE;
	ident.nblocks = NBLOCKS;
	if (tmp == NULL || *tmp == '\0')
		tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(dir, sizeof dir, "%s/bftblk-fuzz.XXXXXX", tmp);
	FUZZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp %s", dir);
	FUZZ_CHECK(bft_handler_init(&h, &cfg, &sk, NULL, 0) == 0, "handler");
	store_open();
	bft_store_stats(st, &fresh);
	atexit(cleanup);
	return 0;
}

/* What a client holding ck would have sent, as far as flags say. */
static void
fixup(uint8_t flags)
{
	uint8_t nh[BFT_HASH_LEN];

	if ((flags & F_BLOCKMOD) && req.type != BFT_HELLO &&
	    req.type != BFT_FLUSH)
		req.block %= NBLOCKS;
	/* Blocks past the limit stay: they are refused, at no cost. */
	if (!RAW_BLOCKS && req.type != BFT_HELLO && req.type != BFT_FLUSH &&
	    bft_addr_vol(req.block) != 0 && bft_addr_ok(req.block, NBLOCKS))
		req.block = bft_addr(bft_addr_vol(req.block),
		    bft_addr_block(req.block) % FOLD_BLOCKS);
	if ((flags & F_HELLO) && req.type == BFT_HELLO) {
		memcpy(req.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN);
		req.hello_n = N;
		req.hello_t = T;
		req.block_size = BFT_BLOCK_SIZE;
		req.nblocks = NBLOCKS;
		req.server_index = ME;
	}
	if (!(flags & F_MACS))
		return;
	switch (req.type) {
	case BFT_STORE:
	case BFT_REAUTH:
		bft_vec_mac(&req.ts, req.block, req.nh, ck.k[ME],
		    req.vec[ME]);
		break;
	case BFT_COMPLETE:
		bft_hash(req.nonce, BFT_NONCE_LEN, nh);
		bft_vec_mac(&req.ts, req.block, nh, ck.k[ME], req.vec[ME]);
		break;
	case BFT_DROP:
		bft_drop_mac(bft_addr_vol(req.block), ck.k[ME], req.vec[ME]);
		break;
	case BFT_SNAP:
		bft_snap_mac(bft_addr_vol(req.block), req.gen, req.snap_op,
		    ck.k[ME], req.vec[ME]);
		break;
	case BFT_FILTER:
	case BFT_REPAIR:
	case BFT_VFILTER:
	case BFT_VREPAIR:
		for (uint32_t j = 0; j < req.ncands; j++) {
			struct bft_cand *c = &req.cands[j];

			bft_hash(c->nonce, BFT_NONCE_LEN, nh);
			bft_vec_mac(&c->ts, req.block, nh, ck.k[ME],
			    c->vec[ME]);
		}
		break;
	}
}

/*
 * The store's invariants for the block a request named.  The Hist
 * timestamps go to an array kept between calls, grown as needed: this
 * runs after every request.
 */
static void
check_block(uint64_t block)
{
	static struct bft_ts *ts;
	static unsigned cap;
	struct bft_hist_entry e;
	const struct bft_ts *a, *b;
	unsigned pending, nhist;
	struct bft_ts lcts;

	if (block >= NBLOCKS)
		return;
	lcts = bft_store_lc_ts(st, block);
	FUZZ_CHECK(bft_ts_cmp(&lcts, &last_lc[block]) >= 0,
	    "block %u: lc went back", (unsigned)block);
	last_lc[block] = lcts;
	nhist = bft_store_nhist(st, block);
	if (nhist > cap) {
		free(ts);
		cap = 2 * nhist;
		ts = calloc(cap, sizeof *ts);
		FUZZ_CHECK(ts != NULL, "out of memory");
	}
	for (unsigned j = 0; j < nhist; j++) {
		FUZZ_CHECK(bft_store_hist_at(st, block, j, &e) == 0,
		    "block %u: Hist entry %u of %u missing", (unsigned)block,
		    j, nhist);
		ts[j] = e.meta.ts;
	}
	for (unsigned j = 0; j < nhist; j++) {
		a = &ts[j];
		FUZZ_CHECK(bft_ts_cmp(a, &lcts) >= 0, "block %u: Hist "
		    "entry %" PRIu64 "/%" PRIu64 " older than lc",
		    (unsigned)block, a->num, a->wid);
		pending = 0;
		for (unsigned k = 0; k < nhist; k++) {
			b = &ts[k];
			if (k != j)
				FUZZ_CHECK(bft_ts_cmp(a, b) != 0, "block %u: "
				    "two Hist entries for one ts",
				    (unsigned)block);
			if (b->wid == a->wid && bft_ts_cmp(b, &lcts) > 0)
				pending++;
		}
		FUZZ_CHECK(pending <= h.max_pending, "block %u: writer %"
		    PRIu64 " has %u STOREs pending", (unsigned)block, a->wid,
		    pending);
	}
}

/*
 * make-seeds.sh runs the recorded requests through this harness with
 * FUZZ_DUMP_REPLIES=DIR to get real replies, the reply seeds of
 * fuzz_decode and fuzz_frame: each reply body goes to DIR/<seq>.
 */
static void
dump_reply(void)
{
	static const char *dump;
	static bool looked;
	static unsigned seq;
	struct bft_buf out = { 0 };
	char path[4096];
	FILE *f;

	if (!looked) {
		dump = getenv("FUZZ_DUMP_REPLIES");
		looked = true;
	}
	if (dump == NULL || bft_wire_encode(&rep, N, &out) < 0)
		goto out;
	snprintf(path, sizeof path, "%s/%06u", dump, seq++);
	f = fopen(path, "wb");
	FUZZ_CHECK(f != NULL && fwrite(out.data + 4, 1, out.len - 4, f) ==
	    out.len - 4 && fclose(f) == 0, "cannot write %s", path);
out:
	bft_buf_free(&out);
}

/* Hands req over as net.c's dispatch() does; false: connection closed. */
static bool
dispatch(uint8_t flags, bool *hello_ok)
{
	int rc;

	if ((req.type & BFT_ACK) || (!*hello_ok && req.type != BFT_HELLO))
		return false;
	fixup(flags);
	rc = bft_handle(&h, "fuzz", &req, &rep);
	FUZZ_CHECK(rep.type == (req.type | BFT_ACK) && rep.id == req.id &&
	    rep.block == req.block, "reply does not answer the request");
	FUZZ_CHECK(rc == (rep.status == BFT_ECLUSTER), "%s: rc %d status %d",
	    bft_msg_type_str(req.type), rc, (int)rep.status);
	if (req.type == BFT_HELLO && rep.status == BFT_OK)
		*hello_ok = true;
	fuzz_roundtrip(&rep, N, false);
	dump_reply();
	check_block(req.block);
	return rc == 0;
}

static bool
meta_equal(const struct bft_hist_meta *a, const struct bft_hist_meta *b)
{
	return bft_ts_cmp(&a->ts, &b->ts) == 0 &&
	    memcmp(a->ts.mac, b->ts.mac, BFT_MAC_LEN) == 0 &&
	    memcmp(a->nh, b->nh, BFT_HASH_LEN) == 0 &&
	    memcmp(a->vec, b->vec, sizeof a->vec) == 0 &&
	    memcmp(a->cc, b->cc, sizeof a->cc) == 0 &&
	    a->frag_len == b->frag_len;
}

/*
 * Reopens the store and checks that its log replays to exactly the
 * state in memory before: every block's lc, and every Hist entry with
 * its fragment (Hist is in no particular order, so entries are matched
 * by timestamp), and the volumes held beyond the disk with their live
 * bytes, which DROPs change.  Compaction and segment rollover are under
 * test too.  crash: the store is discarded as a crash would leave it,
 * so that open replays the whole log; otherwise it is closed, and open
 * starts from the index checkpoint close wrote.
 */
static void
replay_check(bool crash)
{
	/*
	 * What the store held, kept from call to call and grown as needed:
	 * a calloc per block for its entries and a copy per fragment were
	 * a fifth of what a replay cost (perf, 2026-11-26).  Entries go
	 * block after block; a fragment is at foff[k] in fbuf.
	 */
	static struct bft_cand lc[NBLOCKS];
	static unsigned nhist[NBLOCKS];
	static struct bft_hist_meta *meta;
	static size_t *foff, cap;
	static struct bft_buf fbuf;
	static struct bft_store_vol vols[2][64];
	struct bft_hist_entry ebuf, *e = &ebuf;
	uint8_t *buf = h.fragbuf;
	struct bft_cand c;
	size_t nvols[2], n = 0, k;
	unsigned b, j;

	for (b = 0; b < NBLOCKS; b++) {
		nhist[b] = bft_store_nhist(st, b);
		n += nhist[b];
	}
	if (n > cap) {
		free(meta);
		free(foff);
		cap = 2 * n;
		meta = calloc(cap, sizeof *meta);
		foff = calloc(cap, sizeof *foff);
		FUZZ_CHECK(meta && foff, "out of memory");
	}
	fbuf.len = 0;
	for (b = 0, k = 0; b < NBLOCKS; b++) {
		bft_store_get_lc(st, b, &lc[b]);
		for (j = 0; j < nhist[b]; j++, k++) {
			FUZZ_CHECK(bft_store_hist_at(st, b, j, e) == 0,
			    "block %u: Hist entry %u missing", b, j);
			meta[k] = e->meta;
			FUZZ_CHECK(bft_store_read_frag(st, e, buf) ==
			    0, "block %u: cannot read a fragment", b);
			foff[k] = fbuf.len;
			FUZZ_CHECK(bft_buf_append(&fbuf, buf,
			    meta[k].frag_len) == 0, "out of memory");
		}
	}
	nvols[0] = bft_store_volumes(st, 0, vols[0], 64);
	if (crash)
		bft_store_discard(st);
	else
		bft_store_close(st);
	store_open();
	nvols[1] = bft_store_volumes(st, 0, vols[1], 64);
	FUZZ_CHECK(nvols[0] == nvols[1], "%zu volumes held before replay, "
	    "%zu after", nvols[0], nvols[1]);
	for (size_t v = 0; v < nvols[0]; v++)
		FUZZ_CHECK(vols[0][v].vol == vols[1][v].vol &&
		    vols[0][v].end == vols[1][v].end &&
		    vols[0][v].live == vols[1][v].live, "volume %" PRIu32
		    " differs after replay", vols[0][v].vol);
	for (b = 0, k = 0; b < NBLOCKS; b++) {
		bft_store_get_lc(st, b, &c);
		FUZZ_CHECK(memcmp(&c, &lc[b], sizeof lc[b]) == 0,
		    "block %u: lc differs after replay", b);
		FUZZ_CHECK(bft_store_nhist(st, b) == nhist[b], "block %u: %u "
		    "Hist entries before, %u after replay", b, nhist[b],
		    bft_store_nhist(st, b));
		for (j = 0; j < nhist[b]; j++, k++) {
			FUZZ_CHECK(bft_store_get_hist(st, b, &meta[k].ts,
			    e) == 0 && meta_equal(&e->meta, &meta[k]),
			    "block %u: Hist entry %u lost or changed by "
			    "replay", b, j);
			FUZZ_CHECK(bft_store_read_frag(st, e, buf) == 0 &&
			    (e->meta.frag_len == 0 || memcmp(buf, fbuf.data +
			    foff[k], e->meta.frag_len) == 0),
			    "block %u: fragment %u changed by replay", b, j);
		}
	}
}

/*
 * Which inputs are sampled, the same on every run.  BLAKE3, which is
 * built without coverage instrumentation: a byte loop here would make
 * a callback per byte, the cost of a request for a large input.
 */
static uint32_t
input_hash(const uint8_t *data, size_t size)
{
	uint8_t d[BFT_HASH_LEN];

	bft_hash(data, size, d);
	return (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 |
	    (uint32_t)d[3] << 24;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bft_store_stats now;
	const uint8_t *p;
	bool hello_ok = false;
	size_t left;
	uint32_t blen, hash;
	uint8_t *body;
	int rc;

	if (size < 1)
		return 0;
	memset(last_lc, 0, sizeof last_lc);
	p = data + 1;
	left = size - 1;
	while (bft_wire_frame(p, left, &blen) == 0) {
		body = fuzz_dup(p + 4, blen);
		rc = bft_wire_decode_with(&scratch, body, blen, N, &req, NULL);
		/* req.frag points into body: free it only after handling. */
		if (rc < 0 || !dispatch(data[0], &hello_ok)) {
			free(body);
			break;
		}
		free(body);
		p += 4 + (size_t)blen;
		left -= 4 + (size_t)blen;
	}
	bft_store_stats(st, &now);
	if (now.bytes_total == fresh.bytes_total &&
	    now.segments == fresh.segments && now.compactions == 0)
		return 0;
	hash = input_hash(data, size);
	if ((data[0] & F_REPLAY) && hash % SAMPLE_EVERY == 0)
		replay_check(hash / SAMPLE_EVERY % 2);
	rc = bft_store_reset(st);
	FUZZ_CHECK(rc == 0, "bft_store_reset: %s", strerror(-rc));
	memset(&h.stats, 0, sizeof h.stats);
	return 0;
}

/* The structural mutator this harness's inputs are made with. */
#include "handler_mutator.c"
