/*
 * One writer per volume (lease.c): the claim a read-write handle takes
 * on its volume when it connects, renews while it runs, and releases
 * when it closes.
 */
#ifndef BFTBLK_LEASE_INT_H
#define BFTBLK_LEASE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine_int.h"

/* The reserved volume whose block N is volume N's lease register. */
#define BFT_LEASE_VOL		BFT_VOL_LEASES
#define LEASE_HOLDER_LEN	160
#define BFT_LEASE_DEFAULT_S	15

/* What a claim says; lease.c encodes it in the register's first bytes. */
struct bft_lease_claim {
	uint64_t counter;
	uint32_t period_ms;
	bool released;
	uint8_t nonce[16];
	char holder[LEASE_HOLDER_LEN];	/* "host, pid P, NAME" */
	uint64_t wall_ms;		/* holder's clock at writing; 0: unknown */
};

struct bft_lease {
	struct bft_engine *eng;		/* the claims' */
	struct bft_engine *data_eng;	/* the volume's, or NULL */
	uint32_t vol;
	uint64_t addr;			/* the register */
	uint64_t period_ms;
	uint8_t *buf, *wbuf;		/* a block each: reads, writes */
	struct bft_lease_claim mine;
	bool held;			/* acquired, renewer running */
	bool running;			/* the renewer's thread exists */
	bool lost;			/* another holder took it (atomic) */
	bool fenced;			/* no confirmed renewal (atomic) */
	uint64_t renewed_ms;		/* last confirmed, monotonic (atomic) */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_mutex_t follow_mu;	/* fenced writes following a cut */
	pthread_cond_t cv;
	bool stopping;
};

enum bft_lease_state {
	BFT_LEASE_NONE,			/* no lease taken */
	BFT_LEASE_HELD,
	BFT_LEASE_FENCED,		/* not confirmed for a period */
	BFT_LEASE_LOST,			/* another holder replaced our claim */
};

/*
 * What a waiter saw of a claim it waits out (lease_watch.c): the newest
 * timestamp read and the nonces of the claims read.
 */
#define LEASE_WATCH_NONCES	8
struct bft_lease_watch {
	struct bft_ts newest;
	uint8_t nonce[LEASE_WATCH_NONCES][16];
	unsigned nonces;
};
/* The first reading, ts and its claim c (valid: it decodes as one). */
void bftblk__lease_watch_start(struct bft_lease_watch *w,
    const struct bft_ts *ts, const struct bft_lease_claim *c, bool valid);
/*
 * Whether a later reading shows a live holder: newer than any seen, and
 * a claim seen before (a renewal) or of a newer generation (taken over,
 * re-asserted).  Rival claims of one generation that a split register
 * returns in turn, and readings older than one seen, do not.
 */
bool bftblk__lease_watch_alive(struct bft_lease_watch *w,
    const struct bft_ts *ts, const struct bft_lease_claim *c, bool valid);

/*
 * Takes volume vol's lease for this handle (name: its key's), waiting a
 * period when another holds it, under a new generation that eng's and
 * data_eng's (if not NULL) writes carry from then on.  With guard_ms,
 * reads its claim again that long after taking it, so that a rival
 * whose claim write was in flight cannot hold it too (set it to the I/O
 * timeout).  0, or -1 with the error recorded (EBUSY naming the live
 * holder).
 */
int bftblk__lease_acquire(struct bft_lease *l, struct bft_engine *eng,
    struct bft_engine *data_eng, uint32_t vol, unsigned period_s,
    unsigned guard_ms, const char *name);

/* What bftblk__lease_probe found of a volume's lease. */
struct bft_lease_info {
	struct bft_ts ts;		/* the newest claim's: its generation */
	bool claimed;			/* claim holds one (else zero) */
	struct bft_lease_claim claim;
	bool live;			/* renewed while watched (probe) */
};
/*
 * Whether a live holder has volume vol's lease: 1, 0, or -1 with the
 * error recorded; *info says what the register holds.  A claim that is
 * not released is read again after a third of its period and a second:
 * a live holder renews in that time.
 */
int bftblk__lease_probe(struct bft_engine *eng, uint32_t vol,
    struct bft_lease_info *info);
/* One read of volume vol's lease register into *info.  0 or -1. */
int bftblk__lease_read(struct bft_engine *eng, uint32_t vol,
    struct bft_lease_info *info);
/*
 * The generation of volume vol's newest claim into *gen: what a
 * shared=on writer's writes carry.  0, or -1 with the error recorded.
 */
int bftblk__lease_read_gen(struct bft_engine *eng, uint32_t vol, uint64_t *gen);
/*
 * A holder whose write, sent under generation sent, was fenced: when the
 * register holds its own claim under a newer generation (a snapshot
 * re-asserted it), takes that generation and returns 1, so that the
 * write is sent again, also when another write or the renewer took it
 * first; 0 when not (fenced for real, or no lease); -1 with the error
 * recorded when the register cannot be read.  Any thread may call it.
 */
int bftblk__lease_follow(struct bft_lease *l, uint64_t sent);
/*
 * One look at the register for a holder whose write of generation sent
 * was fenced, read into buf (a block): the decision bftblk__lease_follow
 * and the renewer's own follow (lease.c) both wait on.  *c and *valid
 * are what was read.
 */
enum bft_follow {
	BFT_FOLLOW_TAKEN,		/* ours under a newer generation: taken */
	BFT_FOLLOW_WAIT,		/* ours still under sent: look again */
	BFT_FOLLOW_OTHER,		/* another's claim: the fence stands */
	BFT_FOLLOW_FAILED,		/* not read; the error is recorded */
};
enum bft_follow bftblk__lease_follow_look(struct bft_lease *l, uint8_t *buf,
    uint64_t sent, struct bft_lease_claim *c, bool *valid);
/*
 * A snapshot's cut (docs/snapshots.md): writes volume vol's lease
 * register back as it is under the next generation, and flushes it, so
 * that every write of generation g (the snapshot's boundary) is fenced
 * from then on while the holder keeps its claim.  eng's own generation
 * is kept.  0; 1, writing nothing, when the register's newest claim is
 * no longer of generation g (taken over meanwhile); or -1 with the
 * error recorded.
 */
int bftblk__lease_reassert(struct bft_engine *eng, uint32_t vol,
    uint64_t g);

/*
 * lease.c's, for lease_snap.c: the claim read into buf (a block), *ts
 * its write's timestamp, 0 or -1 recorded; whether a claim is this
 * lease's own; and taking a generation a snapshot re-asserted.
 */
int bftblk__lease_claim_read(struct bft_lease *l, uint8_t *buf,
    struct bft_lease_claim *c, bool *valid, struct bft_ts *ts);
bool bftblk__lease_ours(const struct bft_lease *l,
    const struct bft_lease_claim *c);
void bftblk__lease_adopt(struct bft_lease *l, uint64_t gen);
enum bft_lease_state bftblk__lease_state(const struct bft_lease *l);
/* Whether writes may go on: no lease taken, or held and confirmed. */
bool bftblk__lease_may_write(const struct bft_lease *l);
/* Since the last confirmed renewal, in ms; 0 without a lease. */
uint64_t bftblk__lease_renewed_age_ms(const struct bft_lease *l);
/*
 * Stops renewing and, unless lost, writes the claim released if it is
 * still ours.
 */
void bftblk__lease_release(struct bft_lease *l);

#endif
