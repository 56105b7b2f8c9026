#!/bin/bash
# One server crashing under load, and catching up after a restart (t=1).
#
# 1. A fio random read/write job with crc32c verification (verified as it
#    goes: verify_backlog) runs for 20 s; 5 s in, server 2 is killed with
#    SIGKILL.  fio must finish with no I/O or verify error: n-t = 3
#    servers are enough for every write and read.
# 2. With server 2 still down, new data is written to other blocks.
# 3. Server 2 is restarted on its data dir; once nbdkit has reconnected to
#    it, more new data is written (over blocks written before the crash,
#    over blocks written while it was down, and to fresh blocks).
# 4. A different server (0) is killed with SIGKILL.  Every read now needs
#    all three remaining servers, the restarted one included, and all
#    data of steps 2-3 and from before the crash must read back byte for
#    byte.  Finally server 0 is restarted and everything checked again.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_fio_nbd

FIO_RUNTIME=20
KILL_AFTER=5
VICTIM=2
SECOND=0

# check_fio_log FILE NAME: fio's report must show err=0 and no verify
# complaint.
check_fio_log()
{
	local out=$1 name=$2
	if grep -qE 'err= *[1-9]|verify failed|bad magic' "$out" ||
	    ! grep -qE 'err= *0' "$out"; then
		_show_log_tail "$out" 60
		fail "fio $name reported errors (see $out)"
	fi
}

seed=$RANDOM$RANDOM
# nbdsh's region, above fio's first 64 MiB.
py="
import random
BS = 65536
BASE = 1100 * BS
NB = 24

def pattern(tag, n):
    return random.Random('$seed-' + tag).randbytes(n)

BEFORE = [('before-aligned0', BASE, 2 * BS),
          ('before-across3-4', BASE + 4 * BS - 1000, 3000),
          ('before-aligned8', BASE + 8 * BS, BS)]
WHILE_DOWN = [('down-aligned10', BASE + 10 * BS, BS),
              ('down-inside12', BASE + 12 * BS + 500, 1234),
              ('down-across14-15', BASE + 15 * BS - 20, 40)]
AFTER = [('after-over0', BASE, BS),
         ('after-inside4', BASE + 4 * BS + 10, 100),
         ('after-over10', BASE + 10 * BS + 4096, 8192),
         ('after-aligned18', BASE + 18 * BS, 2 * BS),
         ('after-inside21', BASE + 21 * BS + 333, 3333)]

def write(writes):
    for tag, off, n in writes:
        h.pwrite(pattern(tag, n), off)
        print('wrote %s: %d bytes at %d' % (tag, n, off))

def check(rounds, what):
    model = bytearray(NB * BS)
    for writes in rounds:
        for tag, off, n in writes:
            model[off - BASE:off - BASE + n] = pattern(tag, n)
    got = h.pread(NB * BS, BASE)
    if got != model:
        bad = next(i for i in range(len(model)) if got[i] != model[i])
        raise AssertionError('%s: byte %d of the region differs (block '
                             '%d)' % (what, bad, (BASE + bad) // BS))
    for writes in rounds:
        for tag, off, n in writes:
            want = bytes(model[off - BASE:off - BASE + n])
            if h.pread(n, off) != want:
                raise AssertionError('%s: read of %s differs' % (what, tag))
    print('%s: %d blocks match byte for byte' % (what, NB))
"

CLUSTER_SIZE=128M
cluster_start 1
nbdkit_start nbd

log "writing data with all servers up"
nbdsh_run nbd "$py
write(BEFORE)
check([BEFORE], 'all up')
"

fio_log=$TESTDIR/log/fio-randrw.log
log "fio randrw with crc32c verify_backlog for ${FIO_RUNTIME}s;" \
    "SIGKILL to server-$VICTIM after ${KILL_AFTER}s"
fio --name=randrw-kill --ioengine=nbd --uri="$(nbd_uri nbd)" --iodepth=16 \
    --offset=0 --size=64M --rw=randrw --rwmixread=30 --bsrange=4k-64k \
    --verify=crc32c --verify_backlog=64 --verify_fatal=1 \
    --time_based=1 --runtime="$FIO_RUNTIME" --randrepeat=0 \
    >"$fio_log" 2>&1 </dev/null &
fio_pid=$!
_track "$fio_pid" fio
sleep "$KILL_AFTER"
_alive "$fio_pid" || fail "fio ended before the kill: nothing was tested"
server_kill "$VICTIM" KILL
_alive "$fio_pid" || fail "fio ended right at the kill"
log "fio still running after the kill; waiting for it to finish"
deadline=$((SECONDS + FIO_RUNTIME + 60))
while _alive "$fio_pid" && [ "$SECONDS" -lt "$deadline" ]; do
	sleep 0.5
done
_alive "$fio_pid" && fail "fio still running $((FIO_RUNTIME + 60))s after start"
_reap "$fio_pid"
_forget_pid "$fio_pid"
if [ "$_STATUS" -ne 0 ]; then
	_show_log_tail "$fio_log" 60
	fail "fio exited with status $_STATUS after server-$VICTIM was killed"
fi
check_fio_log "$fio_log" randrw-kill
log "fio: exit 0, err=0, no verify errors;" \
    "$(grep -oE 'issued rwts: total=[0-9]+,[0-9]+' "$fio_log")" \
    "(reads include verify_backlog reads)"

log "writing while server-$VICTIM is down"
nbdsh_run nbd "$py
write(WHILE_DOWN)
check([BEFORE, WHILE_DOWN], 'server $VICTIM down')
"

log "restarting server-$VICTIM on its data dir"
server_start "$VICTIM"
wait_connected "$VICTIM"
nbdsh_run nbd "$py
write(AFTER)
h.flush()
check([BEFORE, WHILE_DOWN, AFTER], 'server $VICTIM back')
"

log "SIGKILL to server-$SECOND: reads now need server-$VICTIM"
server_kill "$SECOND" KILL
nbdsh_run nbd "$py
check([BEFORE, WHILE_DOWN, AFTER], 'server $SECOND down, same nbdkit')
"
nbdkit_start fresh
nbdsh_run fresh "$py
check([BEFORE, WHILE_DOWN, AFTER], 'server $SECOND down, fresh nbdkit')
"

log "restarting server-$SECOND"
server_start "$SECOND"
wait_connected "$SECOND"
nbdsh_run fresh "$py
check([BEFORE, WHILE_DOWN, AFTER], 'all up again')
"
log "ok"
