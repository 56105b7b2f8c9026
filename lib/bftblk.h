/*
 * libbftblk: a client of a bftblk cluster, a disk of 64 KiB blocks kept
 * by n = 3t+1 servers of which up to t may be Byzantine.  This is the
 * engine behind the nbdkit plugin and the admin tool, for any front end.
 *
 * A handle is created, given options (the plugin's parameters), loaded
 * (files read and checked, no thread yet) and connected (an event-loop
 * thread starts and reaches the servers).  I/O calls may then come from
 * any number of threads at once; each returns when its blocks are done.
 *
 * Errors: every int-returning call returns 0 or a negative errno, and
 * bftblk_errmsg() then says why in a sentence.  The message belongs to
 * the calling thread, as errno does, so threads sharing a handle never
 * see each other's.  Events worth an operator's eye go to the log
 * callback (stderr with a time stamp by default).
 */
#ifndef BFTBLK_H
#define BFTBLK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The project's version, kept here and nowhere else: the server, the
 * admin tool and the plugin print these, and the Makefile reads them.
 * A front end compiled against one version may check at run time that
 * the library it loaded is the same or newer (bftblk_version()).
 */
#define BFTBLK_VERSION_MAJOR	0
#define BFTBLK_VERSION_MINOR	3
#define BFTBLK_VERSION_PATCH	0
#define BFTBLK_VERSION_STR_(a, b, c)	#a "." #b "." #c
#define BFTBLK_VERSION_STR(a, b, c)	BFTBLK_VERSION_STR_(a, b, c)
#define BFTBLK_VERSION_STRING	BFTBLK_VERSION_STR(BFTBLK_VERSION_MAJOR, \
	BFTBLK_VERSION_MINOR, BFTBLK_VERSION_PATCH)
/* One number that grows with every version: for #if comparisons. */
#define BFTBLK_VERSION_CODE(a, b, c)	((a) * 10000 + (b) * 100 + (c))
#define BFTBLK_VERSION	BFTBLK_VERSION_CODE(BFTBLK_VERSION_MAJOR, \
	BFTBLK_VERSION_MINOR, BFTBLK_VERSION_PATCH)

/*
 * The loaded library's version: "MAJOR.MINOR.PATCH", and each number
 * into the pointers that are not NULL.
 */
const char *bftblk_version(int *major, int *minor, int *patch);

#define BFTBLK_BLOCK_SIZE	65536
#define BFTBLK_MAX_SERVERS	16

struct bftblk;

enum bftblk_log_level {
	BFTBLK_LOG_ERROR, BFTBLK_LOG_WARN, BFTBLK_LOG_INFO, BFTBLK_LOG_DEBUG,
};
typedef void bftblk_log_fn(void *opaque, enum bftblk_log_level level,
    const char *msg);

/* NULL with errno ENOMEM. */
struct bftblk *bftblk_create(void);
/* Before bftblk_load; NULL fn restores the default (stderr). */
void bftblk_set_log(struct bftblk *h, bftblk_log_fn *fn, void *opaque);
/*
 * Before bftblk_load: one option, checked as it is given (-EINVAL with
 * the reason in bftblk_errmsg, an unknown key told the known ones).
 * config is required, and keys or server-key; bftblk_options_help()
 * lists them all, and nbdkit-bftblk-plugin(1) says more.
 * server-key=FILE connects as that server, a peer of the others: it
 * reads, never writes (-EPERM), and skips the server whose key it is.
 */
int bftblk_set_option(struct bftblk *h, const char *key, const char *value);
/*
 * Every option bftblk_set_option takes: "key=VALUE" padded to 16
 * columns and what it does, further lines indented to match, as
 * nbdkit --help shows a plugin's parameters.  Static, never NULL.
 */
const char *bftblk_options_help(void);
/* Reads and checks the configuration and keys; starts no thread. */
int bftblk_load(struct bftblk *h);
/* Loads if needed, starts the event loop and connects (asynchronously). */
int bftblk_connect(struct bftblk *h);
/*
 * One call for the common case: create, options "k=v k=v", connect.
 * keys may be NULL when the options name server-key.
 */
int bftblk_open(const char *config, const char *keys, const char *options,
    struct bftblk **hp);
/* Stops the loop and frees everything; in-flight I/O must be done. */
void bftblk_close(struct bftblk *h);

/* The calling thread's last failure on h (NULL h: a failed bftblk_open). */
const char *bftblk_errmsg(const struct bftblk *h);

struct bftblk_info {
	uint64_t size;			/* bytes exported */
	uint32_t block_size;		/* BFTBLK_BLOCK_SIZE */
	unsigned t, n;
	int readonly;			/* a read-only key, or a snapshot */
	const char *client_name;	/* from the key file */
	const char *ec_backend;		/* liberasurecode's backend */
	const char *encryption;		/* "off" or the AEAD's name */
};
/*
 * After bftblk_load; the strings live as long as h.  size is sizeof
 * *info as the caller was compiled: the structs these calls fill only
 * grow at their end, so a program built against an older header gets
 * the fields it knows, and one built against a newer header than the
 * library is refused (-EINVAL) rather than handed garbage.
 */
int bftblk_get_info(struct bftblk *h, struct bftblk_info *info,
    size_t size);

#define BFTBLK_FUA	1u		/* flush once written */

/* Any offset and length within the disk; never a partial success. */
int bftblk_pread(struct bftblk *h, void *buf, size_t count, uint64_t offset);
int bftblk_pwrite(struct bftblk *h, const void *buf, size_t count,
    uint64_t offset, unsigned flags);
/*
 * Zero and trim: the range then reads as zeros, and the whole blocks in
 * it hold no data on the servers (the zero value, predicates.h).
 */
int bftblk_zero(struct bftblk *h, size_t count, uint64_t offset,
    unsigned flags);
int bftblk_trim(struct bftblk *h, size_t count, uint64_t offset,
    unsigned flags);
/* Writes before it survive a power failure of up to t servers. */
int bftblk_flush(struct bftblk *h);

/* What the client saw of server i (a snapshot; counters only grow). */
struct bftblk_server_stats {
	int connected;			/* channel up and HELLO accepted */
	uint64_t connects, disconnects;
	uint64_t replies, error_replies;
	uint64_t timeouts;		/* silent when a round ran out */
	uint64_t mismatched;		/* replies to a request never made */
	uint64_t forged_ts;		/* timestamps no writer signed */
	uint64_t bad_fragments;		/* fragments failing their hash */
};

struct bftblk_stats {
	uint64_t reads, writes, flushes;
	uint64_t fast_reads, fast_read_fallbacks, read_restarts, repairs;
	uint64_t fast_writes, fast_write_fallbacks;
	uint64_t timeouts, reconnects, forged_ts;
	uint64_t cache_hits, cache_misses, cache_stale, coalesced;
	unsigned cached_blocks, cache_capacity;
	unsigned nservers;
	struct bftblk_server_stats server[BFTBLK_MAX_SERVERS];
};
/* size: sizeof *s, as for bftblk_get_info. */
int bftblk_get_stats(struct bftblk *h, struct bftblk_stats *s, size_t size);

/*
 * Named volumes: the cluster's volume table, kept in registers of a
 * reserved volume and so as trustworthy as the data (docs/volumes.md).
 * Every call reads it through h's connections; h must not have
 * encrypt=on (table blocks are plain for every client).  Changes are
 * made under the table's admin lock, which takes a few seconds to be
 * sure no other admin holds it, and need a read-write key.
 */
#define BFTBLK_VOLUME_NAME_MAX	64

struct bftblk_volume {
	char name[BFTBLK_VOLUME_NAME_MAX + 1];	/* [A-Za-z0-9._-] */
	uint32_t id;			/* never given to another volume */
	uint64_t size;			/* bytes, whole 64 KiB blocks */
	uint64_t generation;		/* resizes so far */
	uint64_t created;		/* Unix seconds */
	int encrypted;
	int deleting;			/* no longer opened; being dropped */
	char key_id[33];		/* hex id of its volume key, or "" */
};

/*
 * A volume's writer lease as its register holds it now: one read, no
 * waiting (a holder renews every period / 3, so a claim renewed longer
 * than a period ago is a holder gone or cut off).  Every acquisition
 * starts a new generation, which the holder's writes carry and servers
 * fence older holders by.  volume_id 0 is the cluster's disk.
 */
#define BFTBLK_LEASE_HOLDER_MAX	160

struct bftblk_lease {
	int claimed;			/* 0: never taken */
	int released;			/* closed cleanly: free */
	uint64_t generation;
	uint64_t renewals;		/* writes of the claim */
	uint64_t renewed_ms;		/* Unix ms by the holder's clock; 0: unknown */
	uint32_t period_ms;
	char holder[BFTBLK_LEASE_HOLDER_MAX];	/* "host, pid P, key name" */
};
/* size: sizeof *out, as for bftblk_get_info. */
int bftblk_lease_get(struct bftblk *h, uint32_t volume_id,
    struct bftblk_lease *out, size_t size);

/* Every volume, by *vols (free() it) and *n, in table order. */
int bftblk_volume_list(struct bftblk *h, struct bftblk_volume **vols,
    size_t *n);
/* One volume by name; -ENOENT when there is none. */
int bftblk_volume_get(struct bftblk *h, const char *name,
    struct bftblk_volume *v);
/*
 * Creates a volume of size bytes (a multiple of BFTBLK_BLOCK_SIZE),
 * holding nothing on the servers until written.  key_file: NULL, or a
 * volume key (bftblk volume-key) whose id the table records, making the
 * volume encrypted.  -EEXIST when the name is taken.
 */
int bftblk_volume_create(struct bftblk *h, const char *name, uint64_t size,
    const char *key_file, struct bftblk_volume *out);
/*
 * Grows a volume; shrinking needs force and first trims the blocks
 * past the new size, so that growing it again shows zeros there.
 */
int bftblk_volume_resize(struct bftblk *h, const char *name, uint64_t size,
    int force);
/*
 * Deletes a volume: no longer opened, and every server drops its
 * blocks.  A volume whose lease a live writer holds is refused
 * (-EBUSY) unless force.  A server that cannot be reached drops it
 * at a later volume command; *pending (may be NULL) says how many.
 */
int bftblk_volume_delete(struct bftblk *h, const char *name, int force,
    unsigned *pending);
/*
 * Snapshots (docs/snapshots.md): a volume as it was at one instant,
 * holding every write that completed before bftblk_snap_create was
 * called and none that started after it returned.  Nothing is copied:
 * the servers keep the versions a snapshot still needs when newer
 * writes replace them.  A snapshot is opened read-only as "V@S" (by
 * bftblk_open_volume, volume=, or an NBD export of that name); volume
 * "" is the cluster's disk, volume 0, whose snapshots are "@S".
 */
struct bftblk_snap {
	char name[BFTBLK_VOLUME_NAME_MAX + 1];
	char volume[BFTBLK_VOLUME_NAME_MAX + 1];	/* "": volume 0 */
	uint32_t volume_id;
	uint64_t size;			/* the volume's, when taken */
	uint64_t boundary;		/* the lease generation it holds */
	uint64_t created;		/* Unix seconds */
	int encrypted;
	int deleting;			/* being forgotten by the servers */
};
/*
 * Takes snapshot name of volume; also while the volume's writer runs,
 * whose writes in flight are then sent once more under the volume's
 * next lease generation.  -EEXIST when the volume has one of that name.
 * size: sizeof *out (out may be NULL).
 */
int bftblk_snap_create(struct bftblk *h, const char *volume, const char *name,
    struct bftblk_snap *out, size_t size);
/* Snapshots of volume (NULL: of every volume), by *snaps (free() it). */
int bftblk_snap_list(struct bftblk *h, const char *volume,
    struct bftblk_snap **snaps, size_t *n);
/*
 * Deletes a snapshot: no longer opened, and every server forgets the
 * versions only it kept.  A server that cannot be reached forgets them
 * at a later volume command; *pending (may be NULL) says how many.
 */
int bftblk_snap_delete(struct bftblk *h, const char *volume, const char *name,
    unsigned *pending);
/*
 * The blocks (numbers within the volume, increasing, by *blocks: free()
 * it) that may differ between snapshot from and snapshot to of volume,
 * or the volume now when to is NULL: every block written after from
 * and, with to, by to.  It costs in proportion to those blocks, not to
 * the volume.  Every server must answer (-EIO naming one that does
 * not): a change only a silent server and liars knew of could be
 * missed otherwise.  A block listed may still hold what it held (a
 * rewrite of the same bytes, or a liar's addition): read it to know.
 */
int bftblk_snap_diff(struct bftblk *h, const char *volume, const char *from,
    const char *to, uint64_t **blocks, size_t *n);

/*
 * What a long call has done of its work (blocks), at most once a chunk
 * and once at the end, on the calling thread.
 */
typedef void bftblk_progress_fn(void *opaque, uint64_t done, uint64_t total);
/*
 * Rolls volume back to its snapshot snap: every block written since
 * gets the snapshot's value again, and the volume its size then.  The
 * volume must have no writer (-EBUSY naming it): this call is its
 * writer meanwhile.  Costs what changed since, as bftblk_snap_diff.
 */
int bftblk_snap_rollback(struct bftblk *h, const char *volume,
    const char *snap, bftblk_progress_fn *progress, void *opaque);
/*
 * Clones (docs/snapshots.md): a new volume name whose blocks read as
 * snapshot snap of volume does until written, nothing copied.  Needs
 * the cluster finalized for clones (bftblk cluster finalize).  A
 * snapshot some clone depends on is not deleted (-EBUSY naming them).
 */
int bftblk_volume_clone(struct bftblk *h, const char *volume,
    const char *snap, const char *name, struct bftblk_volume *out);
/* A clone's parent volume and snapshot into volume and snap; "" if none. */
int bftblk_volume_parent(struct bftblk *h, const char *name, char *volume,
    size_t vlen, char *snap, size_t slen);
/*
 * Copies what clone name still reads from its parent into its own
 * blocks and forgets the parent.  Like rollback, the volume's writer
 * while it runs; costs the volume's size.
 */
int bftblk_volume_flatten(struct bftblk *h, const char *name,
    bftblk_progress_fn *progress, void *opaque);

/*
 * A new connected handle on volume name, with h's options and then
 * options ("k=v k=v", or NULL), with its own lease, cache and
 * connections.  The volume's size and encryption come from the table;
 * an encrypted volume's key is NAME.key in h's volume-keys= directory,
 * and must have the id the table records.  The name "" is volume 0, the
 * disk bftblk.conf sizes, which is not in the table.
 */
int bftblk_open_volume(struct bftblk *h, const char *name,
    const char *options, struct bftblk **out);

#ifdef __cplusplus
}
#endif
#endif
