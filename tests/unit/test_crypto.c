/*
 * Cryptographic primitives: H (BLAKE3-256, see crypto.h; known answers
 * from Debian's b3sum, an independent Rust implementation) and both MAC
 * layouts against known answers computed independently with Python's
 * hashlib, the timestamp MAC against every single-bit change, and the
 * separation of the timestamp MAC from the vector MAC, which is what
 * stops a timestamp authenticator from being replayed as a proof of
 * writing, and of DROP's MAC from both.  The known answers pin the
 * wire: H and the MAC layout are cluster-wide constants, so a change
 * must fail here first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "crypto.h"

/* The block every MAC here is for, unless a test says otherwise. */
#define BLK 7

static void
assert_hash_hex(const void *data, size_t len, const char *want)
{
	uint8_t h[BFT_HASH_LEN];
	char hex[2 * BFT_HASH_LEN + 1];

	bft_hash(data, len, h);
	bft_format_hex(h, BFT_HASH_LEN, hex);
	assert_string_equal(hex, want);
}

static int
setup(void **state)
{
	(void)state;
	return bft_crypto_init();
}

static void
test_hash_vectors(void **state)
{
	static const char two_blocks[] =
	    "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	uint8_t *million;

	(void)state;
	assert_hash_hex("", 0, "af1349b9f5f9a1a6a0404dea36dcc949"
	    "9bcb25c9adc112b7cc9a93cae41f3262");
	assert_hash_hex("abc", 3, "6437b3ac38465133ffb63b75273a8db5"
	    "48c558465d79db03fd359c6cd5bd9d85");
	assert_hash_hex(two_blocks, strlen(two_blocks),
	    "c19012cc2aaf0dc3d8e5c45a1b79114d"
	    "2df42abb2a410bf54be09e891af06ff8");
	million = malloc(1000000);
	assert_non_null(million);
	memset(million, 'a', 1000000);
	assert_hash_hex(million, 1000000, "616f575a1b58d4c9797d4217b9730ae5"
	    "e6eb319d76edef6549b46f4efe31ff8b");
	free(million);
	/* A NULL pointer with length 0 is how an empty fragment arrives. */
	assert_hash_hex(NULL, 0, "af1349b9f5f9a1a6a0404dea36dcc949"
	    "9bcb25c9adc112b7cc9a93cae41f3262");
}

/*
 * ts MAC = BLAKE2b-128(key k_W, 'T' || num_le64 || wid_le64) and vec MAC
 * = BLAKE2b-128(key k_i, 'V' || num_le64 || wid_le64 || ts.mac || H(N)), from
 * hashlib.blake2b(msg, digest_size=16, key=bytes(range(32))).
 */
static void
test_mac_vectors(void **state)
{
	uint8_t key[BFT_KEY_LEN], nh[BFT_HASH_LEN], m[BFT_MAC_LEN];
	char hex[2 * BFT_MAC_LEN + 1];
	struct bft_ts ts = { .num = 0x0102030405060708ull,
	    .wid = 0x1112131415161718ull };

	(void)state;
	for (unsigned i = 0; i < BFT_KEY_LEN; i++)
		key[i] = (uint8_t)i;
	for (unsigned i = 0; i < BFT_HASH_LEN; i++)
		nh[i] = (uint8_t)(0x40 + i);
	bft_ts_sign(&ts, BLK, key);
	bft_format_hex(ts.mac, BFT_MAC_LEN, hex);
	assert_string_equal(hex, "e2f59b778ca26ce369b05eb6389f6a0c");
	bft_vec_mac(&ts, BLK, nh, key, m);
	bft_format_hex(m, BFT_MAC_LEN, hex);
	assert_string_equal(hex, "aa86eb77f42b03259725e68721a15ef2");
}

/*
 * A timestamp MAC and a MAC vector entry are for one block: a Byzantine
 * server replaying a genuine write of block 7 as block 8's (or of any
 * block as another's) is caught by every check that takes them.
 */
static void
test_block_binding(void **state)
{
	uint8_t k[BFT_KEY_LEN], nh[BFT_HASH_LEN], m[BFT_MAC_LEN];
	struct bft_ts ts = { .num = 9, .wid = 3 };

	(void)state;
	bft_random(k, sizeof k);
	bft_random(nh, sizeof nh);
	bft_ts_sign(&ts, BLK, k);
	bft_vec_mac(&ts, BLK, nh, k, m);
	assert_true(bft_ts_verify(&ts, BLK, k));
	assert_true(bft_vec_verify(&ts, BLK, nh, k, m));
	for (uint64_t other = 0; other < 64; other++) {
		if (other == BLK)
			continue;
		assert_false(bft_ts_verify(&ts, other, k));
		assert_false(bft_vec_verify(&ts, other, nh, k, m));
	}
	assert_false(bft_ts_verify(&ts, BLK | 1ull << 63, k));
	assert_false(bft_vec_verify(&ts, BLK | 1ull << 32, nh, k, m));
}

/*
 * The same block number in another volume is another register: its
 * address (proto.h) differs only in the volume bits, and both MACs
 * name the volume.  Volume 0's address is the block number itself, so
 * its MACs are the ones test_known_answers pins.
 */
static void
test_volume_binding(void **state)
{
	static const uint32_t vols[] = { 1, 2, 255, 256, BFT_ADDR_MAX_VOL };
	uint8_t k[BFT_KEY_LEN], nh[BFT_HASH_LEN], m[BFT_MAC_LEN];
	struct bft_ts ts = { .num = 9, .wid = 3 }, t2;

	(void)state;
	assert_true(bft_addr(0, BLK) == BLK);
	assert_int_equal(bft_addr_vol(bft_addr(BFT_ADDR_MAX_VOL, 5)),
	    BFT_ADDR_MAX_VOL);
	assert_true(bft_addr_block(bft_addr(7, BFT_ADDR_MAX_BLOCK)) ==
	    BFT_ADDR_MAX_BLOCK);
	bft_random(k, sizeof k);
	bft_random(nh, sizeof nh);
	for (size_t v = 0; v < sizeof vols / sizeof vols[0]; v++) {
		uint64_t a = bft_addr(vols[v], BLK);

		t2 = ts;
		bft_ts_sign(&t2, a, k);
		bft_vec_mac(&t2, a, nh, k, m);
		assert_true(bft_ts_verify(&t2, a, k));
		assert_true(bft_vec_verify(&t2, a, nh, k, m));
		/* Replayed as volume 0's block BLK, or the next volume's. */
		assert_false(bft_ts_verify(&t2, BLK, k));
		assert_false(bft_vec_verify(&t2, BLK, nh, k, m));
		assert_false(bft_ts_verify(&t2, bft_addr(vols[v] - 1, BLK), k));
		assert_false(bft_vec_verify(&t2, bft_addr(vols[v] - 1, BLK),
		    nh, k, m));
	}
}

static void
test_ts_round_trip(void **state)
{
	uint8_t kw[BFT_KEY_LEN], other[BFT_KEY_LEN];
	struct bft_ts ts = { .num = 42, .wid = 0x1122334455667788ull };

	(void)state;
	bft_random(kw, sizeof kw);
	bft_random(other, sizeof other);
	bft_ts_sign(&ts, BLK, kw);
	assert_true(bft_ts_verify(&ts, BLK, kw));
	assert_false(bft_ts_verify(&ts, BLK, other));
	/* Keys one bit apart are unrelated keys. */
	for (unsigned b = 0; b < 8 * BFT_KEY_LEN; b++) {
		memcpy(other, kw, sizeof other);
		other[b / 8] ^= (uint8_t)(1u << (b % 8));
		assert_false(bft_ts_verify(&ts, BLK, other));
	}
	/* Signing is deterministic: the servers compare stored MACs. */
	{
		struct bft_ts again = { .num = ts.num, .wid = ts.wid };

		bft_ts_sign(&again, BLK, kw);
		assert_memory_equal(again.mac, ts.mac, BFT_MAC_LEN);
	}
	/* Extreme values are signed like any other. */
	ts.num = UINT64_MAX;
	ts.wid = UINT64_MAX;
	bft_ts_sign(&ts, BLK, kw);
	assert_true(bft_ts_verify(&ts, BLK, kw));
}

static void
test_ts_bit_flips(void **state)
{
	uint8_t kw[BFT_KEY_LEN];
	struct bft_ts ts, bad;

	(void)state;
	bft_random(kw, sizeof kw);
	bft_random(&ts.num, sizeof ts.num);
	bft_random(&ts.wid, sizeof ts.wid);
	bft_ts_sign(&ts, BLK, kw);
	assert_true(bft_ts_verify(&ts, BLK, kw));
	for (unsigned b = 0; b < 64; b++) {
		bad = ts;
		bad.num ^= 1ull << b;
		assert_false(bft_ts_verify(&bad, BLK, kw));
		bad = ts;
		bad.wid ^= 1ull << b;
		assert_false(bft_ts_verify(&bad, BLK, kw));
	}
	for (unsigned b = 0; b < 8 * BFT_MAC_LEN; b++) {
		bad = ts;
		bad.mac[b / 8] ^= (uint8_t)(1u << (b % 8));
		assert_false(bft_ts_verify(&bad, BLK, kw));
	}
	/* Swapping num and wid must not keep the MAC valid either. */
	bad = ts;
	bad.num = ts.wid;
	bad.wid = ts.num;
	if (bad.num != ts.num)
		assert_false(bft_ts_verify(&bad, BLK, kw));
	/* An all-zero MAC is no MAC. */
	memset(bad.mac, 0, BFT_MAC_LEN);
	bad.num = ts.num;
	bad.wid = ts.wid;
	assert_false(bft_ts_verify(&bad, BLK, kw));
}

static void
test_vec_mac(void **state)
{
	uint8_t k[BFT_KEY_LEN], k2[BFT_KEY_LEN], nh[BFT_HASH_LEN];
	uint8_t m[BFT_MAC_LEN], m2[BFT_MAC_LEN];
	struct bft_ts ts = { .num = 7, .wid = 3 }, t2;

	(void)state;
	bft_random(k, sizeof k);
	bft_random(k2, sizeof k2);
	bft_random(nh, sizeof nh);
	bft_vec_mac(&ts, BLK, nh, k, m);
	assert_true(bft_vec_verify(&ts, BLK, nh, k, m));
	assert_false(bft_vec_verify(&ts, BLK, nh, k2, m));
	for (unsigned b = 0; b < 8 * BFT_HASH_LEN; b++) {
		nh[b / 8] ^= (uint8_t)(1u << (b % 8));
		assert_false(bft_vec_verify(&ts, BLK, nh, k, m));
		nh[b / 8] ^= (uint8_t)(1u << (b % 8));
	}
	for (unsigned b = 0; b < 64; b++) {
		t2 = ts;
		t2.num ^= 1ull << b;
		assert_false(bft_vec_verify(&t2, BLK, nh, k, m));
		t2 = ts;
		t2.wid ^= 1ull << b;
		assert_false(bft_vec_verify(&t2, BLK, nh, k, m));
	}
	for (unsigned b = 0; b < 8 * BFT_MAC_LEN; b++) {
		memcpy(m2, m, sizeof m2);
		m2[b / 8] ^= (uint8_t)(1u << (b % 8));
		assert_false(bft_vec_verify(&ts, BLK, nh, k, m2));
	}
	/*
	 * The vector MAC covers the timestamp's own MAC as well, so a
	 * write-back with a garbled ts MAC cannot pass as valid at a server
	 * (it would make writers' CLOCK skip it and pick a lower timestamp).
	 */
	for (unsigned b = 0; b < 8 * BFT_MAC_LEN; b++) {
		t2 = ts;
		t2.mac[b / 8] ^= (uint8_t)(1u << (b % 8));
		assert_false(bft_vec_verify(&t2, BLK, nh, k, m));
	}
}

/*
 * Servers share keys with the writer, so a Byzantine party that obtained
 * a timestamp MAC made with some key must not be able to present it as a
 * vector entry made with the same key, for any related (ts, H(N)), and
 * the reverse.  Without the domain byte the attempts below would still
 * differ in length, so the test also tries every H(N) an attacker could
 * derive from the timestamp itself.
 */
static void
test_domain_separation(void **state)
{
	uint8_t k[BFT_KEY_LEN], nh[BFT_HASH_LEN], m[BFT_MAC_LEN];
	uint8_t le[16];
	struct bft_ts ts = { .num = 0x0102030405060708ull,
	    .wid = 0x1112131415161718ull }, asts;
	const uint8_t *cands[4];
	uint8_t zero[BFT_HASH_LEN] = { 0 }, ones[BFT_HASH_LEN];
	uint8_t tsle[BFT_HASH_LEN] = { 0 }, hts[BFT_HASH_LEN];

	(void)state;
	bft_random(k, sizeof k);
	bft_ts_sign(&ts, BLK, k);
	memset(ones, 0xff, sizeof ones);
	for (int i = 0; i < 8; i++) {
		le[i] = (uint8_t)(ts.num >> (8 * i));
		le[8 + i] = (uint8_t)(ts.wid >> (8 * i));
	}
	memcpy(tsle, le, sizeof le);
	bft_hash(le, sizeof le, hts);
	cands[0] = zero;
	cands[1] = ones;
	cands[2] = tsle;
	cands[3] = hts;
	for (int j = 0; j < 4; j++) {
		/* A timestamp MAC replayed as vec[i] for the same ts. */
		assert_false(bft_vec_verify(&ts, BLK, cands[j], k, ts.mac));
		/* ... or for the zero timestamp. */
		asts = (struct bft_ts){ 0 };
		assert_false(bft_vec_verify(&asts, BLK, cands[j], k, ts.mac));
		/* A vector MAC replayed as a timestamp MAC. */
		bft_vec_mac(&ts, BLK, cands[j], k, m);
		asts = ts;
		memcpy(asts.mac, m, BFT_MAC_LEN);
		assert_false(bft_ts_verify(&asts, BLK, k));
		assert_memory_not_equal(m, ts.mac, BFT_MAC_LEN);
	}
	/* Random H(N) for good measure. */
	for (int j = 0; j < 64; j++) {
		bft_random(nh, sizeof nh);
		assert_false(bft_vec_verify(&ts, BLK, nh, k, ts.mac));
	}
}

/*
 * DROP's MAC = BLAKE2b-128(key k_i, 'D' || "drop" || vol_le64), from
 * hashlib as above.  It is for one volume and one server's key.
 */
static void
test_drop_mac(void **state)
{
	uint8_t key[BFT_KEY_LEN], other[BFT_KEY_LEN], m[BFT_MAC_LEN];
	char hex[2 * BFT_MAC_LEN + 1];

	(void)state;
	for (unsigned i = 0; i < BFT_KEY_LEN; i++)
		key[i] = (uint8_t)i;
	bft_drop_mac(5, key, m);
	bft_format_hex(m, BFT_MAC_LEN, hex);
	assert_string_equal(hex, "97e6218f835c8b9a52459c245f0e1da3");
	assert_true(bft_drop_verify(5, key, m));
	for (uint32_t vol = 0; vol < 64; vol++)
		if (vol != 5)
			assert_false(bft_drop_verify(vol, key, m));
	assert_false(bft_drop_verify(5 | 1u << 23, key, m));
	assert_false(bft_drop_verify(BFT_ADDR_MAX_VOL, key, m));
	memcpy(other, key, sizeof other);
	other[31] ^= 1;
	assert_false(bft_drop_verify(5, other, m));
	bft_random(other, sizeof other);
	assert_false(bft_drop_verify(5, other, m));
	m[0] ^= 1;
	assert_false(bft_drop_verify(5, key, m));
}

/*
 * A DROP's MAC never passes as a timestamp's or a vector entry's, nor
 * they as a DROP's: whoever saw a writer's DROP cannot make a write of
 * it, and whoever saw a write cannot drop a volume with it.  Tried over
 * blocks of the volume and others, the timestamps an attacker could
 * pick (zero, and ones made of the MAC's own bytes) and the H(N) of
 * test_domain_separation.
 */
static void
test_drop_separation(void **state)
{
	static const uint32_t vols[] = { 0, 1, 5, BFT_ADDR_MAX_VOL - 1,
	    BFT_ADDR_MAX_VOL };
	uint8_t k[BFT_KEY_LEN], nh[BFT_HASH_LEN], m[BFT_MAC_LEN];
	uint8_t zero[BFT_HASH_LEN] = { 0 }, ones[BFT_HASH_LEN];
	struct bft_ts ts;

	(void)state;
	bft_random(k, sizeof k);
	memset(ones, 0xff, sizeof ones);
	for (size_t v = 0; v < sizeof vols / sizeof vols[0]; v++) {
		uint8_t dm[BFT_MAC_LEN];

		bft_drop_mac(vols[v], k, dm);
		for (uint64_t b = 0; b < 8; b++) {
			uint64_t blocks[2] = { bft_addr(vols[v], b), b };

			for (int j = 0; j < 2; j++) {
				const uint8_t *nhs[2] = { zero, ones };

				/* The DROP MAC as a timestamp's. */
				memset(&ts, 0, sizeof ts);
				memcpy(ts.mac, dm, BFT_MAC_LEN);
				assert_false(bft_ts_verify(&ts, blocks[j], k));
				ts.num = vols[v];
				assert_false(bft_ts_verify(&ts, blocks[j], k));
				/* ... and as a vector entry, for any ts. */
				for (int x = 0; x < 2; x++) {
					memset(&ts, 0, sizeof ts);
					assert_false(bft_vec_verify(&ts,
					    blocks[j], nhs[x], k, dm));
					memcpy(ts.mac, dm, BFT_MAC_LEN);
					assert_false(bft_vec_verify(&ts,
					    blocks[j], nhs[x], k, dm));
				}
				/* A write's MACs as a DROP's. */
				ts = (struct bft_ts){ .num = b + 1, .wid = 1 };
				bft_ts_sign(&ts, blocks[j], k);
				assert_false(bft_drop_verify(vols[v], k,
				    ts.mac));
				bft_random(nh, sizeof nh);
				bft_vec_mac(&ts, blocks[j], nh, k, m);
				assert_false(bft_drop_verify(vols[v], k, m));
				bft_vec_mac(&ts, blocks[j], zero, k, m);
				assert_false(bft_drop_verify(vols[v], k, m));
			}
		}
	}
}

static void
test_equal(void **state)
{
	uint8_t a[64], b[64];

	(void)state;
	bft_random(a, sizeof a);
	memcpy(b, a, sizeof b);
	assert_true(bft_equal(a, b, sizeof a));
	assert_true(bft_equal(a, b, 0));
	for (unsigned i = 0; i < sizeof a; i++) {
		b[i] ^= 0x80;
		assert_false(bft_equal(a, b, sizeof a));
		/* Only the first len bytes take part. */
		assert_true(bft_equal(a, b, i));
		b[i] ^= 0x80;
	}
}

static void
test_random(void **state)
{
	uint8_t a[32], b[32], zero[32] = { 0 };
	uint8_t big[4096];
	unsigned seen[256] = { 0 }, distinct = 0;

	(void)state;
	bft_random(a, sizeof a);
	bft_random(b, sizeof b);
	assert_memory_not_equal(a, b, sizeof a);
	assert_memory_not_equal(a, zero, sizeof a);
	/* Every byte value appears in 4 KiB except with negligible odds. */
	bft_random(big, sizeof big);
	for (unsigned i = 0; i < sizeof big; i++)
		if (seen[big[i]]++ == 0)
			distinct++;
	assert_true(distinct > 240);
	/* A zero-length request touches nothing. */
	memcpy(b, a, sizeof b);
	bft_random(a, 0);
	assert_memory_equal(a, b, sizeof a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_vectors),
		cmocka_unit_test(test_mac_vectors),
		cmocka_unit_test(test_block_binding),
		cmocka_unit_test(test_volume_binding),
		cmocka_unit_test(test_ts_round_trip),
		cmocka_unit_test(test_ts_bit_flips),
		cmocka_unit_test(test_vec_mac),
		cmocka_unit_test(test_domain_separation),
		cmocka_unit_test(test_drop_mac),
		cmocka_unit_test(test_drop_separation),
		cmocka_unit_test(test_equal),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
