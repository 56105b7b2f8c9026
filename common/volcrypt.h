/*
 * Client-side encryption of blocks (plugin option encrypt=on): each 64
 * KiB block is sealed with an AEAD under the volume key before erasure
 * coding, so servers hold fragments of ciphertext only, and a reader
 * opens and verifies it after decoding.
 *
 * The sealed value is block || 16-byte tag (BFT_SEALED_LEN bytes).  The
 * nonce and the associated data are derived from (block number, ts.num,
 * ts.wid) of the write, so a ciphertext moved to another block, or an
 * old ciphertext presented under a newer timestamp, fails to open.  No
 * nonce is stored: the reader recomputes it from the block number and
 * the timestamp of the candidate it decoded.  This is sound because one
 * (block, num, wid) names at most one value: the plugin's writer ids
 * are random and change after every write that fails past CLOCK (see
 * README), which the protocol itself needs, so a nonce never seals two
 * different plaintexts.  (That is also why encrypt=on refuses a fixed
 * writer-id=: after a crash it could reuse a timestamp.)
 *
 * AEAD, measured with build/tests/bench-aead on the 2-core development
 * machine (libsodium 1.0.18, AES-NI + AVX-512 CPU; 64 KiB, median of 9
 * runs x 2000, three sittings):
 *
 *   xchacha20poly1305_ietf   seal 1066-1087 MB/s  open 1180-1246 MB/s
 *   chacha20poly1305_ietf    seal 1079-1093 MB/s  open 1167-1248 MB/s
 *   aes256gcm                seal 1593-1701 MB/s  open 1612-1667 MB/s
 *
 * AES-256-GCM is about 1.5x faster (~40 against ~61 us per block), so
 * new volume keys use it where crypto_aead_aes256gcm_is_available();
 * XChaCha20-Poly1305 is the choice for CPUs without AES-NI and PCLMUL.
 * The key file records the AEAD, so a volume is always opened with the
 * one it was written with; an aes256gcm volume on a CPU without AES-NI
 * is refused with an error (libsodium has no software fallback).
 */
#ifndef BFTBLK_VOLCRYPT_H
#define BFTBLK_VOLCRYPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define BFT_VOLCRYPT_TAG_LEN 16
/* What a register holds with encrypt=on: ciphertext then tag. */
#define BFT_SEALED_LEN (BFT_BLOCK_SIZE + BFT_VOLCRYPT_TAG_LEN)

enum bft_aead {
	BFT_AEAD_AES256GCM = 1,
	BFT_AEAD_XCHACHA20POLY1305 = 2,
};

/* The contents of a volume key file (bftblk volume-key). */
struct bft_volume_key {
	enum bft_aead aead;
	uint8_t key[BFT_KEY_LEN];
};

/* Keys derived from the volume key, ready to seal and open. */
struct bft_volcrypt {
	enum bft_aead aead;
	uint8_t k[BFT_KEY_LEN];		/* AEAD key */
	uint8_t nk[BFT_KEY_LEN];	/* AES-GCM nonce derivation key */
};

/* "aes256gcm" or "xchacha20poly1305"; NULL for an unknown value. */
const char *bft_aead_name(enum bft_aead aead);
/* 0 and *aead, or -EINVAL for an unknown name. */
int bft_aead_parse(const char *name, enum bft_aead *aead);
/* Whether this CPU (through libsodium) can run aead. */
bool bft_aead_available(enum bft_aead aead);
/* The faster AEAD this CPU runs: AES-256-GCM where it can. */
enum bft_aead bft_aead_default(void);

/*
 * Derives the working keys.  Needs bft_crypto_init() first.  0, or a
 * negative errno with a reason in err: -ENOTSUP when the AEAD cannot run
 * on this CPU, -EINVAL for an unknown one, -EIO when derivation fails.
 */
int bft_volcrypt_init(struct bft_volcrypt *vc, const struct bft_volume_key *vk,
		      char *err, size_t errlen);
/*
 * A volume key's public id, which the volume table records so that a
 * client opening the volume can tell it was given the volume's own key.
 */
#define BFT_VOLUME_KEY_ID_LEN	16
void bft_volume_key_id(const struct bft_volume_key *vk,
    uint8_t out[BFT_VOLUME_KEY_ID_LEN]);
/* Wipes the keys. */
void bft_volcrypt_wipe(struct bft_volcrypt *vc);

/* Seals the plaintext block written at ts into out. Thread-safe. */
void bft_volcrypt_seal(const struct bft_volcrypt *vc, uint64_t block,
		       const struct bft_ts *ts,
		       const uint8_t in[BFT_BLOCK_SIZE],
		       uint8_t out[BFT_SEALED_LEN]);
/*
 * Opens a sealed value read at (block, ts) into out.  Returns 0, or
 * -EBADMSG when it does not authenticate (wrong key, block, timestamp,
 * or altered bytes); out is then all zeros, never unauthenticated
 * plaintext.  Thread-safe.
 */
int bft_volcrypt_open(const struct bft_volcrypt *vc, uint64_t block,
		      const struct bft_ts *ts,
		      const uint8_t in[BFT_SEALED_LEN],
		      uint8_t out[BFT_BLOCK_SIZE]);

#endif
