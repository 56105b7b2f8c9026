#!/bin/bash
# Snapshots under a writer with many writes in flight (t=1): fio writes
# at iodepth 16 through the lease holder while three snapshots are
# taken; every write the servers fence at a cut is sent again under the
# new generation, so not one fails.  Each cut fences up to 16 writes at once;
# the first to look finds the new generation, and the others must
# follow it too rather than take the fence as standing.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_fio_nbd
NBDKIT_PIN=
NBDKIT_SHARED=
cluster_start 1
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name v --size 32M \
    >/dev/null || fail "creating v"
NBDKIT_ARGS="-v" nbdkit_start nbd
URI="nbd+unix:///v?socket=$TESTDIR/nbd.sock"

fio --name=load --ioengine=nbd --uri="$URI" --iodepth=16 --rw=randwrite \
    --bs=64k --size=32M --time_based --runtime=36 --continue_on_error=write \
    --output="$TESTDIR/log/fio.out" >/dev/null 2>&1 &
FIO=$!
_track "$FIO" fio
for s in 1 2 3; do
	sleep 5
	"$ADMIN" snap create --dir "$CLUSTER_DIR" --volume v --name "s$s" \
	    >/dev/null || fail "snap create s$s under load"
done
_reap "$FIO"
_forget_pid "$FIO"
grep -h "err=\|write: IOPS" "$TESTDIR/log/fio.out" >&2
errs=$(grep -oE 'err= *[0-9]+' "$TESTDIR/log/fio.out" | grep -oE '[0-9]+' |
    head -n 1)
[ "$_STATUS" -eq 0 ] && [ "${errs:-1}" -eq 0 ] ||
    fail "writes failed around the snapshots (fio status $_STATUS," \
    "err=${errs:-?})"
follows=$(grep -c "a snapshot re-asserted this holder's claim" \
    "$TESTDIR/log/nbdkit-nbd.log" || true)
log "the holder followed $follows re-asserted claims"
[ "$follows" -ge 3 ] || fail "the holder followed $follows of 3 snapshots"
log "PASS"
