/*
 * bftblk keys: rotating the cluster's MAC keys (docs/key-epochs.md),
 * one file per step: keys_rotate.c (new keys beside the old),
 * keys_reauth.c (stored versions given the new MACs) and keys_retire.c
 * (the old keys dropped).
 */
#ifndef BFTBLK_ADMIN_KEYS_CMD_H
#define BFTBLK_ADMIN_KEYS_CMD_H

#include <stdbool.h>
#include <stdint.h>

#include "admin.h"

struct bft_client_key;
struct bft_server_key;

struct keys_args {
	const char *dir, *keys;
	unsigned timeout_s;
	bool restart;			/* reauth: not from where it stopped */
	long epoch;			/* retire: the epoch named, or -1 */
	char keypath[ADMIN_PATH_MAX];
};

int keys_reauth(struct keys_args *a);
int keys_retire(struct keys_args *a);

/*
 * path replaced with a writer's (or a server's) key file through
 * path.tmp renamed over it.  0 or a negative errno.
 */
int keys_replace_client(const char *path, const struct bft_client_key *ck);
int keys_replace_server(const char *path, const struct bft_server_key *sk);

/*
 * Every other writer's DIR/NAME.key that bftblk.conf lists, given ck's
 * MAC keys (both epochs, or one); a listed writer without a file in DIR
 * is said, since its host needs the keys by other means.  The number of
 * files not written.
 */
struct bft_config;
unsigned keys_write_writers(const struct keys_args *a,
    const struct bft_config *cfg, const struct bft_client_key *ck);

/*
 * Each server's DIR/server-I.key, changed by change (false: the file is
 * not server i's of the keys ck has, and is left alone) and replaced; a
 * file that does not load is said, with the epoch whose key its host
 * needs.  The number of files not written.
 */
typedef bool keys_server_fn(struct bft_server_key *sk,
    const struct bft_client_key *ck, unsigned i);
unsigned keys_write_servers(const struct keys_args *a,
    const struct bft_config *cfg, const struct bft_client_key *ck,
    uint32_t epoch, keys_server_fn *change);

#endif
