/*
 * MAC key epochs in key files (common/keys.h, docs/key-epochs.md): what
 * `bftblk keys rotate` writes loads back exactly, a file without epochs
 * stays as release 0.2.0 wrote it, and every half-made or skipping
 * rotation is refused with a reason.  Also the checks under two epochs
 * (crypto.h): either passes, a third does not; and which is the newest.
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

#include <cmocka.h>

#include "crypto.h"
#include "keys.h"

#define HEX32 "00112233445566778899aabbccddeeff"
#define KEY HEX32 HEX32
#define WRITER "cluster-id = " HEX32 "\nname = w\nrole = rw\nchan-key = " \
	KEY "\nn = 4\nkey.0 = " KEY "\nkey.1 = " KEY "\nkey.2 = " KEY \
	"\nkey.3 = " KEY "\nwriter-key = " KEY "\n"
#define NEXT_KEYS "next-key.0 = " KEY "\nnext-key.1 = " KEY "\nnext-key.2 = " \
	KEY "\nnext-key.3 = " KEY "\nnext-writer-key = " KEY "\n"
#define SERVER "cluster-id = " HEX32 "\nindex = 2\nkey = " KEY \
	"\nchan-key = " KEY "\n"

static char dir[64];
static char err[1024];

static const char *
put(const char *name, const char *text)
{
	static char p[160];
	int fd;

	snprintf(p, sizeof p, "%s/%s", dir, name);
	unlink(p);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return p;
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/bftblk-epochs.XXXXXX");
	assert_non_null(mkdtemp(dir));
	return bft_crypto_init();
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* What a rotation writes loads back as written, for both kinds. */
static void
test_round_trip(void **state)
{
	struct bft_client_key ck, cback;
	struct bft_server_key sk, sback;
	char p[160];

	(void)state;
	memset(&ck, 0, sizeof ck);
	bft_random(ck.cluster_id, sizeof ck.cluster_id);
	ck.n = 4;
	bft_random(ck.k, 4 * BFT_KEY_LEN);
	bft_random(ck.kw, sizeof ck.kw);
	strcpy(ck.name, "w");
	ck.role = BFT_ROLE_RW;
	bft_chan_keypair_new(&ck.chan);
	ck.epoch = 6;
	ck.has_alt = true;
	ck.alt_epoch = 7;
	bft_random(ck.k_alt, 4 * BFT_KEY_LEN);
	bft_random(ck.kw_alt, sizeof ck.kw_alt);
	snprintf(p, sizeof p, "%s/w.key", dir);
	assert_int_equal(bft_client_key_write(p, &ck), 0);
	if (bft_client_key_load(p, &cback, err, sizeof err) != 0)
		fail_msg("refused: %s", err);
	assert_memory_equal(&cback, &ck, sizeof ck);

	memset(&sk, 0, sizeof sk);
	bft_random(sk.cluster_id, sizeof sk.cluster_id);
	sk.index = 3;
	bft_random(sk.k, sizeof sk.k);
	bft_chan_keypair_new(&sk.chan);
	sk.epoch = 6;
	sk.has_alt = true;
	sk.alt_epoch = 7;
	bft_random(sk.k_alt, sizeof sk.k_alt);
	snprintf(p, sizeof p, "%s/s.key", dir);
	assert_int_equal(bft_server_key_write(p, &sk), 0);
	if (bft_server_key_load(p, &sback, err, sizeof err) != 0)
		fail_msg("refused: %s", err);
	assert_memory_equal(&sback, &sk, sizeof sk);

	/* Epoch 0 without a rotation: no line a 0.2.0 loader refuses. */
	sk.epoch = 0;
	sk.has_alt = false;
	sk.alt_epoch = 0;
	memset(sk.k_alt, 0, sizeof sk.k_alt);
	snprintf(p, sizeof p, "%s/s0.key", dir);
	assert_int_equal(bft_server_key_write(p, &sk), 0);
	{
		char text[1024];
		FILE *fp = fopen(p, "r");
		size_t len;

		assert_non_null(fp);
		len = fread(text, 1, sizeof text - 1, fp);
		text[len] = '\0';
		fclose(fp);
		assert_null(strstr(text, "epoch"));
	}
	/* The peer identity carries both epochs of its own key. */
	sk.has_alt = true;
	sk.alt_epoch = 1;
	bft_peer_key(&sk, &cback);
	assert_true(cback.has_alt && cback.alt_epoch == 1);
	assert_memory_equal(cback.k_alt[3], sk.k_alt, BFT_KEY_LEN);
}

/* Each rotation made by halves, or skipping an epoch, is refused. */
static void
test_refusals(void **state)
{
	struct bft_client_key ck;
	struct bft_server_key sk;

	(void)state;
	assert_int_equal(bft_client_key_load(put("ok.key", WRITER
	    "epoch = 4\nnext-epoch = 5\n" NEXT_KEYS), &ck, err, sizeof err), 0);
	assert_true(ck.has_alt && ck.epoch == 4 && ck.alt_epoch == 5);
	assert_int_equal(bft_client_key_load(put("skip.key", WRITER
	    "epoch = 4\nnext-epoch = 6\n" NEXT_KEYS), &ck, err, sizeof err),
	    -EINVAL);
	assert_non_null(strstr(err, "the epoch after 4 is 5"));
	assert_int_equal(bft_client_key_load(put("back.key", WRITER
	    "epoch = 4\nnext-epoch = 3\n" NEXT_KEYS), &ck, err, sizeof err),
	    -EINVAL);
	assert_int_equal(bft_client_key_load(put("nokw.key", WRITER
	    "next-epoch = 1\nnext-key.0 = " KEY "\nnext-key.1 = " KEY
	    "\nnext-key.2 = " KEY "\nnext-key.3 = " KEY "\n"), &ck, err,
	    sizeof err), -EINVAL);
	assert_non_null(strstr(err, "every next key"));
	assert_int_equal(bft_client_key_load(put("nok2.key", WRITER
	    "next-epoch = 1\nnext-key.0 = " KEY "\nnext-key.1 = " KEY
	    "\nnext-key.3 = " KEY "\nnext-writer-key = " KEY "\n"), &ck, err,
	    sizeof err), -EINVAL);
	assert_int_equal(bft_client_key_load(put("noepoch.key", WRITER
	    NEXT_KEYS), &ck, err, sizeof err), -EINVAL);
	assert_int_equal(bft_client_key_load(put("past.key", WRITER
	    "epoch = 4294967295\n"), &ck, err, sizeof err), -EINVAL);
	/* A reader holds no MAC key of any epoch. */
	assert_int_equal(bft_client_key_load(put("ro.key", "cluster-id = "
	    HEX32 "\nname = r\nrole = ro\nchan-key = " KEY "\n"
	    "next-writer-key = " KEY "\n"), &ck, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "must not hold MAC keys"));
	/* A server's file: its own next key, and nobody else's. */
	assert_int_equal(bft_server_key_load(put("s.key", SERVER
	    "next-epoch = 1\nnext-key = " KEY "\n"), &sk, err, sizeof err), 0);
	assert_true(sk.has_alt && sk.epoch == 0 && sk.alt_epoch == 1);
	assert_int_equal(bft_server_key_load(put("s1.key", SERVER
	    "next-epoch = 1\n"), &sk, err, sizeof err), -EINVAL);
	assert_int_equal(bft_server_key_load(put("s2.key", SERVER
	    "next-key = " KEY "\n"), &sk, err, sizeof err), -EINVAL);
	assert_int_equal(bft_server_key_load(put("s3.key", SERVER
	    "next-epoch = 1\nnext-key = " KEY "\nnext-writer-key = " KEY
	    "\n"), &sk, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "unknown key"));
}

/* A check under two epochs passes either, and nothing else. */
static void
test_checks(void **state)
{
	uint8_t a[BFT_KEY_LEN], b[BFT_KEY_LEN], c[BFT_KEY_LEN];
	uint8_t nh[BFT_HASH_LEN], m[BFT_MAC_LEN];
	struct bft_ts ts = { .num = 9, .wid = 3 };
	struct bft_mac_keys both = { a, b }, one = { a, NULL };
	struct bft_mac_keys others = { c, NULL }, rev = { b, a };

	(void)state;
	bft_random(a, sizeof a);
	bft_random(b, sizeof b);
	bft_random(c, sizeof c);
	bft_random(nh, sizeof nh);
	bft_ts_sign(&ts, 77, b);
	assert_true(bft_ts_check(&ts, 77, &both));
	assert_true(bft_ts_check(&ts, 77, &rev));
	assert_false(bft_ts_check(&ts, 77, &one));
	assert_false(bft_ts_check(&ts, 78, &both));
	bft_vec_mac(&ts, 77, nh, b, m);
	assert_true(bft_vec_check(&ts, 77, nh, &both, m));
	assert_false(bft_vec_check(&ts, 77, nh, &one, m));
	assert_false(bft_vec_check(&ts, 77, nh, &others, m));
	bft_drop_mac(5, a, m);
	assert_true(bft_drop_check(5, &both, m));
	assert_false(bft_drop_check(5, &others, m));
	assert_false(bft_drop_check(6, &both, m));
	bft_snap_mac(5, 2, 0, b, m);
	assert_true(bft_snap_check(5, 2, 0, &rev, m));
	assert_false(bft_snap_check(5, 2, 0, &one, m));
	assert_false(bft_snap_check(5, 2, 1, &both, m));
}

/*
 * Which epoch is newest is decided once, for the engine's switch, the
 * reauth pass and retire: the other epoch when it is the higher, never
 * one a file does not hold; a swap exchanges every key and the epochs.
 */
static void
test_newest(void **state)
{
	static struct bft_client_key k, orig;

	(void)state;
	bft_random(&k, sizeof k);
	k.epoch = 3;
	k.alt_epoch = 4;
	k.has_alt = false;
	assert_false(bft_client_key_next_pending(&k));
	k.has_alt = true;
	assert_true(bft_client_key_next_pending(&k));
	memcpy(&orig, &k, sizeof k);
	bft_client_key_swap(&k);
	assert_int_equal(k.epoch, 4);
	assert_int_equal(k.alt_epoch, 3);
	assert_false(bft_client_key_next_pending(&k));
	assert_memory_equal(k.kw, orig.kw_alt, BFT_KEY_LEN);
	assert_memory_equal(k.kw_alt, orig.kw, BFT_KEY_LEN);
	assert_memory_equal(k.k, orig.k_alt, sizeof k.k);
	assert_memory_equal(k.k_alt, orig.k, sizeof k.k);
	bft_client_key_swap(&k);
	assert_memory_equal(&k, &orig, sizeof k);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_checks),
		cmocka_unit_test(test_newest),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
