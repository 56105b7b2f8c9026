/*
 * Opening a named volume: volume=NAME on a handle of its own, and
 * bftblk_open_volume, which gives a new handle another handle's options
 * (how the plugin serves one export per volume).  Either way the table
 * says the volume's id, size and encryption, and the handle then works
 * as one made with volume-id=, size= and encrypt= would.
 */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "error_int.h"
#include "handle_int.h"
#include "voltab_int.h"

/* Options a new handle on another volume must not inherit. */
static bool
own_option(const char *kv)
{
	static const char *const own[] = { "volume=", "volume-id=", "size=",
	    "encrypt=", "volume-key=", "metrics=", "stats-file=" };

	for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
		if (strncmp(kv, own[i], strlen(own[i])) == 0)
			return true;
	return false;
}

/* Where name's key is: volume-keys=DIR, else volumes/ beside config=. */
static int
key_path(const struct bftblk *h, const char *name, char *out, size_t len)
{
	char *copy;
	int n;

	if (h->volume_key_path != NULL) {
		n = snprintf(out, len, "%s", h->volume_key_path);
	} else if (h->volume_keys_dir != NULL) {
		n = snprintf(out, len, "%s/%s.key", h->volume_keys_dir, name);
	} else {
		if ((copy = strdup(h->config_path)) == NULL)
			return -1;
		n = snprintf(out, len, "%s/volumes/%s.key", dirname(copy),
		    name);
		free(copy);
	}
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int
bftblk__volume_apply(struct bftblk *h, const struct vol_ref *ref)
{
	const struct bftblk_volume *v = &ref->v;
	struct bft_volume_key vk;
	uint8_t id[BFT_VOLUME_KEY_ID_LEN];
	char path[4096], hex[2 * BFT_VOLUME_KEY_ID_LEN + 1], err[512];
	char *copy;
	int r;

	if (v->deleting)
		return bftblk__handle_fail(h, ENOENT, "volume '%s' is being "
		    "deleted", v->name);
	if (h->export_size > v->size)
		return bftblk__handle_fail(h, EINVAL, "size=%" PRIu64 " is "
		    "more than volume '%s' holds (%" PRIu64 " bytes)",
		    h->export_size, v->name, v->size);
	h->volume_id = v->id;
	if (h->export_size == 0)
		h->export_size = v->size;
	h->resolved = true;
	h->view = ref->snap;
	h->view_gen = ref->gen;
	h->nparents = ref->nparents;
	memcpy(h->parents, ref->parents, sizeof h->parents);
	if (!v->encrypted) {
		if (h->encrypt)
			return bftblk__handle_fail(h, EINVAL, "volume '%s' is "
			    "not encrypted: drop encrypt=on", v->name);
		return 0;
	}
	if (key_path(h, v->name, path, sizeof path) != 0)
		return bftblk__handle_fail(h, ENAMETOOLONG, "the path of "
		    "volume '%s''s key is too long", v->name);
	if ((r = bft_volume_key_load(path, &vk, err, sizeof err)) != 0)
		return bftblk__handle_fail(h, -r, "volume '%s' is "
		    "encrypted, and its key cannot be read: %s", v->name, err);
	bft_volume_key_id(&vk, id);
	bft_wipe(&vk, sizeof vk);
	for (unsigned i = 0; i < sizeof id; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	if (strcmp(hex, v->key_id) != 0)
		return bftblk__handle_fail(h, EKEYREJECTED, "%s is not volume "
		    "'%s''s key: its id is %s, the volume's is %s", path,
		    v->name, hex, v->key_id);
	if ((copy = strdup(path)) == NULL)
		return bftblk__handle_fail(h, ENOMEM, "out of memory");
	free(h->volume_key_path);
	h->volume_key_path = copy;
	h->encrypt = true;
	return 0;
}

/*
 * name ("V" or "V@S") in the table vt: 0 or a negative errno (on h).
 * Volume 0 has no entry: "@S" is its snapshot, sized by the cluster.
 */
static int
find_in(struct bftblk *h, struct voltab *vt, const char *name,
    struct vol_ref *ref)
{
	char vol[BFTBLK_VOLUME_NAME_MAX + 1];
	const char *at = strchr(name, '@');
	struct vt_entry *e = NULL, *s;
	uint32_t id = 0;
	char why[256];

	memset(ref, 0, sizeof *ref);
	if (at == NULL) {
		if ((e = bftblk__vt_find(vt, name, NULL)) == NULL)
			return bftblk__handle_fail(h, ENOENT, "no volume is "
			    "named '%s' (bftblk volume list names them)", name);
		bftblk__vt_public(e, &ref->v);
		goto parents;
	}
	if ((size_t)(at - name) >= sizeof vol)
		return bftblk__handle_fail(h, EINVAL, "'%s' is not V@SNAPSHOT",
		    name);
	memcpy(vol, name, (size_t)(at - name));
	vol[at - name] = '\0';
	if (vol[0] != '\0') {
		if ((e = bftblk__vt_find(vt, vol, NULL)) == NULL)
			return bftblk__handle_fail(h, ENOENT, "no volume is "
			    "named '%s' (bftblk volume list names them)", vol);
		id = e->id;
	}
	if ((s = bftblk__vt_find_snap(vt, id, at + 1, NULL)) == NULL ||
	    s->state != VT_SNAP)
		return bftblk__handle_fail(h, ENOENT, "volume '%s' has no "
		    "snapshot named '%s' (bftblk snap list names them)", vol,
		    at + 1);
	bftblk__vt_public(s, &ref->v);
	snprintf(ref->v.name, sizeof ref->v.name, "%s", vol);
	ref->snap = true;
	ref->gen = s->generation;
	e = s;
parents:
	if (bftblk__vt_parents(vt, e, ref->parents, &ref->nparents, why,
	    sizeof why) != 0)
		return bftblk__handle_fail(h, EUCLEAN, "the volume table is "
		    "damaged: %s", why);
	return 0;
}

/* Finds name in the table eng reads; 0 or a negative errno (on h). */
static int
find(struct bftblk *h, struct bft_engine *eng, const char *name,
    struct vol_ref *ref)
{
	struct voltab *vt = malloc(sizeof *vt);
	int r;

	if (vt == NULL)
		return bftblk__handle_fail(h, ENOMEM, "out of memory");
	if (bftblk__vt_read(eng, vt) != 0) {
		r = bftblk__take_errno();
		r = bftblk__handle_fail(h, r, "%s", bftblk__errmsg());
	} else {
		r = find_in(h, vt, name, ref);
	}
	free(vt);
	return r;
}

struct bft_engine *
bftblk__plain_engine(struct bftblk *h, struct bft_ec **ecp)
{
	struct bft_engine_params p = {
		.cfg = &h->cfg, .key = &h->key,
		.key_path = h->keys_path != NULL ? h->keys_path :
		    h->server_key_path,
		.timeout_ms = h->timeout_s * 1000,
		.io_timeout_ms = (h->io_timeout_s > h->timeout_s ?
		    h->io_timeout_s : h->timeout_s) * 1000,
		.skip = h->skip, .log = h->log, .log_opaque = h->log_opaque,
	};
	struct bft_engine *eng;
	char err[512];
	int r;

	if ((r = bft_ec_new_len(h->cfg.t, h->ec_backend, BFT_BLOCK_SIZE, &p.ec,
	    err, sizeof err)) != 0) {
		bftblk__handle_fail(h, -r, "%s", err);
		return NULL;
	}
	while (p.writer_id == 0)
		bft_random(&p.writer_id, sizeof p.writer_id);
	if ((eng = bftblk__engine_start(&p)) == NULL) {
		bft_ec_free(p.ec);
		bftblk__handle_fail(h, EIO, "cannot start the event loop (or "
		    "resolve a server's address)");
		return NULL;
	}
	*ecp = p.ec;
	return eng;
}

int
bftblk__volume_resolve(struct bftblk *h)
{
	struct vol_ref v;
	struct bft_engine *eng;
	struct bft_ec *ec;
	int r;

	/* The table is plain: read it with an engine that does not seal. */
	if ((eng = bftblk__plain_engine(h, &ec)) == NULL)
		return -bftblk__take_errno();
	r = find(h, eng, h->volume_name, &v);
	bftblk__engine_stop(eng);
	bft_ec_free(ec);
	if (r != 0)
		return r;
	return bftblk__volume_apply(h, &v);
}

/* "k=v" onto nh, unless it is an option of h's own volume. */
static int
set_kv(struct bftblk *nh, const char *kv, bool inherited)
{
	char *copy, *eq;
	int r;

	if (inherited && own_option(kv))
		return 0;
	if ((copy = strdup(kv)) == NULL)
		return -ENOMEM;
	if ((eq = strchr(copy, '=')) == NULL) {
		free(copy);
		return bftblk__handle_fail(nh, EINVAL, "option '%s' is not "
		    "key=value", kv);
	}
	*eq = '\0';
	r = bftblk_set_option(nh, copy, eq + 1);
	free(copy);
	return r;
}

/* h's options, then options, onto nh. */
static int
set_all(struct bftblk *h, struct bftblk *nh, const char *options)
{
	char *copy, *save, *tok;
	int r = 0;

	for (size_t i = 0; i < h->nopts && r == 0; i++)
		r = set_kv(nh, h->opts[i], true);
	if (r != 0 || options == NULL)
		return r;
	if ((copy = strdup(options)) == NULL)
		return -ENOMEM;
	for (tok = strtok_r(copy, " \t\n", &save); tok != NULL && r == 0;
	    tok = strtok_r(NULL, " \t\n", &save))
		r = set_kv(nh, tok, false);
	free(copy);
	return r;
}

int
bftblk_open_volume(struct bftblk *h, const char *name, const char *options,
    struct bftblk **out)
{
	struct vol_ref v;
	struct bftblk *nh;
	char msg[512];
	int r = 0;

	*out = NULL;
	if (h->eng == NULL)
		return bftblk__handle_fail(h, ENOTCONN, "the handle is not "
		    "connected");
	if (h->encrypt && name[0] != '\0')
		return bftblk__handle_fail(h, EINVAL, "the volume table is "
		    "read through a handle without encrypt=on");
	if (name[0] != '\0' && (r = find(h, h->eng, name, &v)) != 0)
		return r;
	if ((nh = bftblk_create()) == NULL)
		return bftblk__handle_fail(h, ENOMEM, "out of memory");
	bftblk_set_log(nh, h->log, h->log_opaque);
	/* Its counters add to h's: the front end's metrics cover both. */
	nh->stats_agg = h->stats_agg != NULL ? h->stats_agg :
	    (struct bft_engine_stats *)bftblk__engine_stats(h->eng);
	r = set_all(h, nh, options);
	/* "": volume 0, sized by bftblk.conf: the table has no entry. */
	if (r == 0 && name[0] != '\0' &&
	    (r = bftblk_set_option(nh, "volume", name)) == 0)
		r = bftblk__volume_apply(nh, &v);
	if (r == 0)
		r = bftblk_connect(nh);
	if (r != 0) {
		snprintf(msg, sizeof msg, "%s", r == -ENOMEM ? "out of memory" :
		    bftblk_errmsg(nh));
		bftblk_close(nh);
		return bftblk__handle_fail(h, -r, "%s", msg);
	}
	*out = nh;
	return 0;
}
