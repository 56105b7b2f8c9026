#!/bin/bash
# What an overwrite costs the servers against the fill, and where it
# goes: a t=1 cluster of PROFILE_SIZE (default 4G) and one nbdkit; fio
# fills the volume with 64 KiB sequential writes (iodepth 16), then
# overwrites it twice the same way and reads it once.  For each pass:
# fio's MB/s, the four servers' CPU (utime + stime, /proc/PID/stat) per
# block, server 0's log and how much of it is cached (fincore), and
# `perf record -g` of server 0 for the whole pass, grouped by
# tests/tools/perf-groups.py in samples per 1000 blocks, so that the
# passes compare by what each costs, not by shares.
#
#   tests/tools/profile-overwrite.sh OUT
#
# Environment: BUILD (default build), PROFILE_SIZE (default 4G).
set -euo pipefail

OUT=$(mkdir -p "$1" && cd "$1" && pwd)
SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SIZE=${PROFILE_SIZE:-4G}
# shellcheck disable=SC2034 # read by lib.sh
CLUSTER_SIZE=$SIZE
unset TESTDIR
# shellcheck source=tests/integration/lib.sh
. "$SRCDIR/tests/integration/lib.sh"

command -v perf >/dev/null || fail "perf is not installed"
cluster_start 1
# Finalized, as scripts/bftblk-demo makes a new cluster.
cluster_finalize
nbdkit_start bftblk
uri=$(nbd_uri bftblk)
srv=${SERVER_PID[0]}
BLOCKS=$(($(numfmt --from=iec "$SIZE") / 65536))

# ticks: the servers' CPU so far, in clock ticks.
ticks()
{
	local p st s=0
	for p in "${SERVER_PID[@]}"; do
		st=$(cat "/proc/$p/stat")
		st=${st##*) }
		# shellcheck disable=SC2086 # the fields, split
		set -- $st
		s=$((s + ${12} + ${13}))
	done
	echo "$s"
}

# pass NAME [RW]: one sequential 64 KiB pass over the volume, writes
# unless RW says read, profiled.
pass()
{
	local name=$1 rw=${2:-write} t0 t1 pp
	t0=$(ticks)
	perf record -q -g -o "$OUT/$name.data" -p "$srv" -- sleep 3600 \
	    >/dev/null 2>&1 &
	pp=$!
	fio --name="$name" --ioengine=nbd --uri="$uri" --rw="$rw" --bs=64k \
	    --iodepth=16 --size="$SIZE" --output-format=json \
	    --output="$OUT/$name.fio.json" >/dev/null 2>&1 ||
	    fail "fio $name"
	t1=$(ticks)
	pkill -INT -P "$pp" sleep || true
	wait "$pp" || true
	python3 - "$OUT/$name.fio.json" "$name" "$((t1 - t0))" \
	    "$(getconf CLK_TCK)" "$BLOCKS" "$(log_cached 0)" "$rw" <<'PY'
import json, sys
t = open(sys.argv[1]).read()
w = json.loads(t[t.index("{"):])["jobs"][0][sys.argv[7]]
ticks, hz, blocks = (int(x) for x in sys.argv[3:6])
cached, size = (int(x) for x in sys.argv[6].split())
print("%s: %.1f MB/s, the servers' CPU %.1f us per block; server 0's log "
      "%.0f MiB, %.0f MiB of it in the page cache" %
      (sys.argv[2], w["bw_bytes"] / 1e6, ticks / hz * 1e6 / blocks,
       size / 2**20, cached / 2**20))
PY
}

# log_cached I: bytes of server I's log segments in the page cache, and
# their size (fincore).
log_cached()
{
	fincore -b -n -o RES,SIZE "$TESTDIR/data/server-$1"/*.log |
	    awk '{ r += $1; s += $2 } END { printf "%.0f %.0f\n", r, s }'
}

log "fill and two overwrite passes of $SIZE"
for p in fill overwrite1 overwrite2; do
	pass "$p"
done
# What the page cache left behind costs the reads.
pass read read
for p in fill overwrite1 overwrite2; do
	perf report -i "$OUT/$p.data" --no-children -g none --sort dso,sym \
	    --stdio 2>/dev/null >"$OUT/$p.txt"
done
python3 - "$OUT" "$BLOCKS" "$SRCDIR/tests/tools/perf-groups.py" <<'PY'
import re, subprocess, sys
out, blocks, groups = sys.argv[1], int(sys.argv[2]), sys.argv[3]
passes = ["fill", "overwrite1", "overwrite2"]
rows = {}
for p in passes:
    hdr = open("%s/%s.txt" % (out, p)).read()
    m = re.search(r"^# Samples: (\d+)([KM]?)", hdr, re.M)
    n = int(m.group(1)) * {"": 1, "K": 1000, "M": 10 ** 6}[m.group(2)]
    g = subprocess.run([sys.executable, groups, "%s/%s.txt" % (out, p)],
                       capture_output=True, text=True).stdout
    for line in g.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(.*?)\s{2,}", line)
        if m:
            rows.setdefault(m.group(2), {})[p] = \
                float(m.group(1)) * n / 100 / blocks * 1000
print("server 0, perf samples per 1000 blocks written:")
print("%-38s %10s %10s %10s" % ("group", *passes))
for k, v in sorted(rows.items(), key=lambda x: -x[1].get("overwrite1", 0)):
    print("%-38s %10.1f %10.1f %10.1f" % (k, *(v.get(p, 0) for p in passes)))
PY
