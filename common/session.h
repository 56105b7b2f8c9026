/*
 * A blocking session with one server: TCP, the channel handshake under
 * a client's identity, HELLO, then sealed requests and opened replies,
 * one at a time.  The engine's event loop is for I/O at speed; this is
 * for tools that ask one server one thing (the admin tool, the test
 * client, which also uses the pieces to misbehave on purpose, and the
 * library's connections and DROPs): shared by every folder, hence here.
 */
#ifndef BFTBLK_SESSION_H
#define BFTBLK_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "channel.h"
#include "config.h"
#include "keys.h"
#include "wire.h"

struct bft_session {
	int fd;				/* -1: closed */
	unsigned idx, n;
	struct bft_chan chan;
	uint64_t next_id;
	uint8_t *rbuf;			/* one frame body (BFT_MAX_FRAME) */
};

/* The HELLO that checks a server's geometry against cfg. */
void bft_hello_fill(const struct bft_config *cfg, unsigned idx,
    struct bft_msg *m);

/* Why bft_session_open failed, and at which step. */
struct bft_session_fail {
	enum { BFT_SESS_CONNECT, BFT_SESS_CHANNEL, BFT_SESS_HELLO } step;
	int status;			/* the server's refusal code, or 0 */
	const char *why;
};

/*
 * Connects to server idx of cfg with the identity of key, runs the
 * channel handshake and, when hello, the HELLO exchange.  I/O waits at
 * most timeout_ms per call.  Returns 0, or a negative errno with *f
 * filled in and s closed: connect()'s or the socket's (-ETIMEDOUT when
 * the server is silent), the channel's (channel.h), -ECONNREFUSED when
 * the server refused us (its reason in f->status).
 */
int bft_session_open(struct bft_session *s, const struct bft_config *cfg,
    const struct bft_client_key *key, unsigned idx, unsigned timeout_ms,
    bool hello, struct bft_session_fail *f);
void bft_session_close(struct bft_session *s);
/* Why bft_session_open failed, as a phrase: "channel: ...". */
void bft_session_fail_str(const struct bft_session_fail *f, char *out,
    size_t len);

/*
 * Appends m as a sealed frame to out under a new id (set in *m too).
 * Returns the frame's offset in out, or a negative errno (wire.h's,
 * channel.h's); out is then as it was.
 */
long bft_session_seal(struct bft_session *s, struct bft_msg *m,
    struct bft_buf *out);
/* Sends bytes as they are.  0 or a negative errno. */
int bft_session_send_raw(struct bft_session *s, const uint8_t *p,
    size_t len);
/*
 * Reads one frame, opens and decodes it into m (which points into the
 * session's buffer until the next call).  With raw, the frame as it
 * came off the wire is copied there (4 + BFT_MAX_FRAME bytes) and its
 * length put in *rawlen.  0, or a negative errno with why (-EBADMSG
 * for a frame that does not open or decode).
 */
int bft_session_recv(struct bft_session *s, struct bft_msg *m, uint8_t *raw,
    size_t *rawlen, const char **why);
/*
 * Sends req (a new id) and waits for its reply, skipping others.
 * Returns the reply's status, BFT_OK (0) or another enum bft_status
 * (positive: the server answered, refusing), or a negative errno with
 * why (the session is then closed: a lost or garbled stream cannot be
 * resynchronised).
 */
int bft_session_call(struct bft_session *s, struct bft_msg *req,
    struct bft_msg *rep, const char **why);

#endif
