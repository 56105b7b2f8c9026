/*
 * The plugin's exports (exports.c): one per named volume, by export
 * name, each on a library handle of its own that the connections to it
 * share; the default export ("") is the volume named "default" when the
 * table has one, else the disk bftblk.conf sizes (volume 0), so that
 * single-disk clusters serve as they always did.
 */
#ifndef BFTBLK_PLUGIN_EXPORTS_H
#define BFTBLK_PLUGIN_EXPORTS_H

#include <stdbool.h>

#include <nbdkit-plugin.h>

#include "bftblk.h"

/* What a connection uses: a handle and what it exports. */
struct export {
	struct bftblk *h;
	struct bftblk_info info;
	/* "": volume 0; "V@S": a snapshot, read-only */
	char name[2 * BFTBLK_VOLUME_NAME_MAX + 2];
	unsigned refs;			/* connections; base: unused */
	struct bftblk_volume vol;	/* the table's entry when opened */
	struct export *next;
};

/*
 * by_name false: base serves its one volume on every export name, as
 * before named volumes.  by_name true: base only reads the volume
 * table, and every export, volume 0's included, gets a handle of its
 * own with base's options and then options (what base must not have,
 * such as its lease).
 */
void exports_init(struct export *base, bool by_name, const char *options);
/* The export of name for a new connection, or NULL (nbdkit_error'd). */
struct export *exports_open(const char *name);
/* A connection to e ended: the last one closes its handle. */
void exports_close(struct export *e);
/* nbdkit's list_exports: every volume the table holds. */
int exports_list(struct nbdkit_exports *list);
/* Every export's handle closed (unload). */
void exports_fini(void);

#endif
