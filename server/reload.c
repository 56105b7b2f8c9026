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
#include "crypto.h"
#include "keys.h"
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

/*
 * The file of both epochs the server holds: nothing to do, unless the
 * older one is being retired, where it is the operator's undo: both
 * are accepted again for new values, as before retiring began.
 */
static int
both_again(const char *path, struct bft_server_key *key,
    const struct bft_server_key *next)
{
	if (!key->retiring)
		return 0;
	key->retiring = false;
	bft_log("reload: %s holds MAC key epochs %u and %u again: epoch %u "
	    "is no longer being retired, and both are accepted", path,
	    next->epoch, next->alt_epoch, key->epoch);
	return 1;
}

/*
 * A file that holds the server's next epoch as its current one and no
 * other: the older epoch is to be retired.  From now on every new value
 * is checked under the newest alone (bft_server_mac_keys); the census
 * (keys_census.c) drops the older key once a pass begun after this
 * finds no version stored here under it.
 */
static bool
retires(const struct bft_server_key *key, const struct bft_server_key *next)
{
	return key->has_alt && key->alt_epoch > key->epoch &&
	    next->epoch == key->alt_epoch && !next->has_alt &&
	    bft_equal(next->k, key->k_alt, BFT_KEY_LEN);
}

/*
 * Three changes are a reload's: a next epoch added (a rotation
 * begins), the older epoch dropped from the file (retiring it begins),
 * and, while retiring, the file of both epochs again (retiring is taken
 * back); and the same file again.  Anything else is refused.  Dropping
 * the next epoch: writers may sign under it already, and their writes
 * would be refused here.  Changing a key: versions stored under it
 * would stop passing the checks.  The older key itself is never
 * dropped here: versions stored under it would become unreadable, so
 * only the census drops it, once it counts none.
 */
int
bft_reload_key(const char *path, struct bft_server_key *key)
{
	static struct bft_server_key next;
	char err[1024];
	int rc = -1;

	if (bft_server_key_load(path, &next, err, sizeof err) < 0) {
		bft_error("reload: %s; keeping the MAC keys as they were", err);
		goto out_wipe;
	}
	if (!bft_equal(next.cluster_id, key->cluster_id,
	    BFT_CLUSTER_ID_LEN) || next.index != key->index) {
		bft_error("reload: %s is now another server's key; keeping the "
		    "keys as they were", path);
		goto out_wipe;
	}
	if (retires(key, &next)) {
		rc = 0;
		if (!key->retiring) {
			key->retiring = true;
			bft_log("reload: retiring MAC key epoch %u: new values "
			    "are accepted under epoch %u alone from now on; "
			    "the old key goes once no version stored here "
			    "is under it", key->epoch, key->alt_epoch);
			rc = 1;
		}
		goto out_wipe;
	}
	if (next.epoch != key->epoch) {
		bft_error("reload: %s holds MAC key epoch %u, this server %u%s; "
		    "keeping the keys as they were (a reload takes a next "
		    "epoch, or retires the older of two)", path, next.epoch,
		    key->epoch, key->has_alt ? " and the next" : "");
		goto out_wipe;
	}
	if (!bft_equal(next.k, key->k, BFT_KEY_LEN)) {
		bft_error("reload: %s has another key for MAC epoch %u; "
		    "keeping the keys as they were", path, key->epoch);
		goto out_wipe;
	}
	if (key->has_alt && (!next.has_alt ||
	    !bft_equal(next.k_alt, key->k_alt, BFT_KEY_LEN))) {
		bft_error("reload: %s %s MAC key epoch %u, which writers may "
		    "sign under already; keeping it", path, next.has_alt ?
		    "changes the key of" : "drops", key->alt_epoch);
		goto out_wipe;
	}
	rc = 0;
	if (key->has_alt) {
		rc = both_again(path, key, &next);
	} else if (next.has_alt) {
		memcpy(key->k_alt, next.k_alt, BFT_KEY_LEN);
		key->alt_epoch = next.alt_epoch;
		key->has_alt = true;
		bft_log("reload: MAC key epoch %u accepted beside %u from now "
		    "on", key->alt_epoch, key->epoch);
		rc = 1;
	}
out_wipe:
	bft_wipe(&next, sizeof next);
	return rc;
}
