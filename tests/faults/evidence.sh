#!/bin/bash
# A lying or dead server shows up by name in the plugin's log, without
# nbdkit -v (t=1).
#
# 1. Server 0 in corrupt-fragment mode: its fragments fail their hash.
#    After ~12 s of reads the plugin's log must name server 0 with bad
#    fragments, and no honest server; so must its stats file, and
#    `bftblk status --client-stats` must count server 0 as a fault (AT
#    RISK with t = 1) although server 0 answers STATUS like the others.
# 2. Server 2 killed: the log says its connection was lost; restarted:
#    it says it is connected again.
. "$(dirname "${BASH_SOURCE[0]}")/byz-lib.bash"

cluster_start 1
byz_stop 0
byz_start 0 corrupt-fragment
STATS=$TESTDIR/client.stats
nbdkit_start nbd "stats-file=$STATS"
heal_py="
import random, time
BS = 65536
for b in range(16):
    h.pwrite(random.Random(b).randbytes(BS), b * BS)
end = time.time() + 12
n = 0
while time.time() < end:
    for b in range(16):
        assert h.pread(BS, b * BS) == random.Random(b).randbytes(BS)
        n += 1
print('%d reads, all correct' % n)
"
log "reading for 12 s with server 0 corrupting its fragments"
nbdsh_run nbd "$heal_py" || fail "reads failed or returned wrong data"
NLOG=$TESTDIR/log/nbdkit-nbd.log
grep -aq 'server 0: [0-9]* bad fragments' "$NLOG" ||
    fail "the plugin's log does not name server 0's bad fragments"
log "plugin: $(grep -a -m1 -o 'server 0: [0-9]* bad fragments.*' "$NLOG")"
if grep -aE 'server [123]: [0-9]+ bad fragments' "$NLOG"; then
	fail "the plugin blames an honest server"
fi
[ -f "$STATS" ] || fail "no stats file after 12 s"
grep -q '^server\.0\.bad-fragments = [1-9]' "$STATS" ||
    fail "the stats file counts no bad fragment of server 0"
! grep -E '^server\.[123]\.bad-fragments = [1-9]' "$STATS" ||
    fail "the stats file blames an honest server"
rc=0
out=$("$ADMIN" status --dir "$CLUSTER_DIR" --client-stats "$STATS") || rc=$?
log "status: $(head -1 <<<"$out")"
[ "$rc" -eq 1 ] || fail "bftblk status exited $rc, expected 1: $out"
grep -q "^health: AT RISK (server 0 lied to client 'client' in its last" \
    <<<"$out" || fail "bftblk status does not count server 0 as faulty: $out"
grep -q "^  server 0: connected, [0-9]* replies, 0 disconnects, [0-9]* bad fragments" \
    <<<"$out" || fail "bftblk status does not show what the client saw: $out"

server_kill 2 KILL
for ((i = 0; i < 50; i++)); do
	grep -aq 'server 2: connection lost' "$NLOG" && break
	nbdsh_run nbd "h.pread(65536, 0)" >/dev/null
	sleep 0.1
done
grep -aq 'server 2: connection lost' "$NLOG" ||
    fail "the plugin did not log that server 2 went away"
server_start 2
wait_connected 2
for ((i = 0; i < 50; i++)); do
	grep -aq 'server 2: connected again' "$NLOG" && break
	sleep 0.1
done
grep -aq 'server 2: connected again' "$NLOG" ||
    fail "the plugin did not log that server 2 came back"
log "plugin: $(grep -a -m1 -o 'server 2: connection lost.*' "$NLOG"); then connected again"
byz_stop 0
log "ok"
