/*
 * The channel (common/channel.c): a handshake between the right keys
 * gives both sides matching keys; every wrong key is caught at the step
 * that can catch it; sealed frames open once, in order, unaltered; and
 * the role table says who may send what.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>

#include <cmocka.h>

#include "channel.h"
#include "config.h"
#include "crypto.h"
#include "featureset.h"
#include "wire.h"

static struct bft_chan_keypair server_id, client_id, other_id;
static const uint8_t cluster[BFT_CLUSTER_ID_LEN] = { 1, 2, 3 };
/* Ciphers the server offers in handshake(); 0: all this CPU has. */
static unsigned offer_ciphers;

static int
setup(void **state)
{
	(void)state;
	if (bft_crypto_init() != 0)
		return -1;
	bft_chan_keypair_new(&server_id);
	bft_chan_keypair_new(&client_id);
	bft_chan_keypair_new(&other_id);
	return 0;
}

struct pair {
	struct bft_chan_client hs;
	struct bft_chan cli, srv;
	uint8_t ch[BFT_CHAN_CHELLO_LEN], sh[BFT_CHAN_SHELLO_LEN];
	uint8_t fin[BFT_CHAN_FINISH_LEN];
};

/*
 * Runs a handshake where the client believes the server's key is
 * believed_pk and the server knows the client as client_id.  Returns
 * what bft_chan_client_finish returned.
 */
static int
handshake(struct pair *p, const struct bft_chan_keypair *cid,
    const uint8_t *believed_pk, enum bft_chan_mode mode)
{
	struct bft_chan_hello h;
	const char *why;

	memset(p, 0, sizeof *p);
	bft_chan_client_hello(&p->hs, cid, believed_pk, cluster, 2, mode,
	    p->ch);
	assert_int_equal(bft_chan_parse_hello(p->ch, &h), 0);
	assert_memory_equal(h.client_pk, cid->pk, 32);
	assert_int_equal(h.server_index, 2);
	assert_int_equal(h.mode, mode);
	assert_memory_equal(h.cluster_id, cluster, sizeof cluster);
	assert_int_equal(bft_chan_server_accept(&server_id, p->ch, &h,
	    offer_ciphers ? offer_ciphers : bft_chan_ciphers(), &p->srv,
	    p->sh), 0);
	return bft_chan_client_finish(&p->hs, p->sh, &p->cli, p->fin, &why);
}

static void
free_pair(struct pair *p)
{
	bft_chan_clear(&p->cli);
	bft_chan_clear(&p->srv);
}

/* Encodes a FLUSH with the given id as one frame into b. */
static size_t
put_frame(struct bft_buf *b, uint64_t id)
{
	struct bft_msg m;
	size_t off = b->len;

	memset(&m, 0, sizeof m);
	m.type = BFT_FLUSH;
	m.id = id;
	assert_int_equal(bft_wire_encode(&m, 4, b), 0);
	return off;
}

static uint32_t
prefix(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/* Opens the frame at b+off with ch and decodes it; -1 if it fails. */
static int
open_frame(struct bft_chan *ch, uint8_t *frame, uint64_t *id)
{
	uint32_t len = prefix(frame);
	struct bft_msg m;
	const char *why;

	if (bft_chan_open(ch, frame, frame + 4, &len) != 0)
		return -1;
	assert_int_equal(bft_wire_decode(frame + 4, len, 4, &m, &why), 0);
	*id = m.id;
	return 0;
}

static void
test_handshake_and_frames(void **state)
{
	struct pair p;
	struct bft_buf b = { 0 }, plain = { 0 };
	size_t off1, off2;
	uint64_t id;

	(void)state;
	assert_int_equal(handshake(&p, &client_id, server_id.pk,
	    BFT_CHAN_AEAD), 0);
	assert_int_equal(bft_chan_server_verify(&p.srv, p.fin), 0);
	assert_int_equal(p.cli.cipher, p.srv.cipher);

	put_frame(&plain, 7);
	off1 = put_frame(&b, 7);
	assert_int_equal(bft_chan_seal(&p.cli, &b, off1), 0);
	off2 = put_frame(&b, 8);
	assert_int_equal(bft_chan_seal(&p.cli, &b, off2), 0);
	assert_int_equal(prefix(b.data + off1) + 4, off2 - off1);
	/*
	 * Ciphertext: the frame's body differs from the plain encoding.
	 * One byte alone matches by chance once in 256 runs; the whole
	 * body never does.
	 */
	assert_int_not_equal(memcmp(b.data + off1 + 4, plain.data + 4,
	    plain.len - 4), 0);
	assert_int_equal(open_frame(&p.srv, b.data + off1, &id), 0);
	assert_true(id == 7);
	assert_int_equal(open_frame(&p.srv, b.data + off2, &id), 0);
	assert_true(id == 8);
	bft_buf_free(&b);
	bft_buf_free(&plain);
	free_pair(&p);
}

static void
test_tampering(void **state)
{
	struct pair p;
	struct bft_buf b = { 0 };
	uint8_t copy[256];
	size_t off1, off2, len1;
	uint64_t id;

	(void)state;
	assert_int_equal(handshake(&p, &client_id, server_id.pk,
	    BFT_CHAN_AEAD), 0);
	off1 = put_frame(&b, 1);
	assert_int_equal(bft_chan_seal(&p.cli, &b, off1), 0);
	off2 = put_frame(&b, 2);
	assert_int_equal(bft_chan_seal(&p.cli, &b, off2), 0);
	len1 = off2 - off1;
	assert_true(len1 <= sizeof copy);

	/* Reordered: frame 2 first fails (its nonce is 1, not 0). */
	memcpy(copy, b.data + off2, b.len - off2);
	assert_int_equal(open_frame(&p.srv, copy, &id), -1);
	/* A flipped bit anywhere in the body or tag fails. */
	for (size_t i = 4; i < len1; i += 7) {
		memcpy(copy, b.data + off1, len1);
		copy[i] ^= 0x10;
		assert_int_equal(open_frame(&p.srv, copy, &id), -1);
	}
	/* So does a changed length prefix (it is associated data). */
	memcpy(copy, b.data + off1, len1);
	copy[3]--;
	assert_int_equal(open_frame(&p.srv, copy, &id), -1);
	/* The real frame 1 still opens: failures consumed no nonce. */
	memcpy(copy, b.data + off1, len1);
	assert_int_equal(open_frame(&p.srv, copy, &id), 0);
	assert_true(id == 1);
	/* Replayed frame 1 fails: the receiver expects nonce 1 now. */
	memcpy(copy, b.data + off1, len1);
	assert_int_equal(open_frame(&p.srv, copy, &id), -1);
	assert_int_equal(open_frame(&p.srv, b.data + off2, &id), 0);
	assert_true(id == 2);
	/* The two directions never share a key: a frame sealed for the
	 * server does not open as one from the server. */
	b.len = 0;
	off1 = put_frame(&b, 3);
	assert_int_equal(bft_chan_seal(&p.cli, &b, off1), 0);
	assert_int_equal(open_frame(&p.cli, b.data + off1, &id), -1);
	bft_buf_free(&b);
	free_pair(&p);
}

static void
test_wrong_keys(void **state)
{
	struct pair p;
	const char *why;
	struct bft_chan_hello h;
	uint8_t sh[BFT_CHAN_SHELLO_LEN];
	struct bft_chan srv2;

	(void)state;
	/* A client that expects another server's key rejects the tag. */
	assert_int_equal(handshake(&p, &client_id, other_id.pk,
	    BFT_CHAN_AEAD), -EACCES);
	free_pair(&p);
	/*
	 * A client that claims client_id's public key without its secret
	 * (here: other_id's secret with client_id's public key) computes
	 * other keys, so its finish does not verify.
	 */
	{
		struct bft_chan_keypair liar = other_id;

		memcpy(liar.pk, client_id.pk, 32);
		assert_int_equal(handshake(&p, &liar, server_id.pk,
		    BFT_CHAN_AEAD), -EACCES);
		free_pair(&p);
	}
	/* A changed byte of the server hello breaks its tag. */
	memset(&p, 0, sizeof p);
	bft_chan_client_hello(&p.hs, &client_id, server_id.pk, cluster, 0,
	    BFT_CHAN_AEAD, p.ch);
	assert_int_equal(bft_chan_parse_hello(p.ch, &h), 0);
	assert_int_equal(bft_chan_server_accept(&server_id, p.ch, &h,
	    bft_chan_ciphers(), &srv2, sh), 0);
	sh[20] ^= 1;
	assert_int_equal(bft_chan_client_finish(&p.hs, sh, &p.cli, p.fin,
	    &why), -EACCES);
	bft_chan_clear(&srv2);
	/* A replayed client hello gets a fresh server key: other keys. */
	{
		struct bft_chan s1, s2;
		uint8_t sh1[BFT_CHAN_SHELLO_LEN], sh2[BFT_CHAN_SHELLO_LEN];

		assert_int_equal(bft_chan_server_accept(&server_id, p.ch, &h,
		    bft_chan_ciphers(), &s1, sh1), 0);
		assert_int_equal(bft_chan_server_accept(&server_id, p.ch, &h,
		    bft_chan_ciphers(), &s2, sh2), 0);
		struct bft_buf b1 = { 0 }, b2 = { 0 };

		/* Same plaintext, same counter: only the keys can differ. */
		assert_int_equal(bft_chan_seal(&s1, &b1, put_frame(&b1, 4)), 0);
		assert_int_equal(bft_chan_seal(&s2, &b2, put_frame(&b2, 4)), 0);
		assert_int_equal(b1.len, b2.len);
		assert_memory_not_equal(b1.data, b2.data, b1.len);
		bft_buf_free(&b1);
		bft_buf_free(&b2);
		bft_chan_clear(&s1);
		bft_chan_clear(&s2);
	}
}

static void
test_refusal_and_hello_parsing(void **state)
{
	struct bft_chan_client hs;
	struct bft_chan ch;
	struct bft_chan_hello h;
	uint8_t chello[BFT_CHAN_CHELLO_LEN], sh[BFT_CHAN_SHELLO_LEN];
	uint8_t fin[BFT_CHAN_FINISH_LEN];
	const char *why;

	(void)state;
	bft_chan_client_hello(&hs, &client_id, server_id.pk, cluster, 1,
	    BFT_CHAN_AEAD, chello);
	bft_chan_server_refuse(BFT_CHAN_UNKNOWN_CLIENT, sh);
	assert_int_equal(bft_chan_client_finish(&hs, sh, &ch, fin, &why),
	    BFT_CHAN_UNKNOWN_CLIENT);
	assert_non_null(strstr(why, "unknown client key"));
	/* A server of the old version is named as such, not as garbage. */
	bft_chan_client_hello(&hs, &client_id, server_id.pk, cluster, 1,
	    BFT_CHAN_AEAD, chello);
	bft_chan_server_refuse(BFT_CHAN_UNKNOWN_CLIENT, sh);
	sh[4] = 1;
	assert_int_equal(bft_chan_client_finish(&hs, sh, &ch, fin, &why),
	    -EPROTONOSUPPORT);
	assert_non_null(strstr(why, "another bftblk version"));
	bft_chan_client_hello(&hs, &client_id, server_id.pk, cluster, 1,
	    BFT_CHAN_AEAD, chello);
	/* Bad magic, version and mode are refused by the parser. */
	chello[0] = 'X';
	assert_int_equal(bft_chan_parse_hello(chello, &h), -EBADMSG);
	chello[0] = 'B';
	chello[4] = BFT_CHAN_VERSION + 1;
	assert_int_equal(bft_chan_parse_hello(chello, &h), -EPROTONOSUPPORT);
	/* Version 1 hashed with BLAKE2b: it must not pass for this one. */
	chello[4] = 1;
	assert_int_equal(bft_chan_parse_hello(chello, &h), -EPROTONOSUPPORT);
	chello[4] = BFT_CHAN_VERSION;
	chello[5] = 7;
	assert_int_equal(bft_chan_parse_hello(chello, &h), -EPROTONOSUPPORT);
	/* No cipher in common: the server does not accept. */
	chello[5] = BFT_CHAN_AEAD;
	assert_int_equal(bft_chan_parse_hello(chello, &h), 0);
	h.ciphers = 0;
	assert_int_equal(bft_chan_server_accept(&server_id, chello, &h,
	    bft_chan_ciphers(), &ch, sh), -ENOTSUP);
	/* A low-order client key makes the key exchange fail. */
	h.ciphers = bft_chan_ciphers();
	memset(h.client_eph, 0, 32);
	assert_int_equal(bft_chan_server_accept(&server_id, chello, &h,
	    bft_chan_ciphers(), &ch, sh), -EINVAL);
	assert_string_equal(bft_chan_status_str(99), "unknown refusal");
}

/*
 * bft_wire_encode_head + bft_chan_seal_tail (the fragment sealed from
 * where it lies) make exactly the frame bft_wire_encode + bft_chan_seal
 * make, in both modes, and it opens to the same fragment.
 */
static void
seal_tail_case(enum bft_chan_mode mode, uint8_t type, uint32_t flen)
{
	static uint8_t frag[BFT_MAX_FRAG];
	struct bft_buf a = { 0 }, b = { 0 };
	struct bft_msg m, d;
	const uint8_t *tail;
	const char *why;
	size_t tlen;
	uint32_t len;
	struct pair p;

	assert_int_equal(handshake(&p, &client_id, server_id.pk, mode), 0);
	for (uint32_t i = 0; i < flen; i++)
		frag[i] = (uint8_t)(i * 7 + 1);
	memset(&m, 0, sizeof m);
	m.type = type;
	m.id = 42;
	m.block = 9;
	m.ts.num = 3;
	m.has_cc = true;
	m.frag = frag;
	m.frag_len = flen;
	bft_buf_append(&a, "xy", 2);	/* frames need not start at 0 */
	bft_buf_append(&b, "xy", 2);
	assert_int_equal(bft_wire_encode(&m, 4, &a), 0);
	assert_int_equal(bft_chan_seal(&p.cli, &a, 2), 0);
	p.cli.tx_seq = 0;		/* the same nonce, for the same bytes */
	assert_int_equal(bft_wire_encode_head(&m, 4, &b, &tail, &tlen), 0);
	assert_true(tlen == flen && tail == (flen ? frag : NULL));
	assert_int_equal(bft_chan_seal_tail(&p.cli, &b, 2, tail, tlen), 0);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.data, b.data, a.len);
	len = prefix(b.data + 2);
	assert_int_equal(len + 6, b.len);
	assert_int_equal(bft_chan_open(&p.srv, b.data + 2, b.data + 6, &len),
	    0);
	assert_int_equal(bft_wire_decode(b.data + 6, len, 4, &d, &why), 0);
	assert_int_equal(d.frag_len, flen);
	assert_memory_equal(d.frag, frag, flen);
	bft_buf_free(&a);
	bft_buf_free(&b);
	free_pair(&p);
}

static void
test_seal_tail(void **state)
{
	static const uint32_t lens[] = { 0, 1, 15, 16, 17, 1001, 32848,
	    BFT_MAX_FRAG };

	(void)state;
	/* Both AEADs: each must stream across the head/tail boundary. */
	for (offer_ciphers = 0; offer_ciphers <= BFT_CIPHER_CHACHA;
	    offer_ciphers += BFT_CIPHER_CHACHA) {
		if ((offer_ciphers & bft_chan_ciphers()) != offer_ciphers)
			continue;
		for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
			seal_tail_case(BFT_CHAN_AEAD, BFT_STORE, lens[i]);
			seal_tail_case(BFT_CHAN_PLAIN, BFT_STORE, lens[i]);
			seal_tail_case(BFT_CHAN_AEAD, BFT_COLLECT | BFT_ACK,
			    lens[i]);
			seal_tail_case(BFT_CHAN_AEAD, BFT_FILTER | BFT_ACK,
			    lens[i]);
		}
	}
	offer_ciphers = 0;
}

static void
test_plain_mode(void **state)
{
	struct pair p;
	struct bft_buf b = { 0 };
	uint8_t bad[BFT_CHAN_FINISH_LEN];
	size_t off;
	uint64_t id;

	(void)state;
	assert_int_equal(handshake(&p, &client_id, server_id.pk,
	    BFT_CHAN_PLAIN), 0);
	/* The finish still proves the client's key in plain mode. */
	memcpy(bad, p.fin, sizeof bad);
	bad[0] ^= 1;
	assert_int_equal(bft_chan_server_verify(&p.srv, bad), -EACCES);
	assert_int_equal(bft_chan_server_verify(&p.srv, p.fin), 0);
	off = put_frame(&b, 5);
	assert_int_equal(bft_chan_seal(&p.cli, &b, off), 0);
	/* Unsealed: the msgpack array header is in the clear. */
	assert_int_equal(b.data[off + 4] & 0xf0, 0x90);
	assert_int_equal(open_frame(&p.srv, b.data + off, &id), 0);
	assert_true(id == 5);
	bft_buf_free(&b);
	free_pair(&p);
}

static void
test_ciphers_both(void **state)
{
	(void)state;
	/* ChaCha20-Poly1305 alone, as on a CPU without AES-NI. */
	for (unsigned offer = BFT_CIPHER_CHACHA; offer <= 3; offer++) {
		struct bft_chan_client hs;
		struct bft_chan cli, srv;
		struct bft_chan_hello h;
		uint8_t chello[BFT_CHAN_CHELLO_LEN], sh[BFT_CHAN_SHELLO_LEN];
		uint8_t fin[BFT_CHAN_FINISH_LEN];
		struct bft_buf b = { 0 };
		const char *why;
		uint64_t id;
		size_t off;

		if ((offer & bft_chan_ciphers()) != offer)
			continue;
		bft_chan_client_hello(&hs, &client_id, server_id.pk, cluster,
		    0, BFT_CHAN_AEAD, chello);
		assert_int_equal(bft_chan_parse_hello(chello, &h), 0);
		assert_int_equal(bft_chan_server_accept(&server_id, chello, &h,
		    offer, &srv, sh), 0);
		assert_int_equal(bft_chan_client_finish(&hs, sh, &cli, fin,
		    &why), 0);
		assert_int_equal(cli.cipher, offer == BFT_CIPHER_CHACHA ?
		    BFT_CIPHER_CHACHA : BFT_CIPHER_AESGCM);
		off = put_frame(&b, 9);
		assert_int_equal(bft_chan_seal(&srv, &b, off), 0);
		assert_int_equal(open_frame(&cli, b.data + off, &id), 0);
		assert_true(id == 9);
		bft_buf_free(&b);
		bft_chan_clear(&cli);
		bft_chan_clear(&srv);
	}
}

static void
test_roles(void **state)
{
	static const uint8_t writes[] = { BFT_CLOCK, BFT_STORE, BFT_COMPLETE,
	    BFT_DROP };
	static const uint8_t reads[] = { BFT_HELLO, BFT_COLLECT, BFT_FILTER,
	    BFT_REPAIR, BFT_FLUSH };

	(void)state;
	for (size_t i = 0; i < sizeof writes; i++) {
		assert_true(bft_role_permits(BFT_ROLE_RW, writes[i]));
		assert_false(bft_role_permits(BFT_ROLE_RO, writes[i]));
		assert_false(bft_role_permits(BFT_ROLE_NONE, writes[i]));
	}
	for (size_t i = 0; i < sizeof reads; i++) {
		assert_true(bft_role_permits(BFT_ROLE_RW, reads[i]));
		assert_true(bft_role_permits(BFT_ROLE_RO, reads[i]));
		assert_false(bft_role_permits(BFT_ROLE_NONE, reads[i]));
	}
	/* Replies and unknown types are nobody's requests. */
	assert_false(bft_role_permits(BFT_ROLE_RW, BFT_STORE | BFT_ACK));
	assert_false(bft_role_permits(BFT_ROLE_RW, 0));
	assert_false(bft_role_permits(BFT_ROLE_RW, 42));
}

/*
 * Levels (featureset.h): each end learns the other's from the hellos,
 * a release 0.2.0 hello (no level bits) reads as level 0 and gets a
 * server hello it accepts, an altered level fails the handshake, and a
 * finalized server's refusal says why in words either release knows.
 */
static void
test_levels(void **state)
{
	struct bft_chan_hello h;
	struct pair p;
	const char *why;
	uint8_t sh[BFT_CHAN_SHELLO_LEN];

	(void)state;
	assert_int_equal(handshake(&p, &client_id, server_id.pk,
	    BFT_CHAN_AEAD), 0);
	assert_int_equal(p.ch[6] >> BFT_CHAN_LEVEL_SHIFT, BFT_LEVEL);
	assert_int_equal(p.sh[7], BFT_LEVEL);
	assert_int_equal(p.cli.peer_level, BFT_LEVEL);
	assert_int_equal(p.srv.peer_level, BFT_LEVEL);
	free_pair(&p);

	/* Release 0.2.0's hello: the cipher byte holds ciphers alone. */
	memset(&p, 0, sizeof p);
	bft_chan_client_hello(&p.hs, &client_id, server_id.pk, cluster, 2,
	    BFT_CHAN_AEAD, p.ch);
	p.ch[6] &= BFT_CHAN_CIPHER_MASK;
	memcpy(p.hs.chello, p.ch, sizeof p.ch);
	assert_int_equal(bft_chan_parse_hello(p.ch, &h), 0);
	assert_int_equal(h.level, BFT_LEVEL_0_2_0);
	assert_int_equal(h.ciphers, bft_chan_ciphers());
	assert_int_equal(bft_chan_server_accept(&server_id, p.ch, &h,
	    bft_chan_ciphers(), &p.srv, p.sh), 0);
	assert_int_equal(p.srv.peer_level, 0);
	/* The bytes release 0.2.0 checks are its own; it reads no more. */
	assert_memory_equal(p.sh, "BFTS\x04\x00", 6);
	assert_int_equal(bft_chan_client_finish(&p.hs, p.sh, &p.cli, p.fin,
	    &why), 0);
	free_pair(&p);

	/* A level changed in transit: the server's tag no longer fits. */
	memset(&p, 0, sizeof p);
	bft_chan_client_hello(&p.hs, &client_id, server_id.pk, cluster, 2,
	    BFT_CHAN_AEAD, p.ch);
	assert_int_equal(bft_chan_parse_hello(p.ch, &h), 0);
	assert_int_equal(bft_chan_server_accept(&server_id, p.ch, &h,
	    bft_chan_ciphers(), &p.srv, p.sh), 0);
	p.sh[7] = 0;
	assert_int_equal(bft_chan_client_finish(&p.hs, p.sh, &p.cli, p.fin,
	    &why), -EACCES);
	bft_chan_clear(&p.srv);
	/* And one in the client hello: other keys, so other tags. */
	memset(&p, 0, sizeof p);
	bft_chan_client_hello(&p.hs, &client_id, server_id.pk, cluster, 2,
	    BFT_CHAN_AEAD, p.ch);
	p.ch[6] &= BFT_CHAN_CIPHER_MASK;
	assert_int_equal(bft_chan_parse_hello(p.ch, &h), 0);
	assert_int_equal(bft_chan_server_accept(&server_id, p.ch, &h,
	    bft_chan_ciphers(), &p.srv, p.sh), 0);
	assert_int_equal(bft_chan_client_finish(&p.hs, p.sh, &p.cli, p.fin,
	    &why), -EACCES);
	bft_chan_clear(&p.srv);

	/* Finalized: 0.2.0 hears "another version", later ones the why. */
	memset(&p, 0, sizeof p);
	bft_chan_client_hello(&p.hs, &client_id, server_id.pk, cluster, 2,
	    BFT_CHAN_AEAD, p.ch);
	bft_chan_server_refuse_level(BFT_LEVEL_0_2_0, sh);
	assert_memory_equal(sh, "BFTS", 4);
	assert_true(sh[4] != BFT_CHAN_VERSION);
	assert_int_equal(bft_chan_client_finish(&p.hs, sh, &p.cli, p.fin,
	    &why), -EPROTONOSUPPORT);
	assert_non_null(strstr(why, "another bftblk version"));
	bft_chan_client_hello(&p.hs, &client_id, server_id.pk, cluster, 2,
	    BFT_CHAN_AEAD, p.ch);
	bft_chan_server_refuse_level(1, sh);
	assert_int_equal(bft_chan_client_finish(&p.hs, sh, &p.cli, p.fin,
	    &why), BFT_CHAN_TOO_OLD);
	assert_non_null(strstr(why, "finalized"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handshake_and_frames),
		cmocka_unit_test(test_tampering),
		cmocka_unit_test(test_wrong_keys),
		cmocka_unit_test(test_refusal_and_hello_parsing),
		cmocka_unit_test(test_plain_mode),
		cmocka_unit_test(test_seal_tail),
		cmocka_unit_test(test_ciphers_both),
		cmocka_unit_test(test_roles),
		cmocka_unit_test(test_levels),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
