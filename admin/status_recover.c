/*
 * bftblk status on proactive recovery (status_format.h): how far a
 * recovering server is, and how many are.  While a server recovers it
 * is one of the t the cluster can spare, which is why the count shows
 * next to how many answer.
 */
#include <inttypes.h>
#include <stdio.h>

#include "status_format.h"

void
status_print_recovering(const struct bft_status_info *in, FILE *fp)
{
	if (in->recovering == BFT_RECOVERING_NONE)
		return;
	if (in->recovering == BFT_RECOVERING_CLAIMED) {
		fputs(", about to recover", fp);
		return;
	}
	fprintf(fp, ", recovering (scrub %" PRIu64 "/%" PRIu64 ", catch-up %"
	    PRIu64 "/%" PRIu64 ")", in->scrub_done, in->scrub_total,
	    in->rebuild_done, in->rebuild_total);
}

unsigned
status_count_recovering(const struct status_report *r)
{
	unsigned k = 0;

	for (unsigned i = 0; i < r->n; i++)
		k += r->servers[i].reachable &&
		    r->servers[i].info.recovering != BFT_RECOVERING_NONE;
	return k;
}
