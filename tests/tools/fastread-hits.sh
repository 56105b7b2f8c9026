#!/bin/bash
# Measures how often reads finish in one round (the 1-round read of
# nbd-plugin/op_read_fast.c), fault-free and with one Byzantine server
# (t=1) in each mode, once as data server 0 (asked for its fragment) and
# once as parity server 3.  Not a test: it prints a table and never fails
# on the numbers.
#
#   BUILD=build tests/run-integration tests/tools/fastread-hits.sh
#   (the table is in build/test-logs/fastread-hits.log)
#
# Each phase is a fresh nbdkit running fio for HITS_SECS seconds on a
# 16 MiB range written beforehand: random 64 KiB reads alone ("read"),
# then 4-64 KiB reads and writes, 70% reads ("rw"; partial writes add
# read-modify-write reads).  Hit rate = reads in one round / reads;
# for the rw phases also the share of writes that skipped CLOCK (the
# 2-round write of nbd-plugin/op_write.c).
. "$(dirname "${BASH_SOURCE[0]}")/../faults/byz-lib.bash"

HITS_SECS=${HITS_SECS:-5}
MODES=(${HITS_MODES:-corrupt-fragment bad-checksum stale forge-candidate
    bad-mac equivocate collude refuse mute slow})
RESULTS=()

# Like byz-lib's, but a mode that changed no reply is reported, not a
# failure: a corrupt-fragment parity server is never asked for a
# fragment while reads succeed in one round.
byz_stop()
{
	local i=$1 modes=${BYZ_MODES[$1]:-honest} line
	server_kill "$i" TERM
	unset 'BYZ_MODES[$i]'
	[ "$modes" != honest ] || return 0
	line=$(grep -a 'byzantine .*: replies changed:' \
	    "$TESTDIR/log/server-$i.log" | tail -n 1)
	log "server-$i ($modes) did: ${line#*replies changed: }"
}

# run LABEL: fio phases through a fresh nbdkit "a", one line each.
run()
{
	local label=$1 kind args
	for kind in read rw; do
		if [ "$kind" = read ]; then
			args="--rw=randread --bs=64k"
		else
			args="--rw=randrw --rwmixread=70 --bsrange=4k-64k"
		fi
		byz_nbdkit_start a
		# shellcheck disable=SC2086
		fio --name="$label-$kind" --ioengine=nbd --uri="$(nbd_uri a)" \
		    --iodepth=16 --offset=0 --size=16M $args --time_based=1 \
		    --runtime="$HITS_SECS" --randrepeat=0 \
		    >"$TESTDIR/log/fio-$label-$kind.log" 2>&1 </dev/null ||
		    fail "fio $label-$kind failed"
		byz_nbdkit_stats a >/dev/null
		RESULTS+=("$(printf '%-26s %-4s %7s reads %7s in one round %6s fell back  %5.1f%%  | %6s writes %5.1f%% without CLOCK' \
		    "$label" "$kind" "${BYZ_STAT[reads]}" "${BYZ_STAT[fastreads]}" \
		    "${BYZ_STAT[readfallbacks]}" \
		    "$(awk -v f="${BYZ_STAT[fastreads]}" -v r="${BYZ_STAT[reads]}" \
		    'BEGIN { print r ? 100 * f / r : 0 }')" \
		    "${BYZ_STAT[writes]}" \
		    "$(awk -v f="${BYZ_STAT[fastwrites]}" -v w="${BYZ_STAT[writes]}" \
		    'BEGIN { print w ? 100 * f / w : 0 }')")")
		log "${RESULTS[-1]}"
	done
}

cluster_start 1
byz_nbdkit_start a
fio --name=fill --ioengine=nbd --uri="$(nbd_uri a)" --iodepth=16 \
    --offset=0 --size=16M --rw=write --bs=64k \
    >"$TESTDIR/log/fio-fill.log" 2>&1 </dev/null || fail "fill failed"
nbdkit_stop a
run honest
for mode in "${MODES[@]}"; do
	for victim in 0 3; do
		byz_switch "$victim" "$mode"
		run "$mode@server-$victim"
		byz_switch "$victim" honest
	done
done
log "hit rates (reads in one round / reads; writes that skipped CLOCK):"
for r in "${RESULTS[@]}"; do
	log "  $r"
done
