/* Splitting requests into chunks of block ops, and running them. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "chunk_int.h"
#include "error_int.h"

static const uint8_t zero_block[BFT_BLOCK_SIZE];

void
chunk_free(struct chunk *c)
{
	for (unsigned i = 0; i < c->nops; i++) {
		bft_op_free(c->ops[i]);
		free(c->tmp[i]);
	}
	c->nops = 0;
}

int
chunk_init(struct chunk *c, struct bft_engine *cl, uint64_t b, unsigned nb,
    uint64_t off, uint64_t len, const uint8_t *src, enum op_kind kind)
{
	memset(c, 0, sizeof *c);
	for (unsigned i = 0; i < nb; i++) {
		uint64_t bstart = (b + i) * BFT_BLOCK_SIZE;
		bool whole = bstart >= off &&
		    bstart + BFT_BLOCK_SIZE <= off + len;
		struct op *op = bft_op_new(cl, kind);

		if (op == NULL)
			goto out_nomem;
		c->ops[c->nops++] = op;
		op->block = bft_engine_addr(cl, b + i);
		if (whole && src != NULL) {
			op->data = (uint8_t *)(src + (bstart - off));
		} else if (whole && kind == OP_WRITE) {
			op->data = (uint8_t *)zero_block;
			op->zero_value = true;
		} else {
			if ((c->tmp[i] = malloc(BFT_BLOCK_SIZE)) == NULL)
				goto out_nomem;
			op->data = c->tmp[i];
			op->partial = true;
		}
	}
	return 0;
out_nomem:
	chunk_free(c);
	return lib_fail(ENOMEM, "no memory for the buffers of %u blocks", nb);
}

void
chunk_overlap(uint64_t b, uint64_t off, uint64_t len, uint64_t *in_block,
    uint64_t *in_buf, uint64_t *n)
{
	uint64_t bstart = b * BFT_BLOCK_SIZE;
	uint64_t s = off > bstart ? off : bstart;
	uint64_t e = off + len < bstart + BFT_BLOCK_SIZE ?
	    off + len : bstart + BFT_BLOCK_SIZE;

	*in_block = s - bstart;
	*in_buf = s - off;
	*n = e - s;
}

int
chunk_run(struct bft_engine *cl, struct op **ops, unsigned nops)
{
	/* The engine recorded the failure's reason. */
	return bft_engine_run(cl, ops, nops) == 0 ? 0 : -1;
}

int
chunk_read(struct bft_engine *cl, struct bft_blockcache *bc,
    struct op **ops, unsigned nops, bool insert)
{
	if (nops == 0)
		return 0;
	for (unsigned i = 0; i < nops; i++)
		ops[i]->kind = OP_READ;
	if (chunk_run(cl, ops, nops) != 0)
		return -1;
	for (unsigned i = 0; i < nops; i++) {
		struct bft_ts ts;

		if (bft_op_finish_read(ops[i]) != 0) {
			eng_log(cl, BFTBLK_LOG_ERROR, "block %" PRIu64
			    ": read failed: %s", ops[i]->block, ops[i]->why);
			return lib_fail(EIO, "block %" PRIu64 ": read failed: "
			    "%s", ops[i]->block, ops[i]->why);
		}
		/* A genuine pair: the value the register had at ts. */
		bft_op_read_ts(ops[i], &ts);
		if (insert)
			bft_bc_put(bc, ops[i]->block, &ts, ops[i]->data);
		else
			bft_bc_refresh(bc, ops[i]->block, &ts, ops[i]->data);
	}
	return 0;
}

int
io_read(struct bft_engine *cl, struct bft_blockcache *bc, uint8_t *buf,
    uint64_t count, uint64_t offset)
{
	uint64_t first = offset / BFT_BLOCK_SIZE;
	uint64_t last = (offset + count - 1) / BFT_BLOCK_SIZE;

	for (uint64_t b = first; b <= last; b += CHUNK) {
		unsigned nb = (unsigned)(last - b + 1 < CHUNK ?
		    last - b + 1 : CHUNK);
		struct chunk c;
		int r;

		if (chunk_init(&c, cl, b, nb, offset, count, buf,
		    OP_READ) != 0)
			return -1;
		r = chunk_read(cl, bc, c.ops, c.nops, false);
		for (unsigned i = 0; r == 0 && i < nb; i++) {
			uint64_t ib, io, n;

			if (c.tmp[i] == NULL)
				continue;
			chunk_overlap(b + i, offset, count, &ib, &io, &n);
			memcpy(buf + io, c.tmp[i] + ib, n);
		}
		chunk_free(&c);
		if (r != 0)
			return -1;
	}
	return 0;
}
