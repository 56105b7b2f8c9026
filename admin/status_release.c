/*
 * bftblk status: which release each server runs, whether they differ
 * (a rolling upgrade under way, docs/upgrades.md) and whether the
 * cluster was finalized.  Pure over the report, as status_format.c is.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "featureset.h"
#include "status_format.h"

void
status_releases(const struct status_report *r, struct status_releases *out)
{
	bool first = true;

	memset(out, 0, sizeof *out);
	for (unsigned i = 0; i < r->n; i++) {
		const struct bft_status_info *in = &r->servers[i].info;

		if (!r->servers[i].reachable)
			continue;
		if (!first && in->release != out->release)
			out->mixed = true;
		if (first || in->release > out->release)
			out->release = in->release;
		if (first || in->finalized < out->finalized)
			out->finalized = (unsigned)in->finalized;
		if (in->finalized > 0)
			out->nfinalized++;
		out->nanswered++;
		first = false;
	}
}

/* The servers whose release is code, as " 0 1 3". */
static void
print_servers(const struct status_report *r, uint64_t code, bool fin,
    FILE *fp)
{
	for (unsigned i = 0; i < r->n; i++) {
		const struct status_server *s = &r->servers[i];

		if (s->reachable && (fin ? s->info.finalized > 0 :
		    s->info.release == code))
			fprintf(fp, " %u", s->index);
	}
}

void
status_print_releases(const struct status_report *r, FILE *fp)
{
	struct status_releases rel;
	uint64_t done[BFT_MAX_N];
	unsigned ndone = 0;
	char name[16];

	status_releases(r, &rel);
	if (rel.nanswered == 0)
		return;
	fputs("releases:", fp);
	for (unsigned i = 0; i < r->n; i++) {
		const struct status_server *s = &r->servers[i];
		unsigned k;

		if (!s->reachable)
			continue;
		for (k = 0; k < ndone && done[k] != s->info.release; k++)
			;
		if (k < ndone)
			continue;
		done[ndone++] = s->info.release;
		fprintf(fp, "%s %s on server%s", ndone > 1 ? "," : "",
		    bft_release_str(s->info.release, name, sizeof name),
		    "s");
		print_servers(r, s->info.release, false, fp);
	}
	fputs(rel.mixed ? " (mixed: an upgrade is under way)" : "", fp);
	if (rel.nfinalized == rel.nanswered)
		fprintf(fp, "; finalized at level %u\n", rel.finalized);
	else if (rel.nfinalized > 0) {
		fputs("; finalized on servers", fp);
		print_servers(r, 0, true, fp);
		fputs(" only: run bftblk cluster finalize again\n", fp);
	} else
		fputs("; not finalized\n", fp);
}

void
status_json_releases(const struct status_report *r, FILE *fp)
{
	struct status_releases rel;
	char name[16];

	status_releases(r, &rel);
	fprintf(fp, ",\"releases\":{\"mixed\":%s,\"newest\":",
	    rel.mixed ? "true" : "false");
	if (rel.nanswered > 0)
		status_json_string(fp, bft_release_str(rel.release, name,
		    sizeof name));
	else
		fputs("null", fp);
	fprintf(fp, ",\"finalized\":%s,\"finalized_servers\":%u}",
	    rel.nanswered > 0 && rel.nfinalized == rel.nanswered ? "true" :
	    "false", rel.nfinalized);
}
