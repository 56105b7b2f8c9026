/* Parser for the "key = value" files. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "kvfile.h"

static char *
trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

int
bft_kv_parse(const char *path, int private, bft_kv_fn fn, void *ctx,
    char *err, size_t errlen)
{
	char line[1024], why[512];
	struct stat sb;
	FILE *fp;
	int lineno = 0, rc;

	fp = fopen(path, "r");
	if (fp == NULL) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (private && fstat(fileno(fp), &sb) == 0 && (sb.st_mode & 077)) {
		rc = -EPERM;
		snprintf(err, errlen, "%s: holds secret keys but is readable "
		    "by group or others (mode %03o); chmod 600 it", path,
		    (unsigned)(sb.st_mode & 0777));
		goto out_close;
	}
	while (fgets(line, sizeof line, fp) != NULL) {
		char *hash, *eq, *key, *value;

		lineno++;
		if (strchr(line, '\n') == NULL && !feof(fp)) {
			rc = -EINVAL;
			snprintf(err, errlen, "%s:%d: line too long", path,
			    lineno);
			goto out_close;
		}
		if ((hash = strchr(line, '#')) != NULL)
			*hash = '\0';
		key = trim(line);
		if (*key == '\0')
			continue;
		eq = strchr(key, '=');
		if (eq == NULL) {
			rc = -EINVAL;
			snprintf(err, errlen, "%s:%d: expected key = value",
			    path, lineno);
			goto out_close;
		}
		*eq = '\0';
		key = trim(key);
		value = trim(eq + 1);
		why[0] = '\0';
		if ((rc = fn(ctx, key, value, why, sizeof why)) != 0) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
			goto out_close;
		}
	}
	if (ferror(fp)) {
		rc = -EIO;
		snprintf(err, errlen, "%s: read error", path);
		goto out_close;
	}
	rc = 0;
out_close:
	fclose(fp);
	return rc;
}
