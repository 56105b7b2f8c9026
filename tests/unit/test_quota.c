/*
 * The server's per-client state (server/quota.c): only listed keys get
 * a state, roles follow reloads, revoked clients go once unused, and the
 * pending-STORE bound refuses exactly when a client has that many STOREs
 * above lc, counting neither completed ones nor ones past the window.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../server/quota.h"
#include "crypto.h"
#include "../../server/store.h"

#define NBLOCKS		8
#define MAX_STORES	4
#define WINDOW_MS	1000

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
	bft_quota_init(&cs, &cfg, 0, MAX_STORES, WINDOW_MS);
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

static void
test_store_bound(void **state)
{
	struct bft_quotas cs;
	struct bft_client_quota *w;
	struct bft_cand lc;
	struct bft_ts ts = { .num = 5, .wid = 3 };
	bool oom;

	(void)state;
	bft_quota_init(&cs, &cfg, 0, MAX_STORES, WINDOW_MS);
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
		cmocka_unit_test(test_store_bound),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
