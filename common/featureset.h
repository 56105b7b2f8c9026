/*
 * Protocol levels and feature bits: what lets release N and release N-1
 * work together during a rolling upgrade (docs/upgrades.md).
 *
 * A level is what a release speaks on the wire and on disk.  Both ends
 * of a connection state theirs inside the channel handshake, whose
 * transcript the keys and both confirmation tags are derived from
 * (channel.h), so neither a man in the middle nor a replayed hello can
 * change it.  Release 0.2.0 predates this and says nothing, which
 * reads as level 0: it is recognised, never guessed.
 *
 * A feature is something level N-1 cannot read (a new message, a new
 * on-disk record, a new kind of volume-table entry).  It is usable only
 * once the cluster is finalized at a level that has it: each server
 * keeps, durably, the highest level `bftblk cluster finalize` recorded
 * on it, and refuses peers of a lower level from then on.
 *
 * (Not "features.h": with -Icommon that name would shadow glibc's.)
 */
#ifndef BFTBLK_FEATURESET_H
#define BFTBLK_FEATURESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Release 0.2.0: no level in its hellos. */
#define BFT_LEVEL_0_2_0		0u
/* This build's level: release 0.3.0. */
#define BFT_LEVEL		1u
/* Six bits of the client hello carry it (channel.h). */
#define BFT_LEVEL_MAX		63u

enum bft_feature {
	/*
	 * Volume-table entries for clones, whose bytes 112..127 are not
	 * zero: a 0.2.0 client rejects such an entry, and with it the
	 * volume table.
	 */
	BFT_FEAT_CLONE_ENTRIES = 0,
	/*
	 * Servers that let one writer have each generation of the volume
	 * table's admin lock (predicates.h, bft_lock_claim_refused): an
	 * admin may then trust its claim at once.  A 0.2.0 server takes
	 * any claim, so until every server is past it an admin waits out
	 * its rivals' writes.
	 */
	BFT_FEAT_LOCK_CLAIMS = 1,
	/*
	 * server.I.pk.next in bftblk.conf (`bftblk server rotate`): release
	 * 0.2.0 refuses a file with a key it does not know, so a host still
	 * on it could not load the file any more.  Nothing on the wire
	 * changes: the feature is the file's.
	 */
	BFT_FEAT_SERVER_KEY_ROTATION = 2,
	/*
	 * MAC key epochs (docs/key-epochs.md): epoch and next-epoch lines
	 * in key files, which release 0.2.0's loader refuses, and the
	 * epochs in STATUS a writer switches by.  A 0.2.0 server would
	 * refuse every write under the next epoch.
	 */
	BFT_FEAT_MAC_EPOCHS = 3,
	/*
	 * A server's own data directory: the files of compacted segments
	 * written again in place (server/store/store_reuse.c), so that the
	 * active segment may hold an earlier use's records past its end.
	 * Release 0.2.0's replay knows no such end; a finalized directory
	 * is one it refuses to open.
	 */
	BFT_FEAT_SEGMENT_REUSE = 4,
	BFT_FEAT_COUNT
};

/* The level that brought feature f, or -EINVAL for an unknown one. */
int bft_feature_level(unsigned f);

/*
 * Whether feature f may be used where the cluster was finalized at
 * level finalized: false for an unknown feature.
 */
bool bft_feature_usable(unsigned f, unsigned finalized);

/*
 * Whether a peer of level theirs may talk with us at level ours: within
 * one level either way (release N with N-1 and N+1), and not below the
 * level the cluster was finalized at.
 */
bool bft_level_compatible(unsigned ours, unsigned theirs,
    unsigned finalized);

/*
 * A release as one number for the wire (STATUS), major << 16 | minor
 * << 8 | patch, and back into "0.3.0" (out, truncated to len, is
 * returned); 0, which no release is, reads as "0.2.0", the release
 * that does not report itself.
 */
uint64_t bft_release_code(unsigned major, unsigned minor, unsigned patch);
char *bft_release_str(uint64_t code, char *out, size_t len);

#endif
