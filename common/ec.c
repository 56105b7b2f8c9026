/*
 * Erasure coding through liberasurecode.  The default backend is ISA-L's
 * Cauchy Reed-Solomon: a Cauchy matrix is MDS for every (k, m), so any
 * k fragments decode, whereas ISA-L's Vandermonde construction is not
 * guaranteed invertible for every subset once m grows.
 */
#include <erasurecode.h>
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
};

static const struct {
	const char *name;
	ec_backend_id_t id;
} backends[] = {
	{ "isa_l_rs_cauchy", EC_BACKEND_ISA_L_RS_CAUCHY },
	{ "isa_l_rs_vand", EC_BACKEND_ISA_L_RS_VAND },
	{ "liberasurecode_rs_vand", EC_BACKEND_LIBERASURECODE_RS_VAND },
};

struct bft_ec *
bft_ec_new(unsigned t, const char *backend, char *err, size_t errlen)
{
	return bft_ec_new_len(t, backend, BFT_BLOCK_SIZE, err, errlen);
}

struct bft_ec *
bft_ec_new_len(unsigned t, const char *backend, uint32_t value_len,
    char *err, size_t errlen)
{
	struct ec_args args = { 0 };
	struct bft_ec *ec;
	char **data = NULL, **parity = NULL;
	uint64_t flen = 0;
	uint8_t *zero = NULL;
	size_t b;

	if (t < 1 || t > BFT_MAX_T) {
		snprintf(err, errlen, "t=%u out of range 1..%d", t, BFT_MAX_T);
		return NULL;
	}
	if (value_len == 0 || value_len > BFT_MAX_FRAG) {
		snprintf(err, errlen, "value size %u out of range", value_len);
		return NULL;
	}
	ec = calloc(1, sizeof *ec);
	if (ec == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
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
		snprintf(err, errlen, "no usable erasure-code backend%s%s",
		    backend ? " named " : "", backend ? backend : "");
		goto out_free;
	}

	/* The fragment size depends on backend headers: learn it once. */
	zero = calloc(1, value_len);
	if (zero == NULL ||
	    liberasurecode_encode(ec->desc, (char *)zero, value_len,
	    &data, &parity, &flen) != 0) {
		snprintf(err, errlen, "erasure-code self test failed (%s)",
		    ec->backend);
		goto out_destroy;
	}
	liberasurecode_encode_cleanup(ec->desc, data, parity);
	free(zero);
	if (flen == 0 || flen > BFT_MAX_FRAG) {
		snprintf(err, errlen, "unexpected fragment size %llu",
		    (unsigned long long)flen);
		goto out_destroy_nozero;
	}
	ec->frag_len = (uint32_t)flen;
	return ec;

out_destroy:
	free(zero);
out_destroy_nozero:
	liberasurecode_instance_destroy(ec->desc);
out_free:
	free(ec);
	return NULL;
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

int
bft_ec_encode(struct bft_ec *ec, const uint8_t *block,
    uint8_t *frags[BFT_MAX_N])
{
	char **data = NULL, **parity = NULL;
	uint64_t flen = 0;
	unsigned i;

	if (liberasurecode_encode(ec->desc, (const char *)block,
	    ec->value_len, &data, &parity, &flen) != 0)
		return -1;
	if (flen != ec->frag_len) {
		liberasurecode_encode_cleanup(ec->desc, data, parity);
		return -1;
	}
	for (i = 0; i < ec->k; i++)
		memcpy(frags[i], data[i], flen);
	for (i = 0; i < ec->m; i++)
		memcpy(frags[ec->k + i], parity[i], flen);
	liberasurecode_encode_cleanup(ec->desc, data, parity);
	return 0;
}

int
bft_ec_decode(struct bft_ec *ec, const uint8_t *const frags[BFT_MAX_N],
    uint32_t have, uint8_t *block)
{
	char *avail[BFT_MAX_N];
	char *out = NULL;
	uint64_t outlen = 0;
	int navail = 0, rc = -1;

	/*
	 * Data fragments first: with all k of them liberasurecode only
	 * concatenates, which is several times cheaper than a solve.
	 */
	for (unsigned i = 0; i < ec->k + ec->m &&
	    navail < (int)ec->k; i++)
		if (have & (1u << i))
			avail[navail++] = (char *)frags[i];
	if (navail < (int)ec->k)
		return -1;
	if (liberasurecode_decode(ec->desc, avail, navail, ec->frag_len, 1,
	    &out, &outlen) != 0)
		return -1;
	if (outlen == ec->value_len) {
		memcpy(block, out, ec->value_len);
		rc = 0;
	}
	liberasurecode_decode_cleanup(ec->desc, out);
	return rc;
}
