/*
 * One line per event on stderr; the server runs in the foreground.
 *
 * On a terminal or in a file every line starts with the date and time
 * (UTC, to the millisecond), so a log copied off a host still says when
 * each event happened.  When stderr is the journal (systemd sets
 * JOURNAL_STREAM to the device and inode of the stream it connected),
 * journald stamps each line itself; a line then starts instead with the
 * sd-daemon(3) priority prefix <N>, which journald strips and
 * records as the entry's priority.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"

/* The syslog priorities of sd-daemon(3): SD_ERR, SD_WARNING, ... */
enum { PRI_ERR = 3, PRI_WARNING = 4, PRI_INFO = 6, PRI_DEBUG = 7 };

static const char *prog = "bftblk";
static int verbosity;
static bool journal;

bool
bft_log_is_journal(const char *journal_stream, int fd)
{
	unsigned long long dev, ino;
	struct stat sb;
	int used = 0;

	if (journal_stream == NULL ||
	    sscanf(journal_stream, "%llu:%llu%n", &dev, &ino, &used) != 2 ||
	    journal_stream[used] != '\0' || fstat(fd, &sb) != 0)
		return false;
	return (unsigned long long)sb.st_dev == dev &&
	    (unsigned long long)sb.st_ino == ino;
}

void
bft_log_init(const char *progname, int verbose)
{
	const char *slash = strrchr(progname, '/');

	prog = slash ? slash + 1 : progname;
	verbosity = verbose;
	journal = bft_log_is_journal(getenv("JOURNAL_STREAM"), 2);
}

static void
vlog(int pri, const char *what, const char *fmt, va_list ap)
{
	char line[1024];
	struct timespec now;
	struct tm tm;

	vsnprintf(line, sizeof line, fmt, ap);
	/* A single fprintf keeps concurrent lines from interleaving. */
	if (journal) {
		fprintf(stderr, "<%d>%s: %s%s\n", pri, prog, what, line);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s: %s%s\n",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, now.tv_nsec / 1000000, prog, what, line);
}

void
bft_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(PRI_INFO, "", fmt, ap);
	va_end(ap);
}

void
bft_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(PRI_WARNING, "warning: ", fmt, ap);
	va_end(ap);
}

void
bft_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(PRI_ERR, "", fmt, ap);
	va_end(ap);
}

void
bft_debug(const char *fmt, ...)
{
	va_list ap;

	if (!verbosity)
		return;
	va_start(ap, fmt);
	vlog(PRI_DEBUG, "", fmt, ap);
	va_end(ap);
}
