/*
 * Byzantine modes of bftblk-server, for the scenarios of
 * tests/faults/byz-*.sh; byzantine.h says what each mode attacks.  The
 * handler has already run honestly, so the server's stored state is that
 * of a correct server: only what it tells its clients is a lie.  This
 * file is the plumbing (modes, connections, dropped and held replies);
 * the lies themselves are in byzantine_lies.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "byzantine.h"
#include "byzantine_int.h"

/*
 * A slow server answers well inside the client's round timeout (10 s by
 * default) but long after the others, so a client that waited for it
 * would show it at once.
 */
#define SLOW_MS		2000
/* Two seconds of FILTER replies under load; beyond it, replies are dropped. */
#define HELD_MAX	(256u << 20)

static const char *const mode_names[] = {
	"corrupt-fragment", "bad-checksum", "stale", "forge-candidate",
	"bad-mac", "equivocate", "mute", "slow", "collude", "refuse",
	"lie-heal", "trim-lie", "view-head", "hide-writes", "slice-shift",
};
#define NMODES (sizeof mode_names / sizeof mode_names[0])
_Static_assert(NMODES == BYZ_NMODES, "one hit counter per mode");

/* A reply held back by a slow server. */
struct held {
	struct held *next;
	struct bft_byz *b;
	uint64_t due;
	struct bft_buf frame;
};

struct bft_byz_conn {
	struct bft_byz *b;
	bft_byz_send_fn *send;		/* NULL once the connection closes */
	void *ctx;
	uv_timer_t timer;
	struct held *head, *tail;
	bool liar;			/* equivocate: this client is lied to */
	uint64_t nreq;
};

/* "a,b" for the modes in mask, each followed by its count if hits. */
static void
describe(unsigned modes, const uint64_t *hits, char *buf, size_t len)
{
	size_t off = 0;
	int r;

	buf[0] = '\0';
	for (size_t k = 0; k < NMODES && off < len; k++) {
		if (!(modes & (1u << k)))
			continue;
		r = hits ? snprintf(buf + off, len - off, "%s%s %" PRIu64,
		    off ? ", " : "", mode_names[k], hits[k]) :
		    snprintf(buf + off, len - off, "%s%s", off ? "," : "",
		    mode_names[k]);
		off = r < 0 ? len : off + (size_t)r;
	}
}

int
bft_byz_parse(const char *spec, unsigned *modes, char *err, size_t errlen)
{
	const char *p = spec, *end;
	char all[256];
	size_t len, k;

	for (*modes = 0;; p = end + 1) {
		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		for (k = 0; k < NMODES; k++)
			if (strlen(mode_names[k]) == len &&
			    strncmp(p, mode_names[k], len) == 0)
				break;
		if (k == NMODES) {
			describe((1u << NMODES) - 1, NULL, all, sizeof all);
			snprintf(err, errlen, "unknown Byzantine mode \"%.*s\" "
			    "(modes: %s)", (int)len, p, all);
			return -1;
		}
		*modes |= 1u << k;
		if (end == NULL)
			return 0;
	}
}

/* splitmix64: every forged byte comes from the seed, for replays. */
uint64_t
byz_next_rand(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

void
byz_fill(uint64_t *s, void *buf, size_t len)
{
	uint8_t *p = buf;
	uint64_t v;
	size_t k;

	while (len > 0) {
		v = byz_next_rand(s);
		k = len < sizeof v ? len : sizeof v;
		memcpy(p, &v, k);
		p += k;
		len -= k;
	}
}

void
byz_hit(struct bft_byz *b, unsigned mode)
{
	b->hits[__builtin_ctz(mode)]++;
}

struct bft_byz *
bft_byz_new(uv_loop_t *loop, struct bft_handler *h, unsigned modes,
    uint64_t seed)
{
	struct bft_byz *b = calloc(1, sizeof *b);
	char names[256];

	if (b == NULL)
		return NULL;
	b->loop = loop;
	b->h = h;
	b->modes = modes;
	b->n = h->cfg->n;
	b->self = h->key->index;
	b->seed = b->rng = seed;
	b->fragbuf = malloc(BFT_MAX_FRAG);
	b->infobuf = malloc(BYZ_INFO_LEN);
	/* A slot per block for the old states stale answers come from. */
	b->snaps = calloc(h->cfg->nblocks, sizeof *b->snaps);
	if (b->fragbuf == NULL || b->infobuf == NULL || b->snaps == NULL) {
		free(b->fragbuf);
		free(b->infobuf);
		free(b->snaps);
		free(b);
		return NULL;
	}
	describe(modes, NULL, names, sizeof names);
	bft_log("*** BYZANTINE TEST MODE: %s (seed %" PRIu64 "): this server "
	    "LIES to its clients; never use it for data ***", names, seed);
	return b;
}

void
bft_byz_free(struct bft_byz *b)
{
	char names[256], what[512];

	if (b == NULL)
		return;
	describe(b->modes, NULL, names, sizeof names);
	describe(b->modes & ~(BFT_BYZ_MUTE | BFT_BYZ_SLOW), b->hits, what,
	    sizeof what);
	if (what[0] == '\0')
		snprintf(what, sizeof what, "none");
	/* The scenarios read this line to prove the fault was injected. */
	bft_log("byzantine %s: replies changed: %s; dropped %" PRIu64
	    ", delayed %" PRIu64 ", overflow %" PRIu64 "; %" PRIu64
	    " connections", names, what, b->dropped, b->delayed, b->overflow,
	    b->nconns);
	for (uint64_t i = 0; i < b->h->cfg->nblocks; i++)
		if (b->snaps[i] != NULL) {
			free(b->snaps[i]->frag);
			free(b->snaps[i]);
		}
	free(b->snaps);
	free(b->fragbuf);
	free(b->infobuf);
	free(b);
}

struct bft_byz_conn *
bft_byz_conn_new(struct bft_byz *b, bft_byz_send_fn *send, void *ctx)
{
	struct bft_byz_conn *bc = calloc(1, sizeof *bc);

	if (bc == NULL)
		return NULL;
	if (uv_timer_init(b->loop, &bc->timer) < 0) {
		free(bc);
		return NULL;
	}
	bc->timer.data = bc;
	bc->b = b;
	bc->send = send;
	bc->ctx = ctx;
	/* Alternate clients see two different servers. */
	bc->liar = b->nconns++ % 2 == 1;
	if (b->modes & BFT_BYZ_EQUIVOCATE)
		bft_log("byzantine: connection %" PRIu64 " is lied to: %s",
		    b->nconns, bc->liar ? "yes" : "no");
	return bc;
}

static void
free_held(struct held *x)
{
	x->b->held_bytes -= x->frame.len;
	bft_buf_free(&x->frame);
	free(x);
}

static void
on_timer_closed(uv_handle_t *handle)
{
	free(handle->data);
}

void
bft_byz_conn_close(struct bft_byz_conn *bc)
{
	struct held *x;

	if (bc == NULL)
		return;
	bc->send = NULL;
	while ((x = bc->head) != NULL) {
		bc->head = x->next;
		free_held(x);
	}
	bc->tail = NULL;
	uv_close((uv_handle_t *)&bc->timer, on_timer_closed);
}

/* Sends every held reply that is due, in the order they were held. */
static void
on_timer(uv_timer_t *t)
{
	struct bft_byz_conn *bc = t->data;
	uint64_t now = uv_now(bc->b->loop);
	struct held *x;

	while ((x = bc->head) != NULL && x->due <= now) {
		bc->head = x->next;
		if (bc->head == NULL)
			bc->tail = NULL;
		if (bc->send != NULL)
			bc->send(bc->ctx, x->frame.data, x->frame.len);
		free_held(x);
		/* Sending may have failed and closed the connection. */
		if (bc->send == NULL)
			return;
	}
	if (x != NULL)
		uv_timer_start(&bc->timer, on_timer, x->due - now, 0);
}

static int
hold(struct bft_byz_conn *bc, const struct bft_msg *rep)
{
	struct bft_byz *b = bc->b;
	struct held *x;

	if (b->held_bytes > HELD_MAX || (x = calloc(1, sizeof *x)) == NULL) {
		b->overflow++;
		return BFT_BYZ_DROP;
	}
	if (bft_wire_encode(rep, b->n, &x->frame) < 0) {
		bft_log("byzantine: cannot encode a %s reply",
		    bft_msg_type_str(rep->type));
		bft_buf_free(&x->frame);
		free(x);
		return BFT_BYZ_DROP;
	}
	x->b = b;
	x->due = uv_now(b->loop) + SLOW_MS;
	b->held_bytes += x->frame.len;
	b->delayed++;
	if (bc->tail != NULL)
		bc->tail->next = x;
	else
		bc->head = x;
	bc->tail = x;
	if (!uv_is_active((uv_handle_t *)&bc->timer))
		uv_timer_start(&bc->timer, on_timer, SLOW_MS, 0);
	return BFT_BYZ_HELD;
}

int
bft_byz_reply(struct bft_byz_conn *bc, const struct bft_msg *req,
    struct bft_msg *rep)
{
	struct bft_byz *b = bc->b;
	unsigned modes = b->modes;

	/* HELLO is honest: a server that never connects is only a crash. */
	if (req->type == BFT_HELLO || bc->send == NULL)
		return BFT_BYZ_SEND;
	if (req->type == BFT_STORE && req->frag_len > 0)
		b->frag_len = req->frag_len;
	if ((b->modes & (BFT_BYZ_STALE | BFT_BYZ_EQUIVOCATE)) &&
	    req->type != BFT_FLUSH && req->block < b->h->cfg->nblocks)
		byz_snapshot(b, req->block);
	/* equivocate: a liar persona per connection, two lies in turn. */
	if ((modes & BFT_BYZ_EQUIVOCATE) && bc->liar &&
	    bft_addr_ok(req->block, b->h->cfg->nblocks)) {
		modes |= bc->nreq++ % 2 ? BFT_BYZ_FORGE : BFT_BYZ_STALE;
		byz_hit(b, BFT_BYZ_EQUIVOCATE);
	}
	if (rep->status == BFT_OK && bft_addr_ok(req->block,
	    b->h->cfg->nblocks))
		byz_rewrite(b, modes, req, rep);
	if (modes & BFT_BYZ_REFUSE) {
		static const int lies[] = { BFT_EBUSY, BFT_ESTALE, BFT_EIO,
		    BFT_EAUTH, BFT_ENOSPC, BFT_OK };

		rep->status = lies[bc->nreq++ % (sizeof lies / sizeof lies[0])];
		if (rep->status == BFT_OK)
			rep->block ^= 1;
		byz_hit(b, BFT_BYZ_REFUSE);
	}
	if (modes & BFT_BYZ_MUTE) {
		b->dropped++;
		return BFT_BYZ_DROP;
	}
	if (modes & BFT_BYZ_SLOW)
		return hold(bc, rep);
	return BFT_BYZ_SEND;
}
