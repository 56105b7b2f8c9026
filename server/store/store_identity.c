/*
 * The identity file that ties a data directory to one server of one
 * cluster, and its format number (store.h): written when the directory
 * is made, checked at every open, rewritten when an older format is
 * upgraded in place.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bftblk.h"
#include "config.h"
#include "featureset.h"
#include "kvfile.h"
#include "log.h"
#include "store.h"
#include "store_int.h"
#include "store_log.h"

#define IDENTITY_FILE	"identity"
#define IDENTITY_TMP	"identity.tmp"
/*
 * The finalized line's key, then the release (featureset.h).  Release
 * 0.2.0 stops at the first key it does not know and prints it: the key
 * is the sentence that tells its operator why.
 */
#define FINALIZED_KEY	"finalized for bftblk release"
#define FINALIZED_WHY	"older bftblk servers must not open this directory"

/* Temporary file, fsync, rename, fsync of the directory. */
static int
identity_write(int dirfd, const struct bft_store_identity *id,
    unsigned finalized)
{
	char text[768], fin[160] = "", hex[2 * BFT_CLUSTER_ID_LEN + 1];
	char rel[16];
	int fd, len, err = 0;

	bft_format_hex(id->cluster_id, BFT_CLUSTER_ID_LEN, hex);
	if (finalized > 0)
		snprintf(fin, sizeof fin, FINALIZED_KEY " %s: " FINALIZED_WHY
		    " = %u\n", bft_release_str(bft_release_code(
		    BFTBLK_VERSION_MAJOR, BFTBLK_VERSION_MINOR,
		    BFTBLK_VERSION_PATCH), rel, sizeof rel), finalized);
	len = snprintf(text, sizeof text,
	    "# What this bftblk data directory belongs to; never edit.\n"
	    "%sformat = %d\ncluster_id = %s\nserver_index = %" PRIu32 "\n"
	    "n = %" PRIu32 "\nt = %" PRIu32 "\nblock_size = %" PRIu32 "\n"
	    "nblocks = %" PRIu64 "\n", fin, finalized > 0 ?
	    BFT_STORE_FORMAT_FINALIZED : BFT_STORE_FORMAT, hex,
	    id->server_index, id->n, id->t, id->block_size, id->nblocks);
	fd = st_open_private(dirfd, IDENTITY_TMP, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -errno;
	if ((err = bft_pwrite_all(fd, text, (size_t)len, 0)) < 0)
		goto out_close;
	if (fsync(fd) < 0) {
		err = -errno;
		goto out_close;
	}
	if (close(fd) < 0) {
		fd = -1;
		err = -errno;
		goto out_unlink;
	}
	fd = -1;
	if (renameat(dirfd, IDENTITY_TMP, dirfd, IDENTITY_FILE) < 0) {
		err = -errno;
		goto out_unlink;
	}
	/* The rename is only durable once the directory is. */
	if (fsync(dirfd) < 0)
		return -errno;
	return 0;
out_close:
	close(fd);
out_unlink:
	unlinkat(dirfd, IDENTITY_TMP, 0);
	return err;
}

struct id_parse {
	struct bft_store_identity *id;
	unsigned seen;
	unsigned upgrade;		/* 3 to 6: to be rewritten, else 0 */
	unsigned format;
	unsigned finalized;		/* the finalized line's level */
};

static const char *const id_keys[] = {
	"format", "cluster_id", "server_index", "n", "t", "block_size",
	"nblocks",
};

static int
parse_u64(const char *s, uint64_t max, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno != 0 || *end != '\0' || *v > max ? -1 : 0;
}

static int
id_pair(void *ctx, const char *key, const char *value, char *err,
    size_t errlen)
{
	struct id_parse *ip = ctx;
	unsigned k;
	uint64_t v = 0;

	if (strncmp(key, FINALIZED_KEY " ", strlen(FINALIZED_KEY) + 1) == 0) {
		if (ip->finalized > 0) {
			snprintf(err, errlen, "the finalized line is given "
			    "twice");
			return -EINVAL;
		}
		if (parse_u64(value, BFT_LEVEL_MAX, &v) < 0 || v == 0)
			goto out_bad;
		if (v > BFT_LEVEL) {
			snprintf(err, errlen, "the cluster was finalized at "
			    "level %" PRIu64 ", newer than this bftblk's (%u): "
			    "run the release it was finalized for", v,
			    BFT_LEVEL);
			return -EINVAL;
		}
		ip->finalized = (unsigned)v;
		return 0;
	}
	for (k = 0; k < sizeof id_keys / sizeof id_keys[0]; k++)
		if (strcmp(key, id_keys[k]) == 0)
			break;
	if (k == sizeof id_keys / sizeof id_keys[0]) {
		snprintf(err, errlen, "unknown field \"%s\"", key);
		return -EINVAL;
	}
	if (ip->seen & (1u << k)) {
		snprintf(err, errlen, "field %s given twice", key);
		return -EINVAL;
	}
	ip->seen |= 1u << k;
	if (k == 1) {
		if (bft_parse_hex(value, ip->id->cluster_id,
		    BFT_CLUSTER_ID_LEN) != 0)
			goto out_bad;
		return 0;
	}
	if (parse_u64(value, k == 6 ? UINT64_MAX : UINT32_MAX, &v) < 0)
		goto out_bad;
	switch (k) {
	case 0:
		if (v == 1) {
			snprintf(err, errlen, "format 1 was written by an "
			    "older bftblk whose H was BLAKE2b; this one hashes "
			    "with BLAKE3 (format %d): copy the disk out with "
			    "the old version (nbdcopy) into a new cluster",
			    BFT_STORE_FORMAT);
			return -EINVAL;
		}
		if (v == 2) {
			snprintf(err, errlen, "format 2 was written by an "
			    "older bftblk whose MACs did not name the block; "
			    "this one's do (format %d): copy the disk out with "
			    "the old version (nbdcopy) into a new cluster",
			    BFT_STORE_FORMAT);
			return -EINVAL;
		}
		if (v >= 3 && v < BFT_STORE_FORMAT) {
			/* Format 3's records are read whole; see store.h. */
			ip->upgrade = (unsigned)v;
			break;
		}
		if (v != BFT_STORE_FORMAT && v != BFT_STORE_FORMAT_FINALIZED) {
			snprintf(err, errlen, "format %" PRIu64 " is not "
			    "supported (only %d and %d)", v, BFT_STORE_FORMAT,
			    BFT_STORE_FORMAT_FINALIZED);
			return -EINVAL;
		}
		ip->format = (unsigned)v;
		break;
	case 2: ip->id->server_index = (uint32_t)v; break;
	case 3: ip->id->n = (uint32_t)v; break;
	case 4: ip->id->t = (uint32_t)v; break;
	case 5: ip->id->block_size = (uint32_t)v; break;
	case 6: ip->id->nblocks = v; break;
	}
	return 0;
out_bad:
	snprintf(err, errlen, "bad value \"%s\" for %s", value, key);
	return -EINVAL;
}

/* 0, -ENOENT if there is none, or -errno with a reason in err. */
static int
identity_read(const char *dir, int dirfd, struct bft_store_identity *id,
    unsigned *upgrade, unsigned *finalized, char *err, size_t errlen)
{
	struct id_parse ip = { .id = id };
	char path[4096];
	struct stat sb;

	memset(id, 0, sizeof *id);
	if (fstatat(dirfd, IDENTITY_FILE, &sb, 0) < 0) {
		int e = errno;

		snprintf(err, errlen, "%s/%s: %s", dir, IDENTITY_FILE,
		    strerror(e));
		return -e;
	}
	if (snprintf(path, sizeof path, "%s/%s", dir, IDENTITY_FILE) >=
	    (int)sizeof path) {
		snprintf(err, errlen, "data dir path too long");
		return -ENAMETOOLONG;
	}
	if (bft_kv_parse(path, 0, id_pair, &ip, err, errlen) < 0)
		return -EINVAL;
	for (unsigned k = 0; k < sizeof id_keys / sizeof id_keys[0]; k++) {
		if (!(ip.seen & (1u << k))) {
			snprintf(err, errlen, "%s: field %s is missing", path,
			    id_keys[k]);
			return -EINVAL;
		}
	}
	/* Either both or neither: a half-edited file is not guessed at. */
	if ((ip.format == BFT_STORE_FORMAT_FINALIZED) != (ip.finalized > 0)) {
		snprintf(err, errlen, "%s: format %u %s a finalized line",
		    path, ip.format, ip.finalized > 0 ? "with" : "without");
		return -EINVAL;
	}
	*upgrade = ip.upgrade;
	*finalized = ip.finalized;
	return 0;
}

int
st_identity_check(struct bft_store *st, char *err, size_t errlen)
{
	const struct bft_store_identity *a = &st->id;
	struct bft_store_identity d;
	char hd[2 * BFT_CLUSTER_ID_LEN + 1], ha[2 * BFT_CLUSTER_ID_LEN + 1];
	unsigned upgrade = 0;
	int e;

	e = identity_read(st->dir, st->dirfd, &d, &upgrade, &st->finalized,
	    err, errlen);
	if (e == -ENOENT && st->nseg > 0) {
		snprintf(err, errlen, "data dir %s has log segments but no "
		    "identity file; refusing to guess whose they are",
		    st->dir);
		return -EINVAL;
	}
	if (e == -ENOENT) {
		if ((e = identity_write(st->dirfd, a, 0)) < 0)
			snprintf(err, errlen, "%s/%s: %s", st->dir,
			    IDENTITY_FILE, strerror(-e));
		st->created = e == 0;
		return e;
	}
	if (e < 0)
		return e;
	bft_format_hex(d.cluster_id, BFT_CLUSTER_ID_LEN, hd);
	bft_format_hex(a->cluster_id, BFT_CLUSTER_ID_LEN, ha);
	if (strcmp(hd, ha) != 0)
		snprintf(err, errlen, "data dir %s belongs to cluster %s, "
		    "config says %s", st->dir, hd, ha);
	else if (d.server_index != a->server_index)
		snprintf(err, errlen, "data dir %s belongs to server index %"
		    PRIu32 ", config says %" PRIu32, st->dir, d.server_index,
		    a->server_index);
	else if (d.n != a->n)
		snprintf(err, errlen, "data dir %s was made for n = %" PRIu32
		    " servers, config says n = %" PRIu32, st->dir, d.n, a->n);
	else if (d.t != a->t)
		snprintf(err, errlen, "data dir %s was made for t = %" PRIu32
		    ", config says t = %" PRIu32, st->dir, d.t, a->t);
	else if (d.block_size != a->block_size)
		snprintf(err, errlen, "data dir %s has block size %" PRIu32
		    " vs %" PRIu32 " in the config", st->dir, d.block_size,
		    a->block_size);
	else if (d.nblocks != a->nblocks)
		snprintf(err, errlen, "data dir %s holds %" PRIu64 " blocks, "
		    "config says %" PRIu64, st->dir, d.nblocks, a->nblocks);
	else if (upgrade && (e = identity_write(st->dirfd, a, 0)) < 0)
		snprintf(err, errlen, "%s/%s: upgrading to format %d: %s",
		    st->dir, IDENTITY_FILE, BFT_STORE_FORMAT, strerror(-e));
	else {
		if (upgrade)
			bft_log("%s: data dir upgraded from format %u to %d",
			    st->dir, upgrade, BFT_STORE_FORMAT);
		/* What a crash while writing one left. */
		unlinkat(st->dirfd, IDENTITY_TMP, 0);
		return 0;
	}
	return -EINVAL;
}

unsigned
bft_store_finalized(const struct bft_store *st)
{
	return st->finalized;
}

unsigned
bft_store_format(const struct bft_store *st)
{
	return st->finalized > 0 ? BFT_STORE_FORMAT_FINALIZED :
	    BFT_STORE_FORMAT;
}

int
bft_store_finalize(struct bft_store *st, unsigned level)
{
	int e;

	if (level == 0 || level > BFT_LEVEL_MAX)
		return -EINVAL;
	if (st->finalized >= level)
		return 0;
	if ((e = identity_write(st->dirfd, &st->id, level)) < 0)
		return e;
	st->finalized = level;
	bft_log("%s: finalized at level %u: older bftblk servers will refuse "
	    "this data directory", st->dir, level);
	return 0;
}
