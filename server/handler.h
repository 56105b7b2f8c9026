/*
 * The protocol logic of one server (Dobre et al., Algorithm 5): one
 * decoded request in, one reply out.  It knows nothing of sockets, so
 * the unit tests drive it directly against a real store.
 */
#ifndef BFTBLK_HANDLER_H
#define BFTBLK_HANDLER_H

#include <stdatomic.h>
#include <stdint.h>

#include "config.h"
#include "hashtree.h"
#include "heal.h"
#include "keys.h"
#include "proto.h"
#include "wire.h"
#include "store/store.h"

#define BFT_DEFAULT_MAX_PENDING 8

struct bft_census_progress;

struct bft_handler_stats {
	uint64_t requests[BFT_MSG_TYPE_MAX + 1];	/* by request type */
	uint64_t eauth;			/* STORE, COMPLETE, DROP: bad MAC */
	uint64_t relabelled;		/* records REAUTH gave new MACs */
	uint64_t ebusy;			/* STOREs refused by the pending cap */
	uint64_t estale;
	uint64_t superseded;		/* STOREs acked without storing */
	uint64_t fenced;		/* STOREs, COMPLETEs of an old lease holder */
	uint64_t writebacks;		/* lc set by FILTER */
	uint64_t repairs;		/* lc set by REPAIR */
	uint64_t store_errors;		/* ENOSPC or EIO from the store */
	uint64_t hello_mismatch;
	uint64_t flush_unsynced;	/* FLUSHes of clients that cannot write */
	uint64_t lock_refused;		/* rival admin-lock claims not taken */
};

struct bft_handler {
	const struct bft_config *cfg;
	const struct bft_server_key *key;
	struct bft_store *st;
	unsigned max_pending;		/* STOREs above lc per writer and block */
	struct bft_handler_stats stats;
	uint8_t *fragbuf;		/* BFT_MAX_FRAG bytes for FILTER_ACK */
	/* A slice COLLECT_ACK's proof (common/hashtree.h). */
	uint8_t proofbuf[BFT_TREE_PROOF_MAX][BFT_HASH_LEN];
	/*
	 * A new data directory whose peers hold data it has not rebuilt
	 * yet (rebuild.h): it answers EAGAIN instead of "never written"
	 * when a reader asks about a block it holds nothing of.
	 */
	bool heal_lacking;
	/*
	 * A new data directory that has not caught up with its peers yet,
	 * lacking or not: see bft_handler_heal_holds.
	 */
	bool heal_fresh;
	/*
	 * The rebuild has not yet read the volume table's snapshots since
	 * the server started: see bft_handler_bounds_hold
	 * (docs/snapshots.md, "A server that was away").
	 */
	bool bounds_pending;
	/*
	 * Set while the rebuild runs its own STORE and COMPLETE of a value
	 * it read from its peers (rebuild_adopt.c): a value already
	 * completed, as a reader's write-back is, not a lease holder's new
	 * write, so lease fencing does not apply to it.  Never set for a
	 * request from the network.
	 */
	bool adopting;
	bool scrub_requested;		/* by a SCRUB, for scrub.c */
	/* SUMMARY_ACK's digests or LCLIST_ACK's entries (INFO_BUF_LEN). */
	uint8_t *infobuf;
	uint64_t started_ms;		/* CLOCK_MONOTONIC, for uptime */
	/* Rebuild and scrub progress for STATUS; NULL reports zeros. */
	const struct bft_heal_progress *heal;
	/* The MAC key census (keys_census.h) for STATUS; NULL: zeros. */
	const struct bft_census_progress *census;
	/*
	 * Reads and writes from the network (net.c counts them), which the
	 * rebuild thread watches to give way to them.
	 */
	atomic_ullong io_requests;
};

/*
 * Whether a client's COMPLETE or write-back of block must wait (EAGAIN)
 * because it would be this new data directory's first value of a block
 * of a volume with snapshots: moving lc past a boundary from "never
 * written" would freeze "never written" as the block's view there,
 * where the rebuild has yet to put the version its peers hold
 * (docs/snapshots.md, "A wiped server").
 */
bool bft_handler_heal_holds(const struct bft_handler *h, uint64_t block);

/*
 * Whether a client's COMPLETE of block under ts must wait (EAGAIN)
 * because the rebuild has not read the volume table's snapshots since
 * the server started (bounds_pending) and ts is of a generation newer
 * than any this server completed in the volume: completed, it would
 * make the store refuse the boundary of a snapshot taken while the
 * server was down.  Only a volume that has data here: a new one, or a
 * new directory, has no view to lose this way, and a writer that keeps
 * its lease across the restart writes under a generation the server
 * has, so neither waits (a restart of the whole cluster stays
 * writable).
 */
bool bft_handler_bounds_hold(const struct bft_handler *h, uint64_t block,
    const struct bft_ts *ts);

/*
 * A slice COLLECT's reply from rep, which holds a whole fragment frag of
 * rep->frag_len bytes: chunks [first, first + count) of it as rep's
 * frag, their proof in proof (common/hashtree.h); no chunks when they
 * are not all inside the fragment.
 */
void bft_handler_slice(const uint8_t *frag, uint32_t first, uint32_t count,
    uint8_t proof[][BFT_HASH_LEN], struct bft_msg *rep);

/*
 * Whether a COMPLETE or write-back under ts of block is a rival's
 * claim of an admin-lock generation another writer took first
 * (bft_lock_claim_refused); logged.  A COMPLETE is then
 * answered EFENCED; a write-back is not applied, and the read that
 * carried it goes on, so that no read of the lock can be stuck on two
 * half-written rival claims.  Never for the rebuild's adoptions.
 */
bool bft_handler_lock_taken(struct bft_handler *h, const char *peer,
    uint64_t block, const struct bft_ts *ts);

/* Sets up h over an open store; 0, or -1 when out of memory. */
int bft_handler_init(struct bft_handler *h, const struct bft_config *cfg,
    const struct bft_server_key *key, struct bft_store *st,
    unsigned max_pending);
void bft_handler_fini(struct bft_handler *h);

/*
 * Handles one request from peer (a name for log lines) and fills rep
 * (type | BFT_ACK, id, block, status and the type's fields).  rep->frag
 * may point to h->fragbuf, valid until the next call.  Returns 1 when
 * the connection must be closed once the reply is written (HELLO
 * mismatch), else 0.
 */
int bft_handle(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep);

/*
 * handler_info.c: SUMMARY, LCLIST and STATUS, for req->block < nblocks
 * (STATUS: block 0).  rep->digests and rep->entries point to h->infobuf.
 */
void bft_handle_info(struct bft_handler *h, const struct bft_msg *req,
    struct bft_msg *rep);
/* What the handler needs for them: 0, or -1 when out of memory. */
int bft_handler_info_init(struct bft_handler *h);

/*
 * handler_drop.c: DROP, a writer's request to forget a volume; synced
 * before the reply.
 */
void bft_handle_drop(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep);

/*
 * handler_read.c: COLLECT, FILTER and REPAIR, and their twins over a
 * snapshot's view (VCOLLECT, VFILTER, VREPAIR).
 */
void bft_handle_collect(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep);
void bft_handle_filter(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep);
void bft_handle_repair(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep);

/*
 * handler_snap.c: SNAP, a writer's request to keep or forget a volume's
 * view at a boundary; synced before the reply.
 */
void bft_handle_snap(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep);
/* VLIST: the blocks that changed between two boundaries, as known here. */
void bft_handle_vlist(struct bft_handler *h, const struct bft_msg *req,
    struct bft_msg *rep);
/*
 * SNAPSPACE (wire.h): the bytes this server keeps only for a snapshot's
 * boundary, a bounded piece of the volume's retained blocks at a time.
 */
/* REAUTH (wire.h): new MACs for a version this server stores. */
void bft_handle_reauth(struct bft_handler *h, const char *peer,
    const struct bft_msg *req, struct bft_msg *rep);
void bft_handle_snapspace(struct bft_handler *h, const struct bft_msg *req,
    struct bft_msg *rep);

/*
 * For the handler's files: a store error as a reply status, logged
 * (EGONE for a dropped volume is not logged); and a MAC vector's first
 * n entries copied with the rest zeroed.
 */
int bft_handler_store_status(struct bft_handler *h, const char *peer,
    const char *what, uint64_t block, int err);
void bft_handler_copy_vec(uint8_t dst[BFT_MAX_N][BFT_MAC_LEN],
    const uint8_t src[BFT_MAX_N][BFT_MAC_LEN], unsigned n);

/* Logs the counters through bft_debug (shown with -v). */
void bft_handler_log_stats(const struct bft_handler *h);

#endif
