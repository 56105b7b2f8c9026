#!/bin/bash
# Profiles bftblk under fio with perf (docs/performance.md): a 4-server
# t=1 cluster and one nbdkit, the nbdkit process and server 0 recorded
# with `perf record -g` while fio writes 64 KiB blocks (iodepth 16), and
# again while it reads them back.  Prints a grouped breakdown of each
# (tests/tools/perf-groups.py) and leaves the perf.data files in OUT.
#
#   tests/tools/profile.sh OUT
#
# Environment: BUILD (default build), PROFILE_SECONDS (default 8),
# CLUSTER_CHANNEL (aead or plain), FIO_SIZE (default 256M),
# PROFILE_JOBS the passes as NAME:RW:BS words (default
# "write:write:64k read:read:64k"; e.g. randread:randread:4k).
set -euo pipefail

OUT=$(mkdir -p "$1" && cd "$1" && pwd)
SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SECS=${PROFILE_SECONDS:-8}
SIZE=${FIO_SIZE:-256M}
# shellcheck disable=SC2034 # read by lib.sh
CLUSTER_SIZE=1G
unset TESTDIR
# shellcheck source=tests/integration/lib.sh
. "$SRCDIR/tests/integration/lib.sh"

cluster_start 1
# Finalized, as scripts/bftblk-demo makes a new cluster.
cluster_finalize
nbdkit_start bftblk
uri=$(nbd_uri bftblk)
kit=${NBDKIT_PID[bftblk]}
srv=${SERVER_PID[0]}

# profile NAME RW BS: fio runs RW of BS for SECS+4 s; perf records both
# processes for SECS s once fio is going.
profile()
{
	local name=$1 rw=$2 bs=$3 fpid p1 p2
	fio --name="$name" --ioengine=nbd --uri="$uri" --rw="$rw" --bs="$bs" \
	    --iodepth=16 --size="$SIZE" --time_based --runtime=$((SECS + 4)) \
	    --output-format=json --output="$OUT/$name.fio.json" \
	    >/dev/null 2>&1 &
	fpid=$!
	sleep 2
	perf record -q ${PERF_CALLGRAPH:+--call-graph=$PERF_CALLGRAPH} -g -o "$OUT/$name-nbdkit.data" -p "$kit" \
	    -- sleep "$SECS" >/dev/null 2>&1 &
	p1=$!
	perf record -q ${PERF_CALLGRAPH:+--call-graph=$PERF_CALLGRAPH} -g -o "$OUT/$name-server0.data" -p "$srv" \
	    -- sleep "$SECS" >/dev/null 2>&1 &
	p2=$!
	wait "$p1" "$p2"
	wait "$fpid"
	python3 - "$OUT/$name.fio.json" <<'EOF'
import json, sys
t = open(sys.argv[1]).read()
j = json.loads(t[t.index("{"):])["jobs"][0]
s = max((j["read"], j["write"]), key=lambda x: x["io_bytes"])
print("fio: %.1f MB/s, %.0f IOPS" % (s["bw_bytes"] / 1e6, s["iops"]))
EOF
}

log "filling $SIZE"
fio --name=fill --ioengine=nbd --uri="$uri" --rw=write --bs=64k \
    --iodepth=16 --size="$SIZE" >/dev/null 2>&1
for job in ${PROFILE_JOBS:-write:write:64k read:read:64k}; do
	IFS=: read -r name rw bs <<<"$job"
	profile "$name" "$rw" "$bs"
done
for f in "$OUT"/*.data; do
	echo "== $(basename "$f")"
	perf report -i "$f" --no-children -g none --sort dso,sym --stdio 2>/dev/null \
	    >"${f%.data}.txt"
	python3 "$SRCDIR/tests/tools/perf-groups.py" "${f%.data}.txt"
done
