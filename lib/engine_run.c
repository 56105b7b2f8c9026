/*
 * The engine as its callers' threads see it: ops submitted to the loop
 * and waited for (sealing encrypted writes that park on the way), and
 * what the write path and the lease set on or read from an engine.
 * The loop's own side is engine.c.
 */
#include <errno.h>
#include <string.h>

#include <uv.h>

#include "conn_int.h"
#include "error_int.h"

void
bftblk__engine_set_gen(struct bft_engine *cl, uint64_t gen)
{
	__atomic_store_n(&cl->lease_gen, gen, __ATOMIC_RELEASE);
}

uint64_t
bftblk__engine_gen(const struct bft_engine *cl)
{
	return __atomic_load_n(&cl->lease_gen, __ATOMIC_ACQUIRE);
}

struct block_locks *
bftblk__engine_locks(struct bft_engine *cl)
{
	return &cl->locks;
}

struct coalesce *
bftblk__engine_coalesce(struct bft_engine *cl)
{
	return &cl->co;
}

void
bftblk__engine_set_lease(struct bft_engine *cl, const struct bft_lease *l)
{
	__atomic_store_n(&cl->lease, l, __ATOMIC_RELEASE);
}

const struct bft_engine_stats *
bftblk__engine_stats(struct bft_engine *cl)
{
	return &cl->stats;
}

void
bftblk__engine_note_cache(struct bft_engine *cl, unsigned hits, unsigned misses)
{
	STAT_ADD(cl, cache_hits, hits);
	STAT_ADD(cl, cache_misses, misses);
}

void
bftblk__engine_note_coalesced(struct bft_engine *cl, unsigned n)
{
	STAT_ADD(cl, coalesced, n);
}

void
bftblk__engine_submit(struct bft_engine *cl, struct op **ops, unsigned nops)
{
	struct engine_loop *lp = cl->lp;

	pthread_mutex_lock(&lp->qlock);
	for (unsigned i = 0; i < nops; i++) {
		ops[i]->cl = cl;
		ops[i]->next = NULL;
		if (lp->qtail)
			lp->qtail->next = ops[i];
		else
			lp->qhead = ops[i];
		lp->qtail = ops[i];
	}
	pthread_mutex_unlock(&lp->qlock);
	uv_async_send(&lp->wake);
}

/* Submits ops and waits until each has finished or parked. */
static void
submit_wait(struct bft_engine *cl, struct op **ops, unsigned nops)
{
	struct op_batch batch;

	bftblk__batch_init(&batch, nops);
	for (unsigned i = 0; i < nops; i++)
		ops[i]->batch = &batch;
	bftblk__engine_submit(cl, ops, nops);
	bftblk__batch_wait(&batch);
}

/*
 * Encrypted writes come back parked once their timestamp is chosen:
 * they are sealed here, on the submitting caller's thread, and go on; a
 * write whose fast path fell back parks once more.
 */
int
bftblk__engine_run(struct bft_engine *cl, struct op **ops, unsigned nops)
{
	struct op *todo[BFT_RUN_MAX];
	unsigned ntodo = nops;
	int err = 0;

	if (nops > BFT_RUN_MAX)
		return bftblk__fail(EINVAL, "%u operations at once, at most %u",
		    nops, BFT_RUN_MAX);
	memcpy(todo, ops, nops * sizeof ops[0]);
	while (ntodo > 0) {
		unsigned nparked = 0;

		submit_wait(cl, todo, ntodo);
		for (unsigned i = 0; i < ntodo; i++) {
			struct op *op = todo[i];

			if (op->err && !err) {
				err = op->err;
				/*
				 * Fenced: the handle follows a snapshot's
				 * generation and sends it again (bftblk.c),
				 * or says why not.
				 */
				bftblk__eng_log(cl, err == ESTALE ?
				    BFTBLK_LOG_INFO : BFTBLK_LOG_ERROR, "block "
				    "%llu: %s", (unsigned long long)op->block,
				    op->why ? op->why : strerror(err));
				bftblk__fail(err, "block %llu: %s",
				    (unsigned long long)op->block,
				    op->why ? op->why : strerror(err));
			}
			if (!op->parked || err) {
				op->parked = false;
				continue;
			}
			if (bftblk__op_seal_write(op) != 0) {
				op->parked = false;
				bftblk__eng_log(cl, BFTBLK_LOG_ERROR, "block "
				    "%llu: erasure coding failed",
				    (unsigned long long)op->block);
				err = EIO;
				bftblk__fail(err, "block %llu: erasure coding "
				    "failed", (unsigned long long)op->block);
				continue;
			}
			todo[nparked++] = op;
		}
		ntodo = err ? 0 : nparked;
	}
	return err ? -1 : 0;
}
