/*
 * DROP and SNAP of a volume (drop_int.h): every server at once, each
 * over a session of its own on a thread, so that servers that hang cost
 * one timeout in all rather than one each.  Each request carries the
 * whole MAC vector, as a STORE does; a server checks only its own entry.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "drop_int.h"
#include "error_int.h"
#include "session.h"
#include "wire.h"

struct dropper {
	pthread_t thread;
	bool started;
	const struct bft_config *cfg;
	const struct bft_client_key *key;
	uint8_t type;			/* BFT_DROP or BFT_SNAP */
	uint32_t vol;
	uint64_t gen;			/* SNAP's */
	uint8_t op;
	unsigned idx, timeout_ms;
	bool acked;
	char why[160];
};

static void *
drop_one(void *arg)
{
	struct dropper *d = arg;
	struct bft_session_fail f;
	struct bft_session s;
	struct bft_msg *req, *rep;
	const char *why = "";
	int st;

	req = calloc(1, sizeof *req);
	rep = calloc(1, sizeof *rep);
	if (req == NULL || rep == NULL) {
		snprintf(d->why, sizeof d->why, "out of memory");
		goto out_free;
	}
	if (bft_session_open(&s, d->cfg, d->key, d->idx, d->timeout_ms, true,
	    &f) != 0) {
		bft_session_fail_str(&f, d->why, sizeof d->why);
		goto out_free;
	}
	req->type = d->type;
	req->block = bft_addr(d->vol, 0);
	req->gen = d->gen;
	req->snap_op = d->op;
	for (unsigned i = 0; i < d->cfg->n; i++)
		if (d->type == BFT_SNAP)
			bft_snap_mac(d->vol, d->gen, d->op, d->key->k[i],
			    req->vec[i]);
		else
			bft_drop_mac(d->vol, d->key->k[i], req->vec[i]);
	st = bft_session_call(&s, req, rep, &why);
	if (st == BFT_OK)
		d->acked = true;
	else if (st < 0)
		snprintf(d->why, sizeof d->why, "%s: %s",
		    bft_msg_type_str(d->type), why);
	else
		snprintf(d->why, sizeof d->why, "%s refused: %s",
		    bft_msg_type_str(d->type), bft_status_str(st));
	bft_session_close(&s);
out_free:
	free(req);
	free(rep);
	return NULL;
}

/* Refuses what no server would take; 0 or a negative errno with why. */
static int
drop_check(const struct bft_config *cfg, const struct bft_client_key *key,
    uint8_t type, uint32_t vol, char *why, size_t whylen)
{
	if ((type == BFT_DROP && vol == 0) || vol == BFT_VOL_TABLE ||
	    vol == BFT_VOL_LEASES || vol > BFT_ADDR_MAX_VOL) {
		snprintf(why, whylen, "volume %u cannot be %s: %s", vol,
		    type == BFT_DROP ? "dropped" : "snapshotted",
		    vol == 0 ? "it is the cluster's disk" : "it is reserved");
		return -EINVAL;
	}
	if (key->role != BFT_ROLE_RW) {
		snprintf(why, whylen, "a %s needs a writer's key, which "
		    "holds the servers' MAC keys", bft_msg_type_str(type));
		return -EPERM;
	}
	if (key->n != cfg->n || memcmp(key->cluster_id, cfg->cluster_id,
	    BFT_CLUSTER_ID_LEN) != 0) {
		snprintf(why, whylen, "the key is another cluster's");
		return -EINVAL;
	}
	return 0;
}

static int
broadcast(const struct bft_config *cfg, const struct bft_client_key *key,
    const struct dropper *req, bool acked[BFT_MAX_N], char *why,
    size_t whylen)
{
	struct dropper d[BFT_MAX_N];
	size_t off = 0;
	int n = 0, err;

	memset(acked, 0, BFT_MAX_N * sizeof *acked);
	if (whylen > 0)
		why[0] = '\0';
	if ((err = drop_check(cfg, key, req->type, req->vol, why, whylen)) < 0)
		return bftblk__fail(-err, "%s", why);
	memset(d, 0, sizeof d);
	for (unsigned i = 0; i < cfg->n; i++) {
		d[i] = *req;
		d[i].cfg = cfg;
		d[i].key = key;
		d[i].idx = i;
		d[i].started = pthread_create(&d[i].thread, NULL, drop_one,
		    &d[i]) == 0;
		if (!d[i].started)
			drop_one(&d[i]);
	}
	for (unsigned i = 0; i < cfg->n; i++) {
		int r;

		if (d[i].started)
			pthread_join(d[i].thread, NULL);
		acked[i] = d[i].acked;
		if (d[i].acked) {
			n++;
			continue;
		}
		/* Every server that did not ack, as far as why holds them. */
		if (off + 1 >= whylen)
			continue;
		r = snprintf(why + off, whylen - off, "%sserver %u: %s",
		    off ? "; " : "", i, d[i].why);
		if (r > 0)
			off = off + (size_t)r < whylen ? off + (size_t)r :
			    whylen - 1;
	}
	return n;
}

int
bftblk__drop_volume(const struct bft_config *cfg,
    const struct bft_client_key *key, uint32_t vol, unsigned timeout_ms,
    bool acked[BFT_MAX_N], char *why, size_t whylen)
{
	struct dropper req = { .type = BFT_DROP, .vol = vol,
	    .timeout_ms = timeout_ms };

	return broadcast(cfg, key, &req, acked, why, whylen);
}

int
bftblk__snap_volume(const struct bft_config *cfg,
    const struct bft_client_key *key, uint32_t vol, uint64_t gen,
    bool add, unsigned timeout_ms, bool acked[BFT_MAX_N], char *why,
    size_t whylen)
{
	struct dropper req = { .type = BFT_SNAP, .vol = vol, .gen = gen,
	    .op = add ? BFT_SNAP_ADD : BFT_SNAP_REMOVE,
	    .timeout_ms = timeout_ms };

	return broadcast(cfg, key, &req, acked, why, whylen);
}
