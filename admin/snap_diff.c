/*
 * bftblk export-diff and import-diff: an incremental backup kept in
 * step.  export-diff writes what changed between two snapshots of a
 * volume (or a snapshot and the volume now) as a stream; import-diff
 * applies such a stream to a copy of the volume and then takes the
 * stream's end snapshot there, so that the next stream applies on top.
 *
 * The stream (little-endian, after the line "bftblk-diff v1\n"):
 *   'f' le64 len, name   the snapshot it starts from
 *   't' le64 len, name   the snapshot it ends at ("": the volume then)
 *   's' le64 size        the image's size at the end
 *   'w' le64 off, le64 len, data   bytes to write
 *   'z' le64 off, le64 len         bytes that read as zeros
 *   'e'                  the end
 * Records come in increasing offset order, each a whole number of
 * 64 KiB blocks; rbd export-diff's stream has the same shape.
 */
#include <errno.h>
#include <fcntl.h>
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

#define DIFF_MAGIC	"bftblk-diff v1\n"
#define BS		BFTBLK_BLOCK_SIZE
/* Blocks read or written in one call: a run of changed blocks. */
#define RUN_BLOCKS	16u

static int
put_all(FILE *fp, const void *p, size_t len)
{
	return fwrite(p, 1, len, fp) == len ? 0 : -1;
}

static int
put_u64(FILE *fp, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return put_all(fp, b, sizeof b);
}

static int
get_u64(FILE *fp, uint64_t *v)
{
	uint8_t b[8];

	if (fread(b, 1, sizeof b, fp) != sizeof b)
		return -1;
	*v = 0;
	for (int i = 7; i >= 0; i--)
		*v = *v << 8 | b[i];
	return 0;
}

static bool
all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != 0)
			return false;
	return true;
}

/* "V@S" into v and s ("" when there is no @S); -1 when too long. */
static int
split(const char *name, char *v, char *s, size_t len)
{
	const char *at = strchr(name, '@');
	size_t vl = at ? (size_t)(at - name) : strlen(name);

	if (vl >= len || (at != NULL && strlen(at + 1) >= len))
		return -1;
	memcpy(v, name, vl);
	v[vl] = '\0';
	snprintf(s, len, "%s", at ? at + 1 : "");
	return 0;
}

/* One record of a run of changed blocks [b, b + k), read at once. */
static int
put_run(FILE *fp, struct bftblk *vh, uint64_t b, unsigned k, uint8_t *buf,
    uint64_t *wbytes)
{
	if (bftblk_pread(vh, buf, (size_t)k * BS, b * BS) != 0)
		return -1;
	for (unsigned i = 0; i < k;) {
		unsigned j = i;
		bool z = all_zero(buf + (size_t)i * BS, BS);

		while (j < k && all_zero(buf + (size_t)j * BS, BS) == z)
			j++;
		if (put_all(fp, z ? "z" : "w", 1) != 0 ||
		    put_u64(fp, (b + i) * BS) != 0 ||
		    put_u64(fp, (uint64_t)(j - i) * BS) != 0 ||
		    (!z && put_all(fp, buf + (size_t)i * BS,
		    (size_t)(j - i) * BS) != 0))
			return -2;
		if (!z)
			*wbytes += (uint64_t)(j - i) * BS;
		i = j;
	}
	return 0;
}

/*
 * bftblk export-diff --dir DIR --from-snap S1 V[@S2] FILE|-
 */
int
admin_export_diff(int argc, char **argv)
{
	char vol[BFTBLK_VOLUME_NAME_MAX + 1], to[BFTBLK_VOLUME_NAME_MAX + 1];
	struct admin_copy_opts o;
	const char *name, *out;
	struct bftblk *h, *vh = NULL;
	struct bftblk_info info;
	uint64_t *blocks = NULL, wbytes = 0;
	struct admin_progress pr;
	uint8_t *buf = NULL;
	FILE *fp = NULL;
	size_t n = 0;
	int c, rc = 1;

	if ((c = admin_copy_options(argc, argv, true, &o)) >= 0)
		return c;
	if (o.dir == NULL || o.from == NULL || argc - optind != 2 ||
	    split(argv[optind], vol, to, sizeof vol) != 0) {
		bft_log("export-diff needs --dir DIR --from-snap SNAP "
		    "VOLUME[@SNAP] FILE (FILE - for stdout)");
		return 2;
	}
	name = argv[optind];
	out = argv[optind + 1];
	if ((h = admin_open_cluster(o.dir, o.keys, o.timeout_s)) == NULL)
		return 1;
	if (bftblk_snap_diff(h, vol, o.from, to[0] ? to : NULL, &blocks,
	    &n) != 0) {
		bft_log("%s", bftblk_errmsg(h));
		goto out;
	}
	if (bftblk_open_volume(h, name, "cache=0 shared=on", &vh) != 0 ||
	    bftblk_get_info(vh, &info, sizeof info) != 0) {
		bft_log("%s: %s", name, bftblk_errmsg(vh ? vh : h));
		goto out;
	}
	fp = strcmp(out, "-") == 0 ? stdout : fopen(out, "wb");
	if (fp == NULL || (buf = malloc((size_t)RUN_BLOCKS * BS)) == NULL) {
		bft_log("%s: %s", out, strerror(errno));
		goto out;
	}
	if (put_all(fp, DIFF_MAGIC, strlen(DIFF_MAGIC)) != 0 ||
	    put_all(fp, "f", 1) != 0 || put_u64(fp, strlen(o.from)) != 0 ||
	    put_all(fp, o.from, strlen(o.from)) != 0 ||
	    put_all(fp, "t", 1) != 0 || put_u64(fp, strlen(to)) != 0 ||
	    put_all(fp, to, strlen(to)) != 0 ||
	    put_all(fp, "s", 1) != 0 || put_u64(fp, info.size) != 0)
		goto out_write;
	admin_progress_start(&pr, "export-diff", "blocks", 1);
	for (size_t i = 0; i < n;) {
		unsigned k = 1;
		int r;

		while (i + k < n && k < RUN_BLOCKS &&
		    blocks[i + k] == blocks[i] + k)
			k++;
		if ((r = put_run(fp, vh, blocks[i], k, buf, &wbytes)) == -1) {
			bft_log("%s at block %" PRIu64 ": %s", name, blocks[i],
			    bftblk_errmsg(vh));
			goto out;
		}
		if (r < 0)
			goto out_write;
		i += k;
		admin_progress(&pr, i, n, false);
	}
	if (put_all(fp, "e", 1) != 0 || fflush(fp) != 0 ||
	    (fp != stdout && fsync(fileno(fp)) != 0))
		goto out_write;
	admin_progress(&pr, n, n, true);
	bft_log("export-diff: %zu changed blocks of %" PRIu64 ", %" PRIu64
	    " bytes of data", n, info.size / BS, wbytes);
	rc = 0;
	goto out;
out_write:
	bft_log("%s: %s", out, strerror(errno));
out:
	if (fp != NULL && fp != stdout)
		fclose(fp);
	free(buf);
	free(blocks);
	bftblk_close(vh);
	bftblk_close(h);
	return rc;
}

/* A record's name field, at most a snapshot name long. */
static int
get_name(FILE *fp, char *out, size_t len)
{
	uint64_t n;

	if (get_u64(fp, &n) != 0 || n >= len || fread(out, 1, n, fp) != n)
		return -1;
	out[n] = '\0';
	return 0;
}

/* Applies the records after the header to vh; the last 'e' seen. */
static int
apply(FILE *fp, struct bftblk *vh, uint64_t size, uint8_t *buf,
    uint64_t *nblocks)
{
	uint64_t off, len, done = 0, last_end = 0;
	struct admin_progress pr;
	int tag;

	admin_progress_start(&pr, "import-diff", "blocks", 1);
	while ((tag = fgetc(fp)) != EOF) {
		if (tag == 'e')
			return 0;
		if ((tag != 'w' && tag != 'z') || get_u64(fp, &off) != 0 ||
		    get_u64(fp, &len) != 0 || off % BS || len % BS ||
		    len == 0 || off < last_end || off > size ||
		    len > size - off) {
			bft_log("import-diff: a damaged or misordered record "
			    "(tag %d)", tag);
			return -1;
		}
		last_end = off + len;
		for (uint64_t o = off; o < off + len; o += RUN_BLOCKS * BS) {
			size_t k = off + len - o < RUN_BLOCKS * BS ?
			    (size_t)(off + len - o) : RUN_BLOCKS * BS;

			if (tag == 'w' && fread(buf, 1, k, fp) != k) {
				bft_log("import-diff: the stream ends inside "
				    "a record");
				return -1;
			}
			if ((tag == 'w' ? bftblk_pwrite(vh, buf, k, o, 0) :
			    bftblk_zero(vh, k, o, 0)) != 0) {
				bft_log("import-diff at %" PRIu64 ": %s", o,
				    bftblk_errmsg(vh));
				return -1;
			}
			done += k / BS;
			admin_progress(&pr, done, done, false);
		}
	}
	*nblocks = done;
	bft_log("import-diff: the stream has no end record");
	return -1;
}

/*
 * bftblk import-diff --dir DIR FILE|- VOLUME: the volume must hold the
 * stream's start snapshot (it is the copy the stream was made for);
 * the stream's end snapshot is taken on it after.
 */
int
admin_import_diff(int argc, char **argv)
{
	char magic[sizeof DIFF_MAGIC], from[BFTBLK_VOLUME_NAME_MAX + 1];
	char to[BFTBLK_VOLUME_NAME_MAX + 1];
	struct admin_copy_opts o;
	const char *in, *vol;
	struct bftblk *h, *vh = NULL;
	struct bftblk_info info;
	struct bftblk_snap *snaps = NULL, s;
	uint64_t size, nblocks = 0;
	uint8_t *buf = NULL;
	size_t ns = 0, i;
	FILE *fp = NULL;
	int c, rc = 1;

	if ((c = admin_copy_options(argc, argv, false, &o)) >= 0)
		return c;
	if (o.dir == NULL || argc - optind != 2) {
		bft_log("import-diff needs --dir DIR FILE VOLUME (FILE - for "
		    "stdin)");
		return 2;
	}
	in = argv[optind];
	vol = argv[optind + 1];
	fp = strcmp(in, "-") == 0 ? stdin : fopen(in, "rb");
	if (fp == NULL) {
		bft_log("%s: %s", in, strerror(errno));
		return 1;
	}
	if (fread(magic, 1, strlen(DIFF_MAGIC), fp) != strlen(DIFF_MAGIC) ||
	    memcmp(magic, DIFF_MAGIC, strlen(DIFF_MAGIC)) != 0 ||
	    fgetc(fp) != 'f' || get_name(fp, from, sizeof from) != 0 ||
	    fgetc(fp) != 't' || get_name(fp, to, sizeof to) != 0 ||
	    fgetc(fp) != 's' || get_u64(fp, &size) != 0) {
		bft_log("%s: not a bftblk-diff v1 stream", in);
		goto out_file;
	}
	if ((h = admin_open_cluster(o.dir, o.keys, o.timeout_s)) == NULL)
		goto out_file;
	if (bftblk_snap_list(h, vol, &snaps, &ns) != 0) {
		bft_log("%s", bftblk_errmsg(h));
		goto out;
	}
	for (i = 0; i < ns && strcmp(snaps[i].name, from) != 0; i++)
		;
	if (i == ns) {
		bft_log("volume '%s' has no snapshot '%s', where the stream "
		    "starts: it is not the copy the stream was made for",
		    vol, from);
		goto out;
	}
	if (to[0] != '\0') {
		for (i = 0; i < ns && strcmp(snaps[i].name, to) != 0; i++)
			;
		if (i < ns) {
			bft_log("volume '%s' has snapshot '%s' already: the "
			    "stream was applied", vol, to);
			goto out;
		}
	}
	/* Its own writer for the while: the lease, as any writer takes. */
	if (bftblk_open_volume(h, vol, "cache=0 shared=off", &vh) != 0 ||
	    bftblk_get_info(vh, &info, sizeof info) != 0) {
		bft_log("%s: %s", vol, bftblk_errmsg(vh ? vh : h));
		goto out;
	}
	if (info.size < size) {
		bft_log("volume '%s' holds %" PRIu64 " bytes, the stream's "
		    "image %" PRIu64 ": grow it first (bftblk volume resize)",
		    vol, info.size, size);
		goto out;
	}
	if ((buf = malloc((size_t)RUN_BLOCKS * BS)) == NULL ||
	    apply(fp, vh, size, buf, &nblocks) != 0)
		goto out;
	if (bftblk_flush(vh) != 0) {
		bft_log("%s: %s", vol, bftblk_errmsg(vh));
		goto out;
	}
	bftblk_close(vh);
	vh = NULL;
	if (to[0] != '\0' && bftblk_snap_create(h, vol, to, &s,
	    sizeof s) != 0) {
		bft_log("snapshot '%s@%s': %s", vol, to, bftblk_errmsg(h));
		goto out;
	}
	printf("applied the stream from '%s' to '%s' on volume '%s'%s\n",
	    from, to[0] ? to : "(the volume)", vol, to[0] ?
	    ", and took that snapshot" : "");
	rc = 0;
out:
	free(buf);
	free(snaps);
	bftblk_close(vh);
	bftblk_close(h);
out_file:
	if (fp != stdin)
		fclose(fp);
	return rc;
}
