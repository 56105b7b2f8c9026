/*
 * Frame recording for fuzzing seeds (see record.h).  The server's event
 * loop is single-threaded, so one global state is enough, and it lets
 * net.c's hook (bft_test_frame) call in wherever a frame body is split
 * off.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "record.h"

static int dirfd_ = -1;
static unsigned seq;

int
bft_record_start(const char *dir, char *err, size_t errlen)
{
	bft_record_stop();
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd_ < 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	seq = 0;
	return 0;
}

void
bft_record_frame(const uint8_t *body, size_t len)
{
	char name[16];
	ssize_t w;
	int fd;

	if (dirfd_ < 0 || seq >= BFT_RECORD_MAX)
		return;
	errno = 0;		/* a short write sets none: EIO below */
	/* Zero-padded, so that sorting by name gives the arrival order. */
	snprintf(name, sizeof name, "%06u", seq++);
	fd = openat(dirfd_, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0644);
	if (fd < 0)
		goto out_fail;
	w = write(fd, body, len);
	if (close(fd) < 0 || w < 0 || (size_t)w != len)
		goto out_fail;
	if (seq == BFT_RECORD_MAX)
		bft_log("--record-frames: %u frames recorded, stopping",
		    BFT_RECORD_MAX);
	return;
out_fail:
	bft_log("--record-frames: %s: %s; recording stops", name,
	    strerror(errno ? errno : EIO));
	bft_record_stop();
}

void
bft_record_stop(void)
{
	if (dirfd_ >= 0)
		close(dirfd_);
	dirfd_ = -1;
}
