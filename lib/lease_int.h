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
};

struct bft_lease {
	struct bft_engine *eng;
	uint32_t vol;
	uint64_t addr;			/* the register */
	uint64_t period_ms;
	uint8_t *buf, *wbuf;		/* a block each: reads, writes */
	struct bft_lease_claim mine;
	bool held;			/* acquired, renewer running */
	bool lost;			/* another holder took it (atomic) */
	uint64_t renewed_ms;		/* last renewal, monotonic (atomic) */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stopping;
};

/*
 * Takes volume vol's lease for this handle (name: its key's), waiting a
 * period when another holds it.  With guard_ms, reads its claim again
 * that long after taking it, so that a rival whose claim write was in
 * flight cannot hold it too (set it to the I/O timeout).  0, or -1 with
 * the error recorded (EBUSY naming the live holder).
 */
int bft_lease_acquire(struct bft_lease *l, struct bft_engine *eng,
    uint32_t vol, unsigned period_s, unsigned guard_ms, const char *name);
/*
 * Whether a live holder has volume vol's lease: 1 (holder filled in),
 * 0, or -1 with the error recorded.  A claim that is not released is
 * read again after a third of its period and a second: a live holder
 * renews in that time.
 */
int bft_lease_probe(struct bft_engine *eng, uint32_t vol, char *holder,
    size_t len);
/* Whether writes may go on: no lease taken, or renewed within a period. */
bool bft_lease_may_write(const struct bft_lease *l);
/* Stops renewing and, unless lost, writes the claim released. */
void bft_lease_release(struct bft_lease *l);

#endif
