/*
 * The 1-round READ: when n-t COLLECT replies carry the same completed
 * candidate, t+1 of them the same cross-checksum, and t+1 fragments of
 * it hash to that cross-checksum, the read returns it without FILTER.
 * Why that is linearizable is in common/predicates.c (bft_fast_read())
 * and the README; this file only feeds the predicate and acts on it.
 *
 * COLLECT asks k = t+1 servers for their fragment of lc: the k that
 * answer fastest, by the moving average of each server's reply times,
 * with the data servers 0..k-1 preferred unless one is slower than
 * another server by DATA_PREFERENCE_NS (their fragments decode by a
 * copy).  So a read moves one block, and a server slower than its peers
 * is not asked and not waited for: the read needs n-t replies, which
 * the t slowest need not be among.  The others send lc and cc only.
 * A server that turns slow while asked costs the reads of that moment
 * up to FRAG_WAIT_MS (its replies, late or not, raise its average); a
 * server asked for a fragment that fails to give a good one in time, or
 * gives a bad one, is passed over for FRAG_AVOID_MS, so one bad or dead
 * server costs one fallback, not one per read.  Any disagreement falls
 * back to the FILTER round with the candidates COLLECT gathered.
 */
#include <string.h>


#include "conn_int.h"
#include "crypto.h"
#include "hashtree.h"

/*
 * After n-t replies that do not decide yet (fewer than k good fragments,
 * or fewer than n-t on one candidate: a replier lied, or missed the
 * latest write), how long to wait for the other replies.  The loop's
 * tick checks it, so the wait is between FRAG_WAIT_MS and FRAG_WAIT_MS +
 * TICK_MS; only such a replier together with a dead or slow server makes
 * it run out, and then FRAG_AVOID_MS keeps it from happening again at
 * once when the fault was a fragment.
 */
#define FRAG_WAIT_MS	20
#define FRAG_AVOID_MS	2000
/*
 * How much slower than another server a data server may answer and
 * still be asked first: decoding its fragment is a copy where a parity
 * fragment costs about 12 us.  The servers asked for fragments answer
 * later for that alone (the fragment's read, sealing and transfer), by
 * tenths of a millisecond on a loaded machine: with a smaller margin
 * reads swung between data and parity servers and nbdkit spent 8% more
 * CPU per MB (fio-jobs/bench, seq-read-64k).  A link 1 ms slower costs
 * less than waiting for it would.
 */
#define DATA_PREFERENCE_NS	1000000

/*
 * Part of a block that one data fragment holds: that server alone moves
 * and checks 1/k of what a whole read does.  It is asked alone when it
 * is up, not passed over, and no slower than the slowest server the
 * whole read would wait for (op->want) by more than a data server may
 * be: a server sending a fragment answers later for that alone, so a
 * margin over the fastest would turn part reads away from the very
 * servers they keep busy.  Sealed values authenticate only whole
 * (volcrypt.c).
 */
static void
part_choose(struct op *op, uint64_t now)
{
	struct bft_engine *cl = op->cl;
	struct engine_loop *lp = cl->lp;
	int d = bft_ec_data_frag(cl->p.ec, op->range_off, op->range_len);
	uint64_t slowest = 0;

	if (d < 0 || lp->conns[d].state != C_READY ||
	    cl->frag_avoid_until[d] > now)
		return;
	for (unsigned i = 0; i < cl->n; i++)
		if ((op->want & (1u << i)) && cl->lat_ns[i] > slowest)
			slowest = cl->lat_ns[i];
	if (cl->lat_ns[d] > slowest + DATA_PREFERENCE_NS)
		return;
	op->part = d;
	op->want = 1u << d;
	/*
	 * Only the chunks holding the bytes, from a server that serves
	 * slices (release 0.2.0 does not: its hello says no level).  A
	 * snapshot's reads (VCOLLECT) move whole fragments.
	 */
	op->slice = !op->view && lp->conns[d].chan.peer_level >= 1 &&
	    bft_tree_cover(bft_ec_frag_len(cl->p.ec),
	    bft_ec_frag_offset(cl->p.ec, op->range_off), op->range_len,
	    &op->slice_first, &op->slice_count) == 0;
}

void
bftblk__fast_read_start(struct op *op)
{
	struct bft_engine *cl = op->cl;
	struct engine_loop *lp = cl->lp;
	uint64_t now = uv_now(&lp->loop);
	unsigned k = cl->t + 1;

	memset(op->A, 0, cl->n * sizeof op->A[0]);
	op->fast_on = true;
	op->fast_wait = op->fast_done = false;
	op->fast_have = 0;
	op->placed = 0;
	op->part = -1;
	op->slice = false;
	/*
	 * The k fastest connected servers not passed over; failing that,
	 * connected ones, then any, as a server that comes back is sent its
	 * COLLECT then.
	 */
	op->want = 0;
	for (int pass = 0; pass < 3; pass++)
		while (popcount32(op->want) < k) {
			int best = -1;
			int64_t best_score = 0;

			for (unsigned i = 0; i < cl->n; i++) {
				int64_t score = (int64_t)cl->lat_ns[i] -
				    (i < k ? DATA_PREFERENCE_NS : 0);

				if ((op->want & (1u << i)) ||
				    (pass < 2 && lp->conns[i].state !=
				    C_READY) || (pass < 1 &&
				    cl->frag_avoid_until[i] > now))
					continue;
				if (best < 0 || score < best_score) {
					best = (int)i;
					best_score = score;
				}
			}
			if (best < 0)
				break;
			op->want |= 1u << best;
		}
	if (op->range_len > 0 && cl->p.vc == NULL)
		part_choose(op, now);
}

/*
 * A part read's slice: its root, from the chunks and the proof at the
 * place asked for, is what fast_read() compares with the agreed cc's
 * entry in place of the whole fragment's hash, so the bytes copied out
 * count only if they are the writer's (README, "Part reads of a
 * slice").  Only the range goes to the value.
 */
static void
note_slice(struct op *op, unsigned i, const struct bft_msg *m,
    struct bft_collect_reply *a)
{
	const struct bft_ec *ec = op->cl->p.ec;
	uint32_t flen = bft_ec_frag_len(ec);
	size_t at;

	if (!m->slice || m->frag_len != bft_tree_slice_len(flen,
	    op->slice_first, op->slice_count) || bft_tree_root(m->frag, flen,
	    op->slice_first, op->slice_count,
	    (const uint8_t (*)[BFT_HASH_LEN])m->proof, m->proof_cvs,
	    a->fh) != 0)
		return;
	at = bft_ec_frag_offset(ec, op->range_off) -
	    (size_t)op->slice_first * BFT_TREE_CHUNK;
	memcpy(read_value(op) + op->range_off, m->frag + at, op->range_len);
	op->placed |= 1u << i;
	op->unchecked = true;
	a->has_frag = true;
}

void
bftblk__fast_read_note(struct op *op, unsigned i, const struct bft_msg *m)
{
	struct bft_collect_reply *a = &op->A[i];
	uint32_t flen = bft_ec_frag_len(op->cl->p.ec);

	a->present = true;
	if (m->ncands == 1)
		a->lc = m->cands[0];
	a->has_cc = m->has_cc;
	if (m->has_cc)
		memcpy(a->cc, m->cc, op->cl->n * sizeof a->cc[0]);
	a->has_frag = false;
	if (!op->fast_on || !m->has_cc || !(op->want & (1u << i)))
		return;
	if (op->slice) {
		note_slice(op, i, m, a);
		return;
	}
	if (m->frag_len != flen)
		return;
	/*
	 * The reply buffer is reused, so the fragment is copied out: a data
	 * fragment's payload straight to its place in the value, which
	 * saves decoding a copy.  What is hashed is what was copied.
	 */
	bft_hash(m->frag, flen, a->fh);
	if (bft_ec_place(op->cl->p.ec, i, m->frag, op->frags[i],
	    read_value(op)) == 0) {
		op->placed |= 1u << i;
		op->unchecked = true;
	} else if (op->part >= 0) {
		/* Unplaced, a part read's one fragment serves nothing. */
		return;
	} else {
		memcpy(op->frags[i], m->frag, flen);
	}
	a->has_frag = true;
}

/* Servers in bad are passed over for fragments for a while. */
static void
avoid(struct op *op, uint32_t bad)
{
	struct bft_engine *cl = op->cl;
	uint64_t until = uv_now(&cl->lp->loop) + FRAG_AVOID_MS;

	for (unsigned i = 0; i < cl->n; i++)
		if (bad & (1u << i))
			cl->frag_avoid_until[i] = until;
}

static void
give_up(struct op *op)
{
	STAT_ADD(op->cl, fast_read_fallbacks, 1);
	op->fast_on = op->fast_wait = false;
}

bool
bftblk__fast_read_try(struct op *op)
{
	struct bft_engine *cl = op->cl;
	uint32_t all = (1u << cl->n) - 1, pending = all & ~op->replied;
	struct bft_written_key wkey;
	uint32_t have;
	int pick;

	if (!op->fast_on)
		return false;
	/*
	 * A server without a connection will not answer in the short wait:
	 * counting it as pending would make every read wait out
	 * FRAG_WAIT_MS for it while it is down.
	 */
	for (unsigned i = 0; i < cl->n; i++)
		if (cl->lp->conns[i].state != C_READY)
			pending &= ~(1u << i);
	wkey = eng_written_key(cl);
	switch (op->part >= 0 ? bft_fast_read_part(op->A, cl->n, cl->t,
	    pending, op->want, op->block, &wkey, (unsigned)op->part, &pick,
	    &have) : bft_fast_read(op->A, cl->n, cl->t, pending, op->want,
	    op->block, &wkey, &pick, &have)) {
	case BFT_FAST_YES:
		STAT_ADD(cl, fast_reads, 1);
		if (op->part >= 0)
			STAT_ADD(cl, part_reads, 1);
		if (op->slice)
			STAT_ADD(cl, slice_reads, 1);
		op->fast_wait = false;
		op->fast_done = true;
		op->fast_have = have;
		op->fast_pick = (unsigned)pick;
		op->chosen = op->A[pick].lc;
		bftblk__tscache_note(cl, op->block, op->chosen.ts.num);
		bftblk__op_done(op, 0, NULL);
		return true;
	case BFT_FAST_WAIT:
		if (!op->fast_wait) {
			op->fast_wait = true;
			op->deadline_ms = uv_now(&cl->lp->loop) + FRAG_WAIT_MS;
		}
		return true;
	case BFT_FAST_NO:
	default:
		/*
		 * With the candidate and its cc agreed, an asked server that
		 * answered without a good fragment of it is suspect.
		 */
		if (pick >= 0)
			avoid(op, op->want & ~pending & ~have);
		give_up(op);
		return false;
	}
}

void
bftblk__fast_read_expired(struct op *op)
{
	avoid(op, op->want & ~op->replied);
	give_up(op);
	bftblk__round_start(op, PH_FILTER);
}
