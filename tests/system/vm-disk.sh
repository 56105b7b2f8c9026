#!/bin/bash
# A VM disk backed by bftblk: qemu's own NBD client serves the export to
# a TCG guest as its virtio disk (-drive ...,if=virtio,cache=none).  The
# first guest makes ext4 on /dev/vda, copies a tree of files with known
# checksums and powers off (tests/vm/guest/disk-write.sh).  nbdkit is
# restarted, and a second, new guest on the same export must find the
# fs clean and every file with the checksum the first one wrote
# (disk-check.sh): the checksums both print are compared here.
# shellcheck source=tests/system/syslib.bash
. "$(dirname "${BASH_SOURCE[0]}")/syslib.bash"

vm_prepare
CLUSTER_SIZE=256M
cluster_start 1
nbdkit_start disk
drive=(-drive "file=$(nbd_uri disk),format=raw,if=virtio,cache=none")

vm_start write disk-write "${drive[@]}"
vm_wait write
nbdkit_stop disk
nbdkit_start disk
vm_start check disk-check "${drive[@]}"
vm_wait check

sums()
{
	grep -a '^BFTBLK-SUM: ' "$TESTDIR/log/vm-$1.log" | sort
}
sums write >"$TESTDIR/write.sums"
sums check >"$TESTDIR/check.sums"
n=$(wc -l <"$TESTDIR/write.sums")
[ "$n" -gt 50 ] || fail "the first guest listed only $n files"
diff "$TESTDIR/write.sums" "$TESTDIR/check.sums" >&2 ||
    fail "the second guest read other files than the first one wrote"
log "ok: the second guest read all $n files the first one wrote"
