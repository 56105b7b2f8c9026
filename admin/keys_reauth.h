/*
 * bftblk keys reauth, in two files: keys_reauth_servers.c (the sessions
 * to the servers and what they say they hold) and keys_reauth.c (the
 * pass: reads and REAUTHs).
 */
#ifndef BFTBLK_ADMIN_KEYS_REAUTH_H
#define BFTBLK_ADMIN_KEYS_REAUTH_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "keys.h"
#include "keys_cmd.h"
#include "session.h"
#include "wire.h"

#define REAUTH_MAX_VOLS	16384u		/* what one server's list may hold */
/* Blocks of one LCLIST, the unit the pass lists and resumes by. */
#define REAUTH_RANGE	BFT_LCLIST_MAX

struct reauth_vol {
	uint32_t vol;
	uint64_t ends[BFT_MAX_N];	/* as each server said; 0: none */
	uint64_t end;			/* the (t+1)-th highest */
};

/* One server: its session and what it answered. */
struct reauth_srv {
	struct bft_session s;
	double down_at;			/* last failed; 0: never */
	uint64_t ok, not_held, refused, missed;
	int last_refusal;
	char why[200];
};

struct reauth {
	struct keys_args *a;
	struct bft_config cfg;
	struct bft_client_key ck;
	const uint8_t *kw;		/* the newest epoch's */
	const uint8_t (*k)[BFT_KEY_LEN];
	uint32_t epoch;			/* the newest */
	uint64_t gen;			/* the view walked; BFT_GEN_MAX: head */
	struct bftblk *h[2];		/* plain values, sealed ones */
	struct reauth_vol *vols;
	size_t nvols;
	uint64_t held;			/* blocks, (t+1)-th highest claim */
	double best;			/* the fastest batch, seconds */
	struct reauth_srv srv[BFT_MAX_N];
	struct bft_msg *req, *rep;	/* big: not on the stack */
	char state[ADMIN_PATH_MAX];
	/* Where a resumed run starts: the range being walked. */
	uint32_t at_vol, saved_vol;
	uint64_t at_block;
	double started, saved;		/* admin_now_s() */
	uint64_t read, current, zero, sent, failed;
};

/*
 * Opens a session to every server and learns what they hold: the
 * volumes and their ends, and how many blocks (ra->held).  0, or -1
 * after saying why (fewer than n-t servers answered).
 */
int reauth_gather(struct reauth *ra);
/* Server i's session, opened again when it failed a while ago. */
bool reauth_srv_up(struct reauth *ra, unsigned i);
void reauth_srv_fail(struct reauth_srv *s, const char *why);
/*
 * Of the ranges of REAUTH_RANGE blocks from block on (at most
 * BFT_SUMMARY_MAX of them, to end), which t+1 servers say hold a
 * written block: nonempty[r].  How many ranges were asked about.
 */
unsigned reauth_ranges(struct reauth *ra, uint32_t vol, uint64_t block,
    uint64_t end, bool *nonempty);
/*
 * The blocks of [block, block + count) (count <= REAUTH_RANGE) that t+1
 * servers list as written, in order, into out (addresses); how many.
 */
unsigned reauth_list(struct reauth *ra, uint32_t vol, uint64_t block,
    uint64_t count, uint64_t *out);

#endif
