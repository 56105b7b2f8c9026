/* What snapshots hold on the servers (snap_space.c), for snap list. */
#ifndef BFTBLK_ADMIN_SNAP_SPACE_H
#define BFTBLK_ADMIN_SNAP_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "bftblk.h"

struct admin_snap_space {
	uint64_t exclusive;	/* bytes kept only for it, on all servers */
	unsigned answered;	/* servers that said */
};

/*
 * sp[k] for snaps[k], asking every server of DIR's cluster as the client
 * of keys (NULL: DIR/client.key).  0, or a negative errno when the
 * cluster's files cannot be read; a server that cannot say is skipped.
 */
int admin_snap_space(const char *dir, const char *keys, unsigned timeout_s,
    const struct bftblk_snap *snaps, size_t n, struct admin_snap_space *sp);

#endif
