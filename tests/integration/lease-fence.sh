#!/bin/bash
# A lease holder cut off from the cluster, taken over, and joined again
# must not write beside the new holder (t=1, four servers, shared=off).
# Host A reaches the servers through tests/tools/cut-proxy.py, one per
# server, host B directly; see fence-lib.bash.
#
# 1. Takeover, over heal times: A writes blocks 0-7 in a loop; its links
#    are cut; B takes the volume over after a lease period and writes
#    blocks 0-7; A's links heal 0, 0.25, ... 1.5 s after B's first
#    acknowledged write, which with a 4 s lease (renewed every 1.33 s)
#    puts the heal at every point of A's renewer's cycle: before its
#    claim read, between the read and the claim write, in the write.
#    Every block must end with B's data, no write of A may be
#    acknowledged after B's first, A's writes fail with EIO and its
#    plugin says the lease was fenced or lost; B keeps the volume.
# 2. Delayed writes: A, still holding the lease, writes every block once
#    more, and the proxies let the data through and hold what would
#    complete the writes.  A is killed (so only the network still has
#    its writes), B takes over and writes half the blocks, and then the
#    held requests are delivered: the servers must refuse them, so that
#    B's blocks hold B's writes and the others A's last acknowledged
#    ones.
# 3. A partition shorter than the lease (a quarter of a 10 s one): A
#    keeps the volume and goes on writing, and a B started during the
#    partition is refused, naming A.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/integration/fence-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/fence-lib.bash"

OFFSETS=${FENCE_OFFSETS:-"0 0.25 0.5 0.75 1.0 1.25 1.5"}

cluster_start 1

# Each round has a volume of its own, so that no claim left by one
# round's holders (a lost lease is not released) slows the next.
vol=1
for off in $OFFSETS; do
	fence_takeover "$vol" "$vol" "$off"
	vol=$((vol + 1))
done

# 2. A's writes held in the network, delivered after B's takeover.
#
# A writes blocks 0-7 a while and stops, so that every block's last
# write is known and acknowledged.  Then A writes each block again
# ("L"), all at once, with the proxies armed: they let the writes' data
# (STOREs) through and hold what follows (COMPLETEs, without which a
# server keeps a value pending, not readable).  A is killed, B takes
# over and writes blocks 0-3.  Then the held requests are delivered.
# The servers must refuse them: blocks 0-3 hold B's writes, blocks 4-7
# A's last acknowledged ones.  Before the fence, blocks 4-7 took the
# late writes, completed after the takeover.
delayed()
{
	local r=$1 vol=$2 want deadline alog=$TESTDIR/writer-a-$1.acks
	local -a opts=(shared=off lease="$FENCE_LEASE" timeout="$FENCE_TIMEOUT"
	    volume-id="$vol" size="$FENCE_SIZE")
	log "---- $r: A's writes held in the network, A killed, volume $vol"
	fence_proxies_start "$r"
	NBDKIT_ARGS=$FENCE_NBDKIT_ARGS nbdkit_start "a-$r" \
	    config="$FENCE_CONF" "${opts[@]}"
	fence_writer_start "a-$r" A "$alog"
	# Every block written at least once, so that each has a last write.
	deadline=$((SECONDS + 15))
	until [ "$(awk '$1 == "ack" { b[$2] = 1 } END { print length(b) }' \
	    "$alog")" -ge 8 ]; do
		[ "$SECONDS" -lt "$deadline" ] ||
		    fail "$r: A did not write every block in 15s"
		sleep 0.1
	done
	fence_writer_stop
	! grep -q '^err' "$alog" ||
	    fail "$r: A's writes failed before any cut: $(grep -m1 '^err' "$alog")"
	# Every block's last acknowledged write, in block order.
	want=$(awk '$1 == "ack" { s[$2] = $3 }
	    END { printf "B,B,B,B,A:%d,A:%d,A:%d,A:%d", s[4], s[5], s[6], s[7] }' \
	    "$alog")
	timeout 60 "$FENCE_PY" "$FENCE_WRITER" burst --uri "$(nbd_uri "a-$r")" \
	    --tag L --arm-pids "$(IFS=,; echo "${FENCE_PROXY_PIDS[*]}")" \
	    >"$TESTDIR/writer-l-$r.out" 2>&1 ||
	    { cat "$TESTDIR/writer-l-$r.out" >&2; fail "$r: the late writer"; }
	FENCE_NCUT=$((FENCE_NCUT + 1))
	fence_proxies_wait ") cut: holding" "$FENCE_NCUT"
	grep -q '^ack' "$TESTDIR/writer-l-$r.out" &&
	    fail "$r: a write sent into the cut links was acknowledged:" \
	    "$(grep -m1 '^ack' "$TESTDIR/writer-l-$r.out")"
	apid=${NBDKIT_PID[a-$r]}
	_stop_pid "$apid" KILL
	_forget_pid "$apid"
	unset 'NBDKIT_PID[a-$r]'
	log "nbdkit a-$r killed: its last writes are only in the proxies"
	NBDKIT_ARGS=$FENCE_NBDKIT_ARGS nbdkit_start "b-$r" "${opts[@]}"
	timeout 60 "$FENCE_PY" "$FENCE_WRITER" once --uri "$(nbd_uri "b-$r")" \
	    --tag B --blocks 4 >"$TESTDIR/writer-b-$r.out" 2>&1 ||
	    { cat "$TESTDIR/writer-b-$r.out" >&2; fail "$r: B could not write"; }
	fence_heal
	log "$r: proxies delivered to the servers (bytes):" \
	    "$(fence_held_to_target | tr '\n' ' ')"
	# The held bytes reach the servers at once; give them time to be
	# handled.
	sleep 2
	fence_check_blocks "r-$r" "$vol" B "$r" "$want"
	nbdkit_stop "b-$r"
	fence_proxies_stop
}
for k in $(seq 1 "${FENCE_DELAYED_ROUNDS:-1}"); do
	delayed "delayed$k" "$vol"
	vol=$((vol + 1))
done

# 3. A partition shorter than a lease period.  A renewer that renews
# every lease/3 may miss one renewal to a cut of up to about lease/3 and
# still renew in time; so a longer lease here, cut for a quarter of it.
r=short
slease=10
scut=2.5
log "---- $r: A cut for ${scut}s of a ${slease}s lease, volume $vol"
opts=(shared=off lease="$slease" timeout="$FENCE_TIMEOUT" volume-id="$vol"
    size="$FENCE_SIZE")
alog=$TESTDIR/writer-a-$r.acks
fence_proxies_start "$r"
NBDKIT_ARGS=$FENCE_NBDKIT_ARGS nbdkit_start "a-$r" config="$FENCE_CONF" \
    "${opts[@]}"
fence_writer_start "a-$r" A "$alog"
fence_cut
sleep 0.5
# B opens the volume during the cut: it sees A's claim, and A must have
# renewed it by the time B looks again a lease period later.
blog=$TESTDIR/log/nbdkit-b-$r.log
nbdkit_env "$PLUGIN"
env "${NBDKIT_ENV[@]}" timeout $((3 * slease + 20)) nbdkit -f -v \
    -U "$TESTDIR/b-$r.sock" "$PLUGIN" config="$CLUSTER_DIR/bftblk.conf" \
    keys="$CLUSTER_DIR/client.key" "${opts[@]}" >"$blog" 2>&1 </dev/null &
bpid=$!
_track "$bpid" "nbdkit-b-$r-refused"
sleep "$(awk -v c="$scut" 'BEGIN { print c - 0.5 }')"
fence_heal
# Bounded: a B let in would serve and never exit; it says "acquired".
deadline=$((SECONDS + 3 * slease + 30))
while _alive "$bpid" && [ "$SECONDS" -lt "$deadline" ] &&
    ! grep -aq "volume $vol lease: acquired" "$blog"; do
	sleep 0.2
done
balive=0
_alive "$bpid" && balive=1
_stop_pid "$bpid" TERM
_forget_pid "$bpid"
tbx=$(fence_now)
if [ "$balive" = 1 ] || grep -aq "volume $vol lease: acquired" "$blog"; then
	fence_bad "$r: B was let in after A's short partition"
elif [ "$_STATUS" -eq 0 ] ||
    ! grep -aq "is in use by .*pid ${NBDKIT_PID[a-$r]}" "$blog"; then
	_show_log_tail "$blog"
	fence_bad "$r: B exited with status $_STATUS without naming A as" \
	    "the holder"
else
	log "$r: B refused: $(grep -ao "volume $vol is in use by [^;]*" "$blog")"
fi
# A must go on writing: 16 more acknowledged writes after B gave up.
n0=$(grep -c '^ack' "$alog")
deadline=$((SECONDS + 15))
until [ "$(grep -c '^ack' "$alog")" -ge $((n0 + 16)) ] ||
    [ "$SECONDS" -ge "$deadline" ]; do
	sleep 0.1
done
fence_writer_stop
n=$(awk -v t="$tbx" '$1 == "ack" && $5 > t' "$alog" | wc -l)
[ "$n" -ge 16 ] ||
    fence_bad "$r: A had only $n writes acknowledged after B was refused"
n=$(awk -v t="$tbx" '$1 == "err" && $4 > t' "$alog" | wc -l)
[ "$n" -eq 0 ] ||
    fence_bad "$r: $n of A's writes failed after B was refused: $(awk \
    -v t="$tbx" '$1 == "err" && $4 > t' "$alog" | head -n 1)"
if grep -aEq "volume $vol lease: (fenced|lost)" \
    "$TESTDIR/log/nbdkit-a-$r.log"; then
	fence_bad "$r: A gave up its lease over a ${scut}s partition:" \
	    "$(grep -aoE "volume $vol lease: (fenced|lost).*" \
	    "$TESTDIR/log/nbdkit-a-$r.log" | head -n 1)"
fi
log "$r: A kept the volume: $(grep -c '^ack' "$alog") writes acknowledged," \
    "$(grep -c '^err' "$alog") failed (during the cut)"
nbdkit_stop "a-$r"
fence_proxies_stop

fence_verdict
log "ok"
