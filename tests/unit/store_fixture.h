/*
 * Shared by the store's unit tests (test_store.c: records and replay;
 * test_store_compact.c: compaction and full disks): a store in a fresh
 * temporary directory per test, recognizable records, and snapshots of
 * the whole visible state to compare across a reopen.
 */
#ifndef BFTBLK_TEST_STORE_FIXTURE_H
#define BFTBLK_TEST_STORE_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../server/store/store.h"
#include "../../server/store/store_log.h"
#include "store_view.h"

#define FRAGLEN	32848u
#define KIB	1024u

static char tmp[64], dir[96];
static struct bft_store_identity ident;
static uint8_t frag[BFT_MAX_FRAG], got[BFT_MAX_FRAG];

static inline int
rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb, (void)flag, (void)f;
	return remove(p);
}

static inline int
setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof tmp, "/tmp/test_store.XXXXXX");
	assert_non_null(mkdtemp(tmp));
	snprintf(dir, sizeof dir, "%s/data", tmp);
	memset(&ident, 0, sizeof ident);
	for (unsigned i = 0; i < BFT_CLUSTER_ID_LEN; i++)
		ident.cluster_id[i] = (uint8_t)(0xc0 + i);
	ident.server_index = 2;
	ident.n = 4;
	ident.t = 1;
	ident.block_size = BFT_BLOCK_SIZE;
	ident.nblocks = 64;
	return 0;
}

static inline int
teardown(void **state)
{
	(void)state;
	umount2(dir, MNT_DETACH);
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static inline void
geometry(unsigned n, uint64_t nblocks)
{
	ident.n = n;
	ident.t = (n - 1) / 3;
	ident.nblocks = nblocks;
}

static inline struct bft_store *
sopen(uint64_t seg_size)
{
	struct bft_store_opts o = { .segment_size = seg_size };
	char err[512] = "";
	struct bft_store *st;

	st = bft_store_open_opts(dir, &ident, &o, err, sizeof err);
	if (st == NULL)
		fail_msg("bft_store_open: %s", err);
	return st;
}

/* Recognizable bytes: a fragment names its block and timestamp. */
static inline void
fill(uint8_t *buf, uint32_t len, uint64_t block, uint64_t num, uint64_t wid,
    unsigned salt)
{
	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(block * 131 + num * 31 + wid * 7 + salt +
		    i * 13 + (i >> 8));
}

static inline void
make_ts(struct bft_ts *ts, uint64_t num, uint64_t wid)
{
	ts->num = num;
	ts->wid = wid;
	fill(ts->mac, BFT_MAC_LEN, 0, num, wid, 1);
}

/* The Hist entry put() stores, its fragment in frag. */
static inline void
make_meta(struct bft_hist_meta *m, uint64_t block, uint64_t num, uint64_t wid,
    unsigned salt)
{
	memset(m, 0, sizeof *m);
	make_ts(&m->ts, num, wid);
	fill(m->nh, BFT_HASH_LEN, block, num, wid, 2 + salt);
	for (unsigned i = 0; i < ident.n; i++) {
		fill(m->vec[i], BFT_MAC_LEN, block, num, wid, 3 + i);
		fill(m->cc[i], BFT_HASH_LEN, block, num, wid, 40 + i);
	}
	m->frag_len = FRAGLEN;
	fill(frag, FRAGLEN, block, num, wid, salt);
}

static inline int
put(struct bft_store *st, uint64_t block, uint64_t num, uint64_t wid,
    unsigned salt)
{
	struct bft_hist_meta m;

	make_meta(&m, block, num, wid, salt);
	return bft_store_put_hist(st, block, &m, frag);
}

static inline int
set_lc(struct bft_store *st, uint64_t block, uint64_t num, uint64_t wid)
{
	struct bft_cand c;

	memset(&c, 0, sizeof c);
	make_ts(&c.ts, num, wid);
	fill(c.nonce, BFT_NONCE_LEN, block, num, wid, 5);
	for (unsigned i = 0; i < ident.n; i++)
		fill(c.vec[i], BFT_MAC_LEN, block, num, wid, 6 + i);
	return bft_store_set_lc(st, block, &c);
}

/* Checks that Hist[(num, wid)] of block holds what put() stored. */
static inline void
check_entry(struct bft_store *st, uint64_t block, uint64_t num, uint64_t wid,
    unsigned salt)
{
	struct bft_hist_entry ebuf, *e = &ebuf;
	uint8_t want[BFT_HASH_LEN];
	struct bft_ts ts;

	make_ts(&ts, num, wid);
	assert_int_equal(bft_store_get_hist(st, block, &ts, e), 0);
	assert_int_equal(e->meta.frag_len, FRAGLEN);
	fill(want, BFT_HASH_LEN, block, num, wid, 2 + salt);
	assert_memory_equal(e->meta.nh, want, BFT_HASH_LEN);
	assert_memory_equal(e->meta.ts.mac, ts.mac, BFT_MAC_LEN);
	fill(want, BFT_HASH_LEN, block, num, wid, 40 + ident.n - 1);
	assert_memory_equal(e->meta.cc[ident.n - 1], want, BFT_HASH_LEN);
	assert_int_equal(bft_store_read_frag(st, e, got), 0);
	fill(frag, FRAGLEN, block, num, wid, salt);
	assert_memory_equal(got, frag, FRAGLEN);
}

/* A copy of the whole visible state, fragments included. */
struct snap_ent {
	struct bft_hist_meta m;
	uint8_t *frag;
};
struct snap {
	struct bft_cand lc;
	unsigned nhist;
	struct snap_ent *e;
};

static inline int
ent_cmp(const void *a, const void *b)
{
	return bft_ts_cmp(&((const struct snap_ent *)a)->m.ts,
	    &((const struct snap_ent *)b)->m.ts);
}

static inline struct snap *
snap_take(struct bft_store *st)
{
	struct snap *s = calloc(ident.nblocks, sizeof *s);

	assert_non_null(s);
	for (uint64_t b = 0; b < ident.nblocks; b++) {
		unsigned nhist = bft_store_nhist(st, b);
		struct bft_hist_entry e;

		assert_int_equal(bft_store_get_lc(st, b, &s[b].lc), 0);
		s[b].nhist = nhist;
		s[b].e = calloc(nhist + 1, sizeof *s[b].e);
		assert_non_null(s[b].e);
		for (unsigned i = 0; i < nhist; i++) {
			assert_int_equal(bft_store_hist_at(st, b, i, &e), 0);
			s[b].e[i].m = e.meta;
			s[b].e[i].frag = malloc(e.meta.frag_len + 1);
			assert_int_equal(bft_store_read_frag(st, &e,
			    s[b].e[i].frag), 0);
		}
		qsort(s[b].e, nhist, sizeof *s[b].e, ent_cmp);
	}
	return s;
}

static inline void
snap_free(struct snap *s)
{
	for (uint64_t b = 0; b < ident.nblocks; b++) {
		for (unsigned i = 0; i < s[b].nhist; i++)
			free(s[b].e[i].frag);
		free(s[b].e);
	}
	free(s);
}

static inline void
snap_check(const struct snap *a, const struct snap *b)
{
	for (uint64_t k = 0; k < ident.nblocks; k++) {
		assert_memory_equal(&a[k].lc, &b[k].lc, sizeof a[k].lc);
		assert_int_equal(a[k].nhist, b[k].nhist);
		for (unsigned i = 0; i < a[k].nhist; i++) {
			const struct bft_hist_meta *x = &a[k].e[i].m;
			const struct bft_hist_meta *y = &b[k].e[i].m;

			assert_memory_equal(&x->ts, &y->ts, sizeof x->ts);
			assert_memory_equal(x->nh, y->nh, sizeof x->nh);
			assert_memory_equal(x->vec, y->vec, sizeof x->vec);
			assert_memory_equal(x->cc, y->cc, sizeof x->cc);
			assert_int_equal(x->frag_len, y->frag_len);
			assert_memory_equal(a[k].e[i].frag, b[k].e[i].frag,
			    x->frag_len);
		}
	}
}

/*
 * Removes the index checkpoint a close wrote, so that the next open
 * replays the whole log, as after a crash before any checkpoint.
 */
static inline void
drop_ckpt(void)
{
	char p[160];

	snprintf(p, sizeof p, "%s/index.ckpt", dir);
	assert_int_equal(unlink(p), 0);
}

/*
 * Closes st, reopens, and checks that the same state comes back twice:
 * from the index checkpoint the close wrote, then (closed again, the
 * checkpoint removed) from a replay of the whole log.  The store
 * returned is the second.
 */
static inline struct bft_store *
reopen_same(struct bft_store *st, uint64_t seg_size)
{
	struct snap *a = snap_take(st), *b;
	struct bft_store_ckpt_info ck;

	bft_store_close(st);
	st = sopen(seg_size);
	bft_store_ckpt_info(st, &ck);
	if (!ck.loaded)
		fail_msg("checkpoint not used: %s", ck.why);
	b = snap_take(st);
	snap_check(a, b);
	snap_free(b);
	bft_store_close(st);
	drop_ckpt();
	st = sopen(seg_size);
	bft_store_ckpt_info(st, &ck);
	assert_false(ck.loaded);
	b = snap_take(st);
	snap_check(a, b);
	snap_free(a);
	snap_free(b);
	return st;
}

static inline char *
seg_path(uint32_t no)
{
	static char p[160];
	char name[BFT_SEG_NAME_MAX];

	bft_seg_name(name, no);
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return p;
}

static inline off_t
file_size(const char *p)
{
	struct stat sb;

	return stat(p, &sb) == 0 ? sb.st_size : -1;
}

#endif
