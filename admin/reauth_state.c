/*
 * The pass's state file (reauth_state.h).  Two lines:
 *
 *	epoch 1 volume 0 block 4096
 *	progress 12000 of 65536 blocks, 210500000 bytes/s, at 1764288000,
 *	    pid 4242 on admin1
 *
 * (the second on one line).  The first is what a resumed run needs and
 * what releases before the second line wrote; a reader takes a file
 * without the second.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "reauth_state.h"

int
reauth_state_read(const char *path, struct reauth_state *st)
{
	unsigned long long e, v, b;
	FILE *fp;

	memset(st, 0, sizeof *st);
	if ((fp = fopen(path, "r")) == NULL) {
		errno = ENOENT;
		return -1;
	}
	if (fscanf(fp, "epoch %llu volume %llu block %llu\n", &e, &v, &b) !=
	    3 || e > UINT32_MAX || v > UINT32_MAX) {
		fclose(fp);
		errno = EINVAL;
		return -1;
	}
	st->epoch = (uint32_t)e;
	st->vol = (uint32_t)v;
	st->block = b;
	st->progress = fscanf(fp, "progress %" SCNu64 " of %" SCNu64
	    " blocks, %" SCNu64 " bytes/s, at %" SCNd64 ", pid %ld on %63s",
	    &st->done, &st->total, &st->rate, &st->at, &st->pid,
	    st->host) == 6;
	fclose(fp);
	return 0;
}

int
reauth_state_write(const char *path, const struct reauth_state *st)
{
	char tmp[ADMIN_PATH_MAX + 8];
	FILE *fp;

	if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp ||
	    (fp = fopen(tmp, "w")) == NULL)
		return -1;
	fprintf(fp, "epoch %" PRIu32 " volume %" PRIu32 " block %" PRIu64 "\n",
	    st->epoch, st->vol, st->block);
	fprintf(fp, "progress %" PRIu64 " of %" PRIu64 " blocks, %" PRIu64
	    " bytes/s, at %" PRId64 ", pid %ld on %s\n", st->done, st->total,
	    st->rate, st->at, st->pid, st->host[0] ? st->host : "-");
	if (fclose(fp) != 0 || rename(tmp, path) != 0) {
		(void)unlink(tmp);
		return -1;
	}
	return 0;
}

/*
 * On the pass's own host its PID says (a reused PID reads as running
 * until the file goes stale); elsewhere only the file's age can.
 */
bool
reauth_state_stopped(const struct reauth_state *st, int64_t now)
{
	char host[sizeof st->host];

	if (!st->progress)
		return true;
	if (gethostname(host, sizeof host) == 0 &&
	    strncmp(host, st->host, sizeof host) == 0 && st->pid > 0 &&
	    kill((pid_t)st->pid, 0) != 0 && errno == ESRCH)
		return true;
	return now - st->at > REAUTH_STATE_STALE_S;
}
