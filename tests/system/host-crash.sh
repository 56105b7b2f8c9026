#!/bin/bash
# A crash of the client side under a filesystem: an ext4 on the export
# (nbdfuse + loop, as in host-mount.sh) is busy with two workloads, one
# writing files with fsync and one copying a tree without, when nbdkit is
# killed with SIGKILL.  The loop device then fails its I/O, the fs is
# taken down as it is, and nbdkit, nbdfuse and the loop device come up
# again.  Mounting replays the journal; every file whose fsync (and its
# directory's) had returned must be there with its checksum, and
# afterwards e2fsck -f -n must find nothing.
# shellcheck source=tests/system/syslib.bash
. "$(dirname "${BASH_SOURCE[0]}")/syslib.bash"

require_root
command -v nbdfuse >/dev/null || skip "nbdfuse is not installed (libnbd-bin)"
[ -c /dev/fuse ] || skip "no /dev/fuse"

# fsync_writer DIR LIST: writes files into DIR, each followed by fsync of
# the file and of DIR, and only then appends its checksum to LIST.  It
# runs until a write fails, or 1000 files (at most 130 MiB).
fsync_writer()
{
	local dir=$1 list=$2 i
	mkdir -p "$dir" || return 1
	for ((i = 1; i <= 1000; i++)); do
		dd if=/dev/urandom of="$dir/f$i" bs=4k count=$((1 + i % 64)) \
		    conv=fsync status=none || return 0
		sync "$dir" || return 0
		(cd "$dir" && sha256sum "f$i") >>"$list" || return 0
	done
}

# noise DIR: copies a tree into DIR and removes it again, over and over,
# never synced, so that the journal is busy when the crash comes.
noise()
{
	local i
	for ((i = 1; i <= 100; i++)); do
		mkdir "$1/copy" && cp -a "${PICKED[@]}" "$1/copy/" 2>/dev/null &&
		    rm -rf "$1/copy" || return 0
	done
}

pick_doc 32768
CLUSTER_SIZE=512M
cluster_start 1
nbdkit_start nbd
fuse_attach crash
loop_attach "$FUSE_FILE"
timeout 300 mkfs.ext4 -q "$LOOP_DEV" || fail "mkfs.ext4 $LOOP_DEV failed"
mnt=$TESTDIR/mnt
mount_dev "$LOOP_DEV" "$mnt"

list=$TESTDIR/fsynced.sums
: >"$list"
fsync_writer "$mnt/synced" "$list" &
writer=$!
noise "$mnt" &
noisy=$!
until [ "$(wc -l <"$list")" -ge 40 ]; do
	_alive "$writer" || fail "the fsync writer stopped before the crash"
	sleep 0.2
done
nbdkit_kill9 nbd
n=$(wc -l <"$list")
log "nbdkit killed after $n fsync'ed files"

# The workloads now fail on I/O errors; give them 120 s to notice.
for pid in "$writer" "$noisy"; do
	deadline=$((SECONDS + 120))
	while _alive "$pid" && [ "$SECONDS" -lt "$deadline" ]; do
		sleep 0.2
	done
	kill -s KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
done
log "workloads ended; $(wc -l <"$list") files fsync'ed in all"
timeout -k 5 120 umount "$mnt" || timeout -k 5 60 umount -l "$mnt" ||
    fail "could not unmount the failed fs"
_drop _MOUNTS "$mnt"
loop_detach "$LOOP_DEV"
fuse_detach crash

nbdkit_start nbd
fuse_attach crash
loop_attach "$FUSE_FILE"
mount_dev "$LOOP_DEV" "$mnt"
log "mounted again (journal replayed)"
(cd "$mnt/synced" && sha256sum --quiet -c "$list") >&2 ||
    fail "fsync'ed files are missing or differ after the crash"
log "all $(wc -l <"$list") fsync'ed files intact"
umount_dir "$mnt"
fsck_clean "$LOOP_DEV"
log "ok"
