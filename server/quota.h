/*
 * Per-client quotas: what a server keeps per client identity (a channel
 * public key listed in bftblk.conf as a client, or another server's key,
 * a peer): its role, how many connections it holds, and the STOREs it
 * has left waiting above lc.  The last is the per-client bound on what
 * one key holder can pin on this server's disk, next to the handler's
 * per-block bound (--max-pending).
 */
#ifndef BFTBLK_QUOTA_H
#define BFTBLK_QUOTA_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "proto.h"
#include "store/store.h"

#define BFT_DEFAULT_CLIENT_CONNS	16
#define BFT_DEFAULT_CLIENT_STORES	4096
#define BFT_DEFAULT_STORE_WINDOW_MS	(300u * 1000)

struct bft_pending_store {
	uint64_t block, num, wid;
	uint64_t at_ms;			/* when it was stored */
};

struct bft_client_quota {
	struct bft_client_quota *next;
	uint8_t pk[32];
	char name[BFT_NAME_LEN + 1];
	enum bft_role role;
	bool listed;			/* still in bftblk.conf */
	unsigned nconns;
	struct bft_pending_store *pend;
	unsigned npend, cap;
	uint64_t refused;		/* STOREs refused by the bound */
};

struct bft_quotas {
	const struct bft_config *cfg;
	unsigned self;			/* this server's index: not a peer */
	struct bft_client_quota *head;
	unsigned max_conns, max_stores;
	uint64_t window_ms;
};

/*
 * self is this server's index: the other servers' keys are let in as
 * peers ("server-J", role peer), its own is not.
 */
void bft_quota_init(struct bft_quotas *cs, const struct bft_config *cfg,
    unsigned self, unsigned max_conns, unsigned max_stores,
    uint64_t window_ms);
void bft_quota_fini(struct bft_quotas *cs);

/*
 * The state of the client with channel key pk, created on first use;
 * NULL when pk is neither listed in the configuration nor another
 * server's (or out of memory, which *oom tells).
 */
struct bft_client_quota *bft_quota_get(struct bft_quotas *cs,
    const uint8_t *pk, bool *oom);

/*
 * After the configuration's client list changed: refreshes roles and
 * marks clients no longer listed; frees states nobody uses.
 */
void bft_quota_reload(struct bft_quotas *cs);
/* A connection of cl closed: frees cl when it is unlisted and unused. */
void bft_quota_put(struct bft_quotas *cs, struct bft_client_quota *cl);

/*
 * Whether cl may leave one more STORE above lc.  Entries whose block's
 * lc has reached them, or older than the window (a writer that crashed
 * between STORE and COMPLETE), stop counting.
 */
bool bft_quota_admit_store(struct bft_quotas *cs,
    struct bft_client_quota *cl, struct bft_store *st, uint64_t now_ms);
/* Records a STORE the server accepted for cl. */
void bft_quota_note_store(struct bft_quotas *cs,
    struct bft_client_quota *cl, uint64_t block, const struct bft_ts *ts,
    uint64_t now_ms);

#endif
