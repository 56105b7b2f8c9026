/*
 * Allocation of ops.  A block's op is 33 KiB with n fragment buffers
 * behind it (128 KiB at t = 1) and every I/O takes one per block, so
 * finished ops go on a short free list, buffers and all, and the next
 * I/O takes them from there: no malloc, page fault or zeroing of 160 KiB
 * on a block's path once the list has filled.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rounds_int.h"

/*
 * Enough for nbdkit's 16 threads with a block each in flight, and for
 * one multi-block request; past that ops are freed, so an idle plugin
 * keeps at most ~5 MiB.
 */
#define OP_POOL_MAX 32

static struct op *
pool_take(struct bft_engine *cl)
{
	struct op *op;

	pthread_mutex_lock(&cl->pool_lock);
	if ((op = cl->pool) != NULL) {
		cl->pool = op->next;
		cl->npool--;
	}
	pthread_mutex_unlock(&cl->pool_lock);
	return op;
}

static bool
pool_give(struct bft_engine *cl, struct op *op)
{
	bool kept = false;

	pthread_mutex_lock(&cl->pool_lock);
	if (cl->npool < OP_POOL_MAX) {
		op->next = cl->pool;
		cl->pool = op;
		cl->npool++;
		kept = true;
	}
	pthread_mutex_unlock(&cl->pool_lock);
	return kept;
}

static void
op_destroy(struct op *op)
{
	free(op->frags[0]);
	free(op->value);
	free(op);
}

struct op *
bftblk__op_new(struct bft_engine *cl, enum op_kind kind)
{
	uint32_t flen = bft_ec_frag_len(cl->p.ec);
	uint8_t *buf = NULL, *value = NULL;
	struct op *op = NULL;

	if (kind != OP_FLUSH && (op = pool_take(cl)) != NULL) {
		buf = op->frags[0];
		value = op->value;
	} else if ((op = malloc(sizeof *op)) == NULL) {
		return NULL;
	}
	/* Only the scalars: the arrays are set before use (engine_int.h). */
	memset(op, 0, offsetof(struct op, vec));
	op->kind = kind;
	op->cl = cl;
	op->view = cl->p.view;
	op->view_gen = cl->p.view_gen;
	if (kind == OP_FLUSH)
		return op;
	/* Writes send these fragments; reads receive into them. */
	if (buf == NULL && (buf = malloc((size_t)cl->n * flen)) == NULL)
		goto out_free_op;
	for (unsigned i = 0; i < cl->n; i++)
		op->frags[i] = buf + (size_t)i * flen;
	if (cl->p.vc != NULL && value == NULL &&
	    (value = malloc(BFT_SEALED_LEN)) == NULL)
		goto out_free_buf;
	op->value = value;
	return op;

out_free_buf:
	free(buf);
out_free_op:
	free(op);
	return NULL;
}

void
bftblk__op_free(struct op *op)
{
	if (op == NULL)
		return;
	if (op->frags[0] == NULL || !pool_give(op->cl, op))
		op_destroy(op);
}

void
bftblk__op_pool_drain(struct bft_engine *cl)
{
	struct op *op;

	while ((op = pool_take(cl)) != NULL)
		op_destroy(op);
}
