#!/bin/bash
# Trimmed blocks heal like written ones (t=1).  A trim stores the zero
# value, an empty fragment under the zero cross-checksum, and a server
# that lost its disk must rebuild those blocks too: otherwise a read
# with that server among the few up would find too few servers for
# them, or an old fragment under them.
#
# 1. 120 blocks are written, then 60 of them trimmed.
# 2. Server 0 is wiped and rebuilds: all 120 blocks are newer at its
#    peers, the trimmed ones included, and its data directory holds no
#    fragment for them (it ends up smaller than a peer's log of the
#    fragments it had before the trim).
# 3. Server 1 is stopped and server 3 wiped: with servers 0 and 2 left,
#    the written blocks read back exactly and the trimmed ones as zeros.
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

N=120
cluster_start 1
nbdkit_start nbd
heal_write nbd a 0 "$N"
nbdsh_run nbd "
h.trim(60 * 65536, 60 * 65536)
h.flush()
assert h.pread(60 * 65536, 60 * 65536) == bytes(60 * 65536)
" || fail "trimming blocks 60..119"
log "trimmed blocks 60..$((N - 1))"

heal_wipe 0
heal_wait_done 0
[ "$HEAL_REBUILT" -eq "$N" ] ||
    fail "server-0 rebuilt $HEAL_REBUILT blocks, expected $N"
held=$(du -sb "$TESTDIR/data/server-0" | cut -f1)
# 60 written blocks hold half a block each on a server at t = 1: 1.9 MiB;
# 60 more fragments would make it 3.9 MiB.
[ "$held" -lt $((3 * 1024 * 1024)) ] ||
    fail "server-0 holds $held bytes after rebuilding 60 written and" \
    "60 trimmed blocks: the trimmed ones hold fragments"
log "server-0 rebuilt $N blocks into $held bytes"

server_kill 1
heal_wipe 3
heal_check nbd a 0 60 "servers 0 (rebuilt), 2 and 3 (wiped)"
nbdsh_run nbd "
assert h.pread(60 * 65536, 60 * 65536) == bytes(60 * 65536)
" || fail "trimmed blocks do not read as zeros from servers 0 and 2"
log "trimmed blocks read as zeros from servers 0 (rebuilt) and 2"
log "ok"
