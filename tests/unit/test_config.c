/*
 * bftblk.conf(5) and the key files: a good file loads field for field,
 * every malformed one is refused with a message that names the problem
 * (and the line, where there is one), written files load back identically,
 * writers never overwrite, and key files are 0600 and refused otherwise.
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
#include <ftw.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "config.h"
#include "crypto.h"
#include "keys.h"

#define ID_HEX "00112233445566778899aabbccddeeff"
#define PK_HEX ID_HEX ID_HEX
/* Every configuration names each server's channel key. */
#define PKS "server.0.pk = " PK_HEX "\nserver.1.pk = " PK_HEX "\n" \
	"server.2.pk = " PK_HEX "\nserver.3.pk = " PK_HEX "\n"
#define CHAN_KEY "chan-key = " PK_HEX "\nname = c\n"
#define CHAN_KEY0 "chan-key = " PK_HEX "\n"

static char dir[64];
static char path[128];
static char err[1024];

static int
rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int
setup(void **state)
{
	(void)state;
	if (bft_crypto_init() != 0)
		return -1;
	strcpy(dir, "/tmp/bftblk-test-config.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	return nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* Writes text to dir/name with the given mode; returns the path. */
static const char *
put(const char *name, const char *text, mode_t mode)
{
	int fd;
	size_t len = strlen(text);

	snprintf(path, sizeof path, "%s/%s", dir, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	/* fchmod, not the open mode, so the umask cannot interfere. */
	assert_int_equal(fchmod(fd, mode), 0);
	assert_int_equal(close(fd), 0);
	return path;
}

static const char good[] =
	"# a test cluster\n"
	"\n"
	"cluster-id = " ID_HEX "\n"
	"t=1\n"
	"\tsize =  1G   # trailing comment\n"
	"block-size = 65536\n"
	"server.0 = 127.0.0.1:7000\n"
	"server.1 = host-b.example:7001\n"
	"server.2 =10.0.0.3:1\n"
	"server.3 = 10.0.0.4:65535\n" PKS;

static void
test_good(void **state)
{
	struct bft_config cfg;
	uint8_t id[BFT_CLUSTER_ID_LEN];

	(void)state;
	if (bft_config_load(put("good.conf", good, 0644), &cfg, err,
	    sizeof err) != 0)
		fail_msg("good file refused: %s", err);
	assert_int_equal(bft_parse_hex(ID_HEX, id, sizeof id), 0);
	assert_memory_equal(cfg.cluster_id, id, sizeof id);
	assert_int_equal(cfg.t, 1);
	assert_int_equal(cfg.n, 4);
	assert_int_equal(cfg.block_size, 65536);
	assert_true(cfg.size == (1ull << 30));
	assert_true(cfg.nblocks == 16384);
	assert_string_equal(cfg.servers[0].host, "127.0.0.1");
	assert_int_equal(cfg.servers[0].port, 7000);
	assert_string_equal(cfg.servers[1].host, "host-b.example");
	assert_int_equal(cfg.servers[1].port, 7001);
	assert_string_equal(cfg.servers[2].host, "10.0.0.3");
	assert_int_equal(cfg.servers[2].port, 1);
	assert_int_equal(cfg.servers[3].port, 65535);
	/* Other suffixes, and block-size is optional. */
	assert_int_equal(bft_config_load(put("k.conf",
	    "cluster-id=" ID_HEX "\nt=1\nsize=640k\nserver.0=a:1\n"
	    "server.1=b:2\nserver.2=c:3\nserver.3=d:4\n" PKS, 0644), &cfg, err,
	    sizeof err), 0);
	assert_true(cfg.size == 655360 && cfg.nblocks == 10);
	assert_int_equal(cfg.block_size, 65536);
	/* IPv6 in brackets, and the bare form older files have. */
	assert_int_equal(bft_config_load(put("v6.conf",
	    "cluster-id=" ID_HEX "\nt=1\nsize=640k\nserver.0=[fd00::1]:7700\n"
	    "server.1=fd00::2:7701\nserver.2=[::1]:3\nserver.3=d:4\n" PKS,
	    0644), &cfg, err, sizeof err), 0);
	assert_string_equal(cfg.servers[0].host, "fd00::1");
	assert_int_equal(cfg.servers[0].port, 7700);
	assert_string_equal(cfg.servers[1].host, "fd00::2");
	assert_int_equal(cfg.servers[1].port, 7701);
	assert_string_equal(cfg.servers[2].host, "::1");
	{
		char a[BFT_ADDR_STRLEN];

		assert_string_equal(bft_format_addr(&cfg.servers[0], a,
		    sizeof a), "[fd00::1]:7700");
		assert_string_equal(bft_format_addr(&cfg.servers[3], a,
		    sizeof a), "d:4");
	}
	/* Brackets that do not close, or hold nothing. */
	assert_int_equal(bft_config_load(put("v6bad.conf",
	    "cluster-id=" ID_HEX "\nt=1\nsize=640k\nserver.0=[fd00::1:7700\n"
	    "server.1=b:2\nserver.2=c:3\nserver.3=d:4\n" PKS, 0644), &cfg, err,
	    sizeof err), -EINVAL);
	assert_int_equal(bft_config_load(put("v6empty.conf",
	    "cluster-id=" ID_HEX "\nt=1\nsize=640k\nserver.0=[]:7700\n"
	    "server.1=b:2\nserver.2=c:3\nserver.3=d:4\n" PKS, 0644), &cfg, err,
	    sizeof err), -EINVAL);
}

/* Loads text and expects a refusal whose message contains every want. */
static void
refuse(const char *text, const char *want1, const char *want2)
{
	struct bft_config cfg;

	err[0] = '\0';
	if (bft_config_load(put("bad.conf", text, 0644), &cfg, err,
	    sizeof err) == 0)
		fail_msg("accepted:\n%s", text);
	if (strstr(err, want1) == NULL ||
	    (want2 && strstr(err, want2) == NULL))
		fail_msg("message '%s' lacks '%s'/'%s' for:\n%s", err, want1,
		    want2 ? want2 : "", text);
	/* Every message names the file. */
	assert_non_null(strstr(err, "bad.conf"));
}

#define SERVERS "server.0 = a:1\nserver.1 = b:1\nserver.2 = c:1\n" \
		"server.3 = d:1\n" PKS
#define HEAD "cluster-id = " ID_HEX "\nt = 1\n"

static void
test_refusals(void **state)
{
	static char longline[4096], text[8192];

	(void)state;
	refuse("t = 1\nsize = 1G\n" SERVERS, "missing cluster-id", NULL);
	refuse("cluster-id = " ID_HEX "\nsize = 1G\n" SERVERS, "missing t",
	    NULL);
	refuse(HEAD SERVERS, "missing size", NULL);
	refuse("cluster-id = 00112233445566778899aabbccddeefg\n", ":1:",
	    "hex");
	refuse("cluster-id = 00112233445566778899aabbccddee\n", ":1:", "hex");
	refuse("cluster-id = " ID_HEX "00\n", ":1:", "hex");
	refuse("cluster-id = \n", ":1:", "hex");
	refuse("cluster-id = " ID_HEX "\nt = 0\n", ":2:", "t must be 1..5");
	refuse("cluster-id = " ID_HEX "\nt = 6\n", ":2:", "t must be 1..5");
	refuse("cluster-id = " ID_HEX "\nt = -1\n", ":2:", "t must be");
	refuse("cluster-id = " ID_HEX "\nt = 1x\n", ":2:", "t must be");
	refuse("cluster-id = " ID_HEX "\nt = 99999999999999999999999\n",
	    ":2:", "t must be");
	refuse(HEAD "size = 65537\n" SERVERS, "not a multiple", NULL);
	refuse(HEAD "size = 100K\n" SERVERS, "not a multiple", NULL);
	refuse(HEAD "size = 0\n", ":3:", "bad size");
	refuse(HEAD "size = 1.5G\n", ":3:", "bad size");
	refuse(HEAD "size = 1P\n", ":3:", "bad size");
	refuse(HEAD "size = 1G\nserver.0 = a:1\nserver.1 = b:1\n"
	    "server.2 = c:1\n", "server.0 .. server.3", NULL);
	refuse(HEAD "size = 1G\n" SERVERS "server.4 = e:1\n",
	    "server.0 .. server.3", NULL);
	refuse(HEAD "size = 1G\nserver.16 = a:1\n", ":4:", "server index");
	refuse(HEAD "size = 1G\nserver.x = a:1\n", ":4:", "server index");
	refuse(HEAD "size = 1G\nserver.-1 = a:1\n", ":4:", "server index");
	refuse(HEAD "size = 1G\n" SERVERS "colour = blue\n", ":12:",
	    "unknown key 'colour'");
	refuse(HEAD "size = 1G\nserver.0 = hostonly\n", ":4:", "bad address");
	refuse(HEAD "size = 1G\nserver.0 = host:\n", ":4:", "bad address");
	refuse(HEAD "size = 1G\nserver.0 = :7000\n", ":4:", "bad address");
	refuse(HEAD "size = 1G\nserver.0 = host:0\n", ":4:", "bad address");
	refuse(HEAD "size = 1G\nserver.0 = host:70000\n", ":4:",
	    "bad address");
	refuse(HEAD "size = 1G\nserver.0 = host:65536\n", ":4:",
	    "bad address");
	refuse(HEAD "size = 1G\nserver.0 = host:7000x\n", ":4:",
	    "bad address");
	refuse(HEAD "size = 1G\nserver.0 = host:-7000\n", ":4:",
	    "bad address");
	refuse(HEAD "size = 1G\nblock-size = 4096\n", ":4:",
	    "block-size must be 65536");
	refuse(HEAD "size = 1G\nblock-size = 131072\n", ":4:",
	    "block-size must be 65536");
	refuse(HEAD "just some words\n", ":3:", "expected key = value");
	/* A server's key is that server's; no client may have it. */
	refuse(HEAD "size = 1G\n" SERVERS "client.x = rw " PK_HEX "\n",
	    "client 'x' has the key of server 0", NULL);
	refuse(HEAD "size = 1G\nclient.y = ro " PK_HEX "\n" SERVERS,
	    "client 'y' has the key of server 0", NULL);
	/* A host name longer than the address buffer. */
	memset(longline, 'h', 600);
	strcpy(longline + 600, ":7000");
	snprintf(text, sizeof text, HEAD "server.0 = %s\n", longline);
	refuse(text, ":3:", "bad address");
	/* Over-long lines, in the middle and as an unterminated last line. */
	memset(longline, '#', 2000);
	longline[2000] = '\0';
	snprintf(text, sizeof text, HEAD "%s\nsize = 1G\n" SERVERS,
	    longline);
	refuse(text, ":3:", "line too long");
	snprintf(text, sizeof text, HEAD "size = 1G\n" SERVERS "%s", longline);
	refuse(text, ":12:", "line too long");
	/* A comment line of 1000 characters is still fine. */
	{
		struct bft_config cfg;

		longline[1000] = '\0';
		snprintf(text, sizeof text, HEAD "%s\nsize = 1G\n" SERVERS,
		    longline);
		assert_int_equal(bft_config_load(put("long.conf", text, 0644),
		    &cfg, err, sizeof err), 0);
	}
	/* A file that is not there. */
	{
		struct bft_config cfg;
		char missing[160];

		snprintf(missing, sizeof missing, "%s/nonexistent.conf", dir);
		assert_int_equal(bft_config_load(missing, &cfg, err,
		    sizeof err), -ENOENT);
		assert_non_null(strstr(err, "nonexistent.conf"));
		assert_non_null(strstr(err, strerror(ENOENT)));
	}
}

static void
make_cfg(struct bft_config *cfg, unsigned t)
{
	memset(cfg, 0, sizeof *cfg);
	bft_random(cfg->cluster_id, sizeof cfg->cluster_id);
	cfg->t = t;
	cfg->n = 3 * t + 1;
	cfg->block_size = BFT_BLOCK_SIZE;
	cfg->size = (uint64_t)BFT_BLOCK_SIZE * (1000 + t);
	cfg->nblocks = 1000 + t;
	for (unsigned i = 0; i < cfg->n; i++) {
		/* Every other one an IPv6 address, written in brackets. */
		if (i % 2)
			snprintf(cfg->servers[i].host, BFT_HOST_LEN,
			    "fd00:%x::%u", t, i + 1);
		else
			snprintf(cfg->servers[i].host, BFT_HOST_LEN,
			    "node%u.example", i);
		cfg->servers[i].port = (uint16_t)(7000 + 13 * i);
		bft_random(cfg->server_pk[i], 32);
	}
	/* A writer and a reader, and every other run a plain channel. */
	cfg->nclients = 2;
	strcpy(cfg->clients[0].name, "writer-1");
	cfg->clients[0].role = BFT_ROLE_RW;
	bft_random(cfg->clients[0].pk, 32);
	strcpy(cfg->clients[1].name, "reader.2_b");
	cfg->clients[1].role = BFT_ROLE_RO;
	bft_random(cfg->clients[1].pk, 32);
	cfg->channel = t % 2 == 0;
}

static void
test_config_round_trip(void **state)
{
	struct bft_config cfg, back;
	struct stat sb;
	char p[160];

	(void)state;
	for (unsigned t = 1; t <= BFT_MAX_T; t++) {
		make_cfg(&cfg, t);
		snprintf(p, sizeof p, "%s/rt%u.conf", dir, t);
		assert_int_equal(bft_config_write(p, &cfg), 0);
		if (bft_config_load(p, &back, err, sizeof err) != 0)
			fail_msg("t=%u: written file refused: %s", t, err);
		assert_memory_equal(&back, &cfg, sizeof cfg);
	}
	/* "wx": an existing file is never replaced, and stays intact. */
	assert_int_equal(stat(p, &sb), 0);
	make_cfg(&cfg, 1);
	assert_int_equal(bft_config_write(p, &cfg), -EEXIST);
	assert_int_equal(bft_config_load(p, &back, err, sizeof err), 0);
	assert_int_equal(back.t, BFT_MAX_T);
}

static void
make_server_key(struct bft_server_key *k, unsigned index)
{
	memset(k, 0, sizeof *k);
	bft_random(k->cluster_id, sizeof k->cluster_id);
	bft_random(k->k, sizeof k->k);
	k->index = index;
	bft_chan_keypair_new(&k->chan);
}

static void
make_client_key(struct bft_client_key *k, unsigned n)
{
	memset(k, 0, sizeof *k);
	bft_random(k->cluster_id, sizeof k->cluster_id);
	k->n = n;
	bft_random(k->k, (size_t)n * BFT_KEY_LEN);
	bft_random(k->kw, sizeof k->kw);
	strcpy(k->name, "client");
	k->role = BFT_ROLE_RW;
	bft_chan_keypair_new(&k->chan);
}

static void
assert_mode_0600(const char *p)
{
	struct stat sb;

	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
}

static void
test_server_key(void **state)
{
	struct bft_server_key k, back;
	char p[160];

	(void)state;
	for (unsigned i = 0; i < BFT_MAX_N; i++) {
		make_server_key(&k, i);
		snprintf(p, sizeof p, "%s/server-%u.key", dir, i);
		assert_int_equal(bft_server_key_write(p, &k), 0);
		assert_mode_0600(p);
		if (bft_server_key_load(p, &back, err, sizeof err) != 0)
			fail_msg("server key %u refused: %s", i, err);
		assert_memory_equal(&back, &k, sizeof k);
	}
	assert_int_equal(bft_server_key_write(p, &k), -EEXIST);
	/* A client key file is not a server key file. */
	{
		struct bft_client_key ck;

		make_client_key(&ck, 4);
		snprintf(p, sizeof p, "%s/as-server.key", dir);
		assert_int_equal(bft_client_key_write(p, &ck), 0);
		assert_int_equal(bft_server_key_load(p, &back, err,
		    sizeof err), -EINVAL);
		assert_non_null(strstr(err, "unknown key"));
	}
	/* Missing index, and an index beyond BFT_MAX_N. */
	assert_int_equal(bft_server_key_load(put("noidx.key",
	    "cluster-id = " ID_HEX "\nkey = " ID_HEX ID_HEX "\n" CHAN_KEY0,
	    0600),
	    &back, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "not a server key file"));
	assert_int_equal(bft_server_key_load(put("bigidx.key",
	    "cluster-id = " ID_HEX "\nindex = 16\nkey = " ID_HEX ID_HEX "\n"
	    CHAN_KEY0, 0600), &back, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, ":2:"));
	/* A 31-byte key. */
	assert_int_equal(bft_server_key_load(put("shortkey.key",
	    "cluster-id = " ID_HEX "\nindex = 1\nkey = " ID_HEX
	    "00112233445566778899aabbccddee\n", 0600), &back, err,
	    sizeof err), -EINVAL);
	assert_non_null(strstr(err, "bad value for 'key'"));
}

static void
client_round_trip(unsigned n)
{
	struct bft_client_key k, back;
	char p[160];

	make_client_key(&k, n);
	snprintf(p, sizeof p, "%s/client-%u.key", dir, n);
	assert_int_equal(bft_client_key_write(p, &k), 0);
	assert_mode_0600(p);
	if (bft_client_key_load(p, &back, err, sizeof err) != 0)
		fail_msg("client key n=%u refused: %s", n, err);
	assert_memory_equal(&back, &k, sizeof k);
	assert_int_equal(bft_client_key_write(p, &k), -EEXIST);
}

static void
test_client_key(void **state)
{
	struct bft_client_key back;
	char text[2048];
	int len;

	(void)state;
	for (unsigned t = 1; t < BFT_MAX_T; t++)
		client_round_trip(3 * t + 1);
	/* Missing key.2 of n = 4. */
	len = snprintf(text, sizeof text, "cluster-id = " ID_HEX "\nn = 4\n"
	    "writer-key = " ID_HEX ID_HEX "\n" CHAN_KEY);
	for (unsigned i = 0; i < 4; i++)
		if (i != 2)
			len += snprintf(text + len, sizeof text - (size_t)len,
			    "key.%u = " ID_HEX ID_HEX "\n", i);
	assert_int_equal(bft_client_key_load(put("nokey2.key", text, 0600),
	    &back, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "not a writer's key file"));
	/* With key.2 added the same file loads. */
	snprintf(text + len, sizeof text - (size_t)len,
	    "key.2 = " ID_HEX ID_HEX "\n");
	assert_int_equal(bft_client_key_load(put("full.key", text, 0600),
	    &back, err, sizeof err), 0);
	assert_int_equal(back.n, 4);
	/* A key for a server the cluster does not have. */
	len = (int)strlen(text);
	snprintf(text + len, sizeof text - (size_t)len,
	    "key.4 = " ID_HEX ID_HEX "\n");
	assert_int_equal(bft_client_key_load(put("extra.key", text, 0600),
	    &back, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "not a writer's key file"));
	/* n below 4 is no cluster. */
	assert_int_equal(bft_client_key_load(put("n3.key",
	    "cluster-id = " ID_HEX "\nn = 3\n", 0600), &back, err,
	    sizeof err), -EINVAL);
	assert_non_null(strstr(err, ":2:"));
}

/* t = BFT_MAX_T gives n = 16 = BFT_MAX_N, which config.c accepts. */
static void
test_client_key_max_t(void **state)
{
	(void)state;
	client_round_trip(3 * BFT_MAX_T + 1);
}

static void
test_key_permissions(void **state)
{
	static const mode_t loose[] = { 0644, 0640, 0604, 0660, 0606, 0610,
	    0601 };
	struct bft_server_key k, back;
	struct bft_client_key ck, cback;
	char sp[160], cp[160];

	(void)state;
	make_server_key(&k, 2);
	make_client_key(&ck, 7);
	snprintf(sp, sizeof sp, "%s/perm-server.key", dir);
	snprintf(cp, sizeof cp, "%s/perm-client.key", dir);
	assert_int_equal(bft_server_key_write(sp, &k), 0);
	assert_int_equal(bft_client_key_write(cp, &ck), 0);
	for (unsigned j = 0; j < sizeof loose / sizeof loose[0]; j++) {
		char mode[32];

		snprintf(mode, sizeof mode, "mode %03o", (unsigned)loose[j]);
		assert_int_equal(chmod(sp, loose[j]), 0);
		assert_int_equal(chmod(cp, loose[j]), 0);
		err[0] = '\0';
		assert_int_equal(bft_server_key_load(sp, &back, err,
		    sizeof err), -EPERM);
		assert_non_null(strstr(err, "group or others"));
		assert_non_null(strstr(err, mode));
		assert_non_null(strstr(err, "chmod 600"));
		err[0] = '\0';
		assert_int_equal(bft_client_key_load(cp, &cback, err,
		    sizeof err), -EPERM);
		assert_non_null(strstr(err, "group or others"));
	}
	/* Tighter than 0600 is fine. */
	assert_int_equal(chmod(sp, 0400), 0);
	assert_int_equal(bft_server_key_load(sp, &back, err, sizeof err), 0);
	assert_memory_equal(&back, &k, sizeof k);
	/* The config file itself holds no secret and may be 0644. */
}

static void
test_parse_size(void **state)
{
	static const struct {
		const char *s;
		uint64_t v;
	} ok[] = {
		{ "0", 0 }, { "1", 1 }, { "65536", 65536 }, { "64K", 65536 },
		{ "64k", 65536 }, { "1M", 1ull << 20 }, { "1m", 1ull << 20 },
		{ "3G", 3ull << 30 }, { "1T", 1ull << 40 },
		{ "16777215T", 16777215ull << 40 },
		{ "17179869183G", 17179869183ull << 30 },
		{ "18446744073709551615", UINT64_MAX },
		{ "007", 7 },
	};
	static const char *bad[] = {
		"", "K", "-1", "+1", " 1", "1 ", "1KB", "1.5G", "0x10", "1P",
		"1e3", "16777216T", "17179869184G", "18446744073709551616",
		"99999999999999999999999", "1 K", "1\n",
	};
	uint64_t v;

	(void)state;
	for (unsigned j = 0; j < sizeof ok / sizeof ok[0]; j++) {
		v = 12345;
		if (bft_parse_size(ok[j].s, &v) != 0)
			fail_msg("'%s' refused", ok[j].s);
		assert_true(v == ok[j].v);
	}
	for (unsigned j = 0; j < sizeof bad / sizeof bad[0]; j++) {
		v = 12345;
		if (bft_parse_size(bad[j], &v) == 0)
			fail_msg("'%s' accepted as %llu", bad[j],
			    (unsigned long long)v);
		assert_true(v == 12345);
	}
}

static void
test_parse_hex(void **state)
{
	uint8_t b[4], r[32];
	char hex[65];

	(void)state;
	assert_int_equal(bft_parse_hex("", b, 0), 0);
	assert_int_equal(bft_parse_hex("00ff7F80", b, 4), 0);
	assert_int_equal(b[0], 0x00);
	assert_int_equal(b[1], 0xff);
	assert_int_equal(b[2], 0x7f);
	assert_int_equal(b[3], 0x80);
	assert_int_equal(bft_parse_hex("AbCdEf01", b, 4), 0);
	assert_int_equal(b[0], 0xab);
	assert_int_equal(b[2], 0xef);
	assert_int_equal(bft_parse_hex("00ff7F8", b, 4), -EINVAL);
	assert_int_equal(bft_parse_hex("00ff7F800", b, 4), -EINVAL);
	assert_int_equal(bft_parse_hex("00ff7F8000", b, 4), -EINVAL);
	assert_int_equal(bft_parse_hex("00ff7g80", b, 4), -EINVAL);
	assert_int_equal(bft_parse_hex("00ff 780", b, 4), -EINVAL);
	assert_int_equal(bft_parse_hex(" 0ff7F80", b, 4), -EINVAL);
	assert_int_equal(bft_parse_hex("0xff7F80", b, 4), -EINVAL);
	assert_int_equal(bft_parse_hex("", b, 4), -EINVAL);
	assert_int_equal(bft_parse_hex("00", b, 0), -EINVAL);
	/* format and parse are inverses. */
	bft_random(r, sizeof r);
	bft_format_hex(r, sizeof r, hex);
	assert_int_equal(strlen(hex), 64);
	assert_int_equal(strspn(hex, "0123456789abcdef"), 64);
	{
		uint8_t back[32];

		assert_int_equal(bft_parse_hex(hex, back, sizeof back), 0);
		assert_memory_equal(back, r, sizeof r);
	}
	bft_format_hex(r, 0, hex);
	assert_string_equal(hex, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_config_round_trip),
		cmocka_unit_test(test_server_key),
		cmocka_unit_test(test_client_key),
		cmocka_unit_test(test_client_key_max_t),
		cmocka_unit_test(test_key_permissions),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_hex),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
