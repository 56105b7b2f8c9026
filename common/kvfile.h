/*
 * The "key = value" text format shared by bftblk.conf and the key files:
 * one pair per line, '#' starts a comment, blank lines are ignored.
 */
#ifndef BFTBLK_KVFILE_H
#define BFTBLK_KVFILE_H

#include <stddef.h>

/*
 * Returns 0 to go on, or a negative errno (-EINVAL for a bad value) to
 * stop after writing a reason to err.
 */
typedef int (*bft_kv_fn)(void *ctx, const char *key, const char *value,
			 char *err, size_t errlen);

/*
 * Calls fn for every pair in path.  When private is set the file must
 * not be readable by group or others, since it holds keys.  Returns 0,
 * or a negative errno with "PATH:LINE: reason" in err: fopen's when the
 * file cannot be opened, -EPERM when others may read a private file,
 * -EINVAL for a line that is not key = value (or too long), -EIO for a
 * read error, or what fn returned.
 */
int bft_kv_parse(const char *path, int private, bft_kv_fn fn, void *ctx,
		 char *err, size_t errlen);

#endif
