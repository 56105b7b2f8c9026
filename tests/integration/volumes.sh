#!/bin/bash
# Named volumes (bftblk volume, the plugin's exports by name), t=1, on
# servers with 1 MiB segments so that compaction reclaims what a delete
# drops while the test runs.
#
# 1. create refuses a bad name, a size that is not whole 64 KiB blocks
#    and a name taken; two creates at once both land (the admin lock).
# 2. One nbdkit serves every volume by export name: nbdinfo --list shows
#    them with their sizes, and the default export is the cluster's disk
#    until a volume named "default" exists.
# 3. The same offsets of two volumes and the disk hold their own bytes,
#    also with small writes to both in flight at once; an encrypted
#    volume opens with its own key only.
# 4. Two fio crc32c verify jobs on two volumes at once, while a third
#    volume is created, written and deleted beside them: both verify.
#    qemu-img reads and writes a named export, and the fio jobs of
#    fio-jobs/ run on named exports.
# 5. resize: a grow is seen by the next connection; a shrink needs
#    --force, and growing again shows zeros past the cut.
# 6. delete: refused while a live writer holds the volume's lease;
#    then every server drops its blocks, and the data directories and
#    `volume list` show the space going; a new volume of the same name
#    has a new id and reads as zeros.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v fio >/dev/null || skip "fio is not installed"

CLUSTER_SIZE=64M
SERVER_ARGS="${SERVER_ARGS:-} --segment-mb 1"
# The plugin's defaults: one writer per volume, exports by name.
NBDKIT_SHARED=
NBDKIT_PIN=
cluster_start 1
MiB=$((1024 * 1024))

vol() { "$ADMIN" volume "$@" --dir "$CLUSTER_DIR"; }
# uri NBDKIT EXPORT
uri() { echo "nbd+unix:///$2?socket=$TESTDIR/$1.sock"; }
# on EXPORT CODE: nbdsh on export EXPORT of nbdkit nbd.
on() { PATH=/usr/bin:$PATH nbdsh -u "$(uri nbd "$1")" -c "$2"; }

# 1. create and its refusals.
vol create --name 'bad/name' --size 64M 2>"$TESTDIR/e1" &&
    fail "a name with / was accepted"
grep -q "not a volume name" "$TESTDIR/e1" || fail "no reason for a bad name"
vol create --name odd --size 100000 2>"$TESTDIR/e2" &&
    fail "a size of 100000 bytes was accepted"
grep -q "multiple of 64 KiB" "$TESTDIR/e2" || fail "no reason for a bad size"
vol create --name vm1 --size 256M & c1=$!
vol create --name vm2 --size 128M & c2=$!
wait "$c1" || fail "creating vm1 beside vm2"
wait "$c2" || fail "creating vm2 beside vm1"
vol create --name vm1 --size 64M 2>"$TESTDIR/e3" &&
    fail "a second vm1 was created"
grep -q "exists" "$TESTDIR/e3" || fail "no reason for a taken name"
vol create --name db --size 64M --encrypt >"$TESTDIR/c3" ||
    fail "creating the encrypted db"
[ -f "$CLUSTER_DIR/volumes/db.key" ] || fail "no key file for db"
vol list >"$TESTDIR/list1" || fail "volume list"
cat "$TESTDIR/list1" >&2
vol list --json >"$TESTDIR/list1.json" || fail "volume list --json"
python3 -c "
import json, sys
v = {x['name']: x for x in json.load(open(sys.argv[1]))['volumes']}
assert set(v) == {'vm1', 'vm2', 'db'}, v
assert v['vm1']['size'] == 256 << 20 and v['vm2']['size'] == 128 << 20, v
assert v['db']['encrypted'] and not v['vm1']['encrypted'], v
assert len({x['id'] for x in v.values()}) == 3, v
" "$TESTDIR/list1.json" || fail "volume list --json is wrong"
log "created vm1 and vm2 at once, and db encrypted"

# 2. One nbdkit, every volume by name.
nbdkit_start nbd
PATH=/usr/bin:$PATH nbdinfo --list --json "$(uri nbd '')" \
    >"$TESTDIR/exports.json" || fail "nbdinfo --list"
python3 -c "
import json, sys
e = {x['export-name']: x for x in json.load(open(sys.argv[1]))['exports']}
assert set(e) == {'', 'vm1', 'vm2', 'db'}, sorted(e)
assert e['vm1']['export-size'] == 256 << 20, e['vm1']
assert e['vm2']['export-size'] == 128 << 20, e['vm2']
assert e['']['export-size'] == 64 << 20, e['']
" "$TESTDIR/exports.json" || fail "nbdinfo --list does not show the volumes"
log "nbdinfo --list: the disk, vm1, vm2 and db, with their sizes"

# 3. Each volume holds its own bytes at the same offsets.
seed=$RANDOM
py="
import random
def data(tag, i): return random.Random('$seed-%s-%d' % (tag, i)).randbytes(65536)
"
for v in vm1 vm2 db ''; do
	on "$v" "$py
for i in range(8): h.pwrite(data('$v', i), i * 65536 * 7)
h.flush()" || fail "writing export '$v'"
done
for v in vm1 vm2 db ''; do
	on "$v" "$py
for i in range(8): assert h.pread(65536, i * 65536 * 7) == data('$v', i), i
" || fail "export '$v' does not read back its own bytes"
done
# Small writes to the same block numbers of two volumes, many in flight
# at once through one nbdkit: each volume must hold only its own bytes
# (the plugin's small-write batches are per volume, not per number).
for v in vm1 vm2; do
	on "$v" "
import random
r = random.Random('$seed-small-$v')
fill = b'$v'[-1:] * 4096
buf = nbd.Buffer.from_bytearray(bytearray(fill))
for rnd in range(60):
    for _ in range(16):
        h.aio_pwrite(buf, (1600 + r.randrange(32)) * 4096)
    while h.aio_in_flight() > 0:
        h.poll(-1)
h.flush()" & eval "small_$v=\$!"
done
wait "$small_vm1" || fail "small writes to vm1"
wait "$small_vm2" || fail "small writes to vm2"
for v in vm1 vm2; do
	on "$v" "
got = h.pread(32 * 4096, 1600 * 4096)
for i in range(32):
    s = got[i * 4096:(i + 1) * 4096]
    assert s in (b'$v'[-1:] * 4096, bytes(4096)), \
        'slot %d of $v holds %r' % (i, s[:8])" ||
	    fail "$v holds another volume's small writes"
done
nbdkit_start other volume-keys="$TESTDIR"
PATH=/usr/bin:$PATH nbdinfo "$(uri other db)" >/dev/null 2>&1 &&
    fail "db opened without its key"
grep -q "db.*is encrypted, and its key cannot be read" \
    "$TESTDIR/log/nbdkit-other.log" || fail "no reason for db's missing key"
vol create --name wrongkey --size 1M --encrypt >/dev/null ||
    fail "creating wrongkey"
cp "$CLUSTER_DIR/volumes/wrongkey.key" "$TESTDIR/db.key"
PATH=/usr/bin:$PATH nbdinfo "$(uri other db)" >/dev/null 2>&1 &&
    fail "db opened with another volume's key"
grep -q "is not volume 'db''s key" "$TESTDIR/log/nbdkit-other.log" ||
    fail "no reason for db's wrong key"
nbdkit_stop other
log "each export reads back its own bytes; db opens with its own key only"

# 4. fio on two volumes at once, a third created and deleted beside.
fio_verify()
{
	fio --name="verify-$1" --ioengine=nbd --uri="$(uri nbd "$1")" \
	    --iodepth=8 --size=32M --rw=randrw --rwmixread=30 \
	    --bsrange=4k-64k --verify=crc32c --do_verify=1 --verify_fatal=1 \
	    --randrepeat=0 >"$TESTDIR/log/fio-$1.log" 2>&1
}
fio_verify vm1 & f1=$!
fio_verify vm2 & f2=$!
vol create --name tmp --size 32M >/dev/null || fail "creating tmp under fio"
on tmp "h.pwrite(b'\x55' * (8 << 20), 0); h.flush()" || fail "writing tmp"
vol delete --name tmp >/dev/null || fail "deleting tmp under fio"
r1=0 r2=0
wait "$f1" || r1=$?
wait "$f2" || r2=$?
for v in vm1 vm2; do
	grep -qE 'err= *0' "$TESTDIR/log/fio-$v.log" &&
	    ! grep -qE 'verify failed|bad magic' "$TESTDIR/log/fio-$v.log" ||
	    { _show_log_tail "$TESTDIR/log/fio-$v.log" 40; fail "fio on $v"; }
done
[ "$r1" -eq 0 ] && [ "$r2" -eq 0 ] || fail "fio exit statuses $r1 $r2"
log "fio verify on vm1 and vm2 at once, tmp created and deleted: ok"

# qemu-img reads and writes a named export.
if command -v qemu-img >/dev/null; then
	qemu-img info --output=json "$(uri nbd vm2)" >"$TESTDIR/qi.json" ||
	    fail "qemu-img info on vm2"
	grep -q '"virtual-size": 134217728' "$TESTDIR/qi.json" ||
	    fail "qemu-img does not see vm2's 128 MiB: $(cat "$TESTDIR/qi.json")"
	head -c $((3 * MiB)) /dev/urandom >"$TESTDIR/src.img"
	qemu-img convert -n -f raw -O raw "$TESTDIR/src.img" \
	    "$(uri nbd vm2)" || fail "qemu-img convert into vm2"
	on vm2 "assert h.pread($((3 * MiB)), 0) == open('$TESTDIR/src.img', 'rb').read()" ||
	    fail "vm2 does not hold what qemu-img wrote"
	log "qemu-img info and convert on the export vm2"
fi

# The project's fio jobs against named exports: the verify job on the
# encrypted db, each benchmark job for 2 s on vm2.
NBD_URI=$(uri nbd db) FIO_SIZE=16M fio "$SRCDIR/fio-jobs/randrw-verify.fio" \
    >"$TESTDIR/log/fio-job-verify.log" 2>&1 &&
    grep -qE 'err= *0' "$TESTDIR/log/fio-job-verify.log" ||
    { _show_log_tail "$TESTDIR/log/fio-job-verify.log" 30; fail "randrw-verify.fio on db"; }
for job in seq-write-64k seq-write-4k rand-write-4k seq-read-64k rand-read-4k; do
	NBD_URI=$(uri nbd vm2) FIO_SIZE=16M FIO_RUNTIME=2 \
	    fio "$SRCDIR/fio-jobs/$job.fio" >"$TESTDIR/log/fio-job-$job.log" 2>&1 &&
	    grep -qE 'err= *0' "$TESTDIR/log/fio-job-$job.log" ||
	    { _show_log_tail "$TESTDIR/log/fio-job-$job.log" 30; fail "$job.fio on vm2"; }
done
log "fio-jobs/: randrw-verify on db, and the benchmark jobs on vm2"

# An encrypted volume's lease is plain, so an admin (which has no key)
# sees its holder: db is refused while a writer holds it.
nbdkit_start dbholder shared=off lease=3
PATH=/usr/bin:$PATH nbdsh -u "$(uri dbholder db)" -c "
import time
h.pwrite(b'\x44' * 65536, 0)
h.flush()
open('$TESTDIR/dbheld', 'w').close()
time.sleep(8)" & dbholder_job=$!
for ((i = 0; i < 100; i++)); do [ -e "$TESTDIR/dbheld" ] && break; sleep 0.2; done
[ -e "$TESTDIR/dbheld" ] || fail "the holder did not write db"
vol delete --name db 2>"$TESTDIR/e6" &&
    fail "the encrypted db was deleted while a writer held it"
grep -q "in use by" "$TESTDIR/e6" || fail "no holder named for db: $(cat "$TESTDIR/e6")"
wait "$dbholder_job" || fail "db's holder connection failed"
nbdkit_stop dbholder
log "an encrypted volume's holder is seen by the admin: delete refused"

# 5. resize.
vol resize --name vm2 --size 192M >/dev/null || fail "growing vm2"
[ "$(PATH=/usr/bin:$PATH nbdinfo --size "$(uri nbd vm2)")" = $((192 * MiB)) ] ||
    fail "vm2 does not show its new size"
vol resize --name vm2 --size 64M 2>"$TESTDIR/e4" &&
    fail "a shrink without --force was accepted"
grep -q -- "--force" "$TESTDIR/e4" || fail "no reason for the refused shrink"
on vm2 "h.pwrite(b'\x77' * (1 << 20), 100 << 20); h.flush()" ||
    fail "writing vm2 past 64M"
vol resize --name vm2 --size 64M --force >/dev/null || fail "shrinking vm2"
vol resize --name vm2 --size 128M >/dev/null || fail "growing vm2 again"
on vm2 "
assert h.get_size() == 128 << 20
assert h.pread(1 << 20, 100 << 20) == bytes(1 << 20), 'old bytes past the cut'
" || fail "vm2 shows bytes from before its shrink"
log "vm2 grew, shrank with --force, and grew again to zeros past the cut"

# 6. delete frees the servers' space.
nbdkit_start holder shared=off lease=3
on_holder() { PATH=/usr/bin:$PATH nbdsh -u "$(uri holder vm1)" -c "$1"; }
on_holder "
import time
h.pwrite(b'\x33' * (24 << 20), 0)
h.flush()
open('$TESTDIR/held', 'w').close()
time.sleep(10)" & holder_job=$!
for ((i = 0; i < 100; i++)); do [ -e "$TESTDIR/held" ] && break; sleep 0.2; done
[ -e "$TESTDIR/held" ] || fail "the holder did not write vm1"
vol delete --name vm1 2>"$TESTDIR/e5" &&
    fail "vm1 was deleted while a writer held it"
grep -q "in use by" "$TESTDIR/e5" || fail "no holder named for vm1"
wait "$holder_job" || fail "the holder's connection failed"
nbdkit_stop holder
sizes() { for ((i = 0; i < CLUSTER_N; i++)); do
	du -sb "$TESTDIR/data/server-$i" | cut -f1; done | paste -sd' '; }
used() { vol list --json | python3 -c "
import json, sys
print(sum(x['used'] for x in json.load(sys.stdin)['volumes']
    if x['name'] == '$1'))"; }
old_id=$(vol info --name vm1 | sed -n 's/^id: //p')
before=$(sizes) used_before=$(used vm1)
[ "$used_before" -gt $((48 * MiB)) ] ||
    fail "vm1 uses only $used_before bytes on the servers"
vol delete --name vm1 >"$TESTDIR/d1" || fail "deleting vm1"
grep -q "every server dropped" "$TESTDIR/d1" || fail "$(cat "$TESTDIR/d1")"
# Writes elsewhere drive compaction of the segments vm1 leaves empty.
on vm2 "h.pwrite(b'\x11' * (8 << 20), 0); h.flush()" || fail "writing vm2"
after=$(sizes)
read -ra a <<<"$before"
read -ra b <<<"$after"
for ((i = 0; i < CLUSTER_N; i++)); do
	[ $((a[i] - b[i])) -gt $((8 * MiB)) ] ||
	    fail "server $i went from ${a[i]} to ${b[i]} bytes after the delete"
done
vol list | grep -q '^vm1 ' && fail "vm1 is still listed"
PATH=/usr/bin:$PATH nbdinfo "$(uri nbd vm1)" >/dev/null 2>&1 &&
    fail "vm1 still opens"
log "delete of vm1 ($used_before bytes on servers): $before -> $after"
vol create --name vm1 --size 64M >/dev/null || fail "a new vm1"
new_id=$(vol info --name vm1 | sed -n 's/^id: //p')
[ "$new_id" != "$old_id" ] || fail "the new vm1 took the old id $old_id"
on vm1 "assert h.pread(8 << 20, 0) == bytes(8 << 20)" ||
    fail "the new vm1 shows the old one's bytes"
log "a new vm1 has id $new_id (the old one had $old_id) and reads zeros"

# The default export follows a volume named default.
vol create --name default --size 2M >/dev/null || fail "creating default"
[ "$(PATH=/usr/bin:$PATH nbdinfo --size "$(uri nbd '')")" = $((2 * MiB)) ] ||
    fail "the default export is not the volume named default"
log "the default export is the volume named default once it exists"
nbdkit_stop nbd
