# shellcheck shell=dash
# Guest side of tests/system/vm-clone.sh, first guest: /dev/vda is the
# volume the host will snapshot.  Makes ext4, copies a tree of files
# with known checksums, then, while a writer keeps creating files in
# /mnt/w, freezes the fs (`fsfreeze --freeze`, busybox's spelling of
# -f), prints "BFTBLK-FROZEN", and once the host (which took the
# snapshot meanwhile) answers on the second serial port, thaws it
# (`fsfreeze --unfreeze`).  The writer goes on for a few files more.
# For the host it prints the tree's checksums (BFTBLK-SUM), the files
# the writer had finished before the freeze (BFTBLK-BEFORE: HASH NAME)
# and those it began after the thaw returned (BFTBLK-AFTER: NAME).
# shellcheck source=tests/vm/guest/lib.sh
. /bftblk/lib.sh

# lines FILE: how many lines FILE has.
lines()
{
	wc -l <"$1"
}

# wait_lines FILE N: waits, up to 120 s, until FILE has N lines.
wait_lines()
{
	local n=0
	until [ "$(lines "$1")" -ge "$2" ]; do
		n=$((n + 1))
		[ "$n" -le 600 ] || die "$1 has $(lines "$1") lines, not $2"
		[ -e /tmp/writer.failed ] && die "the writer failed"
		usleep 200000
	done
}

make_tree /tmp/src
mkfs_dev ext4 /dev/vda
mount -t ext4 /dev/vda /mnt || die "mount /dev/vda"
cp -a /tmp/src /mnt/tree || die "copy into /dev/vda"
cp /tmp/src.sums /mnt/tree.sums
mkdir /mnt/w
sync
stty -F /dev/ttyS1 raw -echo

# The writer: file i is written from a copy in /tmp whose checksum was
# taken first; "HASH  w/fi" goes to /tmp/w.sums once its write and close
# returned.  Sizes 4 KiB..64 KiB and odd, so most end inside a block.
: >/tmp/w.sums
(
	i=0
	while [ ! -e /tmp/stop ] && [ "$i" -lt 5000 ]; do
		i=$((i + 1))
		if ! head -c $(((i % 16 + 1) * 4096 - i % 7)) /dev/urandom \
		    >/tmp/wf || ! sum=$(sha256sum </tmp/wf) ||
		    ! cp /tmp/wf "/mnt/w/f$i"; then
			touch /tmp/writer.failed
			exit 1
		fi
		echo "${sum%% *}  w/f$i" >>/tmp/w.sums
	done
) &
writer=$!

wait_lines /tmp/w.sums 20
cp /tmp/w.sums /tmp/before.sums
fsfreeze --freeze /mnt || die "fsfreeze --freeze /mnt"
say "frozen after $(lines /tmp/before.sums) files"
echo "BFTBLK-FROZEN"
# shellcheck disable=SC3045 # busybox's read has -t.
read -r -t 240 word </dev/ttyS1 || die "no word from the host while frozen"
fsfreeze --unfreeze /mnt || die "fsfreeze --unfreeze /mnt"
cp /tmp/w.sums /tmp/thawed.sums
say "thawed ($word) after $(lines /tmp/thawed.sums) files"
wait_lines /tmp/w.sums $(($(lines /tmp/thawed.sums) + 12))
touch /tmp/stop
wait "$writer" || die "the writer failed"
say "the writer wrote $(lines /tmp/w.sums) files"
umount /mnt || die "umount /dev/vda"

sed 's/^/BFTBLK-SUM: /' /tmp/src.sums
sed 's/^/BFTBLK-BEFORE: /' /tmp/before.sums
# The file in flight at the thaw may have begun before the freeze.
sed "1,$(($(lines /tmp/thawed.sums) + 1))d; s/^[^ ]*  /BFTBLK-AFTER: /" \
    /tmp/w.sums
