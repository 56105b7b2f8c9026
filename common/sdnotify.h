/*
 * The service manager's readiness protocol, sd_notify(3), without
 * libsystemd: a datagram with "READY=1", "RELOADING=1", "STOPPING=1" or
 * "STATUS=..." lines to the unix socket $NOTIFY_SOCKET names (a path,
 * or "@name" in the abstract namespace).
 */
#ifndef BFTBLK_SDNOTIFY_H
#define BFTBLK_SDNOTIFY_H

/*
 * Sends state when the environment has NOTIFY_SOCKET.  Three outcomes:
 * 1 when sent; 0 when there is no service manager to tell (or an
 * address of a kind this does not speak), which is no failure; a
 * negative errno when sending failed.
 */
int bft_sd_notify(const char *state);

/* The same, formatted; states longer than 4 KiB are cut. */
int bft_sd_notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
