/*
 * Snapshots (bftblk.h, docs/snapshots.md): entries of the volume table
 * whose generation field is the boundary their view is at, changed under
 * the table's admin lock as volumes are.
 *
 * Taking one, and why in that order:
 *   1. read the volume's lease register: its newest claim's generation
 *      g is under which every write completed so far was made;
 *   2. SNAP(add, g) to every server, n-t of them durable: they keep
 *      each block's view at g once a newer write replaces it;
 *   3. the lease register written back as it is under g+1: from then on
 *      no write of generation g can complete, and the holder, finding
 *      its own claim there, goes on under g+1;
 *   4. the entry.
 * A claim that changed between 1 and 3 (a takeover) starts over, so
 * that the boundary is always the generation that step 3 fenced.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "drop_int.h"
#include "error_int.h"
#include "handle_int.h"
#include "lease_int.h"
#include "predicates.h"
#include "voltab_int.h"

/* Attempts at a cut that a takeover keeps moving. */
#define CUT_TRIES	3

/*
 * The volume a snapshot call names: "" is volume 0, sized by the
 * cluster; another must be a live entry.  0 or a negative errno on h.
 */
static int
volume_of(struct bftblk *h, struct voltab *vt, const char *volume,
    struct vt_entry *out)
{
	struct vt_entry *e;

	memset(out, 0, sizeof *out);
	if (volume[0] == '\0') {
		out->state = VT_LIVE;
		out->size = h->cfg.size;
		return 0;
	}
	if ((e = bftblk__vt_find(vt, volume, NULL)) == NULL)
		return bftblk__handle_fail(h, ENOENT, "no volume is named "
		    "'%s'", volume);
	if (e->state != VT_LIVE)
		return bftblk__handle_fail(h, ENOENT, "volume '%s' is being "
		    "deleted", volume);
	*out = *e;
	return 0;
}

/*
 * Steps 1-3: *g is the boundary, kept by n-t servers and fenced.  0, or
 * -1 with the error recorded.
 */
static int
cut(struct bftblk *h, uint32_t id, uint64_t *g)
{
	unsigned need = h->cfg.n - h->cfg.t;
	bool acked[BFT_MAX_N];
	struct bft_lease_info li;
	char why[256];
	int n, moved;

	struct bft_client_key *key = bftblk__signing_key(h);
	int rc = -1;

	if (key == NULL)
		return bftblk__fail(ENOMEM, "out of memory");
	for (unsigned tries = 0; tries < CUT_TRIES; tries++) {
		if (bftblk__lease_read(h->eng, id, &li) != 0)
			goto out_free;
		*g = bft_snap_boundary(&li.ts);
		n = bftblk__snap_volume(&h->cfg, key, id, *g, true,
		    h->timeout_s * 1000, acked, why, sizeof why);
		if (n < 0)
			goto out_free;
		if ((unsigned)n < need) {
			bftblk__fail(EIO, "only %d of %u servers keep the "
			    "snapshot's view (%u needed): %s", n, h->cfg.n,
			    need, why);
			goto out_free;
		}
		if ((moved = bftblk__lease_reassert(h->eng, id, *g)) < 0)
			goto out_free;
		if (moved == 0) {
			rc = 0;
			goto out_free;
		}
		/* Taken over meanwhile: the servers forget g, and again. */
		(void)bftblk__snap_volume(&h->cfg, key, id, *g, false,
		    h->timeout_s * 1000, acked, why, sizeof why);
	}
	bftblk__fail(EAGAIN, "volume %" PRIu32 "'s lease changed hands %d "
	    "times while the snapshot was taken", id, CUT_TRIES);
out_free:
	bftblk__signing_key_free(key);
	return rc;
}

static void
snap_public(const struct voltab *vt, const struct vt_entry *e,
    struct bftblk_snap *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->name, sizeof out->name, "%s", e->name);
	out->volume_id = e->id;
	out->size = e->size;
	out->boundary = e->generation;
	out->created = e->created;
	out->encrypted = e->encrypted;
	out->deleting = e->state == VT_SNAP_DELETING;
	for (unsigned b = 0; b < vt->nblocks; b++)
		for (unsigned i = 0; i < vt->count[b]; i++)
			if (!bftblk__vt_is_snap(&vt->e[b][i]) &&
			    vt->e[b][i].id == e->id)
				snprintf(out->volume, sizeof out->volume, "%s",
				    vt->e[b][i].name);
}

int
bftblk_snap_create(struct bftblk *h, const char *volume, const char *name,
    struct bftblk_snap *out, size_t size)
{
	struct bftblk_snap pub;
	struct bft_lease lock;
	struct voltab *vt = NULL;
	struct vt_entry vol, e;
	struct timespec t0, t1;
	uint64_t g = 0;
	int r, bi;

	if ((r = bftblk__vt_check(h, true)) != 0)
		return r;
	if (out != NULL && (r = bftblk__check_size(h, "bftblk_snap", size,
	    sizeof pub)) != 0)
		return r;
	if (!bftblk__vt_name_ok(name))
		return bftblk__handle_fail(h, EINVAL, "'%s' is not a snapshot "
		    "name: 1 to %u of A-Z a-z 0-9 . _ -, not starting with . "
		    "or -", name, BFTBLK_VOLUME_NAME_MAX);
	if ((r = bftblk__vt_begin(h, &lock, &vt)) != 0)
		return r;
	if ((r = volume_of(h, vt, volume, &vol)) != 0)
		goto out;
	if (bftblk__vt_find_snap(vt, vol.id, name, NULL) != NULL) {
		r = bftblk__handle_fail(h, EEXIST, "volume '%s' has a "
		    "snapshot named '%s'", volume, name);
		goto out;
	}
	if ((bi = bftblk__vt_room(vt)) < 0) {
		r = bftblk__handle_fail(h, ENOSPC, "the volume table is full "
		    "(%u volumes and snapshots)", VT_MAX);
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (cut(h, vol.id, &g) != 0) {
		r = bftblk__vt_failed(h);
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	e = vol;
	e.state = VT_SNAP;
	e.generation = g;
	e.created = (uint64_t)time(NULL);
	snprintf(e.name, sizeof e.name, "%s", name);
	bftblk__vt_add(vt, (unsigned)bi, &e);
	if ((bi != 0 && bftblk__vt_put(h, &lock, vt, 0) != 0) ||
	    bftblk__vt_put(h, &lock, vt, (unsigned)bi) != 0) {
		r = bftblk__vt_failed(h);
		goto out;
	}
	if (out != NULL) {
		snap_public(vt, &e, &pub);
		memcpy(out, &pub, size);
	}
	bftblk__eng_log(h->eng, BFTBLK_LOG_INFO, "snapshot '%s@%s' of volume "
	    "%" PRIu32 ": boundary generation %" PRIu64 ", cut in %.0f ms",
	    volume, name, vol.id, g, (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	r = 0;
out:
	bftblk__vt_end(&lock, vt);
	return r;
}

int
bftblk_snap_list(struct bftblk *h, const char *volume,
    struct bftblk_snap **snaps, size_t *n)
{
	struct vt_entry vol;
	struct voltab *vt;
	int r;

	*snaps = NULL;
	*n = 0;
	if ((vt = bftblk__vt_load(h, &r)) == NULL)
		return r;
	if (volume != NULL && (r = volume_of(h, vt, volume, &vol)) != 0)
		goto out;
	if ((*snaps = calloc(VT_MAX, sizeof **snaps)) == NULL) {
		r = bftblk__handle_fail(h, ENOMEM, "out of memory");
		goto out;
	}
	for (unsigned b = 0; b < vt->nblocks; b++)
		for (unsigned i = 0; i < vt->count[b]; i++) {
			const struct vt_entry *e = &vt->e[b][i];

			if (bftblk__vt_is_snap(e) &&
			    (volume == NULL || e->id == vol.id))
				snap_public(vt, e, &(*snaps)[(*n)++]);
		}
	r = 0;
out:
	free(vt);
	return r;
}

int
bftblk_snap_delete(struct bftblk *h, const char *volume, const char *name,
    unsigned *pending)
{
	struct bft_lease lock;
	struct voltab *vt = NULL;
	struct vt_entry vol, *e;
	unsigned bi, left = 0;
	char names[512];
	int r;

	if (pending != NULL)
		*pending = 0;
	if ((r = bftblk__vt_check(h, true)) != 0)
		return r;
	if ((r = bftblk__vt_begin(h, &lock, &vt)) != 0)
		return r;
	if ((r = volume_of(h, vt, volume, &vol)) != 0)
		goto out;
	if ((e = bftblk__vt_find_snap(vt, vol.id, name, &bi)) == NULL) {
		r = bftblk__handle_fail(h, ENOENT, "volume '%s' has no "
		    "snapshot named '%s'", volume, name);
		goto out;
	}
	/* Its versions are what those clones' unwritten blocks read. */
	if (e->state == VT_SNAP && bftblk__vt_dependants(vt, vol.id,
	    e->generation, names, sizeof names) > 0) {
		r = bftblk__handle_fail(h, EBUSY, "snapshot '%s@%s' is the "
		    "parent of %s: delete or flatten them first", volume, name,
		    names);
		goto out;
	}
	e->state = VT_SNAP_DELETING;
	if (bftblk__vt_put(h, &lock, vt, bi) != 0 ||
	    bftblk__vt_finish(h, &lock, vt, vol.id, &left) != 0) {
		r = bftblk__vt_failed(h);
		goto out;
	}
	bftblk__eng_log(h->eng, BFTBLK_LOG_INFO, "deleted snapshot '%s@%s'%s",
	    volume, name, left ? "; some servers have yet to forget it" : "");
	r = 0;
out:
	if (pending != NULL)
		*pending = left;
	bftblk__vt_end(&lock, vt);
	return r;
}
