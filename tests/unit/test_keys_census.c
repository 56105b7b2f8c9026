/*
 * The MAC key census and retiring an epoch (server/keys_census.c,
 * server/reload.c, docs/key-epochs.md): the census counts the versions
 * still under the older epoch, a REAUTH takes them off the count, and
 * the older key goes only once a pass begun while retiring counts none,
 * taking the STOREs above lc under it along.  While retiring, a value
 * under the older epoch alone is refused.  The census is driven by
 * hand, a step at a time; the fixture is test_handler.c's.
 */
#include <errno.h>

#include "handler_fixture.h"
#include "../../server/keys_census.h"
#include "../../server/reload.h"

enum { VOL = 9 };

#define ADDR(b)		bft_addr(VOL, (b))
#define NUM(g, s)	(bft_gen_floor(g) + (s))

static uint8_t k2[BFT_MAX_N][BFT_KEY_LEN], kw2[BFT_KEY_LEN];
static struct bft_census *cen;
static const struct bft_census_progress *cp;
static char keypath[80];

static int
setup_census(void **state)
{
	setup(state);
	sk.epoch = 0;
	sk.has_alt = sk.retiring = false;
	sk.alt_epoch = 0;
	memset(sk.k_alt, 0, sizeof sk.k_alt);
	bft_random(k2, sizeof k2);
	bft_random(kw2, sizeof kw2);
	assert_non_null(cen = bft_census_new(&h, &sk));
	cp = bft_census_progress(cen);
	h.census = cp;
	snprintf(keypath, sizeof keypath, "%s.key", dir);
	return 0;
}

static int
teardown_census(void **state)
{
	h.census = NULL;
	bft_census_free(cen);
	unlink(keypath);
	return teardown(state);
}

/* A write's candidate under the next epoch's keys. */
static struct bft_cand
mkcand2(uint64_t block, uint64_t num, uint64_t wid)
{
	struct bft_cand c;
	uint8_t nh[BFT_HASH_LEN];

	memset(&c, 0, sizeof c);
	c.ts.num = num;
	c.ts.wid = wid;
	bft_ts_sign(&c.ts, block, kw2);
	bft_random(c.nonce, BFT_NONCE_LEN);
	bft_hash(c.nonce, BFT_NONCE_LEN, nh);
	for (unsigned j = 0; j < N; j++)
		bft_vec_mac(&c.ts, block, nh, k2[j], c.vec[j]);
	return c;
}

static void
written(uint64_t block, const struct bft_cand *c, uint8_t seed)
{
	assert_int_equal(store(block, c, seed), BFT_OK);
	assert_int_equal(complete(block, c), BFT_OK);
}

/*
 * REAUTH of c's version with MACs under the next epoch's keys, in the
 * view at boundary g (BFT_GEN_MAX: the head).
 */
static int
reauth_view(uint64_t block, const struct bft_cand *c, uint64_t g)
{
	set_req(BFT_REAUTH, block);
	req.gen = g;
	req.ts = c->ts;
	bft_ts_sign(&req.ts, block, kw2);
	bft_hash(c->nonce, BFT_NONCE_LEN, req.nh);
	for (unsigned j = 0; j < N; j++)
		bft_vec_mac(&req.ts, block, req.nh, k2[j], req.vec[j]);
	return handle();
}

/* The same of the head. */
static int
reauth(uint64_t block, const struct bft_cand *c)
{
	return reauth_view(block, c, BFT_GEN_MAX);
}

/* SNAP op of boundary g of VOL, under the keys k. */
static int
snap(uint64_t g, uint8_t op, const uint8_t (*k)[BFT_KEY_LEN])
{
	set_req(BFT_SNAP, ADDR(0));
	req.gen = g;
	req.snap_op = op;
	for (unsigned j = 0; j < N; j++)
		bft_snap_mac(VOL, g, op, k[j], req.vec[j]);
	return handle();
}

/* Steps of a few blocks until a pass completes. */
static void
pass(void)
{
	for (unsigned i = 0; i < 100000; i++)
		if (bft_census_step(cen, 7))
			return;
	fail_msg("no census pass completed");
}

static void
assert_counts(uint64_t current, uint64_t pending, uint64_t retained)
{
	assert_int_equal(cp->old_current, current);
	assert_int_equal(cp->old_pending, pending);
	assert_int_equal(cp->old_retained, retained);
}

/*
 * This server's key file: epoch e alone, with the next epoch's key
 * beside it (next), or the next epoch's alone (e then 1).
 */
static int
reload(uint32_t e, bool next)
{
	static struct bft_server_key f;

	memcpy(&f, &sk, sizeof f);
	f.retiring = false;
	f.epoch = e;
	memcpy(f.k, e == 0 ? ck.k[ME] : k2[ME], BFT_KEY_LEN);
	f.has_alt = next;
	f.alt_epoch = next ? 1 : 0;
	memcpy(f.k_alt, k2[ME], BFT_KEY_LEN);
	unlink(keypath);
	assert_int_equal(bft_server_key_write(keypath, &f), 0);
	return bft_reload_key(keypath, &sk);
}

static void
take_next(void)
{
	assert_int_equal(reload(0, true), 1);
	assert_true(sk.has_alt && !sk.retiring && sk.alt_epoch == 1);
}

/*
 * The counts: lc under the older epoch, REAUTH taking it off, a STORE
 * above lc, writes under the newest not counted; STATUS says them;
 * idle and zeros with one epoch.
 */
static void
test_counts(void **state)
{
	struct bft_cand a = mkcand(3, 5, 7), b = mkcand(4, 5, 7);
	struct bft_cand p = mkcand(5, 6, 7), n;

	(void)state;
	written(3, &a, 1);
	written(4, &b, 2);
	assert_int_equal(store(5, &p, 3), BFT_OK);
	/* One epoch: nothing to count. */
	assert_false(bft_census_step(cen, 1000000));
	assert_counts(0, 0, 0);
	assert_int_equal(cp->passes, 0);
	take_next();
	/* Bounded: a block a step here. */
	assert_false(bft_census_step(cen, 1));
	assert_int_equal(cp->done, 1);
	assert_int_equal(cp->total, bft_store_indexed(st));
	pass();
	assert_counts(2, 1, 0);
	assert_int_equal(cp->passes, 1);
	assert_int_equal(cp->done, cp->total);
	/* Re-authenticated: off the count; a new write never on it. */
	assert_int_equal(reauth(3, &a), BFT_OK);
	n = mkcand2(6, 5, 7);
	written(6, &n, 4);
	pass();
	assert_counts(1, 1, 0);
	/* A pending STORE re-authenticated too. */
	assert_int_equal(reauth(5, &p), BFT_OK);
	pass();
	assert_counts(1, 0, 0);
	assert_int_equal(cp->passes, 3);
	/* STATUS. */
	set_req(BFT_STATUS, 0);
	assert_int_equal(handle(), BFT_OK);
	assert_int_equal(rep.info.mac_epoch, 0);
	assert_int_equal(rep.info.mac_next_epoch, 1);
	assert_int_equal(rep.info.mac_old_versions, 1);
	assert_int_equal(rep.info.mac_old_pending, 0);
	assert_int_equal(rep.info.mac_old_retained, 0);
	assert_int_equal(rep.info.mac_census_passes, 3);
	assert_int_equal(rep.info.mac_census_total, bft_store_indexed(st));
	assert_int_equal(rep.info.mac_census_done, bft_store_indexed(st));
	assert_int_equal(rep.info.mac_retiring, 0);
	/* Back to one epoch (a test's doing; no reload does it). */
	sk.has_alt = false;
	assert_false(bft_census_step(cen, 1000000));
	assert_counts(0, 0, 0);
	assert_int_equal(cp->passes, 0);
	assert_int_equal(cp->total, 0);
}

/*
 * The reloads retiring takes: the next epoch alone begins it, the same
 * again changes nothing, both epochs again take it back; anything else
 * is refused.  While retiring, only the newest epoch's values pass.
 */
static void
test_retiring_reload(void **state)
{
	struct bft_cand o = mkcand(8, 5, 7), n = mkcand2(8, 6, 7);
	uint8_t k[BFT_KEY_LEN];

	(void)state;
	/* Retiring needs a next epoch to retire for. */
	memcpy(k, sk.k, sizeof k);
	assert_int_equal(reload(1, false), -1);
	take_next();
	assert_int_equal(reload(1, false), 1);
	assert_true(sk.retiring && sk.has_alt && sk.epoch == 0);
	assert_int_equal(reload(1, false), 0);
	assert_true(sk.retiring);
	/* Another key for the next epoch: refused, nothing changes. */
	k2[ME][0] ^= 1;
	assert_int_equal(reload(1, false), -1);
	k2[ME][0] ^= 1;
	assert_true(sk.retiring && sk.has_alt);
	/* The operator's undo, and retiring again. */
	assert_int_equal(reload(0, true), 1);
	assert_true(!sk.retiring && sk.has_alt);
	assert_int_equal(reload(0, true), 0);
	assert_int_equal(reload(1, false), 1);
	/* The old key still checks nothing new; the next does. */
	assert_memory_equal(sk.k, k, sizeof k);
	assert_int_equal(store(8, &o, 1), BFT_EAUTH);
	assert_int_equal(complete(8, &o), BFT_EAUTH);
	assert_int_equal(store(8, &n, 2), BFT_OK);
	assert_int_equal(complete(8, &n), BFT_OK);
	/* Nor REAUTH under it, which would take a version back. */
	set_req(BFT_REAUTH, 8);
	req.ts = o.ts;
	bft_hash(o.nonce, BFT_NONCE_LEN, req.nh);
	memcpy(req.vec, o.vec, sizeof req.vec);
	assert_int_equal(handle(), BFT_EAUTH);
	set_req(BFT_STATUS, 0);
	assert_int_equal(handle(), BFT_OK);
	assert_int_equal(rep.info.mac_retiring, 1);
	assert_int_equal(rep.info.mac_epoch, 0);
	assert_int_equal(rep.info.mac_next_epoch, 1);
}

/*
 * Retire: refused while a version is under the older epoch, done once
 * REAUTH re-authenticated them, with the STOREs above lc under it
 * forgotten.  A pass begun before retiring does not count.
 */
static void
test_retire(void **state)
{
	struct bft_cand a = mkcand(3, 5, 7), b = mkcand(4, 5, 7);
	struct bft_cand bp = mkcand(4, 6, 7), q = mkcand(7, 5, 7);
	struct bft_cand n = mkcand2(9, 5, 7), np = mkcand2(4, 7, 8), o;

	(void)state;
	written(3, &a, 1);
	written(4, &b, 2);
	/* Planted above lc under the older epoch, never completed. */
	assert_int_equal(store(4, &bp, 3), BFT_OK);
	assert_int_equal(store(7, &q, 4), BFT_OK);
	take_next();
	written(9, &n, 5);
	assert_int_equal(store(4, &np, 6), BFT_OK);
	/* A pass under way when retiring begins starts over. */
	assert_false(bft_census_step(cen, 5));
	assert_int_equal(cp->done, 5);
	assert_int_equal(reload(1, false), 1);
	assert_false(bft_census_step(cen, 1));
	assert_int_equal(cp->done, 1);
	pass();
	assert_int_equal(cp->passes, 1);
	assert_counts(2, 2, 0);
	/* Refused: two versions would become unreadable. */
	assert_true(sk.has_alt && sk.retiring && sk.epoch == 0);
	assert_int_equal(reauth(3, &a), BFT_OK);
	pass();
	assert_counts(1, 2, 0);
	assert_true(sk.has_alt && sk.retiring);
	assert_int_equal(reauth(4, &b), BFT_OK);
	/* None left but the STOREs above lc: the next pass forgets them. */
	pass();
	assert_counts(0, 2, 0);
	assert_true(sk.has_alt && sk.retiring);
	assert_true(bft_store_has_hist(st, 4, &bp.ts));
	pass();
	assert_false(sk.has_alt || sk.retiring);
	assert_int_equal(sk.epoch, 1);
	assert_memory_equal(sk.k, k2[ME], BFT_KEY_LEN);
	assert_false(bft_store_has_hist(st, 4, &bp.ts));
	assert_false(bft_store_has_hist(st, 7, &q.ts));
	/* What is under the newest stays: lc, its entry, a STORE above. */
	assert_true(bft_store_has_hist(st, 4, &np.ts));
	assert_true(bft_store_has_hist(st, 4, &b.ts));
	assert_true(bft_store_has_hist(st, 9, &n.ts));
	assert_ts(&lc(3)->ts, &a.ts);
	/* Idle, zeros; STATUS says one epoch. */
	assert_false(bft_census_step(cen, 1000));
	assert_counts(0, 0, 0);
	set_req(BFT_STATUS, 0);
	assert_int_equal(handle(), BFT_OK);
	assert_int_equal(rep.info.mac_epoch, 1);
	assert_int_equal(rep.info.mac_next_epoch, 0);
	assert_int_equal(rep.info.mac_retiring, 0);
	/* The old epoch gets nothing in, the old files no reload. */
	o = mkcand(10, 5, 7);
	assert_int_equal(store(10, &o, 7), BFT_EAUTH);
	n = mkcand2(10, 6, 7);
	assert_int_equal(store(10, &n, 8), BFT_OK);
	assert_int_equal(reload(1, false), 0);
	assert_int_equal(reload(0, true), -1);
	assert_int_equal(reload(0, false), -1);
	assert_false(sk.has_alt);
}

/*
 * What the retained-version tests start from: v1 kept by boundaries 1
 * and 2 when v3 replaced it, the next epoch taken, the census counting
 * both under the older one, and v3 re-authenticated.
 */
static void
retained_start(struct bft_cand *v1, struct bft_cand *v3)
{
	*v1 = mkcand(ADDR(1), NUM(1, 1), 5);
	*v3 = mkcand(ADDR(1), NUM(3, 1), 5);
	written(ADDR(1), v1, 1);
	assert_int_equal(snap(1, BFT_SNAP_ADD, ck.k), BFT_OK);
	assert_int_equal(snap(2, BFT_SNAP_ADD, ck.k), BFT_OK);
	written(ADDR(1), v3, 2);
	take_next();
	pass();
	assert_counts(1, 0, 1);
	assert_int_equal(reauth(ADDR(1), v3), BFT_OK);
}

/*
 * Versions snapshots retain: counted once however many boundaries keep
 * them, and retiring waits for them too.
 */
static void
test_retained(void **state)
{
	struct bft_cand v1, v3;

	(void)state;
	retained_start(&v1, &v3);
	assert_int_equal(reload(1, false), 1);
	pass();
	assert_counts(0, 0, 1);
	assert_true(sk.has_alt && sk.retiring);
	/* One boundary gone: the other still keeps v1. */
	assert_int_equal(snap(1, BFT_SNAP_REMOVE, k2), BFT_OK);
	pass();
	assert_counts(0, 0, 1);
	assert_true(sk.has_alt);
	assert_int_equal(snap(2, BFT_SNAP_REMOVE, k2), BFT_OK);
	pass();
	assert_false(sk.has_alt || sk.retiring);
	assert_int_equal(sk.epoch, 1);
}

/*
 * A snapshot's retained versions re-authenticated in its view: one
 * REAUTH serves both boundaries that share the record, and the old
 * epoch goes with the snapshots kept, also across a restart.  A REAUTH
 * of a version the view does not hold, or at no boundary, is EGONE.
 */
static void
test_retained_reauth(void **state)
{
	struct bft_cand v1, v3;

	(void)state;
	retained_start(&v1, &v3);
	assert_int_equal(reauth_view(ADDR(1), &v3, 1), BFT_EGONE);
	assert_int_equal(reauth_view(ADDR(1), &v1, 5), BFT_EGONE);
	assert_int_equal(h.stats.relabelled, 2);
	assert_int_equal(reauth_view(ADDR(1), &v1, 1), BFT_OK);
	assert_int_equal(h.stats.relabelled, 4);	/* its lc and Hist */
	assert_int_equal(reauth_view(ADDR(1), &v1, 2), BFT_OK);
	assert_int_equal(h.stats.relabelled, 4);	/* the same records */
	pass();
	assert_counts(0, 0, 0);
	bft_store_close(st);
	open_store();
	pass();
	assert_counts(0, 0, 0);
	assert_int_equal(reload(1, false), 1);
	pass();
	assert_false(sk.has_alt || sk.retiring);
	assert_int_equal(sk.epoch, 1);
	/* The view reads v1 back under the new epoch's MACs alone. */
	set_req(BFT_VCOLLECT, ADDR(1));
	req.gen = 1;
	req.want_frag = true;
	assert_int_equal(handle(), BFT_OK);
	assert_ts(&rep.cands[0].ts, &v1.ts);
	assert_true(bft_ts_verify(&rep.cands[0].ts, ADDR(1), kw2));
	assert_int_equal(rep.frag_len, FRAGLEN);
	assert_int_equal(rep.frag[0], 1);
}

/*
 * In a finalized store a REAUTH relabels Hist[lc.ts] through lc's record
 * alone (store_relabel.c): the census counts it re-authenticated, and a
 * snapshot that retains it afterwards keeps it under the new MACs, not
 * the ones its own record was stored with (st_hmac_settle).
 */
static void
test_retained_after_reauth(void **state)
{
	struct bft_cand v1 = mkcand(ADDR(1), NUM(1, 1), 5);
	struct bft_cand v3 = mkcand2(ADDR(1), NUM(3, 1), 5);

	(void)state;
	assert_int_equal(bft_store_finalize(st, 1), 0);
	written(ADDR(1), &v1, 1);
	take_next();
	pass();
	assert_counts(1, 0, 0);
	assert_int_equal(reauth(ADDR(1), &v1), BFT_OK);
	assert_int_equal(h.stats.relabelled, 1);
	pass();
	assert_counts(0, 0, 0);
	assert_int_equal(snap(2, BFT_SNAP_ADD, k2), BFT_OK);
	written(ADDR(1), &v3, 2);
	pass();
	assert_counts(0, 0, 0);
	/* And the same after a restart, from the log alone. */
	bft_store_close(st);
	{
		char path[128];

		snprintf(path, sizeof path, "%s/index.ckpt", dir);
		unlink(path);
	}
	open_store();
	pass();
	assert_counts(0, 0, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_counts, setup_census,
		    teardown_census),
		cmocka_unit_test_setup_teardown(test_retiring_reload,
		    setup_census, teardown_census),
		cmocka_unit_test_setup_teardown(test_retire, setup_census,
		    teardown_census),
		cmocka_unit_test_setup_teardown(test_retained, setup_census,
		    teardown_census),
		cmocka_unit_test_setup_teardown(test_retained_reauth,
		    setup_census, teardown_census),
		cmocka_unit_test_setup_teardown(test_retained_after_reauth,
		    setup_census, teardown_census),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
