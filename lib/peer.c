/*
 * Reads for a rebuilding server (peer.h): the block layer's read,
 * one op per block, with what decided each value handed back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"
#include "rounds_int.h"
#include "error_int.h"
#include "voltab_int.h"

int
bftblk__peer_read(struct bftblk *h, uint64_t gen, const uint64_t *blocks,
    unsigned n, uint8_t *values, struct bftblk__proof *proofs, int *errs)
{
	struct bft_engine *cl = bftblk__engine(h);
	struct op *ops[BFTBLK__PEER_BATCH];
	unsigned made = 0;
	int r = 0;

	if (cl == NULL)
		return bftblk__handle_fail(h, ENOTCONN, "the handle is not "
		    "connected");
	if (n > BFTBLK__PEER_BATCH)
		return bftblk__handle_fail(h, EINVAL, "at most %u blocks at "
		    "once", BFTBLK__PEER_BATCH);
	for (; made < n; made++) {
		if (!bft_addr_ok(blocks[made], cl->p.cfg->nblocks)) {
			r = bftblk__handle_fail(h, EINVAL, "block %llu is "
			    "beyond the disk",
			    (unsigned long long)blocks[made]);
			goto out_free;
		}
		if ((ops[made] = bftblk__op_new(cl, OP_READ)) == NULL) {
			r = bftblk__handle_fail(h, ENOMEM, "out of memory");
			goto out_free;
		}
		ops[made]->block = blocks[made];
		ops[made]->view = gen != BFT_GEN_MAX;
		ops[made]->view_gen = gen;
		ops[made]->data = values +
		    (size_t)made * BFTBLK__PEER_VALUE_MAX;
	}
	/* Each op keeps its own result; the first failure is not all. */
	(void)bftblk__engine_run(cl, ops, n);
	for (unsigned i = 0; i < n; i++) {
		struct bftblk__proof *p = &proofs[i];
		const uint8_t (*cc)[BFT_HASH_LEN];

		memset(p, 0, sizeof *p);
		errs[i] = ops[i]->wrong_size ? -EMEDIUMTYPE : -ops[i]->err;
		if (ops[i]->err == 0 && bftblk__op_finish_read(ops[i]) != 0) {
			bftblk__eng_log(cl, BFTBLK_LOG_WARN, "block %llu: %s",
			    (unsigned long long)blocks[i], ops[i]->why);
			errs[i] = -EIO;
		}
		if (errs[i] != 0)
			continue;
		if ((cc = bftblk__op_read_cc(ops[i])) == NULL) {
			p->zero = true;
			continue;
		}
		p->cand = ops[i]->chosen;
		memcpy(p->cc, cc, (size_t)cl->n * BFT_HASH_LEN);
	}
out_free:
	for (unsigned i = 0; i < made; i++)
		bftblk__op_free(ops[i]);
	return r;
}

static int
bound_cmp(const void *a, const void *b)
{
	const struct bftblk__bound *x = a, *y = b;

	if (x->vol != y->vol)
		return x->vol < y->vol ? -1 : 1;
	return x->gen < y->gen ? -1 : x->gen > y->gen;
}

int
bftblk__peer_bounds(struct bftblk *h, struct bftblk__bound *out,
    unsigned max, unsigned *n)
{
	struct voltab *vt;
	unsigned k = 0;
	int r;

	if ((vt = bftblk__vt_load(h, &r)) == NULL)
		return r;
	for (unsigned b = 0; b < vt->nblocks; b++)
		for (unsigned i = 0; i < vt->count[b]; i++) {
			const struct vt_entry *e = &vt->e[b][i];

			if (e->state != VT_SNAP)
				continue;
			if (k < max)
				out[k] = (struct bftblk__bound){ e->id,
				    e->generation };
			k++;
		}
	free(vt);
	qsort(out, k < max ? k : max, sizeof *out, bound_cmp);
	*n = k;
	return 0;
}
