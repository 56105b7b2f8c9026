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
 * open fall back to the full replay; so does any failed check here.
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
#include "store_ckstream.h"
#include "store_int.h"
#include "store_log.h"

#define CKPT_FILE	"index.ckpt"
#define CKPT_TMP	"index.ckpt.tmp"
#define CKPT_MAGIC	"BFTIDX1"
/*
 * 4: the snapshot boundaries and retained records.  3: the dropped
 * volumes.  2: pages.  An older file is refused: the whole log is
 * replayed, and it finds every DROP, SNAP and UNSNAP record.
 */
#define CKPT_VERSION	4u

struct ck_hdr {
	char magic[8];
	uint32_t version;
	uint32_t idx_size, side_size;	/* the structs' sizes: same build */
	uint32_t n, server_index;
	uint8_t cluster_id[BFT_CLUSTER_ID_LEN];
	uint64_t nblocks;
	uint64_t next_seq;
	uint64_t held;
	uint32_t pos_no;		/* the log after (pos_no, pos_off) */
	uint32_t nseg;
	uint64_t pos_off;
	uint64_t nside;
	uint64_t npages;		/* pages that follow the segments */
	uint64_t ndropped;		/* volume ids after the side entries */
	uint64_t nsnaps;		/* boundaries after the volume ids */
	uint64_t nret;			/* retained records after those */
	uint32_t ret_size;		/* struct ret_rec's: same build */
	uint32_t pad;
};

/* A boundary, and a retained record, as the file holds them. */
struct ck_snap {
	uint32_t vol;
	uint32_t pad;
	struct snap_gen g;
};

struct ck_ret {
	uint64_t addr;
	struct ret_rec r;
};

struct ck_seg {
	uint32_t no;
	uint32_t drops;			/* zero in a format 5 directory's */
	uint64_t size, live;
	uint64_t first_seq;		/* tells a segment from a namesake */
};

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

static int
fail(char *why, size_t whylen, int err, const char *fmt, const char *arg)
{
	snprintf(why, whylen, fmt, arg);
	return err;
}

/* Checks the header against the store; 0 or -EINVAL with why. */
static int
hdr_check(const struct bft_store *st, const struct ck_hdr *h, char *why,
    size_t whylen)
{
	if (memcmp(h->magic, CKPT_MAGIC, sizeof h->magic) != 0 ||
	    h->version != CKPT_VERSION)
		return fail(why, whylen, -EINVAL, "%s", "not a checkpoint of "
		    "this version");
	if (h->idx_size != sizeof(struct blk_idx) ||
	    h->side_size != sizeof(struct side_ent) ||
	    h->ret_size != sizeof(struct ret_rec))
		return fail(why, whylen, -EINVAL, "%s", "written by another "
		    "build's layout");
	if (h->n != st->n || h->server_index != st->id.server_index ||
	    h->nblocks != st->id.nblocks ||
	    memcmp(h->cluster_id, st->id.cluster_id, BFT_CLUSTER_ID_LEN) != 0)
		return fail(why, whylen, -EINVAL, "%s", "its identity is not "
		    "the data dir's");
	if (h->nseg > (1u << 24) || h->nside > h->nblocks * 1024 ||
	    h->npages > (UINT64_C(1) << 30) || h->ndropped > BFT_ADDR_MAX_VOL ||
	    h->nsnaps > (UINT64_C(1) << 32) || h->nret > (UINT64_C(1) << 40))
		return fail(why, whylen, -EINVAL, "%s", "implausible sizes");
	return 0;
}

/* The sequence number of s's first record, or 0. */
static uint64_t
first_seq(const struct seg *s, unsigned n)
{
	uint8_t hdr[BFT_REC_HDR_LEN];
	struct bft_rec_hdr h;

	if (bft_pread_all(s->fd, hdr, sizeof hdr, 0) < 0 ||
	    bft_rec_check_hdr(hdr, s->size, n, &h) == BFT_REC_BADHDR)
		return 0;
	return h.seq;
}

/*
 * Sets the segments on disk from the checkpoint's: live bytes for those
 * it lists, retired for older ones it does not (compacted before it was
 * written, their copies durable since); the log from pos_no on is
 * replayed.
 */
static int
segs_apply(struct bft_store *st, const struct ck_hdr *h,
    const struct ck_seg *cs, char *why, size_t whylen)
{
	char name[BFT_SEG_NAME_MAX];
	size_t j = 0;

	for (size_t i = 0; i < st->nseg; i++) {
		struct seg *s = &st->segs[i];
		struct stat sb;

		if (fstat(s->fd, &sb) < 0)
			return fail(why, whylen, -errno, "%s", "fstat failed");
		s->size = s->end = (uint64_t)sb.st_size;
		while (j < h->nseg && cs[j].no < s->no)
			j++;
		bft_seg_name(name, s->no);
		if (j < h->nseg && cs[j].no == s->no) {
			if (s->size < (s->no == h->pos_no ? h->pos_off :
			    cs[j].size))
				return fail(why, whylen, -EINVAL, "%s is "
				    "shorter than the checkpoint says", name);
			if (s->no != h->pos_no && s->size != cs[j].size)
				return fail(why, whylen, -EINVAL, "%s changed "
				    "size since the checkpoint", name);
			/*
			 * A directory emptied and written anew reuses
			 * segment numbers, never sequence numbers.
			 */
			if (s->size > 0 && first_seq(s, st->n) !=
			    cs[j].first_seq)
				return fail(why, whylen, -EINVAL, "%s is not "
				    "the segment the checkpoint saw", name);
			s->live = cs[j].live;
			s->drops = cs[j].drops;
			s->first_seq = cs[j].first_seq;
		} else if (s->no < h->pos_no) {
			s->retired = true;
			st->nretired++;
		}
	}
	return 0;
}

int
st_ckpt_load_undo(struct bft_store *st)
{
	if (unlinkat(st->dirfd, CKPT_FILE, 0) == 0)
		fsync(st->dirfd);
	for (size_t i = 0; i < st->nseg; i++) {
		st->segs[i].live = 0;
		st->segs[i].drops = 0;
		st->segs[i].retired = false;
	}
	st->nretired = 0;
	st->held = 0;
	st->next_seq = 1;
	st_snap_free(st);
	st->replayed = 0;
	/* A torn tail was cut off for good; damage is counted again. */
	st->rp.corrupt_records = st->rp.corrupt_bytes = 0;
	st_side_free(st);
	st_idx_free(st);
	return st_idx_init(st);
}

/* The pages, in ascending order, each made and filled. */
static int
pages_read(struct bft_store *st, struct ck_stream *r, uint64_t npages,
    char *why, size_t whylen)
{
	uint64_t a, prev = 0;
	int err;

	for (uint64_t i = 0; i < npages; i++) {
		if ((err = ck_read(r, &a, sizeof a)) < 0)
			return err;
		if ((a & (IDX_PAGE - 1)) != 0 || !st_addr_ok(st, a) ||
		    (i > 0 && a <= prev))
			return fail(why, whylen, -EINVAL, "%s", "a page "
			    "beyond the volumes or out of order");
		if ((err = st_idx_make(st, a)) < 0 ||
		    (err = ck_read(r, st_idx_page(st, a), IDX_PAGE *
		    sizeof(struct blk_idx))) < 0)
			return err;
		prev = a;
	}
	return 0;
}

/* The dropped volumes, ascending, each one a DROP could name. */
static int
dropped_read(struct bft_store *st, struct ck_stream *r, uint64_t ndropped,
    char *why, size_t whylen)
{
	uint32_t vol, prev = 0;
	int err;

	for (uint64_t i = 0; i < ndropped; i++) {
		if ((err = ck_read(r, &vol, sizeof vol)) < 0)
			return err;
		if (!bft_rec_drop_ok(vol) || (i > 0 && vol <= prev))
			return fail(why, whylen, -EINVAL, "%s", "a dropped "
			    "volume no DROP can name, or out of order");
		if ((err = st_dropped_add(st, vol)) < 0)
			return err;
		prev = vol;
	}
	return 0;
}

/* The boundaries, then the retained records, ascending. */
static int
snaps_read(struct bft_store *st, struct ck_stream *r, const struct ck_hdr *h,
    char *why, size_t whylen)
{
	struct ck_snap cs;
	struct ck_ret cr;
	uint64_t prev = 0;
	int err;

	for (uint64_t i = 0; i < h->nsnaps; i++) {
		if ((err = ck_read(r, &cs, sizeof cs)) < 0)
			return err;
		if (!bft_rec_snap_ok(cs.vol) || cs.g.gen > BFT_GEN_MAX ||
		    bft_store_dropped(st, cs.vol) ||
		    (err = st_snap_load(st, cs.vol, &cs.g)) == -EINVAL)
			return fail(why, whylen, -EINVAL, "%s", "a boundary no "
			    "SNAP can name, or twice");
		if (err < 0)
			return err;
	}
	for (uint64_t i = 0; i < h->nret; i++) {
		if ((err = ck_read(r, &cr, sizeof cr)) < 0)
			return err;
		if (cr.addr < prev ||
		    (err = st_ret_load(st, cr.addr, &cr.r)) == -EINVAL)
			return fail(why, whylen, -EINVAL, "%s", "a retained "
			    "record out of order or beyond the index");
		if (err < 0)
			return err;
		prev = cr.addr;
	}
	return 0;
}

int
st_ckpt_load(struct bft_store *st, uint32_t *seg_no, uint64_t *off,
    char *why, size_t whylen)
{
	struct ck_stream r = { .fd = -1 };
	struct ck_seg *cs = NULL;
	struct side_ent e;
	struct ck_hdr h;
	uint8_t extra;
	int err;

	/* What a crash in the middle of writing one left. */
	unlinkat(st->dirfd, CKPT_TMP, 0);
	r.fd = openat(st->dirfd, CKPT_FILE, O_RDONLY | O_CLOEXEC);
	if (r.fd < 0)
		return fail(why, whylen, -ENOENT, "%s", errno == ENOENT ?
		    "no checkpoint" : strerror(errno));
	if ((r.buf = ck_big_alloc(CK_BUF_LEN)) == NULL) {
		err = fail(why, whylen, -ENOMEM, "%s", "out of memory");
		goto out;
	}
	if ((err = ck_read(&r, &h, sizeof h)) < 0 ||
	    (err = hdr_check(st, &h, why, whylen)) < 0)
		goto out_why;
	if ((cs = calloc(h.nseg + 1, sizeof *cs)) == NULL) {
		err = fail(why, whylen, -ENOMEM, "%s", "out of memory");
		goto out;
	}
	if ((err = ck_read(&r, cs, h.nseg * sizeof *cs)) < 0 ||
	    (err = pages_read(st, &r, h.npages, why, whylen)) < 0 ||
	    (err = st_side_reserve(st, h.nside)) < 0)
		goto out_why;
	for (uint64_t i = 0; i < h.nside; i++) {
		if ((err = ck_read(&r, &e, sizeof e)) < 0)
			goto out_why;
		/* Its block's entry counts it: its page must be here. */
		if (!st_addr_ok(st, e.block) ||
		    st_idx_page(st, e.block) == NULL) {
			err = fail(why, whylen, -EINVAL, "%s", "a side entry "
			    "beyond the disk or its index");
			goto out;
		}
		st_side_insert(st, &e);
	}
	if ((err = dropped_read(st, &r, h.ndropped, why, whylen)) < 0 ||
	    (err = snaps_read(st, &r, &h, why, whylen)) < 0)
		goto out_why;
	if (ck_read(&r, &extra, 1) != -EBADMSG || r.fill != r.pos) {
		err = fail(why, whylen, -EINVAL, "%s", "trailing bytes");
		goto out;
	}
	if ((err = segs_apply(st, &h, cs, why, whylen)) < 0)
		goto out;
	st->next_seq = h.next_seq;
	st->held = h.held;
	*seg_no = h.pos_no;
	*off = h.pos_off;
	goto out;
out_why:
	if (err == -EBADMSG)
		fail(why, whylen, err, "%s", "a chunk is short or fails its "
		    "CRC");
	else if (err != -EINVAL)
		fail(why, whylen, err, "%s", strerror(-err));
out:
	if (err < 0 && st_ckpt_load_undo(st) < 0)
		err = -ENOMEM;
	else if (err < 0 && err != -ENOMEM)
		err = -ENOENT;
	free(cs);
	ck_big_free(r.buf, CK_BUF_LEN);
	close(r.fd);
	return err;
}
