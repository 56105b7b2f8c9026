/*
 * Opening the store: its segments, the identity check (store_identity.c)
 * and the replay of the log into memory; and closing it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "store.h"
#include "store_int.h"
#include "store_log.h"

#define MAX_NBLOCKS	(1ull << 32)

/* Applies one valid record found by replay, which is in rbuf. */
static int
replay_rec(struct bft_store *st, const struct bft_rec_hdr *h, uint64_t loc,
    size_t len)
{
	const struct bft_ts *lc;
	struct bft_hist_meta m;
	struct bft_cand c;
	uint64_t blocks;

	/* In log order, as bft_store_drop_volume() did it. */
	if (h->type == BFT_REC_DROP)
		return st_drop_apply(st, bft_rec_decode_drop(st->rbuf), loc,
		    &blocks);
	if (h->type == BFT_REC_SNAP || h->type == BFT_REC_UNSNAP) {
		st_snap_replayed(st, h, loc);
		return 0;
	}
	/* Written after its DROP by a server that did not refuse it. */
	if (bft_store_dropped(st, bft_addr_vol(h->block)))
		return 0;
	if (st_idx_make(st, h->block) < 0)
		return -ENOMEM;
	lc = &st_idx(st, h->block)->lc_ts;
	/*
	 * A record older than lc is a compaction copy of a retained one
	 * (appends are never older), and a VLC record is never live.
	 */
	if (bft_rec_is_lc(h->type)) {
		bft_rec_decode_lc(st->rbuf, st->n, &c);
		if (h->type == BFT_REC_VLC || bft_ts_cmp(&c.ts, lc) < 0)
			return st_ret_replayed(st, h->block, h->type, &c.ts,
			    loc, 0);
		if (st_ret_reserve_cross(st, h->block, &c.ts) < 0)
			return -ENOMEM;
		if (st_lc_apply(st, h->block, &c, loc) &&
		    (h->flags & BFT_REC_F_HMAC))
			st_idx_mut(st, h->block)->flags |= IDX_HMAC |
			    IDX_HELD_UNKNOWN;
		return 0;
	}
	bft_rec_decode_hist(st->rbuf, st->n, &m);
	if (bft_ts_cmp(&m.ts, lc) < 0)
		return st_ret_replayed(st, h->block, h->type, &m.ts, loc,
		    m.frag_len);
	if (st_side_reserve(st, 1) < 0)
		return -ENOMEM;
	st_hist_apply(st, h->block, &m, loc, len);
	return 0;
}

static void
replay_corrupt(struct bft_store *st, const struct seg *s, uint64_t off,
    uint64_t len, const char *why)
{
	char name[BFT_SEG_NAME_MAX];

	bft_seg_name(name, s->no);
	bft_warn("%s/%s: offset %" PRIu64 ": %s; %" PRIu64 " bytes not "
	    "served", st->dir, name, off, why, len);
	st->rp.corrupt_records++;
	st->rp.corrupt_bytes += len;
}

/*
 * Replays segment i from offset from.  A bad record is skipped when its length is
 * plausible and a good record follows; otherwise it ends the segment,
 * which in the last segment is a torn append and is cut off.
 */
static int
replay_seg(struct bft_store *st, size_t i, uint64_t from, char *err,
    size_t errlen)
{
	struct seg *s = &st->segs[i];
	char name[BFT_SEG_NAME_MAX];
	enum bft_rec_status rs;
	struct bft_rec_hdr h = { 0 }, h2;
	uint64_t off = from, end;
	struct stat sb;
	size_t len;
	int e;

	bft_seg_name(name, s->no);
	if (fstat(s->fd, &sb) < 0)
		goto out_errno;
	s->size = (uint64_t)sb.st_size;
	/* Offsets are 32 bits; nothing this code writes gets that far. */
	end = s->size < UINT32_MAX ? s->size : UINT32_MAX;
	while (off < end) {
		rs = bft_rec_read(s->fd, off, end, st->n, st->rbuf, &h);
		if (rs == BFT_REC_IOERR)
			goto out_errno;
		/* OK and BADSUM both mean the header's length is sound. */
		len = BFT_REC_HDR_LEN + (size_t)h.payload_len +
		    BFT_REC_SUM_LEN;
		if (rs == BFT_REC_OK) {
			if (h.seq < st->replay_min_seq) {
				snprintf(err, errlen, "%s: a record after the "
				    "checkpoint is older than it", name);
				return -ESTALE;
			}
			if (off == 0)
				s->first_seq = h.seq;
			if (h.seq >= st->next_seq)
				st->next_seq = h.seq + 1;
			if (!st_addr_ok(st, h.block)) {
				replay_corrupt(st, s, off, len,
				    "record for a block beyond the disk");
			} else if (replay_rec(st, &h, LOC(s->no, off), len) <
			    0) {
				snprintf(err, errlen, "out of memory replaying"
				    " %s/%s", st->dir, name);
				return -ENOMEM;
			} else {
				st->replayed++;
			}
			off += len;
			continue;
		}
		if (rs == BFT_REC_BADSUM) {
			rs = bft_rec_read(s->fd, off + len, end, st->n,
			    st->rbuf, &h2);
			if (rs == BFT_REC_IOERR)
				goto out_errno;
			if (rs == BFT_REC_OK) {
				replay_corrupt(st, s, off, len,
				    "checksum mismatch, record skipped");
				off += len;
				continue;
			}
		}
		if (i + 1 < st->nseg) {
			replay_corrupt(st, s, off, end - off,
			    "unreadable record ends the segment");
			break;
		}
		bft_warn("%s/%s: torn record at offset %" PRIu64 " (%" PRIu64
		    " bytes) cut off", st->dir, name, off, s->size - off);
		st->rp.torn_records++;
		st->rp.torn_bytes += s->size - off;
		if (ftruncate(s->fd, (off_t)off) < 0 || fsync(s->fd) < 0)
			goto out_errno;
		s->size = off;
		break;
	}
	s->end = off;
	return 0;
out_errno:
	e = errno ? errno : EIO;
	snprintf(err, errlen, "%s/%s: %s", st->dir, name, strerror(e));
	return -e;
}

/*
 * Replays the log after a loaded checkpoint's position.  0 when the
 * checkpoint and the log after it made the index; 1 when they do not fit
 * (why in ck->why); a negative errno with err on failure.
 */
static int
replay_tail(struct bft_store *st, uint32_t from_no, uint64_t from_off,
    char *err, size_t errlen)
{
	struct bft_store_ckpt_info *ck = &st->ck;
	int e = 0;

	/* Every record after the checkpoint was appended after it. */
	st->replay_min_seq = st->next_seq;
	for (size_t i = 0; i < st->nseg && e == 0; i++) {
		uint64_t from = st->segs[i].no == from_no ? from_off : 0;

		if (st->segs[i].no < from_no)
			continue;
		e = replay_seg(st, i, from, ck->why, sizeof ck->why);
		if (e < 0 && e != -ESTALE) {
			snprintf(err, errlen, "%s", ck->why);
			return e;
		}
		ck->tail_bytes += st->segs[i].end - from;
	}
	st->replay_min_seq = 0;
	/* What is pruned away need not be where the checkpoint said. */
	if (e == 0)
		st_snap_prune_all(st);
	if (e < 0 || !st_ckpt_locs_ok(st, ck->why, sizeof ck->why))
		return 1;
	ck->loaded = true;
	/* Compacted before it, their copies durable since. */
	if (st->nretired > 0 && ((e = st_reuse_before_unlink(st)) < 0 ||
	    (e = st_unlink_retired(st)) < 0))
		bft_warn("%s: removing compacted segments: %s", st->dir,
		    strerror(-e));
	return 0;
}

/*
 * Builds the index: from the checkpoint and the log after it when there
 * is a usable one, else from the whole log.
 */
static int
replay(struct bft_store *st, char *err, size_t errlen)
{
	struct bft_store_ckpt_info *ck = &st->ck;
	uint32_t from_no = 0;
	uint64_t from_off = 0;
	int e;

	e = st_ckpt_load(st, &from_no, &from_off, ck->why, sizeof ck->why);
	/* Before anything reads records: a reused file's earlier use. */
	if (e != -ENOMEM && st_reuse_cut(st, e == 0 ? from_no : 0, err,
	    errlen) < 0)
		return -EIO;
	if (e == 0 && st_snap_prescan(st, from_no, from_off, err, errlen) < 0)
		return -EIO;
	if (e == 0 && (e = replay_tail(st, from_no, from_off, err,
	    errlen)) <= 0)
		return e;
	if ((e == 1 && st_ckpt_load_undo(st) < 0) || e == -ENOMEM) {
		snprintf(err, errlen, "%s: out of memory", st->dir);
		return -ENOMEM;
	}
	if (strcmp(ck->why, "no checkpoint") != 0)
		bft_warn("%s: index checkpoint not usable: %s; replaying the "
		    "whole log", st->dir, ck->why);
	ck->tail_bytes = 0;
	if (st_snap_prescan(st, 0, 0, err, errlen) < 0)
		return -EIO;
	for (size_t i = 0; i < st->nseg; i++) {
		if (replay_seg(st, i, 0, err, errlen) < 0)
			return -EIO;
		ck->tail_bytes += st->segs[i].end;
	}
	st_snap_prune_all(st);
	return 0;
}

static int
seg_cmp(const void *a, const void *b)
{
	const struct seg *x = a, *y = b;

	return x->no < y->no ? -1 : x->no > y->no;
}

/* Finds the segment files and opens them, in log order. */
static int
open_segs(struct bft_store *st, char *err, size_t errlen)
{
	struct dirent *de;
	DIR *d;
	int fd, e = 0;

	if ((fd = dup(st->dirfd)) < 0 || (d = fdopendir(fd)) == NULL) {
		e = -errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "%s: %s", st->dir, strerror(-e));
		return e;
	}
	while ((de = readdir(d)) != NULL) {
		uint32_t no;

		if (!bft_seg_parse_name(de->d_name, &no))
			continue;
		if ((e = st_seg_reserve(st)) < 0)
			break;
		st->segs[st->nseg++] = (struct seg){ .no = no, .fd = -1 };
	}
	closedir(d);
	if (e < 0) {
		snprintf(err, errlen, "%s: %s", st->dir, strerror(-e));
		return e;
	}
	if (st->nseg > 0)
		qsort(st->segs, st->nseg, sizeof *st->segs, seg_cmp);
	for (size_t i = 0; i < st->nseg; i++) {
		char name[BFT_SEG_NAME_MAX];

		bft_seg_name(name, st->segs[i].no);
		st->segs[i].fd = openat(st->dirfd, name, O_RDWR | O_CLOEXEC);
		if (st->segs[i].fd < 0) {
			e = -errno;
			snprintf(err, errlen, "%s/%s: %s", st->dir, name,
			    strerror(-e));
			return e;
		}
	}
	return 0;
}

static int
check_params(const struct bft_store_identity *id,
    const struct bft_store_opts *o, char *err, size_t errlen)
{
	if (id->n == 0 || id->n > BFT_MAX_N || id->server_index >= id->n ||
	    id->block_size == 0 || id->nblocks == 0 ||
	    id->nblocks > MAX_NBLOCKS)
		snprintf(err, errlen, "store: bad geometry (n %" PRIu32
		    ", index %" PRIu32 ", block size %" PRIu32 ", %" PRIu64
		    " blocks)", id->n, id->server_index, id->block_size,
		    id->nblocks);
	else if (o != NULL && (o->segment_size > BFT_STORE_MAX_SEGMENT ||
	    o->compact_pct > 100))
		snprintf(err, errlen, "store: segment size %" PRIu64 " or "
		    "compaction threshold %u%% out of range", o->segment_size,
		    o->compact_pct);
	else
		return 0;
	return -EINVAL;
}

int
st_open_private(int dirfd, const char *name, int flags)
{
	int fd = openat(dirfd, name, flags | O_CREAT | O_CLOEXEC, 0600);

	if (fd >= 0 && fchmod(fd, 0600) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

struct bft_store *
bft_store_open_opts(const char *dir, const struct bft_store_identity *id,
    const struct bft_store_opts *opts, char *err, size_t errlen)
{
	struct bft_store *st;
	bool made;
	int e;

	if (check_params(id, opts, err, errlen) < 0)
		return NULL;
	if ((st = calloc(1, sizeof *st)) == NULL)
		goto out_nomem;
	st->dirfd = -1;
	if ((st->dir = strdup(dir)) == NULL)
		goto out_nomem;
	st->id = *id;
	st->n = id->n;
	st->ckpt_every = opts && opts->checkpoint_off ? 0 :
	    opts && opts->checkpoint_bytes ? opts->checkpoint_bytes :
	    BFT_STORE_DEFAULT_CKPT;
	st->seg_max = opts && opts->segment_size ? opts->segment_size :
	    BFT_STORE_DEFAULT_SEGMENT;
	st->compact_pct = opts && opts->compact_pct ? opts->compact_pct :
	    BFT_STORE_DEFAULT_PCT;
	st->pc_window = opts && opts->page_cache_all ? 0 :
	    opts && opts->page_cache_bytes ? opts->page_cache_bytes :
	    st_default_page_cache();
	st->next_seq = 1;
	/* Ours alone whatever the umask; one made by hand stays as it is. */
	if (!(made = mkdir(dir, 0700) == 0) && errno != EEXIST)
		goto out_errno;
	if ((st->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		goto out_errno;
	if (made && fchmod(st->dirfd, 0700) < 0)
		goto out_errno;
	if (flock(st->dirfd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK)
			goto out_errno;
		snprintf(err, errlen, "data dir %s is in use by another "
		    "process", dir);
		goto out_close;
	}
	if (open_segs(st, err, errlen) < 0 ||
	    st_identity_check(st, err, errlen) < 0)
		goto out_close;
	if ((e = st_spares_open(st)) < 0) {
		errno = -e;
		goto out_errno;
	}
	st->wbuf = malloc(bft_rec_max_len(st->n));
	st->rbuf = malloc(bft_rec_max_len(st->n));
	st->mbuf = malloc(bft_rec_max_len(st->n));
	if (st_idx_init(st) < 0 || st->wbuf == NULL || st->rbuf == NULL ||
	    st->mbuf == NULL || st_mc_init(st, opts && opts->cache_off ? 0 :
	    opts && opts->cache_bytes ? opts->cache_bytes :
	    BFT_STORE_DEFAULT_CACHE) < 0)
		goto out_nomem;
	if (replay(st, err, errlen) < 0)
		goto out_close;
	/* A checkpoint holds no per-volume sums: they come from its index. */
	st_idx_recount(st);
	st_ret_recount(st);
	if (st->nseg == 0 && (e = st_seg_create(st)) < 0) {
		errno = -e;
		goto out_errno;
	}
	st->opened = true;
	return st;
out_errno:
	snprintf(err, errlen, "%s: %s", dir, strerror(errno));
	goto out_close;
out_nomem:
	snprintf(err, errlen, "%s: out of memory", dir);
out_close:
	bft_store_close(st);
	return NULL;
}

struct bft_store *
bft_store_open(const char *dir, const struct bft_store_identity *id,
    char *err, size_t errlen)
{
	return bft_store_open_opts(dir, id, NULL, err, errlen);
}

void
bft_store_close(struct bft_store *st)
{
	int err;

	if (st == NULL)
		return;
	if (st->opened) {
		st_ckpt_wait(st);
		/* Nothing left past its records, as in a new file. */
		if (st->nseg > 0 && (err = st_seg_seal(&st->segs[st->nseg -
		    1])) < 0)
			bft_error("%s: cutting the active segment: %s", st->dir,
			    strerror(-err));
		if ((err = bft_store_sync(st)) < 0)
			bft_error("%s: sync on close: %s", st->dir,
			    strerror(-err));
		/* A restart then replays nothing. */
		else if ((err = st_ckpt_write_now(st)) < 0)
			bft_error("%s: index checkpoint on close: %s", st->dir,
			    strerror(-err));
	}
	st_pagecache_wait(st);
	for (size_t i = 0; i < st->nseg; i++)
		if (st->segs[i].fd >= 0)
			close(st->segs[i].fd);
	if (st->dirfd >= 0)
		close(st->dirfd);
	st_side_free(st);
	st_mc_free(st);
	st_snap_free(st);
	st_idx_free(st);
	free(st->segs);
	free(st->wbuf);
	free(st->rbuf);
	free(st->mbuf);
	free(st->dir);
	free(st);
}

bool
bft_store_created(const struct bft_store *st)
{
	return st->created;
}
