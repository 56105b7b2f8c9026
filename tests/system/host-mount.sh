#!/bin/bash
# The export as a host block device: nbdfuse turns it into a file, a
# loop device into a disk, and on it goes an ext4 with a copy of a real
# tree (/usr/share/doc, its first ~64 MiB of top-level entries).  diff -r
# must find no difference.  Then everything is taken down, nbdkit
# included, and brought up again: the remounted fs must diff clean once
# more and e2fsck -f -n find nothing.
# shellcheck source=tests/system/syslib.bash
. "$(dirname "${BASH_SOURCE[0]}")/syslib.bash"

require_root
command -v nbdfuse >/dev/null || skip "nbdfuse is not installed (libnbd-bin)"
[ -c /dev/fuse ] || skip "no /dev/fuse"
pick_doc 65536

# compare DIR: diff -r of every picked entry against its copy in DIR.
compare()
{
	local d
	for d in "${PICKED[@]}"; do
		diff -r --no-dereference "$d" "$1/${d##*/}" >&2 ||
		    fail "$1/${d##*/} differs from $d"
	done
	log "diff -r: ${#PICKED[@]} entries of /usr/share/doc identical in $1"
}

CLUSTER_SIZE=256M
cluster_start 1
nbdkit_start nbd
fuse_attach host
loop_attach "$FUSE_FILE"
timeout 300 mkfs.ext4 -q "$LOOP_DEV" || fail "mkfs.ext4 $LOOP_DEV failed"
mnt=$TESTDIR/mnt
mount_dev "$LOOP_DEV" "$mnt"
log "copying ${#PICKED[@]} entries of /usr/share/doc ($PICKED_KIB KiB)"
mkdir "$mnt/doc"
cp -a "${PICKED[@]}" "$mnt/doc/" || fail "cp -a into $mnt failed"
compare "$mnt/doc"
umount_dir "$mnt"
loop_detach "$LOOP_DEV"
fuse_detach host
nbdkit_stop nbd

nbdkit_start nbd
fuse_attach host
loop_attach "$FUSE_FILE"
mount_dev "$LOOP_DEV" "$mnt"
compare "$mnt/doc"
umount_dir "$mnt"
fsck_clean "$LOOP_DEV"
log "ok"
