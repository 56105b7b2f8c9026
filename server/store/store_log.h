/*
 * The store's log formats: CRC32C, records and segment file names.
 * store.c decides what to write and when; this file only knows how the
 * bytes are laid out and checked.
 *
 * A record is a 32-byte header, a payload and a CRC32C of both:
 *
 *	0  magic "BFTR"     4  type      5  version    6  flags (2)
 *	8  payload length  12  meta CRC 16  sequence  24  block number
 *
 * all little-endian.  The meta CRC (version 2; zero in version 1) is a
 * CRC32C of the header, its own four bytes left out, and the payload's
 * metadata: everything but a HIST record's fragment.  It lets the store
 * read and check a record's metadata without its fragment, which is
 * what keeps that metadata out of memory (docs/store.md).  A HIST payload is ts, nh, vec[n], cc[n],
 * frag_len and the fragment; an LC payload is ts, nonce, vec[n].  Only
 * the n entries a cluster uses are stored, so a record's length follows
 * from its type, n and frag_len, which is what makes a torn or damaged
 * header recognisable.
 *
 * A DROP record (format 6) says that the volume in its payload, 8 bytes,
 * was forgotten at that point of the log: replay removes it from the
 * index as bft_store_drop_volume() did.  Its block is the volume's
 * block 0; a record whose two disagree, or that names volume 0 or a
 * reserved one, is damaged.  Its meta CRC covers the whole payload.
 *
 * Format 7 adds three (store_snap.c, store_view.c).  A SNAP record
 * adds a snapshot boundary of a volume and an UNSNAP record removes
 * one: the payload is the volume (8 bytes), the generation (8) and the
 * event's id (8), the sequence number it was first written under, which
 * copies keep, so that replay can order the events of one boundary
 * whatever compaction did to their places.  Their block is the volume's
 * block 0, and a reserved volume or a generation above BFT_GEN_MAX is
 * damage.  A VLC record is laid out as an LC record: a reader's
 * write-back into a snapshot's view, never the block's live lc.
 *
 * Flags are zero but on an LC record a key rotation's REAUTH wrote
 * (store_relabel.c), which may say BFT_REC_F_HMAC: its timestamp MAC
 * and MAC vector are Hist[lc.ts]'s too, whose own record keeps the
 * ones it was stored with.  Only a finalized store (format 8) holds
 * one; release 0.2.0 refuses those, and would take the flag for damage.
 */
#ifndef BFTBLK_STORE_LOG_H
#define BFTBLK_STORE_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define BFT_REC_HDR_LEN		32u
#define BFT_REC_SUM_LEN		4u
#define BFT_REC_MAGIC		0x52544642u	/* "BFTR" */
#define BFT_REC_VERSION		2u	/* what is written */
#define BFT_REC_VERSION_V1	1u	/* still read: no meta CRC */

enum bft_rec_type {
	BFT_REC_HIST = 1,
	BFT_REC_LC = 2,
	BFT_REC_DROP = 3,
	BFT_REC_SNAP = 4,
	BFT_REC_UNSNAP = 5,
	BFT_REC_VLC = 6,
};

/* Whether a record of type is laid out as an LC record. */
static inline bool
bft_rec_is_lc(unsigned type)
{
	return type == BFT_REC_LC || type == BFT_REC_VLC;
}

/* What bft_rec_check() and bft_rec_read() found at an offset. */
enum bft_rec_status {
	BFT_REC_OK,
	BFT_REC_BADHDR,		/* no plausible header: length unknown */
	BFT_REC_SHORT,		/* plausible header, record runs past end */
	BFT_REC_BADSUM,		/* fits, but checksum or body is wrong */
	BFT_REC_IOERR,		/* pread failed; errno says why */
};

#define BFT_REC_F_HMAC		1u

struct bft_rec_hdr {
	unsigned type;
	unsigned version;
	unsigned flags;
	uint32_t payload_len;
	uint64_t seq;
	uint64_t block;
};

/* CRC32C (Castagnoli), chainable: pass 0 first, then the last result. */
uint32_t bft_crc32c(uint32_t crc, const void *buf, size_t len);
/* The table-driven version, always available. */
uint32_t bft_crc32c_sw(uint32_t crc, const void *buf, size_t len);
/* Whether bft_crc32c_hw() may be called on this CPU. */
bool bft_crc32c_hw_available(void);
/* The SSE4.2 version; only when bft_crc32c_hw_available(). */
uint32_t bft_crc32c_hw(uint32_t crc, const void *buf, size_t len);

/* Lengths of payloads and whole records for a cluster of n servers. */
size_t bft_rec_hist_meta_len(unsigned n);
size_t bft_rec_hist_len(unsigned n, uint32_t frag_len);
size_t bft_rec_lc_len(unsigned n);
size_t bft_rec_drop_len(void);
size_t bft_rec_snap_len(void);
size_t bft_rec_max_len(unsigned n);
/* Where a HIST record's fragment starts, from the record's start. */
size_t bft_rec_frag_off(unsigned n);

/* Encode a complete record into buf; return its length. */
size_t bft_rec_encode_hist(uint8_t *buf, unsigned n, uint64_t seq,
			   uint64_t block, const struct bft_hist_meta *m,
			   const uint8_t *frag);
size_t bft_rec_encode_lc(uint8_t *buf, unsigned n, uint64_t seq,
			 uint64_t block, const struct bft_cand *c);
size_t bft_rec_encode_drop(uint8_t *buf, unsigned n, uint64_t seq,
			   uint32_t vol);
/* type: BFT_REC_LC or BFT_REC_VLC. */
size_t bft_rec_encode_lc_as(uint8_t *buf, unsigned n, unsigned type,
			    uint64_t seq, uint64_t block,
			    const struct bft_cand *c);
/* A SNAP or UNSNAP record (type) of boundary gen of vol. */
size_t bft_rec_encode_snap(uint8_t *buf, unsigned n, unsigned type,
			   uint64_t seq, uint32_t vol, uint64_t gen,
			   uint64_t id);
/* Give an encoded LC record flags (BFT_REC_F_*) and new checksums. */
void bft_rec_set_flags(uint8_t *rec, size_t len, unsigned n, unsigned flags);
/* Give an encoded record a new sequence number and checksums. */
void bft_rec_restamp(uint8_t *rec, size_t len, unsigned n, uint64_t seq);

/* How many bytes from a record's start its metadata takes. */
size_t bft_rec_meta_len(unsigned type, unsigned n);
/*
 * Checks a record's metadata alone: the header and the first
 * bft_rec_meta_len(type, n) bytes at buf, by the meta CRC.  BADSUM when
 * it does not match, BADHDR for an impossible header; a version 1
 * record has no meta CRC, and is BADHDR here: read it whole instead.
 */
enum bft_rec_status bft_rec_check_meta(const uint8_t *buf, size_t avail,
				       unsigned n, struct bft_rec_hdr *h);

/*
 * Checks the header at buf (avail bytes present).  BADHDR if the header
 * is impossible, SHORT if the record is longer than avail, else OK.
 */
enum bft_rec_status bft_rec_check_hdr(const uint8_t *buf, size_t avail,
				      unsigned n, struct bft_rec_hdr *h);
/* Checks a whole record in buf of exactly its length: header, sum, body. */
enum bft_rec_status bft_rec_check(const uint8_t *buf, size_t len, unsigned n,
				  struct bft_rec_hdr *h);
/*
 * Reads and checks the record at off of a file whose valid bytes end at
 * end, into buf of bft_rec_max_len(n) bytes.
 */
enum bft_rec_status bft_rec_read(int fd, uint64_t off, uint64_t end,
				 unsigned n, uint8_t *buf,
				 struct bft_rec_hdr *h);

/* Decode the payload of a record bft_rec_check() accepted. */
void bft_rec_decode_hist(const uint8_t *rec, unsigned n,
			 struct bft_hist_meta *m);
void bft_rec_decode_lc(const uint8_t *rec, unsigned n, struct bft_cand *c);
uint32_t bft_rec_decode_drop(const uint8_t *rec);
void bft_rec_decode_snap(const uint8_t *rec, uint32_t *vol, uint64_t *gen,
			 uint64_t *id);
/* Whether a DROP of vol may be: not the cluster's disk, not reserved. */
bool bft_rec_drop_ok(uint32_t vol);
/* Whether vol may have snapshots: any volume but the reserved ones. */
bool bft_rec_snap_ok(uint32_t vol);

/* Whole-buffer I/O: 0 or a negative errno (-EIO for a short read). */
int bft_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
int bft_pread_all(int fd, void *buf, size_t len, uint64_t off);

/* Segment file names: seg-NNNNNN.log, numbered from 1. */
#define BFT_SEG_NAME_MAX	32
void bft_seg_name(char *buf, uint32_t no);
bool bft_seg_parse_name(const char *name, uint32_t *no);

#endif
