#!/bin/bash
# With t+1 servers gone, I/O fails fast and says which servers are
# missing, instead of waiting for minutes (t=1).
#
# 1. Servers 1 and 3 are stopped (SIGSTOP: their connections stay up but
#    nothing answers, the worst case for a client).  A read through a
#    plugin with timeout=2 io-timeout=4 must fail with an error within
#    io-timeout plus slack, and the plugin's log must name servers 1 and
#    3 as not answering.
# 2. The same with server 3 killed outright and server 1 still stopped.
# 3. Servers resumed: the same read succeeds.
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

cluster_start 1
nbdkit_start nbd timeout=2 io-timeout=4
heal_write nbd a 0 4
NLOG=$TESTDIR/log/nbdkit-nbd.log

# timed_fail WHAT: a read of block 2 must fail, within 8 s.
timed_fail()
{
	local what=$1 start=$SECONDS took
	if nbdsh_run nbd "h.pread(65536, 2 * 65536)" \
	    >"$TESTDIR/log/read-$what.out" 2>&1; then
		fail "$what: the read succeeded with two of four servers gone"
	fi
	took=$((SECONDS - start))
	[ "$took" -le 8 ] || fail "$what: the read took ${took}s to fail"
	log "$what: the read failed after ${took}s"
}

server_kill 1 STOP
server_kill 3 STOP
log "injected: servers 1 and 3 stopped (SIGSTOP)"
timed_fail stopped
grep -aqE 'block 2: .*no answer from server 1, 3' "$NLOG" ||
    fail "the plugin's log does not name servers 1 and 3: $(grep -a 'block 2' "$NLOG" | tail -2)"
log "plugin: $(grep -a -m1 -oE 'block 2: .*no answer from server 1, 3.*' "$NLOG")"

server_kill 3 CONT
server_kill 3 KILL
log "injected: server 3 killed, server 1 still stopped"
timed_fail killed

server_kill 1 CONT
server_start 3
wait_connected 1 3
heal_check nbd a 0 4 "all servers back"
log "ok"
