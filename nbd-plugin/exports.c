/*
 * Exports by volume name (exports.h).  A named volume's handle is made
 * by the first connection to it, from the base handle's options
 * (bftblk_open_volume), and closed by the last one to leave, so that
 * its lease, if it takes one, is released as soon as nobody uses it:
 * a VM stopped here can start on another host at once.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exports.h"

#define DEFAULT_NAME	"default"

static struct export *base;
static bool by_name;
static const char *clone_options;
static struct export *open_list;	/* exports with connections */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

void
exports_init(struct export *b, bool named, const char *options)
{
	base = b;
	by_name = named;
	clone_options = options;
}

/*
 * Reads of the table a connection may wait for.  A table that cannot
 * be read is not a volume that does not exist: servers may be busy or
 * cut off for a moment, and a connection refused then would look to
 * its client like a missing export (nbdkit answers every failed open
 * so), so the read is tried again, each try bounded by the handle's
 * timeouts.
 */
#define LOOKUP_TRIES	3

/*
 * Snapshot V@S as the entry of a volume: its id, size, and in
 * generation its boundary, which names it as a resize count names a
 * volume's shape.  0, or a negative errno.
 */
static int
snap_get(const char *name, struct bftblk_volume *v)
{
	char vol[BFTBLK_VOLUME_NAME_MAX + 1];
	const char *at = strchr(name, '@');
	struct bftblk_snap *s;
	size_t n;
	int r;

	if ((size_t)(at - name) >= sizeof vol)
		return -ENOENT;
	memcpy(vol, name, (size_t)(at - name));
	vol[at - name] = '\0';
	if ((r = bftblk_snap_list(base->h, vol, &s, &n)) != 0)
		return r;
	r = -ENOENT;
	for (size_t i = 0; i < n; i++)
		if (strcmp(s[i].name, at + 1) == 0) {
			memset(v, 0, sizeof *v);
			v->id = s[i].volume_id;
			v->size = s[i].size;
			v->generation = s[i].boundary;
			v->deleting = s[i].deleting;
			r = 0;
		}
	free(s);
	return r;
}

/* The table's entry for name: 0, 1 when there is none, -1 on error. */
static int
lookup(const char *name, struct bftblk_volume *v)
{
	int r = -EIO;

	for (unsigned i = 0; i < LOOKUP_TRIES; i++) {
		r = strchr(name, '@') != NULL ? snap_get(name, v) :
		    bftblk_volume_get(base->h, name, v);
		if (r == 0 || r == -ENOENT)
			return r == 0 ? 0 : 1;
		nbdkit_debug("the volume table, try %u of %u: %s", i + 1,
		    LOOKUP_TRIES, bftblk_errmsg(base->h));
		if (i + 1 < LOOKUP_TRIES)
			sleep(1);
	}
	nbdkit_error("the volume table cannot be read, so export '%s' "
	    "cannot open (the client is told there is no such export): %s",
	    name, bftblk_errmsg(base->h));
	return -1;
}

/*
 * Whether the table has a volume named default: 1, 0, or -1 when it has
 * never been read.  The last answer stands in while the table cannot be
 * read (fewer than n-t servers answer), so that a client of the default
 * export connects as it did before named volumes and sees its I/O fail
 * and then recover; the same quorum that reads the table serves I/O,
 * and the default volume is made with the cluster, not later.
 */
static int
has_default(void)
{
	static int known = -1;
	struct bftblk_volume v;
	int r = lookup(DEFAULT_NAME, &v);

	if (r >= 0)
		__atomic_store_n(&known, r == 0, __ATOMIC_RELAXED);
	else if (__atomic_load_n(&known, __ATOMIC_RELAXED) >= 0)
		nbdkit_debug("using the last answer: %s",
		    known ? "the volume named default" : "volume 0");
	return __atomic_load_n(&known, __ATOMIC_RELAXED);
}

/* Closes e and takes it off the list; mu held, no connection on it. */
static void
drop_export(struct export *e)
{
	struct export **pp;

	for (pp = &open_list; *pp != e; pp = &(*pp)->next)
		;
	*pp = e->next;
	bftblk_close(e->h);
	nbdkit_debug("export '%s': closed", e->name[0] ? e->name :
	    "(volume 0)");
	free(e);
}

struct export *
exports_open(const char *name)
{
	struct bftblk_volume v = { .id = 0 };
	struct export *e;
	int r;

	if (!by_name)
		return base;
	/* "": the volume named default, else the cluster's disk (""). */
	if (name[0] == '\0') {
		if ((r = has_default()) < 0)
			return NULL;
		if (r == 1)
			name = DEFAULT_NAME;
	}
	/* A named volume is looked up at every open: it may have changed. */
	if (name[0] != '\0' && (r = lookup(name, &v)) != 0) {
		if (r == 1)
			nbdkit_error("no volume is named '%s'", name);
		return NULL;
	}
	pthread_mutex_lock(&mu);
	for (e = open_list; e != NULL; e = e->next)
		if (strcmp(e->name, name) == 0)
			break;
	/*
	 * A handle kept from earlier connections serves only the volume as
	 * it still is: deleted and created again, or resized, it is opened
	 * afresh.  One in use goes on serving its connections as it was.
	 */
	if (e != NULL && e->refs == 0 && (v.id != e->vol.id ||
	    v.generation != e->vol.generation || v.deleting)) {
		drop_export(e);
		e = NULL;
	}
	if (e == NULL) {
		if ((e = calloc(1, sizeof *e)) == NULL) {
			nbdkit_error("out of memory");
			goto out;
		}
		snprintf(e->name, sizeof e->name, "%s", name);
		e->vol = v;
		if (bftblk_open_volume(base->h, name, clone_options,
		    &e->h) != 0 ||
		    bftblk_get_info(e->h, &e->info, sizeof e->info) != 0) {
			nbdkit_error("export '%s': %s", name[0] ? name :
			    "(volume 0)",
			    bftblk_errmsg(e->h != NULL ? e->h : base->h));
			bftblk_close(e->h);
			free(e);
			e = NULL;
			goto out;
		}
		nbdkit_debug("export '%s': opened, %" PRIu64 " bytes", name[0] ?
		    name : "(volume 0)", e->info.size);
		e->next = open_list;
		open_list = e;
	}
	e->refs++;
out:
	pthread_mutex_unlock(&mu);
	return e;
}

/*
 * Whether e's handle holds its volume's lease: a read-write handle
 * without shared=on.  Only such a handle is closed with its last
 * connection, to free the volume for another host; the others stay open
 * for the next connection, sparing a new engine and its connections
 * (and the servers a reset handshake) for every short client such as
 * nbdinfo.
 */
static bool
holds_lease(const struct export *e)
{
	return !e->info.readonly && strcmp(clone_options, "shared=on") != 0;
}

void
exports_close(struct export *e)
{
	if (e == base)
		return;
	pthread_mutex_lock(&mu);
	if (--e->refs == 0 && holds_lease(e))
		drop_export(e);
	pthread_mutex_unlock(&mu);
}

/* Every snapshot as V@S, read-only (docs/snapshots.md). */
static int
list_snaps(struct nbdkit_exports *list)
{
	char desc[160], name[2 * BFTBLK_VOLUME_NAME_MAX + 2];
	struct bftblk_snap *s;
	size_t n;
	int r = 0;

	if (bftblk_snap_list(base->h, NULL, &s, &n) != 0) {
		nbdkit_error("the volume table: %s", bftblk_errmsg(base->h));
		return -1;
	}
	for (size_t i = 0; i < n && r == 0; i++) {
		if (s[i].deleting)
			continue;
		snprintf(name, sizeof name, "%s@%s", s[i].volume, s[i].name);
		snprintf(desc, sizeof desc, "snapshot of %s, %" PRIu64
		    " bytes, read-only", s[i].volume[0] ? s[i].volume :
		    "volume 0", s[i].size);
		r = nbdkit_add_export(list, name, desc);
	}
	free(s);
	return r;
}

int
exports_list(struct nbdkit_exports *list)
{
	struct bftblk_volume *v;
	bool has_default = false;
	char desc[160];
	size_t n;

	if (!by_name) {
		snprintf(desc, sizeof desc, "%" PRIu64 " bytes", base->info.size);
		return nbdkit_add_export(list, "", desc);
	}
	if (bftblk_volume_list(base->h, &v, &n) != 0) {
		nbdkit_error("the volume table: %s", bftblk_errmsg(base->h));
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (v[i].deleting)
			continue;
		has_default |= strcmp(v[i].name, DEFAULT_NAME) == 0;
		snprintf(desc, sizeof desc, "volume %" PRIu32 ", %" PRIu64
		    " bytes%s", v[i].id, v[i].size, v[i].encrypted ?
		    ", encrypted" : "");
		if (nbdkit_add_export(list, v[i].name, desc) != 0) {
			free(v);
			return -1;
		}
	}
	free(v);
	if (list_snaps(list) != 0)
		return -1;
	if (!has_default) {
		snprintf(desc, sizeof desc, "the cluster's disk (volume 0), %"
		    PRIu64 " bytes", base->info.size);
		return nbdkit_add_export(list, "", desc);
	}
	return 0;
}

void
exports_fini(void)
{
	pthread_mutex_lock(&mu);
	while (open_list != NULL) {
		struct export *e = open_list;

		open_list = e->next;
		bftblk_close(e->h);
		free(e);
	}
	pthread_mutex_unlock(&mu);
}
