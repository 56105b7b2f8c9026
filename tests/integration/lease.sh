#!/bin/bash
# One writer per volume (lib/lease.c), t=1, with shared=off and a 2 s
# lease:
#
# 1. A second read-write nbdkit on a held volume is refused, naming the
#    holder; one on another volume, and one with shared=on, are not.
# 2. After the holder is killed with SIGKILL, a new opener gets the
#    volume within two lease periods (it waits one to see no renewal).
# 3. A holder stopped (SIGSTOP) for longer than its lease is taken over;
#    once it runs again, its writes fail with EIO instead of landing
#    beside the new holder's.
# 4. A holder stopped cleanly releases the lease: the next opener gets
#    it at once.
# The nbdkits serve volume 0 pinned (volume-id=0), whose handle takes
# the lease as nbdkit starts; a plugin serving volumes by name takes a
# volume's lease while connections to it are open (volumes.sh).
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

LEASE=2
# -v: the plugin's lease lines (acquired, released) are debug lines.
NBDKIT_ARGS="${NBDKIT_ARGS:-} -v"
cluster_start 1
nbdkit_start a shared=off lease=$LEASE volume-id=0
grep -aq "volume 0 lease: acquired" "$TESTDIR/log/nbdkit-a.log" ||
    fail "nbdkit a does not say it holds the lease"

# refused NAME ARGS...: an nbdkit with ARGS must exit non-zero, saying
# who holds the volume.
refused()
{
	local name=$1 logf
	shift
	logf=$TESTDIR/log/nbdkit-$name.log
	nbdkit_env "$PLUGIN"
	if env "${NBDKIT_ENV[@]}" timeout 60 nbdkit -f -U "$TESTDIR/$name.sock" \
	    "$PLUGIN" config="$CLUSTER_DIR/bftblk.conf" \
	    keys="$CLUSTER_DIR/client.key" "$@" >"$logf" 2>&1 </dev/null; then
		fail "nbdkit $name was let in while the volume was held"
	fi
	grep -aq "is in use by .*pid ${NBDKIT_PID[a]}" "$logf" ||
	    { _show_log_tail "$logf"; fail "nbdkit $name's refusal does not name the holder"; }
	log "nbdkit $name refused: $(grep -ao 'volume 0 is in use by [^;]*' "$logf")"
}
refused b shared=off lease=$LEASE volume-id=0
nbdkit_start c shared=on
nbdkit_start v1 shared=off lease=$LEASE volume-id=1 size=64M
nbdsh_run c "h.pwrite(b'c' * 4096, 0)" || fail "shared=on writer"
nbdkit_stop c
nbdkit_stop v1
log "another volume and a shared=on writer go ahead"

nbdsh_run a "h.pwrite(b'a' * 4096, 0)" || fail "the holder cannot write"
_stop_pid "${NBDKIT_PID[a]}" KILL
_forget_pid "${NBDKIT_PID[a]}"
unset 'NBDKIT_PID[a]'
t0=$SECONDS
nbdkit_start b shared=off lease=$LEASE volume-id=0
took=$((SECONDS - t0))
[ "$took" -le $((2 * LEASE + 3)) ] ||
    fail "the volume took ${took}s to come free after SIGKILL (lease ${LEASE}s)"
grep -aq "did not renew in .*taking the volume over" "$TESTDIR/log/nbdkit-b.log" ||
    fail "nbdkit b does not say it took the volume over"
log "after SIGKILL of the holder, a new writer had the volume in ${took}s"

kill -STOP "${NBDKIT_PID[b]}"
nbdkit_start d shared=off lease=$LEASE volume-id=0
kill -CONT "${NBDKIT_PID[b]}"
if nbdsh_run b "h.pwrite(b'b' * 4096, 0)" 2>"$TESTDIR/b-write.err"; then
	fail "the holder that lost its lease still wrote"
fi
grep -q "Input/output error" "$TESTDIR/b-write.err" ||
    fail "b's write failed, but not with EIO: $(tail -1 "$TESTDIR/b-write.err")"
deadline=$((SECONDS + 10))
until grep -aq "volume 0 lease: lost: .*pid ${NBDKIT_PID[d]}" \
    "$TESTDIR/log/nbdkit-b.log"; do
	[ "$SECONDS" -lt "$deadline" ] || fail "b does not say it lost the lease to d"
	sleep 0.2
done
log "b, stopped past its lease and taken over by d, fails its writes" \
    "with EIO and says: $(grep -ao 'lease: lost: [^,]*' \
    "$TESTDIR/log/nbdkit-b.log" | head -1)"
nbdsh_run d "
h.pwrite(b'd' * 4096, 0)
assert h.pread(4096, 0) == b'd' * 4096
" || fail "the new holder cannot write"
nbdkit_stop b

nbdkit_stop d
t0=$SECONDS
nbdkit_start e shared=off lease=$LEASE
[ $((SECONDS - t0)) -lt "$LEASE" ] ||
    fail "a released volume took $((SECONDS - t0))s to open"
grep -aq "held by" "$TESTDIR/log/nbdkit-e.log" &&
    fail "nbdkit e waited on a released lease"
log "a lease released by a clean stop is taken at once"
log "ok"
