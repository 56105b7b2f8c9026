/*
 * What the fuzz harnesses share: the cluster size from a selector byte,
 * a field-by-field round trip of a message through the wire encoder and
 * decoder, and a check macro whose failure libFuzzer reports as a crash.
 * The harnesses also build with gcc against tests/fuzz/standalone.c, so
 * that `make check` runs the regressions and seeds without clang.
 */
#ifndef BFTBLK_FUZZ_UTIL_H
#define BFTBLK_FUZZ_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "wire.h"

/* libFuzzer's entry points (it ships no C header for them). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failed check is a finding: say what, then abort so it is a crash. */
#define FUZZ_CHECK(cond, ...) do {					\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: check failed: %s: ",	\
			    __FILE__, __LINE__, #cond);			\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			abort();					\
		}							\
	} while (0)

/* n = 3t+1 for t = 1..5, from the low bits of sel: 4, 7, 10, 13, 16. */
unsigned fuzz_n(uint8_t sel);

/*
 * Encodes m for n servers (which must succeed: m is either decoded or a
 * reply of the handler), decodes the frame again, and checks that every
 * field the type carries came back identical, and that encoding the
 * result gives the same bytes.  strict: m came from the decoder, so the
 * fields its type does not carry must be zero in both.
 */
void fuzz_roundtrip(const struct bft_msg *m, unsigned n, bool strict);

/* A malloc'd copy of exactly len bytes, so ASan sees any overread. */
uint8_t *fuzz_dup(const uint8_t *p, size_t len);

#endif
