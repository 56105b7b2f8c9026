/*
 * Whether a claim someone waits out shows a live holder (lease.c's take
 * and probe).  Kept apart and pure so that the readings a waiter can be
 * shown, the adversarial ones among them, are tested one by one.
 *
 * A live holder shows itself only by writing, and every write of the
 * register has a higher num than the ones before it: a renewal is the
 * holder's own claim (its nonce) under a higher num of its generation, a
 * takeover or a snapshot's re-assertion a higher generation.  What a
 * read returns is not that orderly.  Two admins that claim the same
 * generation at once and each reach fewer than n-t servers leave the
 * register split (docs/volumes.md, "The admin lock without the guard"):
 * one read returns one claim, the next the other, for as long as nobody
 * writes.  Counting every change as a renewal made both admins, and any
 * later one, see that split as a live holder and back off, again and
 * again, for as long as they were willing to wait.  So a reading counts
 * only when it is newer than any seen and is a claim seen before, or of
 * a newer generation; a flip between rivals of one generation, or back
 * to an older reading, does not.
 *
 * Timing decides only who gets the lease, never whether two holders
 * write (lease.c): a waiter that wrongly finds a holder dead takes over
 * under a new generation, which fences the old holder's writes; one
 * that wrongly finds it alive only waits longer.  Where a reading cannot
 * be judged (the nonces seen fill the table) it counts as alive.
 */
#include <string.h>

#include "lease_int.h"

static bool
seen(const struct bft_lease_watch *w, const uint8_t *nonce)
{
	for (unsigned i = 0; i < w->nonces; i++)
		if (memcmp(w->nonce[i], nonce, sizeof w->nonce[i]) == 0)
			return true;
	return false;
}

/* False when the table is full and nonce is not in it. */
static bool
remember(struct bft_lease_watch *w, const uint8_t *nonce)
{
	if (seen(w, nonce))
		return true;
	if (w->nonces == LEASE_WATCH_NONCES)
		return false;
	memcpy(w->nonce[w->nonces++], nonce, sizeof w->nonce[0]);
	return true;
}

void
bftblk__lease_watch_start(struct bft_lease_watch *w, const struct bft_ts *ts,
    const struct bft_lease_claim *c, bool valid)
{
	memset(w, 0, sizeof *w);
	w->newest = *ts;
	if (valid)
		remember(w, c->nonce);
}

bool
bftblk__lease_watch_alive(struct bft_lease_watch *w, const struct bft_ts *ts,
    const struct bft_lease_claim *c, bool valid)
{
	bool newer = ts->num > w->newest.num;
	bool next_gen = bft_ts_gen(ts) > bft_ts_gen(&w->newest);
	bool known = valid && seen(w, c->nonce);

	if (!newer) {
		if (valid)
			remember(w, c->nonce);
		return false;
	}
	w->newest = *ts;
	if (next_gen || known)
		return true;
	/* Not a claim (a damaged block) is no holder's renewal. */
	if (!valid)
		return false;
	/* A rival's of the same generation, first seen now. */
	return !remember(w, c->nonce);
}
