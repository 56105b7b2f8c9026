/*
 * The data directory's identity and format (server/store/store_identity.c): a
 * directory of another cluster, server or geometry is refused naming
 * what differs; formats 1 and 2 are refused with the reason; format 3
 * (records without a metadata CRC) is upgraded in place and read, and
 * so are formats 4 to 6 (whose records format 7 reads as they are).
 */
#include "featureset.h"
#include "store_fixture.h"

/*
 * Rewrites every record of segment no as bftblk wrote it before format
 * 4: record version 1, no meta CRC, the record's CRC over that.
 */
static void
to_v1(uint32_t no)
{
	static uint8_t rec[2 * BFT_MAX_FRAG];
	int fd = open(seg_path(no), O_RDWR);
	off_t end = file_size(seg_path(no));
	struct bft_rec_hdr h;
	uint32_t crc;
	size_t len;

	assert_true(fd >= 0);
	for (off_t off = 0; off < end; off += (off_t)len) {
		assert_int_equal(pread(fd, rec, BFT_REC_HDR_LEN, off),
		    BFT_REC_HDR_LEN);
		assert_int_equal(bft_rec_check_hdr(rec, (size_t)(end - off),
		    ident.n, &h), BFT_REC_OK);
		len = BFT_REC_HDR_LEN + h.payload_len + BFT_REC_SUM_LEN;
		assert_int_equal(pread(fd, rec, len, off), (ssize_t)len);
		rec[5] = BFT_REC_VERSION_V1;
		memset(rec + 12, 0, 4);
		crc = bft_crc32c(0, rec, len - BFT_REC_SUM_LEN);
		for (int i = 0; i < 4; i++)
			rec[len - BFT_REC_SUM_LEN + i] = (uint8_t)(crc >> 8 * i);
		assert_int_equal(pwrite(fd, rec, len, off), (ssize_t)len);
	}
	close(fd);
}

static const char *
read_text(const char *p)
{
	static char text[1024];
	int fd = open(p, O_RDONLY);
	ssize_t len;

	assert_true(fd >= 0);
	len = read(fd, text, sizeof text - 1);
	close(fd);
	assert_true(len >= 0);
	text[len] = '\0';
	return text;
}

static void
refused(const char *what)
{
	char err[512] = "";

	assert_null(bft_store_open(dir, &ident, err, sizeof err));
	if (strstr(err, what) == NULL)
		fail_msg("error \"%s\" does not mention \"%s\"", err, what);
}

/* Rewrites the identity file's "format = 2" line as "format = <to>". */
static void
set_format(const char *path, char to)
{
	char text[512], *f;
	ssize_t len;
	int fd;

	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	len = pread(fd, text, sizeof text - 1, 0);
	assert_true(len > 0);
	text[len] = '\0';
	f = strstr(text, "format = ");
	assert_non_null(f);
	f[9] = to;
	assert_int_equal(pwrite(fd, text, (size_t)len, 0), len);
	close(fd);
}

static void
test_identity(void **state)
{
	struct bft_store_identity good;
	struct bft_store *st;
	char p[160];
	int fd;

	(void)state;
	st = sopen(0);
	assert_int_equal(put(st, 1, 1, 1, 0), 0);
	refused("in use");
	bft_store_close(st);
	good = ident;
	ident.cluster_id[5] ^= 1;
	refused("belongs to cluster c0c1c2c3c4c5c6c7");
	ident = good;
	ident.server_index = 3;
	refused("server index 2, config says 3");
	ident = good;
	ident.n = 7;
	refused("n = 4 servers, config says n = 7");
	ident = good;
	ident.t = 0;
	refused("t = 1, config says t = 0");
	ident = good;
	ident.block_size = 4096;
	refused("block size 65536 vs 4096");
	ident = good;
	ident.nblocks = 65;
	refused("holds 64 blocks, config says 65");
	ident = good;
	ident.n = 0;
	refused("bad geometry");
	ident = good;
	snprintf(p, sizeof p, "%s/identity", dir);
	/*
	 * Format 1 hashed with BLAKE2b: its cross-checksums would make every
	 * fragment look corrupt, so it is refused with the reason.
	 */
	set_format(p, '1');
	refused("whose H was BLAKE2b");
	/* Format 2's MACs do not name the block: all would fail now. */
	set_format(p, '2');
	refused("did not name the block");
	set_format(p, '9');
	refused("format 9 is not supported");
	/* 8 is finalized, which its own line says: not one without. */
	set_format(p, '8');
	refused("format 8 without a finalized line");
	/*
	 * Format 3 is upgraded in place, and its records (version 1, no
	 * meta CRC) are still read: whole, the metadata with them.
	 */
	set_format(p, '3');
	to_v1(1);
	drop_ckpt();
	st = sopen(0);
	check_entry(st, 1, 1, 1, 0);
	assert_int_equal(set_lc(st, 1, 1, 1), 0);
	assert_int_equal(store_lc(st, 1)->ts.num, 1);
	bft_store_close(st);
	assert_non_null(strstr(read_text(p), "format = 7\n"));
	st = sopen(0);
	check_entry(st, 1, 1, 1, 0);
	bft_store_close(st);
	/* Format 4's to 6's records are format 7's: only the identity. */
	set_format(p, '4');
	st = sopen(0);
	check_entry(st, 1, 1, 1, 0);
	bft_store_close(st);
	assert_non_null(strstr(read_text(p), "format = 7\n"));
	set_format(p, '5');
	st = sopen(0);
	check_entry(st, 1, 1, 1, 0);
	bft_store_close(st);
	assert_non_null(strstr(read_text(p), "format = 7\n"));
	set_format(p, '6');
	st = sopen(0);
	check_entry(st, 1, 1, 1, 0);
	bft_store_close(st);
	assert_non_null(strstr(read_text(p), "format = 7\n"));
	fd = open(p, O_WRONLY | O_APPEND);
	assert_int_equal(write(fd, "colour = blue\n", 14), 14);
	close(fd);
	refused("unknown field");
	assert_int_equal(unlink(p), 0);
	refused("no identity file");
	/* Without segments a lost identity is simply written afresh. */
	assert_int_equal(unlink(seg_path(1)), 0);
	st = sopen(0);
	bft_store_close(st);
	st = sopen(0);
	bft_store_close(st);
}

/* Sets the finalized line's level in the file at path to <to>. */
static void
set_level(const char *path, char to)
{
	char text[1024], *f;
	ssize_t len;
	int fd;

	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	len = pread(fd, text, sizeof text - 1, 0);
	assert_true(len > 0);
	text[len] = '\0';
	f = strstr(text, "directory = ");
	assert_non_null(f);
	f[12] = to;
	assert_int_equal(pwrite(fd, text, (size_t)len, 0), len);
	close(fd);
}

/*
 * Finalizing: durable across a reopen, idempotent, format 8 with the
 * finalized line first, where release 0.2.0's parser stops and prints
 * the key: the sentence that says why it refuses.
 */
static void
test_finalize(void **state)
{
	struct bft_store *st;
	const char *text, *fin, *fmt, *nl;
	char p[160];

	(void)state;
	snprintf(p, sizeof p, "%s/identity", dir);
	st = sopen(0);
	assert_int_equal(bft_store_finalized(st), 0);
	assert_int_equal(bft_store_format(st), BFT_STORE_FORMAT);
	assert_int_equal(bft_store_finalize(st, 0), -EINVAL);
	assert_int_equal(bft_store_finalize(st, BFT_LEVEL_MAX + 1), -EINVAL);
	assert_non_null(strstr(read_text(p), "format = 7\n"));
	assert_int_equal(bft_store_finalize(st, 1), 0);
	assert_int_equal(bft_store_finalized(st), 1);
	assert_int_equal(bft_store_finalize(st, 1), 0);
	bft_store_close(st);
	text = read_text(p);
	fin = strstr(text, "\nfinalized for bftblk release ");
	fmt = strstr(text, "\nformat = 8\n");
	assert_non_null(fin);
	assert_non_null(fmt);
	assert_true(fin < fmt);
	nl = strchr(text, '\n');
	assert_true(nl == fin);
	assert_non_null(strstr(text, "older bftblk servers must not open "
	    "this directory = 1\n"));
	st = sopen(0);
	assert_int_equal(bft_store_finalized(st), 1);
	assert_int_equal(bft_store_format(st), BFT_STORE_FORMAT_FINALIZED);
	bft_store_close(st);
	/* A level above this build's: the release that wrote it is needed. */
	set_level(p, '2');
	refused("newer than this bftblk's");
	set_level(p, '0');
	refused("bad value");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_identity, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_finalize, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
