#!/bin/bash
# A stuttering writer: CLOCK and STORE, never COMPLETE, over and over,
# each time under a new timestamp, to fewer than n-t servers (t=1).
#
# 1. bftblk-testclient stutter sends 300 such writes to block 50 at
#    server 0, then 300 more (another writer id) at servers 1 and 2.
#    Each server must take exactly --max-pending of each writer's STOREs
#    and refuse the rest with EBUSY (the tool exits 0 only if it saw
#    EBUSY from every server it wrote to), log the refusals, and its data
#    directory must grow by at most that many records (measured with du).
# 2. While a third stutter of 3000 writes runs against block 50 at
#    server 0, an honest nbdkit writes and reads block 50 and blocks 51-55
#    from before it starts until after it has finished, checking every
#    read byte for byte; then all blocks must read back through a fresh
#    nbdkit.  (Honest writes to block 50 complete newer
#    timestamps, which retire the stutterer's pending STOREs and give it
#    room again, so EBUSY is optional in this phase.)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TC=$BUILD/tests/bftblk-testclient
[ -x "$TC" ] || fail "$TC is missing: run make first"
CAP=8
# A STORE record: 32-byte header, ts, H(N), vec and cc for n = 4, the
# fragment (at most BFT_BLOCK_SIZE / (t+1) plus liberasurecode's header)
# and a checksum; 4 KiB more than that is a generous upper bound.
RECORD_MAX=$((65536 / 2 + 4096))

export SERVER_ARGS="${SERVER_ARGS:-} --max-pending $CAP"
cluster_start 1
CONF=$CLUSTER_DIR/bftblk.conf
KEYS=$CLUSTER_DIR/client.key

py="
import random
BS = 65536

def pattern(tag):
    return random.Random(tag).randbytes(BS)
"
nbdkit_start nbd
nbdsh_run nbd "$py
for b in range(50, 56):
    h.pwrite(pattern('before-%d' % b), b * BS)
h.flush()
print('blocks 50-55 written')
"

datasize()
{
	du -sb "$TESTDIR/data/server-$1" | cut -f1
}

# stutter NAME SERVERS COUNT: runs the tool; sets STUTTER_RC.
stutter()
{
	local out=$TESTDIR/log/stutter-$1.log
	STUTTER_RC=0
	"$TC" stutter --config "$CONF" --keys "$KEYS" --block 50 \
	    --data-seed "stutter-$1" --servers "$2" --count "$3" \
	    >"$out" 2>&1 || STUTTER_RC=$?
	sed "s/^/  stutter $1: /" "$out" >&2
}

# accepted NAME I: what server I took in stutter run NAME.
accepted()
{
	sed -n "s/^server $2: accepted \([0-9]*\) .*/\1/p" \
	    "$TESTDIR/log/stutter-$1.log"
}

declare -A before=()
for i in 0 1 2 3; do
	before[$i]=$(datasize "$i")
done

log "stutter: 300 writes to block 50 at server 0"
stutter one 0 300
[ "$STUTTER_RC" -eq 0 ] || fail "stutter one: exit $STUTTER_RC (0: EBUSY seen)"
log "stutter: 300 writes to block 50 at servers 1 and 2"
stutter two 1,2 300
[ "$STUTTER_RC" -eq 0 ] || fail "stutter two: exit $STUTTER_RC (0: EBUSY seen)"
for i in 0 1 2; do
	run=one
	[ "$i" = 0 ] || run=two
	a=$(accepted "$run" "$i")
	[ "$a" = "$CAP" ] ||
	    fail "server-$i accepted ${a:-?} pending STOREs, the cap is $CAP"
	grep -q "STORE block 50: writer [0-9]* has $CAP pending" \
	    "$TESTDIR/log/server-$i.log" ||
	    fail "server-$i did not log the refused STOREs"
done
for i in 0 1 2 3; do
	grown=$(($(datasize "$i") - before[$i]))
	limit=0
	[ "$i" = 3 ] || limit=$((CAP * RECORD_MAX))
	log "server-$i: data dir grew by $grown bytes (limit $limit)"
	[ "$grown" -le "$limit" ] ||
	    fail "server-$i stored more than $CAP STOREs' worth"
done

log "a third stutter (3000 writes) against an honest nbdkit on block 50"
progress=$TESTDIR/log/honest-progress.log
stop=$TESTDIR/honest.stop
: >"$progress"
# The honest client runs from before the stutterer starts until after it
# has finished, checking every read against the last write.
PATH=/usr/bin:$PATH nbdsh -u "$(nbd_uri nbd)" -c "$py
import os
model = {b: pattern('before-%d' % b) for b in range(51, 56)}
model[50] = pattern('before-50')
rng = random.Random('ops')
op = 0
while not os.path.exists('$stop'):
    op += 1
    b = 50 if op % 2 else rng.randrange(51, 56)
    if rng.random() < 0.5:
        model[b] = pattern('honest-%d-%d' % (op, b))
        h.pwrite(model[b], b * BS)
    elif h.pread(BS, b * BS) != model[b]:
        raise AssertionError('op %d: block %d differs from the last write'
                             % (op, b))
    with open('$progress', 'a') as f:
        print(op, file=f)
for b, want in model.items():
    if h.pread(BS, b * BS) != want:
        raise AssertionError('block %d differs at the end' % b)
with open('$TESTDIR/model.bin', 'wb') as f:
    for b in range(50, 56):
        f.write(model[b])
print('honest nbdkit: %d operations, every read matched' % op)
" >"$TESTDIR/log/honest.log" 2>&1 &
hpid=$!
_track "$hpid" honest-nbdsh
deadline=$((SECONDS + 60))
until [ "$(wc -l <"$progress")" -ge 20 ]; do
	_alive "$hpid" || { cat "$TESTDIR/log/honest.log" >&2;
	    fail "the honest client failed before the stutter"; }
	[ "$SECONDS" -lt "$deadline" ] || fail "the honest client is stuck"
	sleep 0.05
done
stutter three 0 3000
case $STUTTER_RC in
0) log "the third stutter saw EBUSY" ;;
2) log "the third stutter never saw EBUSY (honest writes kept freeing room)" ;;
*) fail "the third stutter failed (status $STUTTER_RC)" ;;
esac
touch "$stop"
deadline=$((SECONDS + 60))
while _alive "$hpid" && [ "$SECONDS" -lt "$deadline" ]; do
	sleep 0.1
done
_alive "$hpid" && fail "the honest client did not stop"
_reap "$hpid"
_forget_pid "$hpid"
cat "$TESTDIR/log/honest.log" >&2
[ "$_STATUS" -eq 0 ] ||
    fail "the honest client saw wrong data while a writer stuttered"
for i in 0 1 2 3; do
	log "server-$i: data dir grew by $(($(datasize "$i") - before[$i]))" \
	    "bytes in all"
done

nbdkit_start fresh
nbdsh_run fresh "
want = open('$TESTDIR/model.bin', 'rb').read()
if h.pread(len(want), 50 * 65536) != want:
    raise AssertionError('blocks 50-55 differ through a fresh nbdkit')
print('fresh nbdkit: blocks 50-55 match byte for byte')
" || fail "fresh nbdkit read wrong data"
log "ok"
