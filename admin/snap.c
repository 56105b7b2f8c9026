/*
 * bftblk snap: snapshots of a volume (create, list, info, delete), and
 * bftblk export, which copies a volume or a snapshot whole into a file
 * or a pipe.  A snapshot is read as the NBD export V@S as well; here is
 * what an operator runs to take one, see them, back one up, and let one
 * go.  docs/snapshots.md says what a snapshot holds and why.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "bftblk.h"
#include "log.h"
#include "progress.h"
#include "snap_space.h"
#include "status_format.h"

struct args {
	const char *dir, *keys, *volume, *name;
	bool json;
	unsigned timeout_s;
};

static void
when(uint64_t secs, char *buf, size_t len)
{
	time_t t = (time_t)secs;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

static int
cmd_create(const struct args *a, struct bftblk *h)
{
	struct bftblk_snap s;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (bftblk_snap_create(h, a->volume, a->name, &s, sizeof s) != 0) {
		bft_log("%s", bftblk_errmsg(h));
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("created snapshot '%s@%s': boundary generation %" PRIu64
	    ", %" PRIu64 " bytes, in %.2f s\n", a->volume, s.name, s.boundary,
	    s.size, (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}

static int
cmd_list(const struct args *a, struct bftblk *h)
{
	struct admin_snap_space *sp;
	struct bftblk_snap *s;
	char created[64], excl[32];
	size_t n;

	if (bftblk_snap_list(h, a->volume, &s, &n) != 0) {
		bft_log("%s", bftblk_errmsg(h));
		return 1;
	}
	if ((sp = calloc(n ? n : 1, sizeof *sp)) == NULL) {
		bft_log("out of memory");
		free(s);
		return 1;
	}
	/* The figures inform; a cluster that cannot give them still lists. */
	if (admin_snap_space(a->dir, a->keys, a->timeout_s, s, n, sp) != 0)
		bft_log("the space snapshots hold could not be asked");
	if (a->json) {
		printf("[");
		for (size_t i = 0; i < n; i++)
			printf("%s{\"volume\":\"%s\",\"name\":\"%s\","
			    "\"volume_id\":%" PRIu32 ",\"size\":%" PRIu64
			    ",\"boundary\":%" PRIu64 ",\"created\":%" PRIu64
			    ",\"encrypted\":%s,\"deleting\":%s,"
			    "\"exclusive_bytes\":%" PRIu64 ",\"space_servers\":"
			    "%u}", i ? "," : "", s[i].volume, s[i].name,
			    s[i].volume_id, s[i].size, s[i].boundary,
			    s[i].created, s[i].encrypted ? "true" : "false",
			    s[i].deleting ? "true" : "false", sp[i].exclusive,
			    sp[i].answered);
		printf("]\n");
	} else {
		printf("%-20s %-20s %14s %10s %11s  %-23s %s\n", "VOLUME",
		    "SNAPSHOT", "SIZE", "BOUNDARY", "EXCLUSIVE", "CREATED",
		    "STATE");
		for (size_t i = 0; i < n; i++) {
			when(s[i].created, created, sizeof created);
			if (sp[i].answered > 0)
				status_human_bytes(sp[i].exclusive, excl,
				    sizeof excl);
			else
				snprintf(excl, sizeof excl, "?");
			printf("%-20s %-20s %14" PRIu64 " %10" PRIu64
			    " %11s  %-23s %s\n", s[i].volume[0] ? s[i].volume :
			    "(volume 0)", s[i].name, s[i].size, s[i].boundary,
			    excl, created, s[i].deleting ? "deleting" : "live");
		}
		printf("%zu snapshot%s; EXCLUSIVE: what each holds alone on "
		    "the servers, freed by its delete\n", n, n == 1 ? "" :
		    "s");
	}
	free(sp);
	free(s);
	return 0;
}

static int
cmd_info(const struct args *a, struct bftblk *h)
{
	struct bftblk_snap *s;
	char created[64];
	size_t n, i;
	int rc = 1;

	if (bftblk_snap_list(h, a->volume, &s, &n) != 0) {
		bft_log("%s", bftblk_errmsg(h));
		return 1;
	}
	for (i = 0; i < n && strcmp(s[i].name, a->name) != 0; i++)
		;
	if (i == n) {
		bft_log("volume '%s' has no snapshot named '%s'", a->volume,
		    a->name);
	} else {
		when(s[i].created, created, sizeof created);
		printf("snapshot: %s@%s\nvolume id: %" PRIu32 "\nsize: %"
		    PRIu64 "\nboundary generation: %" PRIu64 "\ncreated: %s\n"
		    "encrypted: %s\nstate: %s\nexport: nbd://HOST/%s@%s "
		    "(read-only)\n", a->volume, s[i].name, s[i].volume_id,
		    s[i].size, s[i].boundary, created, s[i].encrypted ?
		    "yes (the volume's key)" : "no", s[i].deleting ?
		    "deleting" : "live", a->volume, s[i].name);
		rc = 0;
	}
	free(s);
	return rc;
}

static int
cmd_delete(const struct args *a, struct bftblk *h)
{
	unsigned pending = 0;

	if (bftblk_snap_delete(h, a->volume, a->name, &pending) != 0) {
		bft_log("%s", bftblk_errmsg(h));
		return 1;
	}
	if (pending > 0)
		printf("deleted snapshot '%s@%s'; %u server%s did not forget "
		    "it yet, and will at a later volume command\n", a->volume,
		    a->name, pending, pending == 1 ? "" : "s");
	else
		printf("deleted snapshot '%s@%s'; every server forgot it\n",
		    a->volume, a->name);
	return 0;
}

static int
cmd_rollback(const struct args *a, struct bftblk *h)
{
	struct admin_progress pr;

	admin_progress_start(&pr, "rollback", "blocks", 1);
	if (bftblk_snap_rollback(h, a->volume, a->name, admin_progress_fn,
	    &pr) != 0) {
		bft_log("%s", bftblk_errmsg(h));
		return 1;
	}
	printf("rolled volume '%s' back to snapshot '%s'\n", a->volume,
	    a->name);
	return 0;
}

int
admin_snap(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "keys", required_argument, NULL, 'k' },
		{ "volume", required_argument, NULL, 'v' },
		{ "name", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct {
		const char *name;
		int (*fn)(const struct args *, struct bftblk *);
		bool needs_volume, needs_name;
	} cmds[] = {
		{ "create", cmd_create, true, true },
		{ "list", cmd_list, false, false },
		{ "info", cmd_info, true, true },
		{ "delete", cmd_delete, true, true },
		{ "rollback", cmd_rollback, true, true },
	};
	struct args a = { .timeout_s = 3 };
	struct bftblk *h;
	size_t ci;
	int c, rc;

	if (argc < 2) {
		admin_usage(stderr);
		return 2;
	}
	for (ci = 0; ci < sizeof cmds / sizeof cmds[0]; ci++)
		if (strcmp(argv[1], cmds[ci].name) == 0)
			break;
	if (ci == sizeof cmds / sizeof cmds[0]) {
		bft_log("unknown snap command '%s'", argv[1]);
		admin_usage(stderr);
		return 2;
	}
	optind = 2;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': a.dir = optarg; break;
		case 'k': a.keys = optarg; break;
		case 'v': a.volume = optarg; break;
		case 'n': a.name = optarg; break;
		case 'j': a.json = true; break;
		case 'V': admin_verbose = true; break;
		case 't':
			if (admin_parse_timeout(optarg, &a.timeout_s) != 0)
				return 2;
			break;
		case 'h':
			admin_usage(stdout);
			return 0;
		default:
			admin_usage(stderr);
			return 2;
		}
	}
	if (a.dir == NULL || optind != argc ||
	    (cmds[ci].needs_volume && a.volume == NULL) ||
	    (cmds[ci].needs_name && a.name == NULL)) {
		bft_log("snap %s needs --dir DIR%s%s", cmds[ci].name,
		    cmds[ci].needs_volume ? " --volume VOLUME (\"\" for "
		    "volume 0)" : "", cmds[ci].needs_name ? " --name NAME" :
		    "");
		return 2;
	}
	if ((h = admin_open_cluster(a.dir, a.keys, a.timeout_s)) == NULL)
		return 1;
	rc = cmds[ci].fn(&a, h);
	bftblk_close(h);
	return rc;
}

/* Writes all of buf to fd; 0 or -1 with errno. */
static int
write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, buf, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

int
admin_copy_options(int argc, char **argv, bool from_snap,
    struct admin_copy_opts *o)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "keys", required_argument, NULL, 'k' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "from-snap", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof *o);
	o->timeout_s = 10;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': o->dir = optarg; break;
		case 'k': o->keys = optarg; break;
		case 'f': o->from = optarg; break;
		case 't':
			if (admin_parse_timeout(optarg, &o->timeout_s) != 0)
				return 2;
			break;
		case 'h':
			admin_usage(stdout);
			return 0;
		default:
			admin_usage(stderr);
			return 2;
		}
	}
	if (o->from != NULL && !from_snap) {
		bft_log("--from-snap is export-diff's");
		return 2;
	}
	return -1;
}

/*
 * bftblk export --dir DIR NAME FILE|-: the whole image of a volume or a
 * snapshot (NAME is V, V@S, or @S for volume 0's), raw, so that any tool
 * reads it (qemu-img, dd, a mount of a loop device).
 */
int
admin_export(int argc, char **argv)
{
	const size_t chunk = 1u << 20;
	struct bftblk *h, *vh = NULL;
	struct bftblk_info info;
	struct admin_copy_opts o;
	const char *name, *out;
	struct admin_progress pr;
	uint8_t *buf = NULL;
	int c, fd = -1, rc = 1;

	if ((c = admin_copy_options(argc, argv, false, &o)) >= 0)
		return c;
	if (o.dir == NULL || argc - optind != 2) {
		bft_log("export needs --dir DIR NAME FILE (NAME: VOLUME, "
		    "VOLUME@SNAPSHOT or @SNAPSHOT; FILE - for stdout)");
		return 2;
	}
	name = argv[optind];
	out = argv[optind + 1];
	if ((h = admin_open_cluster(o.dir, o.keys, o.timeout_s)) == NULL)
		return 1;
	/* Read-only whatever the key: an export never takes the lease. */
	if (bftblk_open_volume(h, name, "cache=0 shared=on", &vh) != 0) {
		bft_log("%s: %s", name, bftblk_errmsg(h));
		goto out;
	}
	if (bftblk_get_info(vh, &info, sizeof info) != 0) {
		bft_log("%s", bftblk_errmsg(vh));
		goto out;
	}
	fd = strcmp(out, "-") == 0 ? STDOUT_FILENO : open(out,
	    O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		bft_log("%s: %s", out, strerror(errno));
		goto out;
	}
	if ((buf = malloc(chunk)) == NULL) {
		bft_log("out of memory");
		goto out;
	}
	admin_progress_start(&pr, "export", "MiB", 1u << 20);
	for (uint64_t off = 0; off < info.size; off += chunk) {
		size_t len = info.size - off < chunk ? (size_t)(info.size -
		    off) : chunk;

		if (bftblk_pread(vh, buf, len, off) != 0) {
			bft_log("%s at %" PRIu64 ": %s", name, off,
			    bftblk_errmsg(vh));
			goto out;
		}
		if (write_all(fd, buf, len) != 0) {
			bft_log("%s: %s", out, strerror(errno));
			goto out;
		}
		admin_progress(&pr, off + len, info.size, false);
	}
	if (fd != STDOUT_FILENO && fsync(fd) != 0) {
		bft_log("%s: %s", out, strerror(errno));
		goto out;
	}
	admin_progress(&pr, info.size, info.size, true);
	rc = 0;
out:
	free(buf);
	if (fd >= 0 && fd != STDOUT_FILENO)
		close(fd);
	bftblk_close(vh);
	bftblk_close(h);
	return rc;
}

/*
 * bftblk import --dir DIR FILE|- VOLUME: a raw image written whole into
 * a volume at least its size (blocks of zeros become the zero value,
 * which takes no server space), with progress: the start of a copy that
 * import-diff then keeps in step.
 */
int
admin_import(int argc, char **argv)
{
	const size_t chunk = 1u << 20;
	struct admin_copy_opts o;
	const char *in, *vol;
	struct bftblk *h, *vh = NULL;
	struct bftblk_info info;
	struct admin_progress pr;
	uint64_t off = 0;
	uint8_t *buf = NULL;
	int c, fd = -1, rc = 1;
	ssize_t got;

	if ((c = admin_copy_options(argc, argv, false, &o)) >= 0)
		return c;
	if (o.dir == NULL || argc - optind != 2) {
		bft_log("import needs --dir DIR FILE VOLUME (FILE - for "
		    "stdin)");
		return 2;
	}
	in = argv[optind];
	vol = argv[optind + 1];
	fd = strcmp(in, "-") == 0 ? STDIN_FILENO : open(in, O_RDONLY);
	if (fd < 0) {
		bft_log("%s: %s", in, strerror(errno));
		return 1;
	}
	if ((h = admin_open_cluster(o.dir, o.keys, o.timeout_s)) == NULL)
		goto out_fd;
	if (bftblk_open_volume(h, vol, "cache=0 shared=off", &vh) != 0 ||
	    bftblk_get_info(vh, &info, sizeof info) != 0) {
		bft_log("%s: %s", vol, bftblk_errmsg(vh ? vh : h));
		goto out;
	}
	if ((buf = malloc(chunk)) == NULL) {
		bft_log("out of memory");
		goto out;
	}
	admin_progress_start(&pr, "import", "MiB", 1u << 20);
	for (;;) {
		size_t len = 0;

		while (len < chunk && (got = read(fd, buf + len,
		    chunk - len)) != 0) {
			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0) {
				bft_log("%s: %s", in, strerror(errno));
				goto out;
			}
			len += (size_t)got;
		}
		if (len == 0)
			break;
		if (off + len > info.size) {
			bft_log("%s is larger than volume '%s' (%" PRIu64
			    " bytes)", in, vol, info.size);
			goto out;
		}
		if (bftblk_pwrite(vh, buf, len, off, 0) != 0) {
			bft_log("%s at %" PRIu64 ": %s", vol, off,
			    bftblk_errmsg(vh));
			goto out;
		}
		off += len;
		admin_progress(&pr, off, info.size, false);
	}
	if (bftblk_flush(vh) != 0) {
		bft_log("%s: %s", vol, bftblk_errmsg(vh));
		goto out;
	}
	admin_progress(&pr, off, off, true);
	rc = 0;
out:
	free(buf);
	bftblk_close(vh);
	bftblk_close(h);
out_fd:
	if (fd != STDIN_FILENO)
		close(fd);
	return rc;
}
