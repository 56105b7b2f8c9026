/*
 * SIGHUP: reread bftblk.conf for its client lines and the other
 * servers' addresses and keys (a replaced server: `bftblk server
 * replace`).  The rest of the file (cluster id, geometry, this server's
 * own line, channel mode) is fixed for the life of the process, since
 * clients already hold state built on it; a changed value is reported
 * and ignored.
 */
#include <stdbool.h>
#include <string.h>

#include "log.h"
#include "reload.h"

int
bft_reload_clients(const char *path, struct bft_config *cfg, unsigned self)
{
	static struct bft_config next;
	char err[1024];

	if (bft_config_load(path, &next, err, sizeof err) < 0) {
		bft_error("reload: %s; keeping the old client list", err);
		return -1;
	}
	if (memcmp(next.cluster_id, cfg->cluster_id, BFT_CLUSTER_ID_LEN) ||
	    next.t != cfg->t || next.size != cfg->size ||
	    next.channel != cfg->channel ||
	    memcmp(&next.servers[self], &cfg->servers[self],
	    sizeof cfg->servers[self]) ||
	    memcmp(next.server_pk[self], cfg->server_pk[self], 32)) {
		bft_warn("reload: %s changed more than its client and peer "
		    "lines; the rest takes effect at a restart", path);
	}
	for (unsigned j = 0; j < cfg->n; j++) {
		bool newkey = memcmp(next.server_pk[j], cfg->server_pk[j], 32);

		if (j == self ||
		    (memcmp(&next.servers[j], &cfg->servers[j],
		    sizeof cfg->servers[j]) == 0 &&
		    memcmp(next.server_pk[j], cfg->server_pk[j], 32) == 0))
			continue;
		/* A replaced peer: its old key is let in no more. */
		cfg->servers[j] = next.servers[j];
		memcpy(cfg->server_pk[j], next.server_pk[j], 32);
		bft_log("reload: server %u is now %s:%u with %s key", j,
		    cfg->servers[j].host, cfg->servers[j].port,
		    newkey ? "a new" : "the same");
	}
	memcpy(cfg->clients, next.clients, sizeof cfg->clients);
	cfg->nclients = next.nclients;
	bft_log("reload: %u clients allowed in", cfg->nclients);
	return 0;
}
