# shellcheck shell=dash
# Guest side of tests/system/vm-disk.sh, second boot of a new guest on
# the same export: the ext4 the first boot made must check clean and
# hold its files.  Prints the checksums it reads as "BFTBLK-SUM: HASH
# PATH" for the host to compare with the first boot's.
# shellcheck source=tests/vm/guest/lib.sh
. /bftblk/lib.sh

fsck_clean ext4 /dev/vda
mount -t ext4 /dev/vda /mnt || die "mount /dev/vda"
check_sums /mnt/tree /mnt/tree.sums
(cd /mnt/tree && find . -type f | sort | xargs sha256sum) |
    sed 's/^/BFTBLK-SUM: /'
umount /mnt || die "umount /dev/vda"
