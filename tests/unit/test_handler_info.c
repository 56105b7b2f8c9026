/*
 * SUMMARY, LCLIST and STATUS (server/handler_info.c) against real
 * stores: two servers holding the same lc's give the same digests, and
 * one block's newer lc changes exactly its range's; a range nobody wrote
 * has the zero digest; LCLIST lists exactly the written blocks; ranges
 * past the disk's end are ERANGE; STATUS counts held blocks, sees a torn
 * record found at open, and reports the healing side's progress; a
 * volume written only at its two ends costs a walk a bounded number of
 * steps.  FINALIZE records the level, durably and idempotently, and
 * STATUS reports it with the release.  Every reply also goes through
 * the wire encoder and decoder.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../lib/bftblk.h"
#include "crypto.h"
#include "summary.h"
#include "wire.h"
#include "../../server/handler.h"
#include "../../server/heal.h"
#include "../../server/store/store.h"
#include "../../server/store/store_log.h"

#define N	4
#define NBLOCKS	64

/* One server: its key, store and handler. */
struct srv {
	struct bft_server_key sk;
	struct bft_store_identity ident;
	char dir[64];
	struct bft_store *st;
	struct bft_handler h;
};

static struct bft_config cfg;
static struct srv A, B;
static struct bft_msg req, rep, dec;
static struct bft_buf out;

static void
srv_open(struct srv *s)
{
	char err[256] = "";

	s->st = bft_store_open(s->dir, &s->ident, err, sizeof err);
	if (s->st == NULL)
		fail_msg("bft_store_open: %s", err);
	s->h.st = s->st;
}

static void
srv_init(struct srv *s, unsigned index)
{
	memset(s, 0, sizeof *s);
	memcpy(s->sk.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN);
	s->sk.index = index;
	memcpy(s->ident.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN);
	s->ident.server_index = index;
	s->ident.n = N;
	s->ident.t = 1;
	s->ident.block_size = BFT_BLOCK_SIZE;
	s->ident.nblocks = NBLOCKS;
	snprintf(s->dir, sizeof s->dir, "/tmp/test_handler_info.XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	assert_int_equal(bft_handler_init(&s->h, &cfg, &s->sk, NULL, 0), 0);
	srv_open(s);
}

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb;
	(void)flag;
	(void)f;
	return remove(path);
}

static void
srv_fini(struct srv *s)
{
	if (s->st)
		bft_store_close(s->st);
	s->st = NULL;
	bft_handler_fini(&s->h);
	nftw(s->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int
setup(void **state)
{
	(void)state;
	assert_int_equal(bft_crypto_init(), 0);
	memset(&cfg, 0, sizeof cfg);
	bft_random(cfg.cluster_id, BFT_CLUSTER_ID_LEN);
	cfg.t = 1;
	cfg.n = N;
	cfg.block_size = BFT_BLOCK_SIZE;
	cfg.nblocks = NBLOCKS;
	cfg.size = (uint64_t)NBLOCKS * BFT_BLOCK_SIZE;
	srv_init(&A, 1);
	srv_init(&B, 2);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	srv_fini(&A);
	srv_fini(&B);
	bft_buf_free(&out);
	return 0;
}

/*
 * Runs req through s's handler, and the reply through the wire; dec is
 * the decoded reply (pointing into out until the next call).  Returns
 * the status.
 */
static int
ask(struct srv *s)
{
	const char *why = NULL;
	uint32_t bl;

	req.id++;
	assert_int_equal(bft_handle(&s->h, "test", &req, &rep), 0);
	assert_int_equal(rep.type, req.type | BFT_ACK);
	out.len = 0;
	assert_int_equal(bft_wire_encode(&rep, N, &out), 0);
	assert_int_equal(bft_wire_frame(out.data, out.len, &bl), 0);
	if (bft_wire_decode(out.data + 4, bl, N, &dec, &why) != 0)
		fail_msg("reply does not decode: %s", why);
	return dec.status;
}

static int
summary(struct srv *s, uint64_t block, uint32_t count, uint32_t span)
{
	memset(&req, 0, sizeof req);
	req.type = BFT_SUMMARY;
	req.block = block;
	req.count = count;
	req.span = span;
	return ask(s);
}

static int
lclist(struct srv *s, uint64_t block, uint32_t count)
{
	memset(&req, 0, sizeof req);
	req.type = BFT_LCLIST;
	req.block = block;
	req.count = count;
	return ask(s);
}

static int
status(struct srv *s)
{
	memset(&req, 0, sizeof req);
	req.type = BFT_STATUS;
	return ask(s);
}

/*
 * lc of block := (num, wid), with a server-specific MAC vector; with
 * frag, the fragment backing it is stored first (a STORE then COMPLETE),
 * without, lc alone (a write-back).
 */
static void
set_lc_how(struct srv *s, uint64_t block, uint64_t num, uint64_t wid,
    bool frag)
{
	static const uint8_t fr[64];
	struct bft_hist_meta meta;
	struct bft_cand c;

	memset(&c, 0, sizeof c);
	c.ts.num = num;
	c.ts.wid = wid;
	bft_random(c.ts.mac, BFT_MAC_LEN);
	bft_random(c.nonce, BFT_NONCE_LEN);
	bft_random(c.vec, N * BFT_MAC_LEN);
	if (frag) {
		memset(&meta, 0, sizeof meta);
		meta.ts = c.ts;
		bft_hash(c.nonce, BFT_NONCE_LEN, meta.nh);
		meta.frag_len = sizeof fr;
		assert_int_equal(bft_store_put_hist(s->st, block, &meta, fr),
		    0);
	}
	assert_int_equal(bft_store_set_lc(s->st, block, &c), 0);
}

static void
set_lc(struct srv *s, uint64_t block, uint64_t num, uint64_t wid)
{
	set_lc_how(s, block, num, wid, true);
}

/* The digests of the last reply, copied out. */
static void
take_digests(uint8_t *d, uint32_t want)
{
	assert_int_equal(dec.ndigests, want);
	memcpy(d, dec.digests, (size_t)want * BFT_SUMMARY_DIGEST_LEN);
}

#define DIG(d, r)	((d) + (size_t)(r) * BFT_SUMMARY_DIGEST_LEN)

static void
test_summary(void **state)
{
	static const uint64_t written[] = { 1, 5, 6, 40, 63 };
	uint8_t a[8 * BFT_SUMMARY_DIGEST_LEN], b[8 * BFT_SUMMARY_DIGEST_LEN];
	uint8_t want[BFT_SUMMARY_DIGEST_LEN];
	struct bft_summary s;
	struct bft_ts ts;

	(void)state;
	for (size_t i = 0; i < sizeof written / sizeof written[0]; i++) {
		set_lc(&A, written[i], 3 + i, 100 + i);
		set_lc(&B, written[i], 3 + i, 100 + i);
	}
	assert_int_equal(summary(&A, 0, NBLOCKS, 8), BFT_OK);
	take_digests(a, 8);
	assert_int_equal(summary(&B, 0, NBLOCKS, 8), BFT_OK);
	take_digests(b, 8);
	/* Same lc's, same digests: the MACs and nonces take no part. */
	assert_memory_equal(a, b, sizeof a);
	for (unsigned r = 0; r < 8; r++)
		assert_int_equal(bft_summary_is_empty(DIG(a, r)),
		    r != 0 && r != 5 && r != 7);
	/* Range 0 is blocks 1, 5 and 6, as summary.h computes it. */
	bft_summary_init(&s);
	for (unsigned i = 0; i < 3; i++) {
		memset(&ts, 0, sizeof ts);
		ts.num = 3 + i;
		ts.wid = 100 + i;
		bft_summary_add(&s, written[i], &ts);
	}
	bft_summary_final(&s, want);
	assert_memory_equal(DIG(a, 0), want, sizeof want);

	/* A newer lc of block 5 at B changes range 0 and nothing else. */
	set_lc(&B, 5, 9, 1);
	assert_int_equal(summary(&B, 0, NBLOCKS, 8), BFT_OK);
	take_digests(b, 8);
	assert_memory_not_equal(DIG(a, 0), DIG(b, 0), BFT_SUMMARY_DIGEST_LEN);
	assert_memory_equal(DIG(a, 1), DIG(b, 1),
	    7 * BFT_SUMMARY_DIGEST_LEN);
	/* So does a block only one of them holds. */
	set_lc(&A, 20, 1, 1);
	assert_int_equal(summary(&A, 16, 8, 8), BFT_OK);
	assert_false(bft_summary_is_empty(dec.digests));
	assert_int_equal(summary(&B, 16, 8, 8), BFT_OK);
	assert_true(bft_summary_is_empty(dec.digests));

	/* A span that does not divide count: 3-6, 7-10, 11-12. */
	assert_int_equal(summary(&A, 3, 10, 4), BFT_OK);
	take_digests(a, 3);
	bft_summary_init(&s);
	ts = (struct bft_ts){ .num = 4, .wid = 101 };
	bft_summary_add(&s, 5, &ts);
	ts = (struct bft_ts){ .num = 5, .wid = 102 };
	bft_summary_add(&s, 6, &ts);
	bft_summary_final(&s, want);
	assert_memory_equal(DIG(a, 0), want, sizeof want);
	assert_true(bft_summary_is_empty(DIG(a, 1)));
	assert_true(bft_summary_is_empty(DIG(a, 2)));
	/* One range over the whole disk, and one block per range. */
	assert_int_equal(summary(&A, 0, NBLOCKS, UINT32_MAX), BFT_OK);
	assert_int_equal(dec.ndigests, 1);
	assert_int_equal(summary(&A, 0, NBLOCKS, 1), BFT_OK);
	assert_int_equal(dec.ndigests, NBLOCKS);
	assert_false(bft_summary_is_empty(DIG(dec.digests, 63)));
	assert_true(bft_summary_is_empty(DIG(dec.digests, 62)));
}

static void
test_empty(void **state)
{
	(void)state;
	assert_int_equal(summary(&A, 0, NBLOCKS, 4), BFT_OK);
	assert_int_equal(dec.ndigests, NBLOCKS / 4);
	for (unsigned r = 0; r < NBLOCKS / 4; r++)
		assert_true(bft_summary_is_empty(DIG(dec.digests, r)));
	assert_int_equal(lclist(&A, 0, NBLOCKS), BFT_OK);
	assert_int_equal(dec.nentries, 0);
}

static void
test_lclist(void **state)
{
	static const uint64_t written[] = { 0, 7, 8, 33, 63 };
	uint8_t h[BFT_HASH_LEN];
	struct bft_ts ts;
	uint64_t block;

	(void)state;
	for (size_t i = 0; i < sizeof written / sizeof written[0]; i++)
		set_lc(&A, written[i], 10 + i, 1000 + i);
	set_lc(&A, 8, 20, 5);		/* a newer lc replaces the old */
	assert_int_equal(lclist(&A, 0, NBLOCKS), BFT_OK);
	assert_int_equal(dec.nentries, 5);
	for (uint32_t i = 0; i < dec.nentries; i++) {
		bft_lcentry_get(dec.entries + (size_t)i * BFT_LCENTRY_LEN,
		    &block, &ts);
		assert_true(block == written[i]);
		if (block == 8)
			assert_true(ts.num == 20 && ts.wid == 5);
		else
			assert_true(ts.num == 10 + i && ts.wid == 1000 + i);
	}
	assert_int_equal(lclist(&A, 7, 2), BFT_OK);
	assert_int_equal(dec.nentries, 2);
	assert_int_equal(lclist(&A, 9, 24), BFT_OK);
	assert_int_equal(dec.nentries, 0);
	assert_int_equal(lclist(&A, 63, 1), BFT_OK);
	assert_int_equal(dec.nentries, 1);
	/*
	 * lc set by a write-back, without the fragment: not held, so not
	 * listed and not in the digest (the server must rebuild it).
	 */
	assert_int_equal(summary(&A, 32, 16, 16), BFT_OK);
	memcpy(h, dec.digests, sizeof h);
	set_lc_how(&A, 40, 7, 7, false);
	assert_int_equal(lclist(&A, 40, 1), BFT_OK);
	assert_int_equal(dec.nentries, 0);
	assert_int_equal(summary(&A, 32, 16, 16), BFT_OK);
	assert_memory_equal(dec.digests, h, sizeof h);
	/* The entries of a range hash to its SUMMARY digest. */
	assert_int_equal(lclist(&A, 0, 16), BFT_OK);
	bft_hash(dec.entries, (size_t)dec.nentries * BFT_LCENTRY_LEN, h);
	assert_int_equal(summary(&A, 0, 16, 16), BFT_OK);
	assert_memory_equal(dec.digests, h, sizeof h);
}

static void
test_range(void **state)
{
	(void)state;
	assert_int_equal(summary(&A, NBLOCKS - 4, 4, 1), BFT_OK);
	assert_int_equal(summary(&A, NBLOCKS - 4, 5, 1), BFT_ERANGE);
	assert_int_equal(dec.ndigests, 0);
	assert_int_equal(summary(&A, NBLOCKS, 1, 1), BFT_ERANGE);
	assert_int_equal(summary(&A, 1, NBLOCKS, NBLOCKS), BFT_ERANGE);
	assert_int_equal(summary(&A, 1, UINT32_MAX, UINT32_MAX), BFT_ERANGE);
	assert_int_equal(summary(&A, UINT64_MAX, 1, 1), BFT_ERANGE);
	assert_int_equal(lclist(&A, NBLOCKS - 1, 1), BFT_OK);
	assert_int_equal(lclist(&A, NBLOCKS - 1, 2), BFT_ERANGE);
	assert_int_equal(dec.nentries, 0);
	assert_int_equal(lclist(&A, NBLOCKS, 1), BFT_ERANGE);
	assert_int_equal(lclist(&A, 0, NBLOCKS + 1), BFT_ERANGE);
	/* What the decoder would refuse, a direct caller gets EPROTO. */
	memset(&req, 0, sizeof req);
	req.type = BFT_LCLIST;
	req.count = 0;
	assert_int_equal(bft_handle(&A.h, "test", &req, &rep), 0);
	assert_int_equal(rep.status, BFT_EPROTO);
	req.type = BFT_SUMMARY;
	req.count = 1;
	req.span = 0;
	assert_int_equal(bft_handle(&A.h, "test", &req, &rep), 0);
	assert_int_equal(rep.status, BFT_EPROTO);
	req.count = BFT_SUMMARY_MAX + 1;
	req.span = 1;
	assert_int_equal(bft_handle(&A.h, "test", &req, &rep), 0);
	assert_int_equal(rep.status, BFT_EPROTO);
}

/* Cuts the last bytes of the newest log segment of s (store closed). */
static void
tear_tail(struct srv *s, off_t cut)
{
	char name[BFT_SEG_NAME_MAX], path[160];
	struct stat sb;
	uint32_t no;

	for (no = 1; no < 100; no++) {
		bft_seg_name(name, no + 1);
		snprintf(path, sizeof path, "%s/%s", s->dir, name);
		if (stat(path, &sb) != 0)
			break;
	}
	bft_seg_name(name, no);
	snprintf(path, sizeof path, "%s/%s", s->dir, name);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(truncate(path, sb.st_size - cut), 0);
}

static void
test_status(void **state)
{
	struct bft_heal_progress hp;
	uint64_t total;

	(void)state;
	assert_int_equal(status(&A), BFT_OK);
	assert_int_equal(dec.block, 0);
	assert_int_equal(dec.info.version, BFT_STORE_FORMAT);
	assert_int_equal(dec.info.server_index, 1);
	assert_true(dec.info.uptime_s < 60);
	assert_int_equal(dec.info.blocks_held, 0);
	assert_int_equal(dec.info.damaged_records, 0);
	assert_int_equal(dec.info.rebuild_state, BFT_REBUILD_IDLE);
	total = dec.info.bytes_total;

	set_lc(&A, 3, 1, 1);
	set_lc(&A, 4, 1, 1);
	set_lc(&A, 3, 2, 1);		/* overwritten: still one block */
	set_lc(&A, 60, 7, 7);
	assert_int_equal(status(&A), BFT_OK);
	assert_int_equal(dec.info.blocks_held, 3);
	assert_true(dec.info.bytes_total > total);
	assert_true(dec.info.bytes_live > 0 &&
	    dec.info.bytes_live <= dec.info.bytes_total);
	assert_int_equal(status(&B), BFT_OK);
	assert_int_equal(dec.info.blocks_held, 0);
	assert_int_equal(dec.info.server_index, 2);

	/* What the healing side reports goes out as it is. */
	memset(&hp, 0, sizeof hp);
	hp.rebuild_state = BFT_REBUILD_REBUILDING;
	hp.rebuild_done = 10;
	hp.rebuild_total = 64;
	hp.rebuild_bytes = 10 * 32768;
	hp.rebuild_rate = 1000000;
	hp.scrub_done = 5;
	hp.scrub_total = 9;
	hp.repaired_records = 2;
	hp.damaged_records_later = 3;
	A.h.heal = &hp;
	assert_int_equal(status(&A), BFT_OK);
	assert_int_equal(dec.info.rebuild_state, BFT_REBUILD_REBUILDING);
	assert_true(dec.info.rebuild_done == 10 &&
	    dec.info.rebuild_total == 64 &&
	    dec.info.rebuild_bytes == 10 * 32768 &&
	    dec.info.rebuild_rate == 1000000 && dec.info.scrub_done == 5 &&
	    dec.info.scrub_total == 9 && dec.info.repaired_records == 2 &&
	    dec.info.damaged_records == 3);

	/*
	 * A torn record found at open counts as damaged; the held blocks
	 * before it survive the reopen.
	 */
	bft_store_close(A.st);
	A.st = NULL;
	tear_tail(&A, 5);
	srv_open(&A);
	assert_int_equal(status(&A), BFT_OK);
	assert_int_equal(dec.info.damaged_records, 1 + 3);
	assert_int_equal(dec.info.blocks_held, 2);	/* block 60 torn off */
	A.h.heal = NULL;
	assert_int_equal(status(&A), BFT_OK);
	assert_int_equal(dec.info.damaged_records, 1);
	assert_int_equal(dec.info.repaired_records, 0);
}

/*
 * A volume of the largest size written only at its two ends (as a GPT
 * backup header does): its page table is millions of empty slots long,
 * and a walk over it must not cost a step for each.  The store counts
 * the page-map words its walks read; every request here visits at most
 * two pages, so a few dozen steps is plenty, where scanning the slots
 * took millions.
 */
#define SPARSE_V	3u
#define STEP_BOUND	64u

static uint64_t
steps_of_summary(struct srv *s, uint64_t block, uint32_t count,
    uint32_t span)
{
	uint64_t before = bft_store_idx_steps(s->st);

	assert_int_equal(summary(s, block, count, span), BFT_OK);
	return bft_store_idx_steps(s->st) - before;
}

static void
test_sparse(void **state)
{
	const uint64_t last = BFT_VOL_MAX_BLOCKS - 1;
	struct bft_store_vol v[4];
	uint64_t before;

	(void)state;
	set_lc(&A, bft_addr(SPARSE_V, 0), 1, 1);
	set_lc(&A, bft_addr(SPARSE_V, last), 2, 1);
	/* 1024 ranges of 1024 blocks each, from block 0's page on. */
	assert_true(steps_of_summary(&A, bft_addr(SPARSE_V, 0), 1u << 20,
	    1024) <= STEP_BOUND);
	assert_false(bft_summary_is_empty(DIG(dec.digests, 0)));
	for (unsigned r = 1; r < 1024; r++)
		assert_true(bft_summary_is_empty(DIG(dec.digests, r)));
	/* The same shape in the empty middle, and at the end. */
	assert_true(steps_of_summary(&A, bft_addr(SPARSE_V, 1ull << 31),
	    1u << 20, 1024) <= STEP_BOUND);
	for (unsigned r = 0; r < 1024; r++)
		assert_true(bft_summary_is_empty(DIG(dec.digests, r)));
	assert_true(steps_of_summary(&A, bft_addr(SPARSE_V, last + 1 -
	    (1u << 20)), 1u << 20, 1024) <= STEP_BOUND);
	assert_false(bft_summary_is_empty(DIG(dec.digests, 1023)));
	for (unsigned r = 0; r < 1023; r++)
		assert_true(bft_summary_is_empty(DIG(dec.digests, r)));
	/* The whole volume in 1024 ranges: both ends, nothing between. */
	assert_true(steps_of_summary(&A, bft_addr(SPARSE_V, 0),
	    (uint32_t)BFT_VOL_MAX_BLOCKS, (uint32_t)(BFT_VOL_MAX_BLOCKS /
	    1023)) <= STEP_BOUND);
	assert_false(bft_summary_is_empty(DIG(dec.digests, 0)));
	assert_false(bft_summary_is_empty(DIG(dec.digests,
	    dec.ndigests - 1)));
	/* LCLIST past the first page, and over the last one. */
	before = bft_store_idx_steps(A.st);
	assert_int_equal(lclist(&A, bft_addr(SPARSE_V, 1), BFT_LCLIST_MAX),
	    BFT_OK);
	assert_int_equal(dec.nentries, 0);
	assert_int_equal(lclist(&A, bft_addr(SPARSE_V, last + 1 -
	    BFT_LCLIST_MAX), BFT_LCLIST_MAX), BFT_OK);
	assert_int_equal(dec.nentries, 1);
	assert_true(bft_store_idx_steps(A.st) - before <= STEP_BOUND);
	/* VOLUMES knows the volume's end without a walk. */
	assert_int_equal(bft_store_volumes(A.st, SPARSE_V, v, 4), 1);
	assert_true(v[0].end >= BFT_VOL_MAX_BLOCKS);
	/* And the pages are all still found after a reopen. */
	bft_store_close(A.st);
	srv_open(&A);
	assert_int_equal(lclist(&A, bft_addr(SPARSE_V, last + 1 -
	    BFT_LCLIST_MAX), BFT_LCLIST_MAX), BFT_OK);
	assert_int_equal(dec.nentries, 1);
	assert_true(steps_of_summary(&A, bft_addr(SPARSE_V, 1), 1u << 20,
	    1024) <= STEP_BOUND);
}

static int
finalize(struct srv *s, uint32_t level)
{
	memset(&req, 0, sizeof req);
	req.type = BFT_FINALIZE;
	req.level = level;
	return ask(s);
}

static void
test_finalize(void **state)
{
	(void)state;
	assert_int_equal(status(&A), BFT_OK);
	assert_true(dec.info.release == bft_release_code(BFTBLK_VERSION_MAJOR,
	    BFTBLK_VERSION_MINOR, BFTBLK_VERSION_PATCH));
	assert_int_equal(dec.info.level, BFT_LEVEL);
	assert_int_equal(dec.info.finalized, 0);
	assert_int_equal(dec.info.version, BFT_STORE_FORMAT);
	/* Not a level this server speaks: nothing is recorded. */
	assert_int_equal(finalize(&A, BFT_LEVEL + 1), BFT_EPROTO);
	assert_int_equal(bft_store_finalized(A.st), 0);
	assert_int_equal(finalize(&A, BFT_LEVEL), BFT_OK);
	assert_int_equal(finalize(&A, BFT_LEVEL), BFT_OK);
	assert_int_equal(status(&A), BFT_OK);
	assert_int_equal(dec.info.finalized, BFT_LEVEL);
	assert_int_equal(dec.info.version, BFT_STORE_FORMAT_FINALIZED);
	/* Kept across a restart. */
	bft_store_close(A.st);
	srv_open(&A);
	assert_int_equal(status(&A), BFT_OK);
	assert_int_equal(dec.info.finalized, BFT_LEVEL);
	/* B was never told. */
	assert_int_equal(status(&B), BFT_OK);
	assert_int_equal(dec.info.finalized, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_summary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lclist, setup, teardown),
		cmocka_unit_test_setup_teardown(test_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status, setup, teardown),
		cmocka_unit_test_setup_teardown(test_finalize, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_sparse, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
