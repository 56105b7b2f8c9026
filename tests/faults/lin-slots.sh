#!/bin/bash
# Linearizability of 4 KiB writes coalesced into block writes (t=1).
#
# One nbdkit (one writer process: two would lose each other's slots in
# their read-modify-writes, as documented) and 8 clients write 4 KiB
# slots of 2 hot blocks and read the blocks whole for 15 s, so up to 8
# small writes meet on a block and go out together
# (lib/coalesce_int.h).  Every slot is a register of its own (see
# record_history.py --slot); with a final read appended, the history
# must be linearizable, no op may fail and no slot may hold bytes no
# write wrote.  The plugin's counter must show writes that were
# coalesced, or the test tested nothing new; and a history with one
# slot read made stale must be rejected.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DURATION=15
export LIN_ARGS="--blocks 2 --first-block 0 --clients-per-uri 8 --slot 4096
    --write-fraction 0.7"
export NBDKIT_ARGS="-v"
hist=$TESTDIR/lin-slots.jsonl

lin_build
cluster_start 1
nbdkit_start a

log "8 clients, 4 KiB slots of blocks 0-1, ${DURATION}s, one nbdkit"
lin_record "$hist" "$DURATION" "$(nbd_uri a)"
lin_final_read "$hist" "$(nbd_uri a)"
lin_check "$hist"
for k in write_errors read_errors timeouts garbage misplaced connect_errors; do
	[ "${LIN_STAT[$k]}" = 0 ] ||
	    fail "no fault was injected, yet $k=${LIN_STAT[$k]}"
done
[ "${LIN_STAT[writes]}" -gt 0 ] && [ "${LIN_STAT[reads]}" -gt 0 ] ||
    fail "the recorder did no reads or no writes"
nbdkit_stop a
merged=$(grep -o '[0-9]* small writes coalesced into others' \
    "$TESTDIR/log/nbdkit-a.log" | tail -1 | awk '{ print $1 }')
log "${LIN_STAT[writes]} slot writes, ${merged:-no} of them coalesced"
[ "${merged:-0}" -gt 0 ] || fail "no write was coalesced: nothing new tested"

# Negative control on this very history: one slot read returns a value
# that a later, completed write to its slot had replaced.
mutant=$TESTDIR/lin-slots-stale.jsonl
lin_stale_mutant "$hist" "$mutant"
lin_expect_illegal "$mutant"
log "ok"
