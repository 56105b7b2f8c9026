#!/bin/bash
# Servers crashing (SIGKILL) at random times under a verifying workload.
#
# A workload (nbdsh) writes random data to 24 blocks, whole blocks and
# pieces of blocks, flushing now and then, and checks every read against
# its model of the acknowledged writes; it journals each write before
# issuing it and again once it is acknowledged.  Next to it, the
# lincheck recorder runs two clients through two nbdkits on four other
# blocks, and the whole history is checked for linearizability at the end.
#
# Phase A (t=1): four times, at a random moment, one random server is
#   SIGKILLed and restarted; nothing may fail, every read must match.
# Phase B, twice: after a random number of operations all four servers
#   are SIGKILLed at once, then restarted.  Every acknowledged write must
#   read back byte for byte, through the nbdkit that was running all
#   along and through a fresh one.  The one write in flight at the crash
#   may or may not have happened: its blocks must hold the value from
#   before it or after it, and are left alone by later rounds (a write
#   that never completed may still take effect later), while never going
#   back once the newer value was read.
# The servers run with 1 MiB segments, compaction at 80% live and an
# index checkpoint after every MiB appended, so that the kills land
# while segments are compacted and checkpoints written (in their
# thread); every restart must find the index again from the checkpoint
# and the log after it, or from the whole log when the checkpoint does
# not fit, and at least one must have used a checkpoint.  The cluster is
# finalized, so the servers write new segments over compacted segments'
# files (docs/store.md, "Reused segment files"): a restart must cut such
# a file's earlier use off the log, and some must have met one.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SERVER_ARGS="${SERVER_ARGS:-} --segment-mb 1 --compact-pct 80 --checkpoint-mb 1"

lin_optional
NB=24
BASE=100
LIN_BLOCKS="--first-block 300 --blocks 4"
J=$TESTDIR/journal
: >"$J"
cat >"$TESTDIR/workload.py" <<PY
import os, random, sys
import nbd

BS = 65536
NB, BASE = $NB, $BASE
J = '$J'

def data(tag, n):
    return random.Random(tag).randbytes(n)

def jw(line):
    with open(J, 'a') as f:
        f.write(line + '\n')

def blocks_of(off, n):
    return range(off // BS, (off + n - 1) // BS + 1)

# The journal replayed: the model of acknowledged writes, the write in
# flight (None if it was acknowledged), the blocks a crashed write may
# still change (block -> tag) and the tainted blocks already read new.
def load():
    model = bytearray(NB * BS)
    pending, writes, taint, new = None, {}, {}, set()
    for line in open(J):
        f = line.split()
        if f[0] == 'W':
            pending = f[1]
            writes[f[1]] = (int(f[2]), int(f[3]))
        elif f[0] == 'A':
            off, n = writes[f[1]]
            model[off:off + n] = data(f[1], n)
            pending = None
        elif f[0] == 'T':
            taint[int(f[1])] = f[2]
        elif f[0] == 'R':
            pending = None
        elif f[0] == 'N':
            new.add(int(f[1]))
    return model, pending, writes, taint, new

def with_write(model, writes, b, tag):
    blk = bytearray(model[b * BS:(b + 1) * BS])
    off, n = writes[tag]
    d = data(tag, n)
    for i in range(max(off, b * BS), min(off + n, (b + 1) * BS)):
        blk[i - b * BS] = d[i - off]
    return bytes(blk)

def describe(got, want):
    bad = next(i for i in range(len(want)) if got[i] != want[i])
    return 'first differing byte %d (block %d)' % (bad, bad // BS)

def workload(rnd, mode, stop, progress):
    model, pending, writes, taint, new = load()
    assert pending is None, 'the last crash is not resolved'
    free = [b for b in range(NB) if b not in taint]
    rng = random.Random('%s-%d' % ('$RANDOM$RANDOM', rnd))
    op = 0
    try:
        while not os.path.exists(stop) and op < 100000:
            op += 1
            b = rng.choice(free)
            if rng.random() < 0.3:
                off, n = b * BS + rng.randrange(BS), 0
                n = rng.randrange(1, (b + 1) * BS - off + 1)
            elif b + 1 in free and rng.random() < 0.3:
                off, n = b * BS, 2 * BS
            else:
                off, n = b * BS, BS
            if rng.random() < 0.55:
                tag = 'r%d-%d' % (rnd, op)
                jw('W %s %d %d' % (tag, off, n))
                h.pwrite(data(tag, n), BASE * BS + off)
                jw('A ' + tag)
                model[off:off + n] = data(tag, n)
                if op % 8 == 0:
                    h.flush()
            else:
                got = h.pread(n, BASE * BS + off)
                if got != model[off:off + n]:
                    print('BAD READ: round %d op %d: %d bytes at %d: %s'
                          % (rnd, op, n, off,
                             describe(got, model[off:off + n])))
                    sys.exit(3)
            with open(progress, 'a') as f:
                print(op, file=f)
    except nbd.Error as e:
        if mode != 'crash':
            raise
        print('round %d: op %d failed: %s' % (rnd, op, e))
    print('round %d: %d operations, every read matched' % (rnd, op))

# After a crash: the write in flight taints its blocks; then every block
# must hold its acknowledged value (or, tainted, the crashed write's).
def verify(what):
    model, pending, writes, taint, new = load()
    if pending is not None:
        off, n = writes[pending]
        for b in blocks_of(off, n):
            jw('T %d %s' % (b, pending))
            taint[b] = pending
        jw('R')
        print('%s: write %s (%d bytes at %d) was in flight'
              % (what, pending, n, off))
    got = h.pread(NB * BS, BASE * BS)
    for b in range(NB):
        d, want = got[b * BS:(b + 1) * BS], model[b * BS:(b + 1) * BS]
        if b in taint:
            alt = with_write(model, writes, b, taint[b])
            if d == alt:
                if b not in new:
                    jw('N %d' % b)
                    new.add(b)
                continue
            if d == want and b in new:
                raise AssertionError('%s: block %d went back to its value '
                                     'from before %s' % (what, b, taint[b]))
        if d != want:
            raise AssertionError('%s: block %d is not its last acknowledged'
                                 ' value: %s' % (what, b, describe(d, want)))
    print('%s: %d blocks match the acknowledged writes (%d tainted by a '
          'crashed write: %s)' % (what, NB, len(taint),
          ', '.join('%d %s' % (b, 'new' if b in new else 'old')
                    for b in sorted(taint)) or '-'))
PY
wl() { echo "exec(open('$TESTDIR/workload.py').read()); $1"; }

# run_workload NAME ROUND MODE: starts it in the background on nbdkit NAME.
run_workload()
{
	WL_STOP=$TESTDIR/stop-$2
	WL_PROGRESS=$TESTDIR/log/progress-$2.log
	WL_LOG=$TESTDIR/log/workload-$2.log
	: >"$WL_PROGRESS"
	PATH=/usr/bin:$PATH nbdsh -u "$(nbd_uri "$1")" \
	    -c "$(wl "workload($2, '$3', '$WL_STOP', '$WL_PROGRESS')")" \
	    >"$WL_LOG" 2>&1 &
	WL_PID=$!
	_track "$WL_PID" "workload-$2"
}
# wait_ops N: until the workload has done N operations.
wait_ops()
{
	local deadline=$((SECONDS + 60))
	until [ "$(wc -l <"$WL_PROGRESS")" -ge "$1" ]; do
		_alive "$WL_PID" || { cat "$WL_LOG" >&2; fail "workload died"; }
		[ "$SECONDS" -lt "$deadline" ] || fail "workload is stuck"
		sleep 0.05
	done
}
# end_workload: stops it and requires exit 0.
end_workload()
{
	local deadline=$((SECONDS + 120))
	touch "$WL_STOP"
	while _alive "$WL_PID" && [ "$SECONDS" -lt "$deadline" ]; do
		sleep 0.1
	done
	_alive "$WL_PID" && fail "the workload did not stop"
	_reap "$WL_PID"
	_forget_pid "$WL_PID"
	cat "$WL_LOG" >&2
	[ "$_STATUS" -eq 0 ] || fail "the workload failed (status $_STATUS)"
}
verify() { nbdsh_run "$1" "$(wl "verify('$2')")" || fail "verify: $2"; }
rsleep() { sleep "0.$((RANDOM % 10))"; }

cluster_start 1
cluster_finalize
nbdkit_start nbd
nbdkit_start lin2
H=$TESTDIR/history.jsonl

log "phase A: a random server is SIGKILLed and restarted, four times"
LIN_ARGS="$LIN_BLOCKS" lin lin_record_start "$H" 8 "$(nbd_uri nbd)" \
    "$(nbd_uri lin2)"
run_workload nbd 1 safe
wait_ops 10
for k in 1 2 3 4; do
	rsleep
	victim=$((RANDOM % CLUSTER_N))
	log "kill $k: server-$victim after $(wc -l <"$WL_PROGRESS") operations"
	server_kill "$victim" KILL
	rsleep
	server_start "$victim"
	wait_connected "$victim"
done
wait_ops "$(($(wc -l <"$WL_PROGRESS") + 10))"
end_workload
lin lin_record_wait
verify nbd "phase A"

for r in 2 3; do
	log "phase B, round $r: all servers SIGKILLed at once"
	nbdkit_start "crash$r" timeout=2
	run_workload "crash$r" "$r" crash
	ops=$((5 + RANDOM % 60))
	wait_ops "$ops"
	LIN_ARGS="$LIN_BLOCKS --append --client-base $((r * 100)) --op-timeout 3" \
	    lin lin_record_start "$H" 4 "$(nbd_uri "crash$r")" "$(nbd_uri nbd)"
	sleep "0.$((5 + RANDOM % 5))"
	for ((i = 0; i < CLUSTER_N; i++)); do
		kill -s KILL "${SERVER_PID[$i]}"
	done
	for ((i = 0; i < CLUSTER_N; i++)); do
		server_kill "$i" KILL
	done
	log "all servers SIGKILLed after $ops+ operations of round $r"
	end_workload
	lin lin_record_wait
	[ "$LIN" = 0 ] ||
	    [ "${LIN_STAT["write_errors"]}${LIN_STAT["read_errors"]}" != 00 ] ||
	    log "(the recorder's clients saw no failed operation this round)"
	nbdkit_stop "crash$r"
	for ((i = 0; i < CLUSTER_N; i++)); do
		server_start "$i"
	done
	wait_connected $(seq 0 $((CLUSTER_N - 1)))
	verify nbd "round $r, after restart"
	nbdkit_start "fresh$r"
	verify "fresh$r" "round $r, fresh nbdkit"
	nbdkit_stop "fresh$r"
done

ck=$(cat "$TESTDIR"/log/server-*.log | grep -a -c ': index from its checkpoint' || true)
whole=$(cat "$TESTDIR"/log/server-*.log | grep -a -c ': index from the whole log' || true)
log "restarts from a checkpoint: $ck, from the whole log: $whole"
[ "$ck" -gt 0 ] || fail "no restart used an index checkpoint"
cut=$(cat "$TESTDIR"/log/server-*.log | grep -a -c "the file's earlier use; cut off" || true)
spares=$(cat "$TESTDIR"/log/server-*.log | grep -a -c 'spare segment files kept' || true)
log "restarts that cut a reused file's earlier use: $cut, that kept spares: $spares"
[ $((cut + spares)) -gt 0 ] || fail "no restart met a reused segment file"

log "phase C: one more safe round on what the crashes left"
run_workload nbd 4 safe
wait_ops 40
end_workload
verify nbd "the end"
LIN_ARGS="$LIN_BLOCKS" lin lin_final_read "$H" "$(nbd_uri nbd)" "$(nbd_uri lin2)"
lin lin_check "$H"
log "ok"
