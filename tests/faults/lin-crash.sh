#!/bin/bash
# Linearizability across server crashes (t=1), two writers.
#
# Two nbdkit instances (timeout=5, so ops fail rather than hang while
# too few servers answer) serve one cluster; 4 clients, 2 per nbdkit,
# read and write whole blocks on 4 hot blocks.  Two recordings, on
# different blocks so that each history starts from zeros:
#
# A. blocks 0-3, 16 s: at a random time a random server gets SIGKILL
#    and is restarted 4 s later on its data.  With one server down every
#    op must still succeed (n-t = 3 servers answer).
# B. blocks 8-11, 16 s: all servers get SIGKILL, stay down 7 s (longer
#    than the plugin's timeout, so ops in flight fail) and are restarted
#    on their data; the nbdkits stay up and reconnect.  Failed ops are
#    allowed; a failed write may or may not have taken effect.
#
# Each history, with a final read of every block through both nbdkits
# once everything is back appended, must be linearizable: no read
# returns a stale value or bytes no write wrote, no acknowledged write
# is lost, and the final state is that of some linearization.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DURATION=16
seed=${LIN_SEED:-$RANDOM}
RANDOM=$seed

lin_build
cluster_start 1
nbdkit_start a timeout=5
nbdkit_start b timeout=5
uris=("$(nbd_uri a)" "$(nbd_uri b)")

# Phase A: one server crashes and comes back.
victim=$((RANDOM % CLUSTER_N))
kill_at=$((3 + RANDOM % 5))
export LIN_ARGS="--blocks 4 --first-block 0 --clients-per-uri 2 --op-timeout 30"
hist_a=$TESTDIR/lin-crash-one.jsonl
log "phase A (seed $seed): 4 clients on blocks 0-3 for ${DURATION}s;" \
    "SIGKILL to server-$victim after ${kill_at}s, restart 4s later"
lin_record_start "$hist_a" "$DURATION" "${uris[@]}"
sleep "$kill_at"
server_kill "$victim" KILL
log "injected: SIGKILL to server-$victim"
sleep 4
server_start "$victim"
wait_connected "$victim"
log "injected: server-$victim restarted on its data"
lin_record_wait
# A bad read fails lin_check, which keeps the history: check it first.
lin_final_read "$hist_a" "${uris[@]}"
lin_check "$hist_a"
for k in write_errors read_errors timeouts; do
	[ "${LIN_STAT[$k]}" = 0 ] ||
	    fail "with only server-$victim down, $k=${LIN_STAT[$k]}"
done

# Phase B: every server crashes; the nbdkits stay up.
export LIN_ARGS="--blocks 4 --first-block 8 --clients-per-uri 2 --op-timeout 30"
hist_b=$TESTDIR/lin-crash-all.jsonl
log "phase B: 4 clients on blocks 8-11 for ${DURATION}s; SIGKILL to" \
    "all servers after 4s, restart 7s later"
lin_record_start "$hist_b" "$DURATION" "${uris[@]}"
sleep 4
for ((i = 0; i < CLUSTER_N; i++)); do
	server_kill "$i" KILL
done
log "injected: SIGKILL to all $CLUSTER_N servers"
sleep 7
for ((i = 0; i < CLUSTER_N; i++)); do
	server_start "$i"
done
wait_connected $(seq 0 $((CLUSTER_N - 1)))
log "injected: all servers restarted on their data"
lin_record_wait
log "while all servers were down: ${LIN_STAT[write_errors]} writes and" \
    "${LIN_STAT[read_errors]} reads failed (allowed)"
lin_final_read "$hist_b" "${uris[@]}"
lin_check "$hist_b"
log "ok"
