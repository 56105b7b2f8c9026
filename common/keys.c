/* Key files: loading (refusing loose permissions) and writing (0600). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "crypto.h"
#include "keys.h"
#include "kvfile.h"
#include "volcrypt.h"

struct key_ctx {
	struct bft_server_key *sk;
	struct bft_client_key *ck;
	struct bft_volume_key *vk;
	int have_id, have_index, have_kw, have_chan, have_name, have_aead;
	uint32_t have_keys;
	/* The next epoch's: next-epoch, next-writer-key, next-key(.I). */
	int have_next_epoch, have_next_kw;
	uint32_t have_next_keys;
};

/* Parses a decimal number no greater than max. */
static int
parse_bounded(const char *s, unsigned max, unsigned *out)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

/*
 * epoch, next-epoch and the next epoch's keys, of a server's or a
 * client's file: 1 when key is one of them (parsed, or -EINVAL), 0
 * when it is not.
 */
static int
epoch_pair(struct key_ctx *ctx, const char *key, const char *value)
{
	uint32_t *epoch = ctx->sk ? &ctx->sk->epoch : &ctx->ck->epoch;
	uint32_t *alt = ctx->sk ? &ctx->sk->alt_epoch : &ctx->ck->alt_epoch;
	unsigned v, idx;

	if (strcmp(key, "epoch") == 0 || strcmp(key, "next-epoch") == 0) {
		if (parse_bounded(value, UINT32_MAX - 1, &v))
			return -EINVAL;
		if (key[0] == 'e')
			*epoch = v;
		else {
			*alt = v;
			ctx->have_next_epoch = 1;
		}
		return 1;
	}
	if (ctx->sk && strcmp(key, "next-key") == 0) {
		if (bft_parse_hex(value, ctx->sk->k_alt, BFT_KEY_LEN))
			return -EINVAL;
		ctx->have_next_keys = 1;
		return 1;
	}
	if (ctx->ck && strncmp(key, "next-key.", 9) == 0) {
		if (parse_bounded(key + 9, BFT_MAX_N - 1, &idx) ||
		    bft_parse_hex(value, ctx->ck->k_alt[idx], BFT_KEY_LEN))
			return -EINVAL;
		ctx->have_next_keys |= 1u << idx;
		return 1;
	}
	if (ctx->ck && strcmp(key, "next-writer-key") == 0) {
		if (bft_parse_hex(value, ctx->ck->kw_alt, BFT_KEY_LEN))
			return -EINVAL;
		ctx->have_next_kw = 1;
		return 1;
	}
	return 0;
}

/*
 * A file with a next epoch has all of its keys, and it is the epoch
 * after the file's: a rotation goes one step at a time.  0, or -EINVAL
 * with the reason in err.
 */
static int
check_next(const struct key_ctx *ctx, uint32_t all_keys, const char *path,
    char *err, size_t errlen)
{
	uint32_t epoch = ctx->sk ? ctx->sk->epoch : ctx->ck->epoch;
	uint32_t alt = ctx->sk ? ctx->sk->alt_epoch : ctx->ck->alt_epoch;
	bool *has_alt = ctx->sk ? &ctx->sk->has_alt : &ctx->ck->has_alt;

	if (!ctx->have_next_epoch && !ctx->have_next_keys &&
	    !ctx->have_next_kw)
		return 0;
	if (!ctx->have_next_epoch || ctx->have_next_keys != all_keys ||
	    (ctx->ck != NULL && !ctx->have_next_kw)) {
		snprintf(err, errlen, "%s: a next epoch needs next-epoch and "
		    "every next key", path);
		return -EINVAL;
	}
	if (alt != epoch + 1) {
		snprintf(err, errlen, "%s: next-epoch is %u, but the epoch "
		    "after %u is %u", path, alt, epoch, epoch + 1);
		return -EINVAL;
	}
	*has_alt = true;
	return 0;
}

static int
key_pair(void *vctx, const char *key, const char *value, char *err,
    size_t errlen)
{
	struct key_ctx *ctx = vctx;
	unsigned idx;
	int r;

	if (ctx->vk) {
		if (strcmp(key, "aead") == 0) {
			if (bft_aead_parse(value, &ctx->vk->aead))
				goto bad;
			ctx->have_aead = 1;
		} else if (strcmp(key, "key") == 0) {
			if (bft_parse_hex(value, ctx->vk->key, BFT_KEY_LEN))
				goto bad;
			ctx->have_keys = 1;
		} else {
			snprintf(err, errlen, "unknown key '%s'", key);
			return -EINVAL;
		}
		return 0;
	}
	if ((r = epoch_pair(ctx, key, value)) != 0) {
		if (r < 0)
			goto bad;
	} else if (strcmp(key, "cluster-id") == 0) {
		uint8_t *id = ctx->sk ? ctx->sk->cluster_id :
		    ctx->ck->cluster_id;

		if (bft_parse_hex(value, id, BFT_CLUSTER_ID_LEN))
			goto bad;
		ctx->have_id = 1;
	} else if (ctx->sk && strcmp(key, "index") == 0) {
		if (parse_bounded(value, BFT_MAX_N - 1, &ctx->sk->index))
			goto bad;
		ctx->have_index = 1;
	} else if (ctx->sk && strcmp(key, "key") == 0) {
		if (bft_parse_hex(value, ctx->sk->k, BFT_KEY_LEN))
			goto bad;
		ctx->have_keys = 1;
	} else if (ctx->ck && strcmp(key, "n") == 0) {
		if (parse_bounded(value, BFT_MAX_N, &ctx->ck->n) ||
		    ctx->ck->n < 4 || (ctx->ck->n - 1) % 3 != 0)
			goto bad;
	} else if (ctx->ck && strncmp(key, "key.", 4) == 0) {
		if (parse_bounded(key + 4, BFT_MAX_N - 1, &idx) ||
		    bft_parse_hex(value, ctx->ck->k[idx], BFT_KEY_LEN))
			goto bad;
		ctx->have_keys |= 1u << idx;
	} else if (strcmp(key, "chan-key") == 0) {
		struct bft_chan_keypair *kp = ctx->sk ? &ctx->sk->chan :
		    &ctx->ck->chan;

		if (bft_parse_hex(value, kp->sk, sizeof kp->sk) ||
		    bft_chan_keypair_from_sk(kp) != 0)
			goto bad;
		ctx->have_chan = 1;
	} else if (ctx->ck && strcmp(key, "name") == 0) {
		if (strlen(value) == 0 || strlen(value) > BFT_NAME_LEN)
			goto bad;
		strcpy(ctx->ck->name, value);
		ctx->have_name = 1;
	} else if (ctx->ck && strcmp(key, "role") == 0) {
		if (strcmp(value, "rw") == 0)
			ctx->ck->role = BFT_ROLE_RW;
		else if (strcmp(value, "ro") == 0)
			ctx->ck->role = BFT_ROLE_RO;
		else
			goto bad;
	} else if (ctx->ck && strcmp(key, "writer-key") == 0) {
		if (bft_parse_hex(value, ctx->ck->kw, BFT_KEY_LEN))
			goto bad;
		ctx->have_kw = 1;
	} else {
		snprintf(err, errlen, "unknown key '%s'", key);
		return -EINVAL;
	}
	return 0;
bad:
	snprintf(err, errlen, "bad value for '%s'", key);
	return -EINVAL;
}

int
bft_server_key_load(const char *path, struct bft_server_key *key, char *err,
    size_t errlen)
{
	struct key_ctx ctx = { .sk = key };
	int r;

	memset(key, 0, sizeof *key);
	if ((r = bft_kv_parse(path, 1, key_pair, &ctx, err, errlen)) != 0)
		return r;
	if (!ctx.have_id || !ctx.have_index || !ctx.have_keys ||
	    !ctx.have_chan) {
		snprintf(err, errlen, "%s: not a server key file (needs "
		    "cluster-id, index, key and chan-key)", path);
		return -EINVAL;
	}
	return check_next(&ctx, 1, path, err, errlen);
}

int
bft_client_key_load(const char *path, struct bft_client_key *key, char *err,
    size_t errlen)
{
	struct key_ctx ctx = { .ck = key };
	int r;

	memset(key, 0, sizeof *key);
	key->role = BFT_ROLE_RW;
	if ((r = bft_kv_parse(path, 1, key_pair, &ctx, err, errlen)) != 0)
		return r;
	if (!ctx.have_id || !ctx.have_chan || !ctx.have_name) {
		snprintf(err, errlen, "%s: not a client key file (needs "
		    "cluster-id, name and chan-key)", path);
		return -EINVAL;
	}
	/* A reader holds no MAC key: there is nothing it could sign. */
	if (key->role == BFT_ROLE_RO) {
		if (ctx.have_kw || ctx.have_keys || ctx.have_next_kw ||
		    ctx.have_next_keys) {
			snprintf(err, errlen, "%s: a read-only key file must "
			    "not hold MAC keys", path);
			return -EINVAL;
		}
		return 0;
	}
	if (key->n == 0 || !ctx.have_kw ||
	    ctx.have_keys != (1u << key->n) - 1) {
		snprintf(err, errlen, "%s: not a writer's key file (needs "
		    "n, key.0 .. key.n-1 and writer-key, or role = ro)", path);
		return -EINVAL;
	}
	return check_next(&ctx, (1u << key->n) - 1, path, err, errlen);
}

void
bft_client_key_take_macs(struct bft_client_key *dst,
    const struct bft_client_key *src)
{
	memcpy(dst->k, src->k, sizeof dst->k);
	memcpy(dst->kw, src->kw, sizeof dst->kw);
	memcpy(dst->k_alt, src->k_alt, sizeof dst->k_alt);
	memcpy(dst->kw_alt, src->kw_alt, sizeof dst->kw_alt);
	dst->epoch = src->epoch;
	dst->has_alt = src->has_alt;
	dst->alt_epoch = src->alt_epoch;
}

const uint8_t *
bft_server_newest_key(const struct bft_server_key *key)
{
	return key->has_alt && key->alt_epoch > key->epoch ? key->k_alt :
	    key->k;
}

uint32_t
bft_server_newest_epoch(const struct bft_server_key *key)
{
	return key->has_alt && key->alt_epoch > key->epoch ? key->alt_epoch :
	    key->epoch;
}

/*
 * While retiring, the older key checks no new value: a leaked copy of
 * it must get nothing accepted from then on, whatever the census finds.
 */
struct bft_mac_keys
bft_server_mac_keys(const struct bft_server_key *key)
{
	if (key->has_alt && key->retiring)
		return (struct bft_mac_keys){ bft_server_newest_key(key),
		    NULL };
	return (struct bft_mac_keys){ key->k,
	    key->has_alt ? key->k_alt : NULL };
}

struct bft_mac_keys
bft_client_mac_keys(const struct bft_client_key *key, unsigned i)
{
	if (i == BFT_MAX_N)
		return (struct bft_mac_keys){ key->kw,
		    key->has_alt ? key->kw_alt : NULL };
	return (struct bft_mac_keys){ key->k[i],
	    key->has_alt ? key->k_alt[i] : NULL };
}

bool
bft_client_key_next_pending(const struct bft_client_key *key)
{
	return key->has_alt && key->alt_epoch > key->epoch;
}

void
bft_client_key_swap(struct bft_client_key *key)
{
	uint8_t tmp[BFT_KEY_LEN];
	uint32_t e = key->epoch;

	for (unsigned i = 0; i < BFT_MAX_N; i++) {
		memcpy(tmp, key->k[i], BFT_KEY_LEN);
		memcpy(key->k[i], key->k_alt[i], BFT_KEY_LEN);
		memcpy(key->k_alt[i], tmp, BFT_KEY_LEN);
	}
	memcpy(tmp, key->kw, BFT_KEY_LEN);
	memcpy(key->kw, key->kw_alt, BFT_KEY_LEN);
	memcpy(key->kw_alt, tmp, BFT_KEY_LEN);
	bft_wipe(tmp, sizeof tmp);
	key->epoch = key->alt_epoch;
	key->alt_epoch = e;
}

void
bft_peer_key(const struct bft_server_key *sk, struct bft_client_key *ck)
{
	memset(ck, 0, sizeof *ck);
	memcpy(ck->cluster_id, sk->cluster_id, BFT_CLUSTER_ID_LEN);
	snprintf(ck->name, sizeof ck->name, "server-%u", sk->index);
	ck->role = BFT_ROLE_PEER;
	ck->chan = sk->chan;
	ck->self = sk->index;
	memcpy(ck->k[sk->index], sk->k, BFT_KEY_LEN);
	ck->epoch = sk->epoch;
	ck->has_alt = sk->has_alt;
	ck->alt_epoch = sk->alt_epoch;
	memcpy(ck->k_alt[sk->index], sk->k_alt, BFT_KEY_LEN);
}

int
bft_volume_key_load(const char *path, struct bft_volume_key *key, char *err,
    size_t errlen)
{
	struct key_ctx ctx = { .vk = key };
	int r;

	memset(key, 0, sizeof *key);
	if ((r = bft_kv_parse(path, 1, key_pair, &ctx, err, errlen)) != 0)
		goto out_wipe;
	if (!ctx.have_aead || !ctx.have_keys) {
		r = -EINVAL;
		snprintf(err, errlen, "%s: not a volume key file (needs aead "
		    "and key)", path);
		goto out_wipe;
	}
	return 0;
out_wipe:
	bft_wipe(key, sizeof *key);
	return r;
}

/*
 * O_EXCL: keygen must never silently replace a cluster's keys.  NULL
 * with errno set.
 */
static FILE *
create_private(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	FILE *fp;

	if (fd < 0)
		return NULL;
	fp = fdopen(fd, "w");
	if (fp == NULL)
		close(fd);
	return fp;
}

/* Makes the file durable and closes it; 0 or the first negative errno. */
static int
finish(FILE *fp)
{
	int rc = 0;

	if (fflush(fp) != 0 || fsync(fileno(fp)) != 0)
		rc = -errno;
	if (fclose(fp) != 0 && rc == 0)
		rc = -errno;
	return rc;
}

int
bft_server_key_write(const char *path, const struct bft_server_key *key)
{
	char id[2 * BFT_CLUSTER_ID_LEN + 1], k[2 * BFT_KEY_LEN + 1];
	FILE *fp = create_private(path);

	if (fp == NULL)
		return -errno;
	bft_format_hex(key->cluster_id, BFT_CLUSTER_ID_LEN, id);
	bft_format_hex(key->k, BFT_KEY_LEN, k);
	fprintf(fp, "# bftblk server key: give this file to server %u only.\n"
	    "cluster-id = %s\nindex = %u\nkey = %s\n", key->index, id,
	    key->index, k);
	bft_format_hex(key->chan.sk, 32, k);
	fprintf(fp, "chan-key = %s\n", k);
	if (key->epoch != 0 || key->has_alt)
		fprintf(fp, "epoch = %u\n", key->epoch);
	if (key->has_alt) {
		bft_format_hex(key->k_alt, BFT_KEY_LEN, k);
		fprintf(fp, "next-epoch = %u\nnext-key = %s\n",
		    key->alt_epoch, k);
	}
	bft_wipe(k, sizeof k);
	return finish(fp);
}

int
bft_client_key_write(const char *path, const struct bft_client_key *key)
{
	char id[2 * BFT_CLUSTER_ID_LEN + 1], k[2 * BFT_KEY_LEN + 1];
	FILE *fp = create_private(path);

	if (fp == NULL)
		return -errno;
	bft_format_hex(key->cluster_id, BFT_CLUSTER_ID_LEN, id);
	bft_format_hex(key->chan.sk, 32, k);
	if (key->role == BFT_ROLE_RO) {
		fprintf(fp, "# bftblk read-only client key: its channel key "
		    "only.\ncluster-id = %s\nname = %s\nrole = ro\n"
		    "chan-key = %s\n", id, key->name, k);
		return finish(fp);
	}
	fprintf(fp, "# bftblk client key: every server key plus the writer "
	    "key.\n# Whoever holds it can write the disk.\ncluster-id = %s\n"
	    "name = %s\nrole = rw\nchan-key = %s\nn = %u\n", id, key->name,
	    k, key->n);
	for (unsigned i = 0; i < key->n; i++) {
		bft_format_hex(key->k[i], BFT_KEY_LEN, k);
		fprintf(fp, "key.%u = %s\n", i, k);
	}
	bft_format_hex(key->kw, BFT_KEY_LEN, k);
	fprintf(fp, "writer-key = %s\n", k);
	if (key->epoch != 0 || key->has_alt)
		fprintf(fp, "epoch = %u\n", key->epoch);
	if (key->has_alt) {
		fprintf(fp, "next-epoch = %u\n", key->alt_epoch);
		for (unsigned i = 0; i < key->n; i++) {
			bft_format_hex(key->k_alt[i], BFT_KEY_LEN, k);
			fprintf(fp, "next-key.%u = %s\n", i, k);
		}
		bft_format_hex(key->kw_alt, BFT_KEY_LEN, k);
		fprintf(fp, "next-writer-key = %s\n", k);
	}
	bft_wipe(k, sizeof k);
	return finish(fp);
}

/*
 * Refusing to overwrite matters most here: a volume key replaced is a
 * disk whose every block no longer opens.
 */
int
bft_volume_key_write(const char *path, const struct bft_volume_key *key)
{
	char k[2 * BFT_KEY_LEN + 1];
	const char *aead = bft_aead_name(key->aead);
	FILE *fp;

	if (aead == NULL)
		return -EINVAL;
	if ((fp = create_private(path)) == NULL)
		return -errno;
	bft_format_hex(key->key, BFT_KEY_LEN, k);
	fprintf(fp, "# bftblk volume key: encrypts the disk's blocks "
	    "(encrypt=on).\n# Keep it on the plugin hosts only, and a copy "
	    "somewhere safe:\n# without it the data cannot be read.\n"
	    "aead = %s\nkey = %s\n", aead, k);
	bft_wipe(k, sizeof k);
	return finish(fp);
}
