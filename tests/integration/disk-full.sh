#!/bin/bash
# Full disks (t=1).  Every server's data dir is a small tmpfs of its own.
#
# 1. Data is written and read back.
# 2. Server 0's tmpfs is filled up with a filler file: writes keep
#    succeeding (n-t = 3 servers store them), server 0 logs ENOSPC, and
#    everything reads back byte for byte.
# 3. All four are filled: a write must fail with an error (ENOSPC
#    expected), reads of everything written before must still work, and
#    the block of the failed write holds its old or attempted content.
# 4. The filler files are removed: writes work again, and all data reads
#    back, also through a fresh nbdkit.
# Needs mount(8) for tmpfs (root); skips when that is not allowed.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TMPFS_SIZE=8m
declare -a MOUNTS=()

# The servers may still have their data dirs open when this runs; a lazy
# unmount lets the EXIT trap of lib.sh stop them afterwards.
_df_exit()
{
	local rc=$? m
	for m in "${MOUNTS[@]}"; do
		umount -l "$m" 2>/dev/null || true
	done
	(exit "$rc")
	_cleanup
}
trap _df_exit EXIT

for ((i = 0; i < 4; i++)); do
	d=$TESTDIR/data/server-$i
	mkdir -p "$d"
	if ! mount -t tmpfs -o "size=$TMPFS_SIZE,mode=0700" tmpfs "$d" \
	    2>"$TESTDIR/log/mount.log"; then
		[ "$i" -eq 0 ] && skip "cannot mount tmpfs: $(cat "$TESTDIR/log/mount.log")"
		fail "mount of tmpfs $i failed: $(cat "$TESTDIR/log/mount.log")"
	fi
	MOUNTS+=("$d")
done
log "mounted a $TMPFS_SIZE tmpfs on each server's data dir"

# fill DIR: fills the file system of DIR to the last page.
fill()
{
	local d=$1 rc=0
	dd if=/dev/zero of="$d/filler" bs=4k status=none 2>"$TESTDIR/log/dd.log" ||
	    rc=$?
	if [ "$rc" -eq 0 ] || ! grep -q "No space left" "$TESTDIR/log/dd.log"; then
		fail "filling $d did not end with ENOSPC"
	fi
	log "filled $d: $(df -k --output=avail "$d" | tail -n 1 | tr -d ' ')" \
	    "KiB left"
}

cluster_start 1
nbdkit_start nbd

seed=$RANDOM$RANDOM
py="
import errno, random, nbd
BS = 65536
NB = 24

def pattern(tag, n):
    return random.Random('$seed-' + tag).randbytes(n)

A = [('a0', 0, BS), ('a1-2', BS, 2 * BS), ('a-inside4', 4 * BS + 99, 999)]
B = [('b6', 6 * BS, BS), ('b-over1', BS + 5000, 3000),
     ('b-across8-9', 9 * BS - 7, 14), ('b10-11', 10 * BS, 2 * BS)]
C = ('c14', 14 * BS, BS)
C2 = ('c-inside16', 16 * BS + 10, 20)
D = [('d18', 18 * BS, BS), ('d-over0', 100, 200)]

def write(writes):
    for tag, off, n in writes:
        h.pwrite(pattern(tag, n), off)
        print('wrote %s: %d bytes at %d' % (tag, n, off))

def check(rounds, what, maybe=()):
    model = bytearray(NB * BS)
    for writes in rounds:
        for tag, off, n in writes:
            model[off:off + n] = pattern(tag, n)
    got = bytearray(h.pread(NB * BS, 0))
    for tag, off, n in maybe:
        part = bytes(got[off:off + n])
        if part not in (bytes(model[off:off + n]), pattern(tag, n)):
            raise AssertionError('%s: %s holds neither its old nor its '
                                 'attempted content' % (what, tag))
        got[off:off + n] = model[off:off + n]
    if got != model:
        bad = next(i for i in range(len(model)) if got[i] != model[i])
        raise AssertionError('%s: byte %d (block %d) differs'
                             % (what, bad, bad // BS))
    print('%s: blocks 0-%d match byte for byte' % (what, NB - 1))
"

log "writing with room on every server"
nbdsh_run nbd "$py
write(A)
h.flush()
check([A], 'room everywhere')
"

fill "$TESTDIR/data/server-0"
logoff=$(stat -c %s "$TESTDIR/log/server-0.log")
log "writing with server-0's disk full"
nbdsh_run nbd "$py
write(B)
h.flush()
check([A, B], 'server 0 full')
"
[[ "$(tail -c "+$((logoff + 1))" "$TESTDIR/log/server-0.log")" == \
    *"No space left on device"* ]] ||
    fail "server-0 did not log ENOSPC (did the writes reach it?)"
log "server-0 logged: $(tail -c "+$((logoff + 1))" \
    "$TESTDIR/log/server-0.log" | grep -m1 "No space left")"

for ((i = 1; i < CLUSTER_N; i++)); do
	fill "$TESTDIR/data/server-$i"
done
log "writing with every disk full: must fail"
nbdsh_run nbd "$py
for tag, off, n in (C, C2):
    try:
        h.pwrite(pattern(tag, n), off)
    except nbd.Error as e:
        print('write %s failed as it must: %s (errno %s)'
              % (tag, e.string, e.errno))
        if e.errnum != errno.ENOSPC:
            raise AssertionError('expected ENOSPC, got %s' % e.errno)
    else:
        raise AssertionError('write %s succeeded with every disk full' % tag)
check([A, B], 'every disk full', maybe=(C, C2))
"
for ((i = 0; i < CLUSTER_N; i++)); do
	_alive "${SERVER_PID[$i]}" || fail "server-$i died with its disk full"
done

log "removing the filler files"
for ((i = 0; i < CLUSTER_N; i++)); do
	rm -f "$TESTDIR/data/server-$i/filler"
done
nbdsh_run nbd "$py
write([C, C2])
write(D)
h.flush()
check([A, B, [C, C2], D], 'room again')
"
nbdkit_start fresh
nbdsh_run fresh "$py
check([A, B, [C, C2], D], 'room again, fresh nbdkit')
"

# Stop everything here so that the file systems can be unmounted
# normally, which also proves nothing holds them any more.
nbdkit_stop fresh
nbdkit_stop nbd
for ((i = 0; i < CLUSTER_N; i++)); do
	server_kill "$i" TERM
done
for m in "${MOUNTS[@]}"; do
	umount "$m" || fail "cannot unmount $m"
done
MOUNTS=()
log "unmounted"
log "ok"
