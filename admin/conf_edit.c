/*
 * Editing bftblk.conf in place (admin.h): `bftblk client` and `bftblk
 * server rotate` change a line or two of a file every host reads.  The
 * new text goes to a temporary file, synced, which must load as a
 * configuration before it is renamed over the old one: a failed edit,
 * or one that would leave a file nobody can load, leaves the cluster's
 * file as it was.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "config.h"
#include "log.h"

int
admin_conf_edit(const char *conf, const char *tmp, admin_conf_line_fn *fn,
    void *arg, const char *append)
{
	static struct bft_config check;
	char line[1024], err[1024];
	FILE *in, *out;
	int rc = -1;

	if ((in = fopen(conf, "r")) == NULL) {
		bft_log("%s: %s", conf, strerror(errno));
		return -1;
	}
	if ((out = fopen(tmp, "w")) == NULL) {
		bft_log("%s: %s", tmp, strerror(errno));
		goto out_in;
	}
	while (fgets(line, sizeof line, in) != NULL)
		fn(line, out, arg);
	if (append != NULL)
		fprintf(out, "%s\n", append);
	if (fflush(out) != 0 || fsync(fileno(out)) != 0) {
		bft_log("%s: %s", tmp, strerror(errno));
		fclose(out);
		goto out_unlink;
	}
	if (fclose(out) != 0) {
		bft_log("%s: %s", tmp, strerror(errno));
		goto out_unlink;
	}
	if (bft_config_load(tmp, &check, err, sizeof err) != 0) {
		bft_log("the edited configuration does not load: %s", err);
		goto out_unlink;
	}
	if (rename(tmp, conf) != 0) {
		bft_log("%s: %s", conf, strerror(errno));
		goto out_unlink;
	}
	rc = 0;
	goto out_in;
out_unlink:
	unlink(tmp);
out_in:
	fclose(in);
	return rc;
}
