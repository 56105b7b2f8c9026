/*
 * The cluster configuration file, bftblk.conf(5): "key = value" lines,
 * '#' starts a comment.  Keys:
 *   cluster-id = 32 hex digits     (required)
 *   t          = 1..BFT_MAX_T      (required; n = 3t+1)
 *   size       = disk size in bytes, with optional K/M/G/T suffix, a
 *                multiple of the 64 KiB block size (required)
 *   block-size = 65536             (optional; the only size supported)
 *   server.I   = HOST:PORT         (required for I = 0..n-1)
 *   server.I.pk = 64 hex digits    (required: server I's channel key)
 *   server.I.pk.next = 64 hex digits
 *                                  (optional: the key server I is being
 *                                   rotated to, accepted beside .pk;
 *                                   `bftblk server rotate` writes it once
 *                                   the cluster is finalized, since
 *                                   release 0.2.0 refuses the line)
 *   channel    = aead | plain      (optional, default aead; plain is
 *                                   for measuring what encryption costs)
 *   client.NAME = rw|ro PK         (one per client allowed in: its role
 *                                   and 64-hex-digit channel public key,
 *                                   which no server may have)
 */
#ifndef BFTBLK_CONFIG_H
#define BFTBLK_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define BFT_HOST_LEN 256
#define BFT_MAX_CLIENTS 256
#define BFT_NAME_LEN 32

/*
 * What a client may do; checked by every server on every request.  Every
 * role may also send HELLO, SUMMARY, LCLIST and STATUS.
 */
enum bft_role {
	BFT_ROLE_NONE = 0,
	BFT_ROLE_RO = 1,	/* COLLECT, FILTER, REPAIR, FLUSH */
	BFT_ROLE_RW = 2,	/* and CLOCK, STORE, COMPLETE */
	/*
	 * Another server of the cluster, named by its server.J.pk: it reads
	 * (with write-back) like a read-only client, to rebuild its own
	 * data from its peers, and never writes.
	 */
	BFT_ROLE_PEER = 3,
};

struct bft_client_ident {
	char name[BFT_NAME_LEN + 1];
	uint8_t pk[32];
	enum bft_role role;
};

struct bft_server_addr {
	char host[BFT_HOST_LEN];
	uint16_t port;
};

/*
 * Splits "HOST:PORT" or "[IPV6]:PORT" (HOST may be empty: any address)
 * into host and port; 0, or -EINVAL when s is neither or HOST is too
 * long.
 */
int bft_parse_hostport(const char *s, char *host, size_t hostlen,
    uint16_t *port);
/* "HOST:PORT", or "[IPV6]:PORT" for an IPv6 address; returns out. */
#define BFT_ADDR_STRLEN	(BFT_HOST_LEN + 8)
const char *bft_format_addr(const struct bft_server_addr *a, char *out,
    size_t len);

struct bft_config {
	uint8_t cluster_id[BFT_CLUSTER_ID_LEN];
	unsigned t, n;
	uint32_t block_size;
	uint64_t size;			/* bytes */
	uint64_t nblocks;		/* size / block_size */
	struct bft_server_addr servers[BFT_MAX_N];
	uint8_t server_pk[BFT_MAX_N][32];
	uint8_t server_pk_next[BFT_MAX_N][32];
	uint32_t has_pk_next;		/* bitmask of server.I.pk.next set */
	unsigned channel;		/* enum bft_chan_mode */
	unsigned nclients;
	struct bft_client_ident clients[BFT_MAX_CLIENTS];
};

/*
 * Returns 0, or a negative errno with a reason (naming the file and
 * line) in err: the file's own (-ENOENT, -EACCES, ...) when it cannot
 * be read, -EPERM for a key file others may read, -EINVAL for what it
 * says.
 */
int bft_config_load(const char *path, struct bft_config *cfg,
		    char *err, size_t errlen);
/*
 * Writes cfg to path (mode 0644), which must not exist.  Returns 0 or a
 * negative errno (-EEXIST, ...).
 */
int bft_config_write(const char *path, const struct bft_config *cfg);

/* Whether s is a good client name: 1..32 of [A-Za-z0-9._-]. */
bool bft_config_name_ok(const char *s);

/* The client whose channel key is pk, or NULL. */
const struct bft_client_ident *bft_config_find_client(
    const struct bft_config *cfg, const uint8_t *pk);

/*
 * The server whose channel key is pk (0..n-1), or -ENOENT.  Its next key
 * (server.I.pk.next) names it too: a server being rotated connects to
 * its peers under either.
 */
int bft_config_find_server(const struct bft_config *cfg, const uint8_t *pk);

/* Server i's server.I.pk.next, or NULL when it has none. */
const uint8_t *bft_config_pk_next(const struct bft_config *cfg, unsigned i);

/*
 * Whether a client of this role may send a request of this type.  A
 * reader's write-back (FILTER, REPAIR) is part of reading, so read-only
 * clients and peers keep it; what makes a new value (CLOCK, STORE,
 * COMPLETE) or forgets one (DROP) is for writers only.  SUMMARY,
 * LCLIST and STATUS reveal no data, and every identity may ask them.
 */
bool bft_role_permits(enum bft_role role, uint8_t type);
const char *bft_role_str(enum bft_role role);

/* Parses "123", "64K", "1G", ...  Returns 0 or -EINVAL. */
int bft_parse_size(const char *s, uint64_t *out);
/* Parses exactly len bytes of hex (2*len digits).  0 or -EINVAL. */
int bft_parse_hex(const char *s, uint8_t *out, size_t len);
void bft_format_hex(const uint8_t *in, size_t len, char *out /* 2*len+1 */);

#endif
