/*
 * Test server only (--record-frames DIR, server/test_hooks.h): every
 * frame body the server receives is written to DIR/<seq>, before it is
 * decoded, so that real traffic can seed the fuzzers in tests/fuzz/.
 * Like --byzantine, the option is refused unless the environment has
 * BFTBLK_TEST_BYZANTINE=1: a server must never copy what clients send
 * to disk because of a stray option.
 */
#ifndef BFTBLK_RECORD_H
#define BFTBLK_RECORD_H

#include <stddef.h>
#include <stdint.h>

/* Recording stops after this many files; seeds need a few hundred. */
#define BFT_RECORD_MAX	2000u

/*
 * Starts recording into dir, which must exist.  0, or -1 with a reason
 * in err.
 */
int bft_record_start(const char *dir, char *err, size_t errlen);

/*
 * Writes one frame body (without its length prefix) when recording is
 * on; otherwise, and after BFT_RECORD_MAX files, does nothing.  Errors
 * are logged once and end the recording, never the connection.
 */
void bft_record_frame(const uint8_t *body, size_t len);

void bft_record_stop(void);

#endif
