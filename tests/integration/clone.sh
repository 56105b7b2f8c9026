#!/bin/bash
# Clones, flatten and rollback (t=1).
#
# 0. A clone is refused until the cluster is finalized (its table entry
#    is one release 0.2.0 clients would refuse), and saying so.
# 1. Volume v (16 MiB) imported with image A (every fourth block zeros),
#    snapshot v@s1, clone c of it: c reads A exactly, and making it
#    wrote nothing to the servers' blocks of c.
# 2. Through NBD, c gets a whole block, a 4 KiB write inside a block it
#    never wrote (read-modify-write over the parent's data), a trim and
#    a write-zeroes of blocks that read as A: c is A so modified, v is
#    still A.
# 3. c@cs1, then one more write to c; clone cc of c@cs1 reads as c did
#    at cs1 (two levels of parents).
# 4. v@s1 is not deleted while c depends on it (the message names c);
#    flatten c, which then has no parent and reads the same; v@s1 is
#    still held by c@cs1 (a snapshot keeps its parent), which cc holds;
#    after cc and c@cs1 go, v@s1 goes.  c still reads the same.
# 5. A clone shrunk and grown again reads zeros past the cut, not its
#    parent's data.
# 6. Rollback: v@s2 (A), then v grown, overwritten with B and its first
#    64 blocks trimmed (v@s2 still A); rollback while nbdkit holds v's
#    lease is refused; after, v is A again at its old size.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NBDKIT_PIN=			# volumes by export name
NBDKIT_SHARED=			# one writer per volume: the lease holder

require_python_nbd /usr/bin/python3
cluster_start 1

sha() { sha256sum "$1" | cut -d' ' -f1; }
export_to() { "$ADMIN" export --dir "$CLUSTER_DIR" "$1" "$2" \
    2>>"$TESTDIR/log/export.log" ||
    fail "export $1"; }
same() { [ "$(sha "$1")" = "$(sha "$2")" ] || fail "$3"; }

# image OUT BLOCKS SEED: block b is byte (SEED + b) % 251 + 1 repeated,
# every fourth block zeros.
image()
{
	python3 - "$@" <<'EOF'
import sys
out, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
img = bytearray(n * 65536)
for b in range(n):
    if b % 4 != 3:
        img[b * 65536:(b + 1) * 65536] = bytes([(seed + b) % 251 + 1]) * 65536
open(out, "wb").write(img)
EOF
}

log "step 0: no clone before the cluster is finalized"
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name early --size 1M \
    >/dev/null || fail "creating early"
"$ADMIN" snap create --dir "$CLUSTER_DIR" --volume early --name s \
    >/dev/null || fail "snap create early@s"
"$ADMIN" volume clone --dir "$CLUSTER_DIR" --from early@s --name e1 \
    >"$TESTDIR/log/early.log" 2>&1 && fail "a clone before finalize"
grep -q "need the cluster finalized" "$TESTDIR/log/early.log" ||
    { cat "$TESTDIR/log/early.log" >&2; fail "the refusal does not say why"; }
"$ADMIN" cluster finalize --dir "$CLUSTER_DIR" >/dev/null ||
    fail "cluster finalize"

log "step 1: v imported with A, s1 taken, c cloned from it"
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name v --size 16M \
    >/dev/null || fail "creating v"
image "$TESTDIR/a.img" 256 7
"$ADMIN" import --dir "$CLUSTER_DIR" "$TESTDIR/a.img" v 2>/dev/null ||
    fail "import A into v"
"$ADMIN" snap create --dir "$CLUSTER_DIR" --volume v --name s1 \
    >/dev/null || fail "snap create v@s1"
used_before=$("$ADMIN" volume list --dir "$CLUSTER_DIR" --json) ||
    fail "volume list"
"$ADMIN" volume clone --dir "$CLUSTER_DIR" --from v@s1 --name c ||
    fail "volume clone"
"$ADMIN" volume info --dir "$CLUSTER_DIR" --name c >"$TESTDIR/info-c.txt" ||
    fail "volume info c"
grep -q "^parent: v@s1" "$TESTDIR/info-c.txt" ||
    { cat "$TESTDIR/info-c.txt" >&2; fail "c's parent is not shown"; }
grep -q "^used on servers: 0 " "$TESTDIR/info-c.txt" ||
    { cat "$TESTDIR/info-c.txt" >&2; fail "a clone took server space"; }
export_to c "$TESTDIR/c0.img"
same "$TESTDIR/c0.img" "$TESTDIR/a.img" "c does not read as v@s1"

log "step 2: c written through NBD; v unchanged"
nbdkit_start nbd
C_URI="nbd+unix:///c?socket=$TESTDIR/nbd.sock"
PATH=/usr/bin:$PATH nbdsh -u "$C_URI" -c "
h.pwrite(b'W' * 65536, 10 * 65536)
h.pwrite(b'p' * 4096, 20 * 65536 + 8192)
h.trim(65536, 30 * 65536)
h.zero(65536, 40 * 65536)
h.flush()
" || fail "writing c"
python3 - "$TESTDIR/a.img" "$TESTDIR/c1.img" <<'EOF'
import sys
img = bytearray(open(sys.argv[1], "rb").read())
img[10 * 65536:11 * 65536] = b"W" * 65536
img[20 * 65536 + 8192:20 * 65536 + 12288] = b"p" * 4096
img[30 * 65536:31 * 65536] = bytes(65536)
img[40 * 65536:41 * 65536] = bytes(65536)
open(sys.argv[2], "wb").write(img)
EOF
export_to c "$TESTDIR/c.img"
same "$TESTDIR/c.img" "$TESTDIR/c1.img" "c is not A with c's writes"
export_to v "$TESTDIR/v.img"
same "$TESTDIR/v.img" "$TESTDIR/a.img" "a write to c changed v"

log "step 3: c@cs1, a later write, and cc cloned from c@cs1"
"$ADMIN" snap create --dir "$CLUSTER_DIR" --volume c --name cs1 \
    >/dev/null || fail "snap create c@cs1"
PATH=/usr/bin:$PATH nbdsh -u "$C_URI" -c "
h.pwrite(b'L' * 65536, 50 * 65536)
h.flush()
" || fail "writing c after cs1"
"$ADMIN" volume clone --dir "$CLUSTER_DIR" --from c@cs1 --name cc \
    >/dev/null || fail "clone cc of c@cs1"
export_to cc "$TESTDIR/cc.img"
same "$TESTDIR/cc.img" "$TESTDIR/c1.img" "cc does not read as c@cs1"
python3 - "$TESTDIR/c1.img" "$TESTDIR/c2.img" <<'EOF'
import sys
img = bytearray(open(sys.argv[1], "rb").read())
img[50 * 65536:51 * 65536] = b"L" * 65536
open(sys.argv[2], "wb").write(img)
EOF
export_to c "$TESTDIR/c.img"
same "$TESTDIR/c.img" "$TESTDIR/c2.img" "c lost a write made after cs1"

log "step 4: parents kept while clones depend; flatten"
nbdkit_stop nbd
if "$ADMIN" snap delete --dir "$CLUSTER_DIR" --volume v --name s1 \
    >"$TESTDIR/log/del1.log" 2>&1; then
	fail "v@s1 was deleted under clone c"
fi
grep -q "parent of c" "$TESTDIR/log/del1.log" ||
    { cat "$TESTDIR/log/del1.log" >&2; fail "the refusal does not name c"; }
"$ADMIN" volume flatten --dir "$CLUSTER_DIR" --name c \
    2>"$TESTDIR/log/flatten.log" ||
    { cat "$TESTDIR/log/flatten.log" >&2; fail "flatten c"; }
grep -q "flatten: 256/256 blocks (100%)" "$TESTDIR/log/flatten.log" ||
    { cat "$TESTDIR/log/flatten.log" >&2; fail "flatten shows no progress"; }
"$ADMIN" volume info --dir "$CLUSTER_DIR" --name c >"$TESTDIR/info-c.txt" ||
    fail "volume info c"
! grep -q "^parent:" "$TESTDIR/info-c.txt" || fail "c still has a parent"
export_to c "$TESTDIR/c.img"
same "$TESTDIR/c.img" "$TESTDIR/c2.img" "flattening changed c"
"$ADMIN" snap delete --dir "$CLUSTER_DIR" --volume v --name s1 \
    >"$TESTDIR/log/del2.log" 2>&1 && fail "v@s1 deleted under c@cs1"
grep -q "parent of c@cs1" "$TESTDIR/log/del2.log" ||
    { cat "$TESTDIR/log/del2.log" >&2; fail "the refusal does not name c@cs1"; }
"$ADMIN" snap delete --dir "$CLUSTER_DIR" --volume c --name cs1 \
    >"$TESTDIR/log/del3.log" 2>&1 && fail "c@cs1 deleted under cc"
grep -q "parent of cc" "$TESTDIR/log/del3.log" ||
    { cat "$TESTDIR/log/del3.log" >&2; fail "the refusal does not name cc"; }
"$ADMIN" volume delete --dir "$CLUSTER_DIR" --name cc >/dev/null ||
    fail "delete cc"
"$ADMIN" snap delete --dir "$CLUSTER_DIR" --volume c --name cs1 \
    >/dev/null || fail "delete c@cs1"
"$ADMIN" snap delete --dir "$CLUSTER_DIR" --volume v --name s1 \
    >/dev/null || fail "delete v@s1 once nothing depends on it"
export_to c "$TESTDIR/c.img"
same "$TESTDIR/c.img" "$TESTDIR/c2.img" "c changed when its old parent went"

log "step 5: a clone shrunk and grown again reads zeros past the cut"
"$ADMIN" snap create --dir "$CLUSTER_DIR" --volume v --name s2 \
    >/dev/null || fail "snap create v@s2"
"$ADMIN" volume clone --dir "$CLUSTER_DIR" --from v@s2 --name d \
    >/dev/null || fail "clone d"
"$ADMIN" volume resize --dir "$CLUSTER_DIR" --name d --size 8M --force \
    >/dev/null || fail "shrink d"
"$ADMIN" volume resize --dir "$CLUSTER_DIR" --name d --size 16M \
    >/dev/null || fail "grow d"
python3 - "$TESTDIR/a.img" "$TESTDIR/d.img" <<'EOF'
import sys
img = bytearray(open(sys.argv[1], "rb").read())
img[8 << 20:] = bytes(8 << 20)
open(sys.argv[2], "wb").write(img)
EOF
export_to d "$TESTDIR/d-now.img"
same "$TESTDIR/d-now.img" "$TESTDIR/d.img" "d reads its parent past a cut"
"$ADMIN" volume delete --dir "$CLUSTER_DIR" --name d >/dev/null ||
    fail "delete d"

log "step 6: rollback of v to s2 after a resize and an overwrite"
"$ADMIN" volume resize --dir "$CLUSTER_DIR" --name v --size 20M \
    >/dev/null || fail "grow v"
image "$TESTDIR/b.img" 320 101
"$ADMIN" import --dir "$CLUSTER_DIR" "$TESTDIR/b.img" v 2>/dev/null ||
    fail "import B into v"
nbdkit_start nbd
V_URI="nbd+unix:///v?socket=$TESTDIR/nbd.sock"
# Trim of the head frees nothing a snapshot still holds.
PATH=/usr/bin:$PATH nbdsh -u "$V_URI" -c "
h.trim(64 * 65536, 0)
h.flush()
" || fail "trimming v"
export_to v@s2 "$TESTDIR/s2.img"
same "$TESTDIR/s2.img" "$TESTDIR/a.img" "a trim of v changed v@s2"
# s2 alone keeps A's 192 non-zero blocks now (2 fragments of 32 KiB on
# each server, at least): snap list says so, all 4 servers answering.
"$ADMIN" snap list --dir "$CLUSTER_DIR" --volume v --json \
    >"$TESTDIR/snaps.json" || fail "snap list"
python3 - "$TESTDIR/snaps.json" <<'EOF' || fail "snap list's space"
import json, sys
s = {x["name"]: x for x in json.load(open(sys.argv[1]))}
x = s["s2"]
print("v@s2 holds %d bytes alone, %d servers said" %
      (x["exclusive_bytes"], x["space_servers"]), file=sys.stderr)
assert x["space_servers"] == 4, x
assert x["exclusive_bytes"] >= 192 * 4 * 32768, x
EOF
# A connection that holds v's lease while rollback is tried.
PATH=/usr/bin:$PATH nbdsh -u "$V_URI" -c "
import subprocess
h.pwrite(b'h' * 512, 0)
h.flush()
r = subprocess.run(['$ADMIN', 'snap', 'rollback', '--dir', '$CLUSTER_DIR',
    '--volume', 'v', '--name', 's2'], capture_output=True, text=True)
print(r.stdout + r.stderr, end='')
assert r.returncode != 0, 'rollback ran under a live writer'
" >"$TESTDIR/log/busy.log" 2>&1 ||
    { cat "$TESTDIR/log/busy.log" >&2; fail "rollback under a writer"; }
grep -q "in use\|taken by\|holds" "$TESTDIR/log/busy.log" ||
    { cat "$TESTDIR/log/busy.log" >&2; fail "the refusal does not say why"; }
nbdkit_stop nbd
"$ADMIN" snap rollback --dir "$CLUSTER_DIR" --volume v --name s2 \
    2>"$TESTDIR/log/rollback.log" ||
    { cat "$TESTDIR/log/rollback.log" >&2; fail "rollback"; }
grep -q "rollback: .* blocks (100%)" "$TESTDIR/log/rollback.log" ||
    { cat "$TESTDIR/log/rollback.log" >&2; fail "rollback shows no progress"; }
export_to v "$TESTDIR/v.img"
same "$TESTDIR/v.img" "$TESTDIR/a.img" "v is not A again after rollback"
"$ADMIN" volume info --dir "$CLUSTER_DIR" --name v | grep -q "^size: 16777216 " ||
    fail "rollback did not give v its size at s2 back"
log "ok"
