#!/bin/bash
# Writers crashing in the middle of a WRITE (t=1).
#
# Each block first gets a value through nbdkit; then a writer dies
# during a second write to it:
#   block 40  bftblk-testclient exits right after CLOCK
#   block 41  ... right after STORE (every server holds the fragments)
#   block 42  ... after its COMPLETE reached server 0 only
#   block 43  the tool is SIGKILLed while it waits after STORE
#   block 44  the tool is SIGKILLed while it waits after CLOCK
#   block 45  an nbdkit writing a new value to it in a loop is SIGKILLed
#             after a random number of acknowledged writes
# Afterwards every read, through the nbdkit that was running all along
# and through a fresh one, must return byte for byte the old value or
# the crashed write's (only the old one when the writer died before
# STORE; for block 45 the last acknowledged value or the one in flight),
# and once a read has returned the newer one no later read may return
# the older.  Then a new write to every block must succeed and read back.
# Meanwhile the lincheck recorder runs clients through both the victim
# nbdkit (restarted after the kill) and the other one on blocks 320-323;
# that history, final reads included, must be linearizable.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TC=$BUILD/tests/bftblk-testclient
[ -x "$TC" ] || fail "$TC is missing: run make first"
lin_optional

cluster_start 1
CONF=$CLUSTER_DIR/bftblk.conf
KEYS=$CLUSTER_DIR/client.key
mkdir -p "$TESTDIR/v"
for b in 40 41 42 43 44 45; do
	for s in "old$b" "new$b" "after$b"; do
		"$TC" pattern --data-seed "$s" >"$TESTDIR/v/$s" ||
		    fail "pattern $s"
	done
done
py="
import os, random
BS = 65536
TD = '$TESTDIR'

def val(name):
    if name.startswith('loop-'):
        return random.Random(name).randbytes(BS)
    with open('%s/v/%s' % (TD, name), 'rb') as f:
        return f.read()

# A completed write starts a new history for check(): forget the past.
def write(block, name):
    h.pwrite(val(name), block * BS)
    if os.path.exists('%s/seen-%d' % (TD, block)):
        os.unlink('%s/seen-%d' % (TD, block))
    print('wrote %s to block %d' % (name, block))

# Reads block several times: every read must be byte for byte one of
# names (oldest first), and never older than what a read returned before.
def check(block, names, what, reads=3):
    sf = '%s/seen-%d' % (TD, block)
    seen = open(sf).read() if os.path.exists(sf) else None
    lo = names.index(seen) if seen in names else 0
    for r in range(reads):
        d = h.pread(BS, block * BS)
        got = [nm for nm in names if val(nm) == d]
        if not got:
            raise AssertionError('%s: block %d read %s, expected one of %s'
                                 % (what, block, 'zeros' if d == bytes(BS)
                                    else 'other data', names))
        i = names.index(got[0])
        if i < lo:
            raise AssertionError('%s: block %d read %s after a read had '
                                 'returned %s' % (what, block, got[0],
                                                  names[lo]))
        lo = i
    open(sf, 'w').write(names[lo])
    print('%s: block %d reads %s (%d reads)' % (what, block, names[lo], reads))
"
# partial BLOCK STOP [ARGS]: a write of newBLOCK that stops after STOP.
partial()
{
	local b=$1 stop=$2
	shift 2
	"$TC" partial-write --config "$CONF" --keys "$KEYS" --block "$b" \
	    --data-seed "new$b" --stop-after "$stop" "$@" \
	    >"$TESTDIR/log/partial-$b.log" 2>&1 ||
	    { cat "$TESTDIR/log/partial-$b.log" >&2; fail "partial-write $b"; }
	log "block $b: writer exited after $stop $*:" \
	    "$(grep -c ': STORE ok' "$TESTDIR/log/partial-$b.log") STOREs," \
	    "$(grep -c ': COMPLETE ok' "$TESTDIR/log/partial-$b.log") COMPLETEs"
}
# killed BLOCK STOP: the same, SIGKILLed while it waits after STOP.
killed()
{
	local b=$1 stop=$2 out=$TESTDIR/log/partial-$1.log pid deadline
	"$TC" partial-write --config "$CONF" --keys "$KEYS" --block "$b" \
	    --data-seed "new$b" --stop-after "$stop" --hang >"$out" 2>&1 &
	pid=$!
	_track "$pid" "testclient-$b"
	deadline=$((SECONDS + BFTBLK_WAIT))
	until grep -q '^hanging' "$out"; do
		_alive "$pid" || { cat "$out" >&2; fail "partial-write died"; }
		[ "$SECONDS" -lt "$deadline" ] || fail "partial-write stuck"
		sleep 0.1
	done
	kill -s KILL "$pid"
	_reap "$pid"
	_forget_pid "$pid"
	[ "$_STATUS" -eq 137 ] || fail "partial-write: status $_STATUS, not 137"
	log "block $b: writer SIGKILLed after $stop"
}

nbdkit_start nbd
nbdsh_run nbd "$py
for b in range(40, 46):
    write(b, 'old%d' % b)
"
partial 40 clock
partial 41 store
partial 42 complete --complete-to 0
killed 43 store
killed 44 clock

log "block 45: an nbdkit writing in a loop, SIGKILLed"
nbdkit_start victim
# The recorder's clients on both nbdkits make a history of blocks
# 320-323 across the crash, checked for linearizability at the end.
H=$TESTDIR/history.jsonl
LIN_ARGS="--first-block 320 --blocks 4 --op-timeout 5" \
    lin lin_record_start "$H" 6 "$(nbd_uri victim)" "$(nbd_uri nbd)"
acks=$TESTDIR/log/loop-acks.log
: >"$acks"
PATH=/usr/bin:$PATH nbdsh -u "$(nbd_uri victim)" -c "$py
import sys
for k in range(1000000):
    h.pwrite(val('loop-%d' % k), 45 * BS)
    print(k, flush=True)
" >"$acks" 2>"$TESTDIR/log/loop-errors.log" &
loop_pid=$!
_track "$loop_pid" nbdsh-loop
want=$((5 + RANDOM % 60))
deadline=$((SECONDS + 60))
until [ "$(wc -l <"$acks")" -ge "$want" ]; do
	_alive "$loop_pid" || fail "the write loop ended early"
	[ "$SECONDS" -lt "$deadline" ] || fail "the write loop is stuck"
	sleep 0.02
done
vpid=${NBDKIT_PID[victim]}
kill -s KILL "$vpid"
_reap "$vpid"
_forget_pid "$vpid"
unset 'NBDKIT_PID[victim]'
deadline=$((SECONDS + 30))
while _alive "$loop_pid" && [ "$SECONDS" -lt "$deadline" ]; do
	sleep 0.1
done
_alive "$loop_pid" && fail "nbdsh still running after its nbdkit died"
_reap "$loop_pid"
_forget_pid "$loop_pid"
[ "$_STATUS" -ne 0 ] || fail "the write loop did not notice its nbdkit die"
last=$(tail -n 1 "$acks")
log "nbdkit SIGKILLed after $((last + 1)) acknowledged writes (wanted" \
    ">= $want); the loop failed with status $_STATUS"
nbdkit_start victim
lin lin_record_wait
checks="
check(40, ['old40'], WHAT)
for b in (41, 42, 43):
    check(b, ['old%d' % b, 'new%d' % b], WHAT)
check(44, ['old44'], WHAT)
check(45, ['loop-$last', 'loop-$((last + 1))'], WHAT)
"
nbdsh_run nbd "$py
WHAT = 'after the crashes'
$checks"
nbdkit_start fresh
nbdsh_run fresh "$py
WHAT = 'fresh nbdkit'
$checks"
nbdsh_run nbd "$py
WHAT = 'again, first nbdkit'
$checks"

log "new writes to every block"
nbdsh_run fresh "$py
for b in range(40, 46):
    write(b, 'after%d' % b)
    check(b, ['after%d' % b], 'after a new write')
"
nbdsh_run nbd "$py
for b in range(40, 46):
    check(b, ['after%d' % b], 'first nbdkit')
"
LIN_ARGS="--first-block 320 --blocks 4" lin lin_final_read "$H" \
    "$(nbd_uri nbd)" "$(nbd_uri fresh)" "$(nbd_uri victim)"
lin lin_check "$H"
log "ok"
