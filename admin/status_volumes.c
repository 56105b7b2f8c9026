/*
 * The volumes part of `bftblk status`: what each server said to
 * VOLUMES.  A volume's line gives its live bytes on every server that
 * answered (the same on all of them when none is behind); trim and
 * write-zeroes lower it as soon as they complete, and compaction then
 * gives the space back.
 */
#include <inttypes.h>
#include <stdio.h>

#include "status_format.h"

/* The live bytes server s holds of volume id (0 when it lists none). */
static uint64_t
live_of(const struct status_server *s, uint32_t id)
{
	for (unsigned k = 0; k < s->nvols; k++)
		if (s->vols[k].id == id)
			return s->vols[k].live;
	return 0;
}

/* The smallest volume id above after that some server lists, or -1. */
static int64_t
next_id(const struct status_report *r, int64_t after)
{
	int64_t best = -1;

	for (unsigned i = 0; i < r->n; i++)
		for (unsigned k = 0; k < r->servers[i].nvols; k++) {
			int64_t id = r->servers[i].vols[k].id;

			if (id > after && (best < 0 || id < best))
				best = id;
		}
	return best;
}

static const struct bftblk_lease *
lease_of(const struct status_report *r, uint32_t id)
{
	for (unsigned k = 0; k < r->nleases; k++)
		if (r->leases[k].id == id)
			return &r->leases[k].l;
	return NULL;
}

/*
 * Whether the holder renewed within its period, by its own clock
 * against ours: clocks apart by more than a period make this a guess,
 * which is why it is only printed, never acted on.
 */
static bool
lease_fresh(const struct bftblk_lease *l, uint64_t now_ms)
{
	return l->renewed_ms != 0 && now_ms < l->renewed_ms + l->period_ms;
}

/* "  lease: ..." for volume id, or nothing when it was not read. */
static void
print_lease(const struct status_report *r, uint32_t id, FILE *fp)
{
	const struct bftblk_lease *l = lease_of(r, id);
	double age;

	if (l == NULL)
		return;
	if (!l->claimed) {
		fprintf(fp, "  lease: never taken\n");
		return;
	}
	if (l->released) {
		fprintf(fp, "  lease: free (released by %s), generation %"
		    PRIu64 "\n", l->holder, l->generation);
		return;
	}
	age = l->renewed_ms == 0 ? -1 : ((double)r->now_ms -
	    (double)l->renewed_ms) / 1000;
	fprintf(fp, "  lease: %s %s, generation %" PRIu64, lease_fresh(l,
	    r->now_ms) ? "held by" : "stale claim of", l->holder,
	    l->generation);
	if (age >= 0)
		fprintf(fp, ", renewed %.1f s ago", age < 0 ? 0 : age);
	fprintf(fp, " (every %.1f s)%s\n", (double)l->period_ms / 3000,
	    lease_fresh(l, r->now_ms) ? "" : ": its holder is gone or "
	    "cut off, and the next opener takes the volume over");
}

void
status_print_volumes(const struct status_report *r, FILE *fp)
{
	bool more = false;

	for (int64_t id = next_id(r, -1); id >= 0; id = next_id(r, id)) {
		uint64_t lo = UINT64_MAX, hi = 0;
		unsigned answered = 0;
		char a[32], b[32];

		for (unsigned i = 0; i < r->n; i++) {
			uint64_t v;

			if (!r->servers[i].reachable)
				continue;
			v = live_of(&r->servers[i], (uint32_t)id);
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
			answered++;
		}
		status_human_bytes(lo, a, sizeof a);
		status_human_bytes(hi, b, sizeof b);
		fprintf(fp, "volume %" PRId64 "%s: ", id, id == BFT_VOL_LEASES ?
		    " (the writers' leases)" : id == BFT_VOL_TABLE ?
		    " (the volume table)" : "");
		if (lo == hi)
			fprintf(fp, "%s live on each of %u servers\n", a,
			    answered);
		else
			fprintf(fp, "%s to %s live on %u servers\n", a, b,
			    answered);
		print_lease(r, (uint32_t)id, fp);
	}
	if (r->lease_err[0] != '\0')
		fprintf(fp, "leases: not read: %s\n", r->lease_err);
	for (unsigned i = 0; i < r->n; i++)
		more |= r->servers[i].more_vols;
	if (more)
		fprintf(fp, "(more than %u volumes on a server: only the "
		    "first are shown)\n", STATUS_MAX_VOLS);
}

void
status_json_leases(const struct status_report *r, FILE *fp)
{
	fputs(",\"leases\":[", fp);
	for (unsigned k = 0; k < r->nleases; k++) {
		const struct bftblk_lease *l = &r->leases[k].l;

		fprintf(fp, "%s{\"volume\":%" PRIu32 ",\"claimed\":%s,"
		    "\"released\":%s,\"generation\":%" PRIu64 ",\"renewals\":%"
		    PRIu64 ",\"renewed_ms\":%" PRIu64 ",\"period_ms\":%" PRIu32
		    ",\"fresh\":%s,\"holder\":", k ? "," : "", r->leases[k].id,
		    l->claimed ? "true" : "false", l->released ? "true" :
		    "false", l->generation, l->renewals, l->renewed_ms,
		    l->period_ms, l->claimed && !l->released &&
		    lease_fresh(l, r->now_ms) ? "true" : "false");
		status_json_string(fp, l->holder);
		fputc('}', fp);
	}
	fputc(']', fp);
	if (r->lease_err[0] != '\0') {
		fputs(",\"leases_error\":", fp);
		status_json_string(fp, r->lease_err);
	}
}

void
status_json_volumes(const struct status_server *s, FILE *fp)
{
	fputs(",\"volumes\":[", fp);
	for (unsigned k = 0; k < s->nvols; k++)
		fprintf(fp, "%s{\"id\":%" PRIu32 ",\"end\":%" PRIu64
		    ",\"bytes_live\":%" PRIu64 "}", k ? "," : "",
		    s->vols[k].id, s->vols[k].end, s->vols[k].live);
	fprintf(fp, "],\"volumes_truncated\":%s", s->more_vols ? "true" :
	    "false");
}
