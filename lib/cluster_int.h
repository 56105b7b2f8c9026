/*
 * Whether the cluster is finalized for a feature (common/featureset.h,
 * docs/upgrades.md): what libbftblk asks before it writes anything
 * release 0.2.0 cannot read, such as a clone's volume-table entry.
 */
#ifndef BFTBLK_CLUSTER_INT_H
#define BFTBLK_CLUSTER_INT_H

#include "bftblk.h"

/*
 * Asks every one of the n servers, each over a session of its own,
 * which level it was finalized at.  Returns 1 when all n say at least
 * the level that brought feature (enum bft_feature), 0 when one says
 * less or runs release 0.2.0, or a negative errno with the error
 * recorded (bftblk_errmsg()): -EINVAL for an unknown feature, the
 * session's when a server cannot be asked and none said less.
 *
 * All n, not a quorum: finalizing is what makes each server refuse the
 * previous release, on the wire and on its data directory, so until
 * every server says it is, one of them could still be rolled back and
 * serve what was written to clients that cannot read it.  A Byzantine
 * server can only make this answer 0 (a lie that costs a feature, not
 * safety) or 1 alone among honest ones that said so too.
 */
int bftblk__cluster_finalized(struct bftblk *h, unsigned feature);

#endif
