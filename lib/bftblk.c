/*
 * The public face of the library (bftblk.h): a handle's options, loading
 * the configuration and keys, the engine's start and stop, and I/O calls
 * that check their arguments and turn internal failures into a negative
 * errno and a sentence.  The block layer under it is read.c and
 * write.c (over plan.c), the rounds engine.c.
 */
#include <errno.h>
#include <sched.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blockcache_int.h"
#include "bftblk.h"
#include "read_int.h"
#include "config.h"
#include "crypto.h"
#include "ec.h"
#include "engine_int.h"
#include "error_int.h"
#include "handle_int.h"
#include "keys.h"
#include "promhttp.h"
#include "volcrypt.h"
#include "write_int.h"

_Static_assert(BFTBLK_BLOCK_SIZE == BFT_BLOCK_SIZE, "one block size");
_Static_assert(BFTBLK_MAX_SERVERS == BFT_MAX_N, "one server bound");

/*
 * The block cache's default size: 2048 blocks.  Random small writes
 * over a working set this large skip their reads; it costs at most
 * this much memory, allocated as blocks are written.
 */
#define CACHE_DEFAULT	(128ull << 20)
#define TIMEOUT_DEFAULT	10
#define IO_TIMEOUT_DEFAULT	30


/* The handle of this thread's last failed public call, for errmsg. */
static _Thread_local const struct bftblk *err_handle;

/* Ends a public call that failed with the error recorded internally. */
static int
fail(const struct bftblk *h)
{
	err_handle = h;
	return -bftblk__take_errno();
}

/* Records err and why for h, and ends the call. */
static int __attribute__((format(printf, 3, 4)))
failf(const struct bftblk *h, int err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	bftblk__fail(err, "%s", msg);
	return fail(h);
}

const char *
bftblk_errmsg(const struct bftblk *h)
{
	return h == err_handle ? bftblk__errmsg() : "no error";
}

/* Without a callback: stderr, each line with its date and time. */
static void
log_stderr(void *opaque, enum bftblk_log_level level, const char *msg)
{
	static const char *names[] = { "error", "warning", "info", "debug" };
	struct timespec now;
	struct tm tm;

	(void)opaque;
	if (level == BFTBLK_LOG_DEBUG && getenv("BFTBLK_DEBUG") == NULL)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	fprintf(stderr, "%04d-%02d-%02d %02d:%02d:%02d.%03ld libbftblk: %s: "
	    "%s\n", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, now.tv_nsec / 1000000, names[level], msg);
}

static void __attribute__((format(printf, 3, 4)))
hlog(struct bftblk *h, enum bftblk_log_level level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	h->log(h->log_opaque, level, msg);
}

struct bftblk *
bftblk_create(void)
{
	struct bftblk *h = calloc(1, sizeof *h);

	if (h == NULL)
		return NULL;
	h->timeout_s = TIMEOUT_DEFAULT;
	h->io_timeout_s = IO_TIMEOUT_DEFAULT;
	h->senders = -1;
	h->cache_bytes = CACHE_DEFAULT;
	h->lease_s = BFT_LEASE_DEFAULT_S;
	h->log = log_stderr;
	return h;
}

void
bftblk_set_log(struct bftblk *h, bftblk_log_fn *fn, void *opaque)
{
	h->log = fn != NULL ? fn : log_stderr;
	h->log_opaque = fn != NULL ? opaque : NULL;
}

/* encrypt= and volume-key= go together; loads the key when on. */
static int
setup_encryption(struct bftblk *h)
{
	struct bft_volume_key vk;
	char err[512];
	int r;

	if (!h->encrypt) {
		if (h->volume_key_path != NULL)
			return failf(h, EINVAL, "volume-key= given but encrypt "
			    "is off; add encrypt=on to use it");
		return 0;
	}
	if (h->volume_key_path == NULL)
		return failf(h, EINVAL, "encrypt=on needs volume-key=FILE "
		    "(create one with: bftblk volume-key --out FILE)");
	/*
	 * A fixed writer id can, after a crash, take the timestamp of a
	 * write that reached servers but never completed, for other data:
	 * one AEAD nonce for two plaintexts.  Random ids never repeat.
	 */
	if (h->writer_id != 0)
		return failf(h, EINVAL, "writer-id= cannot be combined with "
		    "encrypt=on: a fixed writer id could reuse a timestamp, "
		    "and with it an AEAD nonce, after a crash");
	if ((r = bft_volume_key_load(h->volume_key_path, &vk, err,
	    sizeof err)) != 0)
		return failf(h, -r, "%s", err);
	r = bft_volcrypt_init(&h->vc, &vk, err, sizeof err);
	bft_wipe(&vk, sizeof vk);
	if (r != 0)
		return failf(h, -r, "%s: %s", h->volume_key_path, err);
	return 0;
}

/*
 * server-key=FILE: a server connects to its peers under its own
 * channel key, as the peer the other servers let in (role peer, which
 * reads like a read-only client).  It never connects to itself: that
 * server refuses its own key.
 */
static int
load_server_key(struct bftblk *h)
{
	struct bft_server_key sk;
	char err[512];
	int r;

	if ((r = bft_server_key_load(h->server_key_path, &sk, err,
	    sizeof err)) != 0)
		return failf(h, -r, "%s", err);
	if (memcmp(sk.cluster_id, h->cfg.cluster_id,
	    BFT_CLUSTER_ID_LEN) != 0 || sk.index >= h->cfg.n ||
	    (memcmp(sk.chan.pk, h->cfg.server_pk[sk.index], 32) != 0 &&
	    (bft_config_pk_next(&h->cfg, sk.index) == NULL ||
	    memcmp(sk.chan.pk, h->cfg.server_pk_next[sk.index], 32) != 0))) {
		bft_wipe(&sk, sizeof sk);
		return failf(h, EINVAL, "%s is not the key of a server of the "
		    "cluster in %s", h->server_key_path, h->config_path);
	}
	bft_peer_key(&sk, &h->key);
	h->skip = 1u << sk.index;
	bft_wipe(&sk, sizeof sk);
	return 0;
}

/* keys= or server-key=: the identity this handle connects under. */
static int
load_identity(struct bftblk *h)
{
	char err[512];
	int r;

	if (h->server_key_path != NULL)
		return load_server_key(h);
	if ((r = bft_client_key_load(h->keys_path, &h->key, err,
	    sizeof err)) != 0)
		return failf(h, -r, "%s", err);
	if (memcmp(h->key.cluster_id, h->cfg.cluster_id,
	    BFT_CLUSTER_ID_LEN) != 0 ||
	    (h->key.role == BFT_ROLE_RW && h->key.n != h->cfg.n))
		return failf(h, EINVAL, "%s is not a key of the cluster in %s",
		    h->keys_path, h->config_path);
	return 0;
}

struct bft_client_key *
bftblk__signing_key(struct bftblk *h)
{
	struct bft_client_key *k = malloc(sizeof *k), *now;
	char err[512];

	if (k == NULL)
		return NULL;
	*k = h->key;
	if (h->keys_path == NULL || k->role != BFT_ROLE_RW ||
	    (now = malloc(sizeof *now)) == NULL)
		return k;
	if (bft_client_key_load(h->keys_path, now, err, sizeof err) == 0 &&
	    now->role == BFT_ROLE_RW && now->n == k->n &&
	    memcmp(now->cluster_id, k->cluster_id, BFT_CLUSTER_ID_LEN) == 0)
		bft_client_key_take_macs(k, now);
	bftblk__signing_key_free(now);
	return k;
}

void
bftblk__signing_key_free(struct bft_client_key *k)
{
	if (k == NULL)
		return;
	bft_wipe(k, sizeof *k);
	free(k);
}

int
bftblk_load(struct bftblk *h)
{
	char err[512];
	int r;

	if (h->loaded)
		return 0;
	if (h->config_path == NULL ||
	    (h->keys_path == NULL) == (h->server_key_path == NULL))
		return failf(h, EINVAL, "config=FILE and one of keys=FILE "
		    "and server-key=FILE are required");
	if (bft_crypto_init() != 0)
		return failf(h, EIO, "cannot initialise crypto");
	if ((r = bft_config_load(h->config_path, &h->cfg, err,
	    sizeof err)) != 0)
		return failf(h, -r, "%s", err);
	if ((r = load_identity(h)) != 0)
		return r;
	if (h->want_t && h->want_t != h->cfg.t)
		return failf(h, EINVAL, "t=%u given, but the cluster has t=%u",
		    h->want_t, h->cfg.t);
	if (h->volume_name != NULL && !h->resolved) {
		if (h->volume_id != 0)
			return failf(h, EINVAL, "volume= and volume-id= name "
			    "the volume twice; give one");
		if ((r = bftblk__volume_resolve(h)) != 0)
			return r;
	}
	if (h->export_size == 0 && h->volume_id != 0)
		return failf(h, EINVAL, "volume-id=%" PRIu32 " needs size=: "
		    "only volume 0's size is in the cluster's configuration",
		    h->volume_id);
	if (h->export_size == 0)
		h->export_size = h->cfg.size;
	if ((r = setup_encryption(h)) != 0)
		return r;
	if (h->sealed && (h->server_key_path == NULL || h->encrypt))
		return failf(h, EINVAL, "sealed=on is for a server reading "
		    "from its peers (server-key=), without encrypt=on");
	if (h->export_size > bft_vol_limit(h->volume_id, h->cfg.nblocks) *
	    BFT_BLOCK_SIZE)
		return failf(h, EINVAL, "size=%" PRIu64 " exceeds the "
		    "%" PRIu64 " bytes volume %" PRIu32 " may hold",
		    h->export_size, bft_vol_limit(h->volume_id,
		    h->cfg.nblocks) * BFT_BLOCK_SIZE, h->volume_id);
	if ((r = bft_ec_new_len(h->cfg.t, h->ec_backend,
	    h->encrypt || h->sealed ? BFT_SEALED_LEN : BFT_BLOCK_SIZE, &h->ec,
	    err, sizeof err)) != 0)
		return failf(h, -r, "%s", err);
	if (strncmp(bft_ec_backend(h->ec), "isa_l", 5) != 0)
		hlog(h, BFTBLK_LOG_WARN, "ISA-L is not available (install "
		    "libisal2); using the slow %s erasure code",
		    bft_ec_backend(h->ec));
	while (h->writer_id == 0)	/* zero marks c0 */
		bft_random(&h->writer_id, sizeof h->writer_id);
	hlog(h, BFTBLK_LOG_DEBUG, "t=%u n=%u, %" PRIu64 " bytes, ec %s, "
	    "fragment %u bytes, encryption %s", h->cfg.t, h->cfg.n,
	    h->export_size, bft_ec_backend(h->ec), bft_ec_frag_len(h->ec),
	    h->encrypt ? bft_aead_name(h->vc.aead) : "off");
	h->loaded = true;
	return 0;
}

/*
 * senders= when not given: on with more than two CPUs to run on (the
 * loop's, and nbdkit's workers' that code and hash).  With two they
 * cost more than they free: on the 2-CPU bench machine they moved
 * about 75 us per 64 KiB block off the loop thread and spent about 100
 * us in their own, for the same throughput (docs/performance.md).
 */
static bool
default_senders(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof set, &set) == 0 &&
	    CPU_COUNT(&set) > 2;
}

int
bftblk_connect(struct bftblk *h)
{
	struct bft_engine_params p;
	int r;

	if (h->eng != NULL)
		return 0;
	if ((r = bftblk_load(h)) != 0)
		return r;
	p = (struct bft_engine_params){
		.cfg = &h->cfg, .config_path = h->config_path, .key = &h->key,
		.key_path = h->keys_path != NULL ? h->keys_path :
		    h->server_key_path,
		.ec = h->ec,
		.vc = h->encrypt ? &h->vc : NULL,
		.timeout_ms = h->timeout_s * 1000,
		/* A whole op never has less time than one of its rounds. */
		.io_timeout_ms = (h->io_timeout_s > h->timeout_s ?
		    h->io_timeout_s : h->timeout_s) * 1000,
		.senders = h->senders >= 0 ? h->senders > 0 :
		    default_senders(),
		.writer_id = h->writer_id, .volume_id = h->volume_id,
		.skip = h->skip, .stats_path = h->stats_path,
		.metrics_addr = h->metrics_addr, .log = h->log, .log_opaque = h->log_opaque,
		.agg = h->stats_agg,
		.view = h->view, .view_gen = h->view_gen,
	};
	if (h->cache_bytes > 0 && h->cache == NULL &&
	    (h->cache = bftblk__bc_new(h->cache_bytes)) == NULL)
		return failf(h, ENOMEM, "cannot allocate the block cache");
	if (h->nparents > 0 && (r = bftblk__clone_start(h, &p)) != 0)
		return r;
	if ((h->eng = bftblk__engine_start(&p)) == NULL) {
		bftblk__clone_stop(h);
		return failf(h, EIO, "cannot start the event loop (or resolve "
		    "a server's address)");
	}
	/*
	 * One writer per volume, unless told the writers coordinate.  A
	 * lease is plain whatever the volume's encryption, so that every
	 * client (an admin deleting the volume too) reads it: an encrypted
	 * handle writes it through a plain engine of its own.
	 */
	if (h->key.role != BFT_ROLE_RW || h->shared || h->view)
		return 0;
	if (h->encrypt && (h->lease_eng = bftblk__plain_engine(h,
	    &h->lease_ec)) == NULL) {
		r = fail(h);
		goto out_stop;
	}
	if (bftblk__lease_acquire(&h->lease,
	    h->lease_eng != NULL ? h->lease_eng : h->eng, h->eng, h->volume_id,
	    h->lease_s, 0, h->key.name) != 0) {
		r = fail(h);
		bftblk__lease_release(&h->lease);
		goto out_stop;
	}
	return 0;
out_stop:
	bftblk__engine_stop(h->lease_eng);
	bft_ec_free(h->lease_ec);
	h->lease_eng = NULL;
	h->lease_ec = NULL;
	bftblk__engine_stop(h->eng);
	h->eng = NULL;
	bftblk__clone_stop(h);
	return r;
}

const char *
bftblk_version(int *major, int *minor, int *patch)
{
	if (major != NULL)
		*major = BFTBLK_VERSION_MAJOR;
	if (minor != NULL)
		*minor = BFTBLK_VERSION_MINOR;
	if (patch != NULL)
		*patch = BFTBLK_VERSION_PATCH;
	return BFTBLK_VERSION_STRING;
}

int
bftblk_open(const char *config, const char *keys, const char *options,
    struct bftblk **hp)
{
	struct bftblk *h = bftblk_create();
	int r;

	*hp = NULL;
	if (h == NULL)
		return failf(NULL, ENOMEM, "out of memory");
	if ((r = bftblk_set_option(h, "config", config)) != 0 ||
	    (keys != NULL &&
	    (r = bftblk_set_option(h, "keys", keys)) != 0) ||
	    (r = bftblk__set_options(h, options)) != 0 ||
	    (r = bftblk_connect(h)) != 0) {
		err_handle = NULL;	/* the message outlives h */
		bftblk_close(h);
		return r;
	}
	*hp = h;
	return 0;
}

void
bftblk_close(struct bftblk *h)
{
	if (h == NULL)
		return;
	bftblk__lease_release(&h->lease);
	bftblk__engine_stop(h->lease_eng);
	bft_ec_free(h->lease_ec);
	bftblk__engine_stop(h->eng);
	bftblk__clone_stop(h);
	bftblk__bc_free(h->cache);
	bft_ec_free(h->ec);
	bft_volcrypt_wipe(&h->vc);
	bft_wipe(&h->key, sizeof h->key);
	free(h->config_path);
	free(h->keys_path);
	free(h->server_key_path);
	free(h->stats_path);
	free(h->metrics_addr);
	free(h->ec_backend);
	free(h->volume_key_path);
	free(h->volume_name);
	free(h->volume_keys_dir);
	for (size_t i = 0; i < h->nopts; i++)
		free(h->opts[i]);
	free(h->opts);
	free(h);
}


/*
 * Writers that coordinate among themselves (shared=on) take no lease,
 * but write under the generation of its newest claim, so that servers
 * take their writes until an exclusive holder takes the volume.  Read
 * at the first write, so that opening needs no quorum (bftblk ping,
 * status).  Threads racing here read the same generation.
 */
static int
shared_gen(struct bftblk *h)
{
	uint64_t gen;

	if (bftblk__lease_read_gen(h->eng, h->volume_id, &gen) != 0) {
		int err = bftblk__take_errno();

		return failf(h, err, "reading volume %" PRIu32 "'s lease "
		    "generation: %s", h->volume_id, bftblk__errmsg());
	}
	bftblk__engine_set_gen(h->eng, gen);
	__atomic_store_n(&h->shared_gen, true, __ATOMIC_RELEASE);
	return 0;
}

/*
 * A write that servers fenced (ESTALE inside the library): a snapshot
 * re-asserted the holder's claim under a newer generation, or, without
 * a lease (shared=on), some holder took a newer one.  Follows it and
 * returns 1 so that the write is sent again (the same bytes to the
 * same blocks, so a part that went through is written again, not
 * doubled); 0 when the fence stands; -1 (returned by fail) when the
 * lease cannot be read.  sent: the generation when the write began,
 * which the lease's renewer may have moved on from meanwhile.  A few snapshots in a row may each fence a
 * write once; more than that is not a snapshot.
 */
static int
follow_gen(struct bftblk *h, unsigned tries, uint64_t sent)
{
	int err = bftblk__take_errno(), r;

	if (err != ESTALE || tries >= 4) {
		bftblk__fail(err, "%s", bftblk__errmsg());
		return 0;
	}
	if (h->shared)
		return (r = shared_gen(h)) == 0 ? 1 : r;
	if ((r = bftblk__lease_follow(&h->lease, sent)) < 0)
		return fail(h);
	if (r == 0)
		bftblk__fail(ESTALE, "%s", bftblk__errmsg());
	return r;
}

/* A fence that stands: the NBD client sees EIO, with the reason. */
static int
fenced(struct bftblk *h)
{
	int err = bftblk__take_errno();

	return failf(h, err == ESTALE ? EIO : err, "%s", bftblk__errmsg());
}

/* Common checks of an I/O call: connected, in range, allowed. */
static int
check_io(struct bftblk *h, size_t count, uint64_t offset, bool write,
    unsigned flags)
{
	if (h->eng == NULL)
		return failf(h, ENOTCONN, "the handle is not connected");
	if (flags & ~BFTBLK_FUA)
		return failf(h, EINVAL, "unknown flags 0x%x", flags);
	if (offset > h->export_size || count > h->export_size - offset)
		return failf(h, EINVAL, "%zu bytes at %" PRIu64 " are beyond "
		    "the end of the disk (%" PRIu64 " bytes)", count, offset,
		    h->export_size);
	if (write && h->view)
		return failf(h, EROFS, "a snapshot is read-only: write to its "
		    "volume, or to a clone of it");
	if (write && h->key.role != BFT_ROLE_RW)
		return failf(h, EPERM, "the key of '%s' is read-only%s",
		    h->key.name, h->key.role == BFT_ROLE_PEER ?
		    " (a server's key: its peers let it read only)" : "");
	if (write && h->shared && !__atomic_load_n(&h->shared_gen,
	    __ATOMIC_ACQUIRE))
		return shared_gen(h);
	return 0;
}

int
bftblk_pread(struct bftblk *h, void *buf, size_t count, uint64_t offset)
{
	int r;

	if ((r = check_io(h, count, offset, false, 0)) != 0 || count == 0)
		return r;
	if (bftblk__io_read(h->eng, h->cache, buf, count, offset) != 0)
		return fail(h);
	return 0;
}

static int
write_common(struct bftblk *h, const void *buf, size_t count,
    uint64_t offset, unsigned flags)
{
	int r;

	if ((r = check_io(h, count, offset, true, flags)) != 0)
		return r;
	switch (bftblk__lease_state(&h->lease)) {
	case BFT_LEASE_FENCED:
		return failf(h, EIO, "volume %" PRIu32 "'s lease is fenced: "
		    "not confirmed for %.1f s (lease %u s): writes fail until "
		    "it is taken again, so that two writers never share the "
		    "volume", h->volume_id,
		    (double)bftblk__lease_renewed_age_ms(&h->lease) / 1000,
		    h->lease_s);
	case BFT_LEASE_LOST:
		return failf(h, EIO, "volume %" PRIu32 "'s lease was lost to "
		    "another holder: this handle writes no more; open the "
		    "volume again to take it back", h->volume_id);
	default:
		break;
	}
	if (count == 0)
		return (flags & BFTBLK_FUA) ? bftblk_flush(h) : 0;
	for (unsigned tries = 0;; tries++) {
		uint64_t sent = bftblk__engine_gen(h->eng);

		if (bftblk__io_write(h->eng, h->cache, buf, count, offset,
		    flags & BFTBLK_FUA) == 0)
			return 0;
		if ((r = follow_gen(h, tries, sent)) <= 0)
			return r < 0 ? r : fenced(h);
	}
}

int
bftblk_pwrite(struct bftblk *h, const void *buf, size_t count,
    uint64_t offset, unsigned flags)
{
	if (buf == NULL)
		return failf(h, EINVAL, "pwrite needs a buffer");
	return write_common(h, buf, count, offset, flags);
}

/* Whole blocks become the zero value: no fragment on the servers. */
int
bftblk_zero(struct bftblk *h, size_t count, uint64_t offset, unsigned flags)
{
	return write_common(h, NULL, count, offset, flags);
}

int
bftblk_trim(struct bftblk *h, size_t count, uint64_t offset, unsigned flags)
{
	return write_common(h, NULL, count, offset, flags);
}

int
bftblk_flush(struct bftblk *h)
{
	if (h->eng == NULL)
		return failf(h, ENOTCONN, "the handle is not connected");
	if (bftblk__io_flush(h->eng) != 0)
		return fail(h);
	return 0;
}


int
bftblk__check_size(const struct bftblk *h, const char *what, size_t size,
    size_t known)
{
	if (size != known)
		return failf(h, EINVAL, "struct %s of %zu bytes: this "
		    "libbftblk (%s) has %zu; rebuild against its bftblk.h",
		    what, size, BFTBLK_VERSION_STRING, known);
	return 0;
}

struct bft_engine *
bftblk__engine(struct bftblk *h)
{
	return h->eng;
}

int
bftblk__handle_fail(const struct bftblk *h, int err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return failf(h, err, "%s", msg);
}
