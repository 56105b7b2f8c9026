#!/bin/bash
# A server that lost its disk after a lease takeover rebuilds the
# blocks the old holder wrote and the new one never rewrote (t=1).
# The rebuild adopts them through the server's own STORE and COMPLETE,
# under the old holder's lease generation, after it adopted the new
# holder's claim: lease fencing must not refuse it (server/handler.h,
# adopting), or those blocks would stay missing on the rebuilt server.
#
# 1. Holder A (shared=off, volume 0) writes blocks 0..63 and is killed
#    with SIGKILL; holder B takes the volume over (a new generation)
#    and writes blocks 0..15.  B is stopped.
# 2. Server 0 is wiped and rebuilds: every one of the 64 blocks, none
#    refused as fenced.
#    (A wiped server adopts its volumes in id order, the lease
#    registers last, so this pass meets no fence; the next one does.)
# 3. Bit rot after the takeover: bytes flipped in server 2's log, most
#    of them in A's fragments, while server 2 holds B's claim.  The
#    scrub's repairs adopt A's blocks under the old generation: every
#    damaged fragment must be repaired, none refused as fenced.
# 4. With server 1 stopped and server 3 wiped, reads need servers 0's
#    and 2's fragments: blocks 0..15 read B's data, 16..63 A's.
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

N=64
LEASE=2
cluster_start 1
nbdkit_start a shared=off lease=$LEASE
heal_write a a 0 "$N"
_stop_pid "${NBDKIT_PID[a]}" KILL
_forget_pid "${NBDKIT_PID[a]}"
unset 'NBDKIT_PID[a]'
log "holder A killed with its lease held"
NBDKIT_ARGS="${NBDKIT_ARGS:-} -v" nbdkit_start b shared=off lease=$LEASE
grep -aq "taking the volume over" "$TESTDIR/log/nbdkit-b.log" ||
    fail "B did not take the volume over from A"
grep -aoq "volume 0 lease: acquired, generation [2-9]" \
    "$TESTDIR/log/nbdkit-b.log" ||
    fail "B's lease is not of a newer generation: $(grep -a 'lease: acquired' "$TESTDIR/log/nbdkit-b.log")"
heal_write b b 0 16
nbdkit_stop b

heal_wipe 0
heal_wait_done 0
[ "$HEAL_REBUILT" -ge "$N" ] ||
    fail "server-0 rebuilt $HEAL_REBUILT blocks, expected at least $N"
if heal_since 0 | grep -aq "fenced"; then
	fail "server-0's rebuild was refused as fenced: $(heal_since 0 | grep -a -m3 fenced)"
fi

heal_rot 2
heal_mark 2
"$ADMIN" scrub --dir "$CLUSTER_DIR" >"$TESTDIR/log/scrub.out" 2>&1 ||
    { cat "$TESTDIR/log/scrub.out"; fail "bftblk scrub failed"; }
deadline=$((SECONDS + HEAL_WAIT))
until heal_since 2 | grep -aq 'scrub: done'; do
	[ "$SECONDS" -lt "$deadline" ] || fail "server 2's scrub did not finish"
	sleep 0.2
done
damaged=$(heal_since 2 | grep -ac 'is damaged; no longer served')
[ "$damaged" -ge 1 ] || fail "the scrub found no damage in server 2's log"
until [ "$(heal_since 2 | grep -ac 'scrub: block [0-9]* repaired')" -ge "$damaged" ]; do
	if [ "$SECONDS" -ge "$deadline" ] || heal_since 2 | grep -aq fenced; then
		fail "server 2 repaired $(heal_since 2 | grep -ac 'scrub: block [0-9]* repaired') of $damaged damaged fragments: $(heal_since 2 | grep -a -m3 'fenced\|refused')"
	fi
	sleep 0.2
done
log "server 2 repaired all $damaged damaged fragments after the takeover"

server_kill 1
heal_wipe 3
nbdkit_start r shared=on
heal_check r b 0 16 "servers 0 (rebuilt), 2 (repaired) and 3 (wiped)"
heal_check r a 16 $((N - 16)) "servers 0 (rebuilt), 2 (repaired) and 3 (wiped)"
nbdkit_stop r
log "ok"
