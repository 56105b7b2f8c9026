#!/bin/bash
# bftblk status (t=1): the cluster's health from every server's STATUS.
#
# 1. A healthy cluster after the writer wrote blocks 0-7 and flushed:
#    "health: OK", exit 0, every server reachable holding 8 blocks (the
#    slowest server's COMPLETEs may trail the write by a moment, so the
#    test waits up to 10 s for that).  --json parses, has the n servers
#    and the same figures.  A read-only client's key works as well.
# 2. Server 2 stopped: "health: AT RISK (server 2 unreachable: no fault
#    left to spare)", exit 1, server 2's line says unreachable and why;
#    the JSON has it with "reachable": false.
# 3. Server 3 stopped too: "health: UNAVAILABLE", exit 2; the JSON still
#    lists the n servers.
# 4. Usage errors exit 3.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cluster_start 1
nbdkit_start nbd

# status_run NAME ARGS...: runs bftblk status into $TESTDIR/log/NAME.out
# and sets RC to its exit status.
status_run()
{
	local name=$1
	shift
	RC=0
	"$ADMIN" status --dir "$CLUSTER_DIR" --timeout 2 "$@" \
	    >"$TESTDIR/log/$name.out" 2>"$TESTDIR/log/$name.err" || RC=$?
	sed "s/^/  $name: /" "$TESTDIR/log/$name.out" >&2
}

nbdsh_run nbd "
import os
for b in range(8):
    h.pwrite(os.urandom(65536), b * 65536)
h.flush()
" || fail "the writer's writes failed"

log "step 1: a healthy cluster"
deadline=$((SECONDS + 10))
until status_run healthy && [ "$RC" -eq 0 ]; do
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "status did not say OK within 10s (exit $RC)"
	sleep 0.5
done
out=$TESTDIR/log/healthy.out
[ "$(head -n 1 "$out")" = "health: OK" ] || fail "the first line is not" \
    "'health: OK'"
for ((i = 0; i < CLUSTER_N; i++)); do
	grep -q "^server $i 127.0.0.1:$((CLUSTER_BASE_PORT + i)): reachable, release 0\.3\.0, version 7, up [0-9]*s, 8 blocks, .* on disk" \
	    "$out" || fail "no healthy line for server $i"
done
status_run healthy-json --json
[ "$RC" -eq 0 ] || fail "status --json exited $RC"
python3 -c 'import json,sys; json.load(sys.stdin)' \
    <"$TESTDIR/log/healthy-json.out" || fail "status --json is not JSON"
python3 - "$TESTDIR/log/healthy-json.out" "$CLUSTER_N" <<'PY' ||
import json, sys
r = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
assert r['health'] == 'OK' and r['reason'] == '', r
assert r['n'] == n and r['t'] == 1 and r['reachable'] == n, r
assert len(r['servers']) == n, r
for i, s in enumerate(r['servers']):
    assert s['index'] == i and s['reachable'] is True, s
    assert s['server_index'] == i and s['blocks_held'] == 8, s
    assert s["version"] == 7 and s['bytes_total'] > 0, s
    assert s['rebuild_state'] == 0 and s['rebuild_state_name'] == 'idle', s
    for k in ('uptime_s', 'bytes_live', 'damaged_records',
              'repaired_records', 'rebuild_done', 'rebuild_total',
              'rebuild_bytes', 'rebuild_rate', 'scrub_done', 'scrub_total'):
        assert isinstance(s[k], int), (k, s)
    assert s['recovering'] == 0 and s['recoveries'] == 0, s
print('json: %d servers, health %s' % (n, r['health']))
PY
    fail "status --json does not hold what it should"
client_add reader ro
status_run reader --keys "$CLUSTER_DIR/reader.key"
[ "$RC" -eq 0 ] || fail "status with a read-only key exited $RC"

log "step 2: server 2 stopped"
server_kill 2
status_run one-down
[ "$RC" -eq 1 ] || fail "status with server 2 down exited $RC, not 1"
line=$(head -n 1 "$TESTDIR/log/one-down.out")
[ "$line" = "health: AT RISK (server 2 unreachable: no fault left to spare)" ] ||
    fail "unexpected health line: $line"
grep -q "^server 2 127.0.0.1:[0-9]*: unreachable (.*)" \
    "$TESTDIR/log/one-down.out" || fail "server 2's line does not say why"
grep -q "^cluster: t=1 n=4, 3 of 4 servers answer, I/O needs 3" \
    "$TESTDIR/log/one-down.out" || fail "no cluster line"
status_run one-down-json --json
[ "$RC" -eq 1 ] || fail "status --json with server 2 down exited $RC"
python3 - "$TESTDIR/log/one-down-json.out" <<'PY' ||
import json, sys
r = json.load(open(sys.argv[1]))
assert r['health'] == 'AT RISK', r
assert 'server 2 unreachable' in r['reason'], r
assert len(r['servers']) == 4 and r['reachable'] == 3, r
s = r['servers'][2]
assert s['reachable'] is False and s['error'], s
assert 'blocks_held' not in s, s
PY
    fail "status --json with server 2 down is wrong"

log "step 3: servers 2 and 3 stopped"
server_kill 3
status_run two-down
[ "$RC" -eq 2 ] || fail "status with two servers down exited $RC, not 2"
grep -q "^health: UNAVAILABLE (2 of 4 servers answer, I/O needs 3; servers 2, 3 unreachable)" \
    "$TESTDIR/log/two-down.out" ||
    fail "unexpected health line: $(head -n 1 "$TESTDIR/log/two-down.out")"
status_run two-down-json --json
[ "$RC" -eq 2 ] || fail "status --json with two servers down exited $RC"
python3 -c 'import json,sys; r = json.load(sys.stdin)
assert r["health"] == "UNAVAILABLE" and len(r["servers"]) == 4, r' \
    <"$TESTDIR/log/two-down-json.out" || fail "status --json is wrong"

log "step 4: usage errors"
rc=0
"$ADMIN" status >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 3 ] || fail "status without --dir exited $rc, not 3"
rc=0
"$ADMIN" status --dir "$CLUSTER_DIR" --timeout 0 >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 3 ] || fail "status --timeout 0 exited $rc, not 3"
rc=0
"$ADMIN" status --dir "$TESTDIR/nowhere" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 3 ] || fail "status without a bftblk.conf exited $rc, not 3"
log "ok"
