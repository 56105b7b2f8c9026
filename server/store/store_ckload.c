/*
 * Loading the index checkpoint at open (store_ckpt.c says what it is
 * and why it gives what a full replay gives): every check that makes
 * it refused, and the undoing of a load that failed, so that open can
 * replay the whole log from an empty index instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_ckpt.h"
#include "store_ckstream.h"
#include "store_int.h"
#include "store_log.h"

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
