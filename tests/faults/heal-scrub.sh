#!/bin/bash
# Bit rot: bytes flipped in a running server's log are found by a scrub,
# never served, and repaired from the peers (t=1).
#
# 1. 120 blocks written; server 2's log segment gets bytes flipped at 12
#    places while it runs.
# 2. bftblk scrub: server 2 must find damaged fragments, drop them and
#    rebuild them; bftblk status --json must then show as many repaired
#    records as damaged ones for server 2, and a healthy cluster.
# 3. Server 0 stopped and server 1 wiped: reads need server 2's
#    fragments, and every block reads back exactly.
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

cluster_start 1
nbdkit_start nbd
heal_write nbd a 0 120
heal_rot 2

heal_mark 2
"$ADMIN" scrub --dir "$CLUSTER_DIR" >"$TESTDIR/log/scrub.out" 2>&1 ||
    { cat "$TESTDIR/log/scrub.out"; fail "bftblk scrub failed"; }
grep -q '^4 of 4 servers scrubbing' "$TESTDIR/log/scrub.out" ||
    fail "bftblk scrub: $(cat "$TESTDIR/log/scrub.out")"
LOG2=$TESTDIR/log/server-2.log
deadline=$((SECONDS + HEAL_WAIT))
until tail -c "+$((${HEAL_OFF[2]} + 1))" "$LOG2" | grep -aq 'scrub: done'; do
	[ "$SECONDS" -lt "$deadline" ] || fail "server 2's scrub did not finish"
	sleep 0.2
done
damaged=$(tail -c "+$((${HEAL_OFF[2]} + 1))" "$LOG2" | grep -ac 'is damaged; no longer served')
[ "$damaged" -ge 1 ] || fail "the scrub found no damage in server 2's log"
log "server 2's scrub found $damaged damaged fragments"
until [ "$(grep -ac 'scrub: block [0-9]* repaired' "$LOG2")" -ge "$damaged" ]; do
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "server 2 repaired $(grep -ac 'scrub: block [0-9]* repaired' "$LOG2") of $damaged"
	sleep 0.2
done
"$ADMIN" status --dir "$CLUSTER_DIR" --json >"$TESTDIR/log/status.json" 2>&1 ||
    { cat "$TESTDIR/log/status.json"; fail "bftblk status is not OK after the repair"; }
PATH=/usr/bin:$PATH python3 - "$TESTDIR/log/status.json" "$damaged" <<'PY' ||
import json, sys
r = json.load(open(sys.argv[1]))
s = r['servers'][2]
want = int(sys.argv[2])
assert r['health'] == 'OK', r
assert s['damaged_records'] >= want and \
    s['repaired_records'] == s['damaged_records'], s
print('server 2: %d damaged, %d repaired' % (s['damaged_records'],
      s['repaired_records']))
PY
    fail "status: $(cat "$TESTDIR/log/status.json")"
log "status: health OK, server 2's damaged records all repaired"

server_kill 0
heal_wipe 1
heal_check nbd a 0 120 "servers 1 (wiped), 2 (repaired) and 3"
log "ok"
