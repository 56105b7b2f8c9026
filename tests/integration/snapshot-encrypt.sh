#!/bin/bash
# Snapshots and clones of an encrypted volume (t=1): volume db made
# with --encrypt, written through the plugin, which finds its key in
# DIR/volumes/db.key; a snapshot exported as db@s1 reads with db's key,
# a clone of it gets a copy of that key and reads and writes with it,
# and no server data directory holds the plaintext of any of them.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_python_nbd /usr/bin/python3
NBDKIT_SHARED=			# one writer per volume: the lease holder
NBDKIT_PIN=			# volumes by export name
cluster_start 1
"$ADMIN" cluster finalize --dir "$CLUSTER_DIR" >/dev/null ||
    fail "cluster finalize"
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name db --size 4M \
    --encrypt >/dev/null || fail "creating the encrypted db"
[ -f "$CLUSTER_DIR/volumes/db.key" ] || fail "no DIR/volumes/db.key"
nbdkit_start nbd
uri() { echo "nbd+unix:///$1?socket=$TESTDIR/nbd.sock"; }

# on EXPORT CODE: nbdsh on EXPORT, with pat(tag, b), a block of 64 KiB
# whose every 16 bytes say which pattern and block they are.
on()
{
	PATH=/usr/bin:$PATH nbdsh -u "$(uri "$1")" -c "
BS = 65536
def pat(tag, b):
    return (b'%-6s blk %04d.' % (tag.encode(), b)) * (BS // 16)
$2"
}

on db "
for b in range(32):
    h.pwrite(pat('PLAINA', b), b * BS)
h.flush()" || fail "writing A to db"
"$ADMIN" snap create --dir "$CLUSTER_DIR" --volume db --name s1 \
    >/dev/null || fail "snap create db@s1"
on db "
for b in range(16):
    h.pwrite(pat('PLAINB', b), b * BS)
h.flush()" || fail "writing B to db"
log "db: A, snapshot s1, then B over its first half"

on db@s1 "
assert h.is_read_only()
bad = [b for b in range(32) if h.pread(BS, b * BS) != pat('PLAINA', b)]
assert not bad, 'blocks %s of db@s1 differ' % bad" ||
    fail "db@s1 does not read back as A with db's key"
on db "
bad = [b for b in range(32) if h.pread(BS, b * BS) !=
       pat('PLAINB' if b < 16 else 'PLAINA', b)]
assert not bad, 'blocks %s of db differ' % bad" ||
    fail "db does not read back as B over A"
log "db@s1 reads A and db reads B over A, both with db's key"

"$ADMIN" volume clone --dir "$CLUSTER_DIR" --from db@s1 --name c \
    >/dev/null || fail "volume clone db@s1"
cmp -s "$CLUSTER_DIR/volumes/db.key" "$CLUSTER_DIR/volumes/c.key" ||
    fail "the clone did not get db's key"
on c "
bad = [b for b in range(32) if h.pread(BS, b * BS) != pat('PLAINA', b)]
assert not bad, 'blocks %s of c differ' % bad
for b in range(24, 32):
    h.pwrite(pat('PLAINC', b), b * BS)
h.flush()
bad = [b for b in range(32) if h.pread(BS, b * BS) !=
       pat('PLAINC' if b >= 24 else 'PLAINA', b)]
assert not bad, 'blocks %s of c differ after its writes' % bad" ||
    fail "the clone does not read and write with its key"
on db@s1 "
bad = [b for b in range(32) if h.pread(BS, b * BS) != pat('PLAINA', b)]
assert not bad, 'blocks %s of db@s1 differ' % bad" ||
    fail "db@s1 changed when its clone was written"
log "clone c: A from the snapshot, C of its own, with the copied key"

# Without the key (a plugin started after it went), db@s1 is refused.
mv "$CLUSTER_DIR/volumes/db.key" "$TESTDIR/db.key"
nbdkit_start nokey
if PATH=/usr/bin:$PATH nbdsh \
    -u "nbd+unix:///db@s1?socket=$TESTDIR/nokey.sock" -c "h.pread(512, 0)" \
    2>"$TESTDIR/log/nokey.log"; then
	fail "db@s1 opened without db's key"
fi
grep -q "its key cannot be read" "$TESTDIR/log/nokey.log" \
    "$TESTDIR/log/nbdkit-nokey.log" ||
    fail "no clear error for db@s1 without its key"
mv "$TESTDIR/db.key" "$CLUSTER_DIR/volumes/db.key"
log "db@s1 without db's key: refused, naming the key"

for tag in PLAINA PLAINB PLAINC; do
	if grep -rqa "$tag blk" "$TESTDIR/data"; then
		fail "a server's data directory holds $tag's plaintext"
	fi
done
log "no server holds the plaintext of db, db@s1 or c"
log "PASS"
