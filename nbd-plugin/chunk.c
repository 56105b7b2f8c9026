/* Splitting requests into chunks of block ops, and running them. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "chunk.h"

static const uint8_t zero_block[BFT_BLOCK_SIZE];
static _Thread_local int last_error;

int
chunk_fail(int err)
{
	nbdkit_set_error(err);
	last_error = err;
	return -1;
}

int
chunk_last_error(void)
{
	int err = last_error ? last_error : EIO;

	last_error = 0;
	return err;
}

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
chunk_init(struct chunk *c, struct bft_client *cl, uint64_t b, unsigned nb,
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
		op->block = b + i;
		if (whole && src != NULL) {
			op->data = (uint8_t *)(src + (bstart - off));
		} else if (whole && kind == OP_WRITE) {
			op->data = (uint8_t *)zero_block;
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
	return chunk_fail(ENOMEM);
}

void
overlap(uint64_t b, uint64_t off, uint64_t len, uint64_t *in_block,
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
run_ops(struct bft_client *cl, struct op **ops, unsigned nops)
{
	int err;

	if ((err = bft_client_run(cl, ops, nops)) != 0)
		return chunk_fail(err);
	return 0;
}

int
read_blocks(struct bft_client *cl, struct bft_blockcache *bc,
    struct op **ops, unsigned nops, bool insert)
{
	if (nops == 0)
		return 0;
	for (unsigned i = 0; i < nops; i++)
		ops[i]->kind = OP_READ;
	if (run_ops(cl, ops, nops) != 0)
		return -1;
	for (unsigned i = 0; i < nops; i++) {
		struct bft_ts ts;

		if (bft_op_finish_read(ops[i]) != 0) {
			nbdkit_error("block %" PRIu64 ": read failed: %s",
			    ops[i]->block, ops[i]->why);
			return chunk_fail(EIO);
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
