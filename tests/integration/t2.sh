#!/bin/bash
# A t=2 cluster (n=7): I/O with up to t servers dead, a clean error with
# more, and recovery.
#
# 1. Aligned, unaligned and block-crossing writes read back byte for byte.
# 2. Servers 1 and 4 are killed with SIGKILL: writes and reads still work
#    (n-t = 5 servers answer).
# 3. Server 6 is killed too: only 4 remain, so a write and a read must
#    fail with an error (nbdkit runs with timeout=3) rather than hang;
#    nbdsh runs under timeout(1) so a hang fails the test.
# 4. The three are restarted: every acknowledged write reads back, the
#    block of the failed write holds either its old or its attempted
#    content (a failed write may or may not take effect), and new writes
#    and reads work.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# A hang guard only: a failing request must come back within a few
# rounds of timeout=3, far below this.
HANG_GUARD=120

seed=$RANDOM$RANDOM
py="
import errno, random, time, nbd
BS = 65536
NB = 32

def pattern(tag, n):
    return random.Random('$seed-' + tag).randbytes(n)

FIRST = [('aligned0', 0, BS), ('aligned2-4', 2 * BS, 3 * BS),
         ('inside6', 6 * BS + 4000, 5000), ('across8-9', 9 * BS - 1, 2),
         ('across10-12', 10 * BS + 30000, 2 * BS), ('byte15', 15 * BS, 1)]
TWO_DOWN = [('down-over2', 2 * BS, BS), ('down-inside3', 3 * BS + 7, 77),
            ('down-aligned20', 20 * BS, BS),
            ('down-across21-22', 22 * BS - 4096, 8192)]
FAILED = ('failed25', 25 * BS, BS)
RECOVERED = [('rec-over0', 0, BS // 2), ('rec-aligned26', 26 * BS, BS),
             ('rec-across28-29', 29 * BS - 1000, 1500)]

def write(writes):
    for tag, off, n in writes:
        h.pwrite(pattern(tag, n), off)
        print('wrote %s: %d bytes at %d' % (tag, n, off))

def model(rounds):
    m = bytearray(NB * BS)
    for writes in rounds:
        for tag, off, n in writes:
            m[off:off + n] = pattern(tag, n)
    return m

def check(rounds, what, maybe=None):
    want = model(rounds)
    got = bytearray(h.pread(NB * BS, 0))
    if maybe is not None:
        # The failed write's range: either content is right.
        tag, off, n = maybe
        part = bytes(got[off:off + n])
        if part not in (bytes(want[off:off + n]), pattern(tag, n)):
            raise AssertionError('%s: %s holds neither its old nor its '
                                 'attempted content' % (what, tag))
        print('%s: failed write %s read as %s' % (what, tag,
              'attempted' if part == pattern(tag, n) else 'old'))
        got[off:off + n] = want[off:off + n]
    if got != want:
        bad = next(i for i in range(len(want)) if got[i] != want[i])
        raise AssertionError('%s: byte %d (block %d) differs'
                             % (what, bad, bad // BS))
    for writes in rounds:
        for tag, off, n in writes:
            if maybe is None or maybe[0] != tag:
                if h.pread(n, off) != bytes(want[off:off + n]):
                    raise AssertionError('%s: read of %s differs'
                                         % (what, tag))
    print('%s: blocks 0-%d match byte for byte' % (what, NB - 1))

def must_fail(what, fn):
    start = time.monotonic()
    try:
        fn()
    except nbd.Error as e:
        print('%s failed after %.1fs as it must: %s' % (what,
              time.monotonic() - start, e.string))
    else:
        raise AssertionError('%s succeeded with only 4 of 7 servers' % what)
"

cluster_start 2
nbdkit_start nbd timeout=3 t=2

log "aligned and unaligned writes with all 7 servers"
nbdsh_run nbd "$py
check([], 'fresh disk')
write(FIRST)
check([FIRST], 'all up')
"

log "SIGKILL to servers 1 and 4 (t=2 faults)"
server_kill 1 KILL
server_kill 4 KILL
nbdsh_run nbd "$py
check([FIRST], 'two down, before writing')
write(TWO_DOWN)
h.flush()
check([FIRST, TWO_DOWN], 'two down')
"

log "SIGKILL to server 6: 4 of 7 left, I/O must fail, not hang"
server_kill 6 KILL
rc=0
timeout -k 5 "$HANG_GUARD" bash -c 'PATH=/usr/bin:$PATH exec nbdsh \
    -u "$1" -c "$2"' _ "$(nbd_uri nbd)" "$py
tag, off, n = FAILED
must_fail('write of %s' % tag, lambda: h.pwrite(pattern(tag, n), off))
must_fail('read of block 2', lambda: h.pread(BS, 2 * BS))
must_fail('flush', lambda: h.flush())
" || rc=$?
case "$rc" in
0) ;;
124|137) fail "I/O with 4 of 7 servers hung for ${HANG_GUARD}s" ;;
*) fail "I/O with 4 of 7 servers: nbdsh exited with $rc" ;;
esac

log "restarting servers 1, 4 and 6"
server_start 1
server_start 4
server_start 6
wait_connected 1 4 6
nbdsh_run nbd "$py
check([FIRST, TWO_DOWN], 'recovered', maybe=FAILED)
write(RECOVERED)
tag, off, n = FAILED
h.pwrite(pattern(tag, n), off)
check([FIRST, TWO_DOWN, [FAILED], RECOVERED], 'recovered, after writes')
"
nbdkit_start fresh t=2
nbdsh_run fresh "$py
check([FIRST, TWO_DOWN, [FAILED], RECOVERED], 'fresh nbdkit')
"
log "ok"
