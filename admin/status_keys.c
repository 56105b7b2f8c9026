/*
 * bftblk status: the MAC key epochs the servers hold, and how far a
 * rotation has come (docs/key-epochs.md).  Pure over the report, as
 * status_format.c is.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "status_format.h"

void
status_mac_epochs(const struct status_report *r, struct status_epochs *out)
{
	bool first = true;

	memset(out, 0, sizeof *out);
	for (unsigned i = 0; i < r->n; i++) {
		const struct bft_status_info *in = &r->servers[i].info;
		uint64_t top = in->mac_next_epoch ? in->mac_next_epoch :
		    in->mac_epoch;

		if (!r->servers[i].reachable)
			continue;
		if (first || top > out->newest)
			out->newest = top;
		if (first || in->mac_epoch < out->oldest)
			out->oldest = in->mac_epoch;
		out->nanswered++;
		first = false;
	}
	for (unsigned i = 0; i < r->n; i++) {
		const struct bft_status_info *in = &r->servers[i].info;

		if (r->servers[i].reachable && (in->mac_epoch ==
		    out->newest || in->mac_next_epoch == out->newest))
			out->naccept++;
	}
}

/*
 * "MAC keys: versions under epoch 0: 12 on server 0, ..." while any
 * server holds two epochs: what bftblk keys retire waits for.
 */
static void
print_census(const struct status_report *r, const struct status_epochs *ep,
    FILE *fp)
{
	const char *sep = "";
	bool any = false;

	for (unsigned i = 0; i < r->n; i++)
		any |= r->servers[i].reachable &&
		    r->servers[i].info.mac_next_epoch != 0;
	if (!any)
		return;
	fprintf(fp, "MAC keys: versions still under epoch %llu:",
	    (unsigned long long)ep->oldest);
	for (unsigned i = 0; i < r->n; i++) {
		const struct status_server *s = &r->servers[i];
		const struct bft_status_info *in = &s->info;

		if (!s->reachable || in->mac_next_epoch == 0)
			continue;
		fprintf(fp, "%s server %u ", sep, s->index);
		sep = ",";
		if (in->mac_census_passes == 0)
			fprintf(fp, "counting (%llu/%llu blocks)",
			    (unsigned long long)in->mac_census_done,
			    (unsigned long long)in->mac_census_total);
		else
			fprintf(fp, "%llu", (unsigned long long)
			    (in->mac_old_versions + in->mac_old_retained));
		if (in->mac_retiring)
			fputs(" (retiring it)", fp);
	}
	fputs("; bftblk keys reauth gives them the new MACs, bftblk keys "
	    "retire needs none\n", fp);
}

void
status_print_mac_epochs(const struct status_report *r, FILE *fp)
{
	struct status_epochs ep;

	status_mac_epochs(r, &ep);
	if (ep.nanswered == 0)
		return;
	if (ep.oldest == ep.newest) {
		fprintf(fp, "MAC keys: epoch %llu on %s server that answered\n",
		    (unsigned long long)ep.newest, ep.nanswered == r->n ?
		    "every" : "each");
		return;
	}
	fprintf(fp, "MAC keys: rotating from epoch %llu to %llu: %u of %u "
	    "servers accept %llu", (unsigned long long)ep.oldest,
	    (unsigned long long)ep.newest, ep.naccept, r->n,
	    (unsigned long long)ep.newest);
	if (ep.naccept < r->n) {
		fputs(" (not yet:", fp);
		for (unsigned i = 0; i < r->n; i++) {
			const struct status_server *s = &r->servers[i];

			if (!s->reachable || (s->info.mac_epoch != ep.newest &&
			    s->info.mac_next_epoch != ep.newest))
				fprintf(fp, " %u", s->index);
		}
		fputs("); writers sign under it once every server does\n",
		    fp);
	} else {
		fputs("; writers sign under it\n", fp);
	}
	print_census(r, &ep, fp);
}

void
status_json_mac_epochs(const struct status_report *r, FILE *fp)
{
	struct status_epochs ep;

	status_mac_epochs(r, &ep);
	fprintf(fp, ",\"mac_epochs\":{\"oldest\":%llu,\"newest\":%llu,"
	    "\"accepting_newest\":%u}", (unsigned long long)ep.oldest,
	    (unsigned long long)ep.newest, ep.naccept);
}

void
status_print_reauth(const struct status_report *r, FILE *fp)
{
	const struct reauth_state *st = &r->reauth;
	char t[32];
	double eta;

	if (!r->has_reauth)
		return;
	fprintf(fp, "MAC keys: reauth pass to epoch %" PRIu32, st->epoch);
	if (st->progress && !r->reauth_stopped) {
		fprintf(fp, ": %" PRIu64 "/%" PRIu64 " blocks, %.1f MB/s",
		    st->done, st->total, (double)st->rate / 1e6);
		/* In double, bounded: the file is text anyone may edit. */
		eta = st->rate > 0 && st->total >= st->done ?
		    (double)(st->total - st->done) * BFT_BLOCK_SIZE /
		    (double)st->rate : -1;
		if (eta >= 0 && eta < 1e9) {
			status_human_secs((uint64_t)eta, t, sizeof t);
			fprintf(fp, ", ETA %s", t);
		}
		fprintf(fp, " (pid %ld on %s)\n", st->pid, st->host);
		return;
	}
	fputs(" stopped", fp);
	if (st->progress) {
		status_human_secs(r->reauth_age_s > 0 ?
		    (uint64_t)r->reauth_age_s : 0, t, sizeof t);
		fprintf(fp, " at %" PRIu64 "/%" PRIu64 " blocks %s ago",
		    st->done, st->total, t);
	}
	fprintf(fp, ": bftblk keys reauth resumes it at volume %" PRIu32
	    " block %" PRIu64 "\n", st->vol, st->block);
}

void
status_json_reauth(const struct status_report *r, FILE *fp)
{
	const struct reauth_state *st = &r->reauth;

	if (!r->has_reauth) {
		fputs(",\"reauth_pass\":null", fp);
		return;
	}
	fprintf(fp, ",\"reauth_pass\":{\"epoch\":%" PRIu32 ",\"volume\":%"
	    PRIu32 ",\"block\":%" PRIu64 ",\"stopped\":%s", st->epoch,
	    st->vol, st->block, r->reauth_stopped ? "true" : "false");
	if (st->progress)
		fprintf(fp, ",\"done\":%" PRIu64 ",\"total\":%" PRIu64
		    ",\"bytes_per_s\":%" PRIu64 ",\"age_s\":%" PRId64
		    ",\"pid\":%ld", st->done, st->total, st->rate,
		    r->reauth_age_s, st->pid);
	fputc('}', fp);
}
