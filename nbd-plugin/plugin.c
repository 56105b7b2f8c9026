/*
 * nbdkit-bftblk-plugin: exports a disk whose 64 KiB blocks are
 * M-PoWerStore registers on n = 3t+1 bftblk servers.
 *
 * I/O is split into blocks; blocks of one request run concurrently, in
 * chunks to bound memory (chunk.c).  Writes that cover a block partly
 * need its value first (read-modify-write, write.c): from a bounded
 * cache of block contents validated by the write's timestamp
 * (blockcache.h), or a read.  With encrypt=on every
 * block is sealed before erasure coding and opened after decoding
 * (common/volcrypt.h); servers see ciphertext only.
 */
#define NBDKIT_API_VERSION 2
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <nbdkit-plugin.h>

#include "blockcache.h"
#include "chunk.h"
#include "client.h"
#include "config.h"
#include "crypto.h"
#include "ec.h"
#include "keys.h"
#include "volcrypt.h"
#include "write.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL
/*
 * The block cache's default size: 2048 blocks.  Random small writes
 * over a working set this large skip their reads; it costs at most
 * this much memory, allocated as blocks are written.
 */
#define CACHE_DEFAULT (128ull << 20)

static char *config_path, *keys_path, *ec_backend, *volume_key_path;
static bool encrypt;
static uint64_t export_size;		/* 0: the whole cluster disk */
static unsigned timeout_s = 10;
static uint64_t writer_id;
static unsigned want_t;
static uint64_t cache_bytes = CACHE_DEFAULT;

static struct bft_config cfg;
static struct bft_client_key key;
static struct bft_ec *ec;
static struct bft_volcrypt vc;
static struct bft_client *client;
static struct bft_blockcache *cache;	/* NULL with cache=0 */

static void
bftblk_unload(void)
{
	free(config_path);
	free(keys_path);
	free(ec_backend);
	free(volume_key_path);
	bft_ec_free(ec);
	bft_volcrypt_wipe(&vc);
}

/* Parameters in nbdkit's key=value style. */
static int
bftblk_config(const char *k, const char *value)
{
	char *end;

	if (strcmp(k, "config") == 0) {
		free(config_path);
		if ((config_path = nbdkit_absolute_path(value)) == NULL)
			return -1;
	} else if (strcmp(k, "keys") == 0) {
		free(keys_path);
		if ((keys_path = nbdkit_absolute_path(value)) == NULL)
			return -1;
	} else if (strcmp(k, "size") == 0) {
		int64_t s = nbdkit_parse_size(value);

		if (s <= 0 || s % BFT_BLOCK_SIZE) {
			nbdkit_error("size must be a positive multiple of %u",
			    BFT_BLOCK_SIZE);
			return -1;
		}
		export_size = (uint64_t)s;
	} else if (strcmp(k, "timeout") == 0) {
		if (nbdkit_parse_unsigned("timeout", value, &timeout_s) == -1)
			return -1;
		if (timeout_s == 0 || timeout_s > 3600) {
			nbdkit_error("timeout must be 1..3600 seconds");
			return -1;
		}
	} else if (strcmp(k, "writer-id") == 0) {
		writer_id = strtoull(value, &end, 0);
		if (*end || writer_id == 0) {
			nbdkit_error("writer-id must be a non-zero integer");
			return -1;
		}
	} else if (strcmp(k, "t") == 0) {
		if (nbdkit_parse_unsigned("t", value, &want_t) == -1)
			return -1;
	} else if (strcmp(k, "encrypt") == 0) {
		int b = nbdkit_parse_bool(value);

		if (b == -1)
			return -1;
		encrypt = b;
	} else if (strcmp(k, "volume-key") == 0) {
		free(volume_key_path);
		if ((volume_key_path = nbdkit_absolute_path(value)) == NULL)
			return -1;
	} else if (strcmp(k, "cache") == 0) {
		int64_t s = nbdkit_parse_size(value);

		if (s < 0)
			return -1;
		if (s > 0 && s < BFT_BLOCK_SIZE) {
			nbdkit_error("cache must be 0 (off) or at least %u",
			    BFT_BLOCK_SIZE);
			return -1;
		}
		cache_bytes = (uint64_t)s;
	} else if (strcmp(k, "ec-backend") == 0) {
		free(ec_backend);
		if ((ec_backend = strdup(value)) == NULL)
			return -1;
	} else {
		nbdkit_error("unknown parameter '%s'", k);
		return -1;
	}
	return 0;
}

/* encrypt= and volume-key= go together; loads the key when on. */
static int
setup_encryption(void)
{
	struct bft_volume_key vk;
	char err[512];
	int r;

	if (!encrypt) {
		if (volume_key_path != NULL) {
			nbdkit_error("volume-key= given but encrypt is off; "
			    "add encrypt=on to use it");
			return -1;
		}
		return 0;
	}
	if (volume_key_path == NULL) {
		nbdkit_error("encrypt=on needs volume-key=FILE (create one "
		    "with: bftblk volume-key --out FILE)");
		return -1;
	}
	/*
	 * A fixed writer id can, after a crash, take the timestamp of a
	 * write that reached servers but never completed, for other data:
	 * one AEAD nonce for two plaintexts.  Random ids never repeat.
	 */
	if (writer_id != 0) {
		nbdkit_error("writer-id= cannot be combined with encrypt=on: "
		    "a fixed writer id could reuse a timestamp, and with it "
		    "an AEAD nonce, after a crash");
		return -1;
	}
	if (bft_volume_key_load(volume_key_path, &vk, err, sizeof err) != 0) {
		nbdkit_error("%s", err);
		return -1;
	}
	r = bft_volcrypt_init(&vc, &vk, err, sizeof err);
	bft_wipe(&vk, sizeof vk);
	if (r != 0) {
		nbdkit_error("%s: %s", volume_key_path, err);
		return -1;
	}
	return 0;
}

static int
bftblk_config_complete(void)
{
	char err[512];

	if (config_path == NULL || keys_path == NULL) {
		nbdkit_error("config=FILE and keys=FILE are required");
		return -1;
	}
	if (bft_crypto_init() != 0) {
		nbdkit_error("cannot initialise crypto");
		return -1;
	}
	if (bft_config_load(config_path, &cfg, err, sizeof err) != 0 ||
	    bft_client_key_load(keys_path, &key, err, sizeof err) != 0) {
		nbdkit_error("%s", err);
		return -1;
	}
	if (memcmp(key.cluster_id, cfg.cluster_id, BFT_CLUSTER_ID_LEN) != 0 ||
	    (key.role == BFT_ROLE_RW && key.n != cfg.n)) {
		nbdkit_error("%s is not a key of the cluster in %s", keys_path,
		    config_path);
		return -1;
	}
	if (want_t && want_t != cfg.t) {
		nbdkit_error("t=%u given, but the cluster has t=%u", want_t,
		    cfg.t);
		return -1;
	}
	if (export_size == 0)
		export_size = cfg.size;
	if (setup_encryption() != 0)
		return -1;
	if (export_size > cfg.size) {
		nbdkit_error("size=%" PRIu64 " exceeds the cluster's %" PRIu64,
		    export_size, cfg.size);
		return -1;
	}
	ec = bft_ec_new_len(cfg.t, ec_backend,
	    encrypt ? BFT_SEALED_LEN : BFT_BLOCK_SIZE, err, sizeof err);
	if (ec == NULL) {
		nbdkit_error("%s", err);
		return -1;
	}
	if (strncmp(bft_ec_backend(ec), "isa_l", 5) != 0)
		nbdkit_error("warning: ISA-L is not available (install "
		    "libisal2); using the slow %s erasure code",
		    bft_ec_backend(ec));
	while (writer_id == 0)		/* zero marks c0 */
		bft_random(&writer_id, sizeof writer_id);
	nbdkit_debug("bftblk: t=%u n=%u, %" PRIu64 " bytes, ec %s, "
	    "fragment %u bytes, encryption %s", cfg.t, cfg.n, export_size,
	    bft_ec_backend(ec), bft_ec_frag_len(ec),
	    encrypt ? bft_aead_name(vc.aead) : "off");
	return 0;
}

/* Threads do not survive nbdkit's fork into the background: start here. */
static int
bftblk_after_fork(void)
{
	struct bft_client_params p = {
		.cfg = &cfg, .key = &key, .ec = ec, .vc = encrypt ? &vc : NULL,
		.timeout_ms = timeout_s * 1000, .writer_id = writer_id,
	};

	if (cache_bytes > 0 && (cache = bft_bc_new(cache_bytes)) == NULL) {
		nbdkit_error("cannot allocate the block cache");
		return -1;
	}
	client = bft_client_start(&p);
	if (client == NULL) {
		nbdkit_error("cannot start the client event loop");
		return -1;
	}
	return 0;
}

static void
bftblk_cleanup(void)
{
	const struct bft_client_stats *s;

	if (client == NULL)
		return;
	s = bft_client_stats(client);
	nbdkit_debug("bftblk: %llu reads (%llu in one round, %llu fell back, "
	    "%llu restarts, %llu repairs), "
	    "%llu writes (%llu without CLOCK, %llu fell back), %llu flushes, "
	    "%llu forged timestamps, %llu timeouts, %llu reconnects; "
	    "partial writes: %llu cache hits (%llu stale, read again), "
	    "%llu misses; %u of %u blocks cached; "
	    "%llu small writes coalesced into others",
	    (unsigned long long)s->reads, (unsigned long long)s->fast_reads,
	    (unsigned long long)s->fast_read_fallbacks,
	    (unsigned long long)s->read_restarts,
	    (unsigned long long)s->repairs, (unsigned long long)s->writes,
	    (unsigned long long)s->fast_writes,
	    (unsigned long long)s->fast_fallbacks,
	    (unsigned long long)s->flushes, (unsigned long long)s->forged_ts,
	    (unsigned long long)s->timeouts, (unsigned long long)s->reconnects,
	    (unsigned long long)s->cache_hits,
	    (unsigned long long)s->cache_stale,
	    (unsigned long long)s->cache_misses, bft_bc_count(cache),
	    bft_bc_capacity(cache), (unsigned long long)s->coalesced);
	bft_client_stop(client);
	client = NULL;
	bft_bc_free(cache);
	cache = NULL;
}

/* All connections share one cluster client, so a handle is just a token. */
static void *
bftblk_open(int readonly)
{
	(void)readonly;
	return NBDKIT_HANDLE_NOT_NEEDED;
}

static int64_t
bftblk_get_size(void *h)
{
	(void)h;
	return (int64_t)export_size;
}

/* Whole blocks avoid read-modify-write; anything smaller still works. */
static int
bftblk_block_size(void *h, uint32_t *minimum, uint32_t *preferred,
    uint32_t *maximum)
{
	(void)h;
	*minimum = 1;
	*preferred = BFT_BLOCK_SIZE;
	*maximum = 0xffffffff;
	return 0;
}

static int bftblk_can_true(void *h) { (void)h; return 1; }

/* A read-only key holds no MAC key: export the disk read-only. */
static int
bftblk_can_write(void *h)
{
	(void)h;
	return key.role == BFT_ROLE_RW;
}

/* Flush makes writes durable on n-t servers; FUA is a flush after. */
static int
bftblk_can_fua(void *h)
{
	(void)h;
	return NBDKIT_FUA_NATIVE;
}

static int
bftblk_pread(void *h, void *buf, uint32_t count, uint64_t offset,
    uint32_t flags)
{
	uint64_t first = offset / BFT_BLOCK_SIZE;
	uint64_t last = (offset + count - 1) / BFT_BLOCK_SIZE;

	(void)h;
	assert(flags == 0);
	for (uint64_t b = first; b <= last; b += CHUNK) {
		unsigned nb = (unsigned)(last - b + 1 < CHUNK ?
		    last - b + 1 : CHUNK);
		struct chunk c;
		int r;

		if (chunk_init(&c, client, b, nb, offset, count, buf,
		    OP_READ) != 0)
			return -1;
		r = read_blocks(client, cache, c.ops, c.nops, false);
		for (unsigned i = 0; r == 0 && i < nb; i++) {
			uint64_t ib, io, n;

			if (c.tmp[i] == NULL)
				continue;
			overlap(b + i, offset, count, &ib, &io, &n);
			memcpy((uint8_t *)buf + io, c.tmp[i] + ib, n);
		}
		chunk_free(&c);
		if (r != 0)
			return -1;
	}
	return 0;
}

static int
bftblk_pwrite(void *h, const void *buf, uint32_t count, uint64_t offset,
    uint32_t flags)
{
	(void)h;
	assert(!(flags & ~NBDKIT_FLAG_FUA));
	return write_range(client, cache, buf, count, offset,
	    flags & NBDKIT_FLAG_FUA);
}

/* Zeroing writes zero blocks: a register has no cheaper "absent" state. */
static int
bftblk_zero(void *h, uint32_t count, uint64_t offset, uint32_t flags)
{
	(void)h;
	assert(!(flags & ~(NBDKIT_FLAG_FUA | NBDKIT_FLAG_MAY_TRIM |
	    NBDKIT_FLAG_FAST_ZERO)));
	if (flags & NBDKIT_FLAG_FAST_ZERO) {
		nbdkit_set_error(ENOTSUP);
		return -1;
	}
	return write_range(client, cache, NULL, count, offset,
	    flags & NBDKIT_FLAG_FUA);
}

/* Trimmed blocks read back as zeros, which filesystems are happy with. */
static int
bftblk_trim(void *h, uint32_t count, uint64_t offset, uint32_t flags)
{
	(void)h;
	assert(!(flags & ~NBDKIT_FLAG_FUA));
	return write_range(client, cache, NULL, count, offset,
	    flags & NBDKIT_FLAG_FUA);
}

static int
bftblk_flush(void *h, uint32_t flags)
{
	(void)h;
	assert(flags == 0);
	return do_flush(client);
}

static struct nbdkit_plugin plugin = {
	.name			= "bftblk",
	.longname		= "bftblk Byzantine-fault-tolerant block device",
	.version		= "0.1",
	.description		= "Disk on n = 3t+1 servers with M-PoWerStore",
	.unload			= bftblk_unload,
	.config			= bftblk_config,
	.config_complete	= bftblk_config_complete,
	.config_help		=
	    "config=FILE     (required) cluster configuration, bftblk.conf(5)\n"
	    "keys=FILE       (required) client key file from bftblk keygen\n"
	    "                or bftblk client add (role ro: read-only export)\n"
	    "size=SIZE       export only the first SIZE bytes\n"
	    "timeout=SECS    per-round timeout (default 10)\n"
	    "writer-id=N     this writer's id (default random)\n"
	    "t=T             check that the cluster tolerates T faults\n"
	    "ec-backend=NAME liberasurecode backend (default isa_l_rs_cauchy)\n"
	    "cache=SIZE      block cache for small writes (default 128M, 0 off)\n"
	    "encrypt=on|off  seal every block with the volume key (default off)\n"
	    "volume-key=FILE volume key from bftblk volume-key (for encrypt=on)",
	.after_fork		= bftblk_after_fork,
	.cleanup		= bftblk_cleanup,
	.open			= bftblk_open,
	.get_size		= bftblk_get_size,
	.block_size		= bftblk_block_size,
	.can_write		= bftblk_can_write,
	.can_flush		= bftblk_can_true,
	.can_trim		= bftblk_can_true,
	.can_zero		= bftblk_can_true,
	.can_multi_conn		= bftblk_can_true,
	.can_fua		= bftblk_can_fua,
	.pread			= bftblk_pread,
	.pwrite			= bftblk_pwrite,
	.zero			= bftblk_zero,
	.trim			= bftblk_trim,
	.flush			= bftblk_flush,
	.errno_is_preserved	= 0,
};

NBDKIT_REGISTER_PLUGIN(plugin)
