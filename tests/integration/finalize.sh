#!/bin/bash
# bftblk cluster finalize and the releases in bftblk status, on one
# release (the mixed cluster is tests/faults/upgrade.sh's):
# 1. A new cluster: status says every server runs this release and the
#    cluster is not finalized; --json has each server's release_name.
# 2. Finalize refuses while a server is down, naming it, and tells no
#    server anything.
# 3. With all up it finalizes every server; again, it changes nothing.
#    Status says finalized; each data directory is format 8 and names
#    the release on the line 0.2.0 stops at.
# 4. A restarted server is still finalized, and I/O works throughout.
# 5. A read-only key may not finalize.
# Throughout, libbftblk's bftblk__cluster_finalized (through the test
# client) answers 0 before, an error while a server is down and none
# said no, and 1 after; an unknown feature is an error.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cluster_start 1
nbdkit_start nbd
ver=$(sed -n 's/^#define BFTBLK_VERSION_\(MAJOR\|MINOR\|PATCH\)\t*\([0-9]*\)/\2/p' \
    "$SRCDIR/lib/bftblk.h" | paste -sd.)

status_run()
{
	local name=$1
	shift
	RC=0
	"$ADMIN" status --dir "$CLUSTER_DIR" --timeout 2 "$@" \
	    >"$TESTDIR/log/$name.out" 2>"$TESTDIR/log/$name.err" || RC=$?
	sed "s/^/  $name: /" "$TESTDIR/log/$name.out" >&2
}

finalize_run()
{
	local name=$1
	shift
	RC=0
	"$ADMIN" cluster finalize --dir "$CLUSTER_DIR" "$@" \
	    >"$TESTDIR/log/$name.out" 2>&1 || RC=$?
	sed "s/^/  $name: /" "$TESTDIR/log/$name.out" >&2
}

# lib_finalized WANT: bftblk__cluster_finalized for clone entries says
# WANT ("finalized 0", "finalized 1" or "error").
TESTCLIENT=$BUILD/tests/bftblk-testclient
lib_finalized()
{
	local out
	out=$("$TESTCLIENT" finalized --config "$CLUSTER_DIR/bftblk.conf" \
	    --keys "$CLUSTER_DIR/client.key" 2>>"$TESTDIR/log/testclient.log") ||
	    true
	log "bftblk__cluster_finalized: $out"
	[[ "$out" == "$1"* ]] || fail "bftblk__cluster_finalized said" \
	    "'$out', not '$1'"
}

write_some()
{
	nbdsh_run nbd "
import os
for b in range(4):
    h.pwrite(os.urandom(65536), b * 65536)
h.flush()
" || fail "writes failed ($1)"
}

log "step 1: a new cluster, not finalized"
write_some "step 1"
status_run new
grep -qx "releases: $ver on servers 0 1 2 3; not finalized" \
    "$TESTDIR/log/new.out" || fail "no releases line for a new cluster"
status_run new-json --json
python3 - "$TESTDIR/log/new-json.out" "$ver" <<'PY' || fail "JSON releases"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["releases"] == {"mixed": False, "newest": sys.argv[2],
    "finalized": False, "finalized_servers": 0}, r["releases"]
for s in r["servers"]:
    assert s["release_name"] == sys.argv[2] and s["level"] >= 1, s
    assert s["finalized"] == 0, s
PY

lib_finalized "finalized 0"

log "step 2: refused with server 3 down"
server_kill 3
finalize_run down
[ "$RC" -eq 1 ] || fail "finalize with a server down exited $RC"
grep -q "^server 3 .*unreachable" "$TESTDIR/log/down.out" ||
    fail "finalize did not name server 3"
grep -q "^not finalized: 3 of 4 servers run release $ver" \
    "$TESTDIR/log/down.out" || fail "finalize did not say why not"
for i in 0 1 2; do
	grep -q "^format = 7$" "$TESTDIR/data/server-$i/identity" ||
	    fail "server $i was finalized by a refused finalize"
done
lib_finalized "finalized 0"
server_start 3

log "step 3: finalize, twice"
finalize_run first
[ "$RC" -eq 0 ] || fail "finalize exited $RC"
grep -q "^cluster finalized at level 1" "$TESTDIR/log/first.out" ||
    fail "finalize did not say it finalized"
finalize_run again
[ "$RC" -eq 0 ] || fail "finalize again exited $RC"
[ "$(grep -c "already finalized" "$TESTDIR/log/again.out")" -eq 4 ] ||
    fail "finalize again did not see 4 finalized servers"
status_run final
grep -qx "releases: $ver on servers 0 1 2 3; finalized at level 1" \
    "$TESTDIR/log/final.out" || fail "status does not say finalized"
for ((i = 0; i < CLUSTER_N; i++)); do
	id=$TESTDIR/data/server-$i/identity
	grep -q "^format = 8$" "$id" || fail "server $i: not format 8"
	[ "$(sed -n 2p "$id")" = "finalized for bftblk release $ver: older bftblk servers must not open this directory = 1" ] ||
	    fail "server $i: line 2 is $(sed -n 2p "$id")"
	grep -q "finalized at level 1" "$TESTDIR/log/server-$i.log" ||
	    fail "server $i did not log its finalize"
done

lib_finalized "finalized 1"
"$TESTCLIENT" finalized --config "$CLUSTER_DIR/bftblk.conf" \
    --keys "$CLUSTER_DIR/client.key" --count 99 >"$TESTDIR/log/feat99.out" \
    2>&1 && fail "an unknown feature was answered"
grep -q "unknown feature 99" "$TESTDIR/log/feat99.out" ||
    fail "an unknown feature: $(cat "$TESTDIR/log/feat99.out")"

log "step 4: a restarted server is still finalized; I/O goes on"
server_kill 2
lib_finalized "error"
server_start 2
status_run restarted --json
python3 - "$TESTDIR/log/restarted.out" <<'PY' || fail "server 2 forgot"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["releases"]["finalized"] is True, r["releases"]
assert all(s["finalized"] == 1 for s in r["servers"]), r["servers"]
PY
write_some "step 4"

log "step 5: a read-only key may not finalize"
client_add reader ro
finalize_run ro --keys "$CLUSTER_DIR/reader.key"
[ "$RC" -eq 1 ] || fail "a read-only finalize exited $RC"
grep -q "FINALIZE refused: " "$TESTDIR/log/ro.out" ||
    fail "a read-only finalize was not refused by the servers"
log "ok"
