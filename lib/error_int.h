/*
 * The error of the calling thread's failing request: an errno and a
 * sentence, kept per thread so that threads sharing a handle never see
 * each other's (bftblk_errmsg() in bftblk.h).  Internal code records an
 * error where it knows why, and the public call returns it.
 */
#ifndef BFTBLK_ERROR_INT_H
#define BFTBLK_ERROR_INT_H

/* Records err and a message (NULL fmt: strerror(err)); returns -1. */
int bftblk__fail(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/*
 * The errno of this thread's last bftblk__fail, which it forgets, so that a
 * later failure can never report an earlier one's errno (EIO if none).
 * The message stays for bftblk_errmsg().
 */
int bftblk__take_errno(void);
const char *bftblk__errmsg(void);

#endif
