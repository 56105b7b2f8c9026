#!/bin/bash
# A slow link to a data server: reads and writes go on and stay correct
# (t=1).
#
# A delay proxy (tests/tools/delay-proxy.py) in front of server 0 adds
# 5 ms, then 50 ms, each way to its link; the servers themselves are not
# touched.  5 ms is below the 1-round read's wait for fragments, 50 ms
# above it, so between them both the read that takes its fragments from
# the other servers and the one that passes server 0 over are exercised.
# Through a fresh nbdkit behind the proxy, for each delay:
#
# 1. a known pattern is written and read back exactly;
# 2. fio writes 4-64 KiB requests at random (16 at a time) and verifies
#    every one by its crc32c, reading back while writing goes on;
# 3. the pattern written at the other delay (or before any) still reads
#    back exactly.
#
# Then a client with a direct link to every server reads both patterns
# back: what went in over the slow link is what is stored.  Only
# correctness is asserted, not timing: the machines are noisy.
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

cluster_start 1
nbdkit_start direct
heal_write direct base 0 16

prev=base
for d in 5 50; do
	proxy_start 0 "$d"
	nbdkit_start "slow$d" config="$PROXY_CONF"
	wait_connected 0 1 2 3
	# Each delay has its own 64 blocks for its pattern and its own
	# 16 MiB for fio, so no phase overwrites another's data.
	first=$((64 * (d == 5 ? 1 : 2)))
	heal_write "slow$d" "d$d" "$first" 64
	heal_check "slow$d" "d$d" "$first" 64 "server 0 +$d ms"
	out=$TESTDIR/log/fio-$d.log
	off=$(((d == 5 ? 16 : 32) * 1024 * 1024))
	rc=0
	fio --name="slow$d" --ioengine=nbd --uri="$(nbd_uri "slow$d")" \
	    --iodepth=16 --offset="$off" --size=16M --io_size=48M \
	    --rw=randrw --rwmixread=50 --bsrange=4k-64k --verify=crc32c \
	    --verify_backlog=32 --verify_fatal=1 --randrepeat=0 \
	    >"$out" 2>&1 </dev/null || rc=$?
	if [ "$rc" -ne 0 ] || grep -qE 'verify failed|bad magic|crc32c: verify' \
	    "$out" || ! grep -qE 'err= *0' "$out"; then
		_show_log_tail "$out" 60
		fail "fio with server 0 +$d ms: exit $rc or errors (see $out)"
	fi
	log "fio with server 0 +$d ms: no errors, verified;" \
	    "$(grep -oE 'issued rwts: total=[0-9]+,[0-9]+' "$out");" \
	    "completion latency $(grep -m1 -oE 'clat \([mun]sec\): min=[^,]*, max=[^,]*' "$out")"
	if [ "$prev" = base ]; then
		heal_check "slow$d" base 0 16 "server 0 +$d ms, the first pattern"
	else
		heal_check "slow$d" "$prev" 64 64 "server 0 +$d ms, the 5 ms pattern"
	fi
	nbdkit_stop "slow$d"
	proxy_stop
	prev=d$d
done

heal_check direct base 0 16 "direct links"
heal_check direct d5 64 64 "direct links"
heal_check direct d50 128 64 "direct links"
log "ok"
