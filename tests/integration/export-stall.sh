#!/bin/bash
# A named export opened while the volume table cannot be read for a
# moment (two of four servers stopped with SIGSTOP, then continued)
# waits for the table and opens, instead of telling its client that no
# such export exists; one opened while the table stays unreadable is
# refused, and the plugin's log says the table could not be read, not
# that the volume is missing.  The plugin reads the table with a 1 s
# round timeout, three tries a second apart.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

export NBDKIT_PIN=
cluster_start 1
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name vm1 --size 64M ||
    fail "volume create"
nbdkit_start nbd timeout=1 io-timeout=1
uri="nbd+unix:///vm1?socket=$TESTDIR/nbd.sock"
PATH=/usr/bin:$PATH nbdsh -u "$uri" -c "h.pwrite(b'v' * 4096, 0)" ||
    fail "vm1 does not open with every server up"

# 1. A stall of about 2 s: the open waits it out.
server_kill 2 STOP
server_kill 3 STOP
( sleep 2; kill -CONT "${SERVER_PID[2]}" "${SERVER_PID[3]}" ) &
cont=$!
PATH=/usr/bin:$PATH timeout 60 nbdsh -u "$uri" \
    -c "assert h.pread(4096, 0) == b'v' * 4096" ||
    fail "vm1 did not open across a 2 s stall of two servers"
wait "$cont"
log "an open during a 2 s stall of two servers waited for the table"

# 2. A stall that outlasts the tries: refused, and the log says why.
server_kill 2 STOP
server_kill 3 STOP
if PATH=/usr/bin:$PATH timeout 60 nbdsh -u "$uri" -c "pass" \
    2>"$TESTDIR/refused.out"; then
	kill -CONT "${SERVER_PID[2]}" "${SERVER_PID[3]}"
	fail "vm1 opened with two of four servers stopped"
fi
kill -CONT "${SERVER_PID[2]}" "${SERVER_PID[3]}"
grep -aq "the volume table cannot be read, so export 'vm1' cannot open" \
    "$TESTDIR/log/nbdkit-nbd.log" ||
    fail "the plugin's log does not say the table was unreadable"
grep -aq "no volume is named 'vm1'" "$TESTDIR/log/nbdkit-nbd.log" &&
    fail "the plugin said vm1 does not exist"
log "an open during a longer stall is refused, the log naming the table"
log "ok"
