/*
 * libbftblk for servers rebuilding their fragments from their peers.
 * A front end never needs this: it exposes what a read decided on (the
 * candidate and the cross-checksum t+1 servers agreed on), which a
 * server checks against its own MAC key before it adopts the value.
 * It is libbftblk's one header shared outside lib/ (with
 * server/rebuild/, which links the static library), so its names are
 * internal (bftblk__): it includes common/ headers, is never installed,
 * and libbftblk.so does not export bftblk__peer_read.
 */
#ifndef BFTBLK_LIB_PEER_H
#define BFTBLK_LIB_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "bftblk.h"
#include "proto.h"
#include "volcrypt.h"

/* Blocks one bftblk__peer_read call may read. */
#define BFTBLK__PEER_BATCH	32
/*
 * The room for one value: a block, or with sealed=on (values that
 * encrypt=on writers sealed, read unopened) a block and its AEAD tag.
 */
#define BFTBLK__PEER_VALUE_MAX	BFT_SEALED_LEN

/* What a read returned a value under. */
struct bftblk__proof {
	bool zero;			/* never written: no candidate */
	struct bft_cand cand;		/* timestamp, nonce, MAC vector */
	uint8_t cc[BFT_MAX_N][BFT_HASH_LEN];	/* agreed by t+1 servers */
};

/*
 * Reads blocks[0..n) (n <= BFTBLK__PEER_BATCH) at once, each as an
 * ordinary protocol read, of the head when gen is BFT_GEN_MAX and of
 * the snapshot view at boundary gen otherwise: block i's value into values + i *
 * BFTBLK__PEER_VALUE_MAX, its proof into proofs[i], 0 or a negative
 * errno into errs[i]: -EMEDIUMTYPE when the servers hold values of the
 * other length (sealed or not; a handle with the other sealed= setting
 * reads them).  Returns 0, or a negative errno when nothing could be
 * tried (then errmsg says why); a block that fails only sets its errs
 * entry.
 */
int bftblk__peer_read(struct bftblk *h, uint64_t gen, const uint64_t *blocks,
    unsigned n, uint8_t *values, struct bftblk__proof *proofs, int *errs);

/* A snapshot's boundary: volume vol keeps its view at generation gen. */
struct bftblk__bound {
	uint32_t vol;
	uint64_t gen;
};

/*
 * The boundaries of the volume table's snapshots (not those being
 * deleted), read through the protocol as every client reads the table,
 * sorted by volume and then generation: at most max into out, how many
 * there are into *n.  0, or a negative errno with errmsg set.
 */
int bftblk__peer_bounds(struct bftblk *h, struct bftblk__bound *out,
    unsigned max, unsigned *n);

#endif
