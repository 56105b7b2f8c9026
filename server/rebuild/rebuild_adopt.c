/*
 * Rebuilding blocks (rebuild.h): reading them from the peers through
 * libbftblk, one handle per kind of value, checking each value against
 * the cross-checksum its readers agreed on, and adopting this server's
 * fragment through its own handler.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "log.h"
#include "peer.h"
#include "predicates.h"
#include "rebuild_int.h"

#define READ_TIMEOUT	"5"	/* seconds per round of the library's reads */

/*
 * Checks a value read from the peers against the cross-checksum t+1 of
 * them agreed on: every fragment of its encoding must hash to its
 * entry.  Fills k->frags.  0, or -1 after logging why.
 */
static int
check_value(struct bft_rebuild *rb, struct rb_kind *k, uint64_t block,
    const uint8_t *value, const struct bftblk__proof *p)
{
	uint32_t flen = bft_ec_frag_len(k->ec);
	uint8_t h[BFT_HASH_LEN];

	/* The zero value (trimmed) has no fragments to re-encode. */
	if (bft_cc_is_zero(p->cc, rb->cfg->n))
		return 0;
	if (bft_ec_encode(k->ec, value, k->frags) != 0) {
		bft_warn("rebuild: block %" PRIu64 ": erasure coding failed",
		    block);
		return -1;
	}
	for (unsigned j = 0; j < rb->cfg->n; j++) {
		bft_hash(k->frags[j], flen, h);
		if (!bft_equal(h, p->cc[j], BFT_HASH_LEN)) {
			bft_warn("rebuild: block %" PRIu64 ": the value read "
			    "does not re-encode to the agreed cross-checksum "
			    "(fragment %u); not adopted", block, j);
			return -1;
		}
	}
	return 0;
}

/*
 * Adopts a checked value: its fragment for this server as the writer's
 * STORE, then COMPLETE, through the handler, which checks our MAC entry
 * and keeps lc from going back.  0, or -1 after logging why.
 */
static int
adopt(struct bft_rebuild *rb, struct rb_kind *k, uint64_t block,
    const struct bftblk__proof *p)
{
	unsigned n = rb->cfg->n, i = rb->key->index;
	struct bft_msg *req = &rb->req, *rep = &rb->lrep;
	struct bft_buf out = { 0 };
	int st;

	memset(req, 0, sizeof *req);
	req->type = BFT_STORE;
	req->block = block;
	req->ts = p->cand.ts;
	bft_hash(p->cand.nonce, BFT_NONCE_LEN, req->nh);
	memcpy(req->vec, p->cand.vec, (size_t)n * BFT_MAC_LEN);
	memcpy(req->cc, p->cc, (size_t)n * BFT_HASH_LEN);
	req->frag = k->frags[i];
	req->frag_len = bft_cc_is_zero(p->cc, n) ? 0 : bft_ec_frag_len(k->ec);
	st = rb_local(rb, req, rep, &out);
	bft_buf_free(&out);
	if (st != BFT_OK) {
		bft_warn("rebuild: block %" PRIu64 ": our STORE of ts %" PRIu64
		    "/%" PRIu64 " was refused: %s", block, p->cand.ts.num,
		    p->cand.ts.wid, st < 0 ? "no answer" : bft_status_str(st));
		return -1;
	}
	memset(req, 0, sizeof *req);
	req->type = BFT_COMPLETE;
	req->block = block;
	req->ts = p->cand.ts;
	memcpy(req->nonce, p->cand.nonce, BFT_NONCE_LEN);
	memcpy(req->vec, p->cand.vec, (size_t)n * BFT_MAC_LEN);
	st = rb_local(rb, req, rep, &out);
	bft_buf_free(&out);
	if (st != BFT_OK) {
		bft_warn("rebuild: block %" PRIu64 ": our COMPLETE was "
		    "refused: %s", block, st < 0 ? "no answer" : bft_status_str(st));
		return -1;
	}
	return 0;
}

/* Library lines in the server's log. */
static void
lib_log(void *opaque, enum bftblk_log_level level, const char *msg)
{
	(void)opaque;
	if (level == BFTBLK_LOG_DEBUG)
		bft_debug("rebuild: %s", msg);
	else
		bft_log("rebuild: %s", msg);
}

/*
 * The library handle of one pass, for one kind of value.  Connections
 * to peers exist only while a pass needs them, so an idle server holds
 * none.
 */
int
rb_open_lib(struct bft_rebuild *rb, struct rb_kind *k, bool sealed)
{
	if (k->lib != NULL)
		return 0;
	if ((k->lib = bftblk_create()) == NULL)
		return -1;
	bftblk_set_log(k->lib, lib_log, NULL);
	if (bftblk_set_option(k->lib, "config", rb->o.config_path) != 0 ||
	    bftblk_set_option(k->lib, "server-key", rb->o.key_path) != 0 ||
	    bftblk_set_option(k->lib, "sealed", sealed ? "on" : "off") != 0 ||
	    bftblk_set_option(k->lib, "cache", "0") != 0 ||
	    bftblk_set_option(k->lib, "timeout", READ_TIMEOUT) != 0 ||
	    bftblk_connect(k->lib) != 0) {
		bft_log("rebuild: %s", bftblk_errmsg(k->lib));
		bftblk_close(k->lib);
		k->lib = NULL;
		return -1;
	}
	return 0;
}

void
rb_close_libs(struct bft_rebuild *rb)
{
	for (int j = 0; j < 2; j++) {
		bftblk_close(rb->kind[j].lib);
		rb->kind[j].lib = NULL;
	}
}

/* The coder of plain values (kind 0) and of sealed ones (kind 1). */
int
rb_make_coders(struct bft_rebuild *rb)
{
	char e[256];

	for (int j = 0; j < 2; j++) {
		struct rb_kind *k = &rb->kind[j];
		uint32_t flen;

		if (bft_ec_new_len(rb->cfg->t, NULL, j ? BFT_SEALED_LEN :
		    BFT_BLOCK_SIZE, &k->ec, e, sizeof e) != 0) {
			bft_log("rebuild: %s", e);
			return -1;
		}
		flen = bft_ec_frag_len(k->ec);
		if ((k->fragbuf = malloc((size_t)rb->cfg->n * flen)) == NULL)
			return -1;
		for (unsigned i = 0; i < rb->cfg->n; i++)
			k->frags[i] = k->fragbuf + (size_t)i * flen;
	}
	return 0;
}

/*
 * Reads blocks[0..nb) of one kind of value, of the head or of the view
 * at gen, checks and adopts each.  Blocks whose values are of the other
 * kind go to other[*nother]; those that fail to fails[*nfails].
 */
void
rb_rebuild_batch(struct bft_rebuild *rb, int kind, uint64_t gen,
    const uint64_t *blocks, unsigned nb, uint64_t *other, unsigned *nother,
    uint64_t *fails, size_t *nfails)
{
	static uint8_t values[BFTBLK__PEER_BATCH * BFTBLK__PEER_VALUE_MAX];
	struct bftblk__proof proofs[BFTBLK__PEER_BATCH];
	struct rb_kind *k = &rb->kind[kind];
	int errs[BFTBLK__PEER_BATCH];
	bool head = gen == BFT_GEN_MAX;

	if (rb_open_lib(rb, k, kind == 1) != 0 ||
	    bftblk__peer_read(k->lib, gen, blocks, nb, values, proofs,
	    errs) != 0) {
		if (k->lib != NULL)
			bft_log("rebuild: %s", bftblk_errmsg(k->lib));
		for (unsigned j = 0; j < nb; j++)
			fails[(*nfails)++] = blocks[j];
		return;
	}
	for (unsigned j = 0; j < nb; j++) {
		bool ok = errs[j] == 0;

		if (errs[j] == -EMEDIUMTYPE && other != NULL) {
			other[(*nother)++] = blocks[j];
			continue;
		}
		if (!ok) {
			bft_warn("rebuild: block %" PRIu64 "%s: read failed: %s",
			    blocks[j], head ? "" : " (a snapshot's view)",
			    strerror(-errs[j]));
			fails[(*nfails)++] = blocks[j];
			continue;
		}
		/* Lone claims are about the head: only its reads judge them. */
		if (head)
			rb_claim_read(rb, blocks[j], &proofs[j]);
		if (!proofs[j].zero)
			ok = check_value(rb, k, blocks[j], values +
			    (size_t)j * BFTBLK__PEER_VALUE_MAX,
			    &proofs[j]) == 0 &&
			    adopt(rb, k, blocks[j], &proofs[j]) == 0;
		if (!ok)
			fails[(*nfails)++] = blocks[j];
	}
}
