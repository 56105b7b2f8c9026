/*
 * libbftblk for servers rebuilding their fragments from their peers.
 * A front end never needs this: it exposes what a read decided on (the
 * candidate and the cross-checksum t+1 servers agreed on), which a
 * server checks against its own MAC key before it adopts the value.
 * Includes common/ headers, so only the project's own programs use it.
 */
#ifndef BFTBLK_PEER_H
#define BFTBLK_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "bftblk.h"
#include "proto.h"
#include "volcrypt.h"

/* Blocks one bftblk_peer_read call may read. */
#define BFTBLK_PEER_BATCH	32
/*
 * The room for one value: a block, or with sealed=on (values that
 * encrypt=on writers sealed, read unopened) a block and its AEAD tag.
 */
#define BFTBLK_PEER_VALUE_MAX	BFT_SEALED_LEN

/* What a read returned a value under. */
struct bftblk_proof {
	bool zero;			/* never written: no candidate */
	struct bft_cand cand;		/* timestamp, nonce, MAC vector */
	uint8_t cc[BFT_MAX_N][BFT_HASH_LEN];	/* agreed by t+1 servers */
};

/*
 * Reads blocks[0..n) (n <= BFTBLK_PEER_BATCH) at once, each as an
 * ordinary protocol read: block i's value into values + i *
 * BFTBLK_PEER_VALUE_MAX, its proof into proofs[i], 0 or a negative
 * errno into errs[i]: -EMEDIUMTYPE when the servers hold values of the
 * other length (sealed or not; a handle with the other sealed= setting
 * reads them).  Returns 0, or a negative errno when nothing could be
 * tried (then errmsg says why); a block that fails only sets its errs
 * entry.
 */
int bftblk_peer_read(struct bftblk *h, const uint64_t *blocks, unsigned n,
    uint8_t *values, struct bftblk_proof *proofs, int *errs);

#endif
