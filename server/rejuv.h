/*
 * Proactive recovery (rejuvenation), after PBFT's: on a schedule the
 * server restarts from its installed binary, scrubs its whole store and
 * catches up with its peers, so that faults do not pile up over the
 * cluster's life.  Peers are asked first, so that at most one server
 * recovers at a time (rejuv.c says why that holds without clocks).
 */
#ifndef BFTBLK_REJUV_H
#define BFTBLK_REJUV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "config.h"
#include "handler.h"
#include "heal.h"
#include "keys.h"

/* In the data directory from the decision to restart until recovered. */
#define BFT_REJUV_MARKER	"recover-pending"

struct bft_rejuv_opts {
	unsigned every_s;		/* --recover-every; 0: markers only */
	const char *exe;		/* the installed binary, absolute */
	char *const *argv;		/* as the server was started */
	const char *data_dir;
	const char *config_path;	/* reread each time peers are asked */
};

/* One peer as a due server's question to it found it. */
struct bft_rejuv_peer {
	bool answered;			/* its STATUS came back */
	uint64_t recovering;		/* enum bft_recovering, said */
};

enum bft_rejuv_verdict {
	BFT_REJUV_GO,			/* claimed, nobody in the way */
	BFT_REJUV_CLAIM,		/* set CLAIMED, then ask again */
	BFT_REJUV_HOLD,			/* keep the claim, ask again */
	BFT_REJUV_WAIT_DOWN,		/* a peer did not answer */
	BFT_REJUV_WAIT_RECOVERING,	/* a peer recovers */
	BFT_REJUV_WAIT_LOWER,		/* a lower index claimed first */
};

/*
 * The decision of server self of n, given what its peers said (peers[j]
 * for each j != self) and whether it holds a claim itself; *who is the
 * peer the verdict is about.  Pure: the unit tests drive it.
 */
enum bft_rejuv_verdict bft_rejuv_decide(unsigned self, unsigned n,
    const struct bft_rejuv_peer *peers, bool claimed, unsigned *who);

/*
 * The delay before server index of n is first due after a start
 * without a marker: every_s * (index + 1) / n, in ms.
 */
uint64_t bft_rejuv_first_ms(unsigned every_s, unsigned index, unsigned n);

/*
 * The absolute path of the binary argv0 names: as given when it has a
 * slash (made absolute against the working directory), else the first
 * executable of that name along PATH.  Symbolic links are left alone so
 * that a restart runs whatever the path names then.  0, or -1.
 */
int bft_rejuv_resolve_exe(const char *argv0, char *out, size_t len);

/* "90s", "30m", "6h", "1d" or plain seconds into *s; 0, or -1. */
int bft_rejuv_parse_duration(const char *arg, unsigned *s);

/*
 * Whether data_dir holds a marker: this start is a recovery's.  Call
 * before listening, and say so in prog->recovering, so that no peer
 * ever sees this server answer as not recovering meanwhile.
 */
bool bft_rejuv_pending(const char *data_dir);

struct bft_rejuv;

/*
 * Starts the schedule (and, with a marker, the recovery: scrub now via
 * h->scrub_requested and kick(kick_ctx) for a catch-up pass).  When the
 * server must restart, restart(ctx) is called on the loop: it shuts the
 * server down as SIGTERM does, after which bft_rejuv_exec runs.  NULL
 * when out of memory.
 */
struct bft_rejuv *bft_rejuv_start(uv_loop_t *loop, struct bft_handler *h,
    const struct bft_server_key *key, unsigned n,
    const struct bft_rejuv_opts *o, struct bft_heal_progress *prog,
    void (*kick)(void *), void *kick_ctx, void (*restart)(void *),
    void *ctx);
void bft_rejuv_stop(struct bft_rejuv *r);

/* Replaces the process with o->exe; returns only on failure, logged. */
void bft_rejuv_exec(const struct bft_rejuv_opts *o);

#endif
