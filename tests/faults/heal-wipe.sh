#!/bin/bash
# A server that lost its disk rebuilds itself, with no command (t=1).
#
# 1. 200 blocks are written with every server up.
# 2. Server 0 is killed, its data directory emptied, and it is started
#    again: it must find by itself that its peers hold 200 blocks it
#    lacks, rebuild exactly those, and say so.
# 3. Then server 1 is stopped and server 3 wiped: reads now have
#    only servers 0 and 2 holding the data (t+1 fragments), so they
#    can only succeed with the fragments server 0 rebuilt.  Every block
#    reads back exactly.
# 4. Server 3 rebuilds in turn once server 1 is back, and with server 2
#    stopped the data reads back from servers 0, 1 and 3.
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

N=200
cluster_start 1
nbdkit_start nbd
heal_write nbd a 100 "$N"

heal_wipe 0
heal_wait_done 0
[ "$HEAL_REBUILT" -eq "$N" ] ||
    fail "server-0 rebuilt $HEAL_REBUILT blocks, expected $N"
grep -aq 'new data directory while peers hold data' "$TESTDIR/log/server-0.log" ||
    fail "server-0 did not say that it lacks what its peers hold"

server_kill 1
heal_wipe 3
heal_check nbd a 100 "$N" "servers 0 (rebuilt), 2 and 3 (wiped)"

heal_mark 3
server_start 1
heal_wait_done 3
[ "$HEAL_REBUILT" -eq "$N" ] ||
    fail "server-3 rebuilt $HEAL_REBUILT blocks, expected $N"
server_kill 2
heal_check nbd a 100 "$N" "servers 0, 1 and 3 (both rebuilt)"
log "ok"
