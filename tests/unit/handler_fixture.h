/*
 * The fixture of the handler's tests (test_handler.c, test_handler_vol.c):
 * a real store in a temporary directory, a handler over it, and
 * requests made with the keys a client would hold.  Every reply is
 * also run through the wire encoder, so a reply the handler builds but
 * the wire cannot carry fails.
 */
#ifndef BFTBLK_HANDLER_FIXTURE_H
#define BFTBLK_HANDLER_FIXTURE_H

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

#include "config.h"
#include "crypto.h"
#include "keys.h"
#include "predicates.h"
#include "wire.h"
#include "../../server/handler.h"
#include "../../server/store/store.h"
#include "store_view.h"

#define T	1
#define N	4
#define NBLOCKS	16
#define ME	1		/* this server's index; not 0, to catch mixups */
#define FRAGLEN	1000

static struct bft_config cfg;
static struct bft_client_key ck;
static struct bft_server_key sk;
static struct bft_store_identity ident;
static char dir[64];
static struct bft_store *st;
static struct bft_handler h;
static struct bft_msg req, rep;

static inline void
open_store(void)
{
	char err[256] = "";

	st = bft_store_open(dir, &ident, err, sizeof err);
	if (st == NULL)
		fail_msg("bft_store_open: %s", err);
	h.st = st;
}

static inline int
setup(void **state)
{
	(void)state;
	assert_int_equal(bft_crypto_init(), 0);
	memset(&cfg, 0, sizeof cfg);
	bft_random(cfg.cluster_id, BFT_CLUSTER_ID_LEN);
	cfg.t = T;
	cfg.n = N;
	cfg.block_size = BFT_BLOCK_SIZE;
	cfg.nblocks = NBLOCKS;
	cfg.size = (uint64_t)NBLOCKS * BFT_BLOCK_SIZE;
	memset(&ck, 0, sizeof ck);
	memcpy(ck.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN);
	ck.n = N;
	bft_random(ck.k, sizeof ck.k);
	bft_random(ck.kw, sizeof ck.kw);
	memcpy(sk.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN);
	sk.index = ME;
	memcpy(sk.k, ck.k[ME], BFT_KEY_LEN);
	memset(&ident, 0, sizeof ident);
	memcpy(ident.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN);
	ident.server_index = ME;
	ident.n = N;
	ident.t = T;
	ident.block_size = BFT_BLOCK_SIZE;
	ident.nblocks = NBLOCKS;
	snprintf(dir, sizeof dir, "/tmp/test_handler.XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(bft_handler_init(&h, &cfg, &sk, NULL, 0), 0);
	open_store();
	return 0;
}

static inline int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb;
	(void)flag;
	(void)f;
	return remove(path);
}

static inline int
teardown(void **state)
{
	(void)state;
	if (st)
		bft_store_close(st);
	st = NULL;
	bft_handler_fini(&h);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

/* Runs req through the handler; returns the reply status. */
static inline int
handle(void)
{
	struct bft_buf out = { 0 };
	int rc;

	req.id++;
	rc = bft_handle(&h, "test", &req, &rep);
	assert_int_equal(rep.type, req.type | BFT_ACK);
	assert_int_equal(rep.id, req.id);
	assert_int_equal(rc, rep.status == BFT_ECLUSTER);
	assert_int_equal(bft_wire_encode(&rep, N, &out), 0);
	bft_buf_free(&out);
	return rep.status;
}

static inline struct bft_ts
mkts(uint64_t block, uint64_t num, uint64_t wid)
{
	struct bft_ts ts = { .num = num, .wid = wid };

	bft_ts_sign(&ts, block, ck.kw);
	return ts;
}

/* A candidate as a writer's COMPLETE makes it: a MAC for every server. */
static inline struct bft_cand
mkcand(uint64_t block, uint64_t num, uint64_t wid)
{
	struct bft_cand c;
	uint8_t nh[BFT_HASH_LEN];

	memset(&c, 0, sizeof c);
	c.ts = mkts(block, num, wid);
	bft_random(c.nonce, BFT_NONCE_LEN);
	bft_hash(c.nonce, BFT_NONCE_LEN, nh);
	for (unsigned j = 0; j < N; j++)
		bft_vec_mac(&c.ts, block, nh, ck.k[j], c.vec[j]);
	return c;
}

static uint8_t frag[FRAGLEN];

static inline void
set_req(uint8_t type, uint64_t block)
{
	uint64_t id = req.id;

	memset(&req, 0, sizeof req);
	req.type = type;
	req.id = id;
	req.block = block;
	/* A REAUTH of the live state, as the pass sends most. */
	if (type == BFT_REAUTH)
		req.gen = BFT_GEN_MAX;
}

/* STORE of c's write to this server, with frag filled from seed. */
static inline int
store(uint64_t block, const struct bft_cand *c, uint8_t seed)
{
	set_req(BFT_STORE, block);
	req.ts = c->ts;
	bft_hash(c->nonce, BFT_NONCE_LEN, req.nh);
	memcpy(req.vec, c->vec, sizeof req.vec);
	memset(frag, seed, sizeof frag);
	for (unsigned j = 0; j < N; j++)
		memset(req.cc[j], seed + j, BFT_HASH_LEN);
	req.frag = frag;
	req.frag_len = FRAGLEN;
	return handle();
}

static inline int
complete(uint64_t block, const struct bft_cand *c)
{
	set_req(BFT_COMPLETE, block);
	req.ts = c->ts;
	memcpy(req.nonce, c->nonce, BFT_NONCE_LEN);
	memcpy(req.vec, c->vec, sizeof req.vec);
	return handle();
}

static inline int
filter(uint64_t block, const struct bft_cand *C, unsigned nc)
{
	set_req(BFT_FILTER, block);
	memcpy(req.cands, C, nc * sizeof *C);
	req.ncands = nc;
	return handle();
}

static inline int
repair(uint64_t block, const struct bft_cand *c)
{
	set_req(BFT_REPAIR, block);
	req.cands[0] = *c;
	req.ncands = 1;
	return handle();
}

static inline const struct bft_cand *
lc(uint64_t block)
{
	return store_lc(st, block);
}

static inline void
assert_ts(const struct bft_ts *a, const struct bft_ts *b)
{
	assert_int_equal(bft_ts_cmp(a, b), 0);
}

/* The FILTER_ACK in rep is Hist[c.ts] with the fragment of seed. */
static inline void
assert_filter_hist(const struct bft_cand *c, uint8_t seed)
{
	uint8_t want[FRAGLEN];

	assert_int_equal(rep.status, BFT_OK);
	assert_ts(&rep.ts, &c->ts);
	assert_memory_equal(rep.vec, c->vec, N * BFT_MAC_LEN);
	for (unsigned j = 0; j < N; j++)
		assert_int_equal(rep.cc[j][0], (uint8_t)(seed + j));
	assert_int_equal(rep.frag_len, FRAGLEN);
	memset(want, seed, sizeof want);
	assert_memory_equal(rep.frag, want, FRAGLEN);
}

static inline void
assert_filter_empty(const struct bft_ts *ts)
{
	static const uint8_t zero[BFT_MAX_N * BFT_HASH_LEN];

	assert_int_equal(rep.status, BFT_OK);
	assert_ts(&rep.ts, ts);
	assert_memory_equal(rep.vec, zero, N * BFT_MAC_LEN);
	assert_memory_equal(rep.cc, zero, N * BFT_HASH_LEN);
	assert_int_equal(rep.frag_len, 0);
}

static inline int
collect(uint64_t block, bool want)
{
	set_req(BFT_COLLECT, block);
	req.want_frag = want;
	return handle();
}

static inline void
hello(void)
{
	set_req(BFT_HELLO, 0);
	memcpy(req.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN);
	req.hello_n = N;
	req.hello_t = T;
	req.block_size = BFT_BLOCK_SIZE;
	req.nblocks = NBLOCKS;
	req.server_index = ME;
}


#endif
