/*
 * Rolling a volume back to one of its snapshots (bftblk.h): every block
 * written since the snapshot gets the snapshot's value again, as the
 * volume's writer, so the volume must have no other.  The blocks come
 * from the servers' lists of what changed after the boundary
 * (snap_diff.c), so a rollback costs what changed, not the volume.
 *
 * Order: the size first (a shrink trims what the snapshot did not
 * have), then the lease, then the list: once this handle holds the
 * lease no other write lands, so the list taken after it is complete.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes_int.h"
#include "error_int.h"
#include "handle_int.h"
#include "voltab_int.h"

/* Blocks restored per read of the snapshot: 2 MiB. */
#define RUN_MAX	32u

/* The snapshot named snap of volume, as bftblk_snap_list has it. */
static int
find_snap(struct bftblk *h, const char *volume, const char *snap,
    struct bftblk_snap *out)
{
	struct bftblk_snap *s;
	size_t n, i;
	int r;

	if ((r = bftblk_snap_list(h, volume, &s, &n)) != 0)
		return r;
	for (i = 0; i < n && strcmp(s[i].name, snap) != 0; i++)
		;
	if (i == n || s[i].deleting)
		r = bftblk__handle_fail(h, ENOENT, "volume '%s' has no "
		    "snapshot named '%s'", volume, snap);
	else
		*out = s[i];
	free(s);
	return r;
}

/*
 * Blocks [first, first + n) from the snapshot sh into the volume vh: zeros as the zero value (trim), the rest written.  0, or -1 with
 * the error on the handle that failed, named in *bad.
 */
static int
restore_run(struct bftblk *vh, struct bftblk *sh, uint64_t first,
    unsigned n, uint8_t *buf, struct bftblk **bad)
{
	unsigned i, run;

	*bad = sh;
	if (bftblk_pread(sh, buf, (size_t)n * BFT_BLOCK_SIZE,
	    first * BFT_BLOCK_SIZE) != 0)
		return -1;
	*bad = vh;
	for (i = 0; i < n; i += run) {
		const uint8_t *p = buf + (size_t)i * BFT_BLOCK_SIZE;
		bool zero = bftblk__block_zero(p);
		uint64_t off = (first + i) * BFT_BLOCK_SIZE;

		for (run = 1; i + run < n && bftblk__block_zero(p +
		    (size_t)run * BFT_BLOCK_SIZE) == zero; run++)
			;
		if ((zero ? bftblk_trim(vh, (size_t)run * BFT_BLOCK_SIZE, off,
		    0) : bftblk_pwrite(vh, p, (size_t)run * BFT_BLOCK_SIZE,
		    off, 0)) != 0)
			return -1;
	}
	return 0;
}

int
bftblk_snap_rollback(struct bftblk *h, const char *volume, const char *snap,
    bftblk_progress_fn *progress, void *opaque)
{
	struct bftblk *vh = NULL, *sh = NULL, *bad;
	struct bftblk_snap s = { 0 };
	struct bftblk_volume v;
	char name[2 * BFTBLK_VOLUME_NAME_MAX + 2];
	uint64_t *blocks = NULL, nblocks;
	uint8_t *buf = NULL;
	size_t n = 0, done = 0;
	int r;

	if ((r = bftblk__vt_check(h, true)) != 0 ||
	    (r = find_snap(h, volume, snap, &s)) != 0)
		return r;
	/* Volume 0 is as large as bftblk.conf says, always. */
	if (volume[0] != '\0') {
		if ((r = bftblk_volume_get(h, volume, &v)) != 0)
			return r;
		if (v.size != s.size && (r = bftblk_volume_resize(h, volume,
		    s.size, 1)) != 0)
			return r;
	}
	/* A writer's handle: EBUSY, naming it, when another writer runs. */
	if ((r = bftblk_open_volume(h, volume, "cache=0 shared=off", &vh)) != 0)
		return r;
	snprintf(name, sizeof name, "%s@%s", volume, snap);
	if ((r = bftblk_open_volume(h, name, "cache=0 shared=on", &sh)) != 0 ||
	    (r = bftblk_snap_diff(h, volume, snap, NULL, &blocks, &n)) != 0)
		goto out;
	if ((buf = malloc((size_t)RUN_MAX * BFT_BLOCK_SIZE)) == NULL) {
		r = bftblk__handle_fail(h, ENOMEM, "out of memory");
		goto out;
	}
	nblocks = s.size / BFT_BLOCK_SIZE;
	while (done < n) {
		unsigned run = 1;

		/* Past the snapshot's size: trimmed by the shrink above. */
		if (blocks[done] >= nblocks) {
			done++;
			continue;
		}
		while (run < RUN_MAX && done + run < n &&
		    blocks[done + run] == blocks[done] + run &&
		    blocks[done + run] < nblocks)
			run++;
		if (restore_run(vh, sh, blocks[done], run, buf, &bad) != 0) {
			r = bftblk__handle_fail(h, EIO, "restoring block %"
			    PRIu64 ": %s", blocks[done], bftblk_errmsg(bad));
			goto out;
		}
		done += run;
		if (progress != NULL)
			progress(opaque, done, n);
	}
	if (bftblk_flush(vh) != 0) {
		r = bftblk__handle_fail(h, EIO, "%s", bftblk_errmsg(vh));
		goto out;
	}
	/* The loop said so when it had anything to do. */
	if (progress != NULL && n == 0)
		progress(opaque, 0, 0);
	bftblk__eng_log(h->eng, BFTBLK_LOG_INFO, "rolled volume '%s' back to "
	    "snapshot '%s': %zu blocks restored", volume, snap, n);
	r = 0;
out:
	free(buf);
	free(blocks);
	bftblk_close(sh);
	bftblk_close(vh);
	return r;
}
