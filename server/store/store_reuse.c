/*
 * The files of compacted segments taken again for new segments
 * (store_reuse.h, docs/store.md "Reused segment files").
 *
 * Unlinking a compacted segment gives its pages back, and the next
 * segment's appends take new ones: the kernel allocates and zeroes
 * them, the filesystem allocates blocks, and under a host that reclaims
 * freed guest memory each new page faults there too.  Measured with
 * tests/tools/profile-overwrite.sh, that made an overwrite cost the
 * servers 1.9 times the fill's CPU (docs/performance.md).  Writing the
 * next segment over a compacted one's file, whose pages are still
 * cached, costs what the fill does.
 *
 * The price is that such a file holds, past the end of its new records,
 * records of its earlier use, which are as well formed as any.  Replay
 * tells them apart by sequence number (bft_rec_order): every append
 * takes the next one, so the new records all come after every record
 * of the earlier use.  Three rules make that enough:
 *
 *  - A file becomes a spare only once its first page is zeroed, and
 *    that write has reached the disk (sync_file_range) before the
 *    rename that makes it one.  A segment made from it that crashed
 *    before its first record reached the disk reads as empty.
 *  - When a reused segment is sealed its file is cut to its records,
 *    and it is marked for the next sync, so that only the segments
 *    written since the last index checkpoint can still hold an earlier
 *    use past their end.
 *  - A segment leaves the log only after the active one was synced
 *    (the background job syncs every dirty segment first; open syncs
 *    the last one before removing any): so while a reused segment's
 *    first records may not be on disk yet, the segment before it is
 *    still there, and its records are newer than any the earlier use
 *    wrote.  Replay starts its walk one segment early for that.
 *
 * Release 0.2.0 knows none of this, so files are reused only in a data
 * directory finalized for this release (BFT_FEAT_SEGMENT_REUSE), which
 * 0.2.0 refuses to open.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "featureset.h"
#include "log.h"
#include "store_int.h"
#include "store_reuse.h"

/* The first page: a spare's first record header is in it. */
#define SPARE_ZERO	4096u

enum bft_rec_order
bft_rec_order(enum bft_rec_status rs, uint64_t seq, uint64_t prev)
{
	if (rs == BFT_REC_BADSUM)
		return BFT_ORDER_SKIP;
	if (rs != BFT_REC_OK)
		return BFT_ORDER_END;
	return seq > prev ? BFT_ORDER_NEXT : BFT_ORDER_STALE;
}

void
bft_spare_name(char *buf, uint32_t no)
{
	snprintf(buf, BFT_SEG_NAME_MAX, "spare-%06" PRIu32, no);
}

bool
bft_spare_parse_name(const char *name, uint32_t *no)
{
	char canon[BFT_SEG_NAME_MAX];
	unsigned long v;
	char *end;

	if (strncmp(name, "spare-", 6) != 0 || name[6] < '0' ||
	    name[6] > '9')
		return false;
	errno = 0;
	v = strtoul(name + 6, &end, 10);
	if (errno != 0 || *end != '\0' || v == 0 || v >= UINT32_MAX)
		return false;
	bft_spare_name(canon, (uint32_t)v);
	if (strcmp(canon, name) != 0)
		return false;
	*no = (uint32_t)v;
	return true;
}

bool
st_reuse_on(const struct bft_store *st)
{
	return bft_feature_usable(BFT_FEAT_SEGMENT_REUSE, st->finalized);
}

/*
 * Whether nine in ten of the file's pages are in the page cache.  A
 * record's append covers pages only in part, so an append over a page
 * that is not cached reads it from the disk first, on the event loop:
 * a file whose pages went (behind --page-cache-mb, or to the kernel's
 * reclaim) is worth less than a new one, and is unlinked instead.
 * Measured at 8 GiB (docs/performance.md): overwrites at 1.55 times the
 * fill's CPU, half the loop's time waiting in ext4_read_bh_lock.
 */
static bool
mostly_cached(int fd)
{
	long pg = sysconf(_SC_PAGESIZE);
	unsigned char *vec = NULL;
	size_t npages, resident = 0;
	struct stat sb;
	void *p;

	if (pg <= 0 || fstat(fd, &sb) < 0 || sb.st_size <= 0)
		return false;
	npages = ((size_t)sb.st_size + (size_t)pg - 1) / (size_t)pg;
	p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return false;
	if ((vec = malloc(npages)) != NULL &&
	    mincore(p, (size_t)sb.st_size, vec) == 0)
		for (size_t i = 0; i < npages; i++)
			resident += vec[i] & 1;
	free(vec);
	munmap(p, (size_t)sb.st_size);
	return resident * 10 >= npages * 9;
}

int
st_spare_make(int dirfd, uint32_t no)
{
	static const uint8_t zero[SPARE_ZERO];
	char name[BFT_SEG_NAME_MAX], spare[BFT_SEG_NAME_MAX];
	int fd, e = 0;

	bft_seg_name(name, no);
	bft_spare_name(spare, no);
	if ((fd = openat(dirfd, name, O_RDWR | O_CLOEXEC)) < 0)
		return -errno;
	if (!mostly_cached(fd)) {
		close(fd);
		return -ENODATA;
	}
	if ((e = bft_pwrite_all(fd, zero, sizeof zero, 0)) == 0 &&
	    sync_file_range(fd, 0, sizeof zero, SYNC_FILE_RANGE_WAIT_BEFORE |
	    SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) < 0)
		e = -errno;
	close(fd);
	if (e == 0 && renameat(dirfd, name, dirfd, spare) < 0)
		e = -errno;
	return e;
}

int
st_spare_take(struct bft_store *st, uint32_t no)
{
	char name[BFT_SEG_NAME_MAX], spare[BFT_SEG_NAME_MAX];
	int fd;

	bft_seg_name(name, no);
	while (st->nspares > 0) {
		bft_spare_name(spare, st->spares[--st->nspares]);
		if (renameat2(st->dirfd, spare, st->dirfd, name,
		    RENAME_NOREPLACE) < 0) {
			bft_warn("%s/%s: taking it for %s: %s; removing it",
			    st->dir, spare, name, strerror(errno));
			unlinkat(st->dirfd, spare, 0);
			continue;
		}
		if ((fd = openat(st->dirfd, name, O_RDWR | O_CLOEXEC)) >= 0) {
			st->reused++;
			return fd;
		}
		bft_warn("%s/%s: %s; making a new file", st->dir, name,
		    strerror(errno));
		unlinkat(st->dirfd, name, 0);
		break;
	}
	return -1;
}

void
st_spares_add(struct bft_store *st, const uint32_t *nos, size_t n)
{
	char spare[BFT_SEG_NAME_MAX];

	for (size_t i = 0; i < n; i++) {
		if (st->nspares < BFT_STORE_MAX_SPARES) {
			st->spares[st->nspares++] = nos[i];
			continue;
		}
		bft_spare_name(spare, nos[i]);
		unlinkat(st->dirfd, spare, 0);
	}
}

int
st_spares_open(struct bft_store *st)
{
	char spare[BFT_SEG_NAME_MAX];
	struct dirent *de;
	uint32_t no;
	DIR *d;
	int fd;

	if ((fd = dup(st->dirfd)) < 0)
		return -errno;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d)) != NULL) {
		if (!bft_spare_parse_name(de->d_name, &no))
			continue;
		if (st_reuse_on(st) && st->nspares < BFT_STORE_MAX_SPARES) {
			st->spares[st->nspares++] = no;
			continue;
		}
		bft_spare_name(spare, no);
		if (unlinkat(st->dirfd, spare, 0) < 0 && errno != ENOENT) {
			int e = -errno;

			closedir(d);
			return e;
		}
		st->dir_dirty = true;
	}
	closedir(d);
	if (st->nspares > 0)
		bft_log("%s: %zu spare segment files kept for reuse", st->dir,
		    st->nspares);
	return 0;
}

int
st_spares_drop(struct bft_store *st)
{
	char spare[BFT_SEG_NAME_MAX];

	while (st->nspares > 0) {
		bft_spare_name(spare, st->spares[--st->nspares]);
		if (unlinkat(st->dirfd, spare, 0) < 0 && errno != ENOENT)
			return -errno;
		st->dir_dirty = true;
	}
	return 0;
}

int
st_seg_seal(struct seg *s)
{
	if (!s->reused)
		return 0;
	if (ftruncate(s->fd, (off_t)s->size) < 0)
		return -errno;
	s->reused = false;
	s->dirty = true;
	return 0;
}

/*
 * Checks the metadata of the record at off (the whole record for a
 * version 1 one, which has no meta CRC); its header in h.
 */
static enum bft_rec_status
meta_check(struct bft_store *st, int fd, uint64_t off, uint64_t end,
    struct bft_rec_hdr *h)
{
	uint8_t hdr[BFT_REC_HDR_LEN];
	enum bft_rec_status rs;
	size_t meta;

	if (bft_pread_all(fd, hdr, sizeof hdr, off) < 0)
		return BFT_REC_IOERR;
	rs = bft_rec_check_hdr(hdr, (size_t)(end - off), st->n, h);
	if (rs != BFT_REC_OK)
		return rs;
	meta = bft_rec_meta_len(h->type, st->n);
	if (bft_pread_all(fd, st->mbuf, meta, off) < 0)
		return BFT_REC_IOERR;
	rs = bft_rec_check_meta(st->mbuf, meta, st->n, h);
	if (rs == BFT_REC_BADHDR && hdr[5] == BFT_REC_VERSION_V1)
		rs = bft_rec_read(fd, off, end, st->n, st->rbuf, h);
	return rs;
}

static bool
zero_hdr(int fd)
{
	uint8_t hdr[BFT_REC_HDR_LEN];

	if (bft_pread_all(fd, hdr, sizeof hdr, 0) < 0)
		return false;
	for (size_t i = 0; i < sizeof hdr; i++)
		if (hdr[i] != 0)
			return false;
	return true;
}

/* Walks segment s in order from its start; cuts an earlier use off. */
static int
cut_seg(struct bft_store *st, struct seg *s, uint64_t *prev, char *err,
    size_t errlen)
{
	char name[BFT_SEG_NAME_MAX];
	enum bft_rec_status rs;
	struct bft_rec_hdr h;
	uint64_t off = 0, end;
	struct stat sb;

	bft_seg_name(name, s->no);
	if (fstat(s->fd, &sb) < 0)
		goto out_errno;
	end = (uint64_t)sb.st_size < UINT32_MAX ? (uint64_t)sb.st_size :
	    UINT32_MAX;
	while (off + BFT_REC_HDR_LEN <= end) {
		if ((rs = meta_check(st, s->fd, off, end, &h)) ==
		    BFT_REC_IOERR)
			goto out_errno;
		switch (bft_rec_order(rs, h.seq, *prev)) {
		case BFT_ORDER_NEXT:
			*prev = h.seq;
			/* FALLTHROUGH */
		case BFT_ORDER_SKIP:
			off += BFT_REC_HDR_LEN + (uint64_t)h.payload_len +
			    BFT_REC_SUM_LEN;
			continue;
		case BFT_ORDER_STALE:
		out_cut:
			bft_log("%s/%s: %" PRIu64 " bytes from offset %" PRIu64
			    " are the file's earlier use; cut off", st->dir,
			    name, (uint64_t)sb.st_size - off, off);
			st->rp.stale_segments++;
			st->rp.stale_bytes += (uint64_t)sb.st_size - off;
			if (ftruncate(s->fd, (off_t)off) < 0 ||
			    fsync(s->fd) < 0)
				goto out_errno;
			/* A checkpoint's load set them from the file. */
			if (s->size > off)
				s->size = off;
			if (s->end > off)
				s->end = off;
			return 0;
		case BFT_ORDER_END:
			/* A spare's zeroed first page: no record yet. */
			if (off == 0 && rs == BFT_REC_BADHDR &&
			    s == &st->segs[st->nseg - 1] && zero_hdr(s->fd))
				goto out_cut;
			return 0;
		}
	}
	return 0;
out_errno:
	snprintf(err, errlen, "%s/%s: %s", st->dir, name,
	    strerror(errno ? errno : EIO));
	return -EIO;
}

int
st_reuse_cut(struct bft_store *st, uint32_t from_no, char *err,
    size_t errlen)
{
	uint64_t prev = 0;
	size_t first = 0;
	int e;

	if (!st_reuse_on(st))
		return 0;
	while (first + 1 < st->nseg && st->segs[first + 1].no <= from_no)
		first++;
	/* One segment early: its records bound the next one's (above). */
	if (first > 0)
		first--;
	for (size_t i = first; i < st->nseg; i++)
		if ((e = cut_seg(st, &st->segs[i], &prev, err, errlen)) < 0)
			return e;
	return 0;
}

int
st_reuse_before_unlink(struct bft_store *st)
{
	struct seg *s;

	if (!st_reuse_on(st) || st->nseg == 0)
		return 0;
	s = &st->segs[st->nseg - 1];
	st->fsyncs++;
	if (fdatasync(s->fd) < 0)
		return -errno;
	s->dirty = false;
	return 0;
}
