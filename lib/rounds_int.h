/*
 * Round machinery shared by the read and write state machines; private
 * to the loop thread.  A round is one request type sent to every server
 * under one id; replies carrying an older id belong to a finished round
 * and are dropped, which is how a late or replayed reply is ignored.
 */
#ifndef BFTBLK_ROUNDS_INT_H
#define BFTBLK_ROUNDS_INT_H

#include "blocklock_int.h"
#include "coalesce_int.h"
#include "engine_int.h"
#include "wire.h"

/*
 * Per-block timestamps this writer last saw complete, direct-mapped: a
 * hit lets a write skip CLOCK (see op_write.c).  Loop thread only.
 */
#define TSCACHE_SIZE 4096

struct tscache_entry {
	uint64_t block;
	uint64_t num;
	bool valid;
};

struct bft_engine {
	struct bft_engine_params p;
	/*
	 * The MAC keys p.key points to: a copy of the handle's, which the
	 * loop thread changes when a rotation comes (engine_keys.c).
	 */
	struct bft_client_key key;
	/*
	 * Counts the MAC key sets taken from the key file: a reply that
	 * failed under an older set says nothing about the current one.
	 */
	uint64_t keys_gen;
	unsigned n, t;
	uint64_t writer_id;		/* loop thread only */
	/*
	 * The lease generation this engine's writes carry (proto.h), set
	 * by the lease's thread (lease.c) and read by the loop's: atomic.
	 */
	uint64_t lease_gen;
	/* The handle's lease, for metrics.c; NULL without one (atomic). */
	const struct bft_lease *lease;
	struct tscache_entry tscache[TSCACHE_SIZE];
	/*
	 * Until when (loop time, ms) the 1-round read asks another server
	 * for a fragment instead of server i, which failed to give a good
	 * one in time.  Loop thread only.
	 */
	uint64_t frag_avoid_until[BFT_MAX_N];
	/*
	 * Each server's reply time, a moving average in ns (0: none yet),
	 * from which the 1-round read picks whom to ask for fragments.
	 * Loop thread only.
	 */
	uint64_t lat_ns[BFT_MAX_N];
	struct bft_engine_stats stats;
	struct engine_loop *lp;		/* event loop internals (engine.c, conn_int.h) */
	/*
	 * The write path's (write.c): block range locks, and the queues of
	 * small writes in flight together.  Any thread.
	 */
	struct block_locks locks;
	struct coalesce co;
	/* Finished ops kept with their buffers for reuse (op_pool.c). */
	pthread_mutex_t pool_lock;
	struct op *pool;
	unsigned npool;
};

/* Frees the ops kept for reuse; at bftblk__engine_stop. */
void bftblk__op_pool_drain(struct bft_engine *cl);

/* Number of set bits. */
static inline unsigned
popcount32(uint32_t x)
{
	return (unsigned)__builtin_popcount(x);
}

/* Begins round ph: a new id, sent to every connected server. */
void bftblk__round_start(struct op *op, enum op_phase ph);
/* Finishes op with err (0 or errno) and wakes its submitter. */
void bftblk__op_done(struct op *op, int err, const char *why);
/*
 * Fails op with EIO because too few servers answered or agreed in time,
 * logging what: which servers were silent and which refused.
 */
void bftblk__op_fail_slow(struct op *op, const char *what);
/*
 * Records an error reply from server i.  Returns true when n-t good
 * replies can no longer arrive, after finishing op with a matching errno.
 */
bool bftblk__round_note_error(struct op *op, unsigned i, int status);

/* Remembers that block's register completed a write at num. */
void bftblk__tscache_note(struct bft_engine *cl, uint64_t block, uint64_t num);

/* Gives this writer a fresh random id (loop thread only). */
void bftblk__rotate_writer_id(struct bft_engine *cl);

/* Per-kind hooks, called by the round machinery. */
void bftblk__write_start(struct op *op);
void bftblk__write_build(struct op *op, unsigned i, struct bft_msg *m);
void bftblk__write_reply(struct op *op, unsigned i, const struct bft_msg *m);
void bftblk__read_start(struct op *op);
void bftblk__read_build(struct op *op, unsigned i, struct bft_msg *m);
void bftblk__read_reply(struct op *op, unsigned i, const struct bft_msg *m);
void bftblk__read_timeout(struct op *op);

/* The 1-round read (op_read_fast.c), driven by op_read.c. */
void bftblk__fast_read_start(struct op *op);
void bftblk__fast_read_note(struct op *op, unsigned i, const struct bft_msg *m);
/*
 * With n-t COLLECT replies in: true when the 1-round read finished op
 * or waits for more replies, false when FILTER must run.
 */
bool bftblk__fast_read_try(struct op *op);
/* The wait for fragments timed out: FILTER must run. */
void bftblk__fast_read_expired(struct op *op);

/*
 * More than t servers whose lc or timestamp for op's block did not
 * verify under the engine's MAC keys (op->unsigned_lc), so a correct
 * one among them holds what a writer signed under keys the engine
 * lacks (docs/key-epochs.md).  The key file is looked at now, out of
 * turn (engine_keys.c): false when the keys changed since those
 * replies were checked (by this look or by another op's meanwhile),
 * and the op starts over under them; true, logged, when they are out
 * of date, and the op fails with EPERM and BFTBLK__KEYS_WHY.
 * Loop thread.
 */
bool bftblk__engine_keys_stale(struct op *op);

/* Forgets which replies failed the MAC keys, as op starts a round over. */
static inline void
op_unsigned_clear(struct op *op)
{
	op->unsigned_lc = 0;
	op->unsigned_gen = op->cl->keys_gen;
}

#define BFTBLK__KEYS_WHY \
	"the servers hold values under MAC keys this client does not hold"

/* How this reader tells a candidate a writer made (predicates.h). */
static inline struct bft_written_key
eng_written_key(const struct bft_engine *cl)
{
	const struct bft_client_key *k = cl->p.key;
	struct bft_written_key w = { NULL, NULL, 0, NULL, NULL };

	if (k->role == BFT_ROLE_RW) {
		w.kw = k->kw;
		w.kw_alt = k->has_alt ? k->kw_alt : NULL;
	} else if (k->role == BFT_ROLE_PEER) {
		w.ki = k->k[k->self];
		w.ki_alt = k->has_alt ? k->k_alt[k->self] : NULL;
		w.self = k->self;
	}
	return w;
}

#endif
