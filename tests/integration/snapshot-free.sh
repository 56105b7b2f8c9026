#!/bin/bash
# A deleted snapshot's space comes back while a writer keeps every
# server busy (t=1).  A server prunes up to 4096 of the snapshot's
# blocks when the delete arrives and the rest on its compaction timer
# (server/compact_timer.c); that timer skips its compaction while
# clients keep the server busy, and so, once, did the pruning: the
# space of a snapshot larger than 4096 blocks stayed held until the
# writer stopped.  Here the snapshot holds 6144 blocks of its own, and
# every server must free 90% of them while fio still writes.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_fio_nbd
NBDKIT_PIN=
NBDKIT_SHARED=
OWN=384		# MiB the snapshot holds of its own: 6144 blocks
cluster_start 1
"$ADMIN" cluster finalize --dir "$CLUSTER_DIR" >/dev/null ||
    fail "cluster finalize"
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name v --size 512M \
    >/dev/null || fail "creating v"
nbdkit_start nbd
URI="nbd+unix:///v?socket=$TESTDIR/nbd.sock"

seqw()
{
	fio --name="$1" --ioengine=nbd --uri="$URI" --iodepth=16 --rw=write \
	    --bs=64k --size="${OWN}M" --output="$TESTDIR/log/fio-$1.out" \
	    >/dev/null 2>&1 || { cat "$TESTDIR/log/fio-$1.out" >&2;
	    fail "fio $1"; }
}

seqw fill
"$ADMIN" snap create --dir "$CLUSTER_DIR" --volume v --name s >/dev/null ||
    fail "snap create"
seqw overwrite
before=$(status_each bytes_live)
log "live bytes with the snapshot: $before"

# The writer: random writes over the first 32 MiB for as long as the
# check may take, so every server stays busy throughout.
fio --name=load --ioengine=nbd --uri="$URI" --iodepth=16 --rw=randwrite \
    --bs=64k --size=32M --time_based --runtime=60 \
    --output="$TESTDIR/log/fio-load.out" >/dev/null 2>&1 &
FIO=$!
_track "$FIO" fio
sleep 2
"$ADMIN" snap delete --dir "$CLUSTER_DIR" --volume v --name s >/dev/null ||
    fail "snap delete"
freed=0
for ((i = 0; i < 30; i++)); do
	sleep 1
	_alive "$FIO" || fail "fio stopped before the space came back"
	now=$(status_each bytes_live)
	if python3 -c "import sys
a, b = (list(map(int, x.split())) for x in sys.argv[1:3])
own = $OWN * 2**20 / 2          # per server: x n/k / n at t = 1
print('freed per server: %s of %d' % (' '.join(str(x - y) for x, y in
      zip(a, b)), own), file=sys.stderr)
sys.exit(0 if all(x - y >= 0.9 * own for x, y in zip(a, b)) else 1)" \
	    "$before" "$now"; then
		freed=1
		break
	fi
done
[ "$freed" = 1 ] || fail "a server kept the deleted snapshot's space" \
    "while fio wrote (live $before -> $now)"
log "every server freed 90% within $((i + 1)) s, fio still writing"
kill "$FIO" 2>/dev/null || true
_reap "$FIO"
_forget_pid "$FIO"
log "PASS"
