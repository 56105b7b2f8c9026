/*
 * The write path: pwrite, zero and trim.  Whole blocks are written as
 * they are.  A block the request covers only in part needs its current
 * value first (read-modify-write): from the block cache when it holds
 * the block, else from a read.  A write built from the cache carries
 * the cached timestamp and commits only if the servers show that no
 * newer write completed before it (op_write.c); otherwise it comes back
 * stale, and the block is read and written again here.  Range locks
 * keep this process's writes of the same block apart, so within the
 * process the cache is exact; other writers are what the validation is
 * for.  Small writes to one block in flight together are written as
 * one (coalesce_int.h).
 *
 * A write goes one way down: its plan (plan.c), the range lock, the
 * cache, the reads of what is missing (read.c), the patches applied,
 * the commit (the engine), the unlock.  Coalescing hands the leader its
 * batch and takes the result back; it never calls in here.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>


#include "blocklock_int.h"
#include "coalesce_int.h"
#include "bytes_int.h"
#include "error_int.h"
#include "plan_int.h"
#include "read_int.h"
#include "write_int.h"

/*
 * Prepares and runs the writes, then caches what committed (partial
 * blocks; whole ones only refresh an entry) and forgets every other
 * block: a write that failed may or may not have landed, and a stale
 * one showed that the cached value is old.
 */
static int
write_ops(struct bft_engine *cl, struct bft_blockcache *bc,
    struct op **ops, unsigned nops)
{
	int r = 0;

	for (unsigned i = 0; i < nops; i++) {
		ops[i]->kind = OP_WRITE;
		/*
		 * A block of zeros is stored as the zero value, which holds
		 * no fragment on servers.  With encryption only a zero or
		 * trim request's blocks are (plan.c): that servers learn
		 * which blocks were trimmed is inherent to freeing them, but
		 * which written blocks hold zeros is the volume's content.
		 * A partial block's bytes change between attempts.
		 */
		if (ops[i]->partial || !ops[i]->zero_value)
			ops[i]->zero_value = ops[i]->value == NULL &&
			    bftblk__block_zero(ops[i]->data);
		/* With encryption: sealed and coded in run_ops. */
		if (bftblk__op_prepare_write(ops[i]) != 0) {
			bftblk__eng_log(cl, BFTBLK_LOG_ERROR, "block %llu: "
			    "erasure coding failed",
			    (unsigned long long)ops[i]->block);
			return bftblk__fail(EIO, "block %llu: erasure coding "
			    "failed", (unsigned long long)ops[i]->block);
		}
	}
	r = bftblk__engine_run(cl, ops, nops);
	for (unsigned i = 0; i < nops; i++) {
		if (ops[i]->committed && ops[i]->partial)
			bftblk__bc_put(bc, ops[i]->block, &ops[i]->ts,
			    ops[i]->data);
		else if (ops[i]->committed)
			bftblk__bc_refresh(bc, ops[i]->block, &ops[i]->ts,
			    ops[i]->data);
		else
			bftblk__bc_drop(bc, ops[i]->block);
	}
	return r;
}

/*
 * Reads the blocks idx[0..n) of c, patches them and writes them.  Used
 * for cache misses and for cache-built writes that came back stale.
 */
static int
rmw(struct bft_engine *cl, struct bft_blockcache *bc, struct plan *c,
    const unsigned *idx, unsigned n, const struct wpatch *list)
{
	struct op *ops[CHUNK];

	for (unsigned j = 0; j < n; j++) {
		ops[j] = c->ops[idx[j]];
		ops[j]->based = false;
	}
	if (bftblk__read_blocks(cl, bc, ops, n, true) != 0)
		return -1;
	for (unsigned j = 0; j < n; j++)
		bftblk__plan_patch(c->tmp[idx[j]],
		    bft_addr_block(ops[j]->block), list);
	return write_ops(cl, bc, ops, n);
}

/*
 * Zero and trim: the whole blocks of c that already read as zeros (never
 * written, or zeroed before) are taken out of c, not written.  mkfs
 * discards the whole device, and writing zeros there used to fill every
 * server with fragments of zeros (546 MB per server for 1 GiB never
 * written).  Linearizable: the zero write's interval contains the read,
 * which returned zeros, the register's value at the read's point; the
 * write is placed at that point, where it changes nothing.  Range locks
 * keep this process's own writes of the block out meanwhile.
 */
static int
drop_zero_blocks(struct bft_engine *cl, struct bft_blockcache *bc,
    struct plan *c)
{
	struct op *reads[CHUNK];
	unsigned idx[CHUNK], nr = 0, kept = 0;
	bool skip[CHUNK] = { false };
	uint8_t *buf;
	int r = -1;

	for (unsigned i = 0; i < c->nops; i++)
		if (c->tmp[i] == NULL)
			idx[nr++] = i;
	if (nr == 0)
		return 0;
	if ((buf = malloc((size_t)nr * BFT_BLOCK_SIZE)) == NULL)
		return bftblk__fail(ENOMEM, "no memory to read %u blocks", nr);
	for (unsigned j = 0; j < nr; j++) {
		if ((reads[j] = bftblk__op_new(cl, OP_READ)) == NULL) {
			nr = j;
			bftblk__fail(ENOMEM, NULL);
			goto out_free;
		}
		reads[j]->block = c->ops[idx[j]]->block;
		reads[j]->data = buf + (size_t)j * BFT_BLOCK_SIZE;
	}
	if (bftblk__read_blocks(cl, bc, reads, nr, false) != 0)
		goto out_free;
	for (unsigned j = 0; j < nr; j++)
		/* Not ->zero alone: a clone's may hold its parent's. */
		skip[idx[j]] = bftblk__block_zero(reads[j]->data);
	for (unsigned i = 0; i < c->nops; i++) {
		if (skip[i]) {
			bftblk__op_free(c->ops[i]);
			continue;
		}
		c->ops[kept] = c->ops[i];
		c->tmp[kept++] = c->tmp[i];
	}
	for (unsigned i = kept; i < c->nops; i++) {
		c->ops[i] = NULL;
		c->tmp[i] = NULL;
	}
	c->nops = kept;
	r = 0;
out_free:
	for (unsigned j = 0; j < nr; j++)
		bftblk__op_free(reads[j]);
	free(buf);
	return r;
}

/*
 * One chunk: partial blocks found in the cache are patched there and
 * written with the whole ones, the rest read first and written in the
 * same batch.  The batch of misses runs first so that both sets of
 * writes go out together: one read round-trip, then one write batch.
 */
static int
write_chunk(struct bft_engine *cl, struct bft_blockcache *bc,
    struct plan *c, const struct wpatch *list)
{
	unsigned stale[CHUNK], nstale = 0, hits = 0, nmiss = 0;
	struct op *miss[CHUNK];

	for (unsigned i = 0; i < c->nops; i++) {
		struct op *op = c->ops[i];

		op->based = false;
		if (c->tmp[i] == NULL)
			continue;
		if (bftblk__bc_get(bc, op->block, c->tmp[i], &op->base)) {
			op->based = true;
			hits++;
		} else {
			miss[nmiss++] = op;
		}
	}
	if (bc != NULL)
		bftblk__engine_note_cache(cl, hits, nmiss);
	if (list->src == NULL && list->next == NULL &&
	    drop_zero_blocks(cl, bc, c) != 0)
		return -1;
	if (bftblk__read_blocks(cl, bc, miss, nmiss, true) != 0)
		return -1;
	for (unsigned i = 0; i < c->nops; i++)
		if (c->tmp[i] != NULL)
			bftblk__plan_patch(c->tmp[i],
			    bft_addr_block(c->ops[i]->block), list);
	if (write_ops(cl, bc, c->ops, c->nops) != 0)
		return -1;
	for (unsigned i = 0; i < c->nops; i++)
		if (c->ops[i]->stale)
			stale[nstale++] = i;
	if (nstale == 0)
		return 0;
	return rmw(cl, bc, c, stale, nstale, list);
}

/*
 * One block built from a batch of small writes (coalesce_int.h).  Batches
 * and block locks are keyed by address, not block number: a process may
 * hold handles on several volumes, whose block numbers coincide, and a
 * batch must never carry one volume's patch into another's block.
 * 0, or the errno with the reason recorded.
 */
static int
write_batch(struct bft_engine *cl, struct bft_blockcache *bc, uint64_t addr,
    const struct wpatch *list)
{
	struct block_locks *locks = bftblk__engine_locks(cl);
	struct block_range range;
	struct plan p;
	int r;

	bftblk__block_lock(locks, &range, addr, addr);
	r = bftblk__plan_init(&p, cl, bft_addr_block(addr), 1, list->offset,
	    list->count, list->src, OP_WRITE);
	if (r == 0) {
		r = write_chunk(cl, bc, &p, list);
		bftblk__plan_free(&p);
	}
	bftblk__block_unlock(locks, &range);
	return r == 0 ? 0 : bftblk__take_errno();
}

/* A write inside one block: in a batch with the others in flight. */
static int
write_small(struct bft_engine *cl, struct bft_blockcache *bc, uint64_t addr,
    struct wpatch *req)
{
	struct coalesce *co = bftblk__engine_coalesce(cl);
	const struct wpatch *list;
	struct coalesce_waiter w;
	unsigned merged = 0;
	int err;

	if ((list = bftblk__coalesce_enter(co, addr, req, &w)) == NULL)
		/* Another request's batch wrote it; the reason is recorded. */
		return w.result == 0 ? 0 : -1;
	err = bftblk__coalesce_leave(co, &w, write_batch(cl, bc, addr, list),
	    &merged);
	bftblk__engine_note_coalesced(cl, merged);
	if (err != 0) {
		/* write_batch took the errno; the reason is still here. */
		bftblk__fail(err, "%s", bftblk__errmsg());
		return -1;
	}
	return 0;
}

int
bftblk__io_write(struct bft_engine *cl, struct bft_blockcache *bc,
    const uint8_t *src, uint32_t count, uint64_t offset, bool fua)
{
	uint64_t first = offset / BFT_BLOCK_SIZE;
	uint64_t last = (offset + count - 1) / BFT_BLOCK_SIZE;
	struct wpatch req = { .src = src, .count = count, .offset = offset };
	struct block_locks *locks = bftblk__engine_locks(cl);
	struct block_range range;
	int r = 0;

	if (first == last && count < BFT_BLOCK_SIZE) {
		if (write_small(cl, bc, bftblk__engine_addr(cl, first),
		    &req) != 0)
			return -1;
		return fua ? bftblk__io_flush(cl) : 0;
	}
	bftblk__block_lock(locks, &range, bftblk__engine_addr(cl, first),
	    bftblk__engine_addr(cl, last));
	for (uint64_t b = first; r == 0 && b <= last; b += CHUNK) {
		unsigned nb = (unsigned)(last - b + 1 < CHUNK ?
		    last - b + 1 : CHUNK);
		struct plan p;

		if (bftblk__plan_init(&p, cl, b, nb, offset, count, src,
		    OP_WRITE) != 0) {
			r = -1;
			break;
		}
		r = write_chunk(cl, bc, &p, &req);
		bftblk__plan_free(&p);
	}
	bftblk__block_unlock(locks, &range);
	if (r == 0 && fua)
		r = bftblk__io_flush(cl);
	return r;
}

int
bftblk__io_flush(struct bft_engine *cl)
{
	struct op *op = bftblk__op_new(cl, OP_FLUSH);
	int r;

	if (op == NULL)
		return bftblk__fail(ENOMEM, NULL);
	r = bftblk__engine_run(cl, &op, 1);
	bftblk__op_free(op);
	return r;
}
