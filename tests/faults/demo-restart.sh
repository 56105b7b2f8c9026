#!/bin/bash
# scripts/bftblk-demo start brings back whatever part of the demo is
# down, not only a demo that is down altogether: with one server killed
# (SIGKILL), `start` starts that server again and leaves the others as
# they were, and `status` then shows every part running; the same for
# the nbdkit serving the unix socket.  The demo runs in the test's own
# directory on ports of its own; `stop` ends it, by the pids in its
# pidfiles, at exit.
# shellcheck source=tests/faults/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_build
DEMO=$SRCDIR/scripts/bftblk-demo
base=$(_pick_ports 5)
export BFTBLK_RUN_DIR=$TESTDIR/run BFTBLK_SIZE=64M \
    BFTBLK_BASE_PORT=$base BFTBLK_NBD_PORT=$((base + 4)) BUILD
PIDDIR=$BFTBLK_RUN_DIR/pid
demo()
{
	timeout 120 "$DEMO" "$@"
}
trap '_rc=$?; demo stop >"$TESTDIR/log/demo-stop.log" 2>&1; (exit $_rc); _cleanup' EXIT

pid_of()
{
	cat "$PIDDIR/$1.pid"
}

demo start >"$TESTDIR/log/demo-start-1.log" 2>&1 ||
    { cat "$TESTDIR/log/demo-start-1.log" >&2; fail "demo start failed"; }
demo status >"$TESTDIR/log/demo-status-1.log" 2>&1 ||
    { cat "$TESTDIR/log/demo-status-1.log" >&2; fail "demo not all up"; }
log "demo up: $(grep -c running "$TESTDIR/log/demo-status-1.log") parts running"

# restart_part NAME: NAME (server-I or nbdkit) killed, then `start`.
restart_part()
{
	local name=$1 pid others=() p n=$2
	pid=$(pid_of "$name")
	for p in "$PIDDIR"/server-*.pid; do
		[ "$p" = "$PIDDIR/$name.pid" ] || others+=("$(cat "$p")")
	done
	kill -KILL "$pid"
	local deadline=$((SECONDS + 10))
	while [ -e "/proc/$pid" ] && [ "$(awk '{ print $3 }' \
	    "/proc/$pid/stat" 2>/dev/null)" != Z ]; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$name did not die"
		sleep 0.1
	done
	log "$name (pid $pid) killed"
	if demo status >"$TESTDIR/log/demo-status-$n.log" 2>&1; then
		fail "status says all running with $name dead"
	fi
	grep -q "$name *not running" "$TESTDIR/log/demo-status-$n.log" ||
	    fail "status does not show $name not running"
	demo start >"$TESTDIR/log/demo-start-$n.log" 2>&1 ||
	    { cat "$TESTDIR/log/demo-start-$n.log" >&2
	      fail "start with $name dead failed"; }
	grep -qx "bftblk-demo: already running" "$TESTDIR/log/demo-start-$n.log" &&
	    fail "start said already running with $name dead"
	demo status >"$TESTDIR/log/demo-status-$n-after.log" 2>&1 ||
	    { cat "$TESTDIR/log/demo-status-$n-after.log" >&2
	      fail "status after start: not all running"; }
	[ "$(pid_of "$name")" != "$pid" ] || fail "$name was not restarted"
	for p in "${others[@]}"; do
		[ -e "/proc/$p" ] || fail "a server that ran (pid $p) is gone"
	done
	log "start brought $name back (pid $(pid_of "$name")), the other" \
	    "servers kept their pids; status: all running"
}

restart_part server-2 2
restart_part nbdkit 3
PATH=/usr/bin:$PATH nbdsh -u "nbd+unix:///?socket=$BFTBLK_RUN_DIR/nbd.sock" \
    -c 'h.pwrite(b"x" * 65536, 0); assert h.pread(65536, 0) == b"x" * 65536' ||
    fail "the restarted demo does not read back"
demo start >"$TESTDIR/log/demo-start-4.log" 2>&1 || fail "start failed"
grep -qx "bftblk-demo: already running" "$TESTDIR/log/demo-start-4.log" ||
    fail "start with everything up did not say already running"
log "ok"
