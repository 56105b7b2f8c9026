/*
 * The health of a cluster from its servers' STATUS answers, and the
 * report as text or JSON (status_format.h); no sockets here.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "status_format.h"

#define MAX_FINDINGS	(5 * BFT_MAX_N + 2)

/* One thing wrong, and how bad it is. */
struct finding {
	enum status_health level;
	char text[160];
};

struct findings {
	struct finding f[MAX_FINDINGS];
	unsigned n;
};

static void __attribute__((format(printf, 3, 4)))
add(struct findings *fs, enum status_health level, const char *fmt, ...)
{
	va_list ap;

	if (fs->n == MAX_FINDINGS)
		return;
	fs->f[fs->n].level = level;
	va_start(ap, fmt);
	vsnprintf(fs->f[fs->n].text, sizeof fs->f[fs->n].text, fmt, ap);
	va_end(ap);
	fs->n++;
}

const char *
status_health_str(enum status_health h)
{
	switch (h) {
	case STATUS_OK:		return "OK";
	case STATUS_DEGRADED:	return "DEGRADED";
	case STATUS_AT_RISK:	return "AT RISK";
	default:		return "UNAVAILABLE";
	}
}

int
status_exit_code(enum status_health h)
{
	return h == STATUS_OK ? 0 : h == STATUS_UNAVAILABLE ? 2 : 1;
}

const char *
status_rebuild_str(uint64_t state)
{
	switch (state) {
	case BFT_REBUILD_IDLE:		return "idle";
	case BFT_REBUILD_SCANNING:	return "scanning";
	case BFT_REBUILD_REBUILDING:	return "rebuilding";
	case BFT_REBUILD_WAITING:	return "waiting for peers";
	case BFT_REBUILD_DONE:		return "done";
	default:			return "unknown";
	}
}

/* "server 3" or "servers 1, 3" for the unreachable ones. */
static void
list_down(const struct status_report *r, char *out, size_t len)
{
	size_t off = 0;
	unsigned down = 0;
	int w;

	for (unsigned i = 0; i < r->n; i++)
		down += !r->servers[i].reachable;
	w = snprintf(out, len, "server%s", down > 1 ? "s" : "");
	off = w > 0 ? (size_t)w : 0;
	for (unsigned i = 0, k = 0; i < r->n && off < len; i++) {
		if (r->servers[i].reachable)
			continue;
		w = snprintf(out + off, len - off, "%s %u", k++ ? "," : "",
		    r->servers[i].index);
		off += w > 0 ? (size_t)w : 0;
	}
}

/* What one answering server reports that puts data at risk. */
static void
assess_server(const struct status_server *s, uint64_t most,
    struct findings *fs)
{
	const struct bft_status_info *in = &s->info;

	switch (in->rebuild_state) {
	case BFT_REBUILD_IDLE:
	case BFT_REBUILD_DONE:
	/*
	 * Every server compares with its peers now and then, which takes
	 * a moment when they agree; what it finds shows up as rebuilding.
	 */
	case BFT_REBUILD_SCANNING:
		break;
	case BFT_REBUILD_REBUILDING:
		add(fs, STATUS_AT_RISK, "server %u rebuilding (%" PRIu64
		    "/%" PRIu64 " blocks)", s->index, in->rebuild_done,
		    in->rebuild_total);
		break;
	case BFT_REBUILD_WAITING:
		add(fs, STATUS_AT_RISK, "server %u %s", s->index,
		    status_rebuild_str(in->rebuild_state));
		break;
	default:
		/* A state this tool does not know: assume the worst. */
		add(fs, STATUS_AT_RISK, "server %u in rebuild state %" PRIu64,
		    s->index, in->rebuild_state);
	}
	if (in->damaged_records > in->repaired_records)
		add(fs, STATUS_AT_RISK, "server %u has %" PRIu64 " damaged "
		    "records not repaired", s->index,
		    in->damaged_records - in->repaired_records);
	if (in->blocks_held < most)
		add(fs, STATUS_AT_RISK, "server %u holds %" PRIu64 " blocks, "
		    "others up to %" PRIu64, s->index, in->blocks_held, most);
}

/* Whether a client's file tells of now: recent, and the client alive. */
static bool
client_fresh(const struct status_client *c)
{
	return !c->closed && c->age_s <= 3 * (int64_t)c->interval;
}

/*
 * The servers fresh clients caught lying in their last period, each
 * described once in why[i].
 */
static uint32_t
client_liars(const struct status_report *r, char why[][160])
{
	static const char *what[] = { "bad fragments",
	    "forged timestamps", "replies to requests never made" };
	uint32_t liars = 0;

	for (unsigned c = 0; c < r->nclients; c++) {
		const struct status_client *cl = &r->clients[c];

		if (!client_fresh(cl))
			continue;
		for (unsigned i = 0; i < r->n; i++) {
			const uint64_t *v = cl->servers[i].recent;
			size_t off;
			int w;

			if ((liars & (1u << i)) || v[CLI_BAD_FRAGMENTS] +
			    v[CLI_FORGED_TS] + v[CLI_MISMATCHED] == 0)
				continue;
			liars |= 1u << i;
			w = snprintf(why[i], 160, "server %u lied to client "
			    "'%s' in its last %u s (", i, cl->name,
			    cl->interval);
			off = w > 0 ? (size_t)w : 0;
			for (int k = CLI_BAD_FRAGMENTS, n = 0;
			    k <= CLI_MISMATCHED && off < 160; k++) {
				if (v[k] == 0)
					continue;
				w = snprintf(why[i] + off, 160 - off,
				    "%s%" PRIu64 " %s", n++ ? ", " : "", v[k],
				    what[k]);
				off += w > 0 ? (size_t)w : 0;
			}
			if (off < 159)
				strcat(why[i], ")");
		}
	}
	return liars;
}

/* Reachable servers that are slow to fresh clients, or cut off. */
static void
assess_clients(const struct status_report *r, struct findings *fs)
{
	for (unsigned c = 0; c < r->nclients; c++) {
		const struct status_client *cl = &r->clients[c];

		if (!client_fresh(cl))
			continue;
		for (unsigned i = 0; i < r->n; i++) {
			const struct status_client_server *s = &cl->servers[i];

			if (!r->servers[i].reachable)
				continue;
			if (!s->connected)
				add(fs, STATUS_DEGRADED, "client '%s' has no "
				    "connection to server %u", cl->name, i);
			else if (s->recent[CLI_TIMEOUTS] > 0)
				add(fs, STATUS_DEGRADED, "server %u left %"
				    PRIu64 " rounds of client '%s' unanswered "
				    "in its last %u s", i,
				    s->recent[CLI_TIMEOUTS], cl->name,
				    cl->interval);
		}
	}
}

void
status_assess(struct status_report *r)
{
	static char lied[BFT_MAX_N][160];
	struct findings fs;
	unsigned up = 0, down, faults;
	uint32_t liars;
	uint64_t most = 0;
	size_t off = 0;
	char who[128];
	int w;

	fs.n = 0;
	for (unsigned i = 0; i < r->n; i++) {
		const struct status_server *s = &r->servers[i];

		if (!s->reachable)
			continue;
		up++;
		if (s->info.blocks_held > most)
			most = s->info.blocks_held;
	}
	down = r->n - up;
	r->reachable = up;
	/* A liar that answers STATUS is a fault all the same. */
	liars = client_liars(r, lied);
	faults = down;
	for (unsigned i = 0; i < r->n; i++)
		faults += (liars & (1u << i)) && r->servers[i].reachable;
	if (up < r->n - r->t)
		add(&fs, STATUS_UNAVAILABLE, "%u of %u servers answer, I/O "
		    "needs %u", up, r->n, r->n - r->t);
	if (down > 0) {
		list_down(r, who, sizeof who);
		if (faults > r->t)
			add(&fs, STATUS_AT_RISK, "%s unreachable", who);
		else if (faults == r->t)
			add(&fs, STATUS_AT_RISK, "%s unreachable: no fault "
			    "left to spare", who);
		else
			add(&fs, STATUS_DEGRADED, "%s unreachable: %u more "
			    "fault%s tolerated", who, r->t - faults,
			    r->t - faults > 1 ? "s" : "");
	}
	for (unsigned i = 0; i < r->n; i++)
		if ((liars & (1u << i)) && r->servers[i].reachable)
			add(&fs, faults >= r->t ? STATUS_AT_RISK :
			    STATUS_DEGRADED, "%s%s", lied[i], faults == r->t ?
			    ": no fault left to spare" : "");
	assess_clients(r, &fs);
	for (unsigned i = 0; i < r->n; i++)
		if (r->servers[i].reachable)
			assess_server(&r->servers[i], most, &fs);

	r->health = STATUS_OK;
	for (unsigned k = 0; k < fs.n; k++)
		if (fs.f[k].level > r->health)
			r->health = fs.f[k].level;
	/* Most serious first; within a level, in the order found. */
	r->reason[0] = '\0';
	for (int lvl = STATUS_UNAVAILABLE; lvl > STATUS_OK; lvl--) {
		for (unsigned k = 0; k < fs.n; k++) {
			if ((int)fs.f[k].level != lvl ||
			    off >= sizeof r->reason)
				continue;
			w = snprintf(r->reason + off, sizeof r->reason - off,
			    "%s%s", off ? "; " : "", fs.f[k].text);
			off += w > 0 ? (size_t)w : 0;
		}
	}
}

/* 1536 -> "1.5 KiB": one decimal, binary units. */
void
status_human_bytes(uint64_t v, char *out, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB",
	    "PiB", "EiB" };
	double d = (double)v;
	unsigned u = 0;

	if (v < 1024) {
		snprintf(out, len, "%" PRIu64 " B", v);
		return;
	}
	d /= 1024;
	while (d >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
		d /= 1024;
		u++;
	}
	snprintf(out, len, "%.1f %s", d, units[u]);
}

void
status_human_secs(uint64_t s, char *out, size_t len)
{
	if (s < 60)
		snprintf(out, len, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(out, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60,
		    s % 60);
	else if (s < 86400)
		snprintf(out, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600,
		    s / 60 % 60);
	else
		snprintf(out, len, "%" PRIu64 "d%02" PRIu64 "h", s / 86400,
		    s / 3600 % 24);
}

/* The rebuild or scrub part of a server's line. */
static void
print_progress(const struct bft_status_info *in, FILE *fp)
{
	uint64_t left, eta;
	char t[32];

	fputs(status_rebuild_str(in->rebuild_state), fp);
	if (in->rebuild_state == BFT_REBUILD_REBUILDING ||
	    in->rebuild_state == BFT_REBUILD_DONE) {
		fprintf(fp, " %" PRIu64 "/%" PRIu64 " blocks",
		    in->rebuild_done, in->rebuild_total);
	}
	if (in->rebuild_state == BFT_REBUILD_REBUILDING) {
		fprintf(fp, ", %.1f MB/s", (double)in->rebuild_rate / 1e6);
		left = in->rebuild_total > in->rebuild_done ?
		    in->rebuild_total - in->rebuild_done : 0;
		/* Bytes left, at the bytes per block rebuilt so far. */
		if (in->rebuild_rate > 0 && in->rebuild_done > 0) {
			eta = (uint64_t)((double)left *
			    ((double)in->rebuild_bytes / in->rebuild_done) /
			    (double)in->rebuild_rate);
			status_human_secs(eta, t, sizeof t);
			fprintf(fp, ", ETA %s", t);
		} else {
			fputs(", ETA unknown", fp);
		}
	}
	if (in->scrub_total > 0)
		fprintf(fp, ", scrub %" PRIu64 "/%" PRIu64, in->scrub_done,
		    in->scrub_total);
	if (in->snap_gc_total > 0)
		fprintf(fp, ", freeing deleted snapshots %" PRIu64 "/%" PRIu64
		    " blocks (%.0f%%)", in->snap_gc_done, in->snap_gc_total,
		    100.0 * (double)in->snap_gc_done /
		    (double)in->snap_gc_total);
}

/* What one client saw: a line, then one per server. */
static void
print_client(const struct status_client *c, unsigned n, FILE *fp)
{
	static const char *what[CLI_KINDS] = { "bad fragments",
	    "forged timestamps", "replies to requests never made",
	    "error replies", "rounds unanswered" };

	fprintf(fp, "client '%s' (pid %ld, %s): updated %" PRId64 " s ago%s"
	    "\n", c->name, c->pid, c->path, c->age_s, c->closed ?
	    ", closed: not counted" : !client_fresh(c) ? ", stale: not "
	    "counted" : "");
	for (unsigned i = 0; i < n; i++) {
		const struct status_client_server *s = &c->servers[i];

		fprintf(fp, "  server %u: %s, %" PRIu64 " replies, %" PRIu64
		    " disconnects", i, s->connected ? "connected" :
		    "not connected", s->replies, s->disconnects);
		for (int k = 0; k < CLI_KINDS; k++)
			if (s->total[k] > 0)
				fprintf(fp, ", %" PRIu64 " %s (%" PRIu64
				    " in the last %u s)", s->total[k],
				    what[k], s->recent[k], c->interval);
		fputc('\n', fp);
	}
}

int
status_print_text(const struct status_report *r, FILE *fp)
{
	char total[32], live[32], up[32], rel[16];
	unsigned k;

	fprintf(fp, "health: %s", status_health_str(r->health));
	if (r->reason[0] != '\0')
		fprintf(fp, " (%s)", r->reason);
	fprintf(fp, "\ncluster: t=%u n=%u, %u of %u servers answer, I/O "
	    "needs %u", r->t, r->n, r->reachable, r->n, r->n - r->t);
	if ((k = status_count_recovering(r)) > 0)
		fprintf(fp, ", %u recovering", k);
	fputc('\n', fp);
	status_print_releases(r, fp);
	status_print_mac_epochs(r, fp);
	status_print_reauth(r, fp);
	for (unsigned i = 0; i < r->n; i++) {
		const struct status_server *s = &r->servers[i];
		const struct bft_status_info *in = &s->info;

		fprintf(fp, "server %u %s: ", s->index, s->addr);
		if (!s->reachable) {
			fprintf(fp, "unreachable (%s)\n", s->why);
			continue;
		}
		status_human_bytes(in->bytes_total, total, sizeof total);
		status_human_bytes(in->bytes_live, live, sizeof live);
		status_human_secs(in->uptime_s, up, sizeof up);
		fprintf(fp, "reachable, release %s, version %" PRIu64 ", up "
		    "%s, %" PRIu64 " blocks, %s on disk (%s live), %" PRIu64
		    " damaged, %" PRIu64 " repaired, ", bft_release_str(
		    in->release, rel, sizeof rel), in->version, up,
		    in->blocks_held,
		    total, live, in->damaged_records, in->repaired_records);
		print_progress(in, fp);
		status_print_recovering(in, fp);
		fputc('\n', fp);
	}
	status_print_volumes(r, fp);
	for (unsigned c = 0; c < r->nclients; c++)
		print_client(&r->clients[c], r->n, fp);
	return ferror(fp) ? -1 : 0;
}

/* The length of the valid UTF-8 sequence at p, or 0. */
static size_t
utf8_len(const unsigned char *p)
{
	unsigned char c = p[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len;

	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	/* No overlong forms, surrogates or code points past U+10FFFF. */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t k = 2; k < len; k++)
		if (p[k] < 0x80 || p[k] > 0xbf)
			return 0;
	return len;
}

void
status_json_string(FILE *fp, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len;

	fputc('"', fp);
	while (*p != '\0') {
		switch (*p) {
		case '"':	fputs("\\\"", fp); break;
		case '\\':	fputs("\\\\", fp); break;
		case '\b':	fputs("\\b", fp); break;
		case '\f':	fputs("\\f", fp); break;
		case '\n':	fputs("\\n", fp); break;
		case '\r':	fputs("\\r", fp); break;
		case '\t':	fputs("\\t", fp); break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				fprintf(fp, "\\u%04x", *p);
			} else if (*p < 0x80) {
				fputc(*p, fp);
			} else if ((len = utf8_len(p)) > 0) {
				fwrite(p, 1, len, fp);
				p += len - 1;
			} else {
				/* Not UTF-8: the replacement character. */
				fputs("\\ufffd", fp);
			}
		}
		p++;
	}
	fputc('"', fp);
}

static void
json_key(FILE *fp, const char *key)
{
	status_json_string(fp, key);
	fputc(':', fp);
}

static void
json_server(const struct status_server *s, FILE *fp)
{
	const uint8_t *base = (const uint8_t *)&s->info;
	char rel[16];
	uint64_t v;

	fprintf(fp, "{\"index\":%u,", s->index);
	json_key(fp, "address");
	status_json_string(fp, s->addr);
	fprintf(fp, ",\"reachable\":%s", s->reachable ? "true" : "false");
	if (!s->reachable) {
		fputc(',', fp);
		json_key(fp, "error");
		status_json_string(fp, s->why);
		fputc('}', fp);
		return;
	}
	/* Every field STATUS carries, by the wire's own table. */
	for (unsigned k = 0; k < BFT_STATUS_NFIELDS; k++) {
		memcpy(&v, base + bft_status_fields[k].offset, sizeof v);
		fputc(',', fp);
		json_key(fp, bft_status_fields[k].name);
		fprintf(fp, "%" PRIu64, v);
	}
	fputc(',', fp);
	json_key(fp, "release_name");
	status_json_string(fp, bft_release_str(s->info.release, rel,
	    sizeof rel));
	fputc(',', fp);
	json_key(fp, "rebuild_state_name");
	status_json_string(fp, status_rebuild_str(s->info.rebuild_state));
	status_json_volumes(s, fp);
	fputc('}', fp);
}

/* The misdeed counts of one server as a client saw them. */
static void
json_counts(const uint64_t *v, FILE *fp)
{
	for (int k = 0; k < CLI_KINDS; k++) {
		fputc(k ? ',' : '{', fp);
		fputc('"', fp);
		for (const char *p = status_cli_keys[k]; *p; p++)
			fputc(*p == '-' ? '_' : *p, fp);
		fprintf(fp, "\":%" PRIu64, v[k]);
	}
	fputc('}', fp);
}

static void
json_client(const struct status_client *c, unsigned n, FILE *fp)
{
	fputs("{\"file\":", fp);
	status_json_string(fp, c->path);
	fputs(",\"client\":", fp);
	status_json_string(fp, c->name);
	fprintf(fp, ",\"pid\":%ld,\"age_s\":%" PRId64 ",\"interval_s\":%u,"
	    "\"closed\":%s,\"counted\":%s,\"servers\":[", c->pid, c->age_s,
	    c->interval, c->closed ? "true" : "false",
	    client_fresh(c) ? "true" : "false");
	for (unsigned i = 0; i < n; i++) {
		const struct status_client_server *s = &c->servers[i];

		fprintf(fp, "%s{\"index\":%u,\"connected\":%s,\"replies\":%"
		    PRIu64 ",\"disconnects\":%" PRIu64 ",\"total\":",
		    i ? "," : "", i, s->connected ? "true" : "false",
		    s->replies, s->disconnects);
		json_counts(s->total, fp);
		fputs(",\"recent\":", fp);
		json_counts(s->recent, fp);
		fputc('}', fp);
	}
	fputs("]}", fp);
}

int
status_print_json(const struct status_report *r, FILE *fp)
{
	fputs("{\"health\":", fp);
	status_json_string(fp, status_health_str(r->health));
	fputs(",\"reason\":", fp);
	status_json_string(fp, r->reason);
	fprintf(fp, ",\"t\":%u,\"n\":%u,\"reachable\":%u,\"needed\":%u,"
	    "\"servers\":[", r->t, r->n, r->reachable, r->n - r->t);
	for (unsigned i = 0; i < r->n; i++) {
		if (i > 0)
			fputc(',', fp);
		json_server(&r->servers[i], fp);
	}
	fputc(']', fp);
	status_json_releases(r, fp);
	status_json_mac_epochs(r, fp);
	status_json_reauth(r, fp);
	status_json_leases(r, fp);
	fputs(",\"clients\":[", fp);
	for (unsigned c = 0; c < r->nclients; c++) {
		if (c > 0)
			fputc(',', fp);
		json_client(&r->clients[c], r->n, fp);
	}
	fputs("]}\n", fp);
	return ferror(fp) ? -1 : 0;
}
