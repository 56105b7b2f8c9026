/*
 * The log line formats of common/log.c: date, time and program name on
 * a plain stderr; the sd-daemon(3) priority prefix and no time when
 * stderr is the journal, as JOURNAL_STREAM's DEV:INO says.
 */
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"

/* The DEV:INO of fd, as systemd writes JOURNAL_STREAM. */
static void
stream_id(int fd, char *out, size_t len)
{
	struct stat sb;

	assert_int_equal(fstat(fd, &sb), 0);
	snprintf(out, len, "%llu:%llu", (unsigned long long)sb.st_dev,
	    (unsigned long long)sb.st_ino);
}

static void
test_is_journal(void **state)
{
	char id[64], other[80];
	FILE *f = tmpfile();
	int fd;

	(void)state;
	assert_non_null(f);
	fd = fileno(f);
	stream_id(fd, id, sizeof id);
	assert_true(bft_log_is_journal(id, fd));
	snprintf(other, sizeof other, "%s1", id);
	assert_false(bft_log_is_journal(other, fd));
	snprintf(other, sizeof other, "%s:", id);
	assert_false(bft_log_is_journal(other, fd));
	assert_false(bft_log_is_journal(NULL, fd));
	assert_false(bft_log_is_journal("", fd));
	assert_false(bft_log_is_journal("journal", fd));
	assert_false(bft_log_is_journal(id, -1));
	fclose(f);
}

/*
 * Runs the logging calls with stderr on a temporary file, the file as
 * the journal or not, and returns what they wrote.
 */
static char *
capture(bool as_journal, int verbose)
{
	static char buf[4096];
	char id[64];
	FILE *f = tmpfile();
	int saved = dup(2);
	size_t got;

	assert_non_null(f);
	assert_true(saved >= 0);
	fflush(stderr);
	assert_int_equal(dup2(fileno(f), 2), 2);
	if (as_journal) {
		stream_id(2, id, sizeof id);
		setenv("JOURNAL_STREAM", id, 1);
	} else {
		/* Another stream's id: stderr is not the journal. */
		stream_id(saved, id, sizeof id);
		setenv("JOURNAL_STREAM", id, 1);
	}
	bft_log_init("/usr/sbin/bftblk-server", verbose);
	bft_log("info %d", 1);
	bft_warn("warn %s", "two");
	bft_error("error %c", '3');
	bft_debug("debug");
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	unsetenv("JOURNAL_STREAM");
	bft_log_init("test_log", 0);
	rewind(f);
	got = fread(buf, 1, sizeof buf - 1, f);
	buf[got] = '\0';
	fclose(f);
	return buf;
}

static void
test_journal_lines(void **state)
{
	(void)state;
	assert_string_equal(capture(true, 1),
	    "<6>bftblk-server: info 1\n"
	    "<4>bftblk-server: warning: warn two\n"
	    "<3>bftblk-server: error 3\n"
	    "<7>bftblk-server: debug\n");
	assert_string_equal(capture(true, 0),
	    "<6>bftblk-server: info 1\n"
	    "<4>bftblk-server: warning: warn two\n"
	    "<3>bftblk-server: error 3\n");
}

static void
test_dated_lines(void **state)
{
	static const char *re_text =
	    "^[0-9]{4}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]"
	    "\\.[0-9]{3}Z bftblk-server: info 1\n"
	    "[0-9]{4}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]"
	    "\\.[0-9]{3}Z bftblk-server: warning: warn two\n"
	    "[0-9]{4}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]"
	    "\\.[0-9]{3}Z bftblk-server: error 3\n"
	    "[0-9]{4}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]"
	    "\\.[0-9]{3}Z bftblk-server: debug\n$";
	regex_t re;
	const char *out = capture(false, 1);

	(void)state;
	assert_int_equal(regcomp(&re, re_text, REG_EXTENDED | REG_NOSUB), 0);
	if (regexec(&re, out, 0, NULL, 0) != 0)
		fail_msg("unexpected log lines:\n%s", out);
	regfree(&re);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_is_journal),
		cmocka_unit_test(test_journal_lines),
		cmocka_unit_test(test_dated_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
