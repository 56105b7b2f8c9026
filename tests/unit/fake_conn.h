/*
 * A connection layer for unit tests of the engine's rounds, linked in
 * place of lib/conn.c (tests/unit/fake_conn.c).  Nothing goes over a
 * socket: every request the engine sends a server is queued for the test
 * to take, and the test hands replies to the engine itself.  Both ways
 * go through the wire encoder and decoder, so a test sees exactly what a
 * server would decode, and the engine exactly what conn.c would pass it:
 * a request or reply the wire cannot carry fails the test instead of
 * passing in a form no server could ever see.
 */
#ifndef BFTBLK_TEST_FAKE_CONN_H
#define BFTBLK_TEST_FAKE_CONN_H

#include "../../lib/conn_int.h"

/*
 * The oldest request sent to server i that the test has not taken yet,
 * marked taken; NULL when there is none.  It stays valid, fragment and
 * all, until fake_conn_reset().
 */
const struct bft_msg *fake_conn_take(unsigned i);
/* Requests sent to server i and not taken yet. */
unsigned fake_conn_queued(unsigned i);
/* Every request sent to server i since the last reset. */
unsigned fake_conn_sent(unsigned i);
/*
 * Requests bftblk__conn_send was asked to send to a connection that was not
 * C_READY, or that the wire refused to encode: the round code must never
 * do either, so a test checks that both stay zero.
 */
unsigned fake_conn_misuse(void);

/* Reply from server c->idx, through the wire, to bftblk__engine_dispatch. */
void fake_conn_deliver(struct conn *c, const struct bft_msg *rep);

/* Forgets every request, freeing them. */
void fake_conn_reset(void);

#endif
