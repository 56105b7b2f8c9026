/*
 * DIR/keys-reauth.state: where a `bftblk keys reauth` pass is.  The
 * pass writes it at most once a second and removes it when it ends; a
 * run for the same epoch resumes from it, and `bftblk status` shows it:
 * the pass's progress, or that it stopped and where it would resume.
 */
#ifndef BFTBLK_ADMIN_REAUTH_STATE_H
#define BFTBLK_ADMIN_REAUTH_STATE_H

#include <stdbool.h>
#include <stdint.h>

#define REAUTH_STATE_FILE	"keys-reauth.state"
/* A pass on another host not heard of for longer is shown stopped. */
#define REAUTH_STATE_STALE_S	10

struct reauth_state {
	uint32_t epoch;			/* the pass signs under */
	uint32_t vol;			/* resumes at volume vol's range */
	uint64_t block;			/* holding block */
	/* The second line; absent in a file of before it was written. */
	bool progress;
	uint64_t done, total;		/* blocks read, held (about) */
	uint64_t rate;			/* bytes/s since the run started */
	int64_t at;			/* written, Unix seconds */
	long pid;			/* the pass's, on host */
	char host[64];
};

/*
 * The state in path.  0; -1 with errno ENOENT (no pass under way, or
 * its last run ended) or EINVAL (not a state file).
 */
int reauth_state_read(const char *path, struct reauth_state *st);
/* Written whole: a temporary file renamed over path.  0 or -1. */
int reauth_state_write(const char *path, const struct reauth_state *st);
/* Whether the pass st tells of has stopped, as seen at now (Unix s). */
bool reauth_state_stopped(const struct reauth_state *st, int64_t now);

#endif
