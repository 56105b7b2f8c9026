#!/bin/bash
# FLUSH syncs for writers only (t=1).  A FLUSH makes the sender's writes
# durable; a sync waits for the disk on the server's event loop, every
# client with it, so one from a client that cannot write (a read-only
# key, which has no writes to make durable) is answered without one.
#
# 1. Blocks are written through nbdkit, leaving segments to sync.
# 2. A read-only key sends 300 FLUSHes to server 0, all answered ok:
#    its bftblk_server_store_syncs_total (Prometheus, --metrics) must
#    not move, and bftblk_server_unsynced_flushes_total must count 300.
# 3. The control: 5 FLUSHes from the writer's key are 5 syncs.
# 4. Four writer FLUSH loops at once beside a writer on the disk: every
#    FLUSH is answered ok, in order, and the syncs (which run off the
#    event loop, one at a time, later FLUSHes waiting for the next) are
#    no more than the FLUSHes; the writer's data reads back.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v curl >/dev/null || skip "no curl (apt-get install curl)"
TC=$BUILD/tests/bftblk-testclient
[ -x "$TC" ] || fail "$TC is missing: run make first"

MADDR=127.0.0.1:$(_pick_ports 1)
# shellcheck disable=SC2034 # read by server_start
SERVER_ARGS_0="--metrics $MADDR"
cluster_start 1
CONF=$CLUSTER_DIR/bftblk.conf
client_add reader ro
nbdkit_start nbd

# metric NAME: server 0's value of NAME.
metric()
{
	curl -sS -f --max-time 5 "http://$MADDR/metrics" |
	    awk -v m="bftblk_server_$1" '$1 == m { print $2 }'
}

log "step 1: writes to sync"
nbdsh_run nbd "
for b in range(16):
    h.pwrite(bytes([b + 1]) * 65536, b * 65536)
" || fail "writing"
s0=$(metric store_syncs_total)
[ -n "$s0" ] || fail "no store_syncs_total from server 0"

log "step 2: 300 FLUSHes from a read-only key"
"$TC" flood --mode flush --config "$CONF" --keys "$CLUSTER_DIR/reader.key" \
    --servers 0 --count 300 >"$TESTDIR/log/flush-reader.log" 2>&1 ||
    { cat "$TESTDIR/log/flush-reader.log" >&2; fail "reader's FLUSHes"; }
cat "$TESTDIR/log/flush-reader.log" >&2
grep -q "^flood: 300 answered ok, 0 refused" "$TESTDIR/log/flush-reader.log" ||
    fail "the reader's FLUSHes were not all answered ok"
s1=$(metric store_syncs_total)
u1=$(metric unsynced_flushes_total)
log "syncs $s0 -> $s1, unsynced flushes $u1"
[ "$s1" = "$s0" ] || fail "the reader's FLUSHes synced the log ($s0 -> $s1)"
[ "$u1" = 300 ] || fail "unsynced_flushes_total is ${u1:-missing}, not 300"

log "step 3: the writer's FLUSHes sync"
"$TC" flood --mode flush --config "$CONF" --keys "$CLUSTER_DIR/client.key" \
    --servers 0 --count 5 >"$TESTDIR/log/flush-writer.log" 2>&1 ||
    { cat "$TESTDIR/log/flush-writer.log" >&2; fail "writer's FLUSHes"; }
s2=$(metric store_syncs_total)
[ "$s2" -ge $((s1 + 5)) ] || fail "5 writer FLUSHes made $((s2 - s1)) syncs"
log "the writer's 5 FLUSHes made $((s2 - s1)) syncs"

log "step 4: four FLUSH loops beside a writer"
pids=()
for k in 1 2 3 4; do
	"$TC" flood --mode flush --config "$CONF" \
	    --keys "$CLUSTER_DIR/client.key" --servers 0 --hold 5 \
	    >"$TESTDIR/log/flush-loop-$k.log" 2>&1 & pids+=($!)
done
nbdsh_run nbd "
import time
start = time.monotonic()
n = 0
while time.monotonic() - start < 4 and n < 5000:
    h.pwrite(bytes([n % 251 + 1]) * 65536, (n % 32) * 65536)
    h.flush()
    n += 1
for b in range(32):
    last = max(i for i in range(n) if i % 32 == b) if n > b else None
    if last is not None:
        assert h.pread(65536, b * 65536) == bytes([last % 251 + 1]) * 65536
print('writer: %d writes with flush beside the loops, all read back' % n)
" >"$TESTDIR/log/writer.log" 2>&1 ||
    { cat "$TESTDIR/log/writer.log" >&2; fail "the writer beside the loops"; }
cat "$TESTDIR/log/writer.log" >&2
total=0
for k in 1 2 3 4; do
	wait "${pids[$((k - 1))]}" || fail "FLUSH loop $k failed"
	ok=$(sed -n 's/^flood: \([0-9]*\) answered ok, 0 refused.*/\1/p' \
	    "$TESTDIR/log/flush-loop-$k.log")
	[ -n "$ok" ] && [ "$ok" -gt 0 ] ||
	    { cat "$TESTDIR/log/flush-loop-$k.log" >&2;
	    fail "FLUSH loop $k: not every FLUSH answered ok"; }
	total=$((total + ok))
done
s3=$(metric store_syncs_total)
log "$total FLUSHes from four loops (and the writer's), $((s3 - s2)) syncs"
[ $((s3 - s2)) -gt 0 ] || fail "no sync for the writers' FLUSHes"
log "ok"
