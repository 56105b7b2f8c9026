/*
 * WRITE of one block (Algorithm 4): CLOCK, STORE, COMPLETE.
 *
 * Common-case fast path: when this writer knows the block's last
 * completed timestamp, it skips CLOCK and stores under the next one.
 * Every STORE_ACK carries the server's lc.ts; if any of the n-t acks the
 * write proceeds on reports a genuine (k_W-signed) timestamp at least as
 * high, the write falls back to CLOCK with a fresh nonce.  That is as
 * safe as CLOCK: a write completed (or a value returned by a read and
 * written back) before this write began set lc at n-t (or t+1 correct)
 * servers, and any n-t acks include a correct one of them, which reports
 * it.  So a write that finishes the fast path has a timestamp above
 * every write and read that precede it.
 *
 * The heavy part, erasure coding and hashing the fragments, runs on the
 * submitting nbdkit thread in bftblk__op_prepare_write(); the rounds run on
 * the loop thread.
 *
 * With encrypt=on the block is sealed under its write's timestamp
 * (volcrypt.h), known only after CLOCK or the cache hit, on the loop
 * thread.  Sealing, coding and hashing there would put ~0.4 ms of CPU
 * per block on the one loop thread, so instead the write parks once its
 * timestamp is chosen: it finishes to its submitter, which seals and
 * codes on its own thread (bftblk__op_seal_write) and resubmits, and the
 * write resumes with STORE.  It costs one hand-off per batch, not a
 * round.  A fast-path fallback chooses a new timestamp, and so parks
 * again and is sealed anew: no ciphertext is ever sent under a
 * timestamp other than its own.
 *
 * A write built from the block cache (op->based) must, besides, not
 * commit over a write newer than the cached value it patched: that
 * write's bytes outside the patch would be lost.  So it validates
 * op->base: after CLOCK, the highest genuine timestamp of n-t servers
 * must be base itself; on the fast path, no acknowledgement it
 * proceeds on may report a genuine lc.ts above base.  Either test sees
 * any write that completed before this one began (the argument above),
 * so passing it means the cached value was the register's value then,
 * just as a read would have returned it.  Failing it does not fall back
 * to CLOCK with the same data, which would commit the stale value under
 * a newer timestamp: the write finishes with op->stale and the
 * submitter reads the block and builds the value again (write.c).
 *
 * The zero value (trim, write-zeroes, a block of zeros) is a write like
 * any other, with empty fragments under the zero cross-checksum
 * (predicates.h): no coding, no sealing, nothing stored but metadata.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>


#include "crypto.h"
#include "predicates.h"
#include "rounds_int.h"
#include "volcrypt.h"

/* Erasure-codes value and computes the cross-checksum. */
static int
encode(struct op *op, const uint8_t *value)
{
	struct bft_engine *cl = op->cl;
	uint32_t flen = bft_ec_frag_len(cl->p.ec);

	if (bft_ec_encode(cl->p.ec, value, op->frags) != 0)
		return -1;
	for (unsigned i = 0; i < cl->n; i++)
		bft_hash(op->frags[i], flen, op->cc[i]);
	return 0;
}

int
bftblk__op_prepare_write(struct op *op)
{
	op->parked = op->resume = false;
	op->stale = op->committed = false;
	/* The nonce stays secret until COMPLETE: it is the proof of writing. */
	bft_random(op->nonce, BFT_NONCE_LEN);
	bft_hash(op->nonce, BFT_NONCE_LEN, op->nh);
	if (op->zero_value) {
		bft_cc_set_zero(op->cc, op->cl->n);
		return 0;
	}
	if (op->cl->p.vc != NULL)
		return 0;	/* sealed and coded once parked with its ts */
	return encode(op, op->data);
}

int
bftblk__op_seal_write(struct op *op)
{
	struct bft_engine *cl = op->cl;

	bft_volcrypt_seal(cl->p.vc, op->block, &op->ts, op->data, op->value);
	if (encode(op, op->value) != 0)
		return -1;
	op->parked = false;
	op->resume = true;
	return 0;
}

void
bftblk__tscache_note(struct bft_engine *cl, uint64_t block, uint64_t num)
{
	struct tscache_entry *e = &cl->tscache[block % TSCACHE_SIZE];

	/*
	 * Never back: a read that began before our own write completed may
	 * finish after it with the older value, and storing under the
	 * older num + 1 again would reuse our write's (num, wid) for other
	 * data, which servers refuse with ESTALE.
	 */
	if (e->valid && e->block == block && e->num >= num)
		return;
	e->block = block;
	e->num = num;
	e->valid = true;
}

static void clock_done(struct op *op);

/*
 * A write built from a cached value at op->base met a newer timestamp.
 * It finishes uncommitted (see the top of this file).  Once STOREs went
 * out, (num, wid) may name this value at some servers: a fresh writer
 * id keeps it from ever naming another, and the nonce, which
 * bftblk__op_prepare_write replaces, is never revealed, so those STOREs
 * never become a proof of writing.
 */
static void
write_stale(struct op *op, bool stored)
{
	struct bft_engine *cl = op->cl;

	STAT_ADD(cl, cache_stale, 1);
	if (stored) {
		cl->tscache[op->block % TSCACHE_SIZE].valid = false;
		bftblk__rotate_writer_id(cl);
	}
	op->stale = true;
	bftblk__op_done(op, 0, NULL);
}

void
bftblk__write_start(struct op *op)
{
	struct bft_engine *cl = op->cl;
	struct tscache_entry *e = &cl->tscache[op->block % TSCACHE_SIZE];

	if (op->resume) {		/* sealed under op->ts: go on */
		op->resume = false;
		bftblk__round_start(op, PH_STORE);
		return;
	}
	memset(&op->ts, 0, sizeof op->ts);
	op_unsigned_clear(op);
	op->fast = e->valid && e->block == op->block;
	/* A write newer than the cached value is known already. */
	if (op->based && op->fast && e->num > op->base.num) {
		write_stale(op, false);
		return;
	}
	if (!op->fast) {
		bftblk__round_start(op, PH_CLOCK);
		return;
	}
	STAT_ADD(cl, fast_writes, 1);
	/* Above base even if tscache lost track: ordered after it. */
	op->ts.num = op->based ? op->base.num : e->num;
	clock_done(op);
}

/*
 * A STORE_ACK of the fast path showed a newer write: start again with
 * CLOCK.  The nonce is fresh, since revealing this one later would make
 * the abandoned timestamp's MAC vector a proof of writing for STOREs
 * that may have reached too few servers; and so is the writer id, since
 * CLOCK may come back below the abandoned timestamp, and a late STORE of
 * it must never meet new data under the same (num, wid).
 */
static void
fast_fallback(struct op *op)
{
	struct bft_engine *cl = op->cl;

	STAT_ADD(cl, fast_fallbacks, 1);
	cl->tscache[op->block % TSCACHE_SIZE].valid = false;
	bftblk__rotate_writer_id(cl);
	op->fast = false;
	bft_random(op->nonce, BFT_NONCE_LEN);
	bft_hash(op->nonce, BFT_NONCE_LEN, op->nh);
	memset(&op->ts, 0, sizeof op->ts);
	op_unsigned_clear(op);
	bftblk__round_start(op, PH_CLOCK);
}

/*
 * Server i answered with a timestamp newer than this write's that its
 * MAC keys do not verify.  t liars may do that; t+1 servers include a
 * correct one, whose timestamp a writer signed under keys this one
 * lacks (a MAC key epoch its key file does not have yet,
 * docs/key-epochs.md).  Ignoring them, CLOCK would pick a timestamp
 * below a completed write, and a cache-built write would not see that
 * it was overtaken: a write that completes and is never read.  So the
 * key file is looked at again and the write starts over under the
 * keys it holds, or fails.  True when op is done or restarted.
 */
static bool
unsigned_newer(struct op *op, unsigned i)
{
	struct bft_engine *cl = op->cl;

	STAT_ADD(cl, forged_ts, 1);
	STAT_ADD(cl, server[i].forged_ts, 1);
	op->unsigned_lc |= 1u << i;
	if (popcount32(op->unsigned_lc) <= cl->t)
		return false;
	if (bftblk__engine_keys_stale(op))
		bftblk__op_done(op, EPERM, BFTBLK__KEYS_WHY);
	else if (op->based)
		write_stale(op, op->phase != PH_CLOCK);
	else
		fast_fallback(op);
	return true;
}

void
bftblk__write_build(struct op *op, unsigned i, struct bft_msg *m)
{
	unsigned n = op->cl->n;

	switch (op->phase) {
	case PH_STORE:
		m->ts = op->ts;
		memcpy(m->nh, op->nh, BFT_HASH_LEN);
		memcpy(m->vec, op->vec, (size_t)n * BFT_MAC_LEN);
		memcpy(m->cc, op->cc, (size_t)n * BFT_HASH_LEN);
		m->frag = op->frags[i];
		m->frag_len = op->zero_value ? 0 :
		    bft_ec_frag_len(op->cl->p.ec);
		break;
	case PH_COMPLETE:
		m->ts = op->ts;
		memcpy(m->nonce, op->nonce, BFT_NONCE_LEN);
		memcpy(m->vec, op->vec, (size_t)n * BFT_MAC_LEN);
		break;
	default:
		break;
	}
}

/* CLOCK is done: the next timestamp, and the MAC vector binding it to H(N). */
static void
clock_done(struct op *op)
{
	struct bft_engine *cl = op->cl;
	uint64_t gen = bftblk__engine_gen(cl), num;

	/*
	 * Never below the holder's generation: its writes order after an
	 * older holder's.  A genuine timestamp of a newer generation here
	 * means a newer holder wrote the block: this one is fenced.
	 */
	if ((num = bft_write_num(op->ts.num, gen)) == 0) {
		if (bft_ts_gen(&op->ts) > gen)
			bftblk__op_done(op, ESTALE,
			    bft_status_str(BFT_EFENCED));
		else
			bftblk__op_done(op, EIO, "the lease generation's "
			    "timestamps of this block are used up: open the "
			    "volume again");
		return;
	}
	op->ts.num = num;
	op->ts.wid = cl->writer_id;
	bft_ts_sign(&op->ts, op->block, cl->p.key->kw);
	for (unsigned i = 0; i < cl->n; i++)
		bft_vec_mac(&op->ts, op->block, op->nh, cl->p.key->k[i],
		    op->vec[i]);
	/* The zero value is not sealed: it has no bytes to hide. */
	if (cl->p.vc != NULL && !op->zero_value) {
		op->parked = true;
		bftblk__op_done(op, 0, NULL);
		return;
	}
	bftblk__round_start(op, PH_STORE);
}

void
bftblk__write_reply(struct op *op, unsigned i, const struct bft_msg *m)
{
	struct bft_engine *cl = op->cl;
	unsigned quorum = cl->n - cl->t;
	struct bft_mac_keys kw = bft_client_mac_keys(cl->p.key, BFT_MAX_N);

	if (m->status != BFT_OK) {
		/*
		 * ESTALE means (num, wid) was completed with other data by an
		 * earlier attempt of ours; EBUSY, that failed attempts of ours
		 * left too many STOREs pending on this block.  A fresh writer
		 * id makes every later timestamp new and starts its count at
		 * zero; a later completed write collects the leftovers.
		 */
		if (m->status == BFT_ESTALE || m->status == BFT_EBUSY)
			bftblk__rotate_writer_id(cl);
		bftblk__round_note_error(op, i, m->status);
		return;
	}
	/*
	 * A cache-built write must not pass a write newer than base, even
	 * one below its own timestamp: (base.num, a higher wid), say.
	 */
	if (op->fast && op->phase == PH_STORE &&
	    (bft_ts_cmp(&m->ts, &op->ts) >= 0 ||
	    (op->based && bft_ts_cmp(&m->ts, &op->base) > 0))) {
		if (bft_ts_check(&m->ts, op->block, &kw)) {
			if (op->based)
				write_stale(op, true);
			else
				fast_fallback(op);
			return;
		}
		if (unsigned_newer(op, i))
			return;
	}
	if (op->phase == PH_CLOCK && bft_ts_cmp(&m->ts, &op->ts) > 0) {
		/* Skip fabricated timestamps: they would let a liar exhaust num. */
		if (bft_ts_check(&m->ts, op->block, &kw))
			op->ts = m->ts;
		else if (unsigned_newer(op, i))
			return;
	}
	op->ok |= 1u << i;
	if (popcount32(op->ok) < quorum)
		return;
	switch (op->phase) {
	case PH_CLOCK:
		/* Below base cannot happen with t liars; refuse it too. */
		if (op->based && bft_ts_cmp(&op->ts, &op->base) != 0) {
			write_stale(op, false);
			break;
		}
		clock_done(op);
		break;
	case PH_STORE:
		bftblk__round_start(op, PH_COMPLETE);
		break;
	case PH_COMPLETE:
		op->committed = true;
		bftblk__tscache_note(cl, op->block, op->ts.num);
		bftblk__op_done(op, 0, NULL);
		break;
	default:
		break;
	}
}
