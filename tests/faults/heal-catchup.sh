#!/bin/bash
# A server that was down while K blocks were written catches up with
# exactly those K, not the disk (t=1).
#
# 1. 300 blocks are written with every server up.
# 2. Server 2 is stopped; 40 blocks are overwritten and 25 new ones
#    written (K = 65).
# 3. Server 2 is started again: its first rebuild pass must find and
#    rebuild K blocks.
# 4. Server 0 is stopped and server 1 wiped, so that reads need server
#    2's fragments: the whole data set reads back exactly.
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

cluster_start 1
nbdkit_start nbd
heal_write nbd a 0 300

server_kill 2
heal_write nbd b 100 40
heal_write nbd c 400 25
heal_mark 2
server_start 2
heal_wait_done 2
[ "$HEAL_REBUILT" -eq 65 ] ||
    fail "server-2 rebuilt $HEAL_REBUILT blocks; it missed 65 writes"

server_kill 0
heal_wipe 1
heal_check nbd a 0 100 "servers 1 (wiped), 2 (caught up) and 3"
heal_check nbd b 100 40 "servers 1 (wiped), 2 (caught up) and 3"
heal_check nbd a 140 160 "servers 1 (wiped), 2 (caught up) and 3"
heal_check nbd c 400 25 "servers 1 (wiped), 2 (caught up) and 3"
log "ok"
