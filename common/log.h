/*
 * Logging for the server and the admin tool: one line per event on
 * stderr, prefixed with the program name.  The plugin uses nbdkit_error
 * and nbdkit_debug instead.
 */
#ifndef BFTBLK_LOG_H
#define BFTBLK_LOG_H

#include <stdarg.h>

void bft_log_init(const char *progname, int verbose);
void bft_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void bft_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
