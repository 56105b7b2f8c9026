/*
 * Sealing and opening one block with the volume's AEAD (libsodium).
 * Why these AEADs and why nonces are derived rather than stored:
 * volcrypt.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "volcrypt.h"

/* crypto_kdf context: 8 bytes naming what the subkeys are for. */
#define KDF_CONTEXT "bftblkvc"

/* The 24 bytes that name one write of one block: block, num, wid. */
#define WRITE_ID_LEN 24
/* The AD adds the AEAD id in front. */
#define AD_LEN (1 + WRITE_ID_LEN)

const char *
bft_aead_name(enum bft_aead aead)
{
	switch (aead) {
	case BFT_AEAD_AES256GCM:		return "aes256gcm";
	case BFT_AEAD_XCHACHA20POLY1305:	return "xchacha20poly1305";
	}
	return NULL;
}

int
bft_aead_parse(const char *name, enum bft_aead *aead)
{
	if (strcmp(name, "aes256gcm") == 0)
		*aead = BFT_AEAD_AES256GCM;
	else if (strcmp(name, "xchacha20poly1305") == 0)
		*aead = BFT_AEAD_XCHACHA20POLY1305;
	else
		return -EINVAL;
	return 0;
}

bool
bft_aead_available(enum bft_aead aead)
{
	switch (aead) {
	case BFT_AEAD_AES256GCM:
		return crypto_aead_aes256gcm_is_available() != 0;
	case BFT_AEAD_XCHACHA20POLY1305:
		return true;
	}
	return false;
}

enum bft_aead
bft_aead_default(void)
{
	return bft_aead_available(BFT_AEAD_AES256GCM) ?
	    BFT_AEAD_AES256GCM : BFT_AEAD_XCHACHA20POLY1305;
}

int
bft_volcrypt_init(struct bft_volcrypt *vc, const struct bft_volume_key *vk,
    char *err, size_t errlen)
{
	/* Subkey ids name the AEAD: one volume key, never one key for two. */
	uint64_t id = (uint64_t)vk->aead << 8;

	memset(vc, 0, sizeof *vc);
	if (bft_aead_name(vk->aead) == NULL) {
		snprintf(err, errlen, "unknown AEAD %d", (int)vk->aead);
		return -EINVAL;
	}
	if (!bft_aead_available(vk->aead)) {
		snprintf(err, errlen, "the volume uses %s, which this CPU "
		    "cannot run (libsodium needs AES-NI and PCLMUL for it); "
		    "open it on a CPU that has them", bft_aead_name(vk->aead));
		return -ENOTSUP;
	}
	vc->aead = vk->aead;
	if (crypto_kdf_derive_from_key(vc->k, sizeof vc->k, id | 1,
	    KDF_CONTEXT, vk->key) != 0 ||
	    crypto_kdf_derive_from_key(vc->nk, sizeof vc->nk, id | 2,
	    KDF_CONTEXT, vk->key) != 0) {
		bft_volcrypt_wipe(vc);
		snprintf(err, errlen, "key derivation failed");
		return -EIO;
	}
	return 0;
}

void
bft_volume_key_id(const struct bft_volume_key *vk,
    uint8_t out[BFT_VOLUME_KEY_ID_LEN])
{
	uint8_t sub[crypto_kdf_BYTES_MAX];

	/*
	 * A subkey of its own (3 is neither the AEAD's 1 nor the nonces'
	 * 2), so that the id, which the volume table shows every client,
	 * says nothing of the keys that seal; it names the AEAD as they do.
	 */
	crypto_kdf_derive_from_key(sub, sizeof sub, (uint64_t)vk->aead << 8 |
	    3, KDF_CONTEXT, vk->key);
	memcpy(out, sub, BFT_VOLUME_KEY_ID_LEN);
	sodium_memzero(sub, sizeof sub);
}

void
bft_volcrypt_wipe(struct bft_volcrypt *vc)
{
	sodium_memzero(vc, sizeof *vc);
}

/* Fixed little-endian layout, so a volume opens on any host. */
static void
write_id(uint8_t out[WRITE_ID_LEN], uint64_t block, const struct bft_ts *ts)
{
	for (int i = 0; i < 8; i++) {
		out[i] = (uint8_t)(block >> (8 * i));
		out[8 + i] = (uint8_t)(ts->num >> (8 * i));
		out[16 + i] = (uint8_t)(ts->wid >> (8 * i));
	}
}

/*
 * The AD binds the write's identity (and the AEAD); the nonce is derived
 * from the same identity.
 *
 * XChaCha20-Poly1305: the 24-byte identity is the 192-bit nonce itself,
 * so distinct writes have distinct nonces, with no bound to mind.
 *
 * AES-256-GCM has a 96-bit nonce, too short to hold the identity, so the
 * nonce is the first 96 bits of keyed BLAKE2b (a PRF, key nk) of it.  Two
 * distinct writes collide only by chance: among q sealed writes under
 * one volume key, with probability at most q^2 / 2^97.  At q = 2^32 block
 * writes (256 TiB written) that is below 2^-33, the bound NIST SP 800-38D
 * accepts for random 96-bit IVs (at most 2^32 uses of one key).  A volume
 * expected to see more writes than that should use xchacha20poly1305
 * or be copied to a new volume key first.  The identity is also in the
 * AD, so even a colliding nonce never lets one write's ciphertext open
 * as another's.
 */
static void
derive(const struct bft_volcrypt *vc, uint64_t block, const struct bft_ts *ts,
    uint8_t ad[AD_LEN], uint8_t npub[WRITE_ID_LEN])
{
	uint8_t h[crypto_generichash_BYTES_MIN];

	ad[0] = (uint8_t)vc->aead;
	write_id(ad + 1, block, ts);
	if (vc->aead == BFT_AEAD_XCHACHA20POLY1305) {
		memcpy(npub, ad + 1, WRITE_ID_LEN);
		return;
	}
	crypto_generichash(h, sizeof h, ad + 1, WRITE_ID_LEN, vc->nk,
	    sizeof vc->nk);
	memset(npub, 0, WRITE_ID_LEN);
	memcpy(npub, h, crypto_aead_aes256gcm_NPUBBYTES);
}

void
bft_volcrypt_seal(const struct bft_volcrypt *vc, uint64_t block,
    const struct bft_ts *ts, const uint8_t in[BFT_BLOCK_SIZE],
    uint8_t out[BFT_SEALED_LEN])
{
	uint8_t ad[AD_LEN], npub[WRITE_ID_LEN];
	unsigned long long clen;

	derive(vc, block, ts, ad, npub);
	if (vc->aead == BFT_AEAD_AES256GCM)
		crypto_aead_aes256gcm_encrypt(out, &clen, in, BFT_BLOCK_SIZE,
		    ad, sizeof ad, NULL, npub, vc->k);
	else
		crypto_aead_xchacha20poly1305_ietf_encrypt(out, &clen, in,
		    BFT_BLOCK_SIZE, ad, sizeof ad, NULL, npub, vc->k);
}

int
bft_volcrypt_open(const struct bft_volcrypt *vc, uint64_t block,
    const struct bft_ts *ts, const uint8_t in[BFT_SEALED_LEN],
    uint8_t out[BFT_BLOCK_SIZE])
{
	uint8_t ad[AD_LEN], npub[WRITE_ID_LEN];
	unsigned long long mlen;
	int r;

	derive(vc, block, ts, ad, npub);
	if (vc->aead == BFT_AEAD_AES256GCM)
		r = crypto_aead_aes256gcm_decrypt(out, &mlen, NULL, in,
		    BFT_SEALED_LEN, ad, sizeof ad, npub, vc->k);
	else
		r = crypto_aead_xchacha20poly1305_ietf_decrypt(out, &mlen,
		    NULL, in, BFT_SEALED_LEN, ad, sizeof ad, npub, vc->k);
	if (r != 0 || mlen != BFT_BLOCK_SIZE) {
		/* Whatever the library left there is unauthenticated. */
		memset(out, 0, BFT_BLOCK_SIZE);
		return -EBADMSG;
	}
	return 0;
}
