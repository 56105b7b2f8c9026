#!/bin/bash
# Linearizability while a wiped server rebuilds (t=1), two writers.
#
# 1. 400 blocks are written; hot blocks 100-103 among them are then
#    written with zeros, so that each history starts from zeros while
#    the blocks are still in what a wiped server must rebuild.
# 2. Server 0 is wiped and restarted with --rebuild-rate 1 (about 15
#    blocks/s, so the rebuild takes about 26 s and reaches the hot
#    blocks after about 7).
# 3. While it rebuilds, two nbdkit instances (two writers), 2 clients
#    each, read and write the hot blocks for 15 s.  The rebuild must
#    have started before the history and still be going on after it,
#    past the hot blocks: so it read and adopted them while they were
#    being written.  No op may fail.
# 4. The history, with a final read through both nbdkits appended, must
#    be linearizable.
# 5. Once server 0 has caught up, server 1 is stopped and server 2
#    wiped, so that reads need the fragments server 0 adopted: a second
#    final read is appended and the whole history checked again.  Then
#    the same history with one read made stale must be rejected.
# shellcheck source=tests/faults/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

N=400
HOT=100
DURATION=15
RATE=1
export LIN_ARGS="--blocks 4 --first-block $HOT --clients-per-uri 2"
hist=$TESTDIR/heal-lin.jsonl

# rebuild_done: blocks server 0's current pass has tried, from STATUS.
rebuild_done()
{
	"$ADMIN" status --dir "$CLUSTER_DIR" --json --timeout 3 2>/dev/null |
	    python3 -c "import json, sys
print([s for s in json.load(sys.stdin)['servers']
       if s['index'] == 0][0].get('rebuild_done', 0))" || true
}

lin_build
cluster_start 1
nbdkit_start a
nbdkit_start b
heal_write a a 0 "$N"
nbdsh_run a "
for b in range($HOT, $HOT + 4):
    h.pwrite(bytes(65536), b * 65536)
h.flush()
" || fail "zeroing the hot blocks failed"
log "wrote zeros to hot blocks $HOT-$((HOT + 3))"

SERVER_ARGS_0="--rebuild-rate $RATE" heal_wipe 0
deadline=$((SECONDS + 30))
until heal_since 0 | grep -aq "rebuild: $N blocks are newer"; do
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "server-0 did not start rebuilding $N blocks in 30s"
	sleep 0.2
done
log "server-0 rebuilds $N blocks at $RATE MB/s"

lin_record_start "$hist" "$DURATION" "$(nbd_uri a)" "$(nbd_uri b)"
lin_record_wait
done_at_end=$(rebuild_done)
heal_since 0 | grep -aq 'has caught up' &&
    fail "server-0 caught up before the history ended: lower RATE"
[ "${done_at_end:-0}" -gt $((HOT + 4)) ] ||
    fail "server-0's rebuild had not passed the hot blocks by the end" \
    "of the history (${done_at_end:-?} of $N done)"
log "checked: the rebuild ran through the whole history and had done" \
    "$done_at_end of $N blocks, the hot blocks $HOT-$((HOT + 3)) among them"
for k in write_errors read_errors timeouts garbage misplaced connect_errors; do
	[ "${LIN_STAT[$k]:-0}" = 0 ] ||
	    fail "one wiped server is within t, yet $k=${LIN_STAT[$k]}"
done
if [ "${LIN_STAT[writes]:-0}" -eq 0 ] || [ "${LIN_STAT[reads]:-0}" -eq 0 ]; then
	fail "the recorder did no reads or no writes"
fi
lin_final_read "$hist" "$(nbd_uri a)" "$(nbd_uri b)"
lin_check "$hist"

heal_wait_caught_up 0
[ "$HEAL_FIRST_NEWER" -eq "$N" ] ||
    fail "server-0 found $HEAL_FIRST_NEWER blocks newer, expected $N"
server_kill 1
heal_wipe 2
log "reading the hot blocks again from servers 0 (rebuilt), 2 (wiped) and 3"
lin_final_read "$hist" "$(nbd_uri a)" "$(nbd_uri b)"
lin_check "$hist"

mutant=$TESTDIR/heal-lin-stale.jsonl
lin_stale_mutant "$hist" "$mutant"
lin_expect_illegal "$mutant"
server_start 1
heal_wait_caught_up 2
log "ok"
