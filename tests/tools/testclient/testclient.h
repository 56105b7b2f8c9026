/*
 * The test client's parts (tests/tools/testclient/): the state of its
 * one run, shared by all of them, and what each part offers the others.
 */
#ifndef BFTBLK_TESTCLIENT_H
#define BFTBLK_TESTCLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "channel.h"
#include "config.h"
#include "keys.h"
#include "session.h"
#include "wire.h"

#define ALL		((1u << n) - 1)
#define FOR_EACH(i, mask) \
	for (unsigned i = 0; i < n; i++) if ((mask) & (1u << i))

#define NFORGED 8		/* forgeries forge.c makes; --forgery I */

/* chan.c */
extern struct bft_config cfg;
extern struct bft_client_key key;
extern struct bft_session sess[BFT_MAX_N];	/* fd -1: down */
extern unsigned n, t;
extern struct bft_msg req, rep;		/* big: kept off the stack */

uint32_t tc_get_be32(const uint8_t *p);
size_t tc_seal_req(unsigned i, struct bft_buf *out);
int tc_recv_reply(unsigned i, uint8_t *raw, size_t *rawlen,
    const char **why);
int tc_xfer(unsigned i);
const char *tc_status_name(int st);
void tc_new_req(unsigned type);
void tc_connect_servers(uint32_t mask);
void tc_send_raw(unsigned i, const uint8_t *p, size_t len);
void tc_print_ts(const char *what, const struct bft_ts *ts);

/* main.c */
extern struct tc_opt {
	const char *config, *keys, *seed, *stop, *servers, *complete_to;
	const char *mode, *cmd;
	uint64_t block, count, hold;
	int hang, forgery, complete_last;
	/* --view GEN: collect-save and filter-back on a snapshot's view */
	int has_view;
	uint64_t view;
} opt;

uint32_t tc_parse_list(const char *s);
void tc_load(bool need_mac);

/* write.c */
void tc_pattern(const char *seed, uint8_t *out);
int tc_cmd_partial_write(void);
int tc_cmd_stutter(void);

/* forge.c */
int tc_cmd_forge(unsigned type);
int tc_cmd_forge_keys(void);

/* probe.c */
int tc_cmd_probe(void);
int tc_cmd_tamper(void);
int tc_cmd_peek(void);
int tc_cmd_pipeline(void);

/* attack.c */
int tc_cmd_flood(void);
int tc_cmd_collect_save(void);
int tc_cmd_filter_back(void);
int tc_cmd_view_lc(void);
/* finalized.c */
int tc_cmd_finalized(void);

#endif
