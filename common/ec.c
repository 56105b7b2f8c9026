/*
 * Erasure coding through liberasurecode.  The default backend is ISA-L's
 * Cauchy Reed-Solomon: a Cauchy matrix is MDS for every (k, m), so any
 * k fragments decode, whereas ISA-L's Vandermonde construction is not
 * guaranteed invertible for every subset once m grows.
 */
#include <errno.h>
#include <erasurecode.h>
#include <liberasurecode/erasurecode_backend.h>
#include <liberasurecode/erasurecode_helpers_ext.h>
#include <liberasurecode/erasurecode_postprocessing.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ec.h"

struct bft_ec {
	int desc;
	unsigned k, m;
	uint32_t frag_len;
	uint32_t value_len;
	const char *backend;
	/*
	 * liberasurecode_encode allocates and zeroes n fresh fragments per
	 * call, and its decode a fresh value: with the copies in and out
	 * that was ~10% of nbdkit's CPU per block (docs/performance.md).
	 * The direct path runs the same backend and the same header code
	 * (finalize_fragments_after_encode) on the caller's buffers.  It is
	 * used only when a self test shows it makes exactly the library's
	 * bytes, so the fragments on the wire and on disk never change.
	 */
	bool direct;
	ec_backend_t inst;
	uint32_t payload;		/* frag_len less the header */
};

static int encode_direct(struct bft_ec *ec, const uint8_t *block,
    uint8_t *frags[BFT_MAX_N]);
static bool direct_self_test(struct bft_ec *ec);

static const struct {
	const char *name;
	ec_backend_id_t id;
} backends[] = {
	{ "isa_l_rs_cauchy", EC_BACKEND_ISA_L_RS_CAUCHY },
	{ "isa_l_rs_vand", EC_BACKEND_ISA_L_RS_VAND },
	{ "liberasurecode_rs_vand", EC_BACKEND_LIBERASURECODE_RS_VAND },
};

int
bft_ec_new(unsigned t, const char *backend, struct bft_ec **ecp, char *err,
    size_t errlen)
{
	return bft_ec_new_len(t, backend, BFT_BLOCK_SIZE, ecp, err, errlen);
}

int
bft_ec_new_len(unsigned t, const char *backend, uint32_t value_len,
    struct bft_ec **ecp, char *err, size_t errlen)
{
	struct ec_args args = { 0 };
	struct bft_ec *ec;
	char **data = NULL, **parity = NULL;
	uint64_t flen = 0;
	uint8_t *zero = NULL;
	size_t b;
	int r;

	*ecp = NULL;
	if (t < 1 || t > BFT_MAX_T) {
		snprintf(err, errlen, "t=%u out of range 1..%d", t, BFT_MAX_T);
		return -EINVAL;
	}
	if (value_len == 0 || value_len > BFT_MAX_FRAG) {
		snprintf(err, errlen, "value size %u out of range", value_len);
		return -EINVAL;
	}
	ec = calloc(1, sizeof *ec);
	if (ec == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ec->k = t + 1;
	ec->value_len = value_len;
	ec->m = 2 * t;
	args.k = (int)ec->k;
	args.m = (int)ec->m;
	args.w = 8;
	args.hd = (int)ec->m + 1;
	args.ct = CHKSUM_NONE;

	for (b = 0; b < sizeof backends / sizeof backends[0]; b++) {
		if (backend != NULL && strcmp(backend, backends[b].name) != 0)
			continue;
		if (!liberasurecode_backend_available(backends[b].id))
			continue;
		ec->desc = liberasurecode_instance_create(backends[b].id, &args);
		if (ec->desc > 0) {
			ec->backend = backends[b].name;
			break;
		}
	}
	if (ec->backend == NULL) {
		r = -ENOTSUP;
		snprintf(err, errlen, "no usable erasure-code backend%s%s",
		    backend ? " named " : "", backend ? backend : "");
		goto out_free;
	}

	/* The fragment size depends on backend headers: learn it once. */
	zero = calloc(1, value_len);
	if (zero == NULL ||
	    liberasurecode_encode(ec->desc, (char *)zero, value_len,
	    &data, &parity, &flen) != 0) {
		r = zero == NULL ? -ENOMEM : -EIO;
		snprintf(err, errlen, "erasure-code self test failed (%s)",
		    ec->backend);
		goto out_destroy;
	}
	liberasurecode_encode_cleanup(ec->desc, data, parity);
	free(zero);
	if (flen == 0 || flen > BFT_MAX_FRAG) {
		r = -EIO;
		snprintf(err, errlen, "unexpected fragment size %llu",
		    (unsigned long long)flen);
		goto out_destroy_nozero;
	}
	ec->frag_len = (uint32_t)flen;
	ec->direct = direct_self_test(ec);
	*ecp = ec;
	return 0;

out_destroy:
	free(zero);
out_destroy_nozero:
	liberasurecode_instance_destroy(ec->desc);
out_free:
	free(ec);
	return r;
}

void
bft_ec_free(struct bft_ec *ec)
{
	if (ec == NULL)
		return;
	liberasurecode_instance_destroy(ec->desc);
	free(ec);
}

const char *
bft_ec_backend(const struct bft_ec *ec)
{
	return ec->backend;
}

uint32_t
bft_ec_frag_len(const struct bft_ec *ec)
{
	return ec->frag_len;
}

uint32_t
bft_ec_value_len(const struct bft_ec *ec)
{
	return ec->value_len;
}

bool
bft_ec_direct(const struct bft_ec *ec)
{
	return ec->direct;
}

int
bft_ec_encode(struct bft_ec *ec, const uint8_t *block,
    uint8_t *frags[BFT_MAX_N])
{
	char **data = NULL, **parity = NULL;
	uint64_t flen = 0;
	unsigned i;

	if (ec->direct)
		return encode_direct(ec, block, frags);
	if (liberasurecode_encode(ec->desc, (const char *)block,
	    ec->value_len, &data, &parity, &flen) != 0)
		return -EIO;
	if (flen != ec->frag_len) {
		liberasurecode_encode_cleanup(ec->desc, data, parity);
		return -EIO;
	}
	for (i = 0; i < ec->k; i++)
		memcpy(frags[i], data[i], flen);
	for (i = 0; i < ec->m; i++)
		memcpy(frags[ec->k + i], parity[i], flen);
	liberasurecode_encode_cleanup(ec->desc, data, parity);
	return 0;
}

/* Whether h is exactly the header the encoder gives data fragment i. */
static bool
data_header_ok(const struct bft_ec *ec, const uint8_t *frag, unsigned i)
{
	fragment_header_t h;

	memcpy(&h, frag, sizeof h);	/* packed: no unaligned reads */
	return !is_invalid_fragment_header(&h) && h.meta.idx == i &&
	    h.meta.size == ec->payload &&
	    h.meta.orig_data_size == ec->value_len;
}

/*
 * With the k data fragments at hand, decoding is concatenating their
 * payloads (what liberasurecode's fragments_to_string does into a
 * buffer of its own): straight into block here, except for those in
 * placed, whose payloads are there already.  Any header that is not
 * exactly what the encoder makes sends the caller to the library
 * (-ENOTSUP).
 */
static int
decode_data_frags(struct bft_ec *ec, const uint8_t *const frags[BFT_MAX_N],
    uint32_t have, uint32_t placed, uint8_t *block)
{
	const size_t hlen = sizeof(fragment_header_t);
	uint32_t off = 0, len;

	if ((have & ((1u << ec->k) - 1)) != (1u << ec->k) - 1)
		return -ENOTSUP;
	for (unsigned i = 0; i < ec->k; i++)
		if (!(placed & (1u << i)) && !data_header_ok(ec, frags[i], i))
			return -ENOTSUP;
	for (unsigned i = 0; i < ec->k && off < ec->value_len; i++) {
		len = ec->value_len - off < ec->payload ?
		    ec->value_len - off : ec->payload;
		if (!(placed & (1u << i)))
			memcpy(block + off, frags[i] + hlen, len);
		off += len;
	}
	return off == ec->value_len ? 0 : -ENOTSUP;
}

static int
decode(struct bft_ec *ec, const uint8_t *const frags[BFT_MAX_N],
    uint32_t have, uint32_t placed, uint8_t *block)
{
	char *avail[BFT_MAX_N];
	char *out = NULL;
	uint64_t outlen = 0;
	int navail = 0, rc = -EIO;

	/*
	 * Data fragments first: with all k of them liberasurecode only
	 * concatenates, which is several times cheaper than a solve.
	 */
	for (unsigned i = 0; i < ec->k + ec->m &&
	    navail < (int)ec->k; i++)
		if (have & (1u << i))
			avail[navail++] = (char *)frags[i];
	if (navail < (int)ec->k)
		return -EINVAL;
	if (ec->direct && decode_data_frags(ec, frags, have, placed,
	    block) == 0)
		return 0;
	if (placed != 0)
		return -ENOTSUP;
	if (liberasurecode_decode(ec->desc, avail, navail, ec->frag_len, 1,
	    &out, &outlen) != 0)
		return -EIO;
	if (outlen == ec->value_len) {
		memcpy(block, out, ec->value_len);
		rc = 0;
	}
	liberasurecode_decode_cleanup(ec->desc, out);
	return rc;
}

int
bft_ec_decode(struct bft_ec *ec, const uint8_t *const frags[BFT_MAX_N],
    uint32_t have, uint8_t *block)
{
	return decode(ec, frags, have, 0, block);
}

int
bft_ec_place(const struct bft_ec *ec, unsigned i, const uint8_t *frag,
    uint8_t *hdr, uint8_t *block)
{
	const size_t hlen = sizeof(fragment_header_t);

	/* Only whole payloads: a padded one would need its padding back. */
	if (!ec->direct || i >= ec->k ||
	    (uint64_t)(i + 1) * ec->payload > ec->value_len ||
	    !data_header_ok(ec, frag, i))
		return -ENOTSUP;
	memcpy(hdr, frag, hlen);
	memcpy(block + (size_t)i * ec->payload, frag + hlen, ec->payload);
	return 0;
}

uint32_t
bft_ec_payload(const struct bft_ec *ec)
{
	return ec->payload;
}

uint32_t
bft_ec_frag_offset(const struct bft_ec *ec, uint32_t off)
{
	return (uint32_t)sizeof(fragment_header_t) +
	    (ec->payload ? off % ec->payload : 0);
}

int
bft_ec_data_frag(const struct bft_ec *ec, uint32_t off, uint32_t len)
{
	uint32_t i;

	if (!ec->direct || len == 0 || ec->payload == 0 ||
	    off > ec->value_len || len > ec->value_len - off)
		return -1;
	i = off / ec->payload;
	if ((off + len - 1) / ec->payload != i || i >= ec->k ||
	    (uint64_t)(i + 1) * ec->payload > ec->value_len)
		return -1;
	return (int)i;
}

int
bft_ec_decode_placed(struct bft_ec *ec, uint8_t *const frags[BFT_MAX_N],
    uint32_t have, uint32_t placed, uint8_t *block)
{
	const size_t hlen = sizeof(fragment_header_t);
	const uint32_t data = (1u << ec->k) - 1;

	placed &= data;
	if ((have & data) == data && decode(ec, (const uint8_t *const *)frags,
	    have, placed, block) == 0)
		return 0;
	/*
	 * A parity fragment takes part, or a header is not the encoder's:
	 * the library wants whole fragments, so the placed payloads go back
	 * behind their headers first.  The decode then writes all of block,
	 * over any placed payload that was not in have (one that failed its
	 * hash).
	 */
	for (unsigned i = 0; i < ec->k; i++)
		if (placed & have & (1u << i))
			memcpy(frags[i] + hlen,
			    block + (size_t)i * ec->payload, ec->payload);
	return decode(ec, (const uint8_t *const *)frags, have, 0, block);
}

/* A zeroed fragment header with its magic, as liberasurecode starts one. */
static void
init_header(uint8_t *frag)
{
	fragment_header_t h;

	memset(&h, 0, sizeof h);
	h.magic = LIBERASURECODE_FRAG_HEADER_MAGIC;
	memcpy(frag, &h, sizeof h);
}

static int
encode_direct(struct bft_ec *ec, const uint8_t *block,
    uint8_t *frags[BFT_MAX_N])
{
	const size_t hlen = sizeof(fragment_header_t);
	char *data[BFT_MAX_N], *parity[BFT_MAX_N];
	uint32_t off = 0, len;

	for (unsigned i = 0; i < ec->k; i++) {
		init_header(frags[i]);
		data[i] = (char *)frags[i] + hlen;
		len = off < ec->value_len ? ec->value_len - off : 0;
		if (len > ec->payload)
			len = ec->payload;
		memcpy(data[i], block + off, len);
		memset(data[i] + len, 0, ec->payload - len);	/* padding */
		off += len;
	}
	for (unsigned j = 0; j < ec->m; j++) {
		init_header(frags[ec->k + j]);
		parity[j] = (char *)frags[ec->k + j] + hlen;
	}
	if (ec->inst->common.ops->ENCODE(ec->inst->desc.backend_desc, data,
	    parity, (int)ec->payload) < 0 ||
	    finalize_fragments_after_encode(ec->inst, (int)ec->k, (int)ec->m,
	    (int)ec->payload, ec->value_len, data, parity) < 0)
		return -EIO;
	return 0;
}

/*
 * Encodes and decodes a patterned value both ways: the direct path is
 * used only if every fragment matches the library's byte for byte and
 * both decodes give the value back.
 */
static bool
direct_self_test(struct bft_ec *ec)
{
	const unsigned n = ec->k + ec->m;
	uint8_t *value, *back, *lib, *dir, *fl[BFT_MAX_N], *fd[BFT_MAX_N];
	bool ok = false;

	if (ec->frag_len <= sizeof(fragment_header_t) ||
	    (ec->inst = liberasurecode_backend_instance_get_by_desc(
	    ec->desc)) == NULL || ec->inst->common.ops == NULL ||
	    ec->inst->common.ops->ENCODE == NULL)
		return false;
	ec->payload = ec->frag_len - (uint32_t)sizeof(fragment_header_t);
	value = malloc(ec->value_len);
	back = malloc(ec->value_len);
	lib = calloc(n, ec->frag_len);
	dir = malloc((size_t)n * ec->frag_len);
	if (value == NULL || back == NULL || lib == NULL || dir == NULL)
		goto out;
	/* Not all zeros: parity must depend on the data to be checked. */
	for (uint32_t i = 0; i < ec->value_len; i++)
		value[i] = (uint8_t)(i * 131 + (i >> 8) * 7 + 1);
	memset(dir, 0xa5, (size_t)n * ec->frag_len);	/* no help from 0s */
	for (unsigned i = 0; i < n; i++) {
		fl[i] = lib + (size_t)i * ec->frag_len;
		fd[i] = dir + (size_t)i * ec->frag_len;
	}
	ec->direct = false;
	if (bft_ec_encode(ec, value, fl) != 0 ||
	    encode_direct(ec, value, fd) != 0 ||
	    memcmp(lib, dir, (size_t)n * ec->frag_len) != 0)
		goto out;
	memset(back, 0, ec->value_len);
	if (decode_data_frags(ec, (const uint8_t *const *)fd,
	    (1u << n) - 1, 0, back) != 0 ||
	    memcmp(back, value, ec->value_len) != 0)
		goto out;
	ok = true;
out:
	free(value);
	free(back);
	free(lib);
	free(dir);
	return ok;
}
