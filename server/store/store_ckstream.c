/*
 * The index checkpoint's file format below its contents: a stream of
 * chunks of at most CK_CHUNK bytes, each followed by a CRC32C of its
 * number and bytes (store_ckstream.h).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "store_ckstream.h"
#include "store_log.h"

/*
 * Big, short-lived buffers (the index's copy, the chunk buffer) come
 * straight from mmap, so that freeing them gives the memory back: from
 * malloc, glibc's rising mmap threshold put the second copy in the heap,
 * where it stayed resident (10 MiB at 8 GiB of disk, 2026-11-25).
 */
void *
ck_big_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void
ck_big_free(void *p, size_t len)
{
	if (p != NULL)
		munmap(p, len);
}

static uint32_t
chunk_crc(uint64_t no, const uint8_t *p, size_t len)
{
	return bft_crc32c(bft_crc32c(0, &no, sizeof no), p, len);
}

int
ck_flush(struct ck_stream *w)
{
	uint32_t crc;
	int err;

	if (w->fill == 0)
		return 0;
	crc = chunk_crc(w->chunk++, w->buf, w->fill);
	memcpy(w->buf + w->fill, &crc, sizeof crc);
	if ((err = bft_pwrite_all(w->fd, w->buf, w->fill + sizeof crc,
	    w->off)) < 0)
		return err;
	w->off += w->fill + sizeof crc;
	w->fill = 0;
	return 0;
}

int
ck_write(struct ck_stream *w, const void *src, size_t len)
{
	const uint8_t *p = src;
	int err;

	while (len > 0) {
		size_t k = CK_CHUNK - w->fill < len ? CK_CHUNK - w->fill : len;

		memcpy(w->buf + w->fill, p, k);
		w->fill += k;
		p += k;
		len -= k;
		if (w->fill == CK_CHUNK && (err = ck_flush(w)) < 0)
			return err;
	}
	return 0;
}

/* Reads the next chunk: -EBADMSG when it is short or fails its CRC. */
static int
ck_fill(struct ck_stream *r)
{
	uint8_t *p = r->buf;
	uint32_t crc;
	ssize_t got;
	size_t have = 0;

	/* A chunk is CK_CHUNK bytes and its CRC, or less at the end. */
	while (have < CK_CHUNK + sizeof crc) {
		got = pread(r->fd, p + have, CK_CHUNK + sizeof crc - have,
		    (off_t)(r->off + have));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		have += (size_t)got;
	}
	if (have <= sizeof crc)
		return -EBADMSG;
	memcpy(&crc, p + have - sizeof crc, sizeof crc);
	if (crc != chunk_crc(r->chunk, p, have - sizeof crc))
		return -EBADMSG;
	r->chunk++;
	r->off += have;
	r->fill = have - sizeof crc;
	r->pos = 0;
	return 0;
}

int
ck_read(struct ck_stream *r, void *dst, size_t len)
{
	uint8_t *p = dst;
	int err;

	while (len > 0) {
		size_t k;

		if (r->pos == r->fill && (err = ck_fill(r)) < 0)
			return err;
		k = r->fill - r->pos < len ? r->fill - r->pos : len;
		memcpy(p, r->buf + r->pos, k);
		r->pos += k;
		p += k;
		len -= k;
	}
	return 0;
}

