/*
 * The fake connection layer of fake_conn.h.  Its name keeps it out of
 * the tests/unit/test_*.c wildcard: it is linked into the round tests,
 * never run by itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_conn.h"

/* One request as server i decoded it; frag points into frame. */
struct fake_req {
	struct bft_msg m;
	struct bft_buf frame;
};

struct fake_queue {
	struct fake_req **reqs;
	unsigned len, cap, taken;
};

static struct fake_queue queues[BFT_MAX_N];
static unsigned misuse;

/* Decodes the frame that holds one encoded message into out. */
static void
decode_frame(const struct bft_buf *frame, unsigned n, struct bft_msg *out)
{
	const char *why = NULL;
	uint32_t blen = 0;

	assert_int_equal(bft_wire_frame(frame->data, frame->len, &blen), 0);
	assert_int_equal((size_t)blen + 4, frame->len);
	if (bft_wire_decode(frame->data + 4, blen, n, out, &why) != 0)
		fail_msg("a frame does not decode: %s", why);
}

void
bftblk__conn_send(struct conn *c, const struct bft_msg *m)
{
	struct fake_queue *q = &queues[c->idx];
	struct fake_req *r;

	if (c->state != C_READY) {
		misuse++;
		return;
	}
	r = calloc(1, sizeof *r);
	assert_non_null(r);
	if (bft_wire_encode(m, c->cl->n, &r->frame) != 0) {
		misuse++;
		bft_buf_free(&r->frame);
		free(r);
		return;
	}
	decode_frame(&r->frame, c->cl->n, &r->m);
	if (q->len == q->cap) {
		q->cap = q->cap ? 2 * q->cap : 16;
		q->reqs = realloc(q->reqs, q->cap * sizeof q->reqs[0]);
		assert_non_null(q->reqs);
	}
	q->reqs[q->len++] = r;
}

const struct bft_msg *
fake_conn_take(unsigned i)
{
	struct fake_queue *q = &queues[i];

	if (q->taken == q->len)
		return NULL;
	return &q->reqs[q->taken++]->m;
}

unsigned
fake_conn_queued(unsigned i)
{
	return queues[i].len - queues[i].taken;
}

unsigned
fake_conn_sent(unsigned i)
{
	return queues[i].len;
}

unsigned
fake_conn_misuse(void)
{
	return misuse;
}

void
fake_conn_deliver(struct conn *c, const struct bft_msg *rep)
{
	/* Large, as in conn.c, where the decoded reply is static too. */
	static struct bft_msg m;
	struct bft_buf frame = { 0 };

	if (bft_wire_encode(rep, c->cl->n, &frame) != 0)
		fail_msg("the wire cannot carry this %s",
		    bft_msg_type_str(rep->type));
	decode_frame(&frame, c->cl->n, &m);
	bftblk__engine_dispatch(c, &m);
	bft_buf_free(&frame);
}

void
fake_conn_reset(void)
{
	for (unsigned i = 0; i < BFT_MAX_N; i++) {
		struct fake_queue *q = &queues[i];

		for (unsigned j = 0; j < q->len; j++) {
			bft_buf_free(&q->reqs[j]->frame);
			free(q->reqs[j]);
		}
		free(q->reqs);
		memset(q, 0, sizeof *q);
	}
	misuse = 0;
}

/*
 * The rest of conn.c's interface.  The tests drive an engine made by
 * bftblk__engine_new, which never connects, resolves or flushes; these only
 * satisfy the linker, and do nothing a test could mistake for work.
 */
void
bftblk__conn_connect(struct conn *c)
{
	(void)c;
}

void
bftblk__conn_close(struct conn *c, const char *why)
{
	(void)c;
	(void)why;
}

void
bftblk__conn_flush_all(uv_check_t *h)
{
	struct engine_loop *lp = h->data;

	lp->dirty = 0;
}

int
bftblk__conn_resolve(struct bft_engine *cl, const struct bft_server_addr *a,
    struct sockaddr_storage *out)
{
	(void)cl;
	(void)a;
	memset(out, 0, sizeof *out);
	return -1;
}
