#!/bin/bash
# The server as systemd runs it (t=1): readiness and log lines.
#
# Server 0 is restarted with NOTIFY_SOCKET naming a datagram socket of
# the test's own (a small Python listener standing in for systemd) and
# with JOURNAL_STREAM naming its own stderr, the log file, as systemd
# does when stderr is the journal.  It must send READY=1 once it
# listens, RELOADING=1 (with MONOTONIC_USEC) and READY=1 again around a
# SIGHUP reload, and STOPPING=1 on SIGTERM; its log lines must then start
# with a <N> priority and carry no time, while the other servers' lines
# carry the date and time.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cluster_start 1
server_kill 0 TERM

notify=$TESTDIR/notify.sock
msgs=$TESTDIR/notify.msgs
: >"$msgs"
# One line per datagram, its newlines as '|'; exits by itself after 120 s.
python3 - "$notify" "$msgs" <<'PY' &
import signal, socket, sys, time
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(1)
end = time.monotonic() + 120
with open(sys.argv[2], 'a', buffering=1) as out:
    while time.monotonic() < end:
        try:
            m = s.recv(4096)
        except socket.timeout:
            continue
        out.write(m.decode().replace('\n', '|') + '\n')
PY
_track $! notify-listener
for ((k = 0; k < 100; k++)); do
	[ -S "$notify" ] && break
	sleep 0.1
done
[ -S "$notify" ] || fail "the notify listener did not bind $notify"

# wait_msg N PATTERN: waits for line N of the messages to match.
wait_msg()
{
	local n=$1 pattern=$2 k
	for ((k = 0; k < 100; k++)); do
		if sed -n "${n}p" "$msgs" | grep -qE -- "$pattern"; then
			return 0
		fi
		sleep 0.1
	done
	cat "$msgs" >&2
	fail "notify message $n is not /$pattern/"
}

logf=$TESTDIR/log/server-0.log
offset=$(stat -c %s "$logf")
NOTIFY_SOCKET=$notify JOURNAL_STREAM=$(stat -c '%d:%i' "$logf") \
    server_start 0
wait_msg 1 '^READY=1\|STATUS=listening on 127\.0\.0\.1:[0-9]+$'
log "READY=1 after listening"

kill -s HUP "${SERVER_PID[0]}"
wait_msg 3 '^READY=1\|STATUS=listening on'
sed -n 2p "$msgs" | grep -qE '^RELOADING=1\|MONOTONIC_USEC=[0-9]+$' ||
    fail "no RELOADING=1 before the reload's READY=1: $(cat "$msgs")"
log "RELOADING=1, READY=1 around SIGHUP"

server_kill 0 TERM
wait_msg 4 '^STOPPING=1$'
log "STOPPING=1 on SIGTERM"

# The journal's lines: a priority, the program, no time.
tail -c "+$((offset + 1))" "$logf" | grep -v '^== ' >"$TESTDIR/journal.txt"
grep -qx '<6>bftblk-server: listening on .*' "$TESTDIR/journal.txt" ||
    fail "no <6> listening line in the journal's lines"
grep -qx '<6>bftblk-server: reload: 1 clients allowed in' \
    "$TESTDIR/journal.txt" || fail "no <6> reload line"
bad=$(grep -cvE '^<[3-7]>bftblk-server: ' "$TESTDIR/journal.txt" || true)
[ "$bad" -eq 0 ] || fail "$bad journal lines without a <N> prefix"
log "journal lines: $(wc -l <"$TESTDIR/journal.txt"), each with <N>"

# Elsewhere every line has the date and time.
grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z bftblk-server: listening on ' \
    "$TESTDIR/log/server-1.log" || fail "server-1's lines lack the date"
bad=$(grep -v '^== ' "$TESTDIR/log/server-1.log" |
    grep -cvE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z bftblk-server: ' ||
    true)
[ "$bad" -eq 0 ] || fail "$bad of server-1's lines lack the date and time"
log "PASS"
