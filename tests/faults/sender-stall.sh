#!/bin/bash
# A server that stops reading while the plugin writes fills the socket
# its sender thread (senders=on) writes to; the link is closed within a round's
# timeout all the same, what was queued for it is dropped (and said so),
# the other servers' writes never wait for it, and it is brought back
# (t=1).
#
# 1. Server 3 stopped with SIGSTOP, then 640 blocks (40 MiB, about 20 MiB
#    of fragments for server 3) written one by one: far more than two
#    loopback socket buffers hold, so server 3's sender blocks on a full
#    socket.  Every write must complete, in bounded time, and the
#    plugin's log must say the link was closed with data not yet sent.
# 2. SIGCONT: the plugin reconnects, writes reach server 3 again, and
#    everything reads back; then server 0 is stopped and it all still
#    reads back, which needs server 3's replies.
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

BLOCKS=640
cluster_start 1
nbdkit_start nbd timeout=2 senders=on
NLOG=$TESTDIR/log/nbdkit-nbd.log
heal_write nbd a 0 8

server_kill 3 STOP
log "injected: server 3 stopped (SIGSTOP) before $BLOCKS block writes"
start=$SECONDS
(heal_write nbd b 0 "$BLOCKS") &
wpid=$!
while kill -0 "$wpid" 2>/dev/null; do
	if [ $((SECONDS - start)) -gt 120 ]; then
		pkill -P "$wpid"
		kill "$wpid"
		fail "writing $BLOCKS blocks with server 3 stopped hung"
	fi
	sleep 0.5
done
wait "$wpid" || fail "writing $BLOCKS blocks with server 3 stopped failed"
log "$BLOCKS blocks written in $((SECONDS - start)) s with server 3 stopped"
wait_grep "$NLOG" 'server 3: .* MiB not yet sent dropped' 30 \
    "the plugin did not drop server 3's queue"
log "plugin: $(grep -a -m1 -o 'server 3: nothing came back.*' "$NLOG")"
log "plugin: $(grep -a -m1 -o 'server 3: [0-9.]* MiB not yet sent.*' "$NLOG")"
heal_check nbd b 0 "$BLOCKS" "server 3 stopped"

server_kill 3 CONT
wait_grep "$NLOG" 'server 3: connected again' 15 \
    "the plugin did not reconnect to server 3 after SIGCONT"
log "after SIGCONT: server 3 connected again in $WAITED s"
heal_write nbd c 0 32
server_kill 0 STOP
log "injected: server 0 stopped; reads now need server 3"
heal_check nbd c 0 32 "server 0 stopped"
heal_check nbd b 32 $((BLOCKS - 32)) "server 0 stopped"
server_kill 0 CONT
log "ok"
