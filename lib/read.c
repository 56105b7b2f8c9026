/*
 * The read path: a request's blocks read CHUNK at a time (Algorithm 6
 * runs in op_read.c), partial blocks copied out of their bounce
 * buffers; and the block reads a read-modify-write needs.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "error_int.h"
#include "plan_int.h"
#include "read_int.h"

/*
 * A clone's blocks that came out never written (ops[i]->zero) read from
 * its parent snapshot instead, into the same buffers.  Their own
 * register is still at the initial timestamp, so the pair (initial
 * timestamp, parent's value) is what a write based on it must find
 * unchanged: the parent is a snapshot, which no write changes and no
 * delete takes while a clone depends on it (snap.c).
 */
static int
inherit(struct bft_engine *cl, struct op **ops, unsigned nops)
{
	struct bft_engine *parent = bftblk__engine_parent(cl);
	struct op *pops[CHUNK];
	unsigned np = 0, idx[CHUNK];
	int r = -1;

	for (unsigned i = 0; i < nops; i++) {
		if (!ops[i]->zero)
			continue;
		/* read_blocks is never given more than a chunk at once. */
		if (np == CHUNK)
			return bftblk__fail(EINVAL, "%u blocks in one read",
			    nops);
		if ((pops[np] = bftblk__op_new(parent, OP_READ)) == NULL) {
			bftblk__fail(ENOMEM, "no memory for a clone's read");
			goto out;
		}
		/* The same block number, in the parent's volume. */
		pops[np]->block = bftblk__engine_addr(parent,
		    bft_addr_block(ops[i]->block));
		pops[np]->data = ops[i]->data;
		idx[np++] = i;
	}
	if (bftblk__read_blocks(parent, NULL, pops, np, false) != 0)
		goto out;
	for (unsigned j = 0; j < np; j++)
		ops[idx[j]]->inherited = true;
	r = 0;
out:
	for (unsigned j = 0; j < np; j++)
		bftblk__op_free(pops[j]);
	return r;
}

int
bftblk__read_blocks(struct bft_engine *cl, struct bft_blockcache *bc,
    struct op **ops, unsigned nops, bool insert)
{
	if (nops == 0)
		return 0;
	for (unsigned i = 0; i < nops; i++) {
		ops[i]->kind = OP_READ;
		ops[i]->inherited = false;
	}
	if (bftblk__engine_run(cl, ops, nops) != 0)
		return -1;
	for (unsigned i = 0; i < nops; i++)
		if (bftblk__op_finish_read(ops[i]) != 0) {
			bftblk__eng_log(cl, BFTBLK_LOG_ERROR, "block %" PRIu64
			    ": read failed: %s", ops[i]->block, ops[i]->why);
			return bftblk__fail(EIO, "block %" PRIu64 ": read "
			    "failed: %s", ops[i]->block, ops[i]->why);
		}
	if (bftblk__engine_parent(cl) != NULL && inherit(cl, ops, nops) != 0)
		return -1;
	for (unsigned i = 0; i < nops; i++) {
		struct bft_ts ts;

		/* A genuine pair: the value the register had at ts. */
		bftblk__op_read_ts(ops[i], &ts);
		/*
		 * Only part of data is the value: the entry there, if any,
		 * stays as it was, a genuine pair still (blockcache_int.h).
		 */
		if (bftblk__op_read_part(ops[i]))
			continue;
		if (insert)
			bftblk__bc_put(bc, ops[i]->block, &ts, ops[i]->data);
		else
			bftblk__bc_refresh(bc, ops[i]->block, &ts,
			    ops[i]->data);
	}
	return 0;
}

int
bftblk__io_read(struct bft_engine *cl, struct bft_blockcache *bc, uint8_t *buf,
    uint64_t count, uint64_t offset)
{
	uint64_t first = offset / BFT_BLOCK_SIZE;
	uint64_t last = (offset + count - 1) / BFT_BLOCK_SIZE;

	for (uint64_t b = first; b <= last; b += CHUNK) {
		unsigned nb = (unsigned)(last - b + 1 < CHUNK ?
		    last - b + 1 : CHUNK);
		struct plan p;
		int r;

		if (bftblk__plan_init(&p, cl, b, nb, offset, count, buf,
		    OP_READ) != 0)
			return -1;
		/* Blocks read in part may move only the part (op_read_fast.c). */
		for (unsigned i = 0; i < nb; i++) {
			uint64_t ib, io, n;

			if (p.tmp[i] == NULL)
				continue;
			bftblk__plan_overlap(b + i, offset, count, &ib, &io,
			    &n);
			p.ops[i]->range_off = (uint32_t)ib;
			p.ops[i]->range_len = (uint32_t)n;
		}
		r = bftblk__read_blocks(cl, bc, p.ops, p.nops, false);
		for (unsigned i = 0; r == 0 && i < nb; i++) {
			uint64_t ib, io, n;

			if (p.tmp[i] == NULL)
				continue;
			bftblk__plan_overlap(b + i, offset, count, &ib, &io,
			    &n);
			memcpy(buf + io, p.tmp[i] + ib, n);
		}
		bftblk__plan_free(&p);
		if (r != 0)
			return -1;
	}
	return 0;
}
