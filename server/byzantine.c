/*
 * Byzantine modes of bftblk-server, for the scenarios of
 * tests/faults/byz-*.sh; byzantine.h says what each mode attacks.  The
 * handler has already run honestly, so the server's stored state is that
 * of a correct server: only what it tells its clients is a lie.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "log.h"
#include "byzantine.h"

/*
 * A slow server answers well inside the client's round timeout (10 s by
 * default) but long after the others, so a client that waited for it
 * would show it at once.
 */
#define SLOW_MS		2000
/* Two seconds of FILTER replies under load; beyond it, replies are dropped. */
#define HELD_MAX	(256u << 20)
/* Bytes of fragments the stale modes keep copies of. */
#define SNAP_MAX	(256u << 20)

static const char *const mode_names[] = {
	"corrupt-fragment", "bad-checksum", "stale", "forge-candidate",
	"bad-mac", "equivocate", "mute", "slow", "collude", "refuse",
};
#define NMODES (sizeof mode_names / sizeof mode_names[0])

/* A block at the rollback point: the first completed value seen. */
struct snap {
	struct bft_cand lc;
	struct bft_hist_meta meta;	/* Hist[lc.ts], whose fragment is frag */
	uint8_t *frag;
};

struct bft_byz {
	uv_loop_t *loop;
	struct bft_handler *h;
	unsigned modes, n, self;
	uint64_t seed, rng, nconns;
	uint32_t frag_len;		/* of STOREs: forged fragments look real */
	struct snap **snaps;		/* nblocks entries, for stale answers */
	uint64_t snap_bytes, held_bytes;
	uint8_t *fragbuf;
	uint64_t hits[NMODES];		/* replies each mode changed */
	uint64_t dropped, delayed, overflow;
};

/* A reply held back by a slow server; also its write request. */
struct held {
	uv_write_t wr;			/* first: the callback gets &wr */
	struct held *next;
	struct bft_byz *b;
	uint64_t due;
	struct bft_buf frame;
};

struct bft_byz_conn {
	struct bft_byz *b;
	uv_stream_t *stream;		/* NULL once the connection closes */
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
static uint64_t
next_rand(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static void
fill(uint64_t *s, void *buf, size_t len)
{
	uint8_t *p = buf;
	uint64_t v;
	size_t k;

	while (len > 0) {
		v = next_rand(s);
		k = len < sizeof v ? len : sizeof v;
		memcpy(p, &v, k);
		p += k;
		len -= k;
	}
}

static void
hit(struct bft_byz *b, unsigned mode)
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
	/* A slot per block for the old states stale answers come from. */
	b->snaps = calloc(h->cfg->nblocks, sizeof *b->snaps);
	if (b->fragbuf == NULL || b->snaps == NULL) {
		free(b->fragbuf);
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
	free(b);
}

struct bft_byz_conn *
bft_byz_conn_new(struct bft_byz *b, uv_stream_t *stream)
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
	bc->stream = stream;
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
	bc->stream = NULL;
	while ((x = bc->head) != NULL) {
		bc->head = x->next;
		free_held(x);
	}
	bc->tail = NULL;
	uv_close((uv_handle_t *)&bc->timer, on_timer_closed);
}

static void
on_held_written(uv_write_t *wr, int status)
{
	(void)status;	/* a failed write shows up as a closed connection */
	free_held((struct held *)wr);
}

/* Sends every held reply that is due; libuv keeps writes in order. */
static void
on_timer(uv_timer_t *t)
{
	struct bft_byz_conn *bc = t->data;
	uint64_t now = uv_now(bc->b->loop);
	struct held *x;
	uv_buf_t buf;

	while ((x = bc->head) != NULL && x->due <= now) {
		bc->head = x->next;
		if (bc->head == NULL)
			bc->tail = NULL;
		buf = uv_buf_init((char *)x->frame.data,
		    (unsigned)x->frame.len);
		if (uv_write(&x->wr, bc->stream, &buf, 1, on_held_written) < 0)
			free_held(x);
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

/*
 * Keeps the block's first completed state whose fragment this server
 * holds; without one (or beyond SNAP_MAX) the block rolls back to c0.
 */
static void
snapshot(struct bft_byz *b, uint64_t block)
{
	struct bft_store *st = b->h->st;
	const struct bft_hist_entry *e;
	struct snap *s;

	if (b->snaps[block] != NULL)
		return;
	e = bft_store_hist(st, block, &bft_store_block(st, block)->lc.ts);
	if (e == NULL || b->snap_bytes + e->meta.frag_len > SNAP_MAX ||
	    (s = calloc(1, sizeof *s)) == NULL)
		return;
	s->lc = bft_store_block(st, block)->lc;
	s->meta = e->meta;
	s->frag = malloc(e->meta.frag_len + 1);
	if (s->frag == NULL || bft_store_read_frag(st, e, s->frag) < 0) {
		free(s->frag);
		free(s);
		return;
	}
	b->snap_bytes += e->meta.frag_len;
	b->snaps[block] = s;
}

/* stale: as a server whose disk was put back to an old copy would. */
static void
answer_stale(struct bft_byz *b, const struct bft_msg *req,
    struct bft_msg *rep)
{
	static const struct snap c0;
	const struct snap *s = b->snaps[req->block] ? b->snaps[req->block] :
	    &c0;

	switch (rep->type & ~BFT_ACK) {
	case BFT_CLOCK:
	case BFT_STORE:
		/* In STORE_ACK: hides newer writes from a writer that skipped CLOCK. */
		rep->ts = s->lc.ts;
		break;
	case BFT_COLLECT:
		/* The old lc with its own cc and fragment: all of a piece. */
		rep->cands[0] = s->lc;
		rep->ncands = 1;
		rep->has_cc = s != &c0;
		memcpy(rep->cc, s->meta.cc, sizeof rep->cc);
		rep->frag = s->frag;
		rep->frag_len = rep->has_cc && req->want_frag ?
		    s->meta.frag_len : 0;
		break;
	case BFT_FILTER:
		rep->ts = s->meta.ts;
		memcpy(rep->vec, s->meta.vec, sizeof rep->vec);
		memcpy(rep->cc, s->meta.cc, sizeof rep->cc);
		rep->frag = s->frag;
		rep->frag_len = s->meta.frag_len;
		break;
	default:
		return;
	}
	/* Counted only when the answer really is older than the truth. */
	if (bft_ts_cmp(&s->lc.ts,
	    &bft_store_block(b->h->st, req->block)->lc.ts) < 0)
		hit(b, BFT_BYZ_STALE);
}

/* Just below 2^63: a writer that took it could never write again. */
static void
forge_ts(struct bft_byz *b, struct bft_ts *ts)
{
	ts->num = (UINT64_C(1) << 63) - 1 - (next_rand(&b->rng) & 0xffff);
	ts->wid = next_rand(&b->rng) | 1;
	fill(&b->rng, ts->mac, sizeof ts->mac);
}

/*
 * The newest Hist entry of a block: its ts was signed by a writer, but
 * its write may not have completed, and we do not know its nonce.
 */
static const struct bft_hist_meta *
newest_hist(struct bft_byz *b, uint64_t block)
{
	const struct bft_block_state *bs = bft_store_block(b->h->st, block);
	const struct bft_hist_meta *m = NULL;

	for (unsigned j = 0; j < bs->nhist; j++)
		if (m == NULL || bft_ts_cmp(&bs->hist[j].meta.ts, &m->ts) > 0)
			m = &bs->hist[j].meta;
	return m;
}

/*
 * forge-candidate: in turn, credible but for the MAC only a writer can
 * make, and a genuine ts (and vec) from our newest STORE with a nonce
 * nobody revealed: only the proof of writing tells that one apart.
 */
static void
answer_forged(struct bft_byz *b, const struct bft_msg *req,
    struct bft_msg *rep)
{
	struct bft_cand *c = &rep->cands[0];
	const struct bft_hist_meta *m;
	uint32_t len;

	switch (rep->type & ~BFT_ACK) {
	case BFT_CLOCK:
	case BFT_STORE:
		/* In STORE_ACK: must not push a writer off the fast path. */
		if (rep->status != BFT_OK)
			return;
		forge_ts(b, &rep->ts);
		break;
	case BFT_COLLECT:
		memset(c, 0, sizeof *c);
		forge_ts(b, &c->ts);
		fill(&b->rng, c->vec, (size_t)b->n * BFT_MAC_LEN);
		if ((next_rand(&b->rng) & 1) &&
		    (m = newest_hist(b, req->block)) != NULL) {
			c->ts = m->ts;
			memcpy(c->vec, m->vec, sizeof c->vec);
		}
		fill(&b->rng, c->nonce, sizeof c->nonce);
		rep->ncands = 1;
		/* A cc, and a fragment that matches our entry of it. */
		len = rep->frag_len ? rep->frag_len : b->frag_len;
		rep->has_cc = true;
		fill(&b->rng, rep->cc, (size_t)b->n * BFT_HASH_LEN);
		rep->frag_len = 0;
		if (req->want_frag) {
			fill(&b->rng, b->fragbuf, len);
			bft_hash(b->fragbuf, len, rep->cc[b->self]);
			rep->frag = b->fragbuf;
			rep->frag_len = len;
		}
		break;
	case BFT_FILTER:
		forge_ts(b, &rep->ts);
		fill(&b->rng, rep->vec, (size_t)b->n * BFT_MAC_LEN);
		fill(&b->rng, rep->cc, (size_t)b->n * BFT_HASH_LEN);
		len = rep->frag_len ? rep->frag_len : b->frag_len;
		fill(&b->rng, b->fragbuf, len);
		bft_hash(b->fragbuf, len, rep->cc[b->self]);
		rep->frag = b->fragbuf;
		rep->frag_len = len;
		break;
	default:
		return;
	}
	hit(b, BFT_BYZ_FORGE);
}

/*
 * bad-mac: as if the vec stored in lc and Hist were broken; doing it on
 * the way out is the same to every client.
 */
static void
break_macs(struct bft_byz *b, struct bft_msg *rep)
{
	uint8_t (*vec)[BFT_MAC_LEN] = rep->vec;
	const struct bft_ts *ts = &rep->ts;

	if (rep->type == (BFT_COLLECT | BFT_ACK)) {
		vec = rep->cands[0].vec;
		ts = &rep->cands[0].ts;
	}
	if (bft_ts_is_zero(ts))
		return;
	for (unsigned j = 0; j < b->n; j++)
		if (j != b->self)
			vec[j][j % BFT_MAC_LEN] ^= 0x80 | (uint8_t)b->seed;
	hit(b, BFT_BYZ_BAD_MAC);
}

/* Makes rep->frag a copy in our own buffer, to be changed. */
static void
own_frag(struct bft_byz *b, struct bft_msg *rep)
{
	if (rep->frag != b->fragbuf)
		memcpy(b->fragbuf, rep->frag, rep->frag_len);
	rep->frag = b->fragbuf;
}

/*
 * collude: fragment j comes from (seed, block, ts, j) at every colluder.
 * A COLLECT_ACK without a fragment still gets the colluders' cc, whose
 * entries are hashes of fragments of b->frag_len bytes.
 */
static void
collude(struct bft_byz *b, uint64_t block, const struct bft_ts *ts,
    struct bft_msg *rep)
{
	uint32_t len = rep->frag_len ? rep->frag_len : b->frag_len;
	uint64_t s;

	for (unsigned j = 0; j <= b->n; j++) {
		s = b->seed ^ block * UINT64_C(0x9e3779b97f4a7c15) ^
		    ts->num * UINT64_C(0xc2b2ae3d27d4eb4f) ^ ts->wid ^
		    (uint64_t)(j < b->n ? j : b->self) << 56;
		fill(&s, b->fragbuf, len);
		if (j < b->n)
			bft_hash(b->fragbuf, len, rep->cc[j]);
	}
	if (rep->frag_len)
		rep->frag = b->fragbuf;
	hit(b, BFT_BYZ_COLLUDE);
}

/*
 * The cc a reply carries, and the timestamp it is for: FILTER_ACK's
 * Hist entry, or COLLECT_ACK's lc when the 1-round read's cc came with
 * it.  NULL when the reply carries none.
 */
static const struct bft_ts *
cc_ts(const struct bft_msg *rep)
{
	if (rep->type == (BFT_FILTER | BFT_ACK) && rep->frag_len > 0 &&
	    !bft_ts_is_zero(&rep->ts))
		return &rep->ts;
	if (rep->type == (BFT_COLLECT | BFT_ACK) && rep->has_cc &&
	    !bft_ts_is_zero(&rep->cands[0].ts))
		return &rep->cands[0].ts;
	return NULL;
}

static void
rewrite(struct bft_byz *b, unsigned modes, const struct bft_msg *req,
    struct bft_msg *rep)
{
	const struct bft_ts *ts;
	uint64_t r;

	if (modes & BFT_BYZ_STALE)
		answer_stale(b, req, rep);
	if (modes & BFT_BYZ_FORGE)
		answer_forged(b, req, rep);
	if ((modes & BFT_BYZ_BAD_MAC) && (rep->type == (BFT_COLLECT |
	    BFT_ACK) || rep->type == (BFT_FILTER | BFT_ACK)))
		break_macs(b, rep);
	if ((ts = cc_ts(rep)) == NULL)
		return;
	/* One flipped bit is the least a hash check must catch. */
	if ((modes & BFT_BYZ_CORRUPT_FRAGMENT) && rep->frag_len > 0) {
		own_frag(b, rep);
		r = next_rand(&b->rng);
		b->fragbuf[(r >> 3) % rep->frag_len] ^= (uint8_t)(1u << (r & 7));
		hit(b, BFT_BYZ_CORRUPT_FRAGMENT);
	}
	if ((modes & BFT_BYZ_BAD_CHECKSUM) && rep->frag_len > 0) {
		own_frag(b, rep);
		fill(&b->rng, b->fragbuf, rep->frag_len);
		bft_hash(b->fragbuf, rep->frag_len, rep->cc[b->self]);
		hit(b, BFT_BYZ_BAD_CHECKSUM);
	} else if (modes & BFT_BYZ_BAD_CHECKSUM) {
		/* No fragment asked of us: our cc entry still lies. */
		fill(&b->rng, rep->cc[b->self], BFT_HASH_LEN);
		hit(b, BFT_BYZ_BAD_CHECKSUM);
	}
	if (modes & BFT_BYZ_COLLUDE)
		collude(b, req->block, ts, rep);
}

int
bft_byz_reply(struct bft_byz_conn *bc, const struct bft_msg *req,
    struct bft_msg *rep)
{
	struct bft_byz *b = bc->b;
	unsigned modes = b->modes;

	/* HELLO is honest: a server that never connects is only a crash. */
	if (req->type == BFT_HELLO || bc->stream == NULL)
		return BFT_BYZ_SEND;
	if (req->type == BFT_STORE && req->frag_len > 0)
		b->frag_len = req->frag_len;
	if ((b->modes & (BFT_BYZ_STALE | BFT_BYZ_EQUIVOCATE)) &&
	    req->type != BFT_FLUSH && req->block < b->h->cfg->nblocks)
		snapshot(b, req->block);
	/* equivocate: a liar persona per connection, two lies in turn. */
	if ((modes & BFT_BYZ_EQUIVOCATE) && bc->liar &&
	    req->block < b->h->cfg->nblocks) {
		modes |= bc->nreq++ % 2 ? BFT_BYZ_FORGE : BFT_BYZ_STALE;
		hit(b, BFT_BYZ_EQUIVOCATE);
	}
	if (rep->status == BFT_OK && req->block < b->h->cfg->nblocks)
		rewrite(b, modes, req, rep);
	if (modes & BFT_BYZ_REFUSE) {
		static const int lies[] = { BFT_EBUSY, BFT_ESTALE, BFT_EIO,
		    BFT_EAUTH, BFT_ENOSPC, BFT_OK };

		rep->status = lies[bc->nreq++ % (sizeof lies / sizeof lies[0])];
		if (rep->status == BFT_OK)
			rep->block ^= 1;
		hit(b, BFT_BYZ_REFUSE);
	}
	if (modes & BFT_BYZ_MUTE) {
		b->dropped++;
		return BFT_BYZ_DROP;
	}
	if (modes & BFT_BYZ_SLOW)
		return hold(bc, rep);
	return BFT_BYZ_SEND;
}
