/*
 * Compacted segments' files written again (server/store/store_reuse.c):
 * only in a finalized directory; never a record of a file's earlier use
 * taken for the log's, whether a crash left the active segment with its
 * earlier use past the end, a spare was renamed in and nothing written,
 * or an older record sits right after the last one, behind a damaged
 * record or not.  The fixture is store_fixture.h.
 */
#include <dirent.h>
#include <sys/wait.h>

#include "featureset.h"
#include "store_fixture.h"
#include "../../server/store/store_reuse.h"

#define NBLK	48u
#define SEG	(256 * KIB)

static struct bft_store *
ropen(void)
{
	struct bft_store_opts o = { .segment_size = SEG, .compact_pct = 80,
	    .checkpoint_off = true };
	char err[512] = "";
	struct bft_store *st = bft_store_open_opts(dir, &ident, &o, err,
	    sizeof err);

	if (st == NULL)
		fail_msg("open: %s", err);
	return st;
}

static struct bft_store *
ropen_finalized(void)
{
	struct bft_store *st = ropen();

	assert_int_equal(bft_store_finalize(st, BFT_LEVEL), 0);
	return st;
}

static struct bft_store_stats
stats(struct bft_store *st)
{
	struct bft_store_stats ss;

	bft_store_stats(st, &ss);
	return ss;
}

static void
flush(struct bft_store *st)
{
	struct bft_store_flush *f = bft_store_flush_begin(st);

	assert_non_null(f);
	bft_store_flush_run(f);
	assert_int_equal(bft_store_flush_end(st, f), 0);
}

/* Block b completed at num; FLUSH now and then, as clients send it. */
static void
write_one(struct bft_store *st, uint64_t b, uint64_t num, uint64_t *last)
{
	assert_int_equal(put(st, b, num, 1, 0), 0);
	assert_int_equal(set_lc(st, b, num, 1), 0);
	last[b] = num;
	if (b % 8 == 7)
		flush(st);
}

/* Passes over every block until the log has reused `want` files. */
static uint64_t
churn(struct bft_store *st, uint64_t num, uint64_t want, uint64_t *last)
{
	for (unsigned pass = 0; stats(st).segments_reused < want; pass++) {
		assert_true(pass < 64);
		num++;
		for (uint64_t b = 0; b < NBLK; b++)
			write_one(st, b, num, last);
	}
	return num;
}

static void
check_all(struct bft_store *st, const uint64_t *last)
{
	struct bft_cand lc;

	for (uint64_t b = 0; b < NBLK; b++) {
		assert_int_equal(bft_store_get_lc(st, b, &lc), 0);
		assert_int_equal(lc.ts.num, last[b]);
		check_entry(st, b, last[b], 1, 0);
	}
}

/* The directory's files: segments' bytes, the highest one, spares. */
struct files {
	uint64_t seg_bytes;
	uint32_t top;
	unsigned spares;
	uint32_t spare_no;
};

static struct files
files(void)
{
	struct files f = { 0 };
	struct dirent *de;
	uint32_t no;
	DIR *d = opendir(dir);

	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		if (bft_seg_parse_name(de->d_name, &no)) {
			f.seg_bytes += (uint64_t)file_size(seg_path(no));
			if (no > f.top)
				f.top = no;
		} else if (bft_spare_parse_name(de->d_name, &no)) {
			f.spares++;
			f.spare_no = no;
		}
	}
	closedir(d);
	return f;
}

static struct bft_store_replay
replay_info(struct bft_store *st)
{
	struct bft_store_replay rp;

	bft_store_replay_info(st, &rp);
	return rp;
}

static void
test_order(void **state)
{
	(void)state;
	assert_int_equal(bft_rec_order(BFT_REC_OK, 8, 7), BFT_ORDER_NEXT);
	assert_int_equal(bft_rec_order(BFT_REC_OK, 1, 0), BFT_ORDER_NEXT);
	/* An earlier use's record, however well formed. */
	assert_int_equal(bft_rec_order(BFT_REC_OK, 7, 7), BFT_ORDER_STALE);
	assert_int_equal(bft_rec_order(BFT_REC_OK, 3, 7), BFT_ORDER_STALE);
	assert_int_equal(bft_rec_order(BFT_REC_OK, 0, 7), BFT_ORDER_STALE);
	/* A damaged record's number is believed neither way. */
	assert_int_equal(bft_rec_order(BFT_REC_BADSUM, 3, 7), BFT_ORDER_SKIP);
	assert_int_equal(bft_rec_order(BFT_REC_BADSUM, UINT64_MAX, 7),
	    BFT_ORDER_SKIP);
	assert_int_equal(bft_rec_order(BFT_REC_BADHDR, 9, 7), BFT_ORDER_END);
	assert_int_equal(bft_rec_order(BFT_REC_SHORT, 9, 7), BFT_ORDER_END);
	assert_int_equal(bft_rec_order(BFT_REC_IOERR, 9, 7), BFT_ORDER_END);
}

static void
test_names(void **state)
{
	char name[BFT_SEG_NAME_MAX];
	uint32_t no;

	(void)state;
	bft_spare_name(name, 12);
	assert_string_equal(name, "spare-000012");
	assert_true(bft_spare_parse_name(name, &no));
	assert_int_equal(no, 12);
	/* Never a segment, and only the names it writes. */
	assert_false(bft_seg_parse_name(name, &no));
	assert_false(bft_spare_parse_name("spare-12", &no));
	assert_false(bft_spare_parse_name("spare-000000", &no));
	assert_false(bft_spare_parse_name("spare-000012.log", &no));
	assert_false(bft_spare_parse_name("seg-000012.log", &no));
}

/* Not finalized: compacted segments are unlinked, as 0.2.0 does. */
static void
test_off_until_finalized(void **state)
{
	uint64_t last[NBLK] = { 0 }, num = 0;
	struct bft_store *st;

	(void)state;
	geometry(4, NBLK);
	st = ropen();
	for (unsigned pass = 0; pass < 8; pass++) {
		num++;
		for (uint64_t b = 0; b < NBLK; b++)
			write_one(st, b, num, last);
	}
	assert_int_equal(bft_store_sync(st), 0);
	assert_true(stats(st).compactions > 4);
	assert_int_equal(stats(st).segments_reused, 0);
	assert_int_equal(files().spares, 0);
	bft_store_close(st);
}

static void
test_reused(void **state)
{
	uint64_t last[NBLK] = { 0 }, num;
	struct bft_store *st;
	struct files f;

	(void)state;
	geometry(4, NBLK);
	st = ropen_finalized();
	num = churn(st, 0, 6, last);
	assert_int_equal(bft_store_sync(st), 0);
	assert_true(stats(st).spares <= BFT_STORE_MAX_SPARES);
	f = files();
	assert_int_equal(f.spares, stats(st).spares);
	check_all(st, last);
	bft_store_close(st);
	/* A close leaves nothing past the records: nothing to cut. */
	st = ropen();
	assert_int_equal(replay_info(st).stale_segments, 0);
	check_all(st, last);
	/* Spares a run left are taken by the next. */
	num = churn(st, num, stats(st).segments_reused + 2, last);
	check_all(st, last);
	bft_store_close(st);
	st = ropen();
	check_all(st, last);
	bft_store_close(st);
}

/*
 * A crash while the active segment is a reused file: the child stops
 * right after a roll-over onto a spare, with that file's earlier use
 * past the records it wrote.  The open cuts exactly that much: what is
 * left is what the child's store held, and every block reads what it
 * last completed.
 */
static void
test_crash_stale_tail(void **state)
{
	uint64_t last[NBLK] = { 0 }, num, total = 0;
	struct files before, after;
	struct bft_store *st;
	char prog[160];
	int status, fd;
	pid_t pid;

	(void)state;
	geometry(4, NBLK);
	st = ropen_finalized();
	bft_store_close(st);
	snprintf(prog, sizeof prog, "%s/progress", tmp);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint32_t top;
		uint64_t reused;

		st = ropen();
		num = churn(st, 0, 4, last);
		/* Spares waiting, and no job in flight from here on. */
		if (bft_store_sync(st) != 0 || stats(st).spares == 0)
			_exit(2);
		top = files().top;
		reused = stats(st).segments_reused;
		num++;
		for (uint64_t b = 0; files().top == top; b = (b + 1) % NBLK) {
			assert_int_equal(put(st, b, num + b, 1, 0), 0);
			assert_int_equal(set_lc(st, b, num + b, 1), 0);
			last[b] = num + b;
		}
		if (stats(st).segments_reused != reused + 1)
			_exit(3);
		total = stats(st).bytes_total;
		fd = open(prog, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || write(fd, &total, sizeof total) != sizeof total ||
		    write(fd, last, sizeof last) != sizeof last)
			_exit(4);
		close(fd);
		raise(SIGKILL);
		_exit(5);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFSIGNALED(status))
		fail_msg("child exited %d", WEXITSTATUS(status));
	fd = open(prog, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, &total, sizeof total), sizeof total);
	assert_int_equal(read(fd, last, sizeof last), sizeof last);
	close(fd);
	before = files();
	/* The reused file still holds its earlier use past the records. */
	assert_true(before.seg_bytes > total + SEG / 2);
	st = ropen();
	after = files();
	assert_int_equal(replay_info(st).stale_segments, 1);
	assert_int_equal(replay_info(st).stale_bytes,
	    before.seg_bytes - total);
	assert_int_equal(after.seg_bytes, total);
	assert_int_equal(stats(st).bytes_total, total);
	check_all(st, last);
	st = reopen_same(st, SEG);
	bft_store_close(st);
}

/*
 * A spare renamed in as the next segment, and a crash before its first
 * record reached the disk: its zeroed first page makes it empty.
 */
static void
test_spare_renamed_in(void **state)
{
	uint64_t last[NBLK] = { 0 };
	uint8_t page[4096], zero[4096] = { 0 };
	char spare[160], name[BFT_SEG_NAME_MAX];
	struct bft_store *st;
	struct files f;
	int fd;

	(void)state;
	geometry(4, NBLK);
	st = ropen_finalized();
	churn(st, 0, 3, last);
	assert_int_equal(bft_store_sync(st), 0);
	bft_store_close(st);
	f = files();
	assert_true(f.spares > 0);
	bft_spare_name(name, f.spare_no);
	snprintf(spare, sizeof spare, "%s/%s", dir, name);
	fd = open(spare, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, page, sizeof page, 0), sizeof page);
	close(fd);
	assert_memory_equal(page, zero, sizeof page);
	/* Records of its earlier use follow the zeroed page. */
	assert_true(file_size(spare) > SEG / 2);
	assert_int_equal(rename(spare, seg_path(f.top + 1)), 0);
	st = ropen();
	assert_int_equal(replay_info(st).stale_segments, 1);
	assert_int_equal(replay_info(st).torn_records, 0);
	assert_int_equal(file_size(seg_path(f.top + 1)), 0);
	check_all(st, last);
	bft_store_close(st);
}

/* The offset and length of the last record of the file at p. */
static void
last_record(const char *p, uint64_t *off, uint64_t *len)
{
	uint8_t hdr[BFT_REC_HDR_LEN];
	struct bft_rec_hdr h;
	uint64_t o = 0, size = (uint64_t)file_size(p);
	int fd = open(p, O_RDONLY);

	assert_true(fd >= 0);
	while (o < size) {
		assert_int_equal(pread(fd, hdr, sizeof hdr, (off_t)o),
		    sizeof hdr);
		assert_int_equal(bft_rec_check_hdr(hdr, size - o, ident.n, &h),
		    BFT_REC_OK);
		*off = o;
		*len = BFT_REC_HDR_LEN + h.payload_len + BFT_REC_SUM_LEN;
		o += *len;
	}
	close(fd);
	assert_int_equal(o, size);
}

/*
 * An older record right after the last one, well formed and aligned,
 * as a reused file's earlier use is: cut off, not replayed.  Then the
 * same behind a damaged last record, whose own number must not let
 * the older one in.
 */
static void
older_after_last(bool damage_last)
{
	uint64_t last[NBLK] = { 0 }, len = 0, size, loff = 0, llen = 0;
	uint8_t *rec = malloc(2 * SEG);
	struct bft_store_stats ss;
	struct bft_store *st;
	struct files f;
	char *top;
	int fd;

	assert_non_null(rec);
	geometry(4, NBLK);
	st = ropen_finalized();
	churn(st, 0, 3, last);
	bft_store_close(st);
	f = files();
	top = strdup(seg_path(f.top));
	size = (uint64_t)file_size(top);
	/* The first record of an older segment, with a lower number. */
	fd = open(seg_path(f.top - 1), O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, rec, BFT_REC_HDR_LEN, 0), BFT_REC_HDR_LEN);
	{
		struct bft_rec_hdr h;

		assert_int_equal(bft_rec_check_hdr(rec, SEG, ident.n, &h),
		    BFT_REC_OK);
		len = BFT_REC_HDR_LEN + h.payload_len + BFT_REC_SUM_LEN;
	}
	assert_int_equal(pread(fd, rec, len, 0), (ssize_t)len);
	close(fd);
	last_record(top, &loff, &llen);
	fd = open(top, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, rec, len, (off_t)size), (ssize_t)len);
	if (damage_last) {
		uint8_t b;

		/* A byte of the last record's payload. */
		assert_int_equal(pread(fd, &b, 1, (off_t)(loff + llen - 9)),
		    1);
		b ^= 0x40;
		assert_int_equal(pwrite(fd, &b, 1, (off_t)(loff + llen - 9)),
		    1);
		/*
		 * Behind the close's checkpoint replay would not read it:
		 * the whole log is replayed instead.
		 */
		drop_ckpt();
		size = loff;
	}
	close(fd);
	st = ropen();
	assert_int_equal(replay_info(st).stale_segments, 1);
	/* A damaged last record is a torn one: cut too. */
	assert_int_equal(file_size(top), (off_t)size);
	ss = stats(st);
	assert_int_equal(ss.bytes_total, files().seg_bytes);
	if (!damage_last)
		check_all(st, last);
	bft_store_close(st);
	free(top);
	free(rec);
}

static void
test_older_after_last(void **state)
{
	(void)state;
	older_after_last(false);
}

static void
test_older_after_damaged(void **state)
{
	(void)state;
	older_after_last(true);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_names),
		cmocka_unit_test_setup_teardown(test_off_until_finalized, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_reused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_stale_tail, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_spare_renamed_in, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_older_after_last, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_older_after_damaged,
		    setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
