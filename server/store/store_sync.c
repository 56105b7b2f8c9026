/*
 * Background sync of compacted segments, and a FLUSH's sync off the
 * event loop (at the end).
 *
 * A compacted segment may be unlinked only once the copies of its live
 * records are durable.  Clients ask for durability with FLUSH; when they
 * do not, retired segments pile up, and syncing them on the event loop
 * stalled every client for 1-2 s (eight fdatasyncs of 0.14-0.28 s each,
 * measured with strace under fio overwrites).  So the pile is handed to
 * a thread: it syncs duplicates of the segments' descriptors, then
 * unlinks the retired files.  The event loop forgets the retired
 * segments at once; a crash before the unlink leaves duplicates that
 * replay already tolerates.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "store_int.h"
#include "store_log.h"

struct bg_job {
	int dirfd;
	int *fds;			/* segments that may hold the copies */
	size_t nfds;
	uint32_t *retired;		/* segment numbers to unlink after */
	size_t nretired;
	size_t spare_room;		/* how many may become spares instead */
	uint32_t spares[BFT_STORE_MAX_SPARES];
	size_t nspares;
	int err;
};

static void
job_free(struct bg_job *job)
{
	for (size_t i = 0; i < job->nfds; i++)
		close(job->fds[i]);
	if (job->dirfd >= 0)
		close(job->dirfd);
	free(job->fds);
	free(job->retired);
	free(job);
}

static void *
bg_main(void *arg)
{
	struct bg_job *job = arg;
	char name[BFT_SEG_NAME_MAX];

	for (size_t i = 0; i < job->nfds && job->err == 0; i++)
		if (fdatasync(job->fds[i]) < 0)
			job->err = -errno;
	for (size_t i = 0; i < job->nretired && job->err == 0; i++) {
		if (job->nspares < job->spare_room &&
		    st_spare_make(job->dirfd, job->retired[i]) == 0) {
			job->spares[job->nspares++] = job->retired[i];
			continue;
		}
		bft_seg_name(name, job->retired[i]);
		if (unlinkat(job->dirfd, name, 0) < 0 && errno != ENOENT)
			job->err = -errno;
	}
	if (job->err == 0 && fsync(job->dirfd) < 0)
		job->err = -errno;
	return NULL;
}

/* Collects a finished job's result; 0 or its negative errno. */
static int
reap(struct bft_store *st, bool block)
{
	struct bg_job *job = st->bg_job;
	int err;

	if (job == NULL)
		return 0;
	if (block ? pthread_join(st->bg_thread, NULL) != 0 :
	    pthread_tryjoin_np(st->bg_thread, NULL) != 0)
		return block ? -EIO : -EBUSY;
	err = job->err;
	st_spares_add(st, job->spares, job->nspares);
	/* The thread's calls: one per segment, one for the directory. */
	if (err == 0)
		st->fsyncs += job->nfds + 1;
	if (err < 0)
		bft_error("%s: background sync: %s (compacted segments stay "
		    "on disk until the next restart)", st->dir, strerror(-err));
	job_free(job);
	st->bg_job = NULL;
	return err;
}

int
st_bg_sync_wait(struct bft_store *st)
{
	return reap(st, true);
}

bool
st_bg_sync_busy(struct bft_store *st)
{
	return reap(st, false) == -EBUSY;
}

void
st_bg_sync_start(struct bft_store *st)
{
	struct bg_job *job;
	size_t keep = 0;

	/*
	 * One job at a time, and the next compaction tries again; but if
	 * compaction outruns the disk, wait, so that fewer than twice
	 * BFT_STORE_MAX_RETIRED segments ever wait to go.
	 */
	if (st->bg_job != NULL && reap(st, st->nretired >=
	    2 * BFT_STORE_MAX_RETIRED - 1) == -EBUSY)
		return;
	job = calloc(1, sizeof *job);
	if (job == NULL)
		return;
	job->dirfd = dup(st->dirfd);
	job->spare_room = st_reuse_on(st) ? BFT_STORE_MAX_SPARES -
	    st->nspares : 0;
	job->fds = calloc(st->nseg, sizeof *job->fds);
	job->retired = calloc(st->nseg, sizeof *job->retired);
	if (job->dirfd < 0 || job->fds == NULL || job->retired == NULL)
		goto out_free;
	for (size_t i = 0; i < st->nseg; i++) {
		struct seg *s = &st->segs[i];

		if (s->retired)
			continue;
		if (s->dirty && (job->fds[job->nfds] = dup(s->fd)) >= 0)
			job->nfds++;
		else if (s->dirty)
			goto out_free;
	}
	/* From here on the retired segments belong to the job. */
	for (size_t i = 0; i < st->nseg; i++) {
		struct seg *s = &st->segs[i];

		if (s->retired) {
			job->retired[job->nretired++] = s->no;
			close(s->fd);
		} else {
			st->segs[keep++] = *s;
		}
	}
	st->nseg = keep;
	st->nretired = 0;
	st->bg_job = job;
	if (pthread_create(&st->bg_thread, NULL, bg_main, job) != 0) {
		/* No thread to be had: do it here, stall and all. */
		bg_main(job);
		st->bg_job = NULL;
		st_spares_add(st, job->spares, job->nspares);
		if (job->err < 0)
			bft_error("%s: sync: %s", st->dir, strerror(-job->err));
		job_free(job);
	}
	return;
out_free:
	job_free(job);
}

/*
 * A FLUSH's sync, off the loop (store.h).  It covers every record
 * appended before flush_begin: those in segments still there are made
 * durable by the fdatasync of the segment; those compaction copied and
 * retired are durable through their copies, which are in the segments
 * synced.  Retired segments are left to the background job above.
 */
struct bft_store_flush {
	size_t n;
	int *fds;
	uint32_t *nos;
	uint64_t *sizes;		/* each segment's, at begin */
	int dirfd;			/* -1: the directory had not changed */
	uint64_t dir_gen;
	int err;
};

static void
flush_free(struct bft_store_flush *f)
{
	for (size_t i = 0; i < f->n; i++)
		close(f->fds[i]);
	if (f->dirfd >= 0)
		close(f->dirfd);
	free(f->fds);
	free(f->nos);
	free(f->sizes);
	free(f);
}

struct bft_store_flush *
bft_store_flush_begin(struct bft_store *st)
{
	struct bft_store_flush *f = calloc(1, sizeof *f);

	if (f == NULL)
		return NULL;
	f->dirfd = -1;
	f->fds = calloc(st->nseg + 1, sizeof *f->fds);
	f->nos = calloc(st->nseg + 1, sizeof *f->nos);
	f->sizes = calloc(st->nseg + 1, sizeof *f->sizes);
	if (f->fds == NULL || f->nos == NULL || f->sizes == NULL)
		goto out_free;
	st->syncs++;
	for (size_t i = 0; i < st->nseg; i++) {
		const struct seg *s = &st->segs[i];

		if (s->retired || !s->dirty)
			continue;
		if ((f->fds[f->n] = dup(s->fd)) < 0)
			goto out_free;
		f->nos[f->n] = s->no;
		f->sizes[f->n++] = s->size;
	}
	if (st->dir_dirty && (f->dirfd = dup(st->dirfd)) < 0)
		goto out_free;
	f->dir_gen = st->dir_gen;
	return f;
out_free:
	flush_free(f);
	return NULL;
}

void
bft_store_flush_run(struct bft_store_flush *f)
{
	for (size_t i = 0; i < f->n && f->err == 0; i++)
		if (fdatasync(f->fds[i]) < 0)
			f->err = -errno;
	if (f->err == 0 && f->dirfd >= 0 && fsync(f->dirfd) < 0)
		f->err = -errno;
}

int
bft_store_flush_end(struct bft_store *st, struct bft_store_flush *f)
{
	int err = f->err;

	st->fsyncs += f->n + (f->dirfd >= 0);
	for (size_t i = 0; i < f->n && err == 0; i++) {
		struct seg *s = st_seg_find(st, f->nos[i]);

		/* Appended to since: the new records are not covered. */
		if (s != NULL && !s->retired && s->size == f->sizes[i])
			s->dirty = false;
	}
	if (err == 0 && f->dirfd >= 0 && st->dir_gen == f->dir_gen)
		st->dir_dirty = false;
	flush_free(f);
	/* Compacted segments go with the background job, never here. */
	if (err == 0 && st->nretired > 0 && !st_bg_sync_busy(st))
		st_bg_sync_start(st);
	return err;
}
