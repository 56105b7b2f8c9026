#!/bin/bash
# A link that stops delivering without closing is found within one
# round's timeout, closed, logged by name, and reconnected once the
# server answers again; I/O goes on meanwhile (t=1).
#
# 1. Server 2 stopped with SIGSTOP: its TCP connections stay up and the
#    kernel even accepts new ones, but nothing is ever answered.  With
#    timeout=2, reads keep succeeding, and the plugin's log must say
#    within a few seconds that nothing came back from server 2 and that
#    it closed the link.
# 2. An idle plugin finds it too: its keepalive gets no answer.
# 3. SIGCONT: the plugin reconnects and says so.
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

cluster_start 1
nbdkit_start nbd timeout=2
nbdkit_start idle timeout=2
heal_write nbd a 0 8
NLOG=$TESTDIR/log/nbdkit-nbd.log
ILOG=$TESTDIR/log/nbdkit-idle.log
nbdsh_run idle "h.pread(65536, 0)" >/dev/null || fail "idle plugin cannot read"

server_kill 2 STOP
log "injected: server 2 stopped (SIGSTOP); its connections stay open"
start=$SECONDS
until grep -aq 'server 2: nothing came back for' "$NLOG"; do
	[ $((SECONDS - start)) -le 10 ] ||
	    fail "the plugin did not notice the stuck link within 10 s"
	heal_check nbd a 0 8 "reads with server 2 stuck" >/dev/null 2>&1 ||
	    fail "reads failed while server 2 was stuck"
done
log "busy plugin, after $((SECONDS - start)) s: $(grep -a -m1 -o 'server 2: nothing came back.*' "$NLOG")"
until grep -aq 'server 2: nothing came back for' "$ILOG"; do
	[ $((SECONDS - start)) -le 20 ] ||
	    fail "the idle plugin did not notice the stuck link within 20 s"
	sleep 0.2
done
log "idle plugin, after $((SECONDS - start)) s: $(grep -a -m1 -o 'server 2: nothing came back.*' "$ILOG")"

server_kill 2 CONT
wait_grep "$NLOG" 'server 2: connected again' 15 \
    "the plugin did not reconnect to server 2 after SIGCONT"
log "after SIGCONT: server 2 connected again in $WAITED s"
heal_check nbd a 0 8 "all servers back"
log "ok"
