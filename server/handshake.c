/*
 * The server's side of the channel handshake (see common/channel.h):
 * the client hello names the client by its public key, which must be
 * listed in bftblk.conf, as a client's or as another server's (a peer);
 * the client finish proves the client holds the matching secret.  Until
 * then nothing the client sends is decoded, the connection counts only
 * in the pool of unauthenticated ones (preauth.h), and what goes wrong
 * is logged sparingly: anyone can send garbage.
 */
#include <stdio.h>
#include <string.h>

#include "featureset.h"
#include "log.h"
#include "net_int.h"

/*
 * Sends a refusal in the clear and closes once it is written; what is
 * logged is "refused: " and what (the status's name unless given).
 */
static int
refuse(struct conn *c, const char *what, enum bft_chan_status st,
    const char *detail)
{
	uint8_t sh[BFT_CHAN_SHELLO_LEN];

	bft_preauth_note(c->net, c->addr, st == BFT_CHAN_TOO_MANY ?
	    BFT_PA_REFUSED : BFT_PA_FAILED, "conn %s: refused: %s%s", c->peer,
	    what ? what : bft_chan_status_str(st), detail);
	bft_chan_server_refuse(st, sh);
	if (bft_buf_append(&c->out, sh, sizeof sh) < 0) {
		bft_net_conn_fail(c, "out of memory");
		return -1;
	}
	c->close_after_write = true;
	return 0;
}

/*
 * A client below the level the cluster was finalized at is told so in
 * the words its release knows (channel.h); one too new for this server
 * is refused as a hello it cannot read.  0 to go on, 1 when c was
 * refused, -1 when it failed (as refuse()'s -1).
 */
static int
check_level(struct conn *c, const struct bft_chan_hello *h)
{
	unsigned fin = bft_store_finalized(c->net->h->st);
	uint8_t sh[BFT_CHAN_SHELLO_LEN];
	char what[160];

	if (bft_level_compatible(BFT_LEVEL, h->level, fin))
		return 0;
	if (h->level >= fin) {
		snprintf(what, sizeof what, "client speaks level %u, more than "
		    "one above this server's %u", h->level, BFT_LEVEL);
		return refuse(c, what, BFT_CHAN_BAD_HELLO, "") < 0 ? -1 : 1;
	}
	bft_preauth_note(c->net, c->addr, BFT_PA_FAILED, "conn %s: refused: "
	    "client speaks level %u%s, below level %u this cluster was "
	    "finalized at (bftblk cluster finalize): upgrade the client",
	    c->peer, h->level, h->level == BFT_LEVEL_0_2_0 ?
	    " (release 0.2.0)" : "", fin);
	bft_chan_server_refuse_level(h->level, sh);
	if (bft_buf_append(&c->out, sh, sizeof sh) < 0) {
		bft_net_conn_fail(c, "out of memory");
		return -1;
	}
	c->close_after_write = true;
	return 1;
}

static int
on_client_hello(struct conn *c, const uint8_t *ch)
{
	struct bft_net *net = c->net;
	const struct bft_config *cfg = net->h->cfg;
	struct bft_chan_hello h;
	struct bft_client_quota *cl;
	uint8_t sh[BFT_CHAN_SHELLO_LEN];
	char detail[96], fp[17];
	bool oom;
	int r;

	if (bft_chan_parse_hello(ch, &h) < 0)
		return refuse(c, NULL, BFT_CHAN_BAD_HELLO, " (not a bftblk client, or "
		    "another version)");
	if (memcmp(h.cluster_id, cfg->cluster_id, BFT_CLUSTER_ID_LEN) != 0 ||
	    h.server_index != net->key->index)
		return refuse(c, NULL, BFT_CHAN_WRONG_CLUSTER, "");
	if (h.mode != cfg->channel)
		return refuse(c, NULL, BFT_CHAN_WRONG_MODE, "");
	if ((r = check_level(c, &h)) != 0)
		return r < 0 ? -1 : 0;
	bft_chan_fingerprint(h.client_pk, fp);
	/* Nothing is gained by a server reading from itself. */
	if (bft_config_find_server(cfg, h.client_pk) ==
	    (int)net->key->index ||
	    memcmp(h.client_pk, net->key->chan.pk, 32) == 0)
		return refuse(c, NULL, BFT_CHAN_UNKNOWN_CLIENT, ": it is this "
		    "server's own key, which it never lets in");
	cl = bft_quota_get(&net->quotas, h.client_pk, &oom);
	if (cl == NULL) {
		if (oom) {
			bft_net_conn_fail(c, "out of memory");
			return -1;
		}
		snprintf(detail, sizeof detail, " (key %s...)", fp);
		return refuse(c, NULL, BFT_CHAN_UNKNOWN_CLIENT, detail);
	}
	if (cl->nconns >= net->quotas.max_conns) {
		snprintf(detail, sizeof detail, ": client %s has %u "
		    "(--max-client-conns)", cl->name, cl->nconns);
		return refuse(c, NULL, BFT_CHAN_TOO_MANY, detail);
	}
	/* Said now, in the clear, rather than by a close after the finish. */
	if (net->nconns >= net->max_conns) {
		snprintf(detail, sizeof detail, "%u connections open "
		    "(--max-conns)", net->nconns);
		return refuse(c, detail, BFT_CHAN_TOO_MANY, "");
	}
	if (bft_chan_server_accept(&net->key->chan, ch, &h,
	    bft_chan_ciphers(), &c->chan, sh) < 0)
		return refuse(c, NULL, h.ciphers & bft_chan_ciphers() ?
		    BFT_CHAN_BAD_HELLO : BFT_CHAN_NO_CIPHER, "");
	if (bft_buf_append(&c->out, sh, sizeof sh) < 0) {
		bft_net_conn_fail(c, "out of memory");
		return -1;
	}
	/*
	 * The key is public, so nothing is counted against it until the
	 * finish proves the sender holds its secret: unproven hellos must
	 * not fill a real client's connection slots.
	 */
	memcpy(c->client_pk, h.client_pk, sizeof c->client_pk);
	c->hs = HS_FINISH;
	return 0;
}

/*
 * The finish verified: the connection now counts for its client and
 * takes one of the --max-conns slots.
 */
static int
admit(struct conn *c)
{
	struct bft_net *net = c->net;
	struct bft_client_quota *cl;
	char detail[96];
	bool oom;

	/* A SIGHUP between hello and finish may have revoked the key. */
	cl = bft_quota_get(&net->quotas, c->client_pk, &oom);
	if (cl == NULL) {
		bft_net_conn_fail(c, oom ? "out of memory" :
		    "client revoked during the handshake");
		return -1;
	}
	if (cl->nconns >= net->quotas.max_conns) {
		snprintf(detail, sizeof detail, "client %s has %u connections "
		    "(--max-client-conns)", cl->name, cl->nconns);
		bft_net_conn_fail(c, detail);
		return -1;
	}
	if (net->nconns >= net->max_conns) {
		snprintf(detail, sizeof detail, "%u connections open "
		    "(--max-conns)", net->nconns);
		bft_net_conn_fail(c, detail);
		return -1;
	}
	c->client = cl;
	cl->nconns++;
	/* Out of the unauthenticated pool, into an authenticated slot. */
	bft_preauth_remove(c);
	c->slot = true;
	net->nconns++;
	snprintf(c->peer + strlen(c->peer), sizeof c->peer - strlen(c->peer),
	    "/%s", cl->name);
	return 0;
}

int
bft_handshake_step(struct conn *c)
{
	const uint8_t *p = c->rbuf + c->rstart;
	size_t avail = c->rend - c->rstart;

	if (c->hs == HS_HELLO) {
		if (avail < BFT_CHAN_CHELLO_LEN)
			return 1;
		c->rstart += BFT_CHAN_CHELLO_LEN;
		if (on_client_hello(c, p) < 0)
			return -1;
		/* A refusal stops reading; the process loop sees that. */
		return 0;
	}
	if (avail < BFT_CHAN_FINISH_LEN)
		return 1;
	c->rstart += BFT_CHAN_FINISH_LEN;
	if (bft_chan_server_verify(&c->chan, p) < 0) {
		bft_net_conn_fail(c, "client failed to prove its key");
		return -1;
	}
	if (admit(c) < 0)
		return -1;
	c->hs = HS_DONE;
	bft_debug("conn %s: %s client authenticated (%s%s)", c->peer,
	    bft_role_str(c->client->role),
	    c->chan.mode == BFT_CHAN_PLAIN ? "plain frames" : "sealed with ",
	    c->chan.mode == BFT_CHAN_PLAIN ? "" :
	    c->chan.cipher == BFT_CIPHER_AESGCM ? "AES-256-GCM" :
	    "ChaCha20-Poly1305");
	return 0;
}
