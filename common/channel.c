/*
 * The channel handshake and frame sealing described in channel.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "channel.h"
#include "featureset.h"

/*
 * The version byte a finalized server sends a level 0 client: anything
 * but 4 makes release 0.2.0 say that the server runs another version.
 */
#define VERSION_NOT_YOURS	0xff

#define KDF_CONTEXT	"bftchan1"	/* crypto_kdf wants 8 bytes */
#define SUBKEY_C2S	1
#define SUBKEY_S2C	2
#define SUBKEY_CONFIRM	3	/* the server's tag */
#define SUBKEY_FINISH	4	/* the client's tag */

static const char *const status_names[] = {
	[BFT_CHAN_OK] = "accepted",
	[BFT_CHAN_UNKNOWN_CLIENT] = ("unknown client key (not in the "
	    "server's bftblk.conf, or revoked)"),
	[BFT_CHAN_WRONG_CLUSTER] = "wrong cluster id or server index",
	[BFT_CHAN_WRONG_MODE] = "channel mode differs (aead vs plain)",
	[BFT_CHAN_NO_CIPHER] = "no cipher in common",
	[BFT_CHAN_TOO_MANY] = "too many connections for this client",
	[BFT_CHAN_BAD_HELLO] = "malformed client hello",
	[BFT_CHAN_TOO_OLD] = ("the cluster was finalized for a newer bftblk "
	    "release than this client's (bftblk cluster finalize): upgrade "
	    "this client"),
};

const char *
bft_chan_status_str(int status)
{
	if (status < 0 || (size_t)status >= sizeof status_names /
	    sizeof status_names[0] || status_names[status] == NULL)
		return "unknown refusal";
	return status_names[status];
}

void
bft_chan_keypair_new(struct bft_chan_keypair *kp)
{
	crypto_box_keypair(kp->pk, kp->sk);
}

int
bft_chan_keypair_from_sk(struct bft_chan_keypair *kp)
{
	return crypto_scalarmult_base(kp->pk, kp->sk) == 0 ? 0 : -EINVAL;
}

unsigned
bft_chan_ciphers(void)
{
	unsigned c = BFT_CIPHER_CHACHA;

	if (crypto_aead_aes256gcm_is_available())
		c |= BFT_CIPHER_AESGCM;
	return c;
}

void
bft_chan_fingerprint(const uint8_t *pk, char out[17])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < 8; i++) {
		out[2 * i] = hex[pk[i] >> 4];
		out[2 * i + 1] = hex[pk[i] & 15];
	}
	out[16] = '\0';
}

/* Every secret of one handshake, so one wipe clears them all. */
struct hs_keys {
	uint8_t dh[4][32];
	uint8_t c2s[32], s2c[32], confirm[32], finish[32];
	uint8_t server_pk[32];		/* client: the key that proved */
};

/*
 * Hashes the four shared secrets in k->dh and the transcript into a root
 * key and derives the direction keys and the confirmation keys from it.
 * The caller orders the secrets the same way on both sides.
 */
static void
derive(struct hs_keys *k, const uint8_t *chello, const uint8_t *shello)
{
	crypto_generichash_state st;
	uint8_t root[crypto_kdf_KEYBYTES];

	crypto_generichash_init(&st, NULL, 0, sizeof root);
	crypto_generichash_update(&st, (const uint8_t *)"bftblk channel v1",
	    17);
	for (int i = 0; i < 4; i++)
		crypto_generichash_update(&st, k->dh[i], 32);
	crypto_generichash_update(&st, chello, BFT_CHAN_CHELLO_LEN);
	/* The server hello without its tag, which is derived from this. */
	crypto_generichash_update(&st, shello, BFT_CHAN_SHELLO_LEN - 16);
	crypto_generichash_final(&st, root, sizeof root);
	crypto_kdf_derive_from_key(k->c2s, 32, SUBKEY_C2S, KDF_CONTEXT, root);
	crypto_kdf_derive_from_key(k->s2c, 32, SUBKEY_S2C, KDF_CONTEXT, root);
	crypto_kdf_derive_from_key(k->confirm, 32, SUBKEY_CONFIRM,
	    KDF_CONTEXT, root);
	crypto_kdf_derive_from_key(k->finish, 32, SUBKEY_FINISH, KDF_CONTEXT,
	    root);
	sodium_memzero(root, sizeof root);
}

/* The server's tag covers its hello; the client's covers all of it. */
static void
confirm_tag(const uint8_t key[32], const uint8_t *shello, size_t len,
    uint8_t tag[16])
{
	crypto_generichash(tag, 16, shello, len, key, 32);
}

/*
 * Keys one context per direction.  The key schedule is done here once;
 * each frame then only sets its IV.  EVP_CIPHER_CTX_free wipes a context.
 */
static int
chan_setup(struct bft_chan *ch, enum bft_chan_mode mode,
    enum bft_chan_cipher cipher, const uint8_t tx[32], const uint8_t rx[32])
{
	const EVP_CIPHER *c = cipher == BFT_CIPHER_AESGCM ?
	    EVP_aes_256_gcm() : EVP_chacha20_poly1305();

	memset(ch, 0, sizeof *ch);
	ch->mode = mode;
	ch->cipher = cipher;
	ch->tx = EVP_CIPHER_CTX_new();
	ch->rx = EVP_CIPHER_CTX_new();
	if (ch->tx == NULL || ch->rx == NULL) {
		bft_chan_clear(ch);
		return -ENOMEM;
	}
	if (EVP_EncryptInit_ex(ch->tx, c, NULL, tx, NULL) != 1 ||
	    EVP_DecryptInit_ex(ch->rx, c, NULL, rx, NULL) != 1) {
		bft_chan_clear(ch);
		return -EIO;
	}
	return 0;
}

void
bft_chan_clear(struct bft_chan *ch)
{
	EVP_CIPHER_CTX_free(ch->tx);
	EVP_CIPHER_CTX_free(ch->rx);
	sodium_memzero(ch, sizeof *ch);
}

void
bft_chan_client_hello(struct bft_chan_client *hs,
    const struct bft_chan_keypair *id, const uint8_t *server_pk,
    const uint8_t *cluster_id, unsigned server_index,
    enum bft_chan_mode mode, uint8_t *out)
{
	uint8_t *p = out;

	bft_chan_keypair_new(&hs->eph);
	hs->id = id;
	hs->mode = mode;
	hs->has_next = false;
	memcpy(hs->server_pk, server_pk, BFT_CHAN_PK_LEN);
	memcpy(p, "BFTC", 4);
	p[4] = BFT_CHAN_VERSION;
	p[5] = (uint8_t)mode;
	p[6] = (uint8_t)(bft_chan_ciphers() |
	    BFT_LEVEL << BFT_CHAN_LEVEL_SHIFT);
	p[7] = (uint8_t)server_index;
	p += 8;
	memcpy(p, cluster_id, BFT_CLUSTER_ID_LEN);
	p += BFT_CLUSTER_ID_LEN;
	memcpy(p, id->pk, 32);
	memcpy(p + 32, hs->eph.pk, 32);
	memcpy(hs->chello, out, BFT_CHAN_CHELLO_LEN);
}

void
bft_chan_client_next(struct bft_chan_client *hs, const uint8_t *next_pk)
{
	memcpy(hs->server_pk_next, next_pk, BFT_CHAN_PK_LEN);
	hs->has_next = true;
}

int
bft_chan_parse_hello(const uint8_t *chello, struct bft_chan_hello *h)
{
	const uint8_t *p = chello + 8;

	if (memcmp(chello, "BFTC", 4) != 0)
		return -EBADMSG;
	h->version = chello[4];
	h->mode = chello[5];
	h->ciphers = chello[6] & BFT_CHAN_CIPHER_MASK;
	h->level = chello[6] >> BFT_CHAN_LEVEL_SHIFT;
	h->server_index = chello[7];
	memcpy(h->cluster_id, p, BFT_CLUSTER_ID_LEN);
	p += BFT_CLUSTER_ID_LEN;
	memcpy(h->client_pk, p, 32);
	memcpy(h->client_eph, p + 32, 32);
	if (h->version != BFT_CHAN_VERSION ||
	    (h->mode != BFT_CHAN_AEAD && h->mode != BFT_CHAN_PLAIN))
		return -EPROTONOSUPPORT;
	return 0;
}

void
bft_chan_server_refuse(enum bft_chan_status st, uint8_t *out)
{
	memset(out, 0, BFT_CHAN_SHELLO_LEN);
	memcpy(out, "BFTS", 4);
	out[4] = BFT_CHAN_VERSION;
	out[5] = (uint8_t)st;
}

void
bft_chan_server_refuse_level(unsigned client_level, uint8_t *out)
{
	bft_chan_server_refuse(BFT_CHAN_TOO_OLD, out);
	if (client_level == BFT_LEVEL_0_2_0)
		out[4] = VERSION_NOT_YOURS;
}

int
bft_chan_server_accept(const struct bft_chan_keypair *id,
    const uint8_t *chello, const struct bft_chan_hello *h, unsigned ciphers,
    struct bft_chan *ch, uint8_t *out)
{
	struct bft_chan_keypair eph;
	struct hs_keys k;
	enum bft_chan_cipher cipher;
	int rc = -ENOTSUP;

	ciphers &= h->ciphers;
	if (ciphers == 0)
		goto out;
	cipher = (ciphers & BFT_CIPHER_AESGCM) ? BFT_CIPHER_AESGCM :
	    BFT_CIPHER_CHACHA;
	bft_chan_keypair_new(&eph);
	bft_chan_server_refuse(BFT_CHAN_OK, out);
	out[6] = (uint8_t)cipher;
	out[7] = (uint8_t)BFT_LEVEL;
	memcpy(out + 8, eph.pk, 32);
	/* Same order as the client: ss, es, se, ee (client side first). */
	if (crypto_scalarmult(k.dh[0], id->sk, h->client_pk) != 0 ||
	    crypto_scalarmult(k.dh[1], id->sk, h->client_eph) != 0 ||
	    crypto_scalarmult(k.dh[2], eph.sk, h->client_pk) != 0 ||
	    crypto_scalarmult(k.dh[3], eph.sk, h->client_eph) != 0) {
		rc = -EINVAL;
		goto out;
	}
	derive(&k, chello, out);
	confirm_tag(k.confirm, out, BFT_CHAN_SHELLO_LEN - 16,
	    out + BFT_CHAN_SHELLO_LEN - 16);
	rc = chan_setup(ch, (enum bft_chan_mode)h->mode, cipher, k.s2c,
	    k.c2s);
	ch->peer_level = h->level;
	if (rc == 0)
		confirm_tag(k.finish, out, BFT_CHAN_SHELLO_LEN,
		    ch->peer_finish);
out:
	sodium_memzero(&eph, sizeof eph);
	sodium_memzero(&k, sizeof k);
	return rc;
}

int
bft_chan_server_verify(const struct bft_chan *ch, const uint8_t *finish)
{
	return sodium_memcmp(ch->peer_finish, finish, BFT_CHAN_FINISH_LEN) ==
	    0 ? 0 : -EACCES;
}

/*
 * Whether shello proves the holder of server_pk: derives k from it and
 * checks the tag.  0, -EINVAL for a key no exchange works with, or
 * -EACCES for a tag that is not server_pk's.
 */
static int
prove(const struct bft_chan_client *hs, const uint8_t *server_pk,
    const uint8_t *shello, struct hs_keys *k)
{
	const uint8_t *server_eph = shello + 8;
	uint8_t tag[16];

	if (crypto_scalarmult(k->dh[0], hs->id->sk, server_pk) != 0 ||
	    crypto_scalarmult(k->dh[1], hs->eph.sk, server_pk) != 0 ||
	    crypto_scalarmult(k->dh[2], hs->id->sk, server_eph) != 0 ||
	    crypto_scalarmult(k->dh[3], hs->eph.sk, server_eph) != 0)
		return -EINVAL;
	derive(k, hs->chello, shello);
	confirm_tag(k->confirm, shello, BFT_CHAN_SHELLO_LEN - 16, tag);
	if (sodium_memcmp(tag, shello + BFT_CHAN_SHELLO_LEN - 16, 16) != 0)
		return -EACCES;
	memcpy(k->server_pk, server_pk, BFT_CHAN_PK_LEN);
	return 0;
}

int
bft_chan_client_finish(struct bft_chan_client *hs, const uint8_t *shello,
    struct bft_chan *ch, uint8_t *finish_out, const char **why)
{
	struct hs_keys k;
	unsigned cipher = shello[6];
	int rc = -EBADMSG;

	*why = "malformed server hello";
	if (memcmp(shello, "BFTS", 4) != 0)
		goto out;
	if (shello[4] != BFT_CHAN_VERSION) {
		rc = -EPROTONOSUPPORT;
		*why = "server runs another bftblk version (its channel, "
		    "hash or MACs differ): upgrade every node together";
		goto out;
	}
	if (shello[5] != BFT_CHAN_OK) {
		rc = shello[5];
		*why = bft_chan_status_str(rc);
		goto out;
	}
	rc = -EPROTO;
	*why = "server chose a cipher we did not offer";
	if ((cipher != BFT_CIPHER_AESGCM && cipher != BFT_CIPHER_CHACHA) ||
	    !(cipher & bft_chan_ciphers()))
		goto out;
	rc = prove(hs, hs->server_pk, shello, &k);
	/*
	 * A server being rotated may run either key; the same hello is
	 * checked under its next one, which needs no word from the server.
	 */
	if (rc != 0 && hs->has_next)
		rc = prove(hs, hs->server_pk_next, shello, &k);
	if (rc == -EINVAL)
		*why = "key exchange failed (bad server key)";
	else if (rc != 0)
		*why = "server failed to prove its key (wrong server.I.pk in "
		    "bftblk.conf, or someone in between)";
	if (rc != 0)
		goto out;
	/* Only now is the level known to be the server's. */
	rc = -EPROTONOSUPPORT;
	*why = "server runs a bftblk release more than one step from this "
	    "one: upgrade one release at a time";
	if (!bft_level_compatible(BFT_LEVEL, shello[7], 0))
		goto out;
	*why = "cannot set up the channel's ciphers";
	if ((rc = chan_setup(ch, hs->mode, (enum bft_chan_cipher)cipher,
	    k.c2s, k.s2c)) != 0)
		goto out;
	confirm_tag(k.finish, shello, BFT_CHAN_SHELLO_LEN, finish_out);
	ch->peer_level = shello[7];
	memcpy(ch->peer_pk, k.server_pk, BFT_CHAN_PK_LEN);
	*why = NULL;
	rc = 0;
out:
	sodium_memzero(&hs->eph, sizeof hs->eph);
	sodium_memzero(&k, sizeof k);
	return rc;
}

/* The 96-bit nonce of frame seq: the counter, little-endian, then 0. */
static void
seq_nonce(uint64_t seq, uint8_t nonce[12])
{
	memset(nonce, 0, 12);
	for (int i = 0; i < 8; i++)
		nonce[i] = (uint8_t)(seq >> (8 * i));
}

int
bft_chan_seal(struct bft_chan *ch, struct bft_buf *out, size_t off)
{
	return bft_chan_seal_tail(ch, out, off, NULL, 0);
}

int
bft_chan_seal_tail(struct bft_chan *ch, struct bft_buf *out, size_t off,
    const uint8_t *tail, size_t tail_len)
{
	uint8_t nonce[12], *frame, *body, *dst;
	size_t hlen = out->len - off - 4, blen = hlen + tail_len;
	int len, tlen = 0, fin;

	if (ch->mode == BFT_CHAN_PLAIN) {
		if (tail_len == 0)
			return 0;
		if ((dst = bft_buf_extend(out, tail_len)) == NULL)
			return -ENOMEM;
		memcpy(dst, tail, tail_len);
		return 0;
	}
	if (blen + BFT_CHAN_TAG_LEN > BFT_MAX_FRAME)
		return -EMSGSIZE;
	if (ch->tx_seq == UINT64_MAX)
		return -EOVERFLOW;
	if (bft_buf_extend(out, tail_len + BFT_CHAN_TAG_LEN) == NULL) {
		out->len = off + 4 + hlen;
		return -ENOMEM;
	}
	frame = out->data + off;
	body = frame + 4;
	bft_wire_put_len(frame, (uint32_t)(blen + BFT_CHAN_TAG_LEN));
	seq_nonce(ch->tx_seq++, nonce);
	/*
	 * The head in place (OpenSSL allows out == in for these AEADs), the
	 * tail from where it lies straight into the frame: the same stream,
	 * so the same ciphertext and tag as sealing one contiguous body.
	 */
	if (EVP_EncryptInit_ex(ch->tx, NULL, NULL, NULL, nonce) != 1 ||
	    EVP_EncryptUpdate(ch->tx, NULL, &len, frame, 4) != 1 ||
	    EVP_EncryptUpdate(ch->tx, body, &len, body, (int)hlen) != 1 ||
	    (tail_len > 0 && EVP_EncryptUpdate(ch->tx, body + len, &tlen,
	    tail, (int)tail_len) != 1) ||
	    EVP_EncryptFinal_ex(ch->tx, body + len + tlen, &fin) != 1 ||
	    EVP_CIPHER_CTX_ctrl(ch->tx, EVP_CTRL_AEAD_GET_TAG,
	    BFT_CHAN_TAG_LEN, body + blen) != 1)
		return -EIO;
	return 0;
}

int
bft_chan_open(struct bft_chan *ch, const uint8_t *prefix, uint8_t *body,
    uint32_t *len)
{
	uint8_t nonce[12];
	uint32_t clen;
	int olen, fin;

	if (ch->mode == BFT_CHAN_PLAIN)
		return 0;
	if (*len < BFT_CHAN_TAG_LEN)
		return -EBADMSG;
	if (ch->rx_seq == UINT64_MAX)
		return -EOVERFLOW;
	clen = *len - BFT_CHAN_TAG_LEN;
	seq_nonce(ch->rx_seq, nonce);
	/*
	 * Decrypting in place before the tag is checked is fine: on failure
	 * the connection is closed and the buffer never decoded.
	 */
	if (EVP_DecryptInit_ex(ch->rx, NULL, NULL, NULL, nonce) != 1 ||
	    EVP_DecryptUpdate(ch->rx, NULL, &olen, prefix, 4) != 1 ||
	    EVP_DecryptUpdate(ch->rx, body, &olen, body, (int)clen) != 1 ||
	    EVP_CIPHER_CTX_ctrl(ch->rx, EVP_CTRL_AEAD_SET_TAG,
	    BFT_CHAN_TAG_LEN, body + clen) != 1 ||
	    EVP_DecryptFinal_ex(ch->rx, body + olen, &fin) != 1)
		return -EBADMSG;
	ch->rx_seq++;
	*len = clen;
	return 0;
}
