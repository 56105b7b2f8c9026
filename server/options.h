/*
 * bftblk-server's command line: the options, their checks and the usage
 * text.  main.c acts on what they say.
 */
#ifndef BFTBLK_SERVER_OPTIONS_H
#define BFTBLK_SERVER_OPTIONS_H

#include <stdbool.h>

#include "net.h"
#include "rebuild/rebuild.h"
#include "scrub.h"
#include "store/store.h"

struct bft_server_opts {
	const char *config, *key, *data, *listen, *unix_path, *pidfile;
	const char *metrics;		/* --metrics ADDR:PORT */
	unsigned max_pending;
	struct bft_net_limits lim;
	int verbose;
	bool create_data;		/* --create-data-dir */
	unsigned recover_every_s;	/* --recover-every; 0: never */
	struct bft_rebuild_opts rebuild;
	struct bft_scrub_opts scrub;
	struct bft_store_opts store;
};

/*
 * Fills *o from argv.  0, or -1 after saying why (the usage text for
 * a missing or unknown option); --help prints the usage and exits.
 */
int bft_server_parse_args(int argc, char **argv, struct bft_server_opts *o);

#endif
