/*
 * Whether a server due for recovery may restart now (rejuv.h), and the
 * small pure helpers of the schedule.
 *
 * The rule, for server i, asking every peer's STATUS each time:
 *
 *  1. If a peer does not answer, or says RECOVERING or CLAIMED with an
 *     index below i's, wait.  Otherwise set i's own CLAIMED (visible in
 *     its STATUS from then on) and ask every peer again.
 *  2. With the claim held: a peer that does not answer, that recovers,
 *     or that claims with a lower index makes i drop its claim and wait.
 *     A higher-index peer that claims makes i hold its claim and ask
 *     again shortly: that peer is in step 2 too and will see i's claim
 *     and drop its own.  Once no peer is in the way, i restarts.  It
 *     shows CLAIMED until it stops listening and RECOVERING (from its
 *     marker, before it listens again) until it has recovered.
 *
 * This is Burns and Lynch's one-flag mutual exclusion with STATUS as
 * the flags.  Why two correct servers i < j never restart together:
 * each set its flag before the reads that let it go, and keeps it set
 * (or is unreachable, which counts the same) until recovered.  j goes
 * only after a read of i saw no flag, at some time r_j after j's flag
 * was up.  i then set its flag after r_j, and its step 2 reads of j
 * came later still, while j's flag was up or j was down: i holds or
 * waits.  No clock is involved: only the order of each server's own
 * set-then-read.  Progress: among claimers the lowest index never
 * yields to a higher one, and every other drops its claim, so one of
 * them goes unless a peer is down or lies; a lying or silent peer can
 * only delay recoveries, which is what it could do by being down.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rejuv.h"
#include "wire.h"

enum bft_rejuv_verdict
bft_rejuv_decide(unsigned self, unsigned n,
    const struct bft_rejuv_peer *peers, bool claimed, unsigned *who)
{
	unsigned higher = n;

	for (unsigned j = 0; j < n; j++) {
		if (j == self)
			continue;
		*who = j;
		if (!peers[j].answered)
			return BFT_REJUV_WAIT_DOWN;
		/* A value this server does not know counts as recovering. */
		if (peers[j].recovering != BFT_RECOVERING_NONE &&
		    peers[j].recovering != BFT_RECOVERING_CLAIMED)
			return BFT_REJUV_WAIT_RECOVERING;
	}
	for (unsigned j = 0; j < n; j++) {
		if (j == self ||
		    peers[j].recovering != BFT_RECOVERING_CLAIMED)
			continue;
		*who = j;
		if (j < self)
			return BFT_REJUV_WAIT_LOWER;
		if (higher == n)
			higher = j;
	}
	/* Before its claim a server waits for nobody of higher index. */
	if (!claimed)
		return BFT_REJUV_CLAIM;
	if (higher < n) {
		*who = higher;
		return BFT_REJUV_HOLD;
	}
	*who = self;
	return BFT_REJUV_GO;
}

uint64_t
bft_rejuv_first_ms(unsigned every_s, unsigned index, unsigned n)
{
	return (uint64_t)every_s * 1000 * (index + 1) / (n ? n : 1);
}

int
bft_rejuv_parse_duration(const char *arg, unsigned *s)
{
	unsigned long v, mul = 1;
	char *end;

	if (arg[0] < '0' || arg[0] > '9')
		return -1;
	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno)
		return -1;
	if (*end != '\0') {
		if (end[1] != '\0')
			return -1;
		switch (*end) {
		case 's': mul = 1; break;
		case 'm': mul = 60; break;
		case 'h': mul = 3600; break;
		case 'd': mul = 86400; break;
		default: return -1;
		}
	}
	/* A year is past any sensible period; more smells of a typo. */
	if (v > 366UL * 86400 / mul)
		return -1;
	*s = (unsigned)(v * mul);
	return 0;
}

int
bft_rejuv_resolve_exe(const char *argv0, char *out, size_t len)
{
	const char *path, *p, *q;
	char cwd[PATH_MAX];
	int w;

	if (strchr(argv0, '/') != NULL) {
		if (argv0[0] == '/')
			w = snprintf(out, len, "%s", argv0);
		else if (getcwd(cwd, sizeof cwd) == NULL)
			return -1;
		else
			w = snprintf(out, len, "%s/%s", cwd, argv0);
		return w > 0 && (size_t)w < len ? 0 : -1;
	}
	if ((path = getenv("PATH")) == NULL)
		return -1;
	for (p = path; *p != '\0'; p = *q ? q + 1 : q) {
		q = strchr(p, ':');
		if (q == NULL)
			q = p + strlen(p);
		/* An empty entry is the working directory; not trusted. */
		if (q == p || *p != '/')
			continue;
		w = snprintf(out, len, "%.*s/%s", (int)(q - p), p, argv0);
		if (w > 0 && (size_t)w < len && access(out, X_OK) == 0)
			return 0;
	}
	return -1;
}
