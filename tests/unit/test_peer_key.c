/*
 * libbftblk's server-key= (lib/bftblk.c): a server's key file makes the
 * handle that server, a peer of the others, which loads without keys=,
 * is read-only (bftblk_pwrite, zero and trim return -EPERM, before any
 * I/O), and is refused when the key is not one the configuration names.
 * Nothing here needs a server: connections come up in the background.
 * Also a writer handle's signing keys for DROP and SNAP, which follow
 * its key file through a MAC key rotation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <ftw.h>
#include <unistd.h>

#include <cmocka.h>

#include "bftblk.h"
#include "config.h"
#include "crypto.h"
#include "handle_int.h"
#include "keys.h"

static char dir[64], conf[128], key2[128], stray[128], ckey[128], wkey[128];

static void
quiet(void *opaque, enum bftblk_log_level level, const char *msg)
{
	(void)opaque;
	(void)level;
	(void)msg;
}

static int
setup(void **state)
{
	static struct bft_config cfg;
	struct bft_server_key sk;
	struct bft_client_key ck;

	(void)state;
	assert_int_equal(bft_crypto_init(), 0);
	strcpy(dir, "/tmp/test_peer_key.XXXXXX");
	assert_non_null(mkdtemp(dir));
	memset(&cfg, 0, sizeof cfg);
	bft_random(cfg.cluster_id, BFT_CLUSTER_ID_LEN);
	cfg.t = 1;
	cfg.n = 4;
	cfg.block_size = BFT_BLOCK_SIZE;
	cfg.size = 16ull * BFT_BLOCK_SIZE;
	cfg.nblocks = 16;
	memset(&sk, 0, sizeof sk);
	memcpy(sk.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN);
	for (unsigned i = 0; i < cfg.n; i++) {
		/* Port 1 on localhost: nothing answers, nothing hangs. */
		strcpy(cfg.servers[i].host, "127.0.0.1");
		cfg.servers[i].port = 1;
		bft_chan_keypair_new(&sk.chan);
		memcpy(cfg.server_pk[i], sk.chan.pk, 32);
		if (i == 2) {
			sk.index = 2;
			bft_random(sk.k, BFT_KEY_LEN);
			snprintf(key2, sizeof key2, "%s/server-2.key", dir);
			assert_int_equal(bft_server_key_write(key2, &sk), 0);
		}
	}
	/* A server key this cluster does not list. */
	bft_chan_keypair_new(&sk.chan);
	snprintf(stray, sizeof stray, "%s/stray.key", dir);
	assert_int_equal(bft_server_key_write(stray, &sk), 0);
	memset(&ck, 0, sizeof ck);
	memcpy(ck.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN);
	strcpy(ck.name, "reader");
	ck.role = BFT_ROLE_RO;
	bft_chan_keypair_new(&ck.chan);
	snprintf(ckey, sizeof ckey, "%s/reader.key", dir);
	assert_int_equal(bft_client_key_write(ckey, &ck), 0);
	/* A writer's, with MAC keys of epoch 0. */
	ck.role = BFT_ROLE_RW;
	ck.n = cfg.n;
	strcpy(ck.name, "writer");
	bft_random(ck.k, sizeof ck.k);
	bft_random(ck.kw, sizeof ck.kw);
	snprintf(wkey, sizeof wkey, "%s/writer.key", dir);
	assert_int_equal(bft_client_key_write(wkey, &ck), 0);
	snprintf(conf, sizeof conf, "%s/bftblk.conf", dir);
	assert_int_equal(bft_config_write(conf, &cfg), 0);
	return 0;
}

static int
rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb;
	(void)flag;
	(void)f;
	return remove(p);
}

static int
teardown(void **state)
{
	(void)state;
	return nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static struct bftblk *
handle(const char *k1, const char *v1, const char *k2, const char *v2)
{
	struct bftblk *h = bftblk_create();

	assert_non_null(h);
	bftblk_set_log(h, quiet, NULL);
	assert_int_equal(bftblk_set_option(h, "config", conf), 0);
	assert_int_equal(bftblk_set_option(h, "timeout", "1"), 0);
	if (k1)
		assert_int_equal(bftblk_set_option(h, k1, v1), 0);
	if (k2)
		assert_int_equal(bftblk_set_option(h, k2, v2), 0);
	return h;
}

/*
 * A handle loaded at epoch 0 signs a DROP or SNAP under the keys its
 * file holds when it does, not those it loaded: after a retire only the
 * new epoch's pass.  A file that no longer loads leaves the loaded ones.
 */
static void
test_signing_key(void **state)
{
	static struct bft_client_key ck, was;
	struct bft_client_key *k;
	struct bftblk *h;
	char err[256];

	(void)state;
	h = handle("keys", wkey, NULL, NULL);
	assert_int_equal(bftblk_load(h), 0);
	assert_int_equal(bft_client_key_load(wkey, &was, err, sizeof err), 0);
	ck = was;
	ck.epoch = 1;
	bft_random(ck.k, sizeof ck.k);
	bft_random(ck.kw, sizeof ck.kw);
	assert_int_equal(unlink(wkey), 0);
	assert_int_equal(bft_client_key_write(wkey, &ck), 0);
	assert_non_null(k = bftblk__signing_key(h));
	assert_int_equal(k->epoch, 1);
	assert_memory_equal(k->k, ck.k, 4 * BFT_KEY_LEN);
	assert_memory_equal(k->kw, ck.kw, sizeof ck.kw);
	assert_memory_equal(k->chan.sk, was.chan.sk, sizeof was.chan.sk);
	bftblk__signing_key_free(k);
	/* Garbled: the keys loaded at bftblk_load. */
	assert_int_equal(unlink(wkey), 0);
	assert_non_null(fopen(wkey, "w"));
	assert_non_null(k = bftblk__signing_key(h));
	assert_int_equal(k->epoch, 0);
	assert_memory_equal(k->k, was.k, 4 * BFT_KEY_LEN);
	bftblk__signing_key_free(k);
	bftblk_close(h);
	/* Back as it was for the other tests. */
	assert_int_equal(unlink(wkey), 0);
	assert_int_equal(bft_client_key_write(wkey, &was), 0);
}

static void
test_peer_reads_only(void **state)
{
	static uint8_t buf[BFTBLK_BLOCK_SIZE];
	struct bftblk_info info;
	struct bftblk_stats st;
	struct bftblk *h;
	char opts[256];

	(void)state;
	h = handle("server-key", key2, NULL, NULL);
	assert_int_equal(bftblk_load(h), 0);
	assert_int_equal(bftblk_get_info(h, &info, sizeof info), 0);
	assert_true(info.readonly);
	assert_string_equal(info.client_name, "server-2");
	assert_int_equal(bftblk_connect(h), 0);
	assert_int_equal(bftblk_pwrite(h, buf, sizeof buf, 0, 0), -EPERM);
	assert_non_null(strstr(bftblk_errmsg(h), "a server's key"));
	assert_int_equal(bftblk_zero(h, sizeof buf, 0, 0), -EPERM);
	assert_int_equal(bftblk_trim(h, sizeof buf, 0, BFTBLK_FUA), -EPERM);
	/* Nothing listens: no server is connected, its own least of all. */
	assert_int_equal(bftblk_get_stats(h, &st, sizeof st), 0);
	assert_int_equal(st.nservers, 4);
	assert_false(st.server[2].connected);
	/*
	 * A caller compiled against another header is refused, not handed
	 * bytes past its struct: the library writes nothing then.
	 */
	memset(&st, 0xa5, sizeof st);
	assert_int_equal(bftblk_get_stats(h, &st, sizeof st + 8), -EINVAL);
	assert_non_null(strstr(bftblk_errmsg(h), "struct bftblk_stats"));
	assert_int_equal(st.nservers, 0xa5a5a5a5);
	assert_int_equal(bftblk_get_info(h, &info, sizeof info - 8), -EINVAL);
	bftblk_close(h);

	/* The one-call open takes it with keys NULL. */
	snprintf(opts, sizeof opts, "server-key=%s timeout=1", key2);
	assert_int_equal(bftblk_open(conf, NULL, opts, &h), 0);
	bftblk_close(h);
}

static void
test_refusals(void **state)
{
	struct bftblk *h;

	(void)state;
	/* Neither, or both, identities. */
	h = handle(NULL, NULL, NULL, NULL);
	assert_int_equal(bftblk_load(h), -EINVAL);
	assert_non_null(strstr(bftblk_errmsg(h), "server-key=FILE"));
	bftblk_close(h);
	h = handle("server-key", key2, "keys", ckey);
	assert_int_equal(bftblk_load(h), -EINVAL);
	bftblk_close(h);
	/* A server key the configuration does not list. */
	h = handle("server-key", stray, NULL, NULL);
	assert_int_equal(bftblk_load(h), -EINVAL);
	assert_non_null(strstr(bftblk_errmsg(h), "not the key of a server"));
	bftblk_close(h);
	/* A client key file is not a server's. */
	h = handle("server-key", ckey, NULL, NULL);
	assert_int_equal(bftblk_load(h), -EINVAL);
	assert_non_null(strstr(bftblk_errmsg(h), "reader.key"));
	bftblk_close(h);
	/* The control: the reader's key loads as keys=. */
	h = handle("keys", ckey, NULL, NULL);
	assert_int_equal(bftblk_load(h), 0);
	bftblk_close(h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_signing_key),
		cmocka_unit_test(test_peer_reads_only),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
