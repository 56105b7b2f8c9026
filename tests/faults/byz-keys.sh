#!/bin/bash
# A MAC key rotation with one Byzantine server of four (t=1) in every
# mode in turn (docs/key-epochs.md).
#
# The first phase runs under epoch 0 alone; then `bftblk keys rotate`
# writes epoch 1 into every key file and the honest servers take it on
# SIGHUP, while each Byzantine server restarted for its mode loads both.
# The writers switch to epoch 1 as soon as every server says it accepts
# it, which a liar may delay (a mode that garbles or withholds STATUS
# replies) but never hasten past a server that does not hold the key.
# Each phase is byz-lib.bash's: fio with crc32c verification, a
# two-writer history checked by lincheck, the known data of every phase
# read back through both nbdkits; no I/O may fail.  At the end both
# writers sign under epoch 1, and a fresh nbdkit reads all known data.
. "$(dirname "${BASH_SOURCE[0]}")/byz-lib.bash"

PHASE_SECS=${PHASE_SECS:-4}
MODES=(corrupt-fragment bad-checksum stale forge-candidate bad-mac
    equivocate refuse mute slow trim-lie)

cluster_start 1
"$ADMIN" cluster finalize --dir "$CLUSTER_DIR" \
    >"$TESTDIR/log/finalize.log" 2>&1 ||
    { cat "$TESTDIR/log/finalize.log" >&2; fail "cluster finalize"; }
byz_nbdkit_start a
byz_nbdkit_start b

k=0
prev=
for mode in "${MODES[@]}"; do
	victim=$((k % CLUSTER_N))
	if [ -n "$prev" ] && [ "$prev" != "$victim" ]; then
		byz_switch "$prev" honest
	fi
	byz_switch "$victim" "$mode"
	byz_workload "keys-$mode" "$PHASE_SECS"
	if [ "$k" = 0 ]; then
		"$ADMIN" keys rotate --dir "$CLUSTER_DIR" --timeout 3 \
		    >"$TESTDIR/log/rotate.log" 2>&1 ||
		    { cat "$TESTDIR/log/rotate.log" >&2; fail "keys rotate"; }
		for i in "${!SERVER_PID[@]}"; do
			[ "${BYZ_MODES[$i]:-honest}" = honest ] &&
			    kill -s HUP "${SERVER_PID[$i]}"
		done
		log "injected: MAC key epoch 1 (servers reloaded but" \
		    "server-$victim, which takes it at its next start)"
	fi
	prev=$victim
	k=$((k + 1))
done
byz_switch "$prev" honest
for name in a b; do
	_wait_log "${NBDKIT_PID[$name]}" "$TESTDIR/log/nbdkit-$name.log" 0 \
	    "every server accepts epoch 1" "nbdkit $name (signing under epoch 1)"
done
byz_workload "keys-after" "$PHASE_SECS"
for name in a b; do
	byz_nbdkit_stats "$name"
done
nbdkit_start fresh
nbdsh_run fresh "$BYZ_PY
check($(byz_tags_py), 'all honest again, fresh nbdkit')
" || fail "known data through a fresh nbdkit: see above"
log "ok"
