/*
 * stats-file=PATH: what this client saw of each server, rewritten every
 * EVIDENCE_MS and once more when the engine stops, for `bftblk status
 * --client-stats PATH` and for anyone watching.  It is in the
 * "key = value" form of bftblk.conf, written to PATH.tmp and renamed
 * over PATH, so a reader never sees half of it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conn_int.h"
#include "error_int.h"

static const char *const ev_names[EV_KINDS] = {
	"bad-fragments", "forged-ts", "mismatched", "error-replies",
	"timeouts",
};

static void
put_counts(FILE *fp, unsigned i, const char *sub, const uint64_t *v)
{
	for (int k = 0; k < EV_KINDS; k++)
		fprintf(fp, "server.%u.%s%s = %llu\n", i, sub, ev_names[k],
		    (unsigned long long)v[k]);
}

int
bftblk__eng_stats_file_write(struct bft_engine *cl,
    const uint64_t recent[][EV_KINDS], bool closing)
{
	const struct bft_engine_stats *e = &cl->stats;
	char tmp[4200];
	FILE *fp;
	int r;

	if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", cl->p.stats_path) >=
	    sizeof tmp)
		return bftblk__fail(ENAMETOOLONG, NULL);
	if ((fp = fopen(tmp, "w")) == NULL)
		return bftblk__fail(errno, NULL);
	fprintf(fp, "# What a libbftblk client saw of each server; `bftblk "
	    "status --client-stats`.\n# Rewritten every %u s; the recent.* "
	    "counts are of the last %u s.\n", EVIDENCE_MS / 1000,
	    EVIDENCE_MS / 1000);
	fprintf(fp, "format = 1\nclient = %s\npid = %ld\nupdated = %lld\n"
	    "interval = %u\nclosed = %d\nn = %u\n", cl->p.key->name,
	    (long)getpid(), (long long)time(NULL), EVIDENCE_MS / 1000,
	    closing, cl->n);
	fprintf(fp, "reads = %llu\nwrites = %llu\ntimeouts = %llu\n"
	    "read-restarts = %llu\nrepairs = %llu\n",
	    (unsigned long long)e->reads, (unsigned long long)e->writes,
	    (unsigned long long)e->timeouts,
	    (unsigned long long)e->read_restarts,
	    (unsigned long long)e->repairs);
	for (unsigned i = 0; i < cl->n; i++) {
		const struct engine_server_stats *s = &e->server[i];
		uint64_t total[EV_KINDS] = {
			s->bad_fragments, s->forged_ts, s->mismatched,
			s->error_replies, s->timeouts,
		};

		fprintf(fp, "server.%u.connected = %d\n"
		    "server.%u.disconnects = %llu\n"
		    "server.%u.replies = %llu\n", i, (int)s->connected, i,
		    (unsigned long long)s->disconnects, i,
		    (unsigned long long)s->replies);
		put_counts(fp, i, "", total);
		put_counts(fp, i, "recent.", recent[i]);
	}
	r = ferror(fp) ? EIO : 0;
	if (fclose(fp) != 0 && r == 0)
		r = errno;
	if (r == 0 && rename(tmp, cl->p.stats_path) != 0)
		r = errno;
	if (r != 0) {
		unlink(tmp);
		return bftblk__fail(r, NULL);
	}
	return 0;
}
