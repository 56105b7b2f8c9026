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
 * Before bftblk_load.  Keys: config (required), keys or server-key (one
 * of them), size, timeout, io-timeout, writer-id, t, ec-backend, cache,
 * encrypt, volume-key: see BFTBLK_OPTIONS_HELP and
 * nbdkit-bftblk-plugin(1).
 * server-key=FILE connects as that server, a peer of the others: it
 * reads, never writes (-EPERM), and skips the server whose key it is.
 */
int bftblk_set_option(struct bftblk *h, const char *key, const char *value);
const char *bftblk_options_help(void);
#define BFTBLK_OPTIONS_HELP \
    "config=FILE     (required) cluster configuration, bftblk.conf(5)\n" \
    "keys=FILE       client key file from bftblk keygen or bftblk\n" \
    "                client add (role ro: read-only export)\n" \
    "server-key=FILE instead of keys=: a server's key file; connects as\n" \
    "                that server, a read-only peer of the others\n" \
    "size=SIZE       export only the first SIZE bytes\n" \
    "volume-id=N     serve volume N of the cluster (default 0, the disk\n" \
    "                bftblk.conf sizes); another volume needs size=\n" \
    "shared=on|off   off: take the volume's lease, one writer at a time\n" \
    "                (default on: no lease, writers coordinate)\n" \
    "lease=SECS      with shared=off, the lease lapses SECS after its\n" \
    "                holder's last renewal (default 15)\n" \
    "timeout=SECS    per-round timeout (default 10)\n" \
    "io-timeout=SECS an I/O that cannot finish fails with EIO after this\n" \
    "                many seconds, naming silent servers (default 30)\n" \
    "writer-id=N     this writer's id (default random)\n" \
    "t=T             check that the cluster tolerates T faults\n" \
    "ec-backend=NAME liberasurecode backend (default isa_l_rs_cauchy)\n" \
    "cache=SIZE      block cache for small writes (default 128M, 0 off)\n" \
    "encrypt=on|off  seal every block with the volume key (default off)\n" \
    "volume-key=FILE volume key from bftblk volume-key (for encrypt=on)\n" \
    "stats-file=FILE rewrite FILE every 10 s with what this client saw\n" \
    "                of each server (bftblk status --client-stats)\n" \
    "metrics=HOST:PORT serve Prometheus metrics at http://HOST:PORT/metrics\n" \
    "                ([ADDR]:PORT for IPv6; bftblk_client_* names)"
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
	int readonly;			/* a read-only client key */
	const char *client_name;	/* from the key file */
	const char *ec_backend;		/* liberasurecode's backend */
	const char *encryption;		/* "off" or the AEAD's name */
};
/* After bftblk_load; the strings live as long as h. */
int bftblk_get_info(struct bftblk *h, struct bftblk_info *info);

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
int bftblk_get_stats(struct bftblk *h, struct bftblk_stats *s);

#ifdef __cplusplus
}
#endif
#endif
