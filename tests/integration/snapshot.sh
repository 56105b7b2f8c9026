#!/bin/bash
# Snapshots of a volume (t=1), taken while its lease holder writes.
#
# 1. Volume v, written with pattern A through an nbdkit that holds its
#    lease; `bftblk snap create` takes s1 while that nbdkit keeps its
#    connection, and the same connection then writes pattern B over
#    half of it and a block never written before.  Every write
#    succeeds: the holder follows the generation the snapshot moved it
#    to (its log says so).
# 2. `bftblk export v@s1` is A exactly, `bftblk export v` is B; the NBD
#    export v@s1 is listed, reads A and refuses writes.
# 2b. A reader that kept a candidate of the head (block 3, pattern B)
#    sends it back as s1's (VFILTER at s1's boundary) to every server:
#    a valid write with its nonce, but of a generation above the
#    boundary, so no server takes it into the view, and v@s1 is still
#    A exactly.
# 3. The cut: a writer counts up in block 40 in a loop while s2 is
#    taken; s2's block 40 holds a count at least the last one
#    acknowledged before `snap create` was called, and below the first
#    one sent after it returned.
# 4. s1 reads the same after every server restarted, and with one
#    server stopped.
# 5. A volume with snapshots is not deleted; after `snap delete` of
#    both, it is, and the servers forgot the views.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NBDKIT_PIN=			# volumes by export name
NBDKIT_SHARED=			# one writer per volume: the lease holder

require_python_nbd /usr/bin/python3
TC=$BUILD/tests/bftblk-testclient
[ -x "$TC" ] || fail "$TC is missing: run make first"
cluster_start 1
client_add reader ro
SNAP_BLOCKS=32

sha() { sha256sum "$1" | cut -d' ' -f1; }

# expect FILE PATTERN...: the image of v (SNAP_BLOCKS + 16 blocks) after
# writing each PATTERN ("A" or "B") as step 1 does.
expect()
{
	local out=$1
	shift
	python3 - "$out" "$@" <<'EOF'
import sys
size = 64 << 20
img = bytearray(size)
for p in sys.argv[2:]:
    if p == "A":
        for b in range(32):
            img[b * 65536:(b + 1) * 65536] = bytes([0x41 + b % 26]) * 65536
        img[5 * 65536 + 100:5 * 65536 + 4196] = b"a" * 4096
    elif p == "B":
        for b in range(16):
            img[b * 65536:(b + 1) * 65536] = bytes([0x61 + b % 26]) * 65536
        img[33 * 65536:34 * 65536] = b"new block" * 7281 + b"x" * 7
open(sys.argv[1], "wb").write(img)
EOF
}

log "step 1: v written (A), s1 taken under its writer, then B"
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name v --size 64M \
    >/dev/null || fail "creating v"
NBDKIT_ARGS="-v" nbdkit_start nbd
V_URI="nbd+unix:///v?socket=$TESTDIR/nbd.sock"
# One connection for A, the snapshot (taken from here), and B.
PATH=/usr/bin:$PATH nbdsh -u "$V_URI" -c "
import subprocess
for b in range(32):
    h.pwrite(bytes([0x41 + b % 26]) * 65536, b * 65536)
h.pwrite(b'a' * 4096, 5 * 65536 + 100)
h.flush()
r = subprocess.run(['$ADMIN', 'snap', 'create', '--dir', '$CLUSTER_DIR',
    '--volume', 'v', '--name', 's1'], capture_output=True, text=True)
print(r.stdout + r.stderr, end='')
assert r.returncode == 0, 'snap create failed'
for b in range(16):
    h.pwrite(bytes([0x61 + b % 26]) * 65536, b * 65536)
h.pwrite(b'new block' * 7281 + b'x' * 7, 33 * 65536)
h.flush()
" >"$TESTDIR/log/step1.log" 2>&1 ||
    { cat "$TESTDIR/log/step1.log" >&2; fail "step 1"; }
cat "$TESTDIR/log/step1.log" >&2
grep -q "a snapshot re-asserted this holder's claim" \
    "$TESTDIR/log/nbdkit-nbd.log" ||
    fail "the holder did not say it followed the snapshot's generation"

log "step 2: the snapshot is A, the volume B"
expect "$TESTDIR/a.img" A
expect "$TESTDIR/ab.img" A B
"$ADMIN" export --dir "$CLUSTER_DIR" v@s1 "$TESTDIR/s1.img" \
    2>"$TESTDIR/log/export-s1.log" ||
    { cat "$TESTDIR/log/export-s1.log" >&2; fail "export v@s1"; }
grep -q "export: 64/64 MiB (100%)" "$TESTDIR/log/export-s1.log" ||
    fail "export shows no progress"
[ "$(sha "$TESTDIR/s1.img")" = "$(sha "$TESTDIR/a.img")" ] ||
    fail "v@s1 is not what v held when s1 was taken"
"$ADMIN" export --dir "$CLUSTER_DIR" v - 2>/dev/null >"$TESTDIR/v.img" ||
    fail "export v"
[ "$(sha "$TESTDIR/v.img")" = "$(sha "$TESTDIR/ab.img")" ] ||
    fail "v is not A overwritten with B"
PATH=/usr/bin:$PATH nbdinfo --list "nbd+unix:///?socket=$TESTDIR/nbd.sock" \
    >"$TESTDIR/list.txt" 2>&1 || fail "nbdinfo --list"
grep -q "export=\"v@s1\"\|^export=v@s1\|v@s1" "$TESTDIR/list.txt" ||
    { cat "$TESTDIR/list.txt" >&2; fail "v@s1 is not listed"; }
PATH=/usr/bin:$PATH nbdsh -u "nbd+unix:///v@s1?socket=$TESTDIR/nbd.sock" -c "
import hashlib
assert h.is_read_only(), 'v@s1 is writable'
data = b''.join(h.pread(1 << 20, o) for o in range(0, 64 << 20, 1 << 20))
assert hashlib.sha256(data).hexdigest() == '$(sha "$TESTDIR/a.img")'
try:
    h.pwrite(b'x' * 512, 0)
    raise SystemExit('a write to v@s1 succeeded')
except nbd.Error:
    pass
" || fail "the NBD export v@s1"
"$ADMIN" snap list --dir "$CLUSTER_DIR" --volume v --json \
    >"$TESTDIR/snaps.json" || fail "snap list"
python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
assert [x['name'] for x in s] == ['s1'], s
assert s[0]['size'] == 64 << 20, s" "$TESTDIR/snaps.json" ||
    { cat "$TESTDIR/snaps.json" >&2; fail "snap list is wrong"; }

log "step 2b: the head's block 3 written back as s1's"
VOL=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[0]
    ['volume_id'])" "$TESTDIR/snaps.json")
BOUNDARY=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[0]
    ['boundary'])" "$TESTDIR/snaps.json")
ADDR=$(((VOL << 40) | 3))
"$TC" collect-save --config "$CLUSTER_DIR/bftblk.conf" \
    --keys "$CLUSTER_DIR/reader.key" --block "$ADDR" \
    --data-seed "$TESTDIR/head3" >"$TESTDIR/log/collect.log" 2>&1 ||
    { cat "$TESTDIR/log/collect.log" >&2; fail "collect-save"; }
"$TC" filter-back --config "$CLUSTER_DIR/bftblk.conf" \
    --keys "$CLUSTER_DIR/reader.key" --block "$ADDR" --view "$BOUNDARY" \
    --data-seed "$TESTDIR/head3" >"$TESTDIR/log/vfilter.log" 2>&1 ||
    { cat "$TESTDIR/log/vfilter.log" >&2; fail "filter-back --view"; }
sed 's/^/  /' "$TESTDIR/log/vfilter.log" >&2
"$ADMIN" export --dir "$CLUSTER_DIR" v@s1 - 2>/dev/null >"$TESTDIR/s1a.img" ||
    fail "export v@s1 after the write-back"
[ "$(sha "$TESTDIR/s1a.img")" = "$(sha "$TESTDIR/a.img")" ] ||
    fail "a reader moved the head's block 3 into v@s1"

log "step 3: the cut against a writer that keeps counting"
PATH=/usr/bin:$PATH nbdsh -u "$V_URI" -c "
import struct, time
n = 0
with open('$TESTDIR/counts.txt', 'w') as f:
    deadline = time.time() + 12
    while time.time() < deadline:
        n += 1
        t0 = time.time()
        h.pwrite(struct.pack('<Q', n) * 8192, 40 * 65536)
        f.write('%d %.6f %.6f\n' % (n, t0, time.time()))
        f.flush()
" >"$TESTDIR/log/counter.log" 2>&1 &
COUNTER=$!
_track "$COUNTER" counter
sleep 3
CALLED=$(date +%s.%N)
"$ADMIN" snap create --dir "$CLUSTER_DIR" --volume v --name s2 ||
    fail "snap create s2 under load"
RETURNED=$(date +%s.%N)
_reap "$COUNTER"
_forget_pid "$COUNTER"
[ "$_STATUS" -eq 0 ] ||
    { cat "$TESTDIR/log/counter.log" >&2; fail "the counting writer"; }
"$ADMIN" export --dir "$CLUSTER_DIR" v@s2 "$TESTDIR/s2.img" 2>/dev/null ||
    fail "export v@s2"
python3 - "$TESTDIR/counts.txt" "$TESTDIR/s2.img" "$CALLED" "$RETURNED" \
    <<'EOF' || fail "s2 is not cut between the call and its return"
import struct, sys
rows = [tuple(float(x) for x in l.split()) for l in open(sys.argv[1])]
called, returned = float(sys.argv[3]), float(sys.argv[4])
img = open(sys.argv[2], "rb").read()
got = struct.unpack("<Q", img[40 * 65536:40 * 65536 + 8])[0]
assert img[40 * 65536:41 * 65536] == struct.pack("<Q", got) * 8192
done_before = max([int(n) for n, t0, t1 in rows if t1 < called], default=0)
sent_after = min([int(n) for n, t0, t1 in rows if t0 > returned],
                 default=None)
print("s2 holds count %d; last acknowledged before the call %d; first "
      "sent after the return %s; %d writes in all"
      % (got, done_before, sent_after, len(rows)), file=sys.stderr)
assert sent_after is not None, "no write after the snapshot returned"
assert done_before <= got < sent_after
EOF

log "step 4: s1 after every server restarted, and with one stopped"
nbdkit_stop nbd
for ((i = 0; i < CLUSTER_N; i++)); do
	server_kill "$i"
	server_start "$i"
done
"$ADMIN" export --dir "$CLUSTER_DIR" v@s1 - 2>/dev/null >"$TESTDIR/s1b.img" ||
    fail "export v@s1 after the restarts"
[ "$(sha "$TESTDIR/s1b.img")" = "$(sha "$TESTDIR/a.img")" ] ||
    fail "v@s1 changed across restarts"
server_kill 2
"$ADMIN" export --dir "$CLUSTER_DIR" v@s1 - 2>/dev/null >"$TESTDIR/s1c.img" ||
    fail "export v@s1 with server 2 stopped"
[ "$(sha "$TESTDIR/s1c.img")" = "$(sha "$TESTDIR/a.img")" ] ||
    fail "v@s1 differs with server 2 stopped"
server_start 2

log "step 5: deletes"
if "$ADMIN" volume delete --dir "$CLUSTER_DIR" --name v \
    >"$TESTDIR/log/del.log" 2>&1; then
	fail "a volume with snapshots was deleted"
fi
grep -q "has snapshots (s1, s2)" "$TESTDIR/log/del.log" ||
    { cat "$TESTDIR/log/del.log" >&2; fail "the refusal names no snapshots"; }
for s in s1 s2; do
	"$ADMIN" snap delete --dir "$CLUSTER_DIR" --volume v --name "$s" \
	    >"$TESTDIR/log/snapdel-$s.log" 2>&1 ||
	    { cat "$TESTDIR/log/snapdel-$s.log" >&2; fail "snap delete $s"; }
	grep -q "every server forgot it" "$TESTDIR/log/snapdel-$s.log" ||
	    fail "snap delete $s: not every server forgot it"
done
if "$ADMIN" export --dir "$CLUSTER_DIR" v@s1 - >/dev/null 2>&1; then
	fail "a deleted snapshot still exports"
fi
"$ADMIN" volume delete --dir "$CLUSTER_DIR" --name v >/dev/null ||
    fail "deleting v after its snapshots"
for ((i = 0; i < CLUSTER_N; i++)); do
	grep -q "forgot the view at generation" "$TESTDIR/log/server-$i.log" ||
	    fail "server $i did not log forgetting a view"
done
log "PASS"
