/*
 * `bftblk status`, the part without sockets: what every server answered
 * to STATUS goes into a struct status_report, status_assess() judges the
 * cluster's health from it, and the report is printed as text or JSON.
 * All of it is pure over the struct, so tests/unit/test_status_format.c
 * checks it without a cluster; status.c does the asking.
 *
 * The health rules (also in bftblk(8)), with U servers that did not
 * answer:
 *   UNAVAILABLE  fewer than n-t servers answer: I/O cannot proceed.
 *   AT RISK      I/O works but one more fault could stop it or lose
 *                data: U >= t (no fault left to spare), or a server
 *                answering is scanning, rebuilding or waiting for peers,
 *                or reports more damaged records than it repaired, or
 *                the servers answering hold different numbers of blocks
 *                (some block is held by fewer than all of them).
 *   DEGRADED     none of that, but 1 <= U < t: faults to spare remain.
 *   OK           every server answers and none has anything to report.
 * With --client-stats, what clients saw counts too.  A server a client
 * caught lying in its last period (bad fragments, forged timestamps,
 * replies to requests never made) is faulty like an unreachable one:
 * with F such servers, the rules above apply to U + F.  A reachable
 * server that left a client's rounds unanswered in its last period, or
 * that a client has no connection to, makes the cluster DEGRADED.  Only
 * files updated within three of their periods count: a client that is
 * gone says nothing of the servers.
 * The reason lists every finding, most serious first.
 */
#ifndef BFTBLK_STATUS_FORMAT_H
#define BFTBLK_STATUS_FORMAT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bftblk.h"
#include "config.h"
#include "reauth_state.h"
#include "wire.h"

enum status_health {
	STATUS_OK, STATUS_DEGRADED, STATUS_AT_RISK, STATUS_UNAVAILABLE,
};

/* A volume a server holds blocks of, from its VOLUMES. */
struct status_vol {
	uint32_t id;
	uint64_t end;			/* one past its highest index page */
	uint64_t live;			/* bytes of the records it points to */
};
#define STATUS_MAX_VOLS	64

struct status_server {
	unsigned index;
	char addr[BFT_ADDR_STRLEN];	/* HOST:PORT from bftblk.conf */
	bool reachable;			/* answered STATUS */
	char why[160];			/* when not: what went wrong */
	struct bft_status_info info;	/* when it did */
	unsigned nvols;			/* its volumes, the first of them */
	bool more_vols;			/* more than STATUS_MAX_VOLS */
	struct status_vol vols[STATUS_MAX_VOLS];
};

/* The misdeeds a client counts per server, as its stats file names them. */
enum {
	CLI_BAD_FRAGMENTS, CLI_FORGED_TS, CLI_MISMATCHED, CLI_ERROR_REPLIES,
	CLI_TIMEOUTS, CLI_KINDS
};
extern const char *const status_cli_keys[CLI_KINDS];

#define STATUS_MAX_CLIENTS	8

/* A client's stats file (stats-file= of libbftblk and the plugin). */
struct status_client {
	char path[256];
	char name[BFT_NAME_LEN + 1];
	long pid;
	int64_t updated;		/* unix time */
	int64_t age_s;			/* seconds since, when assessed */
	unsigned interval;		/* seconds between rewrites */
	bool closed;			/* the client has stopped */
	unsigned n;
	struct status_client_server {
		bool connected;
		uint64_t replies, disconnects;
		uint64_t total[CLI_KINDS], recent[CLI_KINDS];
	} servers[BFT_MAX_N];
};

/*
 * Loads a stats file for a cluster of n servers (status_clients.c).
 * 0, or -1 with a reason in err.
 */
int status_client_load(const char *path, unsigned n,
    struct status_client *c, char *err, size_t errlen);

/* A volume's writer lease, read through the protocol (status.c). */
struct status_lease {
	uint32_t id;
	struct bftblk_lease l;
};

struct status_report {
	unsigned n, t;
	struct status_server servers[BFT_MAX_N];
	/*
	 * The leases of the volumes the servers list, and the local wall
	 * clock they were read at (Unix ms); lease_err says why there are
	 * none when reading them failed.
	 */
	unsigned nleases;
	struct status_lease leases[STATUS_MAX_VOLS];
	uint64_t now_ms;
	char lease_err[256];
	unsigned nclients;
	struct status_client clients[STATUS_MAX_CLIENTS];
	/*
	 * DIR/keys-reauth.state, when a pass is under way or stopped in
	 * the middle; stopped and age as judged when status read it.
	 */
	bool has_reauth, reauth_stopped;
	struct reauth_state reauth;
	int64_t reauth_age_s;
	/* status_assess() fills these. */
	enum status_health health;
	unsigned reachable;
	char reason[1024];
};

/*
 * status_release.c: the releases the servers that answered run.  mixed
 * when they differ; release the newest; finalized the lowest level any
 * was finalized at (0: one was not), nfinalized how many were.
 */
struct status_releases {
	bool mixed;
	uint64_t release;
	unsigned finalized, nfinalized, nanswered;
};
void status_releases(const struct status_report *r,
    struct status_releases *out);
/* "releases: 0.3.0 on servers 0 1 2, 0.2.0 on servers 3 (mixed...)". */
void status_print_releases(const struct status_report *r, FILE *fp);
/* ,"releases":{...} for the JSON document. */
void status_json_releases(const struct status_report *r, FILE *fp);

/*
 * status_keys.c: the MAC key epochs of the servers that answered: the
 * oldest any holds, the newest any accepts, and how many accept that
 * newest (a rotation is done signing-wise when all n do).
 */
struct status_epochs {
	uint64_t oldest, newest;
	unsigned naccept, nanswered;
};
void status_mac_epochs(const struct status_report *r,
    struct status_epochs *out);
/* "MAC keys: epoch 0 on every server that answered", or a rotation's. */
void status_print_mac_epochs(const struct status_report *r, FILE *fp);
/* ,"mac_epochs":{...} for the JSON document. */
void status_json_mac_epochs(const struct status_report *r, FILE *fp);
/*
 * "MAC keys: reauth pass to epoch 1: 120/4096 blocks, ..." while one is
 * under way or stopped in the middle; nothing else.
 */
void status_print_reauth(const struct status_report *r, FILE *fp);
/* ,"reauth_pass":{...} or null for the JSON document. */
void status_json_reauth(const struct status_report *r, FILE *fp);
/* 45s, 12m05s, 3h04m, 2d03h. */
void status_human_secs(uint64_t s, char *out, size_t len);

/*
 * status_recover.c: ", recovering (scrub d/t, catch-up d/t)" for a
 * server in proactive recovery (nothing for one that is not), and how
 * many that answered are recovering or about to.
 */
void status_print_recovering(const struct bft_status_info *in, FILE *fp);
unsigned status_count_recovering(const struct status_report *r);

/* Judges r's health by the rules above; sets health, reachable, reason. */
void status_assess(struct status_report *r);

/* "OK", "DEGRADED", "AT RISK", "UNAVAILABLE". */
const char *status_health_str(enum status_health h);
/* The exit status of `bftblk status`: 0 OK, 1 DEGRADED or AT RISK, 2. */
int status_exit_code(enum status_health h);
/* "idle", "scanning", "rebuilding", "waiting for peers", "done". */
const char *status_rebuild_str(uint64_t state);

/*
 * The report as text: the health line, a cluster line, one line per
 * server.  0, or -1 when writing to fp failed.
 */
int status_print_text(const struct status_report *r, FILE *fp);
/* The report as one JSON object and a newline.  0 or -1. */
int status_print_json(const struct status_report *r, FILE *fp);

/* Writes s as a JSON string (quotes, escapes, valid UTF-8 only). */
void status_json_string(FILE *fp, const char *s);

/* 1023 B, 1.5 KiB, 12.0 MiB, ... */
void status_human_bytes(uint64_t v, char *out, size_t len);

/*
 * status_volumes.c: each volume's live bytes on the servers, a line
 * each after the servers', and a server's "volumes" array in JSON.
 */
void status_print_volumes(const struct status_report *r, FILE *fp);
void status_json_volumes(const struct status_server *s, FILE *fp);
/* The report's "leases" array (and "leases_error"), after "servers". */
void status_json_leases(const struct status_report *r, FILE *fp);

#endif
