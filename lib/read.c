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

int
bftblk__read_blocks(struct bft_engine *cl, struct bft_blockcache *bc,
    struct op **ops, unsigned nops, bool insert)
{
	if (nops == 0)
		return 0;
	for (unsigned i = 0; i < nops; i++)
		ops[i]->kind = OP_READ;
	if (bftblk__engine_run(cl, ops, nops) != 0)
		return -1;
	for (unsigned i = 0; i < nops; i++) {
		struct bft_ts ts;

		if (bftblk__op_finish_read(ops[i]) != 0) {
			bftblk__eng_log(cl, BFTBLK_LOG_ERROR, "block %" PRIu64
			    ": read failed: %s", ops[i]->block, ops[i]->why);
			return bftblk__fail(EIO, "block %" PRIu64 ": read "
			    "failed: %s", ops[i]->block, ops[i]->why);
		}
		/* A genuine pair: the value the register had at ts. */
		bftblk__op_read_ts(ops[i], &ts);
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
