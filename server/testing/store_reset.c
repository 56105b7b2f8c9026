/*
 * bft_store_reset(), for tests (store_reset.h).  The fuzz harness of
 * the handler starts every input from an empty store; discarding it,
 * removing its files and opening it again cost a quarter of an input
 * (perf, 2026-11-26): the directory scan, the identity file read back,
 * the index, buffers and a cache chunk of 320 KiB allocated anew (an
 * mmap under ASan, its pages faulted in as they are touched).  Here the
 * store is emptied in place.  It needs the store's insides, like
 * server/store/; nothing in bftblk-server calls it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../store/store_int.h"
#include "../store/store_log.h"
#include "store_reset.h"

/*
 * store_ckpt.c's file, the only one a store makes besides its segments
 * and identity (its temporary file is gone once no checkpoint runs).
 * test_store_reset checks that none is left, should the name change.
 */
#define CKPT_FILE	"index.ckpt"

/*
 * Every slot on the free list, lowest first: a fresh cache hands out
 * slots 0, 1, 2... as it fills, and so does this one, without the
 * chunk's allocation.
 */
static void
mc_empty(struct mcache *mc)
{
	mc->freel = MC_NONE;
	for (uint32_t i = mc->nslots; i-- > 0;) {
		st_mc_slot(mc, i)->next = mc->freel;
		mc->freel = i;
	}
	if (mc->heads != NULL)
		memset(mc->heads, 0, ((size_t)mc->hmask + 1) *
		    sizeof *mc->heads);
	mc->lru = mc->mru = MC_NONE;
	mc->used = 0;
	mc->hits = mc->misses = 0;
}

/*
 * Empty slots where the table has the size a fresh store's first entry
 * gives it; a larger table goes.  A block's entries are listed in the
 * order they came whatever the size, but a checkpoint writes the table
 * slot by slot, and a larger one would write them in another order
 * than a fresh store (test_store_reset compares the two checkpoints).
 */
static void
side_empty(struct bft_store *st)
{
	struct side_tab *t = &st->side;

	if (t->cap != SIDE_FIRST_CAP) {
		st_side_free(st);
		return;
	}
	for (size_t i = 0; i < t->cap && t->used > 0; i++)
		if (t->e[i].block != SIDE_EMPTY) {
			t->e[i].block = SIDE_EMPTY;
			t->used--;
		}
}

/*
 * Every segment file but segment 1's goes; that one, kept open, is cut
 * to nothing.  Where it is gone (compacted), it is made again, as an
 * open of an empty directory makes it.
 */
static int
segs_empty(struct bft_store *st)
{
	char name[BFT_SEG_NAME_MAX];
	bool keep = st->nseg > 0 && st->segs[0].no == 1 &&
	    !st->segs[0].retired;
	int fd;

	for (size_t i = st->nseg; i-- > (keep ? 1 : 0);) {
		struct seg *s = &st->segs[i];

		bft_seg_name(name, s->no);
		if (unlinkat(st->dirfd, name, 0) < 0 && errno != ENOENT)
			return -errno;
		close(s->fd);
		st->nseg--;
	}
	if (!keep)
		return st_seg_create(st);
	fd = st->segs[0].fd;
	if (ftruncate(fd, 0) < 0)
		return -errno;
	st->segs[0] = (struct seg){ .no = 1, .fd = fd };
	return 0;
}

int
bft_store_reset(struct bft_store *st)
{
	struct bft_store was;
	int err;

	/* Their threads hold descriptors and read the index. */
	(void)st_ckpt_wait(st);
	(void)st_bg_sync_wait(st);
	/* A spare's earlier records would outrank the new log's. */
	if ((err = st_spares_drop(st)) < 0 || (err = segs_empty(st)) < 0)
		return err;
	if (unlinkat(st->dirfd, CKPT_FILE, 0) < 0 && errno != ENOENT)
		return -errno;
	side_empty(st);
	mc_empty(&st->mc);
	/* Snapshot boundaries and what they kept (the index: the rest). */
	st_snap_free(st);
	st_idx_free(st);
	if ((err = st_idx_init(st)) < 0)
		return err;
	/*
	 * Every other field as open leaves it over an empty directory:
	 * zero, but for these.  A field added to struct bft_store is
	 * zero after a reset unless it is kept here.
	 */
	was = *st;
	memset(st, 0, sizeof *st);
	st->dir = was.dir;
	st->dirfd = was.dirfd;
	st->id = was.id;
	st->n = was.n;
	st->seg_max = was.seg_max;
	st->compact_pct = was.compact_pct;
	st->vols = was.vols;
	st->nvols = was.nvols;
	st->volcap = was.volcap;
	st->side = was.side;
	st->mc = was.mc;
	st->segs = was.segs;
	st->nseg = was.nseg;
	st->segcap = was.segcap;
	st->wbuf = was.wbuf;
	st->rbuf = was.rbuf;
	st->mbuf = was.mbuf;
	st->ckpt_every = was.ckpt_every;
	st->opened = was.opened;
	/* Segment 1 made (or as good as): the next sync syncs the directory. */
	st->dir_dirty = true;
	st->dir_gen = 1;
	st->next_seq = 1;
	snprintf(st->ck.why, sizeof st->ck.why, "%s", "no checkpoint");
	return 0;
}
