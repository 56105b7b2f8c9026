/* A request's blocks as ops over the caller's buffer or bounce buffers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error_int.h"
#include "plan_int.h"

static const uint8_t zero_block[BFT_BLOCK_SIZE];

void
bftblk__plan_free(struct plan *p)
{
	for (unsigned i = 0; i < p->nops; i++) {
		bftblk__op_free(p->ops[i]);
		free(p->tmp[i]);
	}
	p->nops = 0;
}

int
bftblk__plan_init(struct plan *p, struct bft_engine *cl, uint64_t b,
    unsigned nb, uint64_t off, uint64_t len, const uint8_t *src,
    enum op_kind kind)
{
	memset(p, 0, sizeof *p);
	for (unsigned i = 0; i < nb; i++) {
		uint64_t bstart = (b + i) * BFT_BLOCK_SIZE;
		bool whole = bstart >= off &&
		    bstart + BFT_BLOCK_SIZE <= off + len;
		struct op *op = bftblk__op_new(cl, kind);

		if (op == NULL)
			goto out_nomem;
		p->ops[p->nops++] = op;
		op->block = bftblk__engine_addr(cl, b + i);
		if (whole && src != NULL) {
			op->data = (uint8_t *)(src + (bstart - off));
		} else if (whole && kind == OP_WRITE) {
			op->data = (uint8_t *)zero_block;
			op->zero_value = true;
		} else {
			if ((p->tmp[i] = malloc(BFT_BLOCK_SIZE)) == NULL)
				goto out_nomem;
			op->data = p->tmp[i];
			op->partial = true;
		}
	}
	return 0;
out_nomem:
	bftblk__plan_free(p);
	return bftblk__fail(ENOMEM, "no memory for the buffers of %u blocks",
	    nb);
}

void
bftblk__plan_overlap(uint64_t b, uint64_t off, uint64_t len, uint64_t *in_block,
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

void
bftblk__plan_patch(uint8_t *value, uint64_t b, const struct wpatch *list)
{
	for (const struct wpatch *p = list; p != NULL; p = p->next) {
		uint64_t ib, io, n;

		bftblk__plan_overlap(b, p->offset, p->count, &ib, &io, &n);
		if (p->src)
			memcpy(value + ib, p->src + io, n);
		else
			memset(value + ib, 0, n);
	}
}
