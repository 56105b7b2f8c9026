/*
 * bftblk status without a cluster (admin/status_format.c): the health
 * rules of bftblk(8) case by case and at their boundaries for t = 1 and
 * t = 2, the reason's wording and order, the exit statuses, the text
 * lines (sizes, uptimes, rebuild progress and ETA), and the JSON: an
 * exact document, and string escaping of quotes, control bytes, valid
 * UTF-8 and every kind of invalid UTF-8.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../admin/status_format.h"

static struct status_report r;
static char *text;
static size_t textlen;

/* A healthy report: n = 3t+1 servers holding `held` blocks each. */
static void
healthy(unsigned t, uint64_t held)
{
	memset(&r, 0, sizeof r);
	r.t = t;
	r.n = 3 * t + 1;
	for (unsigned i = 0; i < r.n; i++) {
		struct status_server *s = &r.servers[i];

		s->index = i;
		snprintf(s->addr, sizeof s->addr, "10.0.0.%u:7700", i + 1);
		s->reachable = true;
		s->info.version = 2;
		s->info.server_index = i;
		s->info.uptime_s = 3725;
		s->info.blocks_held = held;
		s->info.bytes_total = 3u << 20;
		s->info.bytes_live = 1536u << 10;
	}
}

static void
down(unsigned i, const char *why)
{
	r.servers[i].reachable = false;
	snprintf(r.servers[i].why, sizeof r.servers[i].why, "%s", why);
	memset(&r.servers[i].info, 0, sizeof r.servers[i].info);
}

static void
expect(enum status_health h, const char *reason)
{
	status_assess(&r);
	assert_string_equal(r.reason, reason);
	assert_int_equal(r.health, h);
}

/* Prints r with fn into text. */
static void
print(int (*fn)(const struct status_report *, FILE *))
{
	FILE *fp;

	free(text);
	text = NULL;
	fp = open_memstream(&text, &textlen);
	assert_non_null(fp);
	assert_int_equal(fn(&r, fp), 0);
	assert_int_equal(fclose(fp), 0);
}

static int
teardown(void **state)
{
	(void)state;
	free(text);
	text = NULL;
	return 0;
}

static void
test_unreachable(void **state)
{
	(void)state;
	healthy(1, 8);
	expect(STATUS_OK, "");
	assert_int_equal(r.reachable, 4);
	assert_int_equal(status_exit_code(r.health), 0);
	/* t = 1: one down leaves no fault to spare. */
	down(3, "cannot connect");
	expect(STATUS_AT_RISK, "server 3 unreachable: no fault left to spare");
	assert_int_equal(r.reachable, 3);
	assert_int_equal(status_exit_code(r.health), 1);
	down(0, "cannot connect");
	expect(STATUS_UNAVAILABLE, "2 of 4 servers answer, I/O needs 3; "
	    "servers 0, 3 unreachable");
	assert_int_equal(status_exit_code(r.health), 2);

	/* t = 2: one down is DEGRADED, two AT RISK, three UNAVAILABLE. */
	healthy(2, 8);
	expect(STATUS_OK, "");
	down(4, "x");
	expect(STATUS_DEGRADED, "server 4 unreachable: 1 more fault "
	    "tolerated");
	assert_int_equal(status_exit_code(r.health), 1);
	down(1, "x");
	expect(STATUS_AT_RISK, "servers 1, 4 unreachable: no fault left to "
	    "spare");
	down(6, "x");
	expect(STATUS_UNAVAILABLE, "4 of 7 servers answer, I/O needs 5; "
	    "servers 1, 4, 6 unreachable");
	healthy(3, 0);
	down(9, "x");
	expect(STATUS_DEGRADED, "server 9 unreachable: 2 more faults "
	    "tolerated");
}

static void
test_at_risk(void **state)
{
	(void)state;
	healthy(1, 8);
	r.servers[1].info.rebuild_state = BFT_REBUILD_REBUILDING;
	r.servers[1].info.rebuild_done = 3;
	r.servers[1].info.rebuild_total = 8;
	expect(STATUS_AT_RISK, "server 1 rebuilding (3/8 blocks)");
	/* A comparison with peers is routine; what it finds is not. */
	r.servers[1].info.rebuild_state = BFT_REBUILD_SCANNING;
	expect(STATUS_OK, "");
	r.servers[1].info.rebuild_state = BFT_REBUILD_WAITING;
	expect(STATUS_AT_RISK, "server 1 waiting for peers");
	r.servers[1].info.rebuild_state = BFT_REBUILD_DONE;
	expect(STATUS_OK, "");
	r.servers[1].info.rebuild_state = 77;
	expect(STATUS_AT_RISK, "server 1 in rebuild state 77");
	r.servers[1].info.rebuild_state = BFT_REBUILD_IDLE;

	r.servers[2].info.damaged_records = 3;
	r.servers[2].info.repaired_records = 1;
	expect(STATUS_AT_RISK, "server 2 has 2 damaged records not repaired");
	r.servers[2].info.repaired_records = 3;
	expect(STATUS_OK, "");

	r.servers[0].info.blocks_held = 5;
	expect(STATUS_AT_RISK, "server 0 holds 5 blocks, others up to 8");
	r.servers[3].info.blocks_held = 9;
	expect(STATUS_AT_RISK, "server 0 holds 5 blocks, others up to 9; "
	    "server 1 holds 8 blocks, others up to 9; server 2 holds 8 "
	    "blocks, others up to 9");

	/*
	 * An unreachable server's zeros are no evidence of missing blocks;
	 * the most serious findings come first.
	 */
	healthy(2, 8);
	down(2, "x");
	r.servers[5].info.rebuild_state = BFT_REBUILD_WAITING;
	expect(STATUS_AT_RISK, "server 5 waiting for peers; server 2 "
	    "unreachable: 1 more fault tolerated");
	assert_string_equal(status_health_str(STATUS_OK), "OK");
	assert_string_equal(status_health_str(STATUS_DEGRADED), "DEGRADED");
	assert_string_equal(status_health_str(STATUS_AT_RISK), "AT RISK");
	assert_string_equal(status_health_str(STATUS_UNAVAILABLE),
	    "UNAVAILABLE");
}

static void
test_text(void **state)
{
	struct bft_status_info *in;

	(void)state;
	healthy(1, 1234);
	in = &r.servers[1].info;
	in->rebuild_state = BFT_REBUILD_REBUILDING;
	in->rebuild_done = 10;
	in->rebuild_total = 110;
	in->rebuild_bytes = 10 * 32768;
	in->rebuild_rate = 1000000;
	in->damaged_records = 4;
	in->repaired_records = 1;
	in->uptime_s = 45;
	in->bytes_total = 1023;
	in->bytes_live = 0;
	in = &r.servers[2].info;
	in->scrub_done = 7;
	in->scrub_total = 100;
	in->uptime_s = 3 * 86400 + 5 * 3600 + 59;
	in->bytes_total = 5ull << 40;
	in->bytes_live = (3ull << 30) + (1ull << 29);
	down(3, "channel: unknown client key");
	/* Volume 7 is on servers 0 and 2 only: server 1 lacks it. */
	for (unsigned i = 0; i < 3; i++) {
		r.servers[i].nvols = i == 1 ? 1 : 2;
		r.servers[i].vols[0] = (struct status_vol){ 0, 1024, 3 << 20 };
		r.servers[i].vols[1] = (struct status_vol){ 7, 1024, 1536 };
	}
	/*
	 * Volume 0's holder renewed 2.5 s ago within a 6 s period; volume
	 * 7's last holder has not renewed for 10 s: a stale claim.
	 */
	r.now_ms = 1000000;
	r.nleases = 2;
	r.leases[0].id = 0;
	r.leases[0].l = (struct bftblk_lease){ .claimed = 1, .generation = 3,
	    .renewals = 9, .renewed_ms = 997500, .period_ms = 6000 };
	snprintf(r.leases[0].l.holder, sizeof r.leases[0].l.holder,
	    "a, pid 1, client");
	r.leases[1].id = 7;
	r.leases[1].l = r.leases[0].l;
	r.leases[1].l.renewed_ms = 990000;
	/* Server 2 upgraded, the others not yet. */
	r.servers[2].info.release = bft_release_code(0, 3, 0);
	r.servers[2].info.level = 1;
	/* A MAC key rotation: servers 0 and 2 took the next epoch. */
	r.servers[0].info.mac_next_epoch = 1;
	r.servers[2].info.mac_next_epoch = 1;
	/* Server 0 counted 12 versions under epoch 0; server 2 counts. */
	r.servers[0].info.mac_census_passes = 1;
	r.servers[0].info.mac_old_versions = 10;
	r.servers[0].info.mac_old_retained = 2;
	r.servers[2].info.mac_census_done = 7;
	r.servers[2].info.mac_census_total = 100;
	r.servers[2].info.mac_retiring = 1;
	status_assess(&r);
	print(status_print_text);
	assert_string_equal(text,
	    "health: AT RISK (server 3 unreachable: no fault left to spare; "
	    "server 1 rebuilding (10/110 blocks); server 1 has 3 damaged "
	    "records not repaired)\n"
	    "cluster: t=1 n=4, 3 of 4 servers answer, I/O needs 3\n"
	    "releases: 0.2.0 on servers 0 1, 0.3.0 on servers 2 (mixed: an "
	    "upgrade is under way); not finalized\n"
	    "MAC keys: rotating from epoch 0 to 1: 2 of 4 servers accept 1 "
	    "(not yet: 1 3); writers sign under it once every server does\n"
	    "MAC keys: versions still under epoch 0: server 0 12, server 2 "
	    "counting (7/100 blocks) (retiring it); bftblk keys reauth gives "
	    "them the new MACs, bftblk keys retire needs none\n"
	    "server 0 10.0.0.1:7700: reachable, release 0.2.0, version 2, up "
	    "1h02m, 1234 "
	    "blocks, 3.0 MiB on disk (1.5 MiB live), 0 damaged, 0 repaired, "
	    "idle\n"
	    "server 1 10.0.0.2:7700: reachable, release 0.2.0, version 2, up "
	    "45s, 1234 "
	    "blocks, 1023 B on disk (0 B live), 4 damaged, 1 repaired, "
	    "rebuilding 10/110 blocks, 1.0 MB/s, ETA 3s\n"
	    "server 2 10.0.0.3:7700: reachable, release 0.3.0, version 2, up "
	    "3d05h, 1234 "
	    "blocks, 5.0 TiB on disk (3.5 GiB live), 0 damaged, 0 repaired, "
	    "idle, scrub 7/100\n"
	    "server 3 10.0.0.4:7700: unreachable (channel: unknown client "
	    "key)\n"
	    "volume 0: 3.0 MiB live on each of 3 servers\n"
	    "  lease: held by a, pid 1, client, generation 3, renewed 2.5 s "
	    "ago (every 2.0 s)\n"
	    "volume 7: 0 B to 1.5 KiB live on 3 servers\n"
	    "  lease: stale claim of a, pid 1, client, generation 3, renewed "
	    "10.0 s ago (every 2.0 s): its holder is gone or cut off, and the "
	    "next opener takes the volume over\n");
	/* Released, never taken, and leases that could not be read. */
	r.leases[0].l.released = 1;
	r.leases[1].l = (struct bftblk_lease){ 0 };
	snprintf(r.lease_err, sizeof r.lease_err, "no quorum");
	print(status_print_text);
	assert_non_null(strstr(text, "volume 0: 3.0 MiB live on each of 3 "
	    "servers\n  lease: free (released by a, pid 1, client), "
	    "generation 3\nvolume 7: 0 B to 1.5 KiB live on 3 servers\n"
	    "  lease: never taken\nleases: not read: no quorum\n"));
	for (unsigned i = 0; i < 3; i++)
		r.servers[i].nvols = 0;
	r.nleases = 0;
	r.lease_err[0] = '\0';

	/* Without a rate or anything rebuilt yet, no ETA to give. */
	healthy(1, 0);
	in = &r.servers[0].info;
	in->rebuild_state = BFT_REBUILD_REBUILDING;
	in->rebuild_total = 64;
	in->uptime_s = 600;
	status_assess(&r);
	print(status_print_text);
	assert_non_null(strstr(text, "server 0 10.0.0.1:7700: reachable, "
	    "release 0.2.0, version 2, up 10m00s, 0 blocks, 3.0 MiB on disk "
	    "(1.5 MiB live), "
	    "0 damaged, 0 repaired, rebuilding 0/64 blocks, 0.0 MB/s, ETA "
	    "unknown\n"));
	in->rebuild_state = BFT_REBUILD_DONE;
	in->rebuild_done = 64;
	status_assess(&r);
	print(status_print_text);
	assert_non_null(strstr(text, "0 repaired, done 64/64 blocks\n"));
	assert_string_equal(status_rebuild_str(99), "unknown");

	/* A proactive recovery: its progress, and the count of them. */
	in->recovering = BFT_RECOVERING_YES;
	in->scrub_done = 5;
	in->scrub_total = 9;
	r.servers[2].info.recovering = BFT_RECOVERING_CLAIMED;
	status_assess(&r);
	print(status_print_text);
	assert_non_null(strstr(text, "I/O needs 3, 2 recovering\n"));
	assert_non_null(strstr(text, "done 64/64 blocks, scrub 5/9, "
	    "recovering (scrub 5/9, catch-up 64/64)\n"));
	assert_non_null(strstr(text, "idle, about to recover\n"));
}

static void
test_json(void **state)
{
	(void)state;
	healthy(1, 2);
	r.servers[0].info.rebuild_state = BFT_REBUILD_WAITING;
	r.servers[0].info.scrub_total = UINT64_MAX;
	down(1, "say \"no\"\\\n");
	r.servers[0].nvols = 2;
	r.servers[0].vols[0] = (struct status_vol){ 0, 1024, 1572864 };
	r.servers[0].vols[1] = (struct status_vol){ 5, 2048, 100 };
	r.n = 2;	/* a short document: n = 2 is for formatting only */
	r.servers[0].info.release = bft_release_code(0, 3, 0);
	r.servers[0].info.level = 1;
	r.servers[0].info.finalized = 1;
	status_assess(&r);
	print(status_print_json);
	assert_string_equal(text,
	    "{\"health\":\"AT RISK\",\"reason\":\"server 1 unreachable: "
	    "no fault left to spare; server 0 waiting for peers\",\"t\":1,"
	    "\"n\":2,\"reachable\":1,\"needed\":1,"
	    "\"servers\":[{\"index\":0,\"address\":\"10.0.0.1:7700\","
	    "\"reachable\":true,\"version\":2,\"server_index\":0,"
	    "\"uptime_s\":3725,\"blocks_held\":2,\"bytes_total\":3145728,"
	    "\"bytes_live\":1572864,\"damaged_records\":0,"
	    "\"repaired_records\":0,\"rebuild_state\":3,\"rebuild_done\":0,"
	    "\"rebuild_total\":0,\"rebuild_bytes\":0,\"rebuild_rate\":0,"
	    "\"scrub_done\":0,\"scrub_total\":18446744073709551615,"
	    "\"release\":768,\"level\":1,\"finalized\":1,\"snap_gc_done\":0,"
	    "\"snap_gc_total\":0,\"recovering\":0,\"recoveries\":0,"
	    "\"mac_epoch\":0,\"mac_next_epoch\":0,"
	    "\"mac_old_versions\":0,\"mac_old_pending\":0,"
	    "\"mac_census_done\":0,\"mac_census_total\":0,"
	    "\"mac_census_passes\":0,\"mac_retiring\":0,"
	    "\"mac_old_retained\":0,"
	    "\"release_name\":\"0.3.0\","
	    "\"rebuild_state_name\":\"waiting for peers\","
	    "\"volumes\":[{\"id\":0,\"end\":1024,\"bytes_live\":1572864},"
	    "{\"id\":5,\"end\":2048,\"bytes_live\":100}],"
	    "\"volumes_truncated\":false},"
	    "{\"index\":1,\"address\":\"10.0.0.2:7700\",\"reachable\":false,"
	    "\"error\":\"say \\\"no\\\"\\\\\\n\"}],\"releases\":{"
	    "\"mixed\":false,\"newest\":\"0.3.0\",\"finalized\":true,"
	    "\"finalized_servers\":1},\"mac_epochs\":{\"oldest\":0,"
	    "\"newest\":0,\"accepting_newest\":1},\"reauth_pass\":null,"
	    "\"leases\":[],"
	    "\"clients\":[]}\n");
}

/*
 * A reauth pass under way shows its progress, rate and time left; one
 * that stopped, how long ago and where a run resumes; a state file of
 * before the progress line, where alone.
 */
static void
test_reauth(void **state)
{
	(void)state;
	healthy(1, 2);
	status_assess(&r);
	r.has_reauth = true;
	r.reauth = (struct reauth_state){ .epoch = 2, .vol = 1,
	    .block = 4096, .progress = true, .done = 1000, .total = 3000,
	    .rate = 65536000, .at = 1000, .pid = 77, .host = "adm" };
	r.reauth_age_s = 1;
	print(status_print_text);
	assert_non_null(strstr(text, "MAC keys: reauth pass to epoch 2: "
	    "1000/3000 blocks, 65.5 MB/s, ETA 2s (pid 77 on adm)\n"));
	r.reauth_stopped = true;
	r.reauth_age_s = 310;
	print(status_print_text);
	assert_non_null(strstr(text, "MAC keys: reauth pass to epoch 2 "
	    "stopped at 1000/3000 blocks 5m10s ago: bftblk keys reauth "
	    "resumes it at volume 1 block 4096\n"));
	print(status_print_json);
	assert_non_null(strstr(text, ",\"reauth_pass\":{\"epoch\":2,"
	    "\"volume\":1,\"block\":4096,\"stopped\":true,\"done\":1000,"
	    "\"total\":3000,\"bytes_per_s\":65536000,\"age_s\":310,"
	    "\"pid\":77},"));
	r.reauth.progress = false;
	print(status_print_text);
	assert_non_null(strstr(text, "MAC keys: reauth pass to epoch 2 "
	    "stopped: bftblk keys reauth resumes it at volume 1 block "
	    "4096\n"));
	r.has_reauth = false;
	print(status_print_text);
	assert_null(strstr(text, "reauth pass"));
}

/* Client c of r: fresh, every server connected and quiet. */
static struct status_client *
client(unsigned c, const char *name)
{
	struct status_client *cl = &r.clients[c];

	memset(cl, 0, sizeof *cl);
	snprintf(cl->name, sizeof cl->name, "%s", name);
	snprintf(cl->path, sizeof cl->path, "/run/%s.stats", name);
	cl->pid = 42;
	cl->age_s = 5;
	cl->interval = 10;
	cl->n = r.n;
	for (unsigned i = 0; i < r.n; i++) {
		cl->servers[i].connected = true;
		cl->servers[i].replies = 100;
	}
	if (r.nclients <= c)
		r.nclients = c + 1;
	return cl;
}

/*
 * A server a client caught lying is a fault like an unreachable one;
 * one that is slow to a client, or cut off from it, degrades; a stale or
 * closed file counts for nothing.
 */
static void
test_clients(void **state)
{
	struct status_client *c;

	(void)state;
	healthy(1, 8);
	c = client(0, "c1");
	expect(STATUS_OK, "");
	c->servers[3].recent[CLI_BAD_FRAGMENTS] = 12;
	c->servers[3].total[CLI_BAD_FRAGMENTS] = 12;
	c->servers[3].recent[CLI_FORGED_TS] = 1;
	expect(STATUS_AT_RISK, "server 3 lied to client 'c1' in its last 10 s "
	    "(12 bad fragments, 1 forged timestamps): no fault left to spare");
	/* A second client seeing the same liar does not count it twice. */
	client(1, "c2")->servers[3].recent[CLI_MISMATCHED] = 2;
	expect(STATUS_AT_RISK, "server 3 lied to client 'c1' in its last 10 s "
	    "(12 bad fragments, 1 forged timestamps): no fault left to spare");
	r.nclients = 1;
	down(1, "refused");
	expect(STATUS_AT_RISK, "server 1 unreachable; server 3 lied to client "
	    "'c1' in its last 10 s (12 bad fragments, 1 forged timestamps)");
	c->age_s = 31;
	expect(STATUS_AT_RISK, "server 1 unreachable: no fault left to spare");
	c->age_s = 30;
	c->closed = true;
	expect(STATUS_AT_RISK, "server 1 unreachable: no fault left to spare");

	healthy(2, 8);
	c = client(0, "c1");
	c->servers[6].recent[CLI_BAD_FRAGMENTS] = 1;
	expect(STATUS_DEGRADED, "server 6 lied to client 'c1' in its last "
	    "10 s (1 bad fragments)");
	down(0, "refused");
	expect(STATUS_AT_RISK, "server 0 unreachable: no fault left to spare; "
	    "server 6 lied to client 'c1' in its last 10 s (1 bad fragments): "
	    "no fault left to spare");

	healthy(1, 8);
	c = client(0, "c1");
	c->servers[2].recent[CLI_TIMEOUTS] = 3;
	c->servers[1].connected = false;
	expect(STATUS_DEGRADED, "client 'c1' has no connection to server 1; "
	    "server 2 left 3 rounds of client 'c1' unanswered in its last "
	    "10 s");
	/* An unreachable server is already said to be. */
	down(1, "refused");
	expect(STATUS_AT_RISK, "server 1 unreachable: no fault left to spare; "
	    "server 2 left 3 rounds of client 'c1' unanswered in its last "
	    "10 s");
}

static void
test_clients_print(void **state)
{
	struct status_client *c;

	(void)state;
	healthy(1, 8);
	c = client(0, "c1");
	c->servers[3].total[CLI_BAD_FRAGMENTS] = 40;
	c->servers[3].recent[CLI_BAD_FRAGMENTS] = 12;
	c->servers[3].disconnects = 2;
	status_assess(&r);
	print(status_print_text);
	assert_non_null(strstr(text, "\nclient 'c1' (pid 42, /run/c1.stats): "
	    "updated 5 s ago\n  server 0: connected, 100 replies, 0 "
	    "disconnects\n"));
	assert_non_null(strstr(text, "  server 3: connected, 100 replies, 2 "
	    "disconnects, 40 bad fragments (12 in the last 10 s)\n"));
	c->closed = true;
	print(status_print_text);
	assert_non_null(strstr(text, "updated 5 s ago, closed: not counted\n"));
	print(status_print_json);
	assert_non_null(strstr(text, "\"clients\":[{\"file\":\"/run/c1.stats\","
	    "\"client\":\"c1\",\"pid\":42,\"age_s\":5,\"interval_s\":10,"
	    "\"closed\":true,\"counted\":false,\"servers\":[{\"index\":0,"
	    "\"connected\":true,\"replies\":100,\"disconnects\":0,"
	    "\"total\":{\"bad_fragments\":0,\"forged_ts\":0,"
	    "\"mismatched\":0,\"error_replies\":0,\"timeouts\":0},"
	    "\"recent\":{\"bad_fragments\":0,"));
	assert_non_null(strstr(text, "\"total\":{\"bad_fragments\":40,"));
}

/* Writes content to a new file; its path. */
static const char *
file_of(const char *content)
{
	static char path[64];
	FILE *fp;
	int fd;

	snprintf(path, sizeof path, "/tmp/test_status.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	fp = fdopen(fd, "w");
	assert_non_null(fp);
	fputs(content, fp);
	assert_int_equal(fclose(fp), 0);
	return path;
}

static void
test_client_load(void **state)
{
	struct status_client c;
	char err[256];
	const char *p;

	(void)state;
	p = file_of("# comment\nformat = 1\nclient = host-a\npid = 77\n"
	    "updated = 1700000000\ninterval = 10\nclosed = 0\nn = 4\n"
	    "reads = 5\nserver.3.connected = 1\nserver.3.replies = 9\n"
	    "server.3.bad-fragments = 7\nserver.3.recent.bad-fragments = 2\n"
	    "server.3.recent.timeouts = 4\nserver.3.future-thing = 1\n");
	assert_int_equal(status_client_load(p, 4, &c, err, sizeof err), 0);
	assert_string_equal(c.name, "host-a");
	assert_int_equal(c.pid, 77);
	assert_int_equal(c.updated, 1700000000);
	assert_int_equal(c.interval, 10);
	assert_true(c.servers[3].connected);
	assert_false(c.servers[2].connected);
	assert_int_equal(c.servers[3].replies, 9);
	assert_int_equal(c.servers[3].total[CLI_BAD_FRAGMENTS], 7);
	assert_int_equal(c.servers[3].recent[CLI_BAD_FRAGMENTS], 2);
	assert_int_equal(c.servers[3].recent[CLI_TIMEOUTS], 4);
	/* Another cluster's size, a server beyond n, no format, garbage. */
	assert_int_equal(status_client_load(p, 7, &c, err, sizeof err), -1);
	assert_non_null(strstr(err, "a client of a cluster of 4 servers"));
	unlink(p);
	p = file_of("format = 1\nn = 4\nupdated = 1\ninterval = 10\n"
	    "server.4.replies = 1\n");
	assert_int_equal(status_client_load(p, 4, &c, err, sizeof err), -1);
	assert_non_null(strstr(err, "no such server"));
	unlink(p);
	p = file_of("n = 4\nupdated = 1\ninterval = 10\n");
	assert_int_equal(status_client_load(p, 4, &c, err, sizeof err), -1);
	assert_non_null(strstr(err, "not a client stats file"));
	unlink(p);
	p = file_of("format = 1\nn = 4\nupdated = -3\ninterval = 10\n");
	assert_int_equal(status_client_load(p, 4, &c, err, sizeof err), -1);
	assert_non_null(strstr(err, "not a number"));
	unlink(p);
	assert_int_equal(status_client_load("/nonexistent/x", 4, &c, err,
	    sizeof err), -1);
}

static void
test_json_string(void **state)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "", "\"\"" },
		{ "plain text", "\"plain text\"" },
		{ "q\"b\\s/", "\"q\\\"b\\\\s/\"" },
		{ "\b\f\n\r\t", "\"\\b\\f\\n\\r\\t\"" },
		{ "\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"" },
		/* Valid UTF-8 of two, three and four bytes passes. */
		{ "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
		    "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"" },
		{ "\xef\xbf\xbd\xf4\x8f\xbf\xbf",
		    "\"\xef\xbf\xbd\xf4\x8f\xbf\xbf\"" },
		/* Stray, overlong, surrogate, too high, cut short. */
		{ "a\xff" "b", "\"a\\ufffdb\"" },
		{ "\x80", "\"\\ufffd\"" },
		{ "\xc0\xaf", "\"\\ufffd\\ufffd\"" },
		{ "\xc1\xbf", "\"\\ufffd\\ufffd\"" },
		{ "\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"" },
		{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"" },
		{ "\xf0\x8f\xbf\xbf", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"" },
		{ "\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"" },
		{ "\xf5\x80\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"" },
		{ "\xe2\x82", "\"\\ufffd\\ufffd\"" },
		{ "\xe2\x82x", "\"\\ufffd\\ufffdx\"" },
		{ "\xf0\x9f\x98", "\"\\ufffd\\ufffd\\ufffd\"" },
	};
	FILE *fp;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		free(text);
		text = NULL;
		fp = open_memstream(&text, &textlen);
		assert_non_null(fp);
		status_json_string(fp, cases[i].in);
		assert_int_equal(fclose(fp), 0);
		assert_string_equal(text, cases[i].out);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_unreachable, teardown),
		cmocka_unit_test_teardown(test_at_risk, teardown),
		cmocka_unit_test_teardown(test_text, teardown),
		cmocka_unit_test_teardown(test_json, teardown),
		cmocka_unit_test_teardown(test_json_string, teardown),
		cmocka_unit_test_teardown(test_reauth, teardown),
		cmocka_unit_test_teardown(test_clients, teardown),
		cmocka_unit_test_teardown(test_clients_print, teardown),
		cmocka_unit_test_teardown(test_client_load, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
