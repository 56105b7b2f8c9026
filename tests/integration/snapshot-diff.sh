#!/bin/bash
# Incremental backup (t=1): export, import, export-diff and import-diff
# chained over three snapshots reproduce the source exactly.
#
# 1. Volume v (64 MiB) filled with random bytes, snapshot s1; `bftblk
#    export v@s1` imported into volume c, snapshot c@s1.
# 2. 1% of v's blocks rewritten and two trimmed, snapshot s2; the
#    stream from s1 to s2 holds those blocks and no more (its size is
#    within a block's headers of the data changed); import-diff onto c
#    takes c@s2, which exports byte for byte as v@s2.
# 3. The same from s2 to s3, and from s3 to the volume now.
# 4. With a server stopped, export-diff refuses: a listing of changes
#    needs every server.  A stream applied twice is refused.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NBDKIT_PIN=
NBDKIT_SHARED=
require_python_nbd /usr/bin/python3
cluster_start 1
BS=65536

sha() { sha256sum "$1" | cut -d' ' -f1; }
adm() { "$ADMIN" "$@" --dir "$CLUSTER_DIR"; }

# rewrite SEED BLOCKS...: those blocks of v with SEED's bytes; "tN"
# trims block N.
rewrite()
{
	local seed=$1
	shift
	PATH=/usr/bin:$PATH nbdsh -u "nbd+unix:///v?socket=$TESTDIR/nbd.sock" \
	    -c "
import random
r = random.Random('$seed')
for b in '$*'.split():
    if b.startswith('t'):
        h.trim($BS, int(b[1:]) * $BS)
    else:
        h.pwrite(r.randbytes($BS), int(b) * $BS)
h.flush()" || fail "rewriting v ($seed)"
}

# same A B: exports A and B (volume or V@S) and compares them.
same()
{
	adm export "$1" "$TESTDIR/a.img" 2>/dev/null || fail "export $1"
	adm export "$2" "$TESTDIR/b.img" 2>/dev/null || fail "export $2"
	[ "$(sha "$TESTDIR/a.img")" = "$(sha "$TESTDIR/b.img")" ] ||
	    fail "$1 and $2 differ"
}

# step FROM TO: export-diff FROM -> v@TO (or v), import-diff onto c.
step()
{
	local from=$1 to=$2 name=v${2:+@$2} size
	adm export-diff --from-snap "$from" "$name" "$TESTDIR/$from-$2.diff" \
	    2>"$TESTDIR/log/diff-$from.log" ||
	    { cat "$TESTDIR/log/diff-$from.log" >&2; fail "export-diff $from"; }
	grep -h "export-diff: " "$TESTDIR/log/diff-$from.log" | tail -1 >&2
	log "stream $from -> ${2:-now}: $(stat -c %s \
	    "$TESTDIR/$from-$2.diff") bytes"
	adm import-diff "$TESTDIR/$from-$2.diff" c \
	    >"$TESTDIR/log/import-$from.log" 2>&1 ||
	    { cat "$TESTDIR/log/import-$from.log" >&2; fail "import-diff $from"; }
}

log "step 1: v filled, s1, a full copy in c"
adm volume create --name v --size 64M >/dev/null || fail "creating v"
adm volume create --name c --size 64M >/dev/null || fail "creating c"
nbdkit_start nbd
PATH=/usr/bin:$PATH nbdsh -u "nbd+unix:///v?socket=$TESTDIR/nbd.sock" -c "
import random
r = random.Random('fill')
for o in range(0, 64 << 20, 1 << 20):
    h.pwrite(r.randbytes(1 << 20), o)
h.flush()" || fail "filling v"
adm snap create --volume v --name s1 >/dev/null || fail "snap s1"
adm export v@s1 "$TESTDIR/s1.img" 2>/dev/null || fail "export v@s1"
adm import "$TESTDIR/s1.img" c 2>"$TESTDIR/log/import.log" ||
    { cat "$TESTDIR/log/import.log" >&2; fail "import into c"; }
adm snap create --volume c --name s1 >/dev/null || fail "snap c@s1"
same v@s1 c@s1

log "step 2: 1% rewritten, two trimmed; s2 through a stream"
# 1024 blocks: ten rewritten, among them a run of four; two trimmed.
rewrite two 3 100 101 102 103 517 700 701 900 1023 t40 t41
adm snap create --volume v --name s2 >/dev/null || fail "snap s2"
step s1 s2
size=$(stat -c %s "$TESTDIR/s1-s2.diff")
# Ten blocks of data, and the records' headers: no other block.
[ "$size" -ge $((10 * BS)) ] && [ "$size" -lt $((10 * BS + 1024)) ] ||
    fail "the stream from s1 to s2 is $size bytes, not ten blocks"
grep -q "and took that snapshot" "$TESTDIR/log/import-s1.log" ||
    fail "import-diff did not take c@s2"
same v@s2 c@s2

log "step 3: s2 -> s3, then s3 -> the volume now"
rewrite three 0 1 2 40 333 334
adm snap create --volume v --name s3 >/dev/null || fail "snap s3"
step s2 s3
same v@s3 c@s3
rewrite four 5 6 7 8 9 1000
nbdkit_stop nbd
step s3 ""
same v c

log "step 4: refusals"
if adm import-diff "$TESTDIR/s2-s3.diff" c >"$TESTDIR/log/again.log" 2>&1
then
	fail "a stream was applied twice"
fi
grep -q "has snapshot 's3' already" "$TESTDIR/log/again.log" ||
    { cat "$TESTDIR/log/again.log" >&2; fail "the refusal does not say why"; }
server_kill 3
if adm export-diff --from-snap s1 v@s3 "$TESTDIR/x.diff" \
    >"$TESTDIR/log/down.log" 2>&1; then
	fail "export-diff went on with a server down"
fi
grep -q "needs every server's answer" "$TESTDIR/log/down.log" ||
    { cat "$TESTDIR/log/down.log" >&2; fail "the refusal does not say why"; }
log "PASS"
