/*
 * DROP and SNAP (wire.h) of one volume at every server at once: what
 * deleting a volume sends once its table entry says it is being deleted,
 * so that the servers forget its blocks and compaction frees their
 * space; and what creating or deleting a snapshot sends, so that they
 * keep or forget its view.
 */
#ifndef BFTBLK_DROP_INT_H
#define BFTBLK_DROP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "keys.h"
#include "proto.h"

/*
 * Asks every server of cfg, each over a session of its own and all at
 * once, to drop volume vol, with the MAC vector of key (a writer's: it
 * holds every server's MAC key).  acked[i] is set for the servers that
 * answered 0, cleared for the others.  Returns how many acked (0..n),
 * with why naming those that did not (empty when all did); or -1 with
 * the error recorded (error_int.h), having sent nothing: EINVAL for
 * volume 0, a reserved volume (BFT_VOL_TABLE, BFT_VOL_LEASES) or a key
 * of another cluster, EPERM for a key that is not a writer's.  A
 * server waits at most timeout_ms for each step of its session.
 */
int bftblk__drop_volume(const struct bft_config *cfg,
    const struct bft_client_key *key, uint32_t vol, unsigned timeout_ms,
    bool acked[BFT_MAX_N], char *why, size_t whylen);
/*
 * The same for SNAP: every server keeps (add) or forgets volume vol's
 * view at boundary generation gen (docs/snapshots.md).  Volume 0 may
 * be snapshotted; the reserved volumes may not (-1, EINVAL).
 */
int bftblk__snap_volume(const struct bft_config *cfg,
    const struct bft_client_key *key, uint32_t vol, uint64_t gen,
    bool add, unsigned timeout_ms, bool acked[BFT_MAX_N], char *why,
    size_t whylen);

#endif
