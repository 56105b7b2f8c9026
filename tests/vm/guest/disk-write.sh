# shellcheck shell=dash
# Guest side of tests/system/vm-disk.sh, first boot: /dev/vda is the
# bftblk export through qemu's own NBD client.  Makes ext4 on it, copies
# a tree of files with known checksums, and keeps the checksum list on
# the disk too.  It prints every checksum as "BFTBLK-SUM: HASH PATH" for
# the host to compare with what the second boot reads.
# shellcheck source=tests/vm/guest/lib.sh
. /bftblk/lib.sh

make_tree /tmp/src
mkfs_dev ext4 /dev/vda
mount -t ext4 /dev/vda /mnt || die "mount /dev/vda"
cp -a /tmp/src /mnt/tree || die "copy into /dev/vda"
cp /tmp/src.sums /mnt/tree.sums
sync
remount ext4 /dev/vda /mnt
check_sums /mnt/tree /tmp/src.sums
umount /mnt || die "umount /dev/vda"
sed 's/^/BFTBLK-SUM: /' /tmp/src.sums
