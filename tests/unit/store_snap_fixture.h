/*
 * Shared by the snapshot views' tests (test_store_snap.c: the cases;
 * test_store_snap_replay.c: compaction and random histories): writes
 * at a generation, the views checked against what was written, and
 * the whole of what the views show, to compare across a reopen.
 */
#ifndef BFTBLK_TEST_STORE_SNAP_FIXTURE_H
#define BFTBLK_TEST_STORE_SNAP_FIXTURE_H

#include "store_fixture.h"

#define V	3u			/* a volume with snapshots */
#define G(g, k)	(bft_gen_floor(g) + (k))

static inline uint64_t
live_bytes(struct bft_store *st)
{
	struct bft_store_stats ss;

	bft_store_stats(st, &ss);
	return ss.bytes_live;
}

static inline uint64_t
total_bytes(struct bft_store *st)
{
	struct bft_store_stats ss;

	bft_store_stats(st, &ss);
	return ss.bytes_total;
}

/* A write of addr at num: its STORE, then its COMPLETE. */
static inline void
write_v(struct bft_store *st, uint64_t addr, uint64_t num)
{
	assert_int_equal(put(st, addr, num, 1, 0), 0);
	assert_int_equal(set_lc(st, addr, num, 1), 0);
}

/* The candidate set_lc(addr, num) wrote. */
static inline void
cand(struct bft_cand *c, uint64_t addr, uint64_t num)
{
	memset(c, 0, sizeof *c);
	make_ts(&c->ts, num, 1);
	fill(c->nonce, BFT_NONCE_LEN, addr, num, 1, 5);
	for (unsigned i = 0; i < ident.n; i++)
		fill(c->vec[i], BFT_MAC_LEN, addr, num, 1, 6 + i);
}

/* view(gen) of addr has lc num (0: c0), read back whole. */
static inline void
check_view_lc(struct bft_store *st, uint64_t addr, uint64_t gen,
    uint64_t num)
{
	struct bft_cand want, have;

	if (num == 0)
		memset(&want, 0, sizeof want);
	else
		cand(&want, addr, num);
	assert_int_equal(bft_store_view_lc(st, addr, gen, &have), 0);
	assert_memory_equal(&have, &want, sizeof want);
}

/* view(gen) of addr holds the entry put(addr, num) stored, byte-exact. */
static inline void
check_view_entry(struct bft_store *st, uint64_t addr, uint64_t gen,
    uint64_t num)
{
	struct bft_hist_entry e;
	uint8_t want[BFT_HASH_LEN];
	struct bft_ts ts;

	make_ts(&ts, num, 1);
	assert_int_equal(bft_store_view_read_hist(st, addr, gen, &ts, &e, got),
	    0);
	assert_int_equal(e.meta.frag_len, FRAGLEN);
	fill(want, BFT_HASH_LEN, addr, num, 1, 2);
	assert_memory_equal(e.meta.nh, want, BFT_HASH_LEN);
	fill(frag, FRAGLEN, addr, num, 1, 0);
	assert_memory_equal(got, frag, FRAGLEN);
}

/*
 * Everything the views show of addrs at every boundary of V, fragments
 * by a checksum, and the live bytes: what a reopen must give back.
 */
struct vstate {
	uint64_t live;
	size_t n;
	uint64_t sum[4096];
};

static inline void
vadd(struct vstate *s, uint64_t v)
{
	assert_true(s->n < sizeof s->sum / sizeof s->sum[0]);
	s->sum[s->n++] = v;
}

static inline uint64_t
hash(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static inline void
vtake(struct bft_store *st, const uint64_t *addrs, size_t na,
    struct vstate *s)
{
	uint64_t gens[BFT_STORE_MAX_SNAPS];
	size_t ng = bft_store_snaps(st, V, gens, BFT_STORE_MAX_SNAPS);
	struct bft_hist_entry e, r;
	struct bft_cand c;

	memset(s, 0, sizeof *s);
	s->live = live_bytes(st);
	vadd(s, ng);
	for (size_t g = 0; g < ng; g++) {
		vadd(s, gens[g]);
		for (size_t a = 0; a < na; a++) {
			unsigned nh = bft_store_view_nhist(st, addrs[a],
			    gens[g]);
			uint64_t x = 0;

			assert_int_equal(bft_store_view_lc(st, addrs[a],
			    gens[g], &c), 0);
			vadd(s, hash(&c, sizeof c));
			vadd(s, nh);
			/* Entries in no order: an order-free sum. */
			for (unsigned i = 0; i < nh; i++) {
				assert_int_equal(bft_store_view_hist_at(st,
				    addrs[a], gens[g], i, &e), 0);
				assert_int_equal(bft_store_view_read_hist(st,
				    addrs[a], gens[g], &e.meta.ts, &r, got),
				    0);
				x += hash(&r.meta, sizeof r.meta) ^
				    hash(got, r.meta.frag_len);
			}
			vadd(s, x);
		}
		vadd(s, bft_store_view_next(st, V, gens[g], 0));
	}
}

static inline void
vsame(const struct vstate *a, const struct vstate *b)
{
	assert_int_equal(a->live, b->live);
	assert_int_equal(a->n, b->n);
	assert_memory_equal(a->sum, b->sum, a->n * sizeof a->sum[0]);
}

/*
 * Closes st and opens it twice, from the checkpoint the close wrote
 * and from the whole log, checking that the views come back; returns
 * the second.
 */
static inline struct bft_store *
reopen_views(struct bft_store *st, uint64_t seg, const uint64_t *addrs,
    size_t na)
{
	static struct vstate a, b;
	struct bft_store_ckpt_info ck;

	vtake(st, addrs, na, &a);
	bft_store_close(st);
	st = sopen(seg);
	bft_store_ckpt_info(st, &ck);
	if (!ck.loaded)
		fail_msg("checkpoint not used: %s", ck.why);
	vtake(st, addrs, na, &b);
	vsame(&a, &b);
	bft_store_close(st);
	drop_ckpt();
	st = sopen(seg);
	bft_store_ckpt_info(st, &ck);
	assert_false(ck.loaded);
	vtake(st, addrs, na, &b);
	vsame(&a, &b);
	return st;
}

#endif
