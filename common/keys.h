/*
 * Key files written by `bftblk keygen`, in the same "key = value" form
 * as bftblk.conf.  A server key file holds only that server's k_i, so a
 * compromised server learns no other server's key; the client key file
 * holds every k_i (to build the MAC vector) and k_W (to sign
 * timestamps).  Loaders refuse files readable by group or others.
 *
 * server-I.key:  cluster-id, index = I, key = 64 hex digits,
 *                chan-key = 64 hex (the X25519 secret of its channels)
 * client.key:    cluster-id, name, role = rw, n, key.I = 64 hex for
 *                I = 0..n-1, writer-key = 64 hex, chan-key = 64 hex
 * NAME.key:      a read-only client: cluster-id, name, role = ro,
 *                chan-key; it holds no MAC key, so it cannot write even
 *                where a server would let it.
 * MAC key epochs (docs/key-epochs.md): a writer's and a server's file
 * may say "epoch = E" (0 when absent: every file written before
 * epochs) and, during a rotation, "next-epoch = E+1" with the next
 * epoch's keys: next-key (a server's), next-key.I and next-writer-key
 * (a writer's).  Checks accept a MAC under either epoch.
 *
 * volume key:    aead = aes256gcm | xchacha20poly1305, key = 64 hex
 *                (bftblk volume-key; the plugin's encrypt=on, see
 *                volcrypt.h).  Not tied to a cluster: it belongs to the
 *                data, and only plugin hosts ever hold it.
 */
#ifndef BFTBLK_KEYS_H
#define BFTBLK_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "channel.h"
#include "config.h"
#include "crypto.h"
#include "proto.h"

struct bft_server_key {
	uint8_t cluster_id[BFT_CLUSTER_ID_LEN];
	unsigned index;
	uint8_t k[BFT_KEY_LEN];
	struct bft_chan_keypair chan;
	uint32_t epoch;			/* k's */
	bool has_alt;			/* a rotation is under way: */
	uint32_t alt_epoch;		/* the other epoch accepted, */
	uint8_t k_alt[BFT_KEY_LEN];	/* under this key */
	/*
	 * The older epoch is being retired (server/reload.c): new values
	 * are checked under the newest alone, and the census
	 * (server/keys_census.c) drops the older key once no version
	 * stored here is under it.  Never in a key file.
	 */
	bool retiring;
};

struct bft_client_key {
	uint8_t cluster_id[BFT_CLUSTER_ID_LEN];
	unsigned n;
	uint8_t k[BFT_MAX_N][BFT_KEY_LEN];
	uint8_t kw[BFT_KEY_LEN];
	char name[BFT_NAME_LEN + 1];
	enum bft_role role;
	struct bft_chan_keypair chan;
	unsigned self;			/* role peer: whose k[self] this is */
	/*
	 * k[] and kw are what a writer signs under, of epoch epoch; during
	 * a rotation the other epoch's keys are accepted beside them.  A
	 * file says its next epoch there; a writer swaps the two once
	 * every server accepts the next (lib/engine_keys.c).
	 */
	uint32_t epoch;
	bool has_alt;
	uint32_t alt_epoch;
	uint8_t k_alt[BFT_MAX_N][BFT_KEY_LEN];
	uint8_t kw_alt[BFT_KEY_LEN];
};

/*
 * Each returns 0, or a negative errno with a reason in err, as
 * bft_config_load does (-EPERM: the file is readable by others).
 */
int bft_server_key_load(const char *path, struct bft_server_key *key,
			char *err, size_t errlen);
int bft_client_key_load(const char *path, struct bft_client_key *key,
			char *err, size_t errlen);
/*
 * The identity a server uses to connect to its peers, as a client key:
 * its channel key pair, role peer, name "server-I", and only its own MAC
 * key, k[self]: a peer never writes, but its reads can drop candidates
 * whose MAC entry for it does not verify, which it could never adopt.
 */
void bft_peer_key(const struct bft_server_key *sk, struct bft_client_key *ck);

/*
 * Write with mode 0600, refusing to overwrite.  0, or a negative errno
 * (-EEXIST when path exists).
 */
int bft_server_key_write(const char *path, const struct bft_server_key *key);
int bft_client_key_write(const char *path, const struct bft_client_key *key);

/*
 * dst's MAC keys and epochs made src's, every other field of dst (its
 * identity: name, role, channel key) kept: a writer's file after a
 * rotation, as `keys rotate` writes it and libbftblk takes it.
 */
void bft_client_key_take_macs(struct bft_client_key *dst,
    const struct bft_client_key *src);

/*
 * The keys a MAC check accepts (crypto.h): server i's k_i, or k_W
 * (i == BFT_MAX_N), in both epochs while a rotation is under way.  A
 * server retiring its older epoch accepts the newest alone.
 */
struct bft_mac_keys bft_server_mac_keys(const struct bft_server_key *key);
/*
 * A server's key of the newest epoch it holds, and that epoch: what
 * REAUTH checks under, and what the census counts versions against.
 */
const uint8_t *bft_server_newest_key(const struct bft_server_key *key);
uint32_t bft_server_newest_epoch(const struct bft_server_key *key);
struct bft_mac_keys bft_client_mac_keys(const struct bft_client_key *key,
    unsigned i);
/*
 * Whether key holds an epoch newer than the one it signs under: a
 * rotation's next, which a writer switches to once every server
 * accepts it, the reauth pass signs under and retire keeps.
 */
bool bft_client_key_next_pending(const struct bft_client_key *key);
/* Exchanges key's two epochs: it signs under the other from now on. */
void bft_client_key_swap(struct bft_client_key *key);

/* A volume key file: loaded and written as the others are. */
struct bft_volume_key;
int bft_volume_key_load(const char *path, struct bft_volume_key *key,
			char *err, size_t errlen);
int bft_volume_key_write(const char *path, const struct bft_volume_key *key);

#endif
