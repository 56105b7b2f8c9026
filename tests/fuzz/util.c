/*
 * Shared by the fuzz harnesses (see util.h), plus the log sink
 * they link instead of common/log.c.
 */
#include <stdarg.h>
#include <string.h>

#include "log.h"
#include "util.h"

unsigned
fuzz_n(uint8_t sel)
{
	return 3 * (sel % 5u + 1) + 1;
}

uint8_t *
fuzz_dup(const uint8_t *p, size_t len)
{
	uint8_t *d = malloc(len ? len : 1);

	FUZZ_CHECK(d != NULL, "out of memory for %zu bytes", len);
	if (len)
		memcpy(d, p, len);
	return d;
}

static bool
ts_equal(const struct bft_ts *a, const struct bft_ts *b)
{
	return a->num == b->num && a->wid == b->wid &&
	    memcmp(a->mac, b->mac, BFT_MAC_LEN) == 0;
}

static bool
cand_equal(const struct bft_cand *a, const struct bft_cand *b, unsigned n)
{
	return ts_equal(&a->ts, &b->ts) &&
	    memcmp(a->nonce, b->nonce, BFT_NONCE_LEN) == 0 &&
	    memcmp(a->vec, b->vec, (size_t)n * BFT_MAC_LEN) == 0;
}

static bool
frag_equal(const struct bft_msg *a, const struct bft_msg *b)
{
	return a->frag_len == b->frag_len &&
	    (a->frag_len == 0 || memcmp(a->frag, b->frag, a->frag_len) == 0);
}

/*
 * SUMMARY_ACK's digests, or the entries of LCLIST_ACK, VOLUMES_ACK
 * (24 bytes each) and VLIST_ACK (8), as bytes.
 */
struct recs {
	const uint8_t *p;
	size_t len;
};

static struct recs
a_recs(const struct bft_msg *m)
{
	return (struct recs){
		.p = m->ndigests ? m->digests : m->entries,
		.len = (size_t)m->ndigests * BFT_SUMMARY_DIGEST_LEN +
		    (size_t)m->nentries * (m->type == (BFT_VLIST | BFT_ACK) ?
		    BFT_VLENTRY_LEN : BFT_LCENTRY_LEN),
	};
}

/* A slice reply's proof, by its bytes. */
static bool
proof_equal(const struct bft_msg *a, const struct bft_msg *b)
{
	return a->proof_cvs == b->proof_cvs && (a->proof_cvs == 0 ||
	    memcmp(a->proof, b->proof, (size_t)a->proof_cvs *
	    BFT_HASH_LEN) == 0);
}

static bool
records_equal(struct recs a, struct recs b)
{
	return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

/* The fields a message of m's type and status carries on the wire. */
static bool
fields_equal(const struct bft_msg *m, const struct bft_msg *d, unsigned n)
{
	size_t vl = (size_t)n * BFT_MAC_LEN, cl = (size_t)n * BFT_HASH_LEN;
	unsigned base = m->type & ~BFT_ACK;
	bool reply = (m->type & BFT_ACK) != 0;

	if (d->type != m->type || d->id != m->id)
		return false;
	/* The encoder sends block 0 for these, whatever m says. */
	if (!reply && (base == BFT_HELLO || base == BFT_FLUSH ||
	    base == BFT_STATUS || base == BFT_SCRUB)) {
		if (d->block != 0)
			return false;
	} else if (d->block != m->block) {
		return false;
	}
	if (reply && (d->status != m->status || m->status != 0))
		return d->status == m->status;
	/* A view request: its twin's fields, and the boundary. */
	if (!reply && bft_is_view(m->type) && d->gen != m->gen)
		return false;
	switch (bft_view_base(m->type)) {
	case BFT_SNAP:
		return d->gen == m->gen && d->snap_op == m->snap_op &&
		    memcmp(d->vec, m->vec, vl) == 0;
	case BFT_HELLO:
		return memcmp(d->cluster_id, m->cluster_id,
		    BFT_CLUSTER_ID_LEN) == 0 && d->hello_n == m->hello_n &&
		    d->hello_t == m->hello_t &&
		    d->block_size == m->block_size &&
		    d->nblocks == m->nblocks &&
		    d->server_index == m->server_index;
	case BFT_STORE:
		return ts_equal(&d->ts, &m->ts) &&
		    memcmp(d->nh, m->nh, BFT_HASH_LEN) == 0 &&
		    memcmp(d->vec, m->vec, vl) == 0 &&
		    memcmp(d->cc, m->cc, cl) == 0 && frag_equal(d, m);
	case BFT_COMPLETE:
		return ts_equal(&d->ts, &m->ts) &&
		    memcmp(d->nonce, m->nonce, BFT_NONCE_LEN) == 0 &&
		    memcmp(d->vec, m->vec, vl) == 0;
	case BFT_REAUTH:
		return ts_equal(&d->ts, &m->ts) &&
		    memcmp(d->nh, m->nh, BFT_HASH_LEN) == 0 &&
		    memcmp(d->vec, m->vec, vl) == 0;
	case BFT_DROP:
		return memcmp(d->vec, m->vec, vl) == 0;
	case BFT_FILTER:
		if (d->ncands != m->ncands)
			return false;
		for (uint32_t j = 0; j < m->ncands; j++)
			if (!cand_equal(&d->cands[j], &m->cands[j], n))
				return false;
		return true;
	case BFT_COLLECT:
		return d->want_frag == m->want_frag && d->slice == m->slice &&
		    (!m->slice || (d->slice_first == m->slice_first &&
		    d->slice_count == m->slice_count));
	case BFT_COLLECT | BFT_ACK:
		if (d->slice != m->slice || (m->slice && m->has_cc &&
		    !proof_equal(d, m)))
			return false;
		/* FALLTHROUGH */
	case BFT_REPAIR:
		return d->ncands == 1 && cand_equal(&d->cands[0],
		    &m->cands[0], n);
	case BFT_CLOCK | BFT_ACK:
	case BFT_STORE | BFT_ACK:
		return ts_equal(&d->ts, &m->ts);
	case BFT_FILTER | BFT_ACK:
		return ts_equal(&d->ts, &m->ts) &&
		    memcmp(d->vec, m->vec, vl) == 0 &&
		    memcmp(d->cc, m->cc, cl) == 0 && frag_equal(d, m);
	case BFT_SUMMARY:
		return d->count == m->count && d->span == m->span;
	case BFT_LCLIST:
		return d->count == m->count;
	case BFT_VLIST:
		return d->count == m->count && d->gen == m->gen &&
		    d->gen_to == m->gen_to;
	case BFT_SNAPSPACE:
		return d->gen == m->gen;
	case BFT_SNAPSPACE | BFT_ACK:
		return d->next == m->next && d->space_excl == m->space_excl &&
		    d->space_total == m->space_total;
	case BFT_VLIST | BFT_ACK:
		if (d->next != m->next)
			return false;
		/* FALLTHROUGH */
	case BFT_SUMMARY | BFT_ACK:
	case BFT_LCLIST | BFT_ACK:
		return records_equal(a_recs(m), a_recs(d));
	case BFT_STATUS | BFT_ACK:
		return memcmp(&d->info, &m->info, sizeof d->info) == 0;
	default:
		return true;
	}
}

/*
 * Whole-struct equality but for where frag, digests and entries point
 * (their bytes compared).
 */
static bool
all_equal(const struct bft_msg *a, const struct bft_msg *b)
{
	static struct bft_msg x, y;

	if (!frag_equal(a, b) || !records_equal(a_recs(a), a_recs(b)) ||
	    !proof_equal(a, b))
		return false;
	x = *a;
	y = *b;
	x.frag = y.frag = x.proof = y.proof = NULL;
	x.digests = y.digests = x.entries = y.entries = NULL;
	return memcmp(&x, &y, sizeof x) == 0;
}

/*
 * The two encodings are kept from call to call: grown afresh each time,
 * from 256 bytes by doubling, a reply with a fragment cost nine
 * reallocations and their copies, and its buffers freed into ASan's
 * quarantine.  Their capacity was past their length before too, so what
 * ASan sees of the decoder's reads is the same.  The decoder's zone is
 * kept too (bft_wire_decode_with()): fuzz_decode holds it to the one
 * bft_wire_decode() makes per call.
 */
void
fuzz_roundtrip(const struct bft_msg *m, unsigned n, bool strict)
{
	static struct bft_msg d;
	static struct bft_buf a, b;
	static struct bft_wire_scratch scratch;
	const char *why = "";
	uint32_t blen = 0;

	a.len = b.len = 0;
	FUZZ_CHECK(bft_wire_encode(m, n, &a) == 0, "cannot encode %s for n=%u",
	    bft_msg_type_str(m->type), n);
	FUZZ_CHECK(bft_wire_frame(a.data, a.len, &blen) == 0 &&
	    (size_t)blen + 4 == a.len, "%s: encoded frame of %zu bytes "
	    "does not split as one frame", bft_msg_type_str(m->type), a.len);
	FUZZ_CHECK(bft_wire_decode_with(&scratch, a.data + 4, blen, n, &d,
	    &why) == 0,
	    "%s: own encoding does not decode: %s",
	    bft_msg_type_str(m->type), why);
	FUZZ_CHECK(fields_equal(m, &d, n), "%s (status %d): fields changed "
	    "in the round trip", bft_msg_type_str(m->type), (int)m->status);
	FUZZ_CHECK(!strict || all_equal(m, &d), "%s: decoder left fields "
	    "its type does not carry nonzero", bft_msg_type_str(m->type));
	/* The encoder is deterministic: the same message, the same bytes. */
	FUZZ_CHECK(bft_wire_encode(&d, n, &b) == 0 && b.len == a.len &&
	    memcmp(a.data, b.data, a.len) == 0, "%s: re-encoding differs",
	    bft_msg_type_str(m->type));
}

/*
 * The log sink of the harnesses, in place of common/log.c: the handler
 * logs every refused HELLO, which at thousands of inputs a second would
 * bury libFuzzer's own output.  Lines are still formatted, so a bad
 * format argument is caught, and FUZZ_LOG=1 prints them.
 */
static int log_on = -1;

void
bft_log_init(const char *progname, int verbose)
{
	(void)progname;
	(void)verbose;
}

static void
vlog(const char *fmt, va_list ap)
{
	char line[1024];

	if (log_on < 0)
		log_on = getenv("FUZZ_LOG") != NULL &&
		    strcmp(getenv("FUZZ_LOG"), "1") == 0;
	vsnprintf(line, sizeof line, fmt, ap);
	if (log_on)
		fprintf(stderr, "fuzz log: %s\n", line);
}

void
bft_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void
bft_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void
bft_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void
bft_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}
