#!/bin/bash
# A wiped server rebuilds every volume beside a lying peer (t=1).
#
# Volumes 0 (the cluster's disk), 1 and 2 get 40 blocks each, volume 2
# at block numbers beyond volume 0's end.  Server 3 then runs lie-heal:
# its SUMMARYs and LCLISTs lie, and its VOLUMES names 64 volumes nobody
# wrote, each of the largest size, instead of its own.  Server 0 is
# wiped and must rebuild all 120 blocks in the time a rebuild beside
# lie-heal takes: a volume is compared only when t+1 peers hold it, so
# the liar's volumes cost nothing.  With server 3 replaced by an honest one and server 1
# stopped, every block reads back exactly from servers 0, 2 and 3.
# shellcheck source=tests/faults/byz-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/byz-lib.bash"
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

CLUSTER_SIZE=64M
cluster_start 1
nbdkit_start nbd
nbdkit_start v1 volume-id=1 size=1G
nbdkit_start v2 volume-id=2 size=1G
heal_write nbd v0 0 40
heal_write v1 v1 100 40
heal_write v2 v2 9000 40

server_kill 3 TERM
byz_start 3 lie-heal
for ((i = 0; i < CLUSTER_N; i++)); do
	byz_wait_conns "$i"
done
SERVER_ARGS_0="--rebuild-interval 2" heal_wipe 0
heal_wait_done 0
# The liar lists every block of the ranges compared as newer, and each
# is read through the protocol: the 1024 blocks of volume 0, and of
# volumes 1 and 2 up to the last index page their holders report
# (1024 and 9216 blocks).  Its 64 volumes would be 2^32 blocks each.
[ "$HEAL_REBUILT" -ge 120 ] && [ "$HEAL_REBUILT" -le $((1024 + 1024 + 9216)) ] ||
    fail "server-0 read $HEAL_REBUILT blocks beside lie-heal"
heal_wait_caught_up 0
log "server-0 rebuilt three volumes beside lie-heal ($HEAL_REBUILT blocks" \
    "read)"

byz_stop 3
server_start 3
server_kill 1
heal_check nbd v0 0 40 "volume 0 from servers 0 (rebuilt), 2 and 3"
heal_check v1 v1 100 40 "volume 1 from servers 0 (rebuilt), 2 and 3"
heal_check v2 v2 9000 40 "volume 2 from servers 0 (rebuilt), 2 and 3"
log "ok"
