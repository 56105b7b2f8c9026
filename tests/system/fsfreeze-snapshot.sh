#!/bin/bash
# A crash-consistent snapshot of a mounted filesystem, as an operator
# takes one: ext4 on the export (nbdfuse and a loop device), a writer
# creating files in it, `fsfreeze -f`, `bftblk snap create`,
# `fsfreeze -u`.  The snapshot, exported to an image file, must fsck
# clean and mount; every file whose write returned before the freeze
# was asked for is in it with its content, and no file written after
# the thaw returned is.
# shellcheck source=tests/system/syslib.bash
. "$(dirname "${BASH_SOURCE[0]}")/syslib.bash"

require_root
command -v nbdfuse >/dev/null || skip "nbdfuse is not installed (libnbd-bin)"
command -v fsfreeze >/dev/null || skip "fsfreeze is not installed"
[ -c /dev/fuse ] || skip "no /dev/fuse"

CLUSTER_SIZE=128M
cluster_start 1
nbdkit_start nbd
fuse_attach host
loop_attach "$FUSE_FILE"
timeout 300 mkfs.ext4 -q "$LOOP_DEV" || fail "mkfs.ext4 $LOOP_DEV failed"
mnt=$TESTDIR/mnt
mount_dev "$LOOP_DEV" "$mnt"
mkdir "$mnt/files"

# The writer: file i holds i's line 2000 times; its name goes to
# written.txt once write and close returned.  Bounded: 600 files or 90 s.
done_list=$TESTDIR/written.txt
: >"$done_list"
(
	end=$((SECONDS + 90))
	for ((i = 1; i <= 600 && SECONDS < end; i++)); do
		awk -v n="$i" 'BEGIN { for (j = 0; j < 2000; j++)
		    print "file " n }' >"$mnt/files/f$i" || exit 1
		echo "f$i" >>"$done_list"
		sleep 0.05
	done
) &
WRITER=$!
_track "$WRITER" writer
sleep 3
cp "$done_list" "$TESTDIR/before.txt"
log "freezing after $(wc -l <"$TESTDIR/before.txt") files"
timeout 60 fsfreeze -f "$mnt" || fail "fsfreeze -f"
"$ADMIN" snap create --dir "$CLUSTER_DIR" --volume "" --name frozen \
    >"$TESTDIR/log/snap.log" 2>&1 ||
    { fsfreeze -u "$mnt"; cat "$TESTDIR/log/snap.log" >&2; fail "snap create"; }
timeout 60 fsfreeze -u "$mnt" || fail "fsfreeze -u"
cp "$done_list" "$TESTDIR/thawed.txt"
cat "$TESTDIR/log/snap.log" >&2
sleep 3
_reap "$WRITER"
_forget_pid "$WRITER"
[ "$_STATUS" -eq 0 ] || fail "the writer failed"
umount_dir "$mnt"
loop_detach "$LOOP_DEV"
fuse_detach host
nbdkit_stop nbd

img=$TESTDIR/frozen.img
"$ADMIN" export --dir "$CLUSTER_DIR" @frozen "$img" 2>/dev/null ||
    fail "export @frozen"
fsck_clean "$img"
loop_attach "$img"
snap_mnt=$TESTDIR/snap
mount_dev "$LOOP_DEV" "$snap_mnt" -o ro
python3 - "$TESTDIR/before.txt" "$TESTDIR/thawed.txt" "$done_list" \
    "$snap_mnt/files" <<'EOF' || fail "the snapshot is not the frozen filesystem"
import os, sys
before = open(sys.argv[1]).read().split()
thawed = open(sys.argv[2]).read().split()
written = open(sys.argv[3]).read().split()
d = sys.argv[4]
for f in before:
    want = ("file %s\n" % f[1:]) * 2000
    got = open(os.path.join(d, f)).read()
    assert got == want, "%s: %d bytes, not its content" % (f, len(got))
later = [f for f in written[len(thawed) + 1:] if os.path.exists(os.path.join(d, f))]
assert not later, "files written after the thaw: %s" % later[:5]
print("snapshot: %d files before the freeze all there; %d of %d written "
      "after the thaw absent" % (len(before), len(written) - len(thawed) - 1,
      len(written) - len(thawed) - 1), file=sys.stderr)
EOF
umount_dir "$snap_mnt"
loop_detach "$LOOP_DEV"
log "ok"
