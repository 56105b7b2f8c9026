/*
 * Named volumes (bftblk.h): listing the table, and changing it under the
 * admin lock.  A register is not compare-and-swap, so two admins that
 * each read the table, add their volume and write it back could lose
 * one of them; they take turns instead.  The lock is the lease of the
 * table's volume id (lease.c), renewed while held.  Two admins that read
 * it free at once both claim its next generation; servers past
 * BFT_FEAT_LOCK_CLAIMS let only the first writer have a generation, so
 * at most one claim completes and the admin whose claim did holds the
 * lock at once (docs/volumes.md, "The admin lock").  Until every server
 * says the cluster is finalized for that, a claim is trusted only after
 * a guard of the I/O timeout, by which any rival claim in flight has
 * landed.  Before every table write the holder checks it still holds
 * the lock; one that lost it stops and says so.
 *
 * What a change writes, and why in that order:
 *   create  block 0 with the next id advanced, then the entry's block
 *           (the same write when the entry goes in block 0): an id is
 *           never handed out twice, even when an admin dies between.
 *   resize  the entry, generation + 1; a shrink first trims the blocks
 *           cut off, so that growing again shows zeros.
 *   delete  the entry marked deleting (no new opens), DROP to every
 *           server, then the entry removed once all of them dropped
 *           it.  A server that was down drops it when a later command
 *           finds the entry still deleting.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster_int.h"
#include "crypto.h"
#include "drop_int.h"
#include "featureset.h"
#include "error_int.h"
#include "handle_int.h"
#include "voltab_int.h"

/* The lock lapses this long after its holder's last renewal. */
#define LOCK_PERIOD_S	10
/* How long an admin waits for another one's turn to end. */
#define LOCK_WAIT_S	120

/* Ends a call whose failure bftblk__fail recorded: on h, for errmsg. */
static int
failed(const struct bftblk *h)
{
	int err = bftblk__take_errno();

	return bftblk__handle_fail(h, err, "%s", bftblk__errmsg());
}

static int
check_handle(struct bftblk *h, bool write)
{
	if (h->eng == NULL)
		return bftblk__handle_fail(h, ENOTCONN, "the handle is not "
		    "connected");
	if (h->encrypt)
		return bftblk__handle_fail(h, EINVAL, "the volume table is "
		    "read through a handle without encrypt=on");
	if (write && h->key.role != BFT_ROLE_RW)
		return bftblk__handle_fail(h, EPERM, "changing volumes needs a "
		    "read-write key; '%s''s is not", h->key.name);
	return 0;
}

/* Takes the admin lock, waiting for another admin's turn; 0 or -1. */
static int
lock_take(struct bftblk *h, struct bft_lease *lock)
{
	unsigned guard = (h->io_timeout_s > h->timeout_s ? h->io_timeout_s :
	    h->timeout_s) * 1000 + 500;
	time_t until = time(NULL) + LOCK_WAIT_S;
	unsigned pause, clashes = 0;
	int err;

	/*
	 * Asked at every take: one server that cannot say (down, 0.2.0)
	 * costs the guard, never safety.
	 */
	if (bftblk__cluster_finalized(h, BFT_FEAT_LOCK_CLAIMS) == 1)
		guard = 0;
	for (;;) {
		if (bftblk__lease_acquire(lock, h->eng, NULL, BFT_VOL_TABLE,
		    LOCK_PERIOD_S, guard, h->key.name) == 0)
			return 0;
		bftblk__lease_release(lock);
		/*
		 * ESTALE: t+1 servers refused our claim, a rival's of the
		 * same generation being there first: its turn, unless neither
		 * claim completed and both admins wait the period out and
		 * claim the next generation together again.  The pause is
		 * what sets them apart, so it grows with every clash.
		 */
		if ((err = bftblk__take_errno()) == ESTALE) {
			err = EBUSY;
			if (clashes < 3)
				clashes++;
		}
		if (err != EBUSY || time(NULL) >= until)
			return bftblk__fail(err, "the volume table's admin "
			    "lock: %s", bftblk__errmsg());
		bft_random(&pause, sizeof pause);
		usleep(500000 + pause % (2000000u << (clashes > 1 ?
		    clashes - 1 : 0)));
	}
}

/* Before each table write: the lock is still ours. */
static int
lock_check(const struct bft_lease *lock)
{
	if (!bftblk__lease_may_write(lock))
		return bftblk__fail(EAGAIN, "lost the volume table's admin "
		    "lock (another admin took it, or renewing it failed): "
		    "nothing more was written; run the command again");
	return 0;
}

static int
write_block(struct bftblk *h, const struct bft_lease *lock,
    const struct voltab *vt, unsigned bi)
{
	if (lock_check(lock) != 0)
		return -1;
	return bftblk__vt_write(h->eng, vt, bi);
}

/*
 * Sends DROP for every deleting entry and removes the ones all servers
 * dropped.  *pending: the servers that have yet to drop volume id.
 */
static int
finish_deletes(struct bftblk *h, const struct bft_lease *lock,
    struct voltab *vt, uint32_t id, unsigned *pending)
{
	struct bft_client_key *key = bftblk__signing_key(h);
	bool acked[BFT_MAX_N];
	char why[256];
	int rc = 0;

	*pending = 0;
	if (key == NULL)
		return bftblk__fail(ENOMEM, "out of memory");
	for (unsigned b = 0; b < vt->nblocks; b++)
		for (unsigned i = 0; i < vt->count[b]; i++) {
			struct vt_entry *e = &vt->e[b][i];
			int n;

			bool snap = e->state == VT_SNAP_DELETING;

			if (e->state != VT_DELETING && !snap)
				continue;
			n = snap ? bftblk__snap_volume(&h->cfg, key, e->id,
			    e->generation, false, h->timeout_s * 1000, acked,
			    why, sizeof why) : bftblk__drop_volume(&h->cfg,
			    key, e->id, h->timeout_s * 1000, acked, why,
			    sizeof why);
			if (n < 0) {
				rc = bftblk__fail(bftblk__take_errno(),
				    "%s %s '%s': %s", snap ? "forgetting" :
				    "dropping", snap ? "snapshot" : "volume",
				    e->name, bftblk__errmsg());
				goto out_free;
			}
			if ((unsigned)n < h->cfg.n) {
				if (e->id == id)
					*pending = h->cfg.n - (unsigned)n;
				bftblk__eng_log(h->eng, BFTBLK_LOG_WARN,
				    "%s '%s' (id %" PRIu32 "): %s by %d of %u "
				    "servers; the others at a later volume "
				    "command", snap ? "snapshot" : "volume",
				    e->name, e->id, snap ? "forgotten" :
				    "dropped", n, h->cfg.n);
				continue;
			}
			bftblk__vt_remove(vt, b, e);
			if (write_block(h, lock, vt, b) != 0) {
				rc = -1;
				goto out_free;
			}
			i--;
		}
out_free:
	bftblk__signing_key_free(key);
	return rc;
}

/*
 * Allocates the table, takes the lock, reads the table and finishes
 * deletes left pending; the caller then changes *vtp and calls end().
 * 0, or a negative errno failed on h (nothing left to end).
 */
static int
begin(struct bftblk *h, struct bft_lease *lock, struct voltab **vtp)
{
	unsigned unused;

	memset(lock, 0, sizeof *lock);
	if ((*vtp = malloc(sizeof **vtp)) == NULL)
		return bftblk__handle_fail(h, ENOMEM, "out of memory");
	if (lock_take(h, lock) == 0 && bftblk__vt_read(h->eng, *vtp) == 0 &&
	    finish_deletes(h, lock, *vtp, 0, &unused) == 0)
		return 0;
	bftblk__lease_release(lock);
	free(*vtp);
	*vtp = NULL;
	return failed(h);
}

/* Releases the lock and the table begin() gave. */
static void
end(struct bft_lease *lock, struct voltab *vt)
{
	bftblk__lease_release(lock);
	free(vt);
}

int
bftblk_lease_get(struct bftblk *h, uint32_t volume_id,
    struct bftblk_lease *lease, size_t size)
{
	struct bft_engine *eng = bftblk__engine(h);
	struct bftblk_lease all, *out = &all;
	struct bft_lease_info li;
	int r;

	memset(out, 0, sizeof *out);
	if ((r = bftblk__check_size(h, "bftblk_lease", size, sizeof all)) != 0)
		return r;
	if (eng == NULL)
		return bftblk__handle_fail(h, ENOTCONN, "the handle is not "
		    "connected");
	if (volume_id > BFT_ADDR_MAX_VOL)
		return bftblk__handle_fail(h, EINVAL, "no volume has id "
		    "%" PRIu32, volume_id);
	if (bftblk__lease_read(eng, volume_id, &li) != 0)
		return failed(h);
	out->generation = bft_ts_gen(&li.ts);
	out->claimed = li.claimed;
	out->released = li.claim.released;
	out->renewals = li.claim.counter;
	out->renewed_ms = li.claim.wall_ms;
	out->period_ms = li.claim.period_ms;
	snprintf(out->holder, sizeof out->holder, "%s", li.claim.holder);
	memcpy(lease, &all, size);
	return 0;
}

int
bftblk_volume_list(struct bftblk *h, struct bftblk_volume **vols, size_t *n)
{
	struct voltab *vt;
	int r;

	*vols = NULL;
	*n = 0;
	if ((vt = bftblk__vt_load(h, &r)) == NULL)
		return r;
	/* The entries there are, not room for a full table (1 MiB). */
	for (unsigned b = 0; b < vt->nblocks; b++)
		*n += vt->count[b];
	*vols = calloc(*n > 0 ? *n : 1, sizeof **vols);
	*n = 0;
	if (*vols == NULL) {
		free(vt);
		return bftblk__handle_fail(h, ENOMEM, "out of memory");
	}
	for (unsigned b = 0; b < vt->nblocks; b++)
		for (unsigned i = 0; i < vt->count[b]; i++)
			if (!bftblk__vt_is_snap(&vt->e[b][i]))
				bftblk__vt_public(&vt->e[b][i],
				    &(*vols)[(*n)++]);
	free(vt);
	return 0;
}

int
bftblk_volume_get(struct bftblk *h, const char *name,
    struct bftblk_volume *v)
{
	struct bftblk_volume *all;
	size_t n;
	int r;

	if ((r = bftblk_volume_list(h, &all, &n)) != 0)
		return r;
	r = bftblk__handle_fail(h, ENOENT, "no volume is named '%s'", name);
	for (size_t i = 0; i < n; i++)
		if (strcmp(all[i].name, name) == 0) {
			*v = all[i];
			r = 0;
			break;
		}
	free(all);
	return r;
}

static int
check_size(struct bftblk *h, uint64_t size)
{
	if (size == 0 || size % BFT_BLOCK_SIZE != 0)
		return bftblk__handle_fail(h, EINVAL, "a volume's size is a "
		    "positive multiple of 64 KiB (%" PRIu64 " is not; %"
		    PRIu64 " would be)", size, (size / BFT_BLOCK_SIZE + 1) *
		    BFT_BLOCK_SIZE);
	if (size / BFT_BLOCK_SIZE > BFT_VOL_MAX_BLOCKS)
		return bftblk__handle_fail(h, EFBIG, "a volume holds at most %"
		    PRIu64 " bytes", BFT_VOL_MAX_BLOCKS * BFT_BLOCK_SIZE);
	return 0;
}

/* The entry for a new volume, its key's id read from key_file. */
static int
new_entry(struct bftblk *h, const char *name, uint64_t size,
    const char *key_file, struct vt_entry *e)
{
	struct bft_volume_key vk;
	char err[512];
	int r;

	memset(e, 0, sizeof *e);
	snprintf(e->name, sizeof e->name, "%s", name);
	e->state = VT_LIVE;
	e->size = size;
	e->created = (uint64_t)time(NULL);
	if (key_file == NULL)
		return 0;
	if ((r = bft_volume_key_load(key_file, &vk, err, sizeof err)) != 0)
		return bftblk__handle_fail(h, -r, "%s", err);
	bft_volume_key_id(&vk, e->key_id);
	bft_wipe(&vk, sizeof vk);
	e->encrypted = true;
	return 0;
}

int
bftblk_volume_create(struct bftblk *h, const char *name, uint64_t size,
    const char *key_file, struct bftblk_volume *out)
{
	struct bft_lease lock;
	struct voltab *vt = NULL;
	struct vt_entry e;
	int r, bi;

	if ((r = check_handle(h, true)) != 0)
		return r;
	if (!bftblk__vt_name_ok(name))
		return bftblk__handle_fail(h, EINVAL, "'%s' is not a volume "
		    "name: 1 to %u of A-Z a-z 0-9 . _ -, not starting with . "
		    "or -", name, BFTBLK_VOLUME_NAME_MAX);
	if ((r = check_size(h, size)) != 0 ||
	    (r = new_entry(h, name, size, key_file, &e)) != 0)
		return r;
	if ((r = begin(h, &lock, &vt)) != 0)
		return r;
	if ((bi = r = bftblk__vt_slot(h, vt, name)) < 0)
		goto out;
	e.id = vt->next_id++;
	bftblk__vt_add(vt, (unsigned)bi, &e);
	if (write_block(h, &lock, vt, 0) != 0 ||
	    (bi != 0 && write_block(h, &lock, vt, (unsigned)bi) != 0)) {
		r = failed(h);
		goto out;
	}
	if (out != NULL)
		bftblk__vt_public(&e, out);
	bftblk__eng_log(h->eng, BFTBLK_LOG_INFO, "created volume '%s', id "
	    "%" PRIu32 ", %" PRIu64 " bytes%s", name, e.id, size,
	    e.encrypted ? ", encrypted" : "");
	r = 0;
out:
	end(&lock, vt);
	return r;
}

/*
 * Trims blocks [from, to) of volume e: a shrink's cut.  A clone's
 * handle reads through its parents, so that a block it never wrote,
 * which would read as its parent's, gets the zero value too: growing
 * the clone again then shows zeros there, as on any other volume.
 */
static int
trim_tail(struct bftblk *h, struct voltab *vt, const struct vt_entry *e,
    uint64_t from, uint64_t to)
{
	struct bftblk *vh;
	char opts[96], why[256];
	int r;

	snprintf(opts, sizeof opts, "volume-id=%" PRIu32 " size=%" PRIu64
	    " shared=on cache=0", e->id, to * BFT_BLOCK_SIZE);
	if ((vh = bftblk_create()) == NULL)
		return bftblk__handle_fail(h, ENOMEM, "out of memory");
	if ((r = bftblk_set_option(vh, "config", h->config_path)) != 0 ||
	    (h->keys_path != NULL &&
	    (r = bftblk_set_option(vh, "keys", h->keys_path)) != 0) ||
	    (r = bftblk__set_options(vh, opts)) != 0) {
		r = bftblk__handle_fail(h, -r, "%s", bftblk_errmsg(vh));
		goto out;
	}
	if (bftblk__vt_parents(vt, e, vh->parents, &vh->nparents, why,
	    sizeof why) != 0) {
		r = bftblk__handle_fail(h, EUCLEAN, "the volume table is "
		    "damaged: %s", why);
		goto out;
	}
	if ((r = bftblk_connect(vh)) != 0) {
		r = bftblk__handle_fail(h, -r, "%s", bftblk_errmsg(vh));
		goto out;
	}
	for (uint64_t b = from; b < to && r == 0; b += 1024) {
		uint64_t nb = to - b < 1024 ? to - b : 1024;

		r = bftblk_trim(vh, nb * BFT_BLOCK_SIZE, b * BFT_BLOCK_SIZE, 0);
	}
	if (r != 0)
		r = bftblk__handle_fail(h, -r, "trimming the cut-off blocks: "
		    "%s", bftblk_errmsg(vh));
out:
	bftblk_close(vh);
	return r;
}

int
bftblk_volume_resize(struct bftblk *h, const char *name, uint64_t size,
    int force)
{
	struct bft_lease lock;
	struct voltab *vt = NULL;
	struct vt_entry *e;
	struct bft_lease_info li;
	unsigned bi;
	int r;

	if ((r = check_handle(h, true)) != 0 || (r = check_size(h, size)) != 0)
		return r;
	if ((r = begin(h, &lock, &vt)) != 0)
		return r;
	if ((e = bftblk__vt_find(vt, name, &bi)) == NULL ||
	    e->state != VT_LIVE) {
		r = bftblk__handle_fail(h, ENOENT, "no volume is named '%s'",
		    name);
		goto out;
	}
	if (size < e->size) {
		if (!force) {
			r = bftblk__handle_fail(h, EINVAL, "shrinking '%s' "
			    "from %" PRIu64 " to %" PRIu64 " bytes discards "
			    "what is past the new end; --force does it", name,
			    e->size, size);
			goto out;
		}
		if ((r = bftblk__lease_probe(h->eng, e->id, &li)) != 0) {
			r = r < 0 ? failed(h) : bftblk__handle_fail(h, EBUSY,
			    "volume '%s' is in use by %s: stop it before "
			    "shrinking", name, li.claim.holder);
			goto out;
		}
		if ((r = trim_tail(h, vt, e, size / BFT_BLOCK_SIZE,
		    e->size / BFT_BLOCK_SIZE)) != 0)
			goto out;
	}
	e->size = size;
	e->generation++;
	if (write_block(h, &lock, vt, bi) != 0) {
		r = failed(h);
		goto out;
	}
	bftblk__eng_log(h->eng, BFTBLK_LOG_INFO, "resized volume '%s' to "
	    "%" PRIu64 " bytes", name, size);
	r = 0;
out:
	end(&lock, vt);
	return r;
}

/* How many snapshots volume id has, their names listed in buf. */
static unsigned
snapshots_of(const struct voltab *vt, uint32_t id, char *buf, size_t len)
{
	unsigned count = 0;
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned b = 0; b < vt->nblocks; b++)
		for (unsigned i = 0; i < vt->count[b]; i++) {
			const struct vt_entry *e = &vt->e[b][i];

			if (!bftblk__vt_is_snap(e) || e->id != id)
				continue;
			count++;
			bftblk__vt_list_add(buf, len, &off, NULL, e->name);
		}
	return count;
}

int
bftblk_volume_delete(struct bftblk *h, const char *name, int force,
    unsigned *pending)
{
	struct bft_lease lock;
	struct voltab *vt = NULL;
	struct vt_entry *e;
	struct bft_lease_info li;
	unsigned bi, left = 0;
	char names[256];
	int r;

	if (pending != NULL)
		*pending = 0;
	if ((r = check_handle(h, true)) != 0)
		return r;
	if ((r = begin(h, &lock, &vt)) != 0)
		return r;
	if ((e = bftblk__vt_find(vt, name, &bi)) == NULL) {
		r = bftblk__handle_fail(h, ENOENT, "no volume is named '%s'",
		    name);
		goto out;
	}
	if (e->state == VT_LIVE && !force &&
	    (r = bftblk__lease_probe(h->eng, e->id, &li)) != 0) {
		r = r < 0 ? failed(h) : bftblk__handle_fail(h, EBUSY, "volume "
		    "'%s' is in use by %s: stop it first, or --force",
		    name, li.claim.holder);
		goto out;
	}
	if (snapshots_of(vt, e->id, names, sizeof names) > 0) {
		r = bftblk__handle_fail(h, EBUSY, "volume '%s' has snapshots "
		    "(%s): delete them first", name, names);
		goto out;
	}
	e->state = VT_DELETING;
	if (write_block(h, &lock, vt, bi) != 0 ||
	    finish_deletes(h, &lock, vt, e->id, &left) != 0) {
		r = failed(h);
		goto out;
	}
	bftblk__eng_log(h->eng, BFTBLK_LOG_INFO, "deleted volume '%s'%s", name,
	    left ? "; some servers have yet to drop its blocks" : "");
	r = 0;
out:
	if (pending != NULL)
		*pending = left;
	end(&lock, vt);
	return r;
}

/* The table session above, for the snapshot calls (snap.c). */
int
bftblk__vt_begin(struct bftblk *h, struct bft_lease *lock,
    struct voltab **vtp)
{
	return begin(h, lock, vtp);
}

void
bftblk__vt_end(struct bft_lease *lock, struct voltab *vt)
{
	end(lock, vt);
}

int
bftblk__vt_put(struct bftblk *h, const struct bft_lease *lock,
    const struct voltab *vt, unsigned bi)
{
	return write_block(h, lock, vt, bi);
}

int
bftblk__vt_failed(const struct bftblk *h)
{
	return failed(h);
}

int
bftblk__vt_check(struct bftblk *h, bool write)
{
	return check_handle(h, write);
}

struct voltab *
bftblk__vt_load(struct bftblk *h, int *r)
{
	struct voltab *vt;

	if ((*r = check_handle(h, false)) != 0)
		return NULL;
	if ((vt = malloc(sizeof *vt)) == NULL) {
		*r = bftblk__handle_fail(h, ENOMEM, "out of memory");
		return NULL;
	}
	if (bftblk__vt_read(h->eng, vt) != 0) {
		free(vt);
		*r = failed(h);
		return NULL;
	}
	return vt;
}

int
bftblk__vt_slot(struct bftblk *h, const struct voltab *vt, const char *name)
{
	int bi;

	if (bftblk__vt_find((struct voltab *)vt, name, NULL) != NULL)
		return bftblk__handle_fail(h, EEXIST, "a volume named '%s' "
		    "exists", name);
	if ((bi = bftblk__vt_room(vt)) < 0 || vt->next_id > VT_LAST_ID)
		return bftblk__handle_fail(h, ENOSPC, "the volume table is "
		    "full (%u volumes, or every id was given)", VT_MAX);
	return bi;
}

int
bftblk__vt_finish(struct bftblk *h, const struct bft_lease *lock,
    struct voltab *vt, uint32_t id, unsigned *pending)
{
	return finish_deletes(h, lock, vt, id, pending);
}
