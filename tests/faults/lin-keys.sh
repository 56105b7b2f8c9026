#!/bin/bash
# Linearizability across a MAC key rotation (t=1, docs/key-epochs.md).
#
# Two nbdkit writers, each with its own key file (client.key and a
# second writer's b.key), 4 clients on 4 hot blocks for 24 s.  Meanwhile
# `bftblk keys rotate` writes epoch 1 into both files and every server's,
# and the servers take it one by one, a few seconds apart: for most of
# the run servers at epoch 0 alone and at epochs 0 and 1 serve writers
# that sign under 0, then one writer and the other under 1.  No op may
# fail, each writer must have switched, and the history (with a final
# read of every block through both) must be linearizable.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DURATION=24
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
lin_record_wait
for w in a b; do
	grep -q "every server accepts epoch 1" "$TESTDIR/log/nbdkit-$w.log" ||
	    fail "writer $w never signed under epoch 1"
done
for i in 0 1 2 3; do
	grep -q "MAC key epoch 1 accepted" "$TESTDIR/log/server-$i.log" ||
	    fail "server $i never took epoch 1"
done
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
