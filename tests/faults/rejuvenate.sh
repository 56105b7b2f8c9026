#!/bin/bash
# Proactive recovery on a schedule (t=1, --recover-every 24s).
#
# 1. Four servers recover on their own while a writer writes and reads
#    back blocks through nbdkit without pause; every server must have
#    recovered at least once within REJUV_WAIT seconds.
# 2. From the servers' logs: no two recoveries (from "recovering:
#    restarting" to "recovery done") overlapped, each server kept its
#    PID (the restart is an execv), and the writer saw no error and no
#    block that read back other than written.
# 3. Server 3 is stopped: the others say they wait for it and none
#    recovers while it is down, for longer than a period.
# 4. Server 3 comes back with a recover-pending marker, as after a
#    crash during a recovery: it recovers at once and removes it, and
#    the others' recoveries resume.
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

EVERY=24
REJUV_WAIT=${REJUV_WAIT:-100}
export SERVER_ARGS="${SERVER_ARGS:-} --recover-every ${EVERY}s"
stopfile=$TESTDIR/writer.stop
wlog=$TESTDIR/log/writer.log

# recoveries_done I: how many "recovery done" lines server I logged.
recoveries_done()
{
	grep -ac "recovery done in" "$TESTDIR/log/server-$1.log" || true
}

cluster_start 1
declare -A PID0=()
for i in 0 1 2 3; do
	PID0[$i]=${SERVER_PID[$i]}
done
nbdkit_start nbd

# The writer: writes a block, reads back one written before, until the
# stop file appears (or 240 s pass); any error or mismatch ends it
# non-zero.
(
	PATH=/usr/bin:$PATH exec nbdsh -u "$(nbd_uri nbd)" -c "
import os, random, sys, time
BS = 65536
model = {}
rnd = random.Random($HEAL_SEED)
end = time.time() + 240
ops = 0
while time.time() < end and not os.path.exists('$stopfile'):
    b = rnd.randrange(256)
    v = rnd.randbytes(BS)
    h.pwrite(v, b * BS)
    model[b] = v
    c = rnd.choice(list(model))
    if h.pread(BS, c * BS) != model[c]:
        print('BAD READ of block %d' % c)
        sys.exit(1)
    ops += 1
    if ops % 200 == 0:
        h.flush()
        print(time.strftime('%T'), ops, 'ops')
        sys.stdout.flush()
print('writer: %d ops, no error' % ops)
"
) >"$wlog" 2>&1 </dev/null &
WPID=$!
_track "$WPID" writer
log "writer started (pid $WPID)"

deadline=$((SECONDS + REJUV_WAIT))
for i in 0 1 2 3; do
	while [ "$(recoveries_done "$i")" -lt 1 ]; do
		_alive "$WPID" || { _show_log_tail "$wlog"; fail "the writer died"; }
		[ "$SECONDS" -lt "$deadline" ] ||
		    fail "server-$i did not recover within ${REJUV_WAIT}s"
		sleep 0.5
	done
	log "server-$i recovered: $(grep -a "recovery done" \
	    "$TESTDIR/log/server-$i.log" | head -n 1)"
done

for i in 0 1 2 3; do
	# Our child of that PID never exited: the restarts were execs.
	if ! _alive "${PID0[$i]}"; then
		fail "server-$i is no longer pid ${PID0[$i]}"
	fi
done
log "every server kept its pid across its restart"

# Recovery intervals, in seconds of the day, from every log; sorted by
# start, each must end before the next begins.
intervals()
{
	local i
	for i in 0 1 2 3; do
		awk -v s="$i" '
		function secs(t,  a) { split(t, a, ":"); return a[1] * 3600 + a[2] * 60 + a[3] }
		/recovering: (restarting|scrubbing)/ && start == "" { match($0, /[0-9][0-9]:[0-9][0-9]:[0-9][0-9](\.[0-9]+)?/); start = secs(substr($0, RSTART, RLENGTH)) }
		/recovery done in/ && start != "" { match($0, /[0-9][0-9]:[0-9][0-9]:[0-9][0-9](\.[0-9]+)?/); print start, secs(substr($0, RSTART, RLENGTH)), s; start = "" }
		END { if (start != "") print start, 1e9, s }
		' "$TESTDIR/log/server-$i.log"
	done | sort -n
}
intervals >"$TESTDIR/intervals"
awk '{ if (NR > 1 && $1 < end) { printf "server %s began at %s before server %s ended at %s\n", $3, $1, who, end; bad = 1 }
      end = $2; who = $3 } END { exit bad }' "$TESTDIR/intervals" ||
    fail "two recoveries overlapped"
log "$(wc -l <"$TESTDIR/intervals") recoveries, none overlapping"

# starts I: how many recoveries server I decided on.
starts()
{
	grep -ac "recovering: restarting" "$TESTDIR/log/server-$1.log" || true
}

server_kill 3
# A decision made just before server 3 went may still be logged.
sleep 1
declare -A off3=()
for i in 0 1 2; do
	off3[$i]=$(starts "$i")
done
sleep "$EVERY"
waited=0
for i in 0 1 2; do
	[ "$(starts "$i")" = "${off3[$i]}" ] ||
	    fail "server-$i began a recovery while server 3 was down"
	grep -aq "recovery due, waiting: server 3 unreachable" \
	    "$TESTDIR/log/server-$i.log" && waited=$((waited + 1))
done
[ "$waited" -ge 1 ] || fail "no server said it waits for server 3"
log "server 3 down ${EVERY}s: $waited servers waited for it, none recovered"

# As if it had crashed in a recovery: the marker makes it recover now.
marker=$TESTDIR/data/server-3/recover-pending
echo "decided $(date +%s)" >"$marker"
heal_mark 3
server_start 3
deadline=$((SECONDS + 30))
until heal_since 3 | grep -aq "recovery done in"; do
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "server-3 did not finish the recovery its marker asked for"
	sleep 0.5
done
[ ! -e "$marker" ] || fail "server-3 recovered but kept its marker"
log "server-3 recovered at start, as its marker asked"
deadline=$((SECONDS + EVERY + 20))
until [ "$(starts 0)" -gt "${off3[0]}" ] ||
    [ "$(starts 1)" -gt "${off3[1]}" ] ||
    [ "$(starts 2)" -gt "${off3[2]}" ]; do
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "no recovery within $((EVERY + 20))s of server 3's return"
	sleep 0.5
done
log "recoveries resumed once server 3 was back"

touch "$stopfile"
deadline=$((SECONDS + 30))
while _alive "$WPID" && [ "$SECONDS" -lt "$deadline" ]; do
	sleep 0.2
done
_alive "$WPID" && fail "the writer did not stop"
_reap "$WPID"
_forget_pid "$WPID"
[ "$_STATUS" -eq 0 ] || { _show_log_tail "$wlog"; fail "the writer failed"; }
log "$(tail -n 1 "$wlog")"
intervals >"$TESTDIR/intervals"
awk '{ if (NR > 1 && $1 < end) bad = 1; end = $2 } END { exit bad }' \
    "$TESTDIR/intervals" || fail "two recoveries overlapped"
log "ok"
