#!/bin/bash
# Two disks lost one after the other, each replaced once the other has
# healed; then a third server stops (t=1).
#
# 1. 1000 blocks are written with every server up.
# 2. Server 0 is wiped and restarted; it must catch up with its peers.
# 3. Server 3 is wiped and restarted; it must catch up too.
# 4. Server 1 is stopped: reads have servers 0 and 3 (both rebuilt) and
#    2.  Every block reads back exactly, and the whole read takes less
#    than HEAL_READ_MAX seconds (30): rebuilt servers answer like any
#    other, so reads stay on the one-round path instead of waiting for
#    fragments or falling back on every block.
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

N=1000
HEAL_READ_MAX=${HEAL_READ_MAX:-30}
cluster_start 1
nbdkit_start nbd
heal_write nbd a 0 "$N"

heal_wipe 0
heal_wait_caught_up 0
[ "$HEAL_FIRST_NEWER" -eq "$N" ] ||
    fail "server-0 found $HEAL_NEWER blocks newer, expected $N"

heal_wipe 3
heal_wait_caught_up 3
[ "$HEAL_FIRST_NEWER" -eq "$N" ] ||
    fail "server-3 found $HEAL_NEWER blocks newer, expected $N"

server_kill 1
log "injected: server-1 stopped; servers 0 and 3 were rebuilt"
start=$(date +%s.%N)
heal_check nbd a 0 "$N" "servers 0 (rebuilt), 2 and 3 (rebuilt)"
took=$(echo "$(date +%s.%N) - $start" | bc)
log "checked: read $N blocks in ${took}s (limit ${HEAL_READ_MAX}s)"
[ "$(echo "$took < $HEAL_READ_MAX" | bc)" = 1 ] ||
    fail "reading $N blocks took ${took}s, over ${HEAL_READ_MAX}s"
log "ok"
