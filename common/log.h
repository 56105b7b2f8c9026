/*
 * Logging for the server and the admin tool: one line per event on
 * stderr, prefixed with the date and time and the program name, or with
 * a syslog priority when stderr is the journal (log.c).  The plugin
 * uses nbdkit_error and nbdkit_debug instead.
 */
#ifndef BFTBLK_LOG_H
#define BFTBLK_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include <stdarg.h>

void bft_log_init(const char *progname, int verbose);
/* bft_log: information; bft_warn adds "warning: "; bft_error: failures. */
void bft_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void bft_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void bft_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void bft_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Whether fd is the stream journal_stream (JOURNAL_STREAM's "DEV:INO")
 * names, i.e. whether systemd connected it to the journal.
 */
bool bft_log_is_journal(const char *journal_stream, int fd);

/*
 * Whether the count-th event of a kind should be logged: the first ten,
 * then every thousandth.  Refusals and authentication failures can come
 * in floods from a broken or hostile client; the first few say what is
 * going on, the rest would only fill the disk.  Inline, so the fuzz
 * harnesses' replacement logger needs no copy of it.
 */
static inline bool
bft_log_sampled(uint64_t count)
{
	return count <= 10 || count % 1000 == 0;
}

#endif
