/* One line per event on stderr; the server runs in the foreground. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"

static const char *prog = "bftblk";
static int verbosity;

void
bft_log_init(const char *progname, int verbose)
{
	const char *slash = strrchr(progname, '/');

	prog = slash ? slash + 1 : progname;
	verbosity = verbose;
}

static void
vlog(const char *fmt, va_list ap)
{
	char line[1024];
	struct timespec now;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	vsnprintf(line, sizeof line, fmt, ap);
	/* A single fprintf keeps concurrent lines from interleaving. */
	fprintf(stderr, "%02d:%02d:%02d.%03ld %s: %s\n", tm.tm_hour, tm.tm_min,
	    tm.tm_sec, now.tv_nsec / 1000000, prog, line);
}

void
bft_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void
bft_debug(const char *fmt, ...)
{
	va_list ap;

	if (!verbosity)
		return;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}
