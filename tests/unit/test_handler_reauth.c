/*
 * REAUTH (wire.h, docs/key-epochs.md): a writer gives a version this
 * server stores the next key epoch's MACs.  It re-labels lc and its
 * Hist entry, keeps them across a restart, and is refused for anything
 * that would make the server hold what it did not: another timestamp,
 * another nonce, a MAC the server cannot check.  The fixture is
 * test_handler.c's.
 */
#include "handler_fixture.h"

static uint8_t k2[BFT_MAX_N][BFT_KEY_LEN], kw2[BFT_KEY_LEN];

/* REAUTH of c's version with MACs under the next epoch's keys. */
static int
reauth(uint64_t block, const struct bft_cand *c, const uint8_t *nonce)
{
	uint8_t nh[BFT_HASH_LEN];

	set_req(BFT_REAUTH, block);
	req.ts = c->ts;
	bft_ts_sign(&req.ts, block, kw2);
	bft_hash(nonce, BFT_NONCE_LEN, nh);
	memcpy(req.nh, nh, BFT_HASH_LEN);
	for (unsigned j = 0; j < N; j++)
		bft_vec_mac(&req.ts, block, nh, k2[j], req.vec[j]);
	return handle();
}

/* The server takes the next epoch, as a reload does. */
static void
take_next(void)
{
	bft_random(k2, sizeof k2);
	bft_random(kw2, sizeof kw2);
	sk.has_alt = true;
	sk.alt_epoch = 1;
	memcpy(sk.k_alt, k2[ME], BFT_KEY_LEN);
}

static void
test_relabel(void **state)
{
	struct bft_cand c = mkcand(3, 5, 7), again;
	struct bft_mac_keys next = { k2[ME], NULL };
	uint8_t nh[BFT_HASH_LEN], vec[BFT_MAX_N][BFT_MAC_LEN];

	(void)state;
	assert_int_equal(store(3, &c, 9), BFT_OK);
	assert_int_equal(complete(3, &c), BFT_OK);
	take_next();
	assert_int_equal(reauth(3, &c, c.nonce), BFT_OK);
	memcpy(vec, req.vec, sizeof vec);
	assert_int_equal(h.stats.relabelled, 2);	/* lc and Hist[lc.ts] */
	/* lc, as COLLECT gives it, carries the new MACs and nothing else. */
	again = *lc(3);
	assert_ts(&again.ts, &c.ts);
	assert_memory_equal(again.nonce, c.nonce, BFT_NONCE_LEN);
	assert_true(bft_ts_verify(&again.ts, 3, kw2));
	assert_false(bft_ts_verify(&again.ts, 3, ck.kw));
	assert_true(bft_valid(&again, NULL, 3, ME, &next));
	/* Hist[lc.ts] too, with the fragment it had. */
	assert_int_equal(filter(3, &again, 1), BFT_OK);
	assert_memory_equal(rep.vec, vec, N * BFT_MAC_LEN);
	assert_int_equal(rep.frag_len, FRAGLEN);
	assert_int_equal(rep.frag[0], 9);
	/* Again: nothing left to change, nothing appended. */
	assert_int_equal(reauth(3, &c, c.nonce), BFT_OK);
	assert_int_equal(h.stats.relabelled, 2);
	/* Replay keeps the latest record of lc. */
	bft_store_close(st);
	open_store();
	again = *lc(3);
	assert_true(bft_ts_verify(&again.ts, 3, kw2));
	bft_hash(again.nonce, BFT_NONCE_LEN, nh);
	assert_true(bft_vec_verify(&again.ts, 3, nh, k2[ME],
	    again.vec[ME]));
}

/*
 * In a finalized store lc's record carries Hist[lc.ts]'s new MACs: one
 * small record appended, not the fragment again, and the entry still
 * served with the new MACs and its own fragment, also after a restart
 * (replay reads the record's flag; the checkpoint keeps the index's),
 * and after a write moves lc on (the flag goes).
 */
static void
test_relabel_metadata_only(void **state)
{
	struct bft_cand c = mkcand(3, 5, 7), next = mkcand(3, 6, 7);
	struct bft_store_stats before, after;
	uint8_t vec[BFT_MAX_N][BFT_MAC_LEN];

	(void)state;
	assert_int_equal(bft_store_finalize(st, 1), 0);
	assert_int_equal(store(3, &c, 9), BFT_OK);
	assert_int_equal(complete(3, &c), BFT_OK);
	take_next();
	bft_store_stats(st, &before);
	assert_int_equal(reauth(3, &c, c.nonce), BFT_OK);
	memcpy(vec, req.vec, sizeof vec);
	bft_store_stats(st, &after);
	assert_int_equal(h.stats.relabelled, 1);
	assert_true(after.bytes_total - before.bytes_total < FRAGLEN);
	for (int round = 0; round < 2; round++) {
		struct bft_cand again = *lc(3);

		assert_true(bft_ts_verify(&again.ts, 3, kw2));
		assert_int_equal(filter(3, &again, 1), BFT_OK);
		assert_memory_equal(rep.vec, vec, N * BFT_MAC_LEN);
		assert_true(bft_ts_verify(&rep.ts, 3, kw2));
		assert_int_equal(rep.frag_len, FRAGLEN);
		assert_int_equal(rep.frag[0], 9);
		/* Nothing left to change. */
		assert_int_equal(reauth(3, &c, c.nonce), BFT_OK);
		assert_int_equal(h.stats.relabelled, 1);
		/* Round 0 reopens from the index checkpoint, 1 by replay. */
		bft_store_close(st);
		if (round == 0) {
			char path[128];

			snprintf(path, sizeof path, "%s/index.ckpt", dir);
			assert_int_equal(unlink(path), 0);
		}
		open_store();
	}
	/* A newer version: its entry is its own, old MACs or new. */
	assert_int_equal(store(3, &next, 4), BFT_OK);
	assert_int_equal(complete(3, &next), BFT_OK);
	assert_int_equal(filter(3, lc(3), 1), BFT_OK);
	assert_false(memcmp(rep.vec, vec, N * BFT_MAC_LEN) == 0);
	assert_int_equal(rep.frag[0], 4);
}

/*
 * What a REAUTH may not do.  Each attack is a writer's (or a
 * Byzantine server's holding a leaked writer key) trying to change
 * what the server holds through it.
 */
static void
test_refusals(void **state)
{
	struct bft_cand c = mkcand(4, 5, 7), newer = mkcand(4, 6, 7);
	struct bft_cand other = mkcand(4, 5, 8);
	uint8_t nonce[BFT_NONCE_LEN];

	(void)state;
	assert_int_equal(store(4, &c, 9), BFT_OK);
	assert_int_equal(complete(4, &c), BFT_OK);
	/* Before the server holds the next epoch, its MACs do not pass. */
	bft_random(k2, sizeof k2);
	bft_random(kw2, sizeof kw2);
	assert_int_equal(reauth(4, &c, c.nonce), BFT_EAUTH);
	take_next();
	/* A version it never stored: newer, or another writer's. */
	assert_int_equal(reauth(4, &newer, newer.nonce), BFT_EGONE);
	assert_int_equal(reauth(4, &other, other.nonce), BFT_EGONE);
	/* Its (num, wid) with another value's nonce. */
	bft_random(nonce, sizeof nonce);
	assert_int_equal(reauth(4, &c, nonce), BFT_EGONE);
	/* A block it holds nothing of, and one beyond the disk. */
	assert_int_equal(reauth(5, &c, c.nonce), BFT_EGONE);
	assert_int_equal(reauth(NBLOCKS, &c, c.nonce), BFT_ERANGE);
	assert_int_equal(h.stats.relabelled, 0);
	assert_ts(&lc(4)->ts, &c.ts);
	assert_true(bft_ts_verify(&lc(4)->ts, 4, ck.kw));
	/* A vector entry under another server's next key. */
	set_req(BFT_REAUTH, 4);
	req.ts = c.ts;
	bft_ts_sign(&req.ts, 4, kw2);
	bft_hash(c.nonce, BFT_NONCE_LEN, req.nh);
	bft_vec_mac(&req.ts, 4, req.nh, k2[(ME + 1) % N], req.vec[ME]);
	assert_int_equal(handle(), BFT_EAUTH);
	/*
	 * A downgrade: MACs under the old epoch, which the server still
	 * accepts for writes, but which a REAUTH must never bring back
	 * (a leaked old writer key would undo the pass with it).
	 */
	set_req(BFT_REAUTH, 4);
	req.ts = c.ts;
	bft_hash(c.nonce, BFT_NONCE_LEN, req.nh);
	for (unsigned j = 0; j < N; j++)
		bft_vec_mac(&req.ts, 4, req.nh, ck.k[j], req.vec[j]);
	assert_int_equal(handle(), BFT_EAUTH);
	/* The zero timestamp is no version. */
	set_req(BFT_REAUTH, 4);
	assert_int_equal(handle(), BFT_EPROTO);
	assert_int_equal(h.stats.relabelled, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_relabel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_relabel_metadata_only,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
