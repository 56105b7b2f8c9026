#!/bin/bash
# Measures how often partial writes find their block in the block cache
# (lib/blockcache_int.h), the way fio-jobs/bench drives them: a fill
# of FIO_SIZE with 64 KiB writes, then fio-jobs/rand-write-4k.fio for
# FIO_RUNTIME seconds, once per cache size.  Not a test: it prints one
# line per size from the plugin's statistics and never fails on the
# numbers.
#
#   BUILD=build tests/run-integration tests/tools/cache-hits.sh
#   (the lines are in build/test-logs/cache-hits.log)
#
# Environment: FIO_SIZE (default 256M), FIO_RUNTIME (default 10),
# HITS_CACHES (default "128M 256M 64M 0").
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"

export FIO_SIZE=${FIO_SIZE:-256M} FIO_RUNTIME=${FIO_RUNTIME:-10}
CLUSTER_SIZE=1G
export NBDKIT_ARGS=-v
cluster_start 1
results=()
for size in ${HITS_CACHES:-128M 256M 64M 0}; do
	name=c$size
	nbdkit_start "$name" cache="$size"
	fio --name=fill --ioengine=nbd --uri="$(nbd_uri "$name")" --rw=write \
	    --bs=64k --iodepth=16 --size="$FIO_SIZE" \
	    >"$TESTDIR/log/fio-fill-$name.log" 2>&1 || fail "fill failed"
	NBD_URI=$(nbd_uri "$name") fio --output-format=json \
	    --output="$TESTDIR/fio-$name.json" \
	    "$SRCDIR/fio-jobs/rand-write-4k.fio" \
	    >"$TESTDIR/log/fio-$name.log" 2>&1 || fail "fio failed"
	nbdkit_stop "$name"
	line=$(grep -o 'partial writes: .*' \
	    "$TESTDIR/log/nbdkit-$name.log" | tail -1)
	iops=$(python3 -c 'import json, sys
t = open(sys.argv[1]).read()
print("%.0f" % json.loads(t[t.index("{"):])["jobs"][0]["write"]["iops"])' \
	    "$TESTDIR/fio-$name.json")
	results+=("cache=$size: rand-write-4k $iops IOPS; $line")
done
printf '%s\n' "${results[@]}"
