/*
 * Cryptographic primitives of the protocol.
 *
 * H (fragments, nonces, cross-checksums) is BLAKE3-256, built from the
 * reference C sources Debian ships in librust-blake3-dev.  Chosen by
 * measurement (build/tests/bench-hash, 32 KiB fragments) on the 2-core
 * test machine, whose CPU has AVX-512 but no SHA-NI: BLAKE3 5.2 GB/s,
 * BLAKE2b 0.97 GB/s (H until store format 2), OpenSSL's SHA-256 0.28-0.40
 * GB/s.  A written block hashes twice its size, so this is ~135 us of
 * CPU per block down to ~25 us.  With AVX2 only BLAKE3 is about half as
 * fast, still ahead.  H is a cluster-wide constant: it is why the
 * channel version and the data directory's format number changed with
 * it.  MACs cover only short metadata and use keyed BLAKE2b-128 (~0.4 us
 * for 64 bytes).
 */
#ifndef BFTBLK_CRYPTO_H
#define BFTBLK_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/*
 * Must be called once before anything else here; thread-safe after.
 * 0, or -EIO when libsodium cannot start.
 */
int bft_crypto_init(void);

void bft_hash(const void *data, size_t len, uint8_t out[BFT_HASH_LEN]);

/*
 * H over data that arrives in pieces (the range digests of
 * common/summary.h), without gathering it first.  The state is BLAKE3's
 * own, kept opaque so that only crypto.c needs the BLAKE3 header.
 * Unlike bft_hash, it computes BLAKE3 in the benchmark-only
 * BENCH_NOVERIFY build too: nothing it hashes is a protocol check.
 */
struct bft_hasher {
	union {
		uint64_t align;
		uint8_t bytes[2048];
	} u;
};
void bft_hasher_init(struct bft_hasher *hs);
void bft_hasher_update(struct bft_hasher *hs, const void *data, size_t len);
void bft_hasher_final(const struct bft_hasher *hs,
    uint8_t out[BFT_HASH_LEN]);
void bft_random(void *buf, size_t len);
/* Zeroes a secret in a way the compiler cannot drop. */
void bft_wipe(void *buf, size_t len);
/* Constant-time equality of two byte strings. */
bool bft_equal(const void *a, const void *b, size_t len);

/*
 * MAC_kW(vol || block || num || wid), the authenticator of a timestamp
 * for one block; block here is its address (proto.h), which holds both:
 * a genuine timestamp of one block never passes as another's, in this
 * volume or any other.
 */
void bft_ts_sign(struct bft_ts *ts, uint64_t block,
    const uint8_t kw[BFT_KEY_LEN]);
bool bft_ts_verify(const struct bft_ts *ts, uint64_t block,
    const uint8_t kw[BFT_KEY_LEN]);

/*
 * vec[i] = MAC_ki(vol || block || ts || ts.mac || nh): what server i
 * checks on STORE and COMPLETE, and on write-backs without a history
 * entry; bound to the block like the timestamp's MAC.
 */
void bft_vec_mac(const struct bft_ts *ts, uint64_t block,
    const uint8_t nh[BFT_HASH_LEN], const uint8_t ki[BFT_KEY_LEN],
    uint8_t out[BFT_MAC_LEN]);
bool bft_vec_verify(const struct bft_ts *ts, uint64_t block,
    const uint8_t nh[BFT_HASH_LEN], const uint8_t ki[BFT_KEY_LEN],
    const uint8_t mac[BFT_MAC_LEN]);

/*
 * MAC_ki("D" || "drop" || vol): server i's proof that a writer asks it
 * to forget volume vol (DROP, wire.h).  Only writers hold k_i, as for a
 * STORE.  Its own domain byte and a length no other MAC here has keep
 * it from passing as a timestamp's or a MAC vector's, and them as it.
 */
/*
 * The keys a MAC check accepts: one epoch's and, while MAC keys are
 * being rotated (docs/key-epochs.md), the other epoch's, else NULL.
 * The other is tried only when the first fails, so outside a rotation
 * a check costs what it did, and no message says which epoch its MACs
 * are under.
 */
struct bft_mac_keys {
	const uint8_t *k;
	const uint8_t *alt;
};
bool bft_ts_check(const struct bft_ts *ts, uint64_t block,
    const struct bft_mac_keys *kw);
bool bft_vec_check(const struct bft_ts *ts, uint64_t block,
    const uint8_t nh[BFT_HASH_LEN], const struct bft_mac_keys *ki,
    const uint8_t mac[BFT_MAC_LEN]);

void bft_drop_mac(uint32_t vol, const uint8_t ki[BFT_KEY_LEN],
    uint8_t out[BFT_MAC_LEN]);
bool bft_drop_verify(uint32_t vol, const uint8_t ki[BFT_KEY_LEN],
    const uint8_t mac[BFT_MAC_LEN]);
bool bft_drop_check(uint32_t vol, const struct bft_mac_keys *ki,
    const uint8_t mac[BFT_MAC_LEN]);

/*
 * MAC_ki("S" || "snap" || vol || gen || op): server i's proof that a
 * writer asks it to keep (op 0) or forget (op 1) volume vol's view at
 * generation gen (SNAP, wire.h).  Forgetting one frees versions as
 * surely as a DROP, so only a writer may ask.  22 bytes, a length no
 * other MAC here has, behind its own domain byte.
 */
void bft_snap_mac(uint32_t vol, uint64_t gen, uint8_t op,
    const uint8_t ki[BFT_KEY_LEN], uint8_t out[BFT_MAC_LEN]);
bool bft_snap_verify(uint32_t vol, uint64_t gen, uint8_t op,
    const uint8_t ki[BFT_KEY_LEN], const uint8_t mac[BFT_MAC_LEN]);
bool bft_snap_check(uint32_t vol, uint64_t gen, uint8_t op,
    const struct bft_mac_keys *ki, const uint8_t mac[BFT_MAC_LEN]);

#endif
