#!/bin/bash
# Compaction while the servers are idle (server/compact_timer.c), t=1,
# on servers with 1 MiB segments.  Before it, compaction ran only as a
# side effect of appends, so the garbage a delete or a trim left stayed
# on disk for as long as nobody wrote.
#
# 1. 32 MiB written to a named volume, nbdkit stopped, the volume
#    deleted: with no write after the delete, every server's data
#    directory falls below half of what it held, within 30 s, and the
#    log says an idle pass ran.
# 2. 16 MiB written to each of two volumes, a MiB of one then a MiB of
#    the other, so that every segment holds both; one deleted: every
#    data directory gives back at least 4 MiB of the 8 MiB of
#    fragments it dropped (the rest stays: compaction stops once the
#    log is 70% live), within 30 s, by copying the other's records.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_python_nbd /usr/bin/python3
CLUSTER_SIZE=64M
SERVER_ARGS="${SERVER_ARGS:-} --segment-mb 1"
# Exports by volume name: the plugin's own mode, not volume 0 pinned.
NBDKIT_PIN=
cluster_start 1
MiB=$((1024 * 1024))

# The bytes in every server's data directory, one line.
sizes()
{
	local i
	for ((i = 0; i < CLUSTER_N; i++)); do
		du -sb "$TESTDIR/data/server-$i" | cut -f1
	done | paste -sd' '
}

# below LIMITS: whether every server's directory is under its limit
# (LIMITS: one per server).
below()
{
	local -a lim=($1) now
	local i
	read -ra now <<<"$(sizes)"
	for ((i = 0; i < CLUSTER_N; i++)); do
		[ "${now[i]}" -lt "${lim[i]}" ] || return 1
	done
}

# wait_below LIMITS WHAT: polls for up to 30 s until below LIMITS holds;
# logs how long it took, or fails.
wait_below()
{
	local t0=$SECONDS
	until below "$1"; do
		[ $((SECONDS - t0)) -lt 30 ] ||
		    fail "$2: data directories $(sizes) bytes after 30 s," \
		    "want below $1"
		sleep 0.2
	done
	log "$2: below $1 after about $((SECONDS - t0)) s: $(sizes)"
}

# 1. A deleted volume's space comes back with no write after the delete.
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name v --size 64M \
    >/dev/null || fail "creating v"
nbdkit_start nbd
PATH=/usr/bin:$PATH nbdsh -u "nbd+unix:///v?socket=$TESTDIR/nbd.sock" -c "
import random
h.pwrite(random.Random(3).randbytes(32 * $MiB), 0)
h.flush()
" || fail "writing 32 MiB to v"
nbdkit_stop nbd
before=$(sizes)
log "32 MiB written to v: servers hold $before bytes"
"$ADMIN" volume delete --dir "$CLUSTER_DIR" --name v >/dev/null ||
    fail "deleting v"
t0=$(date +%s.%N)
read -ra a <<<"$before"
limits=$(for x in "${a[@]}"; do echo $((x / 2)); done | paste -sd' ')
wait_below "$limits" "delete of v"
after=$(sizes)
read -ra b <<<"$after"
awk -v t0="$t0" -v t1="$(date +%s.%N)" -v a="${a[0]}" -v b="${b[0]}" \
    'BEGIN { printf "server 0 freed %.1f MB in %.1f s after the delete\n",
    (a - b) / 1e6, t1 - t0 }' >&2
# Every directory is below the bound; a server whose own appends (the
# DROP, the writes before it) already compacted it may log no idle pass,
# but the timer must have done the work on at least one.
idle=0
for ((i = 0; i < CLUSTER_N; i++)); do
	! grep -q "idle compaction: done" "$TESTDIR/log/server-$i.log" ||
	    idle=$((idle + 1))
done
[ "$idle" -gt 0 ] || fail "no server logged an idle compaction pass"

# 2. Two volumes written side by side leave every segment half live
#    when one of them is deleted: the idle passes copy the other's
#    records out of them, until the log is 70% live again.
vol_create() { "$ADMIN" volume create --dir "$CLUSTER_DIR" --name "$1" \
    --size 64M >/dev/null || fail "creating $1"; }
vol_create a
vol_create b
nbdkit_start nbd
PATH=/usr/bin:$PATH nbdsh -u "nbd+unix:///a?socket=$TESTDIR/nbd.sock" -c "
import nbd, random
b = nbd.NBD()
b.connect_uri('nbd+unix:///b?socket=$TESTDIR/nbd.sock')
r = random.Random(5)
for i in range(16):
    h.pwrite(r.randbytes($MiB), i * $MiB)
    b.pwrite(r.randbytes($MiB), i * $MiB)
h.flush()
b.flush()
" || fail "writing a and b"
nbdkit_stop nbd
before=$(sizes)
log "16 MiB written to each of a and b: servers hold $before bytes"
"$ADMIN" volume delete --dir "$CLUSTER_DIR" --name a >/dev/null ||
    fail "deleting a"
read -ra a <<<"$before"
limits=$(for x in "${a[@]}"; do echo $((x - 4 * MiB)); done | paste -sd' ')
wait_below "$limits" "delete of a beside b"
grep -h "idle compaction: done" "$TESTDIR/log/server-0.log" >&2
log "ok"
