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

#endif
