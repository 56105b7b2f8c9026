/*
 * The cluster configuration file, bftblk.conf(5): "key = value" lines,
 * '#' starts a comment.  Keys:
 *   cluster-id = 32 hex digits     (required)
 *   t          = 1..BFT_MAX_T      (required; n = 3t+1)
 *   size       = disk size in bytes, with optional K/M/G/T suffix, a
 *                multiple of the 64 KiB block size (required)
 *   block-size = 65536             (optional; the only size supported)
 *   server.I   = HOST:PORT         (required for I = 0..n-1)
 */
#ifndef BFTBLK_CONFIG_H
#define BFTBLK_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define BFT_HOST_LEN 256

struct bft_server_addr {
	char host[BFT_HOST_LEN];
	uint16_t port;
};

struct bft_config {
	uint8_t cluster_id[BFT_CLUSTER_ID_LEN];
	unsigned t, n;
	uint32_t block_size;
	uint64_t size;			/* bytes */
	uint64_t nblocks;		/* size / block_size */
	struct bft_server_addr servers[BFT_MAX_N];
};

/* Returns 0, or -1 with a reason (naming the file and line) in err. */
int bft_config_load(const char *path, struct bft_config *cfg,
		    char *err, size_t errlen);
/* Writes cfg to path (mode 0644).  Returns 0 or -1 with errno set. */
int bft_config_write(const char *path, const struct bft_config *cfg);

/* Parses "123", "64K", "1G", ...  Returns 0 or -1. */
int bft_parse_size(const char *s, uint64_t *out);
/* Parses exactly len bytes of hex (2*len digits).  Returns 0 or -1. */
int bft_parse_hex(const char *s, uint8_t *out, size_t len);
void bft_format_hex(const uint8_t *in, size_t len, char *out /* 2*len+1 */);

#endif
