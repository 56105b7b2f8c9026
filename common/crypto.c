/* H (BLAKE3); MACs and randomness from libsodium. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blake3.h>
#include <sodium.h>

#include "crypto.h"

#ifdef BFTBLK_BENCH_NOVERIFY
/*
 * Benchmark-only build (make BENCH_NOVERIFY=1, into build-noverify/):
 * H and every MAC below return zeros, so the protocol runs unchanged,
 * messages keep their shape and every check passes (zeros equal zeros),
 * but no fragment, nonce or MAC is ever computed.  This measures what
 * the BFT crypto costs (docs/performance.md); such a build has no Byzantine
 * tolerance at all.  All the switch lives here, so the same code path
 * runs in both builds.  It refuses to start unless the environment says
 * the operator knows, so a stray binary cannot serve real data.
 */
#define NOVERIFY_ENV "BFTBLK_BENCH_NOVERIFY"

int
bft_crypto_init(void)
{
	const char *ok = getenv(NOVERIFY_ENV);

	fprintf(stderr,
	    "\n*** WARNING: bftblk built with BENCH_NOVERIFY: fragment hashes"
	    " and MACs are\n*** NOT computed or checked.  NO Byzantine fault"
	    " tolerance.  Benchmarks only.\n");
	if (ok == NULL || strcmp(ok, "1") != 0) {
		fprintf(stderr, "*** Refusing to run: set %s=1 to run this "
		    "benchmark build.\n\n", NOVERIFY_ENV);
		return -EPERM;
	}
	fprintf(stderr, "*** %s=1 is set: running anyway.\n\n",
	    NOVERIFY_ENV);
	return sodium_init() < 0 ? -EIO : 0;
}

void
bft_hash(const void *data, size_t len, uint8_t out[BFT_HASH_LEN])
{
	(void)data;
	(void)len;
	memset(out, 0, BFT_HASH_LEN);
}
#else
int
bft_crypto_init(void)
{
	uint8_t h[BFT_HASH_LEN];

	if (sodium_init() < 0)
		return -EIO;
	/*
	 * BLAKE3 picks its SIMD code on first use and caches the choice in
	 * a plain global; doing it here, before any thread starts, keeps
	 * that write from racing.
	 */
	bft_hash("", 0, h);
	return 0;
}

void
bft_hash(const void *data, size_t len, uint8_t out[BFT_HASH_LEN])
{
	blake3_hasher hs;

	blake3_hasher_init(&hs);
	blake3_hasher_update(&hs, data, len);
	blake3_hasher_finalize(&hs, out, BFT_HASH_LEN);
}
#endif

_Static_assert(sizeof(blake3_hasher) <= sizeof(struct bft_hasher),
    "struct bft_hasher holds a blake3_hasher");
_Static_assert(_Alignof(blake3_hasher) <= _Alignof(struct bft_hasher),
    "struct bft_hasher is aligned for a blake3_hasher");

void
bft_hasher_init(struct bft_hasher *hs)
{
	blake3_hasher_init((blake3_hasher *)hs->u.bytes);
}

void
bft_hasher_update(struct bft_hasher *hs, const void *data, size_t len)
{
	blake3_hasher_update((blake3_hasher *)hs->u.bytes, data, len);
}

void
bft_hasher_final(const struct bft_hasher *hs, uint8_t out[BFT_HASH_LEN])
{
	blake3_hasher_finalize((const blake3_hasher *)hs->u.bytes, out,
	    BFT_HASH_LEN);
}

void
bft_random(void *buf, size_t len)
{
	randombytes_buf(buf, len);
}

void
bft_wipe(void *buf, size_t len)
{
	sodium_memzero(buf, len);
}

bool
bft_equal(const void *a, const void *b, size_t len)
{
	return sodium_memcmp(a, b, len) == 0;
}

static void
mac(const uint8_t key[BFT_KEY_LEN], const uint8_t *msg, size_t len,
    uint8_t out[BFT_MAC_LEN])
{
#ifdef BFTBLK_BENCH_NOVERIFY
	(void)key;
	(void)msg;
	(void)len;
	memset(out, 0, BFT_MAC_LEN);	/* see bft_crypto_init */
#else
	crypto_generichash(out, BFT_MAC_LEN, msg, len, key, BFT_KEY_LEN);
#endif
}

/* Fixed little-endian layout so MACs agree across hosts. */
static size_t
put_ts(uint8_t *p, const struct bft_ts *ts)
{
	for (int i = 0; i < 8; i++) {
		p[i] = (uint8_t)(ts->num >> (8 * i));
		p[8 + i] = (uint8_t)(ts->wid >> (8 * i));
	}
	return 16;
}

/*
 * Where a MAC's write belongs: the volume and the block within it, each
 * in 8 bytes, so that no genuine timestamp or MAC vector can be
 * replayed as another block's or another volume's.  The default
 * volume's MACs are those made before volumes, when the first 8 bytes
 * were always 0.
 */
static size_t
put_where(uint8_t *p, uint64_t addr)
{
	uint64_t vol = bft_addr_vol(addr), block = bft_addr_block(addr);

	for (int i = 0; i < 8; i++) {
		p[i] = (uint8_t)(vol >> (8 * i));
		p[8 + i] = (uint8_t)(block >> (8 * i));
	}
	return 16;
}

void
bft_ts_sign(struct bft_ts *ts, uint64_t block, const uint8_t kw[BFT_KEY_LEN])
{
	uint8_t msg[1 + 16 + 16];

	/* A domain byte keeps a timestamp MAC from ever passing as a vec MAC. */
	msg[0] = 'T';
	put_where(msg + 1, block);
	put_ts(msg + 17, ts);
	mac(kw, msg, sizeof msg, ts->mac);
}

bool
bft_ts_verify(const struct bft_ts *ts, uint64_t block,
    const uint8_t kw[BFT_KEY_LEN])
{
	struct bft_ts t = *ts;

	bft_ts_sign(&t, block, kw);
	return bft_equal(t.mac, ts->mac, BFT_MAC_LEN);
}

void
bft_vec_mac(const struct bft_ts *ts, uint64_t block,
    const uint8_t nh[BFT_HASH_LEN], const uint8_t ki[BFT_KEY_LEN],
    uint8_t out[BFT_MAC_LEN])
{
	uint8_t msg[1 + 16 + 16 + BFT_MAC_LEN + BFT_HASH_LEN];

	/*
	 * The timestamp's own MAC is covered too.  Otherwise a reader could
	 * write back a real candidate with its ts MAC garbled: servers would
	 * take it into lc on the strength of vec, and writers, whose CLOCK
	 * skips timestamps that fail k_W, would then choose a timestamp
	 * below a completed write.
	 */
	msg[0] = 'V';
	put_where(msg + 1, block);
	put_ts(msg + 17, ts);
	memcpy(msg + 33, ts->mac, BFT_MAC_LEN);
	memcpy(msg + 33 + BFT_MAC_LEN, nh, BFT_HASH_LEN);
	mac(ki, msg, sizeof msg, out);
}

bool
bft_vec_verify(const struct bft_ts *ts, uint64_t block,
    const uint8_t nh[BFT_HASH_LEN], const uint8_t ki[BFT_KEY_LEN],
    const uint8_t m[BFT_MAC_LEN])
{
	uint8_t want[BFT_MAC_LEN];

	bft_vec_mac(ts, block, nh, ki, want);
	return bft_equal(want, m, BFT_MAC_LEN);
}

void
bft_drop_mac(uint32_t vol, const uint8_t ki[BFT_KEY_LEN],
    uint8_t out[BFT_MAC_LEN])
{
	uint8_t msg[1 + 4 + 8];

	/* 13 bytes: a timestamp's message has 33, a vector entry's 81. */
	msg[0] = 'D';
	memcpy(msg + 1, "drop", 4);
	for (int i = 0; i < 8; i++)
		msg[5 + i] = (uint8_t)((uint64_t)vol >> (8 * i));
	mac(ki, msg, sizeof msg, out);
}

bool
bft_drop_verify(uint32_t vol, const uint8_t ki[BFT_KEY_LEN],
    const uint8_t m[BFT_MAC_LEN])
{
	uint8_t want[BFT_MAC_LEN];

	bft_drop_mac(vol, ki, want);
	return bft_equal(want, m, BFT_MAC_LEN);
}

void
bft_snap_mac(uint32_t vol, uint64_t gen, uint8_t op,
    const uint8_t ki[BFT_KEY_LEN], uint8_t out[BFT_MAC_LEN])
{
	uint8_t msg[1 + 4 + 8 + 8 + 1];

	msg[0] = 'S';
	memcpy(msg + 1, "snap", 4);
	for (int i = 0; i < 8; i++) {
		msg[5 + i] = (uint8_t)((uint64_t)vol >> (8 * i));
		msg[13 + i] = (uint8_t)(gen >> (8 * i));
	}
	msg[21] = op;
	mac(ki, msg, sizeof msg, out);
}

bool
bft_snap_verify(uint32_t vol, uint64_t gen, uint8_t op,
    const uint8_t ki[BFT_KEY_LEN], const uint8_t m[BFT_MAC_LEN])
{
	uint8_t want[BFT_MAC_LEN];

	bft_snap_mac(vol, gen, op, ki, want);
	return bft_equal(want, m, BFT_MAC_LEN);
}

bool
bft_ts_check(const struct bft_ts *ts, uint64_t block,
    const struct bft_mac_keys *kw)
{
	return bft_ts_verify(ts, block, kw->k) ||
	    (kw->alt != NULL && bft_ts_verify(ts, block, kw->alt));
}

bool
bft_vec_check(const struct bft_ts *ts, uint64_t block,
    const uint8_t nh[BFT_HASH_LEN], const struct bft_mac_keys *ki,
    const uint8_t m[BFT_MAC_LEN])
{
	return bft_vec_verify(ts, block, nh, ki->k, m) ||
	    (ki->alt != NULL && bft_vec_verify(ts, block, nh, ki->alt, m));
}

bool
bft_drop_check(uint32_t vol, const struct bft_mac_keys *ki,
    const uint8_t m[BFT_MAC_LEN])
{
	return bft_drop_verify(vol, ki->k, m) ||
	    (ki->alt != NULL && bft_drop_verify(vol, ki->alt, m));
}

bool
bft_snap_check(uint32_t vol, uint64_t gen, uint8_t op,
    const struct bft_mac_keys *ki, const uint8_t m[BFT_MAC_LEN])
{
	return bft_snap_verify(vol, gen, op, ki->k, m) ||
	    (ki->alt != NULL && bft_snap_verify(vol, gen, op, ki->alt, m));
}
