/*
 * A library handle's insides, shared by bftblk.c (options, loading,
 * I/O) and stats.c (info and statistics).
 */
#ifndef BFTBLK_HANDLE_INT_H
#define BFTBLK_HANDLE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "blockcache_int.h"
#include "bftblk.h"
#include "config.h"
#include "ec.h"
#include "engine_int.h"
#include "keys.h"
#include "lease_int.h"
#include "volcrypt.h"
#include "voltab_int.h"

struct bftblk {
	/* Options. */
	char *config_path, *keys_path, *ec_backend, *volume_key_path;
	char *server_key_path;		/* a peer: a server's own key file */
	char *stats_path;		/* stats-file= */
	char *metrics_addr;		/* metrics= */
	/*
	 * sealed=on, for a peer: registers hold values sealed by
	 * encrypt=on writers, which it reads as they are, unopened.
	 */
	bool sealed;
	bool encrypt;
	uint64_t export_size;		/* 0: the whole cluster disk */
	unsigned timeout_s, io_timeout_s;
	int senders;			/* senders=on|off; -1: by the CPUs */
	uint64_t writer_id;
	uint32_t volume_id;		/* volume-id=: 0, the cluster's disk */
	char *volume_name;		/* volume=: found in the table at load */
	char *volume_keys_dir;		/* volume-keys= */
	bool resolved;			/* volume= found: id, size, encryption */
	/* volume=V@S: snapshot S of V, read-only, at its boundary. */
	bool view;
	uint64_t view_gen;
	/*
	 * A clone, or a snapshot of one: the snapshots its never-written
	 * blocks read from, nearest first, each read through an engine of
	 * its own (clone.c).
	 */
	unsigned nparents;
	struct vt_parent parents[VT_DEPTH];
	struct bft_engine *parent_eng[VT_DEPTH];
	char **opts;			/* every option given, "k=v", to clone */
	size_t nopts;
	struct bft_engine_stats *stats_agg;	/* engine_int.h's p.agg */
	bool shared;			/* shared=on: no lease (lease.c) */
	bool shared_gen;		/* ... and its generation read (atomic) */
	unsigned lease_s;		/* lease=: its period */
	unsigned want_t;
	uint64_t cache_bytes;
	bftblk_log_fn *log;
	void *log_opaque;

	/* From bftblk_load. */
	bool loaded;
	uint32_t skip;			/* servers never connected to */
	struct bft_config cfg;
	struct bft_client_key key;
	struct bft_ec *ec;
	struct bft_volcrypt vc;

	/* From bftblk_connect. */
	struct bft_engine *eng;
	struct bft_lease lease;		/* a read-write handle's volume */
	/* encrypt=on: the plain engine the lease's registers go through. */
	struct bft_engine *lease_eng;
	struct bft_ec *lease_ec;
	struct bft_blockcache *cache;	/* NULL with cache=0 */
};

/*
 * A public struct's size as the caller was compiled (bftblk.h): at most
 * what this library knows, and at least its first version's, which is
 * all of it today.  0, or -EINVAL failed on h.
 */
int bftblk__check_size(const struct bftblk *h, const char *what, size_t size,
    size_t known);

/* "k=v k=v" (options.c): each through bftblk_set_option. */
int bftblk__set_options(struct bftblk *h, const char *options);
/*
 * The keys to sign a DROP or SNAP with, from the handle's key file as it
 * is now: MAC keys are rotated under running handles, and a retired
 * epoch's would be refused (docs/key-epochs.md).  The keys loaded by
 * bftblk_load when the file no longer loads as this cluster's.  Wipe
 * and free it after; NULL when out of memory.
 */
struct bft_client_key *bftblk__signing_key(struct bftblk *h);
void bftblk__signing_key_free(struct bft_client_key *k);

/*
 * volume=NAME at load (volume_open.c): finds the volume in the table
 * over a connection of its own, and sets the handle's volume id, size
 * and encryption from it.  0 or a negative errno (failed on h).
 */
int bftblk__volume_resolve(struct bftblk *h);
/*
 * An engine for plain registers (the volume table, leases), whatever
 * h's encryption: its own erasure code for 64 KiB values into *ecp.
 * NULL with the error recorded on h.
 */
struct bft_engine *bftblk__plain_engine(struct bftblk *h, struct bft_ec **ecp);
/*
 * What a name opens: a volume, or with "V@S" snapshot S of V ("@S":
 * of volume 0), whose v says the volume's name (for its key), id, and
 * the size and encryption it had when the snapshot was taken.
 */
struct vol_ref {
	struct bftblk_volume v;
	bool snap;
	uint64_t gen;			/* the snapshot's boundary */
	unsigned nparents;		/* a clone's: voltab_int.h */
	struct vt_parent parents[VT_DEPTH];
};
/* The entry's id, size and encryption into h (not yet loaded). */
int bftblk__volume_apply(struct bftblk *h, const struct vol_ref *ref);

/*
 * A clone's engines (clone.c): one view engine per parent in h, the
 * farthest first, each the next one's parent; p->parent is set to the
 * nearest.  0, or a negative errno failed on h.  stop stops them all.
 */
int bftblk__clone_start(struct bftblk *h, struct bft_engine_params *p);
void bftblk__clone_stop(struct bftblk *h);

#endif
