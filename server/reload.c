/*
 * SIGHUP: reread bftblk.conf for its client lines.  Everything else in
 * the file (cluster id, geometry, addresses, server keys, channel mode)
 * is fixed for the life of the process, since clients already hold
 * state built on it; a changed value is reported and ignored.
 */
#include <string.h>

#include "log.h"
#include "reload.h"

int
bft_reload_clients(const char *path, struct bft_config *cfg)
{
	static struct bft_config next;
	char err[1024];

	if (bft_config_load(path, &next, err, sizeof err) < 0) {
		bft_log("reload: %s; keeping the old client list", err);
		return -1;
	}
	if (memcmp(next.cluster_id, cfg->cluster_id, BFT_CLUSTER_ID_LEN) ||
	    next.t != cfg->t || next.size != cfg->size ||
	    next.channel != cfg->channel ||
	    memcmp(next.servers, cfg->servers, sizeof cfg->servers) ||
	    memcmp(next.server_pk, cfg->server_pk, sizeof cfg->server_pk))
		bft_log("reload: %s changed more than its client lines; only "
		    "those take effect without a restart", path);
	memcpy(cfg->clients, next.clients, sizeof cfg->clients);
	cfg->nclients = next.nclients;
	bft_log("reload: %u clients allowed in", cfg->nclients);
	return 0;
}
