#!/bin/bash
# Clones under one Byzantine server of four (t=1), in several modes in
# turn.  A clone reads its parent snapshot for blocks it never wrote, so
# the attack of interest is a liar saying a written block was never
# written (hide-writes): the reader must not go to the parent while a
# write to the clone completed, since n-t answers then always hold a
# candidate from a correct server.  Also view-head (the parent's head
# offered as the snapshot's), trim-lie, stale and mute.
#
# v is written with P, snapshot v@s taken, v written over with O, clone
# c made of v@s; half of c's blocks are then written with Q and one
# 4 KiB piece patched into a block c never wrote.  With server (k mod 4)
# in mode k, c must export as P with Q's half and the patch, v@s as P,
# v as O; each phase then writes one more block of c under the liar.
. "$(dirname "${BASH_SOURCE[0]}")/byz-lib.bash"

MODES=(hide-writes view-head trim-lie stale mute hide-writes,view-head)

NBDKIT_PIN=
NBDKIT_SHARED=
cluster_start 1
"$ADMIN" cluster finalize --dir "$CLUSTER_DIR" >/dev/null ||
    fail "cluster finalize"
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name v --size 8M \
    >/dev/null || fail "creating v"
byz_nbdkit_start a

# image NAME: 8 MiB of NAME's bytes into $TESTDIR/NAME.img.
image()
{
	python3 -c "
import random, sys
r = random.Random('$BYZ_SEED-' + sys.argv[1])
open(sys.argv[2], 'wb').write(r.randbytes(8 << 20))" "$1" "$TESTDIR/$1.img"
}

# nbd VOLUME PYTHON: runs PYTHON in nbdsh on export VOLUME.
nbd()
{
	PATH=/usr/bin:$PATH nbdsh -u "nbd+unix:///$1?socket=$TESTDIR/a.sock" \
	    -c "$2"
}

# expect BLOCK...: c's image: P, then Q's first half, the patch, and
# for each BLOCK, that block's phase bytes (block b holds b+1 repeated).
expect()
{
	python3 - "$TESTDIR" "$@" <<'EOF'
import sys
d = sys.argv[1]
img = bytearray(open(d + "/P.img", "rb").read())
q = open(d + "/Q.img", "rb").read()
img[:4 << 20] = q[:4 << 20]
img[100 * 65536 + 4096:100 * 65536 + 8192] = b"patch!!!" * 512
for b in sys.argv[2:]:
    b = int(b)
    img[b * 65536:(b + 1) * 65536] = bytes([b % 251 + 1]) * 65536
open(d + "/want.img", "wb").write(img)
EOF
}

image P
image O
image Q
nbd v "
d = open('$TESTDIR/P.img', 'rb').read()
for o in range(0, len(d), 1 << 20):
    h.pwrite(d[o:o + (1 << 20)], o)
h.flush()" || fail "writing P"
"$ADMIN" snap create --dir "$CLUSTER_DIR" --volume v --name s >/dev/null ||
    fail "snap create v@s"
nbd v "
d = open('$TESTDIR/O.img', 'rb').read()
for o in range(0, len(d), 1 << 20):
    h.pwrite(d[o:o + (1 << 20)], o)
h.flush()" || fail "writing O"
"$ADMIN" volume clone --dir "$CLUSTER_DIR" --from v@s --name c \
    >/dev/null || fail "clone c of v@s"
nbd c "
d = open('$TESTDIR/Q.img', 'rb').read()
for o in range(0, 4 << 20, 1 << 20):
    h.pwrite(d[o:o + (1 << 20)], o)
h.pwrite(b'patch!!!' * 512, 100 * 65536 + 4096)
h.flush()" || fail "writing Q into c"

written=()
for k in "${!MODES[@]}"; do
	liar=$((k % CLUSTER_N))
	log "phase $k: server $liar is ${MODES[$k]}"
	byz_switch "$liar" "${MODES[$k]}"
	b=$((64 + 10 * k))
	nbd c "h.pwrite(bytes([$b % 251 + 1]) * 65536, $b * 65536); h.flush()" ||
	    fail "phase $k: writing block $b of c"
	written+=("$b")
	expect "${written[@]}"
	"$ADMIN" export --dir "$CLUSTER_DIR" --timeout 5 c "$TESTDIR/got.img" \
	    2>"$TESTDIR/log/export.log" ||
	    { cat "$TESTDIR/log/export.log" >&2; fail "phase $k: export c"; }
	cmp "$TESTDIR/got.img" "$TESTDIR/want.img" >&2 ||
	    fail "phase $k (${MODES[$k]}): c is not what was written to it"
	"$ADMIN" export --dir "$CLUSTER_DIR" --timeout 5 v@s "$TESTDIR/got.img" \
	    2>/dev/null || fail "phase $k: export v@s"
	cmp -s "$TESTDIR/got.img" "$TESTDIR/P.img" ||
	    fail "phase $k (${MODES[$k]}): v@s is not P"
	byz_switch "$liar" honest
done
log "PASS"
