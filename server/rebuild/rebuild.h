/*
 * Rebuild: a server catching up with its peers by itself.  After being
 * down it compares digests of its lc timestamps with theirs, range by
 * range, and descends only into ranges that differ (PBFT's partition
 * tree of digests, flattened to a few levels), so a server that missed
 * K writes moves about K blocks.  A server whose data directory was new
 * does the same against every written block, and until that first pass
 * is complete it answers reads of blocks it does not hold with EAGAIN
 * rather than claim they were never written.
 *
 * For each block a peer holds newer, the server reads the block from
 * its peers through libbftblk, as any reader would (t+1 servers agreeing
 * on the value and its cross-checksum), re-encodes it, checks every
 * fragment's hash against that cross-checksum, and hands its own
 * fragment to its own handler as the writer's STORE and COMPLETE would
 * have: the handler checks the MAC vector under this server's key and
 * never moves lc back.  A lying peer can slow this down; it cannot make
 * the server adopt a value no writer wrote or an lc older than its own.
 *
 * The work runs on its own thread; the store is touched only on the
 * event loop, through calls the thread queues there.
 */
#ifndef BFTBLK_REBUILD_H
#define BFTBLK_REBUILD_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "config.h"
#include "../handler.h"
#include "../heal.h"
#include "keys.h"

#define BFT_REBUILD_MARKER	"rebuild-pending"
/*
 * Defaults of --rebuild-rate (bytes/s of blocks rebuilt) and
 * --rebuild-interval (s between comparisons once caught up).
 */
#define BFT_REBUILD_DEFAULT_RATE	(100u * 1000 * 1000)
/*
 * Default of --rebuild-busy-rate: the rebuild gives way to clients'
 * reads and writes while this server has served some within the last
 * second.
 */
#define BFT_REBUILD_DEFAULT_BUSY_RATE	(25u * 1000 * 1000)
#define BFT_REBUILD_DEFAULT_INTERVAL	60

struct bft_rebuild_opts {
	const char *config_path;	/* bftblk.conf, for the library */
	const char *key_path;		/* this server's key file */
	const char *data_dir;		/* holds the marker of a new server */
	uint64_t rate;			/* bytes/s of blocks rebuilt; 0: no limit */
	uint64_t busy_rate;		/* ... while clients use the server */
	unsigned interval_s;		/* between passes once caught up */
};

struct bft_rebuild;

/*
 * Writes the marker that makes a new data directory rebuild everything
 * before it serves reads of blocks it does not hold; call before the
 * server listens.  0, or -1 logged.
 */
int bft_rebuild_mark_new(const char *data_dir);

/*
 * Starts the thread; its progress goes to prog (the loop's, which
 * STATUS reports).  NULL with a logged reason.
 */
struct bft_rebuild *bft_rebuild_start(uv_loop_t *loop, struct bft_handler *h,
    const struct bft_config *cfg, const struct bft_server_key *key,
    const struct bft_rebuild_opts *o, struct bft_heal_progress *prog);
/* Asks for a pass now (a scrub found damage); any thread. */
void bft_rebuild_kick(struct bft_rebuild *rb);
/* Stops the thread (at its next check) and frees everything. */
void bft_rebuild_stop(struct bft_rebuild *rb);

#endif
