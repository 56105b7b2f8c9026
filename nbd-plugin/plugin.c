/*
 * nbdkit-bftblk-plugin: exports a disk whose 64 KiB blocks are
 * M-PoWerStore registers on n = 3t+1 bftblk servers.
 *
 * Everything but nbdkit's side lives in libbftblk (lib/bftblk.h): this
 * file passes parameters through, maps callbacks to library calls and
 * library failures to nbdkit errors, and sends the library's log to
 * nbdkit's.  One library handle serves every NBD connection to an
 * export (exports.c: one per named volume), so the block cache, the
 * range locks and the connections to the servers are shared, and a
 * flush on any connection covers the writes of all.
 */
#define NBDKIT_API_VERSION 2
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <nbdkit-plugin.h>

#include "bftblk.h"
#include "exports.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

static struct bftblk *lib;
/* The base handle's export: volume 0, or the volume named in params. */
static struct export base;
/*
 * Exports by volume name, unless a parameter pins one volume (volume=,
 * volume-id=), or encrypt=on or server-key= make the base handle one
 * that cannot read the plain volume table.
 */
static bool pinned;
/*
 * With exports by name the base handle only reads the table and never
 * takes a lease; each export's handle gets shared= as given (or off).
 */
static char clone_options[32] = "shared=off";

/*
 * nbdkit's own lines carry no time.  On a terminal or in a file, ours
 * start with the UTC date and time, as the servers' do; when stderr is
 * the journal (JOURNAL_STREAM names it), journald stamps lines itself.
 */
static bool stamped;

static bool
stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat sb;
	int used = 0;

	return js != NULL &&
	    sscanf(js, "%llu:%llu%n", &dev, &ino, &used) == 2 &&
	    js[used] == '\0' && fstat(2, &sb) == 0 &&
	    (unsigned long long)sb.st_dev == dev &&
	    (unsigned long long)sb.st_ino == ino;
}

static void
vlog(bool error, const char *fmt, va_list ap)
{
	char msg[2048], ts[64] = "";
	struct timespec now;
	struct tm tm;

	vsnprintf(msg, sizeof msg, fmt, ap);
	if (stamped) {
		clock_gettime(CLOCK_REALTIME, &now);
		gmtime_r(&now.tv_sec, &tm);
		snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ ",
		    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		    tm.tm_min, tm.tm_sec, now.tv_nsec / 1000000);
	}
	if (error)
		nbdkit_error("%s%s", ts, msg);
	else
		nbdkit_debug("%s%s", ts, msg);
}

static void __attribute__((format(printf, 1, 2)))
plugin_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(true, fmt, ap);
	va_end(ap);
}

static void __attribute__((format(printf, 1, 2)))
plugin_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(false, fmt, ap);
	va_end(ap);
}

/* Errors and warnings always; the rest with nbdkit -v. */
static void
plugin_log(void *opaque, enum bftblk_log_level level, const char *msg)
{
	(void)opaque;
	if (level == BFTBLK_LOG_ERROR)
		plugin_error("%s", msg);
	else if (level == BFTBLK_LOG_WARN)
		plugin_error("warning: %s", msg);
	else
		plugin_debug("%s", msg);
}

/* Reports a failed library call r as the request's error. */
static int
failed(int r)
{
	nbdkit_set_error(-r);
	return -1;
}

static void
plug_load(void)
{
	stamped = !stderr_is_journal();
	if ((lib = bftblk_create()) == NULL)
		return;
	bftblk_set_log(lib, plugin_log, NULL);
}

static void
plug_unload(void)
{
	exports_fini();
	bftblk_close(lib);
	lib = NULL;
}

/*
 * Parameters go to the library as they are; paths are made absolute
 * first, as nbdkit leaves the directory it was started in.
 */
static int
plug_config(const char *k, const char *value)
{
	char *abs = NULL;
	int r;

	if (lib == NULL) {
		plugin_error("out of memory");
		return -1;
	}
	if (strcmp(k, "config") == 0 || strcmp(k, "keys") == 0 ||
	    strcmp(k, "volume-key") == 0 || strcmp(k, "server-key") == 0) {
		if ((abs = nbdkit_absolute_path(value)) == NULL)
			return -1;
		value = abs;
	}
	r = bftblk_set_option(lib, k, value);
	free(abs);
	/* The library took value as on or off: pass its meaning on. */
	if (r == 0 && strcmp(k, "shared") == 0)
		snprintf(clone_options, sizeof clone_options, "shared=%s",
		    strcmp(value, "on") == 0 || strcmp(value, "1") == 0 ||
		    strcmp(value, "true") == 0 || strcmp(value, "yes") == 0 ?
		    "on" : "off");
	if (strcmp(k, "volume") == 0 || strcmp(k, "volume-id") == 0 ||
	    strcmp(k, "server-key") == 0 || (strcmp(k, "encrypt") == 0 &&
	    strcmp(value, "off") != 0))
		pinned = true;
	if (r != 0) {
		plugin_error("%s", bftblk_errmsg(lib));
		return -1;
	}
	return 0;
}

/* Files are read and checked here, so that errors show before forking. */
static int
plug_config_complete(void)
{
	if ((!pinned && bftblk_set_option(lib, "shared", "on") != 0) ||
	    bftblk_load(lib) != 0 || bftblk_get_info(lib, &base.info, sizeof base.info) != 0) {
		plugin_error("%s", bftblk_errmsg(lib));
		return -1;
	}
	return 0;
}

/* Threads do not survive nbdkit's fork into the background: start here. */
static int
plug_after_fork(void)
{
	if (bftblk_connect(lib) != 0) {
		plugin_error("%s", bftblk_errmsg(lib));
		return -1;
	}
	base.h = lib;
	exports_init(&base, !pinned, clone_options);
	return 0;
}

static void
plug_cleanup(void)
{
	struct bftblk_stats s;

	if (bftblk_get_stats(lib, &s, sizeof s) != 0)
		return;
	plugin_debug("bftblk: %" PRIu64 " reads (%" PRIu64 " in one round, "
	    "%" PRIu64 " fell back, %" PRIu64 " restarts, %" PRIu64
	    " repairs), %" PRIu64 " writes (%" PRIu64 " without CLOCK, %"
	    PRIu64 " fell back), %" PRIu64 " flushes, %" PRIu64 " forged "
	    "timestamps, %" PRIu64 " timeouts, %" PRIu64 " reconnects; "
	    "partial writes: %" PRIu64 " cache hits (%" PRIu64 " stale, read "
	    "again), %" PRIu64 " misses; %u of %u blocks cached; %" PRIu64
	    " small writes coalesced into others", s.reads, s.fast_reads,
	    s.fast_read_fallbacks, s.read_restarts, s.repairs, s.writes,
	    s.fast_writes, s.fast_write_fallbacks, s.flushes, s.forged_ts,
	    s.timeouts, s.reconnects, s.cache_hits, s.cache_stale,
	    s.cache_misses, s.cached_blocks, s.cache_capacity, s.coalesced);
	for (unsigned i = 0; i < s.nservers; i++) {
		const struct bftblk_server_stats *v = &s.server[i];

		plugin_debug("bftblk: server %u: %" PRIu64 " replies, %" PRIu64
		    " errors, %" PRIu64 " timeouts, %" PRIu64 " mismatched, %"
		    PRIu64 " forged timestamps, %" PRIu64 " bad fragments, %"
		    PRIu64 " disconnects", i, v->replies, v->error_replies,
		    v->timeouts, v->mismatched, v->forged_ts,
		    v->bad_fragments, v->disconnects);
	}
}

/* The export the client named; its connections share its handle. */
static void *
plug_open(int readonly)
{
	(void)readonly;
	return exports_open(nbdkit_export_name());
}

static void
plug_close(void *h)
{
	exports_close(h);
}

/* nbdinfo --list: every volume, and the default export. */
static int
plug_list_exports(int readonly, int is_tls, struct nbdkit_exports *list)
{
	(void)readonly;
	(void)is_tls;
	return exports_list(list);
}

static int64_t
plug_get_size(void *h)
{
	return (int64_t)((struct export *)h)->info.size;
}

/* Whole blocks avoid read-modify-write; anything smaller still works. */
static int
plug_block_size(void *h, uint32_t *minimum, uint32_t *preferred,
    uint32_t *maximum)
{
	*minimum = 1;
	*preferred = ((struct export *)h)->info.block_size;
	*maximum = 0xffffffff;
	return 0;
}

static int plug_can_true(void *h) { (void)h; return 1; }

/* A read-only key holds no MAC key: export the disk read-only. */
static int
plug_can_write(void *h)
{
	return !((struct export *)h)->info.readonly;
}

/* Flush makes writes durable on n-t servers; FUA is a flush after. */
static int
plug_can_fua(void *h)
{
	(void)h;
	return NBDKIT_FUA_NATIVE;
}

static int
plug_pread(void *h, void *buf, uint32_t count, uint64_t offset,
    uint32_t flags)
{
	int r;

	assert(flags == 0);
	r = bftblk_pread(((struct export *)h)->h, buf, count, offset);
	return r == 0 ? 0 : failed(r);
}

static unsigned
lib_flags(uint32_t flags)
{
	return (flags & NBDKIT_FLAG_FUA) ? BFTBLK_FUA : 0;
}

static int
plug_pwrite(void *h, const void *buf, uint32_t count, uint64_t offset,
    uint32_t flags)
{
	int r;

	assert(!(flags & ~NBDKIT_FLAG_FUA));
	r = bftblk_pwrite(((struct export *)h)->h, buf, count, offset, lib_flags(flags));
	return r == 0 ? 0 : failed(r);
}

/* Zeroing writes zero blocks: never fast, so FAST_ZERO is refused. */
static int
plug_zero(void *h, uint32_t count, uint64_t offset, uint32_t flags)
{
	int r;

	assert(!(flags & ~(NBDKIT_FLAG_FUA | NBDKIT_FLAG_MAY_TRIM |
	    NBDKIT_FLAG_FAST_ZERO)));
	if (flags & NBDKIT_FLAG_FAST_ZERO) {
		nbdkit_set_error(ENOTSUP);
		return -1;
	}
	r = bftblk_zero(((struct export *)h)->h, count, offset, lib_flags(flags));
	return r == 0 ? 0 : failed(r);
}

/* Trimmed blocks read back as zeros, which filesystems are happy with. */
static int
plug_trim(void *h, uint32_t count, uint64_t offset, uint32_t flags)
{
	int r;

	assert(!(flags & ~NBDKIT_FLAG_FUA));
	r = bftblk_trim(((struct export *)h)->h, count, offset, lib_flags(flags));
	return r == 0 ? 0 : failed(r);
}

static int
plug_flush(void *h, uint32_t flags)
{
	int r;

	assert(flags == 0);
	r = bftblk_flush(((struct export *)h)->h);
	return r == 0 ? 0 : failed(r);
}

static struct nbdkit_plugin plugin = {
	.name			= "bftblk",
	.longname		= "bftblk Byzantine-fault-tolerant block device",
	.version		= BFTBLK_VERSION_STRING,
	.description		= "Disk on n = 3t+1 servers with M-PoWerStore",
	.load			= plug_load,
	.unload			= plug_unload,
	.config			= plug_config,
	.config_complete	= plug_config_complete,
	.config_help		= NULL,		/* set_help() */
	.after_fork		= plug_after_fork,
	.cleanup		= plug_cleanup,
	.open			= plug_open,
	.close			= plug_close,
	.list_exports		= plug_list_exports,
	.get_size		= plug_get_size,
	.block_size		= plug_block_size,
	.can_write		= plug_can_write,
	.can_flush		= plug_can_true,
	.can_trim		= plug_can_true,
	.can_zero		= plug_can_true,
	.can_multi_conn		= plug_can_true,
	.can_fua		= plug_can_fua,
	.pread			= plug_pread,
	.pwrite			= plug_pwrite,
	.zero			= plug_zero,
	.trim			= plug_trim,
	.flush			= plug_flush,
	.errno_is_preserved	= 0,
};

/*
 * nbdkit --help shows the library's own list of options, which it makes
 * from the table it parses them by.  It is a call, not a constant, and
 * nbdkit copies the struct as soon as plugin_init returns it, so the
 * pointer goes in as the plugin is loaded: dlopen runs constructors
 * before nbdkit looks up plugin_init.
 */
__attribute__((constructor)) static void
set_help(void)
{
	plugin.config_help = bftblk_options_help();
}

NBDKIT_REGISTER_PLUGIN(plugin)
