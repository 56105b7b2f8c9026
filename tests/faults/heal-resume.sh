#!/bin/bash
# A rebuild killed halfway resumes where it stood (t=1, 256 MiB disk).
#
# 1. 1500 blocks are written with every server up.
# 2. Server 0 is wiped and restarted with --rebuild-rate 5 (about 76
#    blocks/s), so that its rebuild takes about 20 s.  Once it has
#    logged progress, and before it is done, it gets SIGKILL.
# 3. It is restarted on the same data directory, whose rebuild-pending
#    marker says it is still lacking: it must say it resumes, find fewer
#    blocks newer than the first run needed (at most the 1500 less those
#    it had reported done, since adopted blocks survive SIGKILL), catch
#    up, and remove the marker.
# 4. Server 1 is stopped and server 2 wiped: reads need server 0's
#    fragments, and all 1500 blocks read back exactly.  Server 1 comes
#    back and server 2 catches up.
CLUSTER_SIZE=${CLUSTER_SIZE:-256M}
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

N=1500
RATE=5
cluster_start 1
nbdkit_start nbd
heal_write nbd a 0 "$N"

SERVER_ARGS_0="--rebuild-rate $RATE" heal_wipe 0
log "server-0 rebuilds at $RATE MB/s"
deadline=$((SECONDS + 60))
until line=$(heal_since 0 | grep -a -m1 -E 'rebuild: [0-9]+/[0-9]+ blocks'); do
	[ "$SECONDS" -lt "$deadline" ] || fail "server-0 logged no progress in 60s"
	sleep 0.2
done
[[ $line =~ rebuild:\ ([0-9]+)/([0-9]+)\ blocks ]] || fail "cannot parse: $line"
done1=${BASH_REMATCH[1]}
total1=${BASH_REMATCH[2]}
server_kill 0 KILL
heal_since 0 | grep -aq 'rebuild: done,' &&
    fail "server-0 finished before it was killed: raise N or lower RATE"
[ "$total1" -eq "$N" ] || fail "server-0's first run had $total1 blocks to do, expected $N"
[ "$(cat "$TESTDIR/data/server-0/rebuild-pending")" = 1 ] ||
    fail "server-0's data directory lost its rebuild-pending marker"
log "injected: SIGKILL to server-0 after it reported $done1/$total1 blocks;" \
    "marker kept"

heal_mark 0
server_start 0
_wait_log "${SERVER_PID[0]}" "$TESTDIR/log/server-0.log" "${HEAL_OFF[0]}" \
    'resuming the rebuild of a new data directory' "server-0's resumed rebuild"
heal_wait_caught_up 0
[ "$HEAL_FIRST_NEWER" -gt 0 ] ||
    fail "server-0 found nothing left to rebuild after it was killed"
[ "$HEAL_FIRST_NEWER" -le $((N - done1)) ] ||
    fail "server-0 restarted its rebuild: $HEAL_FIRST_NEWER blocks newer" \
    "after it had done $done1 of $N"
log "checked: the second run rebuilt $HEAL_FIRST_NEWER blocks, the first" \
    "had done $done1 of $N when killed"

server_kill 1
heal_wipe 2
heal_check_model nbd "servers 0 (resumed rebuild), 2 (wiped) and 3" "a:0:$N"
server_start 1
heal_wait_caught_up 2
log "ok"
