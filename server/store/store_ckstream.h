/*
 * The chunked, checksummed stream the index checkpoint is written as
 * (store_ckpt.c): chunks of at most CK_CHUNK bytes, each followed by a
 * CRC32C of its number and its bytes, so that a torn or damaged file is
 * refused rather than loaded.
 */
#ifndef BFTBLK_STORE_CKSTREAM_H
#define BFTBLK_STORE_CKSTREAM_H

#include <stddef.h>
#include <stdint.h>

#define CK_CHUNK	(1u << 20)
/* A stream's buffer: one chunk and its CRC. */
#define CK_BUF_LEN	(CK_CHUNK + sizeof(uint32_t))

/* The chunked stream, written or read through one buffer. */
struct ck_stream {
	int fd;
	uint8_t *buf;			/* CK_BUF_LEN bytes */
	size_t fill, pos;		/* bytes in buf; read position */
	uint64_t chunk;			/* chunks so far */
	uint64_t off;			/* in the file */
};

/*
 * Big, short-lived buffers straight from mmap, so that freeing them
 * gives the memory back.
 */
void *ck_big_alloc(size_t len);
void ck_big_free(void *p, size_t len);

/* Appends len bytes; a full chunk is written out. 0 or -errno. */
int ck_write(struct ck_stream *w, const void *src, size_t len);
/* Writes the last, partial chunk. */
int ck_flush(struct ck_stream *w);
/* Reads len bytes: -EBADMSG when a chunk is short or fails its CRC. */
int ck_read(struct ck_stream *r, void *dst, size_t len);

#endif
