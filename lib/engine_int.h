/*
 * The engine: one libuv event loop thread, shared by every thread of
 * the front end, holding one long-lived connection per server.
 *
 * Callers' threads prepare operations (erasure coding and hashing happen
 * there, spreading CPU work over the front end's threads), submit them,
 * and sleep until they finish.  The loop thread runs the rounds: each round
 * sends one request to every connected server and moves on as soon as
 * n-t useful replies are in, so a dead, slow or lying server never
 * holds up an I/O.
 */
#ifndef BFTBLK_ENGINE_INT_H
#define BFTBLK_ENGINE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "bftblk.h"
#include "config.h"
#include "ec.h"
#include "keys.h"
#include "predicates.h"
#include "promtext.h"
#include "proto.h"
#include "volcrypt.h"

enum op_kind { OP_READ, OP_WRITE, OP_FLUSH };

/* The round an operation is in; values are the request message types. */
enum op_phase {
	PH_CLOCK = 2, PH_STORE = 3, PH_COMPLETE = 4,
	PH_COLLECT = 5, PH_FILTER = 6, PH_REPAIR = 7, PH_FLUSH = 8,
};

/*
 * A set of operations one caller thread waits for together: a count the
 * loop takes down, and a futex on it rather than a mutex and condition
 * variable.  glibc's pthread_cond_wait takes its mutex back marked as
 * contended, so every op paid one more futex call to unlock it, and the
 * loop's broadcast woke the caller into a mutex the loop still held.
 * BATCH_SLEEPING tells the loop that a wake call is needed at all.
 */
#define BATCH_SLEEPING	0x80000000u

struct op_batch {
	uint32_t pending;	/* ops not yet done, | BATCH_SLEEPING */
};

/* Ops of the batch not yet done, without the sleeping bit. */
static inline uint32_t
bftblk__batch_left(uint32_t pending)
{
	return pending & ~BATCH_SLEEPING;
}

struct bft_engine;

struct op {
	/* Set by the submitter. */
	enum op_kind kind;
	uint64_t block;
	uint8_t *data;			/* BFT_BLOCK_SIZE: read into, or written */
	struct op_batch *batch;
	int err;			/* 0 or an errno, valid once done */
	/* Read of a snapshot's view at view_gen (the engine's, by op_new). */
	bool view;
	uint64_t view_gen;
	const char *why;		/* static text explaining err */

	/* Round state, owned by the loop thread. */
	struct bft_engine *cl;
	struct op *next;		/* submission queue */
	enum op_phase phase;
	uint32_t slot, gen;
	uint32_t sent, replied, ok;	/* bitmasks of servers */
	uint32_t failed;		/* replied with an error status */
	uint32_t fenced;		/* ... which was EFENCED */
	int fail_status;
	uint64_t deadline_ms;
	uint64_t give_up_ms;		/* the whole op's bound (io-timeout) */
	uint64_t start_ns;		/* uv_hrtime when first started, or 0 */
	unsigned restarts;

	/*
	 * encrypt=on: the sealed value (BFT_SEALED_LEN) that is erasure
	 * coded instead of data.  A write is sealed only once its
	 * timestamp is known, so the loop thread parks it after CLOCK (or
	 * the cache hit): it finishes with parked set, the submitter seals
	 * and encodes (bftblk__op_seal_write) and submits it again, and it
	 * resumes with STORE.
	 */
	uint8_t *value;
	bool parked, resume;

	/*
	 * Write whose value the submitter built from the block cache
	 * (blockcache_int.h) instead of a read: data is the cached value at
	 * base, patched.  It may only commit if base is still the block's
	 * newest completed timestamp; when the servers show a newer one,
	 * it finishes early with stale set and nothing committed, and the
	 * submitter reads the block and writes it again.
	 */
	bool based, stale;
	struct bft_ts base;
	bool committed;			/* COMPLETE reached n-t servers */
	bool partial;			/* data is a bounce buffer (plan_int.h) */

	/* Write: prepared by the submitter, ts and vec by CLOCK. */
	bool fast;			/* CLOCK skipped on a cached timestamp */
	bool zero_value;		/* no fragments: trim (predicates.h) */
	struct bft_ts ts;
	uint8_t nonce[BFT_NONCE_LEN], nh[BFT_HASH_LEN];
	uint8_t *frags[BFT_MAX_N];	/* one buffer, n * frag_len */

	/* Read: the candidate set C has nc entries (below). */
	unsigned nc;
	uint32_t unhashed;		/* replies whose fragment is not checked yet */
	uint32_t wrong_len;		/* replies with a fragment of another size */
	uint32_t unsigned_lc;		/* replies whose lc failed our MACs */
	uint64_t unsigned_gen;		/* ... under cl->keys_gen of then */
	struct bft_cand chosen;
	uint32_t quorum;
	bool zero;			/* C came out empty: the block reads as 0 */
	/*
	 * A clone's never-written block (zero still set, for its own
	 * register): data is what the parent snapshot holds (read.c).
	 */
	bool inherited;
	bool wrong_size;		/* failed: servers hold another length */

	/* Read, 1-round path (op_read_fast.c). */
	uint32_t want;			/* servers asked for their fragment */
	uint32_t fast_have;		/* fragments to decode from */
	uint32_t placed;		/* payloads already in the value */
	bool unchecked;			/* ... or were, maybe unchecked */
	bool fast_on;			/* the 1-round read may still succeed */
	bool fast_wait;			/* n-t replies in, fragments awaited */
	bool fast_done;			/* decided in one round */
	unsigned fast_pick;		/* ... by A[fast_pick]'s lc and cc */
	/*
	 * A read of bytes [range_off, range_off + range_len) of the block
	 * alone (range_len 0: all of it), set by the submitter.  part is the
	 * data fragment that holds them, when the 1-round read asks for that
	 * one only (op_read_fast.c), else -1; fast_done with part >= 0 means
	 * only those bytes of data hold the value.
	 */
	uint32_t range_off, range_len;
	int part;
	/*
	 * A part read asks its server for the fragment's chunks
	 * [slice_first, slice_first + slice_count) alone, with their proof
	 * (common/hashtree.h), when that server's hello said a level.
	 */
	bool slice;
	uint32_t slice_first, slice_count;

	/*
	 * The arrays, 32 KiB of the op, are last: bftblk__op_new zeroes only
	 * what comes before them, and each round sets the entries it reads
	 * (the first n, or nc for C) before reading them.
	 */
	uint8_t vec[BFT_MAX_N][BFT_MAC_LEN];
	uint8_t cc[BFT_MAX_N][BFT_HASH_LEN];
	struct bft_cand C[BFT_MAX_N];
	struct bft_reply W[BFT_MAX_N];	/* FILTER replies */
	struct bft_collect_reply A[BFT_MAX_N];	/* COLLECT replies */
};

/* Where a read decodes to: the block, or with encryption the sealed value. */
static inline uint8_t *
read_value(struct op *op)
{
	return op->value != NULL ? op->value : op->data;
}

/* What the engine saw of one server; see struct bftblk_server_stats. */
/*
 * The misdeeds counted per server, in the order the evidence log and
 * the stats file (stats_file.c) give them.
 */
enum {
	EV_BAD_FRAGMENTS, EV_FORGED_TS, EV_MISMATCHED, EV_ERROR_REPLIES,
	EV_TIMEOUTS, EV_KINDS
};
#define EVIDENCE_MS	10000	/* between reports of servers' misdeeds */

struct engine_server_stats {
	atomic_bool connected;
	atomic_ullong connects, disconnects;
	atomic_ullong replies, error_replies, timeouts, mismatched;
	atomic_ullong forged_ts, bad_fragments;
};

struct bft_engine_stats {
	atomic_ullong reads, writes, flushes;
	atomic_ullong read_restarts, repairs, forged_ts;
	atomic_ullong timeouts, reconnects;
	atomic_ullong fast_writes, fast_fallbacks;
	atomic_ullong fast_reads, fast_read_fallbacks;
	atomic_ullong part_reads;	/* fast_reads of one fragment */
	atomic_ullong slice_reads;	/* ... of only its chunks asked for */
	/* Partial writes: value from the block cache, a read, or stale. */
	atomic_ullong cache_hits, cache_misses, cache_stale;
	/* Small writes that went out in another request's block write. */
	atomic_ullong coalesced;
	struct engine_server_stats server[BFT_MAX_N];
	/* Op latencies by kind (read, write, flush), for metrics.c. */
	struct bft_prom_hist op_ns[3];
};

struct bft_engine_params {
	/*
	 * The loop thread updates servers[] and server_pk[] in it when
	 * config_path changes (a replaced server); the rest never changes.
	 */
	struct bft_config *cfg;
	const char *config_path;	/* NULL: not watched */
	/*
	 * The engine signs and checks under its own copy of key's MAC
	 * keys, taken anew from key_path when that changes (NULL: not
	 * watched): a MAC key rotation (engine_keys.c).
	 */
	const struct bft_client_key *key;
	const char *key_path;
	struct bft_ec *ec;		/* for values of BFT_SEALED_LEN with vc */
	const struct bft_volcrypt *vc;	/* NULL unless encrypt=on */
	unsigned timeout_ms;		/* per round */
	unsigned io_timeout_ms;		/* per op, restarts included */
	bool senders;			/* a sender thread per server (conn_tx.c) */
	uint64_t writer_id;
	uint32_t volume_id;		/* ops' blocks are its addresses */
	const char *stats_path;		/* stats-file=; NULL: none */
	const char *metrics_addr;	/* metrics=; NULL: none */
	uint32_t skip;			/* servers never to connect to */
	/*
	 * A snapshot's engine: every read is of the volume's view at
	 * boundary view_gen (docs/snapshots.md); nothing is written.
	 */
	bool view;
	uint64_t view_gen;
	/*
	 * A clone's, or a snapshot of one's: the engine of the snapshot
	 * its never-written blocks read from (a view engine, which may
	 * have a parent of its own), or NULL.  Never written through.
	 */
	struct bft_engine *parent;
	/*
	 * Where the counters also go, or NULL: the statistics of the handle
	 * this one was opened from (bftblk_open_volume), so that a front
	 * end serving several volumes reports them all in one place.
	 */
	struct bft_engine_stats *agg;
	bftblk_log_fn *log;		/* never NULL */
	void *log_opaque;
};

/* Counts n in cl's statistics (field names a counter) and in p.agg's. */
#define STAT_ADD(cl, field, n) do {					\
	atomic_fetch_add(&(cl)->stats.field, (n));			\
	if ((cl)->p.agg != NULL)					\
		atomic_fetch_add(&(cl)->p.agg->field, (n));		\
} while (0)

/*
 * The lease generation the engine's writes carry from now on (proto.h),
 * and what it is.  Any thread.
 */
void bftblk__engine_set_gen(struct bft_engine *cl, uint64_t gen);
uint64_t bftblk__engine_gen(const struct bft_engine *cl);
/* The lease the engine's metrics report, or NULL.  Any thread. */
struct bft_lease;
void bftblk__engine_set_lease(struct bft_engine *cl, const struct bft_lease *l);

/* The write path's shared state, one per engine (write.c). */
struct block_locks;
struct coalesce;
struct block_locks *bftblk__engine_locks(struct bft_engine *cl);
struct coalesce *bftblk__engine_coalesce(struct bft_engine *cl);

/* The address of block b of the engine's volume (proto.h). */
uint64_t bftblk__engine_addr(const struct bft_engine *cl, uint64_t b);
/* p.parent: the engine a clone's never-written blocks read through. */
struct bft_engine *bftblk__engine_parent(const struct bft_engine *cl);

/* Starts the loop thread and begins connecting; NULL on failure. */
struct bft_engine *bftblk__engine_start(const struct bft_engine_params *p);
void bftblk__engine_stop(struct bft_engine *cl);
const struct bft_engine_stats *bftblk__engine_stats(struct bft_engine *cl);
/* Counts partial writes that found their block in the cache, or not. */
void bftblk__engine_note_cache(struct bft_engine *cl, unsigned hits,
    unsigned misses);
void bftblk__engine_note_coalesced(struct bft_engine *cl, unsigned n);

/* Allocates an op's fragment buffers; NULL on ENOMEM. */
struct op *bftblk__op_new(struct bft_engine *cl, enum op_kind kind);
/* The request type op's round sends: a view read's are VCOLLECT... */
uint8_t bftblk__op_wire_type(const struct op *op);
void bftblk__op_free(struct op *op);

/*
 * Prepares a write of op->data on the calling thread: erasure coding,
 * cross-checksum, nonce.  With encryption only the nonce: the rest
 * waits for the timestamp.  0 or -1.
 */
int bftblk__op_prepare_write(struct op *op);
/*
 * For a write that finished parked: seals op->data under its timestamp,
 * erasure-codes and hashes the sealed value, and sets it up to resume
 * when submitted again.  0 or -1.
 */
int bftblk__op_seal_write(struct op *op);
/*
 * The timestamp of the value a finished read returned (zero for a
 * never-written block).
 */
void bftblk__op_read_ts(const struct op *op, struct bft_ts *ts);
/* Whether a read returned only its range's bytes (op->part). */
bool bftblk__op_read_part(const struct op *op);
/*
 * The cross-checksum t+1 servers agreed on for the value a finished
 * read returned, which its fragments matched; NULL for a never-written
 * block.
 */
const uint8_t (*bftblk__op_read_cc(const struct op *op))[BFT_HASH_LEN];
/*
 * After a read finished: decodes the chosen value into op->data, and
 * with encryption opens it.  0, or -1 with the reason in op->why (then
 * op->data holds no unauthenticated byte).
 */
int bftblk__op_finish_read(struct op *op);

/*
 * Runs up to BFT_RUN_MAX ops to completion from a caller's thread,
 * sealing encrypted writes when they park.  0, or -1 with the first
 * failure recorded (error_int.h) and logged with its block; each op's
 * own outcome is in its err and why.
 */
#define BFT_RUN_MAX 64
int bftblk__engine_run(struct bft_engine *cl, struct op **ops, unsigned nops);

/* Queues ops to the loop thread; each one's batch is signalled when done. */
void bftblk__engine_submit(struct bft_engine *cl, struct op **ops,
    unsigned nops);
void bftblk__batch_init(struct op_batch *b, unsigned pending);
void bftblk__batch_wait(struct op_batch *b);
void bftblk__batch_done(struct op_batch *b);

/* The engine of a connected handle, or NULL (bftblk.c). */
struct bft_engine *bftblk__engine(struct bftblk *h);
/* Records err and why for h's caller and returns -err (bftblk.c). */
int bftblk__handle_fail(const struct bftblk *h, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A line for the front end's log, from any thread. */
void bftblk__eng_log(struct bft_engine *cl, enum bftblk_log_level level,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
