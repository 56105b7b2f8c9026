/*
 * The server's per-client state (server/quota.c): only listed keys and
 * the other servers' keys (peers) get a state, roles follow reloads,
 * revoked clients go once unused, and the pending-STORE bound refuses
 * exactly when a client has that many STOREs above lc, counting neither
 * completed ones nor ones past the window.  What each role may send
 * (common/config.c) is here too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <ftw.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../server/quota.h"
#include "crypto.h"
#include "wire.h"
#include "../../server/store/store.h"

#define NBLOCKS		8
#define MAX_STORES	4
#define WINDOW_MS	1000
#define ME		1	/* this server's index */

static struct bft_config cfg;
static struct bft_store *st;
static char dir[64];

static int
setup(void **state)
{
	struct bft_store_identity id;
	char err[256];

	(void)state;
	assert_int_equal(bft_crypto_init(), 0);
	cfg.t = 1;
	cfg.n = 4;
	cfg.block_size = BFT_BLOCK_SIZE;
	cfg.nblocks = NBLOCKS;
	cfg.nclients = 2;
	strcpy(cfg.clients[0].name, "w");
	cfg.clients[0].role = BFT_ROLE_RW;
	bft_random(cfg.clients[0].pk, 32);
	strcpy(cfg.clients[1].name, "r");
	cfg.clients[1].role = BFT_ROLE_RO;
	bft_random(cfg.clients[1].pk, 32);
	for (unsigned j = 0; j < cfg.n; j++)
		bft_random(cfg.server_pk[j], 32);
	memset(&id, 0, sizeof id);
	id.n = 4;
	id.t = 1;
	id.block_size = BFT_BLOCK_SIZE;
	id.nblocks = NBLOCKS;
	snprintf(dir, sizeof dir, "/tmp/test_quota.XXXXXX");
	assert_non_null(mkdtemp(dir));
	st = bft_store_open(dir, &id, err, sizeof err);
	if (st == NULL)
		fail_msg("bft_store_open: %s", err);
	return 0;
}

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb;
	(void)flag;
	(void)f;
	return remove(path);
}

static int
teardown(void **state)
{
	(void)state;
	bft_store_close(st);
	return nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void
test_identities(void **state)
{
	struct bft_quotas cs;
	struct bft_client_quota *w, *r;
	uint8_t stranger[32];
	bool oom;

	(void)state;
	bft_quota_init(&cs, &cfg, ME, 0, MAX_STORES, WINDOW_MS);
	bft_random(stranger, sizeof stranger);
	assert_null(bft_quota_get(&cs, stranger, &oom));
	assert_false(oom);
	w = bft_quota_get(&cs, cfg.clients[0].pk, &oom);
	r = bft_quota_get(&cs, cfg.clients[1].pk, &oom);
	assert_non_null(w);
	assert_non_null(r);
	assert_ptr_equal(bft_quota_get(&cs, cfg.clients[0].pk, &oom), w);
	assert_int_equal(w->role, BFT_ROLE_RW);
	assert_int_equal(r->role, BFT_ROLE_RO);
	assert_string_equal(r->name, "r");
	w->nconns = 1;

	/* The reader becomes a writer; the writer is revoked. */
	cfg.clients[0] = cfg.clients[1];
	cfg.clients[0].role = BFT_ROLE_RW;
	cfg.nclients = 1;
	bft_quota_reload(&cs);
	assert_int_equal(r->role, BFT_ROLE_RW);
	assert_true(r->listed);
	/* Still connected: kept, but with no role and not listed. */
	assert_false(w->listed);
	assert_int_equal(w->role, BFT_ROLE_NONE);
	/* Its last connection goes: the state goes (ASan would catch a
	 * use after free; the list must now hold only r). */
	bft_quota_put(&cs, w);
	assert_ptr_equal(cs.head, r);
	assert_null(r->next);
	bft_quota_fini(&cs);
	/* Restore for the next test. */
	bft_random(cfg.clients[0].pk, 32);
	cfg.clients[0].role = BFT_ROLE_RW;
	strcpy(cfg.clients[0].name, "w");
	cfg.nclients = 2;
}

/*
 * The other servers' keys are peers named server-J, kept across
 * reloads; this server's own key is nobody.
 */
static void
test_peers(void **state)
{
	struct bft_quotas cs;
	struct bft_client_quota *p0, *p3;
	bool oom;

	(void)state;
	bft_quota_init(&cs, &cfg, ME, 0, MAX_STORES, WINDOW_MS);
	p0 = bft_quota_get(&cs, cfg.server_pk[0], &oom);
	p3 = bft_quota_get(&cs, cfg.server_pk[3], &oom);
	assert_non_null(p0);
	assert_non_null(p3);
	assert_int_equal(p0->role, BFT_ROLE_PEER);
	assert_string_equal(p0->name, "server-0");
	assert_string_equal(p3->name, "server-3");
	assert_null(bft_quota_get(&cs, cfg.server_pk[ME], &oom));
	assert_false(oom);
	assert_ptr_equal(bft_quota_get(&cs, cfg.server_pk[0], &oom), p0);
	/* A reload that drops every client leaves the peers in. */
	p0->nconns = 1;
	cfg.nclients = 0;
	bft_quota_reload(&cs);
	assert_true(p0->listed && p3->listed);
	assert_int_equal(p0->role, BFT_ROLE_PEER);
	bft_quota_put(&cs, p0);
	assert_non_null(bft_quota_get(&cs, cfg.server_pk[3], &oom));
	bft_quota_fini(&cs);
	cfg.nclients = 2;
	/* Another server's view: server 1 is a peer, server 3 is itself. */
	bft_quota_init(&cs, &cfg, 3, 0, MAX_STORES, WINDOW_MS);
	assert_null(bft_quota_get(&cs, cfg.server_pk[3], &oom));
	assert_string_equal(bft_quota_get(&cs, cfg.server_pk[ME],
	    &oom)->name, "server-1");
	bft_quota_fini(&cs);
}

/*
 * What each role may send: every identity reads, writes back and asks
 * SUMMARY, LCLIST and STATUS; only writers make values; nobody without
 * a role does anything, and unknown types are refused to all.
 */
static void
test_roles(void **state)
{
	static const enum bft_role roles[] = { BFT_ROLE_NONE, BFT_ROLE_RO,
	    BFT_ROLE_RW, BFT_ROLE_PEER };
	struct bft_config cfg;
	uint8_t pk[32];

	(void)state;
	for (size_t r = 0; r < sizeof roles / sizeof roles[0]; r++) {
		enum bft_role role = roles[r];
		bool any = role != BFT_ROLE_NONE;

		for (unsigned type = 0; type <= 0xff; type++) {
			bool want;

			switch (type) {
			case BFT_HELLO: case BFT_COLLECT: case BFT_FILTER:
			case BFT_REPAIR: case BFT_FLUSH: case BFT_STATUS:
			case BFT_VOLUMES: case BFT_VCOLLECT: case BFT_VFILTER:
			case BFT_VREPAIR: case BFT_VLIST: case BFT_SNAPSPACE:
				want = any;
				break;
			case BFT_SUMMARY: case BFT_LCLIST:
				want = role == BFT_ROLE_RW ||
				    role == BFT_ROLE_PEER;
				break;
			case BFT_CLOCK: case BFT_STORE: case BFT_COMPLETE:
			case BFT_SCRUB: case BFT_DROP: case BFT_SNAP:
			case BFT_FINALIZE: case BFT_REAUTH:
				want = role == BFT_ROLE_RW;
				break;
			default:
				want = false;
			}
			assert_int_equal(bft_role_permits(role, (uint8_t)type),
			    want);
		}
	}
	assert_string_equal(bft_role_str(BFT_ROLE_PEER), "peer");
	assert_string_equal(bft_role_str(BFT_ROLE_RO), "read-only");
	assert_string_equal(bft_role_str(BFT_ROLE_RW), "read-write");
	assert_string_equal(bft_role_str(BFT_ROLE_NONE), "none");

	memset(&cfg, 0, sizeof cfg);
	cfg.n = 4;
	for (unsigned i = 0; i < 4; i++)
		bft_random(cfg.server_pk[i], 32);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(bft_config_find_server(&cfg,
		    cfg.server_pk[i]), (int)i);
	bft_random(pk, sizeof pk);
	assert_int_equal(bft_config_find_server(&cfg, pk), -ENOENT);
	/* Only the first n keys are servers'. */
	memcpy(cfg.server_pk[4], pk, 32);
	assert_int_equal(bft_config_find_server(&cfg, pk), -ENOENT);
}

static void
test_store_bound(void **state)
{
	struct bft_quotas cs;
	struct bft_client_quota *w;
	struct bft_cand lc;
	struct bft_ts ts = { .num = 5, .wid = 3 };
	bool oom;

	(void)state;
	bft_quota_init(&cs, &cfg, ME, 0, MAX_STORES, WINDOW_MS);
	w = bft_quota_get(&cs, cfg.clients[0].pk, &oom);
	assert_non_null(w);
	for (unsigned b = 0; b < MAX_STORES; b++) {
		assert_true(bft_quota_admit_store(&cs, w, st, 100));
		bft_quota_note_store(&cs, w, b, &ts, 100);
	}
	/* Full, and nothing completed: refused. */
	assert_false(bft_quota_admit_store(&cs, w, st, 200));
	assert_true(w->refused == 1);
	/* Block 1 completes ts: one slot frees. */
	memset(&lc, 0, sizeof lc);
	lc.ts = ts;
	assert_int_equal(bft_store_set_lc(st, 1, &lc), 0);
	assert_true(bft_quota_admit_store(&cs, w, st, 200));
	assert_int_equal(w->npend, MAX_STORES - 1);
	bft_quota_note_store(&cs, w, 6, &ts, 300);
	assert_false(bft_quota_admit_store(&cs, w, st, 300));
	/* A lower completed ts on block 2 does not free its entry. */
	lc.ts.num = 4;
	assert_int_equal(bft_store_set_lc(st, 2, &lc), 0);
	assert_false(bft_quota_admit_store(&cs, w, st, 300));
	/* Past the window the entries of t=100 stop counting; the one
	 * of t=300 still counts. */
	assert_true(bft_quota_admit_store(&cs, w, st, 100 + WINDOW_MS));
	assert_int_equal(w->npend, 1);
	/* A client's bound is its own: the reader's list is empty. */
	assert_true(bft_quota_admit_store(&cs,
	    bft_quota_get(&cs, cfg.clients[1].pk, &oom), st, 300));
	bft_quota_fini(&cs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identities),
		cmocka_unit_test(test_peers),
		cmocka_unit_test(test_roles),
		cmocka_unit_test(test_store_bound),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
