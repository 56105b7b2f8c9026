/* Per-thread errors of the library's calls (error_int.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error_int.h"

static _Thread_local int last_errno;
static _Thread_local char last_msg[512];

int
bftblk__fail(int err, const char *fmt, ...)
{
	char msg[sizeof last_msg];
	va_list ap;

	last_errno = err;
	if (fmt == NULL) {
		snprintf(last_msg, sizeof last_msg, "%s", strerror(err));
		return -1;
	}
	/*
	 * Through a copy: callers wrap the reason they are handed
	 * ("...: %s", bftblk__errmsg()), and formatting a buffer into itself is
	 * undefined.
	 */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	memcpy(last_msg, msg, sizeof last_msg);
	return -1;
}

int
bftblk__take_errno(void)
{
	int err = last_errno ? last_errno : EIO;

	last_errno = 0;
	return err;
}

const char *
bftblk__errmsg(void)
{
	return last_msg[0] ? last_msg : "no error";
}
