/*
 * Erasure coding of one block into n = 3t+1 fragments, k = t+1 of which
 * decode it, through liberasurecode.  The ISA-L Reed-Solomon backend is
 * preferred; without libisal2 we fall back to liberasurecode's own
 * rs_vand with a warning, which is correct but far slower at m >= 2.
 */
#ifndef BFTBLK_EC_H
#define BFTBLK_EC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct bft_ec;

/*
 * Creates a coder for t into *ecp.  backend may be NULL (best
 * available), or one of "isa_l_rs_vand", "isa_l_rs_cauchy",
 * "liberasurecode_rs_vand".  Returns 0, or a negative errno with a
 * reason in err: -EINVAL for t out of range, -ENOTSUP when no backend
 * (or not the one named) can be used, -ENOMEM, -EIO when the backend
 * fails its self test.
 */
int bft_ec_new(unsigned t, const char *backend, struct bft_ec **ecp,
    char *err, size_t errlen);
/*
 * The same for values of value_len bytes instead of BFT_BLOCK_SIZE: with
 * encrypt=on a register holds a sealed block, the block plus its AEAD
 * tag.  value_len must leave fragments within BFT_MAX_FRAG.
 */
int bft_ec_new_len(unsigned t, const char *backend, uint32_t value_len,
    struct bft_ec **ecp, char *err, size_t errlen);
void bft_ec_free(struct bft_ec *ec);
const char *bft_ec_backend(const struct bft_ec *ec);
/* Size in bytes of every fragment of one value. */
uint32_t bft_ec_frag_len(const struct bft_ec *ec);
/* The value size this coder was made for (BFT_BLOCK_SIZE by default). */
uint32_t bft_ec_value_len(const struct bft_ec *ec);
/*
 * Whether this coder encodes straight into the caller's fragments and
 * decodes data fragments straight into the block (see ec.c), which it
 * does only where that makes exactly liberasurecode's bytes.
 */
bool bft_ec_direct(const struct bft_ec *ec);

/*
 * Encodes one value (bft_ec_value_len() bytes) into n fragments written
 * to frags[i], each bft_ec_frag_len() bytes.  Thread-safe.  Returns 0,
 * or -EIO when the backend fails.
 */
int bft_ec_encode(struct bft_ec *ec, const uint8_t *block,
		  uint8_t *frags[BFT_MAX_N]);

/*
 * Decodes a block from the fragments whose bit is set in have (at least
 * t+1 of them, each bft_ec_frag_len() bytes, already checked against the
 * cross-checksum).  Thread-safe.  Returns 0, -EINVAL with fewer than
 * t+1 fragments, or -EIO when the backend cannot decode them.
 */
int bft_ec_decode(struct bft_ec *ec, const uint8_t *const frags[BFT_MAX_N],
		  uint32_t have, uint8_t *block);
/* (block is bft_ec_value_len() bytes in both.) */

/*
 * Reads can skip a copy: data fragment i (before it is checked) has its
 * payload copied straight to where decoding puts it in block, and only
 * its header to hdr, the caller's fragment buffer for i.  Returns 0, or
 * -ENOTSUP when this coder cannot (not the direct path, not a data
 * fragment, a padded payload, a header the encoder would not make), and
 * then the caller keeps the whole fragment as before: not a failure.
 */
int bft_ec_place(const struct bft_ec *ec, unsigned i, const uint8_t *frag,
		 uint8_t *hdr, uint8_t *block);
/*
 * The data fragment whose payload bft_ec_place() puts over bytes
 * [off, off + len) of the value, all of them, or -1 when none does (they
 * span two, fall in a padded payload, or this coder is not direct): a
 * read of those bytes alone needs only that fragment.
 */
int bft_ec_data_frag(const struct bft_ec *ec, uint32_t off, uint32_t len);
/* The bytes of the value each data fragment's payload holds. */
uint32_t bft_ec_payload(const struct bft_ec *ec);
/*
 * Where in its data fragment (bft_ec_data_frag()) byte off of the value
 * is: behind the fragment's header, at off's place in the payload.
 */
uint32_t bft_ec_frag_offset(const struct bft_ec *ec, uint32_t off);
/*
 * bft_ec_decode() where the fragments in placed went through
 * bft_ec_place() into this block and frags[i] hold their headers.
 * Placed fragments not in have may have left anything in block: it is
 * all written.  frags[i] of placed fragments may be completed.  0, or a
 * negative errno as bft_ec_decode() returns.
 */
int bft_ec_decode_placed(struct bft_ec *ec, uint8_t *const frags[BFT_MAX_N],
			 uint32_t have, uint32_t placed, uint8_t *block);

#endif
