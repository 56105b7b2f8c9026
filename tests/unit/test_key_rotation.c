/*
 * Rotating a server's channel key (`bftblk server rotate`): bftblk.conf's
 * server.I.pk.next loads beside server.I.pk, names its server and is
 * written back, and is refused when malformed, for a server the cluster
 * does not have, twice, or when some other identity holds it; and a
 * client accepts a server hello proven under either of a server's two
 * keys, and no third.  (Apart from test_config.c and test_channel.c,
 * which are full.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "channel.h"
#include "config.h"
#include "crypto.h"

#define ID_HEX "00112233445566778899aabbccddeeff"
#define PK_HEX ID_HEX ID_HEX
#define NEXT_HEX "ffeeddccbbaa99887766554433221100" \
		"ffeeddccbbaa99887766554433221100"
/* Every server has PK_HEX: a key of its own and the others' at once. */
#define HEAD "cluster-id = " ID_HEX "\nt = 1\nsize = 1G\n" \
	"server.0 = a:1\nserver.1 = b:1\nserver.2 = c:1\nserver.3 = d:1\n" \
	"server.0.pk = " PK_HEX "\nserver.1.pk = " PK_HEX "\n" \
	"server.2.pk = " PK_HEX "\nserver.3.pk = " PK_HEX "\n"

static char dir[64], path[128], err[1024];

static int
setup(void **state)
{
	(void)state;
	if (bft_crypto_init() != 0)
		return -1;
	strcpy(dir, "/tmp/bftblk-test-rotation.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int
teardown(void **state)
{
	char p[160];

	(void)state;
	snprintf(p, sizeof p, "%s/t.conf", dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/rt.conf", dir);
	unlink(p);
	return rmdir(dir);
}

/* Writes text to dir/t.conf; returns its path. */
static const char *
put(const char *text)
{
	FILE *fp;

	snprintf(path, sizeof path, "%s/t.conf", dir);
	assert_non_null(fp = fopen(path, "w"));
	assert_int_equal(fputs(text, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
	return path;
}

/* Loads text and expects a refusal whose message contains want. */
static void
refuse(const char *text, const char *want)
{
	struct bft_config cfg;

	err[0] = '\0';
	if (bft_config_load(put(text), &cfg, err, sizeof err) == 0)
		fail_msg("accepted:\n%s", text);
	if (strstr(err, want) == NULL)
		fail_msg("message '%s' lacks '%s' for:\n%s", err, want, text);
}

static void
test_config_next(void **state)
{
	static struct bft_config cfg, back;
	uint8_t next[32];
	char p[160];

	(void)state;
	assert_int_equal(bft_parse_hex(NEXT_HEX, next, 32), 0);
	if (bft_config_load(put(HEAD "server.2.pk.next = " NEXT_HEX "\n"),
	    &cfg, err, sizeof err) != 0)
		fail_msg("server.2.pk.next refused: %s", err);
	assert_int_equal(cfg.has_pk_next, 1u << 2);
	assert_non_null(bft_config_pk_next(&cfg, 2));
	assert_memory_equal(bft_config_pk_next(&cfg, 2), next, 32);
	assert_null(bft_config_pk_next(&cfg, 1));
	assert_null(bft_config_pk_next(&cfg, BFT_MAX_N));
	assert_int_equal(bft_config_find_server(&cfg, next), 2);
	/* Written back, it loads the same. */
	snprintf(p, sizeof p, "%s/rt.conf", dir);
	assert_int_equal(bft_config_write(p, &cfg), 0);
	assert_int_equal(bft_config_load(p, &back, err, sizeof err), 0);
	assert_memory_equal(&back, &cfg, sizeof cfg);

	refuse(HEAD "server.2.pk.next = 00zz\n", "bad server.2.pk.next");
	refuse(HEAD "server.2.pk.next = " NEXT_HEX "00\n",
	    "bad server.2.pk.next");
	refuse(HEAD "server.x.pk.next = " NEXT_HEX "\n",
	    "bad server.x.pk.next");
	refuse(HEAD "server.16.pk.next = " NEXT_HEX "\n",
	    "bad server.16.pk.next");
	/* server.I.pk's index is read the same way (one helper). */
	refuse(HEAD "server.x.pk = " NEXT_HEX "\n", "bad server.x.pk");
	refuse(HEAD "server.16.pk = " NEXT_HEX "\n", "bad server.16.pk");
	refuse(HEAD "server.123456789012.pk = " NEXT_HEX "\n",
	    "bad server.123456789012.pk");
	refuse(HEAD "server.4.pk.next = " NEXT_HEX "\n",
	    "server.I.pk.next for a server t=1 does not have");
	refuse(HEAD "server.2.pk.next = " NEXT_HEX "\nserver.2.pk.next = "
	    NEXT_HEX "\n", "listed twice");
	refuse(HEAD "server.2.pk.next = " PK_HEX "\n", "server.2.pk.next is");
	refuse(HEAD "server.1.pk.next = " NEXT_HEX "\nserver.2.pk.next = "
	    NEXT_HEX "\n", "server.2.pk.next is another server's key");
	/* No client may hold it either: it names the server. */
	refuse(HEAD "server.2.pk.next = " NEXT_HEX "\nclient.x = rw "
	    NEXT_HEX "\n", "client 'x' has the key of server 2");
}

/*
 * A handshake with a server running under run, where the client has
 * pk as server.I.pk and next (or none) as server.I.pk.next.  Returns
 * what bft_chan_client_finish returned; *proved is the key it took.
 */
static int
handshake(const struct bft_chan_keypair *run, const uint8_t *pk,
    const uint8_t *next, const struct bft_chan_keypair *cid,
    uint8_t proved[32])
{
	static const uint8_t cluster[BFT_CLUSTER_ID_LEN] = { 7 };
	uint8_t ch[BFT_CHAN_CHELLO_LEN], sh[BFT_CHAN_SHELLO_LEN];
	uint8_t fin[BFT_CHAN_FINISH_LEN];
	struct bft_chan_client hs;
	struct bft_chan cli, srv;
	struct bft_chan_hello h;
	const char *why;
	int r;

	memset(&cli, 0, sizeof cli);
	bft_chan_client_hello(&hs, cid, pk, cluster, 1, BFT_CHAN_AEAD, ch);
	if (next != NULL)
		bft_chan_client_next(&hs, next);
	assert_int_equal(bft_chan_parse_hello(ch, &h), 0);
	assert_int_equal(bft_chan_server_accept(run, ch, &h,
	    bft_chan_ciphers(), &srv, sh), 0);
	r = bft_chan_client_finish(&hs, sh, &cli, fin, &why);
	if (r == 0) {
		/* The server sees the client it would see without rotation. */
		assert_int_equal(bft_chan_server_verify(&srv, fin), 0);
		memcpy(proved, cli.peer_pk, 32);
		bft_chan_clear(&cli);
	}
	bft_chan_clear(&srv);
	return r;
}

static void
test_handshake_next(void **state)
{
	struct bft_chan_keypair old, next, third, client;
	uint8_t proved[32];

	(void)state;
	bft_chan_keypair_new(&old);
	bft_chan_keypair_new(&next);
	bft_chan_keypair_new(&third);
	bft_chan_keypair_new(&client);
	/* Before the restart: the old key, with or without a next one. */
	assert_int_equal(handshake(&old, old.pk, NULL, &client, proved), 0);
	assert_memory_equal(proved, old.pk, 32);
	assert_int_equal(handshake(&old, old.pk, next.pk, &client, proved), 0);
	assert_memory_equal(proved, old.pk, 32);
	/* After it: the next key, from the same one server hello. */
	assert_int_equal(handshake(&next, old.pk, next.pk, &client, proved),
	    0);
	assert_memory_equal(proved, next.pk, 32);
	/* A file without the next key cannot reach the rotated server. */
	assert_int_equal(handshake(&next, old.pk, NULL, &client, proved),
	    -EACCES);
	/* Neither key: a third one is refused. */
	assert_int_equal(handshake(&third, old.pk, next.pk, &client, proved),
	    -EACCES);
	/* A new hello forgets the next key of an earlier one. */
	{
		static const uint8_t cluster[BFT_CLUSTER_ID_LEN] = { 7 };
		struct bft_chan_client hs;
		uint8_t ch[BFT_CHAN_CHELLO_LEN];

		bft_chan_client_hello(&hs, &client, old.pk, cluster, 1,
		    BFT_CHAN_AEAD, ch);
		bft_chan_client_next(&hs, next.pk);
		bft_chan_client_hello(&hs, &client, old.pk, cluster, 1,
		    BFT_CHAN_AEAD, ch);
		assert_false(hs.has_next);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_next),
		cmocka_unit_test(test_handshake_next),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
