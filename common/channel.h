/*
 * Authenticated, encrypted channels between a client and a server.
 *
 * Every party has a long-term X25519 key pair (written by `bftblk
 * keygen` and `bftblk client add`); a client knows each server's public
 * key from bftblk.conf and a server knows the public key and role of
 * every client allowed in.  A connection starts with two fixed-size
 * handshake messages in the clear:
 *
 *   client hello (BFT_CHAN_CHELLO_LEN bytes):
 *     "BFTC" | version | mode | level << 2 | ciphers | server index
 *            | cluster id (16) | client static pk (32)
 *            | client ephemeral pk (32)
 *   server hello (BFT_CHAN_SHELLO_LEN bytes):
 *     "BFTS" | version | status | cipher | level | server ephemeral pk
 *            (32) | confirmation tag (16)
 *
 *   client finish (BFT_CHAN_FINISH_LEN bytes): its confirmation tag
 *
 * Both sides hash four X25519 results (static-static, both
 * static-ephemeral pairs and ephemeral-ephemeral) with the transcript
 * of both hellos into one key per direction and two confirmation keys.
 * Only the holder of the server's static key can compute the tag the
 * client checks, and only the holder of the client's static key can
 * compute the finish tag the server checks before it reads any frame,
 * so the channel is mutually authenticated even in plain mode; the
 * ephemeral keys make each connection's keys fresh (a replayed hello
 * derives keys nobody can use) and keep past traffic secret if a
 * static key leaks later.  The client sends its finish and its first
 * frames together, so the handshake costs one round trip.
 *
 * A server whose key is being rotated (`bftblk server rotate`) has two
 * keys in bftblk.conf, and the client checks the one server hello under
 * each: nothing on the wire tells the rotation, so a server or client
 * of release 0.2.0 sees the handshake it knows.
 *
 * The levels (featureset.h) ride in bits release 0.2.0 left unused and
 * ignores: the top six bits of the client's cipher byte, which its
 * server masks off, and the server hello's fifth byte, which its client
 * never reads.  0.2.0 sends zeros there, which is level 0.  Both hellos
 * are hashed into the keys and the server's tag covers its own, so a
 * level that was altered in transit fails the handshake: the level each
 * end sees is the one the other sent.
 *
 * After the handshake a frame is the usual 4-byte big-endian length
 * followed by the msgpack body sealed with an AEAD: AES-256-GCM when
 * both ends have AES-NI, ChaCha20-Poly1305 otherwise.  Frames are sealed
 * with OpenSSL rather than libsodium: on 32 KiB here OpenSSL's
 * AES-256-GCM ran at 3.0-3.3 GB/s and its ChaCha20-Poly1305 at 1.8-1.9
 * GB/s, against 1.5-1.6 GB/s and 0.7-1.1 GB/s for libsodium's (which
 * stays for the key exchange and hashing).
 * The nonce is a per-direction frame counter and the length prefix is
 * associated data, so a replayed, reordered, dropped, truncated or
 * altered frame fails to open and the connection is closed.
 *
 * Mode "plain" (bftblk.conf channel = plain) keeps the authenticated
 * handshake, so identities and roles still apply, but sends frames in
 * the clear: it exists to measure what encryption costs and must not be
 * used on a network anyone else can reach.
 */
#ifndef BFTBLK_CHANNEL_H
#define BFTBLK_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

#include "proto.h"
#include "wire.h"

#define BFT_CHAN_PK_LEN		32
#define BFT_CHAN_TAG_LEN	16
#define BFT_CHAN_CHELLO_LEN	(4 + 4 + BFT_CLUSTER_ID_LEN + 2 * 32)
#define BFT_CHAN_SHELLO_LEN	(4 + 4 + 32 + 16)
#define BFT_CHAN_FINISH_LEN	16
/*
 * 2: H became BLAKE3.  A version-1 peer hashes with BLAKE2b and would
 * find every fragment corrupt, so the versions must not talk.
 * 3: MACs name the block (crypto.h).  A version-2 writer's MACs fail
 * every server's check, and its reads see forged timestamps.
 */
/*
 * 4: a STORE may carry the zero value (predicates.h): an empty fragment
 * under the zero cross-checksum.  A version-3 reader would never find
 * such a block safe, and a version-3 server refuses the STORE.  DROP
 * (wire.h) came within version 4, before its release: every version-4
 * server knows it, so a writer may send it to any server that lets it
 * in.
 */
#define BFT_CHAN_VERSION	4

enum bft_chan_mode {
	BFT_CHAN_AEAD = 0,
	BFT_CHAN_PLAIN = 1,
};

enum bft_chan_cipher {
	BFT_CIPHER_CHACHA = 1,		/* ChaCha20-Poly1305 (IETF) */
	BFT_CIPHER_AESGCM = 2,		/* AES-256-GCM, needs AES-NI */
};

/* Why a server turned a client away; carried in the server hello. */
enum bft_chan_status {
	BFT_CHAN_OK = 0,
	BFT_CHAN_UNKNOWN_CLIENT = 1,	/* public key not in bftblk.conf */
	BFT_CHAN_WRONG_CLUSTER = 2,	/* cluster id or server index */
	BFT_CHAN_WRONG_MODE = 3,	/* channel = aead vs plain */
	BFT_CHAN_NO_CIPHER = 4,		/* no cipher in common */
	BFT_CHAN_TOO_MANY = 5,		/* connection limit for this client */
	BFT_CHAN_BAD_HELLO = 6,		/* malformed client hello */
	/* The client's level is below the one the cluster was finalized at. */
	BFT_CHAN_TOO_OLD = 7,
};
/* Where the cipher byte keeps the level (featureset.h), and the mask. */
#define BFT_CHAN_LEVEL_SHIFT	2
#define BFT_CHAN_CIPHER_MASK	0x03u

const char *bft_chan_status_str(int status);

struct bft_chan_keypair {
	uint8_t pk[BFT_CHAN_PK_LEN];
	uint8_t sk[BFT_CHAN_PK_LEN];
};

/* The state of one established channel, one direction each way. */
struct bft_chan {
	enum bft_chan_mode mode;
	enum bft_chan_cipher cipher;
	uint64_t tx_seq, rx_seq;
	struct evp_cipher_ctx_st *tx, *rx;	/* keyed once, per frame: IV */
	uint8_t peer_finish[BFT_CHAN_FINISH_LEN];	/* server: expected */
	unsigned peer_level;		/* the other end's hello's level */
	/* Client: the server key that proved itself (server.I.pk or .next). */
	uint8_t peer_pk[BFT_CHAN_PK_LEN];
};

/* A client's side of the handshake between its hello and the reply. */
struct bft_chan_client {
	struct bft_chan_keypair eph;
	uint8_t chello[BFT_CHAN_CHELLO_LEN];
	const struct bft_chan_keypair *id;
	uint8_t server_pk[BFT_CHAN_PK_LEN];
	uint8_t server_pk_next[BFT_CHAN_PK_LEN];
	bool has_next;			/* bft_chan_client_next */
	enum bft_chan_mode mode;
};

/* What a server learns from a client hello. */
struct bft_chan_hello {
	unsigned version, mode, ciphers, server_index;
	unsigned level;			/* featureset.h; 0.2.0 sends 0 */
	uint8_t cluster_id[BFT_CLUSTER_ID_LEN];
	uint8_t client_pk[BFT_CHAN_PK_LEN];
	uint8_t client_eph[BFT_CHAN_PK_LEN];
};

/*
 * Generates a long-term key pair.  Derives pk from sk for loaders: 0,
 * or -EINVAL for a secret no public key comes from.
 */
void bft_chan_keypair_new(struct bft_chan_keypair *kp);
int bft_chan_keypair_from_sk(struct bft_chan_keypair *kp);

/* The ciphers this CPU runs fast enough to offer, as a bit mask. */
unsigned bft_chan_ciphers(void);

/*
 * Client: fills hs and writes the client hello into out
 * (BFT_CHAN_CHELLO_LEN bytes).
 */
void bft_chan_client_hello(struct bft_chan_client *hs,
    const struct bft_chan_keypair *id, const uint8_t *server_pk,
    const uint8_t *cluster_id, unsigned server_index,
    enum bft_chan_mode mode, uint8_t *out);

/*
 * Client: also accepts a server hello proven under next_pk, the key the
 * server is being rotated to (bftblk.conf server.I.pk.next).  Both keys
 * are tried on the one server hello, so a rotation costs no round trip
 * and the server needs to know nothing of it.  Call after
 * bft_chan_client_hello, which forgets any earlier one.
 */
void bft_chan_client_next(struct bft_chan_client *hs, const uint8_t *next_pk);

/*
 * Client: checks the server hello against hs, sets up ch and writes the
 * client finish to send (BFT_CHAN_FINISH_LEN bytes) into finish.
 * Returns one of three: 0; a positive enum bft_chan_status, the reason
 * the server refused us with (a refusal, not a broken reply); or a
 * negative errno when the reply is unusable: -EBADMSG malformed,
 * -EPROTONOSUPPORT another version, -EPROTO a cipher we did not offer,
 * -EINVAL a bad server key, -EACCES a confirmation tag that is wrong
 * (not the server we meant, or a tampered hello), -ENOMEM or -EIO
 * setting up the ciphers.  *why says it in words in every case but 0.
 */
int bft_chan_client_finish(struct bft_chan_client *hs, const uint8_t *shello,
    struct bft_chan *ch, uint8_t *finish, const char **why);

/*
 * Server: checks a client finish.  0, or -EACCES: not the client it
 * claims.
 */
int bft_chan_server_verify(const struct bft_chan *ch, const uint8_t *finish);

/*
 * Server: parses a client hello.  0, -EBADMSG when it is not one, or
 * -EPROTONOSUPPORT for another version or an unknown mode.
 */
int bft_chan_parse_hello(const uint8_t *chello, struct bft_chan_hello *h);

/*
 * Server: answers an accepted hello, setting up ch and writing the
 * server hello into out (BFT_CHAN_SHELLO_LEN bytes).  Returns 0,
 * -ENOTSUP with no cipher in common, -EINVAL when a key exchange fails
 * (a low-order public key), or -ENOMEM or -EIO setting up the ciphers.
 */
int bft_chan_server_accept(const struct bft_chan_keypair *id,
    const uint8_t *chello, const struct bft_chan_hello *h, unsigned ciphers,
    struct bft_chan *ch, uint8_t *out);

/* Server: a refusal, so the client can say why it was turned away. */
void bft_chan_server_refuse(enum bft_chan_status st, uint8_t *out);

/*
 * Server: turns away a client whose level is below finalized.  A level
 * 0 client (release 0.2.0) knows no BFT_CHAN_TOO_OLD, so it is told
 * the one thing it can say in words: that the server runs another
 * version and every node must be upgraded.
 */
void bft_chan_server_refuse_level(unsigned client_level, uint8_t *out);

/*
 * Seals the frame that starts at out->data + off (length prefix and
 * body, as bft_wire_encode appended it) in place: the body is
 * encrypted, a tag appended and the prefix updated.  Returns 0;
 * -ENOMEM when out cannot grow, -EMSGSIZE when the sealed frame would
 * exceed BFT_MAX_FRAME, -EOVERFLOW when the channel's frame counter is
 * spent (the connection must be made anew), -EIO when the cipher fails.
 */
int bft_chan_seal(struct bft_chan *ch, struct bft_buf *out, size_t off);

/*
 * The same for a frame whose last tail_len bytes are not in out yet
 * (bft_wire_encode_head): they are encrypted from tail straight into
 * out, or copied there on a plain channel.  The result is the frame
 * bft_chan_seal makes of the whole body, without a separate copy.
 */
int bft_chan_seal_tail(struct bft_chan *ch, struct bft_buf *out, size_t off,
    const uint8_t *tail, size_t tail_len);

/*
 * Opens a received frame body of *len bytes in place (prefix is the
 * frame's 4-byte length prefix, authenticated with it).  On success
 * *len is the plaintext length.  Returns 0, or -EBADMSG when it does
 * not authenticate (-EOVERFLOW once the frame counter is spent): the
 * connection must be closed.
 */
int bft_chan_open(struct bft_chan *ch, const uint8_t *prefix, uint8_t *body,
    uint32_t *len);

/* Forgets the keys (and frees the AES state). */
void bft_chan_clear(struct bft_chan *ch);

/* "ab12cd34": the first bytes of a public key in hex, for log lines. */
void bft_chan_fingerprint(const uint8_t *pk, char out[17]);

#endif
