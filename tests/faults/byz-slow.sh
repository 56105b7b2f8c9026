#!/bin/bash
# Mute and slow servers must not slow I/O down (t=1).
#
# The same fixed fio job (randrw on 16 MiB, 4k-64k requests, 96 MiB of
# I/O, every write verified by crc32c) runs through a fresh nbdkit three
# times: all servers honest; server 1 mute (it answers HELLO, then
# nothing); server 2 slow (every reply two seconds late).  Each run must
# pass fio's verification and the known-data check, and the plugin must
# count 0 round timeouts: no round waited for the bad server until it gave
# up.  As a sanity bound only, with a wide margin for a loaded machine,
# a run may take at most 3 times the honest run plus 20 s: a client that
# waited for the slow server would spend two seconds in every round.
. "$(dirname "${BASH_SOURCE[0]}")/byz-lib.bash"

# run NAME: the fio job through nbdkit "a"; sets ELAPSED_MS.
run()
{
	local name=$1 out=$TESTDIR/log/fio-$1.log start rc=0
	start=$(date +%s%N)
	fio --name="$name" --ioengine=nbd --uri="$(nbd_uri a)" --iodepth=16 \
	    --offset=0 --size=16M --io_size=96M --rw=randrw --rwmixread=50 \
	    --bsrange=4k-64k --verify=crc32c --verify_backlog=32 \
	    --verify_fatal=1 --randrepeat=0 >"$out" 2>&1 </dev/null || rc=$?
	ELAPSED_MS=$((($(date +%s%N) - start) / 1000000))
	if [ "$rc" -ne 0 ]; then
		_show_log_tail "$out" 60
		fail "fio $name exited with status $rc"
	fi
	byz_fio_check "$out" "$name"
	log "fio $name: ${ELAPSED_MS} ms, err=0, no verify errors;" \
	    "$(grep -oE 'issued rwts: total=[0-9]+,[0-9]+' "$out");" \
	    "completion latency $(grep -m1 -oE 'clat \([mun]sec\): min=[^,]*, max=[^,]*' "$out")"
}

# phase NAME [SERVER MODE]: one run with a fresh nbdkit, then its checks.
phase()
{
	local name=$1
	if [ $# -gt 1 ]; then
		byz_switch "$2" "$3"
	fi
	byz_nbdkit_start a
	byz_nbdkit_start b
	BYZ_TAGS+=("$name")
	byz_known a "write('$name')
check($(byz_tags_py), '$name, through a')"
	run "$name"
	byz_known b "check($(byz_tags_py), '$name, through b')"
	byz_nbdkit_stats b >/dev/null
	byz_nbdkit_stats a
	[ "${BYZ_STAT[timeouts]}" -eq 0 ] ||
	    fail "$name: ${BYZ_STAT[timeouts]} rounds waited until the timeout"
	if [ $# -gt 1 ]; then
		byz_switch "$2" honest
	fi
}

cluster_start 1
phase honest
base=$ELAPSED_MS
bound=$((3 * base + 20000))
log "the bound for the runs with a bad server: $bound ms"
phase mute 1 mute
[ "$ELAPSED_MS" -le "$bound" ] ||
    fail "a mute server slowed the job from $base ms to $ELAPSED_MS ms"
phase slow 2 slow
[ "$ELAPSED_MS" -le "$bound" ] ||
    fail "a slow server slowed the job from $base ms to $ELAPSED_MS ms"
log "ok"
