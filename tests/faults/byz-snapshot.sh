#!/bin/bash
# Snapshots under one Byzantine server of four (t=1), in several modes
# in turn.  A snapshot must read as its volume was when it was taken,
# whatever the liar answers for the snapshot's view: the head's data
# (view-head, whose versions are authentic, with their proofs of
# writing, but of a generation above the boundary), forged fragments,
# checksums or MACs, or nothing (mute).
#
# Each phase, with server (k mod 4) in the phase's mode: volume v is
# written with phase k's bytes, snapshot p<k> taken, v written over with
# other bytes; then every snapshot taken so far is exported and must be
# exactly its phase's image, and v the last bytes written.  The liar's
# exit line must show its mode changed or withheld replies.
. "$(dirname "${BASH_SOURCE[0]}")/byz-lib.bash"

MODES=(view-head corrupt-fragment bad-checksum bad-mac mute
    view-head,bad-checksum)

NBDKIT_PIN=
NBDKIT_SHARED=
cluster_start 1
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name v --size 16M \
    >/dev/null || fail "creating v"
byz_nbdkit_start a

# image K: phase K's bytes, the whole of v (16 MiB), into $TESTDIR/K.img.
image()
{
	python3 -c "
import random, sys
r = random.Random('$BYZ_SEED-' + sys.argv[1])
open(sys.argv[2], 'wb').write(r.randbytes(16 << 20))" "$1" "$TESTDIR/$1.img"
}

# fill K: v written whole with phase K's bytes through the export.
fill()
{
	PATH=/usr/bin:$PATH nbdsh -u "nbd+unix:///v?socket=$TESTDIR/a.sock" -c "
d = open('$TESTDIR/$1.img', 'rb').read()
for o in range(0, len(d), 1 << 20):
    h.pwrite(d[o:o + (1 << 20)], o)
h.flush()" || fail "writing v with $1's bytes"
}

same() { cmp -s "$1" "$2"; }

for k in "${!MODES[@]}"; do
	liar=$((k % CLUSTER_N))
	log "phase $k: server $liar is ${MODES[$k]}"
	byz_switch "$liar" "${MODES[$k]}"
	image "p$k"
	image "o$k"
	fill "p$k"
	"$ADMIN" snap create --dir "$CLUSTER_DIR" --volume v --name "p$k" \
	    >/dev/null || fail "phase $k: snap create"
	fill "o$k"
	for ((j = 0; j <= k; j++)); do
		"$ADMIN" export --dir "$CLUSTER_DIR" --timeout 5 "v@p$j" \
		    "$TESTDIR/got.img" 2>"$TESTDIR/log/export.log" ||
		    { cat "$TESTDIR/log/export.log" >&2;
		    fail "phase $k: export v@p$j"; }
		same "$TESTDIR/got.img" "$TESTDIR/p$j.img" ||
		    fail "phase $k (${MODES[$k]}): v@p$j is not phase $j's" \
		    "image"
	done
	"$ADMIN" export --dir "$CLUSTER_DIR" --timeout 5 v "$TESTDIR/got.img" \
	    2>/dev/null || fail "phase $k: export v"
	same "$TESTDIR/got.img" "$TESTDIR/o$k.img" ||
	    fail "phase $k: v is not the last bytes written"
	byz_switch "$liar" honest
done
log "PASS"
