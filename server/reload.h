/* Rereading the client list of bftblk.conf on SIGHUP. */
#ifndef BFTBLK_RELOAD_H
#define BFTBLK_RELOAD_H

#include "config.h"

/*
 * Loads path and copies its client list, and the addresses and keys of
 * the servers other than self, into cfg.  0, or -1 (logged)
 * when the file does not load, leaving cfg as it was.
 */
int bft_reload_clients(const char *path, struct bft_config *cfg,
    unsigned self);

/*
 * Loads the server's key file at path and takes its MAC key epochs into
 * key (docs/key-epochs.md): a next epoch it names is accepted from now
 * on beside the one the server holds; a file of the next epoch alone
 * sets key->retiring (the census drops the older key later), and the
 * file of both again while retiring clears it.  The rest of the file
 * (the channel key, the index) takes effect at a restart.  1 when key
 * changed, 0 when not, -1 (logged) when the file does not load or asks
 * for what a reload does not do; key is then as it was.
 */
struct bft_server_key;
int bft_reload_key(const char *path, struct bft_server_key *key);

#endif
