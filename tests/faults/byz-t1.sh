#!/bin/bash
# One Byzantine server of four (t=1), in every mode in turn.
#
# For each mode the bad server (a different one each time, so its place
# in the client's reply order varies) is restarted with --byzantine=MODE
# and a phase of tests/faults/byz-lib.bash runs: fio randrw with crc32c
# verification, a recorded two-writer history checked by lincheck, and
# the known data of every phase so far read back byte for byte through
# both nbdkit instances.  Its exit line must show that the mode really
# changed or withheld replies.  Modes (server/testing/byzantine.h says
# what each attacks): corrupt-fragment, bad-checksum, stale, forge-candidate,
# bad-mac, equivocate (honest to one nbdkit, lying to the other), refuse
# (error statuses and misdirected replies), mute, slice-shift (a part
# read's chunks from one place on, with their own valid proof; data
# server 0, which part reads ask), slow, trim-lie (every written block
# claimed trimmed).  At the end, with every server honest again, a fresh nbdkit must
# read all known data, and the plugin's counters must show the forged
# timestamps it refused.
. "$(dirname "${BASH_SOURCE[0]}")/byz-lib.bash"

PHASE_SECS=${PHASE_SECS:-6}
MODES=(corrupt-fragment bad-checksum stale forge-candidate bad-mac
    equivocate refuse mute slice-shift slow trim-lie)

cluster_start 1
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
	byz_workload "t1-$mode" "$PHASE_SECS"
	prev=$victim
	k=$((k + 1))
done
byz_switch "$prev" honest

forged=0
for name in a b; do
	byz_nbdkit_stats "$name"
	n=${BYZ_STAT[forged]}
	forged=$((forged + n))
	[ "${BYZ_STAT[timeouts]}" = 0 ] ||
	    log "note: nbdkit $name had ${BYZ_STAT[timeouts]} round timeouts"
done
[ "$forged" -gt 0 ] ||
    fail "forge-candidate ran, yet no nbdkit refused a forged timestamp"
log "checked: the plugins refused $forged forged timestamps"

nbdkit_start fresh
nbdsh_run fresh "$BYZ_PY
check($(byz_tags_py), 'all honest again, fresh nbdkit')
" || fail "known data through a fresh nbdkit: see above"
log "ok"
