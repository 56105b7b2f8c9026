/*
 * SIGHUP: reread bftblk.conf for its client lines and the other
 * servers' addresses and keys (a replaced server: `bftblk server
 * replace`; a rotated one: `bftblk server rotate`, whose next key is let
 * in beside the old one from this reload on).  This server's own keys
 * in the file are taken too, since it refuses connections under them:
 * they change when it is rotated, while the key it runs under is the
 * one it started with.  The rest of the file (cluster id, geometry,
 * this server's own address, channel mode) is fixed for the life of the
 * process, since clients already hold state built on it; a changed value
 * is reported and ignored.
 */
#include <stdbool.h>
#include <string.h>

#include "channel.h"
#include "log.h"
#include "reload.h"

/* Server j's next key as the file now says, logged when it changes. */
static void
rotate_keys(struct bft_config *cfg, const struct bft_config *next,
    unsigned j)
{
	const uint8_t *was = bft_config_pk_next(cfg, j);
	const uint8_t *now = bft_config_pk_next(next, j);
	char fp[17];

	if (was == NULL && now == NULL)
		return;
	if (was != NULL && now != NULL && memcmp(was, now, 32) == 0)
		return;
	if (now != NULL) {
		memcpy(cfg->server_pk_next[j], now, 32);
		cfg->has_pk_next |= 1u << j;
		bft_chan_fingerprint(now, fp);
		bft_log("reload: server %u is being rotated to key %s...", j,
		    fp);
	} else {
		cfg->has_pk_next &= ~(1u << j);
		bft_log("reload: server %u has no next key any more", j);
	}
}

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
	    sizeof cfg->servers[self])) {
		bft_warn("reload: %s changed more than its client and peer "
		    "lines; the rest takes effect at a restart", path);
	}
	for (unsigned j = 0; j < cfg->n; j++) {
		bool newkey = memcmp(next.server_pk[j], cfg->server_pk[j], 32);

		rotate_keys(cfg, &next, j);
		if (j == self) {
			/* Its own rotation finished: the old key goes. */
			memcpy(cfg->server_pk[j], next.server_pk[j], 32);
			continue;
		}
		if (memcmp(&next.servers[j], &cfg->servers[j],
		    sizeof cfg->servers[j]) == 0 && !newkey)
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
