#!/bin/bash
# Basic reads and writes through nbdkit and a t=1 cluster: an aligned
# block, an unaligned write inside a block and one across a block
# boundary, each read back byte for byte (with the untouched bytes
# around them still zero) from a fresh connection and again after
# restarting nbdkit, so the data must come from the servers.  Also:
# never-written blocks read as zeros, the last block of the disk works,
# and I/O beyond the end fails.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cluster_start 1
nbdkit_start nbd

# The same seed makes every nbdsh below expect the same bytes.
seed=$RANDOM
common="
import random
import nbd
BS = 65536
SIZE = h.get_size()
rng = random.Random($seed)
A = rng.randbytes(BS)          # block 2, aligned
B = rng.randbytes(4096)        # inside block 3
C = rng.randbytes(7000)        # across blocks 4 and 5
L = rng.randbytes(BS)          # last block
OFF_A = 2 * BS
OFF_B = 3 * BS + 1000
OFF_C = 5 * BS - 3000

def expect(off, length, want, what):
    got = h.pread(length, off)
    if got != want:
        bad = next(i for i in range(length) if got[i] != want[i])
        raise AssertionError('%s: %d bytes at %d differ first at +%d'
                             % (what, length, off, bad))

def check_all(last):
    expect(OFF_A, BS, A, 'aligned block')
    # Whole blocks 3..5: the written bytes and zeros around them.
    want = bytearray(3 * BS)
    want[OFF_B - 3 * BS:OFF_B - 3 * BS + len(B)] = B
    want[OFF_C - 3 * BS:OFF_C - 3 * BS + len(C)] = C
    expect(3 * BS, 3 * BS, bytes(want), 'blocks 3-5')
    # Reads that start and end inside blocks see the same bytes.
    expect(OFF_B, len(B), B, 'unaligned write')
    expect(OFF_C, len(C), C, 'write across a block boundary')
    expect(OFF_C + 2000, 1500, C[2000:3500], 'unaligned read across')
    expect(10 * BS, 2 * BS, bytes(2 * BS), 'never-written blocks')
    expect(SIZE - BS, BS, last, 'last block')
"

log "checking size and zeros of a fresh disk"
nbdsh_run nbd "$common
assert SIZE > 16 * BS and SIZE % BS == 0, 'odd disk size %d' % SIZE
expect(0, 16 * BS, bytes(16 * BS), 'fresh disk')
expect(SIZE - BS, BS, bytes(BS), 'fresh last block')
"

log "writing"
nbdsh_run nbd "$common
h.pwrite(A, OFF_A)
h.pwrite(B, OFF_B)
h.pwrite(C, OFF_C)
h.pwrite(L, SIZE - BS)
h.flush() if h.can_flush() else None
check_all(L)
"

log "reading back on a new connection"
nbdsh_run nbd "$common
check_all(L)
"

log "reading back after restarting nbdkit"
nbdkit_stop nbd
nbdkit_start nbd
nbdsh_run nbd "$common
check_all(L)
"

log "I/O beyond the end must fail"
nbdsh_run nbd "$common
# Let the requests reach nbdkit instead of being refused by libnbd.
h.set_strict_mode(h.get_strict_mode() & ~nbd.STRICT_BOUNDS)
for off, length in ((SIZE, 4096), (SIZE - 4096, 8192), (SIZE + BS, BS)):
    try:
        h.pread(length, off)
    except nbd.Error:
        pass
    else:
        raise AssertionError('read of %d at %d succeeded' % (length, off))
    try:
        h.pwrite(bytes(length), off)
    except nbd.Error:
        pass
    else:
        raise AssertionError('write of %d at %d succeeded' % (length, off))
# The failed requests must not have disturbed the data.
check_all(L)
"
log "ok"
