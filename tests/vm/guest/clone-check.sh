# shellcheck shell=dash
# Guest side of tests/system/vm-clone.sh, second guest: /dev/vda is a
# clone of the snapshot taken while the first guest's ext4 was frozen.
# The fs must check clean as it is (BFTBLK-FSCK: clean), mount, and hold
# the tree with the checksums the first guest wrote; it prints what it
# finds for the host to compare: the tree (BFTBLK-SUM) and the writer's
# files (BFTBLK-W: HASH NAME).  Then it writes to the clone, which must
# read back and leave the fs clean.
# shellcheck source=tests/vm/guest/lib.sh
. /bftblk/lib.sh

if e2fsck -f -n /dev/vda >/tmp/fsck.out 2>&1; then
	echo "BFTBLK-FSCK: clean"
else
	echo "BFTBLK-FSCK: status $?"
	tail -n 30 /tmp/fsck.out
	die "e2fsck -f -n of the clone is not clean"
fi
mount -t ext4 /dev/vda /mnt || die "mount /dev/vda"
check_sums /mnt/tree /mnt/tree.sums
(cd /mnt/tree && find . -type f | sort | xargs sha256sum) |
    sed 's/^/BFTBLK-SUM: /'
(cd /mnt && find w -type f | sort | xargs -r sha256sum) |
    sed 's/^/BFTBLK-W: /'

# The clone is writable: new files, and the writer's files gone.
mkdir /tmp/new
for i in 1 2 3 4 5 6 7 8; do
	head -c $((i * 262144 + i)) /dev/urandom >/tmp/new/n$i ||
	    die "writing /tmp/new/n$i"
done
(cd /tmp/new && sha256sum n*) >/tmp/new.sums
rm -r /mnt/w || die "rm /mnt/w"
cp -a /tmp/new /mnt/new || die "copy into the clone"
sync
remount ext4 /dev/vda /mnt
check_sums /mnt/new /tmp/new.sums
check_sums /mnt/tree /mnt/tree.sums
umount /mnt || die "umount /dev/vda"
fsck_clean ext4 /dev/vda
say "the clone took $(wc -l </tmp/new.sums) new files"
