#!/bin/bash
# Linearizability across a MAC key rotation, from rotate to retire
# (t=1, docs/key-epochs.md).
#
# Two nbdkit writers, each with its own key file (client.key and a
# second writer's b.key), 4 clients on 4 hot blocks for 45 s.  Meanwhile
# `bftblk keys rotate` writes epoch 1 into both files and every server's,
# and the servers take it one by one, a few seconds apart: for a while
# servers at epoch 0 alone and at epochs 0 and 1 serve writers that
# sign under 0, then one writer and the other under 1.  Then `keys
# reauth` and `keys retire`, the writers take their epoch-1 files and
# the servers, reloaded 1 s apart, drop epoch 0, all before the
# recording ends.  No op may fail, each writer must have switched, and
# the history (with a final read of every block through both) must be
# linearizable; 32 cold blocks written before the rotation, which only
# the pass re-authenticates, read back the same after the retire.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DURATION=45
export LIN_ARGS="--blocks 4 --first-block 0 --clients-per-uri 2"
hist=$TESTDIR/lin-keys.jsonl

lin_build
cluster_start 1
client_add b rw
"$ADMIN" cluster finalize --dir "$CLUSTER_DIR" \
    >"$TESTDIR/log/finalize.log" 2>&1 ||
    { cat "$TESTDIR/log/finalize.log" >&2; fail "cluster finalize"; }
nbdkit_start a
nbdkit_start_with b "$PLUGIN" config="$CLUSTER_DIR/bftblk.conf" \
    keys="$CLUSTER_DIR/b.key" shared=on volume-id=0

# Cold blocks the writers never touch again: only the pass gives them
# epoch 1's MACs, and they must read back after the retire.
nbdsh_run a "
import random
for b in range(100, 132):
    h.pwrite(random.Random(b).randbytes(65536), b * 65536)" ||
    fail "writing the cold blocks"
LIN_T0=$SECONDS
lin_record_start "$hist" "$DURATION" "$(nbd_uri a)" "$(nbd_uri b)"
sleep 4
"$ADMIN" keys rotate --dir "$CLUSTER_DIR" --timeout 3 \
    >"$TESTDIR/log/rotate.log" 2>&1 ||
    { cat "$TESTDIR/log/rotate.log" >&2; fail "keys rotate"; }
grep -q "^writer b: " "$TESTDIR/log/rotate.log" ||
    { cat "$TESTDIR/log/rotate.log" >&2; fail "rotate skipped b.key"; }
log "injected: epoch 1 in every key file; servers take it 3 s apart"
sleep 3
for i in 0 1 2 3; do
	kill -s HUP "${SERVER_PID[$i]}"
	sleep 3
done
start=$SECONDS
for w in a b; do
	_wait_log "${NBDKIT_PID[$w]}" "$TESTDIR/log/nbdkit-$w.log" 0 \
	    "every server accepts epoch 1" "nbdkit $w (epoch 1)"
done
keys_reauth reauth "keys reauth"
log "injected: keys reauth ($(grep -E '^[0-9]+ blocks read' \
    "$TESTDIR/log/reauth.log"))"
keys_retire 20
for w in a b; do
	_wait_log "${NBDKIT_PID[$w]}" "$TESTDIR/log/nbdkit-$w.log" 0 \
	    "holds epoch 1 alone" "nbdkit $w (epoch 1 alone)"
done
for i in 0 1 2 3; do
	kill -s HUP "${SERVER_PID[$i]}"
	sleep 1
done
for i in 0 1 2 3; do
	_wait_log "${SERVER_PID[$i]}" "$TESTDIR/log/server-$i.log" 0 \
	    "MAC key epoch 0 retired" "server-$i (retired)"
done
log "injected: epoch 0 retired everywhere, $((SECONDS - start)) s after" \
    "the last server took epoch 1"
[ "$SECONDS" -lt "$((LIN_T0 + DURATION - 2))" ] ||
    fail "the retire ended after the recording: the history misses it"
lin_record_wait
grep -qE "^[0-9]+ blocks read: ([3-9][0-9]|[1-9][0-9]{2,}) re-authenticated" \
    "$TESTDIR/log/reauth.log" ||
    { cat "$TESTDIR/log/reauth.log" >&2; fail "the pass did not" \
    "re-authenticate the cold blocks"; }
nbdsh_run b "
import random
for b in range(100, 132):
    assert h.pread(65536, b * 65536) == random.Random(b).randbytes(65536), b
" || fail "a cold block does not read back after the retire"
lin_final_read "$hist" "$(nbd_uri a)" "$(nbd_uri b)"
lin_check "$hist"
for k in write_errors read_errors timeouts garbage misplaced connect_errors; do
	[ "${LIN_STAT[$k]}" = 0 ] ||
	    fail "a rotation must cost nothing, yet $k=${LIN_STAT[$k]}"
done
if [ "${LIN_STAT[writes]}" -eq 0 ] || [ "${LIN_STAT[reads]}" -eq 0 ]; then
	fail "the recorder did no reads or no writes"
fi
log "ok"
