/*
 * Client-side block encryption (common/volcrypt.c) and volume key files:
 * a sealed block opens back to the same bytes only at the block number
 * and timestamp it was sealed for and only under its key; any flipped
 * byte of ciphertext or tag fails; a ciphertext moved to another block
 * (a block swap) or shown under a newer timestamp (a rollback) fails; a
 * failed open leaves zeros, never unauthenticated plaintext.  Every
 * check runs for both AEADs (AES-256-GCM only where the CPU has AES-NI).
 * Key files load back, are 0600, are never overwritten, and are refused
 * when group or others can read them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "crypto.h"
#include "keys.h"
#include "volcrypt.h"

static const enum bft_aead aeads[] = {
	BFT_AEAD_AES256GCM, BFT_AEAD_XCHACHA20POLY1305,
};

struct fixture {
	struct bft_volcrypt vc;
	uint8_t *plain, *sealed, *out;
};

static void
fixture_init(struct fixture *f, enum bft_aead aead)
{
	struct bft_volume_key vk = { .aead = aead };
	char err[256] = "";

	bft_random(vk.key, sizeof vk.key);
	if (bft_volcrypt_init(&f->vc, &vk, err, sizeof err) != 0)
		fail_msg("bft_volcrypt_init(%s): %s", bft_aead_name(aead), err);
	f->plain = malloc(BFT_BLOCK_SIZE);
	f->sealed = malloc(BFT_SEALED_LEN);
	f->out = malloc(BFT_BLOCK_SIZE);
	assert_non_null(f->plain);
	assert_non_null(f->sealed);
	assert_non_null(f->out);
	bft_random(f->plain, BFT_BLOCK_SIZE);
}

static void
fixture_free(struct fixture *f)
{
	bft_volcrypt_wipe(&f->vc);
	free(f->plain);
	free(f->sealed);
	free(f->out);
}

/* Opens f->sealed at (block, ts); on failure f->out must be all zeros. */
static int
try_open(struct fixture *f, uint64_t block, const struct bft_ts *ts)
{
	static const uint8_t zero[BFT_BLOCK_SIZE];

	memset(f->out, 0xa5, BFT_BLOCK_SIZE);
	if (bft_volcrypt_open(&f->vc, block, ts, f->sealed, f->out) == 0)
		return 0;
	assert_memory_equal(f->out, zero, BFT_BLOCK_SIZE);
	return -1;
}

/* Runs fn for every AEAD this CPU has. */
static void
each_aead(void (*fn)(enum bft_aead))
{
	unsigned ran = 0;

	for (size_t i = 0; i < sizeof aeads / sizeof aeads[0]; i++) {
		if (!bft_aead_available(aeads[i])) {
			print_message("%s not available here; skipped\n",
			    bft_aead_name(aeads[i]));
			continue;
		}
		fn(aeads[i]);
		ran++;
	}
	assert_true(ran > 0);
}

static void
round_trip(enum bft_aead aead)
{
	struct fixture f;
	struct bft_ts ts = { .num = 7, .wid = 0x1234567890abcdefull };
	uint8_t *again = malloc(BFT_SEALED_LEN);

	assert_non_null(again);
	fixture_init(&f, aead);
	bft_volcrypt_seal(&f.vc, 42, &ts, f.plain, f.sealed);
	/* Servers must not see the plaintext, not even a prefix of it. */
	assert_memory_not_equal(f.sealed, f.plain, 64);
	assert_int_equal(try_open(&f, 42, &ts), 0);
	assert_memory_equal(f.out, f.plain, BFT_BLOCK_SIZE);
	/* The nonce is derived, not random: a reader recomputes it. */
	bft_volcrypt_seal(&f.vc, 42, &ts, f.plain, again);
	assert_memory_equal(again, f.sealed, BFT_SEALED_LEN);
	/* Another write of the same bytes looks unrelated. */
	ts.num++;
	bft_volcrypt_seal(&f.vc, 42, &ts, f.plain, again);
	assert_memory_not_equal(again, f.sealed, 64);
	/* Zeros (zero and trim requests) are sealed like any block. */
	memset(f.plain, 0, BFT_BLOCK_SIZE);
	bft_volcrypt_seal(&f.vc, 0, &ts, f.plain, f.sealed);
	assert_memory_not_equal(f.sealed, f.plain, 64);
	assert_int_equal(try_open(&f, 0, &ts), 0);
	assert_memory_equal(f.out, f.plain, BFT_BLOCK_SIZE);
	free(again);
	fixture_free(&f);
}

static void
test_round_trip(void **state)
{
	(void)state;
	each_aead(round_trip);
}

static void
wrong_place(enum bft_aead aead)
{
	struct fixture f;
	const struct bft_ts ts = { .num = 100, .wid = 77 };
	struct bft_ts t2;

	fixture_init(&f, aead);
	bft_volcrypt_seal(&f.vc, 5, &ts, f.plain, f.sealed);
	assert_int_equal(try_open(&f, 5, &ts), 0);
	assert_int_equal(try_open(&f, 4, &ts), -1);
	assert_int_equal(try_open(&f, 6, &ts), -1);
	assert_int_equal(try_open(&f, 5 | (1ull << 40), &ts), -1);
	t2 = ts;
	t2.num++;		/* an old ciphertext under a newer timestamp */
	assert_int_equal(try_open(&f, 5, &t2), -1);
	t2.num = ts.num - 1;
	assert_int_equal(try_open(&f, 5, &t2), -1);
	t2 = ts;
	t2.wid ^= 1;		/* the same num by another writer */
	assert_int_equal(try_open(&f, 5, &t2), -1);
	/* The timestamp's MAC is the protocol's business, not the AD's. */
	t2 = ts;
	t2.mac[0] ^= 1;
	assert_int_equal(try_open(&f, 5, &t2), 0);
	fixture_free(&f);
}

static void
test_wrong_block_or_ts(void **state)
{
	(void)state;
	each_aead(wrong_place);
}

/*
 * A Byzantine majority swaps two blocks' registers: each ciphertext,
 * with its own genuine timestamp, is served for the other block.
 */
static void
swap(enum bft_aead aead)
{
	struct fixture f;
	const struct bft_ts ta = { .num = 3, .wid = 9 }, tb = { .num = 3,
	    .wid = 9 };
	uint8_t *sealed_b = malloc(BFT_SEALED_LEN);

	assert_non_null(sealed_b);
	fixture_init(&f, aead);
	bft_volcrypt_seal(&f.vc, 10, &tb, f.plain, sealed_b);
	bft_volcrypt_seal(&f.vc, 11, &ta, f.plain, f.sealed);
	/* Same plaintext, same timestamp: only the block number differs. */
	assert_int_equal(try_open(&f, 10, &tb), -1);
	memcpy(f.sealed, sealed_b, BFT_SEALED_LEN);
	assert_int_equal(try_open(&f, 11, &ta), -1);
	assert_int_equal(try_open(&f, 10, &tb), 0);
	free(sealed_b);
	fixture_free(&f);
}

static void
test_block_swap(void **state)
{
	(void)state;
	each_aead(swap);
}

static void
flips(enum bft_aead aead)
{
	struct fixture f;
	const struct bft_ts ts = { .num = 1, .wid = 3 };
	const size_t where[] = { 0, 1, 4095, BFT_BLOCK_SIZE / 2,
	    BFT_BLOCK_SIZE - 1, BFT_BLOCK_SIZE, BFT_BLOCK_SIZE + 7,
	    BFT_SEALED_LEN - 1 };

	fixture_init(&f, aead);
	bft_volcrypt_seal(&f.vc, 9, &ts, f.plain, f.sealed);
	for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
		f.sealed[where[i]] ^= 0x01;
		if (try_open(&f, 9, &ts) == 0)
			fail_msg("%s: flipped byte %zu opened",
			    bft_aead_name(aead), where[i]);
		f.sealed[where[i]] ^= 0x01;
	}
	assert_int_equal(try_open(&f, 9, &ts), 0);
	assert_memory_equal(f.out, f.plain, BFT_BLOCK_SIZE);
	fixture_free(&f);
}

/*
 * The same swap across volumes: block 10 of volume 1 served as block 10
 * of volume 2 (or of volume 0), under the same key and timestamp.  The
 * associated data is the block's address, which names the volume, so a
 * key shared by two volumes still keeps their blocks apart; and each
 * volume's own key opens only its own.
 */
static void
volume_swap(enum bft_aead aead)
{
	struct fixture f, g;
	const struct bft_ts ts = { .num = 3, .wid = 9 };
	uint64_t a1 = bft_addr(1, 10), a2 = bft_addr(2, 10);

	fixture_init(&f, aead);
	bft_volcrypt_seal(&f.vc, a1, &ts, f.plain, f.sealed);
	assert_int_equal(try_open(&f, a1, &ts), 0);
	assert_int_equal(try_open(&f, a2, &ts), -1);
	assert_int_equal(try_open(&f, 10, &ts), -1);
	/* Volume 2's key, another fixture's, does not open volume 1's. */
	fixture_init(&g, aead);
	memcpy(g.sealed, f.sealed, BFT_SEALED_LEN);
	assert_int_equal(try_open(&g, a1, &ts), -1);
	fixture_free(&g);
	fixture_free(&f);
}

static void
test_volume_swap(void **state)
{
	(void)state;
	each_aead(volume_swap);
}

static void
test_flipped_bytes(void **state)
{
	(void)state;
	each_aead(flips);
}

static void
wrong_key(enum bft_aead aead)
{
	struct fixture f, g;
	const struct bft_ts ts = { .num = 2, .wid = 5 };

	fixture_init(&f, aead);
	fixture_init(&g, aead);
	bft_volcrypt_seal(&f.vc, 1, &ts, f.plain, f.sealed);
	memcpy(g.sealed, f.sealed, BFT_SEALED_LEN);
	assert_int_equal(try_open(&g, 1, &ts), -1);
	fixture_free(&f);
	fixture_free(&g);
}

static void
test_wrong_key(void **state)
{
	(void)state;
	each_aead(wrong_key);
}

/* The same key bytes under the other AEAD must not open either. */
static void
test_wrong_aead(void **state)
{
	struct bft_volume_key vk = { .aead = BFT_AEAD_XCHACHA20POLY1305 };
	struct bft_volcrypt x, a;
	const struct bft_ts ts = { .num = 1, .wid = 1 };
	uint8_t *in = calloc(1, BFT_BLOCK_SIZE), *s = malloc(BFT_SEALED_LEN);
	char err[256];

	(void)state;
	if (!bft_aead_available(BFT_AEAD_AES256GCM))
		skip();
	assert_non_null(in);
	assert_non_null(s);
	bft_random(vk.key, sizeof vk.key);
	assert_int_equal(bft_volcrypt_init(&x, &vk, err, sizeof err), 0);
	vk.aead = BFT_AEAD_AES256GCM;
	assert_int_equal(bft_volcrypt_init(&a, &vk, err, sizeof err), 0);
	bft_volcrypt_seal(&x, 0, &ts, in, s);
	assert_int_equal(bft_volcrypt_open(&a, 0, &ts, s, in), -EBADMSG);
	bft_volcrypt_seal(&a, 0, &ts, in, s);
	assert_int_equal(bft_volcrypt_open(&x, 0, &ts, s, in), -EBADMSG);
	free(in);
	free(s);
}

static void
test_names(void **state)
{
	enum bft_aead a;

	(void)state;
	for (size_t i = 0; i < sizeof aeads / sizeof aeads[0]; i++) {
		assert_int_equal(bft_aead_parse(bft_aead_name(aeads[i]), &a),
		    0);
		assert_int_equal(a, aeads[i]);
	}
	assert_int_equal(bft_aead_parse("aes128gcm", &a), -EINVAL);
	assert_int_equal(bft_aead_parse("", &a), -EINVAL);
	assert_null(bft_aead_name((enum bft_aead)0));
	assert_true(bft_aead_available(bft_aead_default()));
}

static char dir[64], path[128];

static const char *
in_dir(const char *name)
{
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return path;
}

/* Writes text to dir/name with the given mode. */
static const char *
put(const char *name, const char *text, mode_t mode)
{
	int fd = open(in_dir(name), O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
	return path;
}

static void
test_key_file(void **state)
{
	static const mode_t loose[] = { 0644, 0640, 0604, 0660, 0606, 0610 };
	struct bft_volume_key vk = { .aead = BFT_AEAD_XCHACHA20POLY1305 },
	    back;
	char err[1024];
	struct stat sb;

	(void)state;
	strcpy(dir, "/tmp/bftblk-test-volcrypt.XXXXXX");
	assert_non_null(mkdtemp(dir));
	bft_random(vk.key, sizeof vk.key);

	/* Written 0600, loads back identically, never overwritten. */
	assert_int_equal(bft_volume_key_write(in_dir("vol.key"), &vk), 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	if (bft_volume_key_load(path, &back, err, sizeof err) != 0)
		fail_msg("%s", err);
	assert_int_equal(back.aead, vk.aead);
	assert_memory_equal(back.key, vk.key, BFT_KEY_LEN);
	vk.aead = BFT_AEAD_AES256GCM;
	assert_int_equal(bft_volume_key_write(path, &vk), -EEXIST);
	assert_int_equal(bft_volume_key_load(path, &back, err, sizeof err),
	    0);
	assert_int_equal(back.aead, BFT_AEAD_XCHACHA20POLY1305);

	/* Group or others may read it: refused, with the fix named. */
	for (size_t j = 0; j < sizeof loose / sizeof loose[0]; j++) {
		assert_int_equal(chmod(in_dir("vol.key"), loose[j]), 0);
		assert_int_equal(bft_volume_key_load(path, &back, err,
		    sizeof err), -EPERM);
		assert_non_null(strstr(err, "chmod 600"));
		for (size_t b = 0; b < BFT_KEY_LEN; b++)
			assert_int_equal(back.key[b], 0);
	}
	assert_int_equal(chmod(in_dir("vol.key"), 0400), 0);
	assert_int_equal(bft_volume_key_load(path, &back, err, sizeof err),
	    0);

	/* Malformed files: each refused. */
	put("noaead.key", "key = " "00112233445566778899aabbccddeeff"
	    "00112233445566778899aabbccddeeff\n", 0600);
	assert_int_equal(bft_volume_key_load(path, &back, err, sizeof err),
	    -EINVAL);
	assert_non_null(strstr(err, "not a volume key file"));
	put("badaead.key", "aead = rot13\nkey = " "00112233445566778899aabb"
	    "ccddeeff00112233445566778899aabbccddeeff\n", 0600);
	assert_int_equal(bft_volume_key_load(path, &back, err, sizeof err),
	    -EINVAL);
	assert_non_null(strstr(err, "aead"));
	put("shortkey.key", "aead = aes256gcm\nkey = 0011\n", 0600);
	assert_int_equal(bft_volume_key_load(path, &back, err, sizeof err),
	    -EINVAL);
	put("extra.key", "aead = aes256gcm\ncluster-id = 00\n", 0600);
	assert_int_equal(bft_volume_key_load(path, &back, err, sizeof err),
	    -EINVAL);
	assert_non_null(strstr(err, "unknown key"));

	unlink(in_dir("vol.key"));
	unlink(in_dir("noaead.key"));
	unlink(in_dir("badaead.key"));
	unlink(in_dir("shortkey.key"));
	unlink(in_dir("extra.key"));
	assert_int_equal(rmdir(dir), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_wrong_block_or_ts),
		cmocka_unit_test(test_block_swap),
		cmocka_unit_test(test_volume_swap),
		cmocka_unit_test(test_flipped_bytes),
		cmocka_unit_test(test_wrong_key),
		cmocka_unit_test(test_wrong_aead),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_key_file),
	};

	if (bft_crypto_init() != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
