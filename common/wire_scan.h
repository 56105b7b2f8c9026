/*
 * Private to wire.c: the byte-level walk of a frame body that runs before
 * msgpack-c sees it.  msgpack-c allocates every array's declared element
 * count before reading an element, so a five-byte body claiming 2^32
 * elements would ask for 128 GiB; this refuses such bodies first.
 */
#ifndef BFTBLK_WIRE_SCAN_H
#define BFTBLK_WIRE_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/*
 * NULL when body is exactly one msgpack object, no array or map in it
 * longer than BFT_MAX_N or nested deeper than a message nests; else a
 * static reason.  Never reads outside b[0..len).  On success *nelem is
 * the number of array elements and map keys and values in the body:
 * what msgpack-c allocates objects for, so its zone can be sized once.
 */
const char *bft_wire_scan(const uint8_t *b, size_t len, size_t *nelem);

#endif
