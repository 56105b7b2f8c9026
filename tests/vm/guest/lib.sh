# shellcheck shell=dash
# Helpers for the guest test scripts (busybox sh), sourced by each.
# Everything they print goes to the serial console, which the host test
# keeps in its log; lines starting BFTBLK- are for the host to parse.

# The addresses of qemu's user network: the guest is 10.0.2.15, and the
# host test forwards 10.0.2.100:10809 to the export's unix socket.
# shellcheck disable=SC2034 # for the scripts that source this.
NBD_HOST=10.0.2.100
# shellcheck disable=SC2034
NBD_PORT=10809

# say TEXT: a progress line with the guest's uptime.
say()
{
	echo "bftblk-guest: [$(cut -d' ' -f1 /proc/uptime)s] $*"
}

die()
{
	echo "BFTBLK-FAIL: $*"
	exit 1
}

net_up()
{
	if ! ip link set lo up || ! ip addr add 10.0.2.15/24 dev eth0 ||
	    ! ip link set eth0 up; then
		die "network setup failed"
	fi
}

# make_tree DIR: files of random data whose sizes sit on and around the
# 64 KiB block boundaries and the 4 KiB fs blocks, in a few directories,
# plus a copy of real files (the guest's modules and tools).  Their
# checksums go to DIR.sums, taken from the files before they reach any
# NBD device.
make_tree()
{
	local dir="$1" d s
	mkdir -p "$dir" || die "mkdir $dir"
	for d in a b c d/e; do
		mkdir -p "$dir/$d"
		for s in 0 1 4095 4096 65535 65536 65537 131072 200000 \
		    1048583 3145728; do
			head -c "$s" /dev/urandom >"$dir/$d/f$s" ||
			    die "writing $dir/$d/f$s"
		done
	done
	cp -a /lib/modules /sbin "$dir/" || die "copying into $dir"
	(cd "$dir" && find . -type f | sort | xargs sha256sum) >"$dir.sums" ||
	    die "checksumming $dir"
	say "tree $dir: $(wc -l <"$dir.sums") files, $(du -sk "$dir" |
	    cut -f1) KiB"
}

# check_sums DIR SUMS: every file listed in SUMS is in DIR with that
# checksum, and DIR holds no other file.
check_sums()
{
	local dir="$1" sums="$2"
	(cd "$dir" && sha256sum -c "$sums" >/tmp/check.out 2>&1) || {
		grep -v ': OK$' /tmp/check.out | head -n 20
		die "checksums differ in $dir"
	}
	[ "$(cd "$dir" && find . -type f | wc -l)" -eq "$(wc -l <"$sums")" ] ||
	    die "$dir holds files that $sums does not list"
	say "$dir: $(wc -l <"$sums") files verified"
}

# mkfs_dev FS DEV: an empty ext4 or xfs on DEV.
mkfs_dev()
{
	case "$1" in
	ext4) mkfs.ext4 -q -F "$2" ;;
	xfs) mkfs.xfs -q -f "$2" ;;
	esac || die "mkfs.$1 $2 failed"
	say "mkfs.$1 $2"
}

# fsck_clean FS DEV: a read-only check that must find nothing to fix.
fsck_clean()
{
	case "$1" in
	ext4) e2fsck -f -n "$2" ;;
	xfs) xfs_repair -n "$2" ;;
	esac >/tmp/fsck.out 2>&1 || {
		tail -n 30 /tmp/fsck.out
		die "fsck of $1 on $2 is not clean"
	}
	say "fsck $1 $2: clean"
}

# remount FS DEV DIR: unmounts DIR and mounts DEV again with the page
# cache and the device's buffers dropped, so reads come from the device.
remount()
{
	umount "$3" || die "umount $3"
	blockdev --flushbufs "$2"
	echo 3 >/proc/sys/vm/drop_caches
	mount -t "$1" "$2" "$3" || die "mount $2 again"
}
