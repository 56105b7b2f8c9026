# shellcheck shell=dash
# Guest side of tests/system/vm-nbd-client.sh: the kernel NBD client.
#
# Connects /dev/nbd0 to the bftblk export with nbd-client, runs the
# host's fio on it (libaio, O_DIRECT, randrw with crc32c verify), then for xfs
# and ext4 in turn: mkfs, copy a tree of files with known checksums,
# sync, unmount, mount again and verify, fsck clean.  On the ext4 it then
# writes files with fsync while the host kills one server: it prints
# BFTBLK-KILL-NOW, keeps writing, and once the host answers on the
# second serial port (/dev/ttyS1) writes 16 files more.  Afterwards the
# fs must still check clean and every file, old and new, verify.
# shellcheck source=tests/vm/guest/lib.sh
. /bftblk/lib.sh

net_up
nbd-client -C 1 "$NBD_HOST" "$NBD_PORT" /dev/nbd0 || die "nbd-client failed"
echo 64 >/sys/block/nbd0/queue/max_sectors_kb
say "nbd0: $(cat /sys/block/nbd0/size) sectors"

# The host's /usr (read-only, over 9p) brings fio and its libraries.
mount -t 9p -o trans=virtio,version=9p2000.L,ro hostusr /usr ||
    die "mounting the host's /usr failed"
FIO_DEV=/dev/nbd0 FIO_SIZE=64M LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu \
    /usr/bin/fio --output-format=terse --terse-version=3 \
    /bftblk/nbd0-verify.fio >/tmp/fio.out 2>&1 || {
	tail -n 20 /tmp/fio.out
	die "fio with libaio on /dev/nbd0 failed"
}
# Terse v3: field 5 is the job's error, 6 and 47 the KiB read and
# written.  The random phase moves 64 MiB in all; the reads beyond that
# are the verify pass, which must cover every write.
awk -F';' '$3 == "randrw-verify" {
	verified = $6 - (65536 - $47)
	printf "bftblk-guest: fio nbd0-verify.fio (libaio, O_DIRECT): " \
	    "error %d, wrote %d KiB, verified %d KiB\n", $5, $47, verified
	ok = $5 == 0 && $47 > 0 && verified >= $47
} END { exit !ok }' /tmp/fio.out || die "fio on /dev/nbd0 did not verify"

make_tree /tmp/src
for fs in xfs ext4; do
	mkfs_dev "$fs" /dev/nbd0
	mount -t "$fs" /dev/nbd0 /mnt || die "mount $fs"
	cp -a /tmp/src /mnt/tree || die "copy into $fs"
	sync
	remount "$fs" /dev/nbd0 /mnt
	check_sums /mnt/tree /tmp/src.sums
	umount /mnt || die "umount $fs"
	fsck_clean "$fs" /dev/nbd0
done

mount -t ext4 /dev/nbd0 /mnt || die "mount ext4"
mkdir /mnt/w
stty -F /dev/ttyS1 raw -echo
(read -r _ </dev/ttyS1; touch /tmp/go) &
i=0
after=0
while [ "$after" -lt 16 ]; do
	i=$((i + 1))
	[ "$i" -le 2000 ] || die "no word from the host after $i files"
	# Sizes from 4 KiB to 1 MiB; conv=fsync so each file reaches the
	# device while the server dies.
	dd if=/dev/urandom of="/mnt/w/f$i" bs=4k count=$((1 << (i % 9))) \
	    conv=fsync 2>/dev/null || die "writing /mnt/w/f$i"
	[ "$i" -eq 4 ] && echo "BFTBLK-KILL-NOW"
	[ -e /tmp/go ] && after=$((after + 1))
done
(cd /mnt/w && sha256sum f*) >/tmp/w.sums
say "wrote $i files, the last $after after the host killed a server"
umount /mnt || die "umount ext4 after the kill"
fsck_clean ext4 /dev/nbd0
blockdev --flushbufs /dev/nbd0
echo 3 >/proc/sys/vm/drop_caches
mount -t ext4 /dev/nbd0 /mnt || die "mount ext4 after the kill"
check_sums /mnt/tree /tmp/src.sums
check_sums /mnt/w /tmp/w.sums
umount /mnt || die "umount ext4"
nbd-client -d /dev/nbd0 || die "nbd-client -d failed"
