/*
 * bftblk keys retire: the last step of a MAC key rotation
 * (docs/key-epochs.md, step 4).  Key files are written with the newest
 * epoch alone: DIR/client.key first, then every writer's, then every
 * server's.  Installed in that order: a writer with the new file checks
 * what it reads under the newest epoch only, and a server with its new
 * file (SIGHUP) refuses every new value under the old epoch at once and
 * forgets the old key once its own count of versions under it, taken
 * after, is zero.
 *
 * It is refused while a server is unreachable, does not accept the
 * newest epoch, or counts versions still under the old one
 * (bftblk keys reauth gives them the new MACs): retiring then would make
 * those versions unreadable.  Run again after a crash, it finds
 * DIR/client.key retired already and writes the files it had not.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "crypto.h"
#include "keys.h"
#include "keys_cmd.h"
#include "log.h"
#include "session.h"

/*
 * Whether server i may retire epoch old for new: it accepts new and
 * counted, in a pass of its census, no version under old.  Says why
 * not.
 */
static bool
server_ready(const struct keys_args *a, const struct bft_config *cfg,
    const struct bft_client_key *ck, unsigned i, uint32_t old,
    uint32_t new, struct bft_msg *req, struct bft_msg *rep)
{
	struct bft_session_fail f;
	struct bft_session s;
	const struct bft_status_info *in = &rep->info;
	const char *w = "";
	char why[200];
	bool ok = false;
	int st;

	printf("server %u: ", i);
	if (bft_session_open(&s, cfg, ck, i, a->timeout_s * 1000, true,
	    &f) != 0) {
		bft_session_fail_str(&f, why, sizeof why);
		printf("unreachable (%s)\n", why);
		return false;
	}
	memset(req, 0, sizeof *req);
	req->type = BFT_STATUS;
	if ((st = bft_session_call(&s, req, rep, &w)) != BFT_OK) {
		printf("STATUS failed: %s\n", st < 0 ? w : bft_status_str(st));
		goto out;
	}
	if (in->mac_epoch == new && in->mac_next_epoch == 0) {
		printf("holds epoch %u alone already\n", new);
		ok = true;
	} else if (in->mac_epoch != old || in->mac_next_epoch != new) {
		printf("holds epoch %" PRIu64 "%s, not %u and %u: install its "
		    "key file from bftblk keys rotate (SIGHUP)\n",
		    in->mac_epoch, in->mac_next_epoch ? " and the next" : "",
		    old, new);
	} else if (in->mac_census_passes == 0) {
		printf("has not counted its versions under epoch %u yet "
		    "(%" PRIu64 "/%" PRIu64 " blocks); try again shortly\n",
		    old, in->mac_census_done, in->mac_census_total);
	} else if (in->mac_old_versions > 0) {
		printf("%" PRIu64 " versions still under epoch %u: run "
		    "bftblk keys reauth --dir %s\n", in->mac_old_versions,
		    old, a->dir);
	} else if (in->mac_old_retained > 0) {
		printf("%" PRIu64 " versions kept for snapshots are under "
		    "epoch %u: run bftblk keys reauth --dir %s\n",
		    in->mac_old_retained, old, a->dir);
	} else {
		printf("no version under epoch %u\n", old);
		ok = true;
	}
out:
	bft_session_close(&s);
	return ok;
}

/* ck with its newest epoch alone. */
static void
newest_only(struct bft_client_key *ck)
{
	if (bft_client_key_next_pending(ck))
		bft_client_key_swap(ck);
	bft_wipe(ck->k_alt, sizeof ck->k_alt);
	bft_wipe(ck->kw_alt, sizeof ck->kw_alt);
	ck->has_alt = false;
	ck->alt_epoch = 0;
}

/* Server i's file of epochs E and E+1 with E+1's key alone. */
static bool
newest_only_server(struct bft_server_key *sk, const struct bft_client_key *ck,
    unsigned i)
{
	if (!bft_equal(sk->k, ck->k[i], BFT_KEY_LEN) && !(sk->has_alt &&
	    bft_equal(sk->k_alt, ck->k[i], BFT_KEY_LEN)))
		return false;
	memcpy(sk->k, ck->k[i], BFT_KEY_LEN);
	sk->epoch = ck->epoch;
	bft_wipe(sk->k_alt, sizeof sk->k_alt);
	sk->has_alt = false;
	sk->alt_epoch = 0;
	return true;
}

int
keys_retire(struct keys_args *a)
{
	static struct bft_config cfg;
	static struct bft_client_key ck;
	char err[1024], conf[ADMIN_PATH_MAX];
	struct bft_msg *req = calloc(1, sizeof *req);
	struct bft_msg *rep = calloc(1, sizeof *rep);
	uint32_t old, new;
	unsigned ready = 0, failed;
	int r, rc = 1;

	if (req == NULL || rep == NULL) {
		bft_log("out of memory");
		goto out_wipe;
	}
	if (admin_load_cluster(a->dir, a->keys, &cfg, &ck, err,
	    sizeof err) != 0) {
		bft_log("%s", err);
		goto out_wipe;
	}
	(void)admin_cluster_paths(a->dir, a->keys, conf, a->keypath);
	if (ck.role != BFT_ROLE_RW) {
		bft_log("%s is not a writer's key file: it holds no MAC keys",
		    a->keypath);
		goto out_wipe;
	}
	if (!ck.has_alt) {
		/* Retired here already: the other files, where missing. */
		if (a->epoch >= 0 && a->epoch >= ck.epoch) {
			bft_log("%s holds epoch %u alone: epoch %ld is not an "
			    "older one", a->keypath, ck.epoch, a->epoch);
			goto out_wipe;
		}
		printf("%s holds epoch %u alone; writing the files that still "
		    "hold an older one\n", a->keypath, ck.epoch);
		goto out_write;
	}
	old = ck.epoch < ck.alt_epoch ? ck.epoch : ck.alt_epoch;
	new = ck.epoch < ck.alt_epoch ? ck.alt_epoch : ck.epoch;
	if (a->epoch >= 0 && a->epoch != old) {
		bft_log("--epoch %ld: the epoch being retired is %u", a->epoch,
		    old);
		goto out_wipe;
	}
	for (unsigned i = 0; i < cfg.n; i++)
		ready += server_ready(a, &cfg, &ck, i, old, new, req, rep);
	if (ready < cfg.n) {
		printf("Epoch %u is not retired: %u of %u servers are ready.\n",
		    old, ready, cfg.n);
		goto out_wipe;
	}
	newest_only(&ck);
	if ((r = keys_replace_client(a->keypath, &ck)) != 0) {
		bft_log("%s: %s", a->keypath, strerror(-r));
		goto out_wipe;
	}
	printf("epoch %u retired in %s\n", old, a->keypath);
out_write:
	printf("writer %s: %s\n", ck.name, a->keypath);
	failed = keys_write_writers(a, &cfg, &ck) +
	    keys_write_servers(a, &cfg, &ck, ck.epoch, newest_only_server);
	printf("Install every writer's file on its host first (libbftblk "
	    "takes it within\n2 s), then every server's, with SIGHUP. A "
	    "server drops the old epoch once\nit counts no version under it "
	    "(bftblk status says which hold it still).\n");
	rc = failed ? 1 : 0;
out_wipe:
	free(req);
	free(rep);
	bft_wipe(&ck, sizeof ck);
	return rc;
}
