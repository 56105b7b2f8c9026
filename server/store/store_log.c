/*
 * The store's on-disk formats; see store_log.h for the record layout.
 * Their checksum, CRC32C, is store_crc.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_log.h"

static void
put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void
put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static uint64_t
get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

#define TS_LEN	(16u + BFT_MAC_LEN)

size_t
bft_rec_hist_meta_len(unsigned n)
{
	return TS_LEN + BFT_HASH_LEN + (size_t)n * (BFT_MAC_LEN + BFT_HASH_LEN)
	    + 4;
}

static size_t
lc_payload_len(unsigned n)
{
	return TS_LEN + BFT_NONCE_LEN + (size_t)n * BFT_MAC_LEN;
}

size_t
bft_rec_hist_len(unsigned n, uint32_t frag_len)
{
	return BFT_REC_HDR_LEN + bft_rec_hist_meta_len(n) + frag_len +
	    BFT_REC_SUM_LEN;
}

size_t
bft_rec_lc_len(unsigned n)
{
	return BFT_REC_HDR_LEN + lc_payload_len(n) + BFT_REC_SUM_LEN;
}

#define DROP_PAYLOAD	8u

size_t
bft_rec_drop_len(void)
{
	return BFT_REC_HDR_LEN + DROP_PAYLOAD + BFT_REC_SUM_LEN;
}

bool
bft_rec_drop_ok(uint32_t vol)
{
	return vol != 0 && vol < BFT_VOL_TABLE;
}

#define SNAP_PAYLOAD	24u

size_t
bft_rec_snap_len(void)
{
	return BFT_REC_HDR_LEN + SNAP_PAYLOAD + BFT_REC_SUM_LEN;
}

bool
bft_rec_snap_ok(uint32_t vol)
{
	return vol < BFT_VOL_TABLE;
}

size_t
bft_rec_max_len(unsigned n)
{
	size_t h = bft_rec_hist_len(n, BFT_MAX_FRAG), l = bft_rec_lc_len(n);

	return h > l ? h : l;
}

size_t
bft_rec_frag_off(unsigned n)
{
	return BFT_REC_HDR_LEN + bft_rec_hist_meta_len(n);
}

static uint8_t *
put_ts(uint8_t *p, const struct bft_ts *ts)
{
	put64(p, ts->num);
	put64(p + 8, ts->wid);
	memcpy(p + 16, ts->mac, BFT_MAC_LEN);
	return p + TS_LEN;
}

static const uint8_t *
get_ts(const uint8_t *p, struct bft_ts *ts)
{
	ts->num = get64(p);
	ts->wid = get64(p + 8);
	memcpy(ts->mac, p + 16, BFT_MAC_LEN);
	return p + TS_LEN;
}

static void
put_hdr(uint8_t *p, unsigned type, uint32_t payload_len, uint64_t seq,
    uint64_t block)
{
	memset(p, 0, BFT_REC_HDR_LEN);
	put32(p, BFT_REC_MAGIC);
	p[4] = (uint8_t)type;
	p[5] = BFT_REC_VERSION;
	put32(p + 8, payload_len);
	put64(p + 16, seq);
	put64(p + 24, block);
}

size_t
bft_rec_meta_len(unsigned type, unsigned n)
{
	if (type == BFT_REC_DROP)
		return BFT_REC_HDR_LEN + DROP_PAYLOAD;
	if (type == BFT_REC_SNAP || type == BFT_REC_UNSNAP)
		return BFT_REC_HDR_LEN + SNAP_PAYLOAD;
	return type == BFT_REC_HIST ? bft_rec_frag_off(n) :
	    BFT_REC_HDR_LEN + lc_payload_len(n);
}

/* The meta CRC: header less bytes 12-15, then the metadata. */
static uint32_t
meta_crc(const uint8_t *rec, size_t meta_len)
{
	uint32_t crc = bft_crc32c(0, rec, 12);

	return bft_crc32c(crc, rec + 16, meta_len - 16);
}

/*
 * Seals a record: the meta CRC, which the record's CRC then covers.
 * Writing one always makes it the current version.
 */
static void
put_sum(uint8_t *rec, size_t len, unsigned n)
{
	rec[5] = BFT_REC_VERSION;
	put32(rec + 12, meta_crc(rec, bft_rec_meta_len(rec[4], n)));
	put32(rec + len - BFT_REC_SUM_LEN,
	    bft_crc32c(0, rec, len - BFT_REC_SUM_LEN));
}

size_t
bft_rec_encode_hist(uint8_t *buf, unsigned n, uint64_t seq, uint64_t block,
    const struct bft_hist_meta *m, const uint8_t *frag)
{
	size_t len = bft_rec_hist_len(n, m->frag_len);
	uint8_t *p = buf + BFT_REC_HDR_LEN;

	put_hdr(buf, BFT_REC_HIST, (uint32_t)(len - BFT_REC_HDR_LEN -
	    BFT_REC_SUM_LEN), seq, block);
	p = put_ts(p, &m->ts);
	memcpy(p, m->nh, BFT_HASH_LEN);
	p += BFT_HASH_LEN;
	memcpy(p, m->vec, (size_t)n * BFT_MAC_LEN);
	p += (size_t)n * BFT_MAC_LEN;
	memcpy(p, m->cc, (size_t)n * BFT_HASH_LEN);
	p += (size_t)n * BFT_HASH_LEN;
	put32(p, m->frag_len);
	p += 4;
	if (m->frag_len > 0)
		memcpy(p, frag, m->frag_len);
	put_sum(buf, len, n);
	return len;
}

size_t
bft_rec_encode_lc(uint8_t *buf, unsigned n, uint64_t seq, uint64_t block,
    const struct bft_cand *c)
{
	return bft_rec_encode_lc_as(buf, n, BFT_REC_LC, seq, block, c);
}

size_t
bft_rec_encode_lc_as(uint8_t *buf, unsigned n, unsigned type, uint64_t seq,
    uint64_t block, const struct bft_cand *c)
{
	size_t len = bft_rec_lc_len(n);
	uint8_t *p = buf + BFT_REC_HDR_LEN;

	put_hdr(buf, type, (uint32_t)lc_payload_len(n), seq, block);
	p = put_ts(p, &c->ts);
	memcpy(p, c->nonce, BFT_NONCE_LEN);
	p += BFT_NONCE_LEN;
	memcpy(p, c->vec, (size_t)n * BFT_MAC_LEN);
	put_sum(buf, len, n);
	return len;
}

size_t
bft_rec_encode_drop(uint8_t *buf, unsigned n, uint64_t seq, uint32_t vol)
{
	size_t len = bft_rec_drop_len();

	put_hdr(buf, BFT_REC_DROP, DROP_PAYLOAD, seq, bft_addr(vol, 0));
	put64(buf + BFT_REC_HDR_LEN, vol);
	put_sum(buf, len, n);
	return len;
}

size_t
bft_rec_encode_snap(uint8_t *buf, unsigned n, unsigned type, uint64_t seq,
    uint32_t vol, uint64_t gen, uint64_t id)
{
	size_t len = bft_rec_snap_len();

	put_hdr(buf, type, SNAP_PAYLOAD, seq, bft_addr(vol, 0));
	put64(buf + BFT_REC_HDR_LEN, vol);
	put64(buf + BFT_REC_HDR_LEN + 8, gen);
	put64(buf + BFT_REC_HDR_LEN + 16, id);
	put_sum(buf, len, n);
	return len;
}

void
bft_rec_set_flags(uint8_t *rec, size_t len, unsigned n, unsigned flags)
{
	rec[6] = (uint8_t)flags;
	rec[7] = (uint8_t)(flags >> 8);
	put_sum(rec, len, n);
}

void
bft_rec_restamp(uint8_t *rec, size_t len, unsigned n, uint64_t seq)
{
	put64(rec + 16, seq);
	put_sum(rec, len, n);
}

/* Flags are zero, or BFT_REC_F_HMAC on an LC record (store_log.h). */
static bool
flags_ok(const uint8_t *buf)
{
	uint16_t f = get16(buf + 6);

	return f == 0 || (f == BFT_REC_F_HMAC && buf[4] == BFT_REC_LC);
}

/* The header's fields, once its magic and version were checked. */
static void
get_hdr(const uint8_t *buf, struct bft_rec_hdr *h)
{
	h->type = buf[4];
	h->version = buf[5];
	h->flags = get16(buf + 6);
	h->payload_len = get32(buf + 8);
	h->seq = get64(buf + 16);
	h->block = get64(buf + 24);
}

enum bft_rec_status
bft_rec_check_hdr(const uint8_t *buf, size_t avail, unsigned n,
    struct bft_rec_hdr *h)
{
	size_t meta = bft_rec_hist_meta_len(n);

	if (avail < BFT_REC_HDR_LEN)
		return BFT_REC_SHORT;
	if (get32(buf) != BFT_REC_MAGIC || !flags_ok(buf) ||
	    (buf[5] != BFT_REC_VERSION && (buf[5] != BFT_REC_VERSION_V1 ||
	    get32(buf + 12) != 0)))
		return BFT_REC_BADHDR;
	get_hdr(buf, h);
	switch (h->type) {
	case BFT_REC_HIST:
		if (h->payload_len < meta ||
		    h->payload_len - meta > BFT_MAX_FRAG)
			return BFT_REC_BADHDR;
		break;
	case BFT_REC_LC:
	case BFT_REC_VLC:
		if (h->payload_len != lc_payload_len(n))
			return BFT_REC_BADHDR;
		break;
	case BFT_REC_DROP:
		if (h->payload_len != DROP_PAYLOAD)
			return BFT_REC_BADHDR;
		break;
	case BFT_REC_SNAP:
	case BFT_REC_UNSNAP:
		if (h->payload_len != SNAP_PAYLOAD)
			return BFT_REC_BADHDR;
		break;
	default:
		return BFT_REC_BADHDR;
	}
	if (avail - BFT_REC_HDR_LEN < (size_t)h->payload_len + BFT_REC_SUM_LEN)
		return BFT_REC_SHORT;
	return BFT_REC_OK;
}

/* A SNAP or UNSNAP names its volume twice, and a possible boundary. */
static bool
snap_sane(const uint8_t *buf, const struct bft_rec_hdr *h)
{
	uint64_t vol = get64(buf + BFT_REC_HDR_LEN);

	return vol <= BFT_ADDR_MAX_VOL && bft_rec_snap_ok((uint32_t)vol) &&
	    h->block == bft_addr((uint32_t)vol, 0) &&
	    get64(buf + BFT_REC_HDR_LEN + 8) <= BFT_GEN_MAX &&
	    get64(buf + BFT_REC_HDR_LEN + 16) != 0;
}

enum bft_rec_status
bft_rec_check(const uint8_t *buf, size_t len, unsigned n,
    struct bft_rec_hdr *h)
{
	enum bft_rec_status s = bft_rec_check_hdr(buf, len, n, h);
	size_t meta = bft_rec_hist_meta_len(n);

	if (s != BFT_REC_OK)
		return s;
	if (len != BFT_REC_HDR_LEN + (size_t)h->payload_len + BFT_REC_SUM_LEN)
		return BFT_REC_BADHDR;
	if (bft_crc32c(0, buf, len - BFT_REC_SUM_LEN) !=
	    get32(buf + len - BFT_REC_SUM_LEN))
		return BFT_REC_BADSUM;
	if (h->version == BFT_REC_VERSION &&
	    meta_crc(buf, bft_rec_meta_len(h->type, n)) != get32(buf + 12))
		return BFT_REC_BADSUM;
	/* A HIST record's frag_len must agree with its length. */
	if (h->type == BFT_REC_HIST &&
	    get32(buf + BFT_REC_HDR_LEN + meta - 4) != h->payload_len - meta)
		return BFT_REC_BADSUM;
	/* A DROP names its volume twice; it must be one that may go. */
	if (h->type == BFT_REC_DROP && (get64(buf + BFT_REC_HDR_LEN) >
	    BFT_ADDR_MAX_VOL || h->block != bft_addr(bft_rec_decode_drop(buf),
	    0) || !bft_rec_drop_ok(bft_rec_decode_drop(buf))))
		return BFT_REC_BADSUM;
	if ((h->type == BFT_REC_SNAP || h->type == BFT_REC_UNSNAP) &&
	    !snap_sane(buf, h))
		return BFT_REC_BADSUM;
	return BFT_REC_OK;
}

enum bft_rec_status
bft_rec_check_meta(const uint8_t *buf, size_t avail, unsigned n,
    struct bft_rec_hdr *h)
{
	size_t meta;

	if (avail < BFT_REC_HDR_LEN)
		return BFT_REC_SHORT;
	/* check_hdr wants the whole record present; here only the meta is. */
	if (get32(buf) != BFT_REC_MAGIC || buf[5] != BFT_REC_VERSION ||
	    !flags_ok(buf))
		return BFT_REC_BADHDR;
	get_hdr(buf, h);
	if (h->type != BFT_REC_HIST && !bft_rec_is_lc(h->type))
		return BFT_REC_BADHDR;
	meta = bft_rec_meta_len(h->type, n);
	if (avail < meta)
		return BFT_REC_SHORT;
	if (meta_crc(buf, meta) != get32(buf + 12))
		return BFT_REC_BADSUM;
	/* The length was covered by the CRC; it must still make sense. */
	if (h->type == BFT_REC_HIST ? h->payload_len !=
	    bft_rec_hist_meta_len(n) + get32(buf + meta - 4) ||
	    get32(buf + meta - 4) > BFT_MAX_FRAG :
	    h->payload_len != lc_payload_len(n))
		return BFT_REC_BADSUM;
	return BFT_REC_OK;
}

enum bft_rec_status
bft_rec_read(int fd, uint64_t off, uint64_t end, unsigned n, uint8_t *buf,
    struct bft_rec_hdr *h)
{
	enum bft_rec_status s;
	size_t len;
	int err;

	if (off >= end)
		return BFT_REC_SHORT;
	len = end - off < BFT_REC_HDR_LEN ? (size_t)(end - off) :
	    BFT_REC_HDR_LEN;
	if ((err = bft_pread_all(fd, buf, len, off)) < 0)
		goto out_err;
	s = bft_rec_check_hdr(buf, end - off > SIZE_MAX ? SIZE_MAX :
	    (size_t)(end - off), n, h);
	if (s != BFT_REC_OK)
		return s;
	len = BFT_REC_HDR_LEN + (size_t)h->payload_len + BFT_REC_SUM_LEN;
	err = bft_pread_all(fd, buf + BFT_REC_HDR_LEN, len - BFT_REC_HDR_LEN,
	    off + BFT_REC_HDR_LEN);
	if (err < 0)
		goto out_err;
	return bft_rec_check(buf, len, n, h);
out_err:
	errno = -err;
	return BFT_REC_IOERR;
}

void
bft_rec_decode_hist(const uint8_t *rec, unsigned n, struct bft_hist_meta *m)
{
	const uint8_t *p = rec + BFT_REC_HDR_LEN;

	memset(m, 0, sizeof *m);
	p = get_ts(p, &m->ts);
	memcpy(m->nh, p, BFT_HASH_LEN);
	p += BFT_HASH_LEN;
	memcpy(m->vec, p, (size_t)n * BFT_MAC_LEN);
	p += (size_t)n * BFT_MAC_LEN;
	memcpy(m->cc, p, (size_t)n * BFT_HASH_LEN);
	p += (size_t)n * BFT_HASH_LEN;
	m->frag_len = get32(p);
}

uint32_t
bft_rec_decode_drop(const uint8_t *rec)
{
	return (uint32_t)get64(rec + BFT_REC_HDR_LEN);
}

void
bft_rec_decode_snap(const uint8_t *rec, uint32_t *vol, uint64_t *gen,
    uint64_t *id)
{
	*vol = (uint32_t)get64(rec + BFT_REC_HDR_LEN);
	*gen = get64(rec + BFT_REC_HDR_LEN + 8);
	*id = get64(rec + BFT_REC_HDR_LEN + 16);
}

void
bft_rec_decode_lc(const uint8_t *rec, unsigned n, struct bft_cand *c)
{
	const uint8_t *p = rec + BFT_REC_HDR_LEN;

	memset(c, 0, sizeof *c);
	p = get_ts(p, &c->ts);
	memcpy(c->nonce, p, BFT_NONCE_LEN);
	p += BFT_NONCE_LEN;
	memcpy(c->vec, p, (size_t)n * BFT_MAC_LEN);
}

int
bft_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t w = pwrite(fd, p, len, (off_t)off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		len -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

int
bft_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t r = pread(fd, p, len, (off_t)off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO;
		p += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

void
bft_seg_name(char *buf, uint32_t no)
{
	snprintf(buf, BFT_SEG_NAME_MAX, "seg-%06" PRIu32 ".log", no);
}

bool
bft_seg_parse_name(const char *name, uint32_t *no)
{
	char canon[BFT_SEG_NAME_MAX];
	unsigned long v;
	char *end;

	if (strncmp(name, "seg-", 4) != 0 || name[4] < '0' || name[4] > '9')
		return false;
	errno = 0;
	v = strtoul(name + 4, &end, 10);
	if (errno != 0 || strcmp(end, ".log") != 0 || v == 0 ||
	    v >= UINT32_MAX)
		return false;
	/* Only the name this code would write, so unlink finds it again. */
	bft_seg_name(canon, (uint32_t)v);
	if (strcmp(canon, name) != 0)
		return false;
	*no = (uint32_t)v;
	return true;
}
