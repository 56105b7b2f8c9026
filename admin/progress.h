/*
 * A long task's progress on stderr (done/total, rate, time left), at
 * most once a second and once more at the end, for the commands that
 * copy volumes and streams (snap.c, snap_diff.c).
 */
#ifndef BFTBLK_ADMIN_PROGRESS_H
#define BFTBLK_ADMIN_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct admin_progress {
	const char *what;		/* the line's start: "export" */
	const char *unit;		/* "MiB", "blocks" */
	uint64_t per_unit;		/* what done counts, per unit */
	double t0, last;		/* started, last line (monotonic s) */
};

/* CLOCK_MONOTONIC in seconds, what the progress lines time. */
double admin_now_s(void);

void admin_progress_start(struct admin_progress *p, const char *what,
    const char *unit, uint64_t per_unit);
/* done of total; end: the last line, with the time taken. */
void admin_progress(struct admin_progress *p, uint64_t done, uint64_t total,
    bool end);

/*
 * A bftblk_progress_fn (bftblk.h) over opaque, an admin_progress: the
 * call whose done reaches total prints the last line.
 */
void admin_progress_fn(void *opaque, uint64_t done, uint64_t total);

#endif
