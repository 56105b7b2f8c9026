#!/bin/bash
# Durability across whole-cluster restarts (t=1).
#
# Round 1: random data is written to aligned blocks, inside blocks and
# across block boundaries, then flushed; all servers are stopped with
# SIGTERM (which must exit 0) and started again on the same data dirs.
# The data must read back byte for byte through the nbdkit that was
# running all along (once it has reconnected to every server) and
# through a fresh nbdkit.
#
# Round 2: more data overwrites part of round 1's and fills new blocks,
# with no flush; all servers are killed with SIGKILL at once.  A write
# is acknowledged only after n-t servers have write()n its records, and
# those survive kill -9, so after a restart every acknowledged byte must
# be back, checked again through both nbdkits.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The same seed gives every nbdsh below the same patterns.
seed=$RANDOM$RANDOM
py="
import random
BS = 65536
NB = 40                    # the region checked whole: blocks 0..39

def pattern(tag, n):
    return random.Random('$seed-' + tag).randbytes(n)

# (tag, offset, length) of each write, in the order they are made.
ROUND1 = [('r1-aligned0', 0, BS), ('r1-aligned5-7', 5 * BS, 3 * BS),
          ('r1-inside10', 10 * BS + 1000, 4096),
          ('r1-across12-13', 13 * BS - 3000, 7000),
          ('r1-byte20', 20 * BS + 12345, 1),
          ('r1-across25-27', 25 * BS + 777, 2 * BS)]
ROUND2 = [('r2-over0', 0, BS), ('r2-inside6', 6 * BS + 100, 500),
          ('r2-over-across12-13', 13 * BS - 100, 300),
          ('r2-aligned30', 30 * BS, BS),
          ('r2-across33-34', 34 * BS - 5, 10),
          ('r2-last39', 39 * BS + BS - 4096, 4096)]

def write(writes):
    for tag, off, n in writes:
        h.pwrite(pattern(tag, n), off)
        print('wrote %s: %d bytes at %d' % (tag, n, off))

def check(rounds, what):
    model = bytearray(NB * BS)
    for writes in rounds:
        for tag, off, n in writes:
            model[off:off + n] = pattern(tag, n)
    got = h.pread(NB * BS, 0)
    if got != model:
        bad = next(i for i in range(len(model)) if got[i] != model[i])
        raise AssertionError('%s: blocks 0-%d differ first at byte %d '
                             '(block %d)' % (what, NB - 1, bad, bad // BS))
    # Unaligned reads of exactly what each write covered.
    for writes in rounds:
        for tag, off, n in writes:
            if h.pread(n, off) != bytes(model[off:off + n]):
                raise AssertionError('%s: read of %s differs' % (what, tag))
    print('%s: blocks 0-%d match byte for byte' % (what, NB - 1))
"

cluster_start 1
nbdkit_start nbd

log "round 1: writing and flushing"
nbdsh_run nbd "$py
write(ROUND1)
h.flush()
check([ROUND1], 'before restart')
"

log "round 1: SIGTERM to all servers, then restart"
for ((i = 0; i < CLUSTER_N; i++)); do
	server_kill "$i" TERM
done
for ((i = 0; i < CLUSTER_N; i++)); do
	server_start "$i"
done
wait_connected $(seq 0 $((CLUSTER_N - 1)))
nbdsh_run nbd "$py
check([ROUND1], 'after SIGTERM restart, same nbdkit')
"
nbdkit_start fresh
nbdsh_run fresh "$py
check([ROUND1], 'after SIGTERM restart, fresh nbdkit')
"
nbdkit_stop fresh

log "round 2: writing without a flush, then SIGKILL to all servers"
nbdsh_run nbd "$py
write(ROUND2)
"
for ((i = 0; i < CLUSTER_N; i++)); do
	kill -s KILL "${SERVER_PID[$i]}"
done
log "sent SIGKILL to all servers at once"
for ((i = 0; i < CLUSTER_N; i++)); do
	server_kill "$i" KILL	# reaps it
	[ "$SERVER_STATUS" -eq 137 ] ||
	    fail "server-$i: status $SERVER_STATUS after SIGKILL, not 137"
done
for ((i = 0; i < CLUSTER_N; i++)); do
	server_start "$i"
done
wait_connected $(seq 0 $((CLUSTER_N - 1)))
nbdsh_run nbd "$py
check([ROUND1, ROUND2], 'after SIGKILL restart, same nbdkit')
"
nbdkit_start fresh
nbdsh_run fresh "$py
check([ROUND1, ROUND2], 'after SIGKILL restart, fresh nbdkit')
"
log "ok"
