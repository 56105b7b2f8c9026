/*
 * A snapshot's side of the lease (docs/snapshots.md): the cut, which
 * writes a volume's lease register back as it is under the next
 * generation, and the holder following it, whose writes the cut
 * fenced.  The claim's format and the renewer are lease.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error_int.h"
#include "lease_int.h"
#include "predicates.h"
#include "write_int.h"

/* The register's bytes into l->buf, as they are; 0 or -1. */
static int
read_raw(struct bft_lease *l, struct bft_ts *ts)
{
	struct bft_lease_claim c;
	bool valid;

	if (bftblk__lease_claim_read(l, l->buf, &c, &valid, ts) != 0)
		return -1;
	/* Never written, or sealed by an old encrypted handle: nothing. */
	if (bft_ts_is_zero(ts))
		memset(l->buf, 0, BFT_BLOCK_SIZE);
	return 0;
}

/* l->buf written back to the register, under the engine's generation. */
static int
write_raw(struct bft_lease *l)
{
	struct op *op = bftblk__op_new(l->eng, OP_WRITE);
	int r = -1;

	if (op == NULL)
		return bftblk__fail(ENOMEM, NULL);
	op->block = l->addr;
	op->data = l->buf;
	if (bftblk__op_prepare_write(op) != 0)
		bftblk__fail(EIO, "erasure coding the lease failed");
	else if (bftblk__engine_run(l->eng, &op, 1) == 0)
		r = 0;
	bftblk__op_free(op);
	return r;
}

enum bft_follow
bftblk__lease_follow_look(struct bft_lease *l, uint8_t *buf, uint64_t sent,
    struct bft_lease_claim *c, bool *valid)
{
	struct bft_ts ts;

	/* Another fenced write, or the renewer, took it meanwhile. */
	if (bftblk__engine_gen(l->eng) > sent)
		return BFT_FOLLOW_TAKEN;
	if (bftblk__lease_claim_read(l, buf, c, valid, &ts) != 0)
		return BFT_FOLLOW_FAILED;
	if (!*valid || !bftblk__lease_ours(l, c))
		return BFT_FOLLOW_OTHER;
	if (bft_ts_gen(&ts) <= sent)
		return BFT_FOLLOW_WAIT;
	if (bft_ts_gen(&ts) > bftblk__engine_gen(l->eng))
		bftblk__lease_adopt(l, bft_ts_gen(&ts));
	return BFT_FOLLOW_TAKEN;
}

int
bftblk__lease_follow(struct bft_lease *l, uint64_t sent)
{
	enum bft_follow f = BFT_FOLLOW_WAIT;
	struct bft_lease_claim c;
	uint8_t *buf = NULL;
	bool valid;
	int r = 0;

	if (!l->held || __atomic_load_n(&l->lost, __ATOMIC_ACQUIRE))
		return 0;
	/*
	 * Every write a cut fenced comes here at once: one reads the
	 * register, the others find its generation taken when their turn
	 * comes.  The renewer reads into the lease's buffer; this, its own.
	 */
	pthread_mutex_lock(&l->follow_mu);
	if ((buf = malloc(BFT_BLOCK_SIZE)) == NULL) {
		r = bftblk__fail(ENOMEM, NULL);
		goto out;
	}
	/*
	 * Servers fence on the new claim's STORE; a read returns it only
	 * once its COMPLETE is in.  A write refused between the two finds
	 * the old claim still: it looks again a few times, a second at
	 * most, before it takes the fence as standing.  Another's claim:
	 * the fence stands, and the lease is lost.
	 */
	for (unsigned wait_ms = 5; wait_ms <= 640; wait_ms *= 2) {
		f = bftblk__lease_follow_look(l, buf, sent, &c, &valid);
		if (f != BFT_FOLLOW_WAIT)
			break;
		usleep(wait_ms * 1000);
	}
	r = f == BFT_FOLLOW_TAKEN ? 1 : f == BFT_FOLLOW_FAILED ? -1 : 0;
out:
	pthread_mutex_unlock(&l->follow_mu);
	free(buf);
	return r;
}

int
bftblk__lease_reassert(struct bft_engine *eng, uint32_t vol, uint64_t g)
{
	struct bft_lease l;
	struct bft_ts ts;
	uint64_t gen, mine;
	int r = -1;

	memset(&l, 0, sizeof l);
	l.eng = eng;
	l.vol = vol;
	l.addr = bft_addr(BFT_LEASE_VOL, vol);
	l.buf = malloc(BFT_BLOCK_SIZE);
	if (l.buf == NULL) {
		bftblk__fail(ENOMEM, NULL);
		goto out;
	}
	/*
	 * The register's bytes are written back as they are: the holder's
	 * claim, its nonce and counter unchanged, so that the holder knows
	 * it as its own; a released or never written one stays so.
	 */
	if (read_raw(&l, &ts) != 0)
		goto out;
	if (bft_snap_boundary(&ts) != g) {
		r = 1;
		goto out;
	}
	if ((gen = bft_next_gen(&ts)) == 0) {
		bftblk__fail(EOVERFLOW, "volume %" PRIu32 "'s lease has used "
		    "up its generations", vol);
		goto out;
	}
	/* The engine's own generation (the admin lock's) comes back after. */
	mine = bftblk__engine_gen(eng);
	bftblk__engine_set_gen(eng, gen);
	/* Flushed: the n-t servers that fence generation *was stay so. */
	r = write_raw(&l) == 0 && bftblk__io_flush(eng) == 0 ? 0 : -1;
	bftblk__engine_set_gen(eng, mine);
out:
	free(l.buf);
	return r;
}
