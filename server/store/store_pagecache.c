/*
 * How much of the log the kernel keeps in its page cache.
 *
 * Every append lands in the page cache, and a log that outgrows memory
 * makes the kernel reclaim those pages while the writes go on: under
 * sequential overwrites of a 4 GiB volume that reclaim doubled the
 * servers' CPU per block against the fill (docs/performance.md).
 * Giving a sealed segment's pages back ourselves costs a fraction of
 * that.  But only the cold part of the log may go: a small range
 * overwritten again and again has compaction copy the live records of
 * young segments, and reads find recent writes, both from the cache.
 * So the newest window bytes of the log stay cached, and each segment
 * that falls wholly behind them has its writeback finished and its
 * pages dropped, once, on a thread of its own: sync_file_range waits
 * for the disk's queue, which must never stall the event loop.  A
 * dropped segment's pages come back when something reads them, and
 * the kernel owns those as it owns any.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "store_int.h"

struct pc_job {
	int *fds;			/* duplicates, closed by the thread */
	size_t n;
	int err;
};

static void *
pc_main(void *arg)
{
	struct pc_job *job = arg;
	unsigned flags = SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
	    SYNC_FILE_RANGE_WAIT_AFTER;

	for (size_t i = 0; i < job->n; i++) {
		/* Dirty pages are not dropped: write them out first. */
		if (sync_file_range(job->fds[i], 0, 0, flags) < 0 &&
		    job->err == 0)
			job->err = -errno;
		(void)posix_fadvise(job->fds[i], 0, 0, POSIX_FADV_DONTNEED);
		close(job->fds[i]);
	}
	return NULL;
}

/* Collects a finished job; false while it runs. */
static bool
reap(struct bft_store *st, bool block)
{
	struct pc_job *job = st->pc_job;

	if (job == NULL)
		return true;
	if (block ? pthread_join(st->pc_thread, NULL) != 0 :
	    pthread_tryjoin_np(st->pc_thread, NULL) != 0)
		return false;
	/* Not data: the pages stay cached and the kernel reclaims them. */
	if (job->err < 0 && !st->pc_failing)
		bft_warn("%s: writeback of sealed segments: %s", st->dir,
		    strerror(-job->err));
	st->pc_failing = job->err < 0;
	free(job->fds);
	free(job);
	st->pc_job = NULL;
	return true;
}

/*
 * How many of the oldest segments lie wholly behind the newest window
 * bytes of the log; never the active one.
 */
static size_t
behind_window(const struct bft_store *st)
{
	uint64_t newer = 0;
	size_t i = st->nseg;

	while (i > 0 && newer + st->segs[i - 1].size <= st->pc_window)
		newer += st->segs[--i].size;
	return i < st->nseg ? i : st->nseg - 1;
}

/* Whether segment s has pages this module has not given back yet. */
static bool
cached(const struct seg *s)
{
	return !s->uncached && !s->retired && s->size > 0;
}

void
st_pagecache_trim(struct bft_store *st)
{
	struct pc_job *job;
	size_t end;

	if (st->pc_window == 0 || st->nseg == 0 || !reap(st, false) ||
	    (end = behind_window(st)) == 0)
		return;
	if ((job = calloc(1, sizeof *job)) == NULL ||
	    (job->fds = calloc(end, sizeof *job->fds)) == NULL)
		goto out_free;
	for (size_t i = 0; i < end; i++) {
		if (!cached(&st->segs[i]))
			continue;
		if ((job->fds[job->n] = dup(st->segs[i].fd)) < 0)
			goto out_close;
		job->n++;
	}
	if (job->n == 0 ||
	    pthread_create(&st->pc_thread, NULL, pc_main, job) != 0)
		goto out_close;
	st->pc_job = job;
	/* Marked once the thread runs; else the next roll-over tries. */
	for (size_t i = 0; i < end; i++)
		if (cached(&st->segs[i])) {
			st->segs[i].uncached = true;
			st->pc_dropped += st->segs[i].size;
		}
	return;
out_close:
	for (size_t i = 0; i < job->n; i++)
		close(job->fds[i]);
out_free:
	if (job != NULL)
		free(job->fds);
	free(job);
}

void
st_pagecache_wait(struct bft_store *st)
{
	(void)reap(st, true);
}

/*
 * An eighth of the host's memory: room for a few servers and their
 * clients on one host, and no less than 256 MiB.
 */
uint64_t
st_default_page_cache(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	uint64_t mem = pages > 0 && size > 0 ?
	    (uint64_t)pages * (uint64_t)size : 0;

	return mem / 8 > BFT_STORE_MIN_PAGE_CACHE ? mem / 8 :
	    BFT_STORE_MIN_PAGE_CACHE;
}
