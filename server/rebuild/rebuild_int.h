/*
 * What rebuild.c (the thread, calls into the handler, adopting values)
 * and rebuild_scan.c (peer sessions, comparing digests) share.
 */
#ifndef BFTBLK_REBUILD_INT_H
#define BFTBLK_REBUILD_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "bftblk.h"
#include "ec.h"
#include "peer.h"
#include "../heal.h"
#include "rebuild.h"
#include "session.h"
#include "wire.h"

/* One request from the thread to this server's own handler. */
struct rb_call {
	const struct bft_msg *req;
	struct bft_buf out;		/* the reply, encoded */
	/* The encoding's 0 or negative errno; -ECANCELED: never run. */
	int status;
	bool done;
	struct rb_call *next;
};

struct bft_rebuild {
	struct bft_rebuild_opts o;
	const struct bft_config *cfg;
	const struct bft_server_key *key;
	struct bft_handler *h;
	uv_async_t wake;
	pthread_t thread;

	/* Shared with the loop, under lock. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct rb_call *calls;
	bool stopping;
	bool fresh;			/* initial rebuild of a new directory */
	bool lacking;			/* ... and peers hold data it lacks */
	/*
	 * The volume table's snapshots not read since the server started:
	 * clients' COMPLETEs wait (bft_handler.bounds_pending).
	 */
	bool bounds_pending;
	struct bft_heal_progress prog;	/* the thread's figures */
	struct bft_heal_progress *pub;	/* the server's, for STATUS (loop) */
	bool kicked;			/* a pass is wanted now */
	struct bft_msg rep;		/* loop only: the handler's reply */

	/* The thread's own. */
	struct rb_kind {		/* [0] plain values, [1] sealed */
		struct bftblk *lib;	/* during a pass only */
		struct bft_ec *ec;
		uint8_t *fragbuf, *frags[BFT_MAX_N];
	} kind[2];
	struct bft_session peers[BFT_MAX_N];
	struct bft_client_key ident;	/* our server key as a peer */
	/*
	 * bftblk.conf as this pass read it: peers' addresses and keys may
	 * change under SIGHUP, which rb->cfg (the loop's) takes on.
	 */
	struct bft_config pcfg;
	struct bft_msg req, lrep;
	uint64_t *todo;
	size_t ntodo, todocap;
	/* Boundaries taken from the volume table, by volume and generation. */
	struct bftblk__bound *bounds;
	unsigned nbounds;
	bool bounds_learned;		/* once per start of a new directory */
	double started_s;		/* rb_now_s() at the start */
	bool bounds_failing;		/* the last reading of the table failed */
	uint64_t bytes;
	uint64_t io_seen;		/* the handler's io_requests, last look */
	double io_seen_at;		/* when it last changed */
	bool warned_wait;
	uint32_t answered;		/* peers that answered this pass's scan */
	unsigned passes;

	/* Claims fewer than t+1 peers make (rebuild_claims.c). */
	struct rb_lone {
		uint64_t block;
		struct bft_ts own;	/* our lc when it was listed */
		uint32_t who;		/* the peers that listed it newer */
		bool read;		/* the protocol read it */
		bool stale;		/* ... and found nothing newer */
	} *lone;
	size_t nlone, lonecap;
	uint64_t ignored;		/* distrusted peers' claims this pass */
	uint64_t deferred;		/* lone claims past LONE_MAX: next pass */
	/* Each peer's lone claims read this pass: found false, found true. */
	unsigned pass_false[BFT_MAX_N], pass_true[BFT_MAX_N];
	uint32_t judged;		/* peers distrusted during this pass */
	uint32_t distrust;		/* peers whose lone claims are ignored */
	double distrust_until[BFT_MAX_N];
	unsigned backoff_s[BFT_MAX_N];	/* the next distrust's length */
};

/*
 * Sends req to this server's handler on the loop and waits; rep points
 * into out, which the caller frees.  The reply's status, or -1.
 */
int rb_local(struct bft_rebuild *rb, const struct bft_msg *req,
    struct bft_msg *rep, struct bft_buf *out);

/*
 * rebuild_adopt.c.  rb_make_coders makes the coders of both kinds of
 * value; rb_open_lib opens a pass's library handle of one kind (0
 * plain, 1 sealed) unless open; rb_rebuild_batch reads blocks[0..nb)
 * of one kind at gen (BFT_GEN_MAX: the head, else a snapshot's view),
 * checks and adopts each, and leaves blocks of the other kind in
 * other[*nother] (when other is not NULL) and failures in
 * fails[*nfails]; rb_close_libs ends a pass's library handles.
 */
int rb_make_coders(struct bft_rebuild *rb);
int rb_open_lib(struct bft_rebuild *rb, struct rb_kind *k, bool sealed);
void rb_rebuild_batch(struct bft_rebuild *rb, int kind, uint64_t gen,
    const uint64_t *blocks, unsigned nb, uint64_t *other, unsigned *nother,
    uint64_t *fails, size_t *nfails);
void rb_close_libs(struct bft_rebuild *rb);

/*
 * rebuild_views.c: snapshots' views.
 * rb_learn_bounds reads the volume table's snapshots and keeps each
 * boundary this server can take (rb->bounds); a server with data takes
 * those it missed while it was away, quietly for those it holds
 * (fresh: a new directory, which logs each).  rb_rebuild_views adopts,
 * oldest boundary first, the version each view of blocks[0..*nb) holds
 * at its peers, and moves the blocks it could not to fails[*nfails]:
 * their head must wait, as adopting it would freeze what this server
 * holds now as their view.
 */
int rb_learn_bounds(struct bft_rebuild *rb, bool fresh);
void rb_rebuild_views(struct bft_rebuild *rb, uint64_t *blocks,
    unsigned *nb, uint64_t *fails, size_t *nfails);

/* rebuild_scan.c: (re)connects to the peers; how many are connected. */
unsigned rb_peers_connect(struct bft_rebuild *rb);
void rb_peers_close(struct bft_rebuild *rb);
/*
 * Fills rb->todo, sorted and without repeats, with the blocks some
 * connected peer holds under a newer lc than we do.  0, or -1 (the pass
 * must be tried again).
 */
int rb_scan(struct bft_rebuild *rb);

/*
 * rebuild_claims.c.  A block that t+1 peers list newer is newer at a
 * correct one; a block that fewer list may be a lie.  rb_claim decides,
 * as the scan lists block (our lc own, listed newer by the peers in
 * who), whether to rebuild it (true) and remembers lone claims;
 * rb_claim_read notes what the protocol read of a block found;
 * rb_claims_judge ends a pass: a peer whose lone claims the reads
 * mostly found false is ignored, alone, for a while that doubles each
 * time.
 */
bool rb_claim(struct bft_rebuild *rb, uint64_t block,
    const struct bft_ts *own, uint32_t who);
void rb_claim_read(struct bft_rebuild *rb, uint64_t block,
    const struct bftblk__proof *p);
void rb_claims_judge(struct bft_rebuild *rb);
/* Starts a scan's claims: distrust that has run out ends. */
void rb_claims_begin(struct bft_rebuild *rb);
/*
 * Whether to read block still: false for a lone claim that only peers
 * distrusted since the scan made (the pass's reads judge them as they
 * go, so that a liar costs a bounded number of reads).
 */
bool rb_claim_wanted(struct bft_rebuild *rb, uint64_t block);
/*
 * Whether a peer whose lone claims read so far this pass were nfalse
 * times false and ntrue times true is a liar, judged before the pass
 * ends: RB_EARLY_FALSE false claims, more than its true ones.
 */
#define RB_EARLY_FALSE	64
bool rb_claims_liar(unsigned nfalse, unsigned ntrue);

/* Seconds on the monotonic clock. */
double rb_now_s(void);

#endif
