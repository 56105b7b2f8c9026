#!/bin/bash
# What one 64 KiB I/O costs each process (docs/performance.md): a t=1
# cluster and one nbdkit, a 256 MiB range filled once, then for each
# pass fio runs 10 s (iodepth 16) while `perf stat` counts, for 5 s,
# every process's context switches and CPU time; nbdkit's CPU is also
# split between the engine's loop thread and the rest (its workers),
# from /proc tick counts.  Everything is divided by fio's I/Os in those
# 5 s (fio's rate times 5).  With PER_OP_STRACE=1 it also traces
# nbdkit's syscalls for 2 s and prints them per I/O by thread (slows the
# run: only the counts mean anything then).
#
#   tests/tools/per-op.sh [OUT]
#
# Environment: BUILD (default build), PER_OP_PASSES (default "read
# write"), NBDKIT_ARGS (nbdkit options, e.g. --threads=8).
set -euo pipefail

SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=$(mkdir -p "${1:-/tmp/per-op}" && cd "${1:-/tmp/per-op}" && pwd)
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

# ticks FILE: nbdkit's threads, each "tid name utime+stime".
ticks()
{
	local t
	for t in /proc/"$kit"/task/*; do
		echo "${t##*/} $(cat "$t/comm") $(awk '{ print $14 + $15 }' "$t/stat")"
	done >"$1"
}

fio --name=fill --ioengine=nbd --uri="$uri" --rw=write --bs=64k \
    --iodepth=16 --size=256M >/dev/null 2>&1
for rw in ${PER_OP_PASSES:-read write}; do
	fio --name="$rw" --ioengine=nbd --uri="$uri" --rw="$rw" --bs=64k \
	    --iodepth=16 --size=256M --time_based --runtime=10 \
	    --output-format=json --output="$OUT/$rw.fio.json" \
	    >/dev/null 2>&1 &
	fpid=$!
	sleep 3
	names=(nbdkit) pids=("$kit")
	for i in $(printf '%s\n' "${!SERVER_PID[@]}" | sort -n); do
		names+=("server-$i") pids+=("${SERVER_PID[$i]}")
	done
	names+=(fio) pids+=("$(pgrep -n -x fio)")
	ticks "$OUT/$rw.ticks0"
	stats=()
	for i in "${!pids[@]}"; do
		perf stat -x, -e context-switches,task-clock -p "${pids[$i]}" \
		    -o "$OUT/$rw.${names[$i]}.stat" -- sleep 5 &
		stats+=($!)
	done
	wait "${stats[@]}"
	ticks "$OUT/$rw.ticks1"
	if [ "${PER_OP_STRACE:-0}" = 1 ]; then
		timeout 2 strace -f -p "$kit" -o "$OUT/$rw.strace" \
		    -e trace=futex,read,write,sendto,recvfrom,epoll_ctl,epoll_wait \
		    2>/dev/null || true
	fi
	wait "$fpid"
	python3 - "$OUT" "$rw" "${names[@]}" <<'EOF'
import collections, json, re, sys
out, rw, names = sys.argv[1], sys.argv[2], sys.argv[3:]
t = open(f"{out}/{rw}.fio.json").read()
j = json.loads(t[t.index("{"):])["jobs"][0]
s = max((j["read"], j["write"]), key=lambda x: x["io_bytes"])
ios = s["iops"] * 5
print(f"{rw}: {s['bw_bytes'] / 1e6:.1f} MB/s, {s['iops']:.0f} IOPS")
for n in names:
    cs = cpu = 0.0
    for line in open(f"{out}/{rw}.{n}.stat"):
        f = line.split(",")
        if len(f) > 2 and f[2].startswith("context-switches"):
            cs = float(f[0])
        elif len(f) > 2 and f[2].startswith("task-clock"):
            cpu = float(f[0])	# ms
    print(f"  {n:10s} {cs / ios:5.2f} context switches, "
          f"{cpu * 1000 / ios:6.1f} us CPU per I/O")
def ticks(p):
    return {l.split()[0]: (l.split()[1], int(l.split()[2])) for l in open(p)}
a, b = ticks(f"{out}/{rw}.ticks0"), ticks(f"{out}/{rw}.ticks1")
split = collections.Counter()
for tid, (name, v) in b.items():
    key = "loop" if name == "bftblk-loop" else "other threads"
    split[key] += v - a.get(tid, (name, 0))[1]
# /proc counts in ticks of 10 ms.
print("  nbdkit by thread: " + ", ".join(
    f"{k} {v * 10000 / ios:.1f} us" for k, v in sorted(split.items())))
try:
    lines = open(f"{out}/{rw}.strace").read().splitlines()
except FileNotFoundError:
    sys.exit(0)
cnt = collections.Counter()
for l in lines:
    m = re.match(r"(\d+)\s+(\w+)\((.*)", l)
    if not m or "resumed>" in l:
        continue
    tid, sc, args = m.groups()
    who = "loop" if b.get(tid, ("",))[0] == "bftblk-loop" else "workers"
    if sc == "futex":
        sc += " " + args.split(",")[1].strip().replace("FUTEX_", "") \
            .replace("_PRIVATE", "")
    cnt[(who, sc)] += 1
# Each request is read once by a worker: the I/Os in the trace.
n = cnt[("workers", "read")] or 1
print(f"  nbdkit syscalls per I/O (strace, {n} I/Os): "
      f"{sum(cnt.values()) / n:.2f}")
for (who, sc), v in cnt.most_common():
    print(f"    {who:8s} {sc:28s} {v / n:5.2f}")
EOF
done
