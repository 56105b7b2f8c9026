/*
 * Clones (bftblk.h, docs/snapshots.md): a volume whose blocks read, until
 * it writes them, as a snapshot of another volume does.  Making one
 * writes one table entry and copies nothing; a read of a block the
 * clone never wrote goes on to its parent snapshot (read.c), and on to
 * that snapshot's parent when it is itself of a clone.  Flattening
 * copies what the clone still reads from its parent into its own
 * registers, after which the parent may be deleted.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bytes_int.h"
#include "cluster_int.h"
#include "error_int.h"
#include "featureset.h"
#include "handle_int.h"
#include "plan_int.h"
#include "read_int.h"
#include "voltab_int.h"

int
bftblk__clone_start(struct bftblk *h, struct bft_engine_params *p)
{
	struct bft_engine *below = NULL;

	for (unsigned k = h->nparents; k-- > 0;) {
		struct bft_engine_params pp = *p;

		/*
		 * A parent's reads are the clone's: counted once, in its
		 * own engine's statistics, and never written through.
		 */
		pp.config_path = NULL;
		pp.stats_path = NULL;
		pp.metrics_addr = NULL;
		pp.agg = NULL;
		pp.volume_id = h->parents[k].id;
		pp.view = true;
		pp.view_gen = h->parents[k].gen;
		pp.parent = below;
		if ((h->parent_eng[k] = bftblk__engine_start(&pp)) == NULL) {
			bftblk__clone_stop(h);
			return bftblk__handle_fail(h, EIO, "cannot start the "
			    "event loop of a clone's parent");
		}
		below = h->parent_eng[k];
	}
	p->parent = below;
	return 0;
}

void
bftblk__clone_stop(struct bftblk *h)
{
	for (unsigned k = 0; k < VT_DEPTH; k++) {
		bftblk__engine_stop(h->parent_eng[k]);
		h->parent_eng[k] = NULL;
	}
}

/*
 * The live snapshot "volume@snap" names in vt ("" volume 0), or NULL
 * with the error failed on h.
 */
static struct vt_entry *
find_parent(struct bftblk *h, struct voltab *vt, const char *volume,
    const char *snap)
{
	struct vt_entry *v = NULL, *s;

	if (volume[0] != '\0' && ((v = bftblk__vt_find(vt, volume, NULL)) ==
	    NULL || v->state != VT_LIVE)) {
		bftblk__handle_fail(h, ENOENT, "no volume is named '%s'",
		    volume);
		return NULL;
	}
	if ((s = bftblk__vt_find_snap(vt, v ? v->id : 0, snap, NULL)) ==
	    NULL || s->state != VT_SNAP) {
		bftblk__handle_fail(h, ENOENT, "volume '%s' has no snapshot "
		    "named '%s'", volume, snap);
		return NULL;
	}
	return s;
}

int
bftblk_volume_clone(struct bftblk *h, const char *volume, const char *snap,
    const char *name, struct bftblk_volume *out)
{
	struct vt_parent chain[VT_DEPTH];
	struct bft_lease lock;
	struct voltab *vt = NULL;
	struct vt_entry *s, e;
	unsigned depth;
	char why[256];
	int r, bi;

	if ((r = bftblk__vt_check(h, true)) != 0)
		return r;
	if (!bftblk__vt_name_ok(name))
		return bftblk__handle_fail(h, EINVAL, "'%s' is not a volume "
		    "name: 1 to %u of A-Z a-z 0-9 . _ -, not starting with . "
		    "or -", name, BFTBLK_VOLUME_NAME_MAX);
	/*
	 * A clone's entry has bytes the first table format's readers
	 * refuse, and with it the whole table: written only once every
	 * server is finalized, when no such reader is let in any more.
	 */
	if ((r = bftblk__cluster_finalized(h, BFT_FEAT_CLONE_ENTRIES)) < 0)
		return r;
	if (r == 0)
		return bftblk__handle_fail(h, EPERM, "clones need the cluster "
		    "finalized (every server on release %s or later, then "
		    "bftblk cluster finalize): a release 0.2.0 client would "
		    "refuse the volume table that holds one",
		    BFTBLK_VERSION_STRING);
	if ((r = bftblk__vt_begin(h, &lock, &vt)) != 0)
		return r;
	if ((s = find_parent(h, vt, volume, snap)) == NULL) {
		r = bftblk__vt_failed(h);
		goto out;
	}
	if ((bi = r = bftblk__vt_slot(h, vt, name)) < 0)
		goto out;
	/* The snapshot's size and encryption, as a restore would have. */
	e = *s;
	e.state = VT_LIVE;
	e.id = vt->next_id;
	e.generation = 0;
	e.created = (uint64_t)time(NULL);
	snprintf(e.name, sizeof e.name, "%s", name);
	e.clone = true;
	e.parent_id = s->id;
	e.parent_gen = s->generation;
	if (bftblk__vt_parents(vt, &e, chain, &depth, why, sizeof why) != 0) {
		r = bftblk__handle_fail(h, EMLINK, "%s: flatten '%s@%s''s "
		    "volume first", why, volume, snap);
		goto out;
	}
	vt->next_id++;
	bftblk__vt_add(vt, (unsigned)bi, &e);
	if (bftblk__vt_put(h, &lock, vt, 0) != 0 ||
	    (bi != 0 && bftblk__vt_put(h, &lock, vt, (unsigned)bi) != 0)) {
		r = bftblk__vt_failed(h);
		goto out;
	}
	if (out != NULL)
		bftblk__vt_public(&e, out);
	bftblk__eng_log(h->eng, BFTBLK_LOG_INFO, "cloned volume '%s' (id %"
	    PRIu32 ") from '%s@%s', %u deep", name, e.id, volume, snap, depth);
	r = 0;
out:
	bftblk__vt_end(&lock, vt);
	return r;
}

int
bftblk_volume_parent(struct bftblk *h, const char *name, char *volume,
    size_t vlen, char *snap, size_t slen)
{
	struct voltab *vt;
	struct vt_entry *e, *s;
	int r;

	if (vlen > 0)
		volume[0] = '\0';
	if (slen > 0)
		snap[0] = '\0';
	if ((vt = bftblk__vt_load(h, &r)) == NULL)
		return r;
	if ((e = bftblk__vt_find(vt, name, NULL)) == NULL) {
		r = bftblk__handle_fail(h, ENOENT, "no volume is named '%s'",
		    name);
		goto out;
	}
	r = 0;
	if (!e->clone)
		goto out;
	if ((s = bftblk__vt_find_gen(vt, e->parent_id, e->parent_gen)) ==
	    NULL) {
		r = bftblk__handle_fail(h, EUCLEAN, "the volume table is "
		    "damaged: the parent of '%s' is missing", name);
		goto out;
	}
	snprintf(volume, vlen, "%s", bftblk__vt_name_of(vt, e->parent_id));
	snprintf(snap, slen, "%s", s->name);
out:
	free(vt);
	return r;
}

/* A block the clone reads from its parent, and not as zeros. */
static bool
to_copy(const struct op *op)
{
	return op->inherited && !bftblk__block_zero(op->data);
}

/*
 * Blocks [b, b + nb) of the clone vh: those it still reads from its
 * parent and that hold more than zeros, written into its own registers.
 * *copied counts them.  0, or -1 with the error on vh.
 */
static int
flatten_chunk(struct bftblk *vh, uint64_t b, unsigned nb, uint8_t *buf,
    uint64_t *copied)
{
	struct op *ops[CHUNK] = { 0 };
	unsigned i, run;
	int r = -1;

	for (i = 0; i < nb; i++) {
		if ((ops[i] = bftblk__op_new(vh->eng, OP_READ)) == NULL) {
			bftblk__handle_fail(vh, ENOMEM, "out of memory");
			goto out;
		}
		ops[i]->block = bftblk__engine_addr(vh->eng, b + i);
		ops[i]->data = buf + (size_t)i * BFT_BLOCK_SIZE;
	}
	if (bftblk__read_blocks(vh->eng, NULL, ops, nb, false) != 0) {
		r = bftblk__handle_fail(vh, bftblk__take_errno(), "%s",
		    bftblk__errmsg());
		goto out;
	}
	/* Runs of consecutive blocks to copy, each one write. */
	for (i = 0; i < nb; i += run) {
		bool copy = to_copy(ops[i]);

		for (run = 1; i + run < nb && to_copy(ops[i + run]) == copy;
		    run++)
			;
		if (!copy)
			continue;
		if (bftblk_pwrite(vh, ops[i]->data, (size_t)run *
		    BFT_BLOCK_SIZE, (b + i) * BFT_BLOCK_SIZE, 0) != 0)
			goto out;
		*copied += run;
	}
	r = 0;
out:
	for (i = 0; i < nb; i++)
		bftblk__op_free(ops[i]);
	return r;
}

/* Takes name's parent out of its entry, once every block is its own. */
static int
forget_parent(struct bftblk *h, const char *name, uint32_t id)
{
	struct bft_lease lock;
	struct voltab *vt = NULL;
	struct vt_entry *e;
	unsigned bi;
	int r;

	if ((r = bftblk__vt_begin(h, &lock, &vt)) != 0)
		return r;
	if ((e = bftblk__vt_find(vt, name, &bi)) == NULL || e->id != id) {
		r = bftblk__handle_fail(h, ENOENT, "volume '%s' was deleted "
		    "while it was flattened", name);
		goto out;
	}
	e->clone = false;
	e->parent_id = 0;
	e->parent_gen = 0;
	if (bftblk__vt_put(h, &lock, vt, bi) != 0)
		r = bftblk__vt_failed(h);
out:
	bftblk__vt_end(&lock, vt);
	return r;
}

int
bftblk_volume_flatten(struct bftblk *h, const char *name,
    bftblk_progress_fn *progress, void *opaque)
{
	struct bftblk *vh = NULL;
	uint64_t nblocks, copied = 0;
	uint8_t *buf = NULL;
	int r;

	if ((r = bftblk__vt_check(h, true)) != 0)
		return r;
	/* A writer's handle: its lease keeps every other writer out. */
	if ((r = bftblk_open_volume(h, name, "cache=0 shared=off", &vh)) != 0)
		return r;
	if (vh->nparents == 0) {
		r = bftblk__handle_fail(h, EINVAL, "volume '%s' is not a "
		    "clone", name);
		goto out;
	}
	if ((buf = malloc((size_t)CHUNK * BFT_BLOCK_SIZE)) == NULL) {
		r = bftblk__handle_fail(h, ENOMEM, "out of memory");
		goto out;
	}
	nblocks = vh->export_size / BFT_BLOCK_SIZE;
	for (uint64_t b = 0; b < nblocks; b += CHUNK) {
		unsigned nb = (unsigned)(nblocks - b < CHUNK ? nblocks - b :
		    CHUNK);

		if (flatten_chunk(vh, b, nb, buf, &copied) != 0) {
			r = bftblk__handle_fail(h, EIO, "flattening '%s' at "
			    "block %" PRIu64 ": %s", name, b,
			    bftblk_errmsg(vh));
			goto out;
		}
		if (progress != NULL)
			progress(opaque, b + nb, nblocks);
	}
	if (bftblk_flush(vh) != 0) {
		r = bftblk__handle_fail(h, EIO, "%s", bftblk_errmsg(vh));
		goto out;
	}
	if ((r = forget_parent(h, name, vh->volume_id)) != 0)
		goto out;
	bftblk__eng_log(h->eng, BFTBLK_LOG_INFO, "flattened volume '%s': %"
	    PRIu64 " of %" PRIu64 " blocks copied from its parent", name,
	    copied, nblocks);
out:
	free(buf);
	bftblk_close(vh);
	return r;
}
