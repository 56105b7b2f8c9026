/*
 * What a server's self-healing reports through STATUS: the progress of
 * rebuilding blocks from its peers and of scrubbing its own log.  The
 * healing side fills one of these and the handler reads it (the two
 * share the event loop, so no lock).  A handler without one reports
 * zeros: nothing rebuilt, nothing scrubbed.
 */
#ifndef BFTBLK_HEAL_H
#define BFTBLK_HEAL_H

#include <stdint.h>

#include "wire.h"

struct bft_heal_progress {
	uint64_t rebuild_state;		/* enum bft_rebuild_state */
	uint64_t rebuild_done, rebuild_total;	/* blocks */
	uint64_t rebuild_bytes;		/* rebuilt so far */
	uint64_t rebuild_rate;		/* bytes/s, recently */
	uint64_t scrub_done, scrub_total;
	uint64_t repaired_records;
	/*
	 * Damaged records found after open (by a scrub, or a fragment that
	 * failed its checksum when served); STATUS adds those open found.
	 */
	uint64_t damaged_records_later;
	/*
	 * For a recovery (rejuv.c) to know when both halves have finished
	 * since the restart: scrub passes ended and the last one's count of
	 * fragments checked, rebuild passes that caught up with the peers.
	 */
	uint64_t scrub_passes, scrub_checked;
	uint64_t rebuild_caught_up;
	uint64_t recovering;		/* enum bft_recovering */
	uint64_t recoveries;
};

#endif
