/*
 * The index checkpoint: the index, the side table and the segments'
 * live bytes as of a position in the log, so that open replays only
 * the log after that position instead of all of it.
 *
 * The file, index.ckpt, is a stream of chunks of at most 1 MiB, each
 * followed by a CRC32C of its number and bytes: a header (struct
 * ck_hdr), the segments (struct ck_seg), the index's pages that exist,
 * each as its first block's address and its IDX_PAGE entries, the
 * side entries, and the ids of the volumes dropped (ascending): their
 * DROP records may lie before the position, where replay does not go;
 * then the snapshot boundaries and the retained records (store_int.h).
 * It is written to a temporary name only after everything it covers is
 * durable, then fsynced and renamed over the last one.
 *
 * Why loading it gives the state a full replay gives: the log after the
 * position holds every record appended since, in order, and the index
 * transitions are the same functions for appends and replay.
 * Compaction after the checkpoint appended its copies there too, so a
 * record the checkpoint places in a segment compaction removed since is
 * moved by replaying its copy, or dropped by the newer lc that replaces
 * it.  Whatever still names a segment that is gone after the replay
 * (an entry forgotten as damaged, or a directory tampered with) makes
 * open fall back to the full replay; so does any failed check of
 * store_ckload.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "store_ckpt.h"
#include "store_ckstream.h"
#include "store_int.h"
#include "store_log.h"

/* A checkpoint's contents, copied on the event loop or borrowed at close. */
struct ckpt_job {
	struct ck_hdr hdr;
	struct ck_seg *segs;
	uint64_t *page_no;		/* their first addresses, ascending */
	const struct blk_idx **pages;	/* theirs, or into copy */
	struct blk_idx *copy;		/* the pages copied, or NULL */
	struct side_ent *side;
	uint32_t *dropped;
	struct ck_snap *snaps;
	struct ck_ret *ret;
	uint64_t ret_cap;		/* records ret has room for */
	int dirfd;
	int *fds;			/* segments to sync first */
	size_t nfds;
	int err;
	uint64_t bytes;
	/* Allocated by the event loop: a thread's arena would keep it. */
	uint8_t *buf;
	int done;			/* the thread is finished (atomic) */
};

/* The stream's content, from the job. */
static int
ckpt_emit(struct ck_stream *w, const struct ckpt_job *job)
{
	const struct ck_hdr *h = &job->hdr;
	int err;

	if ((err = ck_write(w, h, sizeof *h)) < 0 ||
	    (err = ck_write(w, job->segs, h->nseg * sizeof *job->segs)) < 0)
		return err;
	for (uint64_t i = 0; i < h->npages; i++)
		if ((err = ck_write(w, &job->page_no[i], sizeof job->page_no[i]))
		    < 0 || (err = ck_write(w, job->pages[i], IDX_PAGE *
		    sizeof(struct blk_idx))) < 0)
			return err;
	if ((err = ck_write(w, job->side, h->nside * sizeof *job->side)) < 0 ||
	    (err = ck_write(w, job->dropped, h->ndropped *
	    sizeof *job->dropped)) < 0 ||
	    (err = ck_write(w, job->snaps, h->nsnaps * sizeof *job->snaps)) <
	    0 || (err = ck_write(w, job->ret, h->nret * sizeof *job->ret)) < 0)
		return err;
	return ck_flush(w);
}

/* Syncs what it covers, then writes the file in place of the last. */
static int
ckpt_write(struct ckpt_job *job)
{
	struct ck_stream w = { .fd = -1 };
	int err = 0;

	for (size_t i = 0; i < job->nfds; i++)
		if (fdatasync(job->fds[i]) < 0)
			return -errno;
	/* Segments it names must be in the directory for good, too. */
	if (fsync(job->dirfd) < 0)
		return -errno;
	w.buf = job->buf;
	w.fd = st_open_private(job->dirfd, CKPT_TMP, O_WRONLY | O_TRUNC);
	if (w.fd < 0)
		return -errno;
	if ((err = ckpt_emit(&w, job)) < 0)
		goto out_unlink;
	if (fsync(w.fd) < 0) {
		err = -errno;
		goto out_unlink;
	}
	if (renameat(job->dirfd, CKPT_TMP, job->dirfd, CKPT_FILE) < 0) {
		err = -errno;
		goto out_unlink;
	}
	if (fsync(job->dirfd) < 0)
		err = -errno;
	job->bytes = w.off;
	goto out_close;
out_unlink:
	unlinkat(job->dirfd, CKPT_TMP, 0);
out_close:
	close(w.fd);
	return err;
}

/* The bytes of a job's copy of the pages. */
static size_t
copy_len(const struct ckpt_job *job)
{
	return (size_t)job->hdr.npages * IDX_PAGE * sizeof(struct blk_idx);
}

/* The bytes of a job's retained records. */
static size_t
ret_len(const struct ckpt_job *job)
{
	return (size_t)job->ret_cap * sizeof(struct ck_ret);
}

static int
ret_put(void *arg, uint64_t addr, const struct ret_rec *r)
{
	struct ckpt_job *job = arg;

	if (job->hdr.nret == job->ret_cap)
		return -EOVERFLOW;
	job->ret[job->hdr.nret++] = (struct ck_ret){ .addr = addr, .r = *r };
	return 0;
}

/*
 * The boundaries and retained records, copied: a copy of the retained
 * index costs 56 bytes a record, on the event loop like the pages'.
 */
static int
snaps_copy(struct bft_store *st, struct ckpt_job *job)
{
	uint64_t ngens = 0, nrec = 0;
	struct ck_hdr *h = &job->hdr;

	for (size_t i = 0; i < st->nsvols; i++) {
		ngens += st->svols[i].ngens;
		nrec += st->svols[i].recs;
	}
	if ((job->snaps = calloc(ngens + 1, sizeof *job->snaps)) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < st->nsvols; i++)
		for (uint32_t k = 0; k < st->svols[i].ngens; k++)
			job->snaps[h->nsnaps++] = (struct ck_snap){
			    .vol = st->svols[i].vol,
			    .g = st->svols[i].gens[k] };
	if (nrec == 0)
		return 0;
	if ((job->ret = ck_big_alloc(nrec * sizeof *job->ret)) == NULL)
		return -ENOMEM;
	job->ret_cap = nrec;
	return st_ret_walk(st, ret_put, job);
}

static void
job_free(struct ckpt_job *job)
{
	for (size_t i = 0; i < job->nfds; i++)
		close(job->fds[i]);
	if (job->dirfd >= 0)
		close(job->dirfd);
	ck_big_free(job->copy, copy_len(job));
	free(job->page_no);
	free(job->pages);
	free(job->side);
	free(job->dropped);
	ck_big_free(job->ret, ret_len(job));
	free(job->snaps);
	free(job->segs);
	ck_big_free(job->buf, CK_BUF_LEN);
	free(job->fds);
	free(job);
}

/*
 * The job for the store as it is now.  copy: the index and side table
 * are copied (for a thread) and dirty segments' descriptors duplicated;
 * otherwise they are borrowed and everything must be synced already.
 */
static struct ckpt_job *
job_make(struct bft_store *st, bool copy)
{
	struct ckpt_job *job = calloc(1, sizeof *job);
	struct ck_hdr *h;
	size_t k = 0;

	if (job == NULL)
		return NULL;
	job->dirfd = dup(st->dirfd);
	job->segs = calloc(st->nseg, sizeof *job->segs);
	job->fds = calloc(st->nseg, sizeof *job->fds);
	job->side = calloc(st->side.used + 1, sizeof *job->side);
	job->page_no = calloc(st->pages_made + 1, sizeof *job->page_no);
	job->pages = calloc(st->pages_made + 1, sizeof *job->pages);
	job->dropped = calloc(st->ndropped + 1, sizeof *job->dropped);
	job->buf = ck_big_alloc(CK_BUF_LEN);
	if (job->dirfd < 0 || job->segs == NULL || job->fds == NULL ||
	    job->side == NULL || job->page_no == NULL || job->pages == NULL ||
	    job->dropped == NULL || job->buf == NULL)
		goto out_free;
	h = &job->hdr;
	memcpy(h->magic, CKPT_MAGIC, sizeof h->magic);
	h->version = CKPT_VERSION;
	h->idx_size = sizeof(struct blk_idx);
	h->side_size = sizeof(struct side_ent);
	h->ret_size = sizeof(struct ret_rec);
	h->n = st->n;
	h->server_index = st->id.server_index;
	memcpy(h->cluster_id, st->id.cluster_id, BFT_CLUSTER_ID_LEN);
	h->nblocks = st->id.nblocks;
	h->next_seq = st->next_seq;
	h->held = st->held;
	h->pos_no = st->segs[st->nseg - 1].no;
	h->pos_off = st->segs[st->nseg - 1].size;
	for (size_t i = 0; i < st->nseg; i++) {
		const struct seg *s = &st->segs[i];

		/* A retired segment holds nothing the index points to. */
		if (s->retired)
			continue;
		job->segs[h->nseg++] = (struct ck_seg){ .no = s->no,
		    .drops = s->drops, .size = s->size, .live = s->live,
		    .first_seq = s->first_seq };
		if (copy && s->dirty) {
			if ((job->fds[job->nfds] = dup(s->fd)) < 0)
				goto out_free;
			job->nfds++;
		}
	}
	for (size_t i = 0; i < st->side.cap; i++)
		if (st->side.e[i].block != SIDE_EMPTY)
			job->side[k++] = st->side.e[i];
	h->nside = k;
	if ((h->ndropped = st->ndropped) > 0)
		memcpy(job->dropped, st->dropped, st->ndropped *
		    sizeof *st->dropped);
	if (snaps_copy(st, job) < 0)
		goto out_free;
	for (uint64_t a = 0; h->npages < st->pages_made &&
	    st_idx_next(st, &a); a += IDX_PAGE) {
		job->page_no[h->npages] = a;
		job->pages[h->npages++] = st_idx_page(st, a);
	}
	if (!copy || h->npages == 0)
		return job;
	/* Only the pages written: a sparse disk's copy is small. */
	if ((job->copy = ck_big_alloc(copy_len(job))) == NULL)
		goto out_free;
	for (uint64_t i = 0; i < h->npages; i++) {
		struct blk_idx *to = job->copy + i * IDX_PAGE;

		memcpy(to, job->pages[i], IDX_PAGE * sizeof *to);
		job->pages[i] = to;
	}
	return job;
out_free:
	job_free(job);
	return NULL;
}

static void
job_done(struct bft_store *st, struct ckpt_job *job)
{
	if (job->err == 0) {
		st->ck.written++;
		st->ck.last_bytes = job->bytes;
		st->fsyncs += job->nfds + 3;
	} else {
		st->ck.failed++;
		bft_warn("%s: index checkpoint: %s (a restart replays more of "
		    "the log)", st->dir, strerror(-job->err));
	}
}

static void *
ckpt_main(void *arg)
{
	struct ckpt_job *job = arg;

	job->err = ckpt_write(job);
	/*
	 * The event loop reaps the job only at its next append, which an
	 * idle server may not make for hours: give the copy back now.
	 */
	ck_big_free(job->copy, copy_len(job));
	ck_big_free(job->buf, CK_BUF_LEN);
	job->copy = NULL;
	job->buf = NULL;
	__atomic_store_n(&job->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

void
bft_store_ckpt_info(const struct bft_store *st,
    struct bft_store_ckpt_info *out)
{
	*out = st->ck;
	out->running = st->ckpt_job != NULL &&
	    !__atomic_load_n(&st->ckpt_job->done, __ATOMIC_ACQUIRE);
}

static int
reap(struct bft_store *st, bool block)
{
	struct ckpt_job *job = st->ckpt_job;
	int err;

	if (job == NULL)
		return 0;
	if (block ? pthread_join(st->ckpt_thread, NULL) != 0 :
	    pthread_tryjoin_np(st->ckpt_thread, NULL) != 0)
		return block ? -EIO : -EBUSY;
	job_done(st, job);
	err = job->err;
	job_free(job);
	st->ckpt_job = NULL;
	return err;
}

int
st_ckpt_wait(struct bft_store *st)
{
	return reap(st, true);
}

/*
 * Compaction's copies count too: they are log a restart would replay.
 * Called only between whole operations, so the copy is consistent.
 */
void
st_ckpt_after_append(struct bft_store *st)
{
	struct ckpt_job *job;

	if (st->ckpt_every == 0 ||
	    st->appended - st->ckpt_mark < st->ckpt_every ||
	    reap(st, false) == -EBUSY)
		return;
	/* Failing to start one only leaves a longer log to replay. */
	if ((job = job_make(st, true)) == NULL)
		return;
	st->ckpt_mark = st->appended;
	st->ckpt_job = job;
	if (pthread_create(&st->ckpt_thread, NULL, ckpt_main, job) != 0) {
		st->ckpt_job = NULL;
		job->err = -EAGAIN;
		job_done(st, job);
		job_free(job);
	}
}

int
st_ckpt_write_now(struct bft_store *st)
{
	struct ckpt_job *job;
	int err;

	if ((job = job_make(st, false)) == NULL)
		return -ENOMEM;
	job->err = err = ckpt_write(job);
	job_done(st, job);
	job_free(job);
	return err;
}

