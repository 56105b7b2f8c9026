/*
 * READ of one block (Algorithm 6): COLLECT, FILTER, and REPAIR only when
 * the selected candidate's MAC vector was corrupted.  COLLECT alone is
 * enough when its replies agree (the 1-round read, op_read_fast.c).
 */
#include <errno.h>
#include <string.h>


#include "crypto.h"
#include "predicates.h"
#include "rounds_int.h"
#include "volcrypt.h"

/*
 * A read restarts when servers report that the write it was reading was
 * overtaken and garbage-collected; a bound keeps a block under a storm
 * of writes from pinning a reader forever.
 */
#define MAX_RESTARTS 32

void
bftblk__read_start(struct op *op)
{
	op->nc = 0;
	op->zero = false;
	op->quorum = 0;
	op->unhashed = 0;
	op->wrong_len = 0;
	op_unsigned_clear(op);
	memset(op->W, 0, op->cl->n * sizeof op->W[0]);
	bftblk__fast_read_start(op);
	bftblk__round_start(op, PH_COLLECT);
}

void
bftblk__read_build(struct op *op, unsigned i, struct bft_msg *m)
{
	if (op->phase == PH_COLLECT) {
		m->want_frag = (op->want >> i) & 1;
		if (op->slice && (int)i == op->part) {
			m->slice = true;
			m->slice_first = op->slice_first;
			m->slice_count = op->slice_count;
		}
	} else if (op->phase == PH_FILTER) {
		memcpy(m->cands, op->C, op->nc * sizeof op->C[0]);
		m->ncands = op->nc;
	} else if (op->phase == PH_REPAIR) {
		m->cands[0] = op->chosen;
		m->ncands = 1;
	}
}

/*
 * A rebuilding server adopts a candidate only if its own MAC entry
 * verifies over (ts, H(N)).  A peer can send the genuine ts and vec of a
 * write with a nonce of its own, which every other check here accepts
 * (the value comes from the fragments); chosen, it would be refused at
 * adoption and the block retried one rebuild pass later, for as long as
 * the liar keeps winning the race.  Dropping it here (bft_cand_written()
 * with the peer's key) leaves the genuine candidate, which t+1 correct
 * servers also sent.
 */
static void
add_candidate(struct op *op, unsigned i, const struct bft_cand *c)
{
	struct bft_engine *cl = op->cl;
	struct bft_written_key wkey = eng_written_key(cl);

	if (bft_ts_is_zero(&c->ts))
		return;
	/*
	 * A writer holds k_W, so a timestamp no writer signed can be dropped
	 * at once instead of waiting for n-t servers to outvote it.  A
	 * read-only client has no k_W and relies on the outvoting, as the
	 * paper's readers do.
	 */
	if ((cl->p.key->role == BFT_ROLE_RW ||
	    cl->p.key->role == BFT_ROLE_PEER) &&
	    !bft_cand_written(c, op->block, &wkey)) {
		STAT_ADD(cl, forged_ts, 1);
		STAT_ADD(cl, server[i].forged_ts, 1);
		op->unsigned_lc |= 1u << i;
		return;
	}
	for (unsigned j = 0; j < op->nc; j++)
		if (memcmp(&op->C[j], c, sizeof *c) == 0)
			return;
	op->C[op->nc++] = *c;
}

static void
restart(struct op *op, const char *why)
{
	STAT_ADD(op->cl, read_restarts, 1);
	if (++op->restarts > MAX_RESTARTS) {
		bftblk__eng_log(op->cl, BFTBLK_LOG_ERROR, "block %llu: read "
		    "did not settle after %d attempts (%s)",
		    (unsigned long long)op->block, MAX_RESTARTS, why);
		bftblk__op_done(op, EIO, "read did not settle");
		return;
	}
	bftblk__read_start(op);
}

/* Selected and restorable: repair its MAC vector if a liar broke it. */
static void
selected(struct op *op, int h)
{
	unsigned n = op->cl->n, q = (unsigned)__builtin_ctz(op->quorum);

	op->chosen = op->C[h];
	bftblk__tscache_note(op->cl, op->block, op->chosen.ts.num);
	if (memcmp(op->chosen.vec, op->W[q].vec, (size_t)n * BFT_MAC_LEN)
	    == 0) {
		bftblk__op_done(op, 0, NULL);
		return;
	}
	memcpy(op->chosen.vec, op->W[q].vec, (size_t)n * BFT_MAC_LEN);
	STAT_ADD(op->cl, repairs, 1);
	bftblk__round_start(op, PH_REPAIR);
}

/*
 * Hashing a fragment is the largest cost of a read, and safe() needs only
 * t+1 verified ones: check fragments that claim ts one at a time until
 * the candidate is safe or none are left.  safe() only grows as more
 * fragments verify, so this decides exactly as hashing them all would.
 */
static bool
safe_lazily(struct op *op, const struct bft_ts *ts)
{
	struct bft_engine *cl = op->cl;
	uint32_t flen = bft_ec_frag_len(cl->p.ec);
	uint8_t h[BFT_HASH_LEN];

	while (!bft_safe(ts, op->W, cl->n, cl->t, &op->quorum)) {
		unsigned i;

		for (i = 0; i < cl->n; i++)
			if ((op->unhashed & (1u << i)) &&
			    bft_ts_cmp(&op->W[i].ts, ts) == 0)
				break;
		if (i == cl->n)
			return false;
		op->unhashed &= ~(1u << i);
		bft_hash(op->frags[i], flen, h);
		op->W[i].frag_ok = bft_equal(h, op->W[i].cc[i], BFT_HASH_LEN);
		if (!op->W[i].frag_ok)
			STAT_ADD(cl, server[i].bad_fragments, 1);
	}
	return true;
}

/*
 * t+1 servers whose lc does not verify under this reader's MAC keys
 * include a correct one, whose lc a writer made: under keys this reader
 * does not hold, a MAC key epoch its key file lacks
 * (docs/key-epochs.md).  Dropping them all would read the block as
 * never written, or as an older value; failing says what is wrong.
 * The key file may hold that epoch already, not looked at yet: then
 * the read starts again under the keys it holds.
 */
static bool
keys_out_of_date(struct op *op)
{
	if (popcount32(op->unsigned_lc) <= op->cl->t)
		return false;
	if (bftblk__engine_keys_stale(op))
		bftblk__op_done(op, EPERM, BFTBLK__KEYS_WHY);
	else
		restart(op, "MAC keys taken from the key file");
	return true;
}

/*
 * t+1 servers answering ts with fragments of another size include a
 * correct one, which stores what the writer sent: the value was coded
 * with another length (the other encrypt= setting), and this reader can
 * never decode it.  Failing now beats restarting until MAX_RESTARTS.
 */
static bool
wrong_size(const struct op *op, const struct bft_ts *ts)
{
	unsigned count = 0;

	for (unsigned i = 0; i < op->cl->n; i++)
		if ((op->wrong_len & (1u << i)) &&
		    bft_ts_cmp(&op->W[i].ts, ts) == 0)
			count++;
	return count >= op->cl->t + 1;
}

/* FILTER's wait condition (line 159), re-checked after every reply. */
static void
filter_check(struct op *op, bool all_in)
{
	struct bft_engine *cl = op->cl;
	unsigned n = cl->n, t = cl->t;
	int h;

	if (popcount32(op->ok) < n - t || keys_out_of_date(op))
		return;
	op->nc = bft_drop_invalid(op->C, op->nc, op->W, n, t);
	if (op->nc == 0) {
		op->zero = true;
		bftblk__op_done(op, 0, NULL);
		return;
	}
	h = bft_highest(op->C, op->nc);
	if (wrong_size(op, &op->C[h].ts)) {
		op->wrong_size = true;
		bftblk__op_done(op, EIO, "servers hold fragments of another "
		    "size for this block: it was written with encrypt=on and "
		    "is read with encrypt=off, or the reverse");
		return;
	}
	if (safe_lazily(op, &op->C[h].ts)) {
		selected(op, h);
		return;
	}
	/*
	 * t+1 servers answering with newer timestamps include a correct one
	 * that completed a newer write and dropped the entries we asked
	 * for; so does an exhausted set of replies.  Either way a fresh
	 * COLLECT will find the newer write.
	 */
	if (bft_count_newer(&op->C[h].ts, op->W, n) >= t + 1 || all_in)
		restart(op, "candidates overtaken by newer writes");
}

static void
filter_reply(struct op *op, unsigned i, const struct bft_msg *m)
{
	struct bft_engine *cl = op->cl;
	struct bft_reply *w = &op->W[i];
	uint32_t flen = bft_ec_frag_len(cl->p.ec);

	w->present = true;
	w->ts = m->ts;
	memcpy(w->cc, m->cc, sizeof w->cc);
	memcpy(w->vec, m->vec, sizeof w->vec);
	w->frag_ok = false;
	if (!bft_ts_is_zero(&m->ts) && m->frag_len == flen) {
		memcpy(op->frags[i], m->frag, flen);
		op->unhashed |= 1u << i;
	} else if (!bft_ts_is_zero(&m->ts) && m->frag_len != 0) {
		op->wrong_len |= 1u << i;
	} else if (!bft_ts_is_zero(&m->ts)) {
		/* The zero value's fragments are empty and hash to its cc. */
		w->frag_ok = bft_cc_is_zero(m->cc, cl->n);
	}
	op->ok |= 1u << i;
	filter_check(op, popcount32(op->replied) == cl->n);
}

/* COLLECT's wait condition, re-checked after every reply. */
static void
collect_check(struct op *op)
{
	struct bft_engine *cl = op->cl;

	if (popcount32(op->ok) < cl->n - cl->t || keys_out_of_date(op))
		return;
	/*
	 * No candidate among n-t answers: no write had completed when we
	 * began (its n-t would intersect ours in a correct server), so
	 * zeros are a linearizable answer.
	 */
	if (op->nc == 0) {
		op->zero = true;
		bftblk__op_done(op, 0, NULL);
		return;
	}
	if (!bftblk__fast_read_try(op))
		bftblk__round_start(op, PH_FILTER);
}

/*
 * Whether a reply to a snapshot read speaks of a version the view
 * cannot hold: one of a generation above the boundary, which the
 * writer's MACs put beyond any server's power to lower.  Such a reply is
 * a lie and counts as a failed one, so that no server passes the head's
 * data, or a later snapshot's, as this one's.
 */
static bool
beyond_view(const struct op *op, const struct bft_msg *m)
{
	if (!op->view || m->status != BFT_OK)
		return false;
	if (op->phase == PH_COLLECT)
		return m->ncands == 1 && !bft_view_admits(&m->cands[0].ts,
		    op->view_gen);
	if (op->phase == PH_FILTER)
		return !bft_view_admits(&m->ts, op->view_gen);
	return false;
}

void
bftblk__read_reply(struct op *op, unsigned i, const struct bft_msg *m)
{
	struct bft_engine *cl = op->cl;
	int status = m->status;

	if (beyond_view(op, m)) {
		STAT_ADD(cl, server[i].forged_ts, 1);
		status = BFT_EPROTO;
	}
	if (status != BFT_OK) {
		if (bftblk__round_note_error(op, i, status))
			return;
		if (op->phase == PH_FILTER)
			filter_check(op, popcount32(op->replied) == cl->n);
		else if (op->phase == PH_COLLECT)
			collect_check(op);
		return;
	}
	switch (op->phase) {
	case PH_COLLECT:
		op->ok |= 1u << i;
		if (m->ncands == 1)
			add_candidate(op, i, &m->cands[0]);
		bftblk__fast_read_note(op, i, m);
		collect_check(op);
		break;
	case PH_FILTER:
		filter_reply(op, i, m);
		break;
	case PH_REPAIR:
		op->ok |= 1u << i;
		if (popcount32(op->ok) >= cl->n - cl->t)
			bftblk__op_done(op, 0, NULL);
		break;
	default:
		break;
	}
}

void
bftblk__read_timeout(struct op *op)
{
	if (popcount32(op->ok) >= op->cl->n - op->cl->t) {
		restart(op, "no candidate became safe in time");
		return;
	}
	bftblk__op_fail_slow(op, "FILTER round timed out");
}

const uint8_t (*
bftblk__op_read_cc(const struct op *op))[BFT_HASH_LEN]
{
	if (op->zero)
		return NULL;
	if (op->fast_done)
		return (const uint8_t (*)[BFT_HASH_LEN])op->A[op->fast_pick].cc;
	return (const uint8_t (*)[BFT_HASH_LEN])
	    op->W[__builtin_ctz(op->quorum)].cc;
}

void
bftblk__op_read_ts(const struct op *op, struct bft_ts *ts)
{
	if (op->zero)
		memset(ts, 0, sizeof *ts);
	else
		*ts = op->chosen.ts;
}

bool
bftblk__op_read_part(const struct op *op)
{
	return !op->zero && op->fast_done && op->part >= 0 &&
	    !bft_cc_is_zero(bftblk__op_read_cc(op), op->cl->n);
}

int
bftblk__op_finish_read(struct op *op)
{
	struct bft_engine *cl = op->cl;
	uint32_t have = 0, placed = 0;
	unsigned q;

	/* Never written: zeros, with or without encryption. */
	if (op->zero) {
		memset(op->data, 0, BFT_BLOCK_SIZE);
		return 0;
	}
	/* The zero value (trimmed): t+1 servers agree there is nothing. */
	if (bft_cc_is_zero(bftblk__op_read_cc(op), cl->n)) {
		memset(op->data, 0, BFT_BLOCK_SIZE);
		return 0;
	}
	if (bftblk__op_read_part(op)) {
		/*
		 * Part of the block: the one data fragment that holds it,
		 * checked and placed where the value has those bytes; the
		 * rest of data is not the value and is not read.
		 */
		if ((op->fast_have & op->placed & (1u << op->part)) == 0) {
			op->why = "the part read's fragment is not in place";
			return -1;
		}
		return 0;
	}
	if (op->fast_done) {
		/* COLLECT's fragments, checked against the agreed cc. */
		have = op->fast_have;
		placed = op->placed;
	} else {
		/* RESTORE (lines 164-168): fragments matching the quorum's cc. */
		q = (unsigned)__builtin_ctz(op->quorum);
		for (unsigned i = 0; i < cl->n; i++) {
			const struct bft_reply *w = &op->W[i];

			if (w->present && w->frag_ok &&
			    bft_ts_cmp(&w->ts, &op->chosen.ts) == 0 &&
			    memcmp(w->cc, op->W[q].cc, sizeof w->cc) == 0)
				have |= 1u << i;
		}
	}
	if (bft_ec_decode_placed(cl->p.ec, op->frags, have, placed,
	    read_value(op)) != 0) {
		/* Unchecked placed payloads must not be left behind. */
		memset(read_value(op), 0, bft_ec_value_len(cl->p.ec));
		op->why = "cannot decode the selected value";
		return -1;
	}
	if (cl->p.vc == NULL)
		return 0;
	/*
	 * The fragments matched the cross-checksum t+1 servers agree on,
	 * so a failure here is not one liar: the wrong volume key, or more
	 * than t servers presenting another block's or an older write's
	 * ciphertext.  (A value written with encrypt=off has another size
	 * and was refused in FILTER.)
	 */
	if (bft_volcrypt_open(cl->p.vc, op->block, &op->chosen.ts, op->value,
	    op->data) != 0) {
		op->why = "the value does not authenticate under the volume "
		    "key (wrong volume-key, or data moved or rolled back by "
		    "more than t servers)";
		return -1;
	}
	return 0;
}
