#!/bin/bash
# A VM's disk snapshotted under fsfreeze, cloned, and the clone booted
# in another VM: what "ten VMs from one template" relies on.  Volume vm
# (256 MiB, t = 1 cluster, finalized for clones) is a TCG guest's virtio
# disk through qemu's NBD client.  The guest makes ext4, copies a tree
# of files with known checksums and, while a writer keeps creating files
# in the mounted fs, runs `fsfreeze --freeze` (-f), says so on its
# console and waits; the host takes vm@frozen with `bftblk snap create`
# and answers on the guest's second serial port; the guest thaws it,
# writes a few files more and powers off (tests/vm/guest/clone-write.sh).
# `bftblk volume clone` makes clone from vm@frozen, and a second, new
# guest boots with clone as its disk (clone-check.sh): `e2fsck -f -n`
# must be clean as the clone stands (no journal replay), the fs mounts,
# the tree and every file the writer had finished before the freeze are
# there with their checksums, and no file it began after the thaw is.
# The guest then writes to the clone; vm@frozen must export the same
# bytes before and after.
# shellcheck source=tests/system/syslib.bash
. "$(dirname "${BASH_SOURCE[0]}")/syslib.bash"

NBDKIT_PIN=			# volumes by export name
NBDKIT_SHARED=			# one writer per volume: the lease holder

vm_prepare
CLUSTER_SIZE=512M
cluster_start 1
"$ADMIN" cluster finalize --dir "$CLUSTER_DIR" >/dev/null ||
    fail "cluster finalize"
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name vm --size 256M \
    >/dev/null || fail "volume create vm"

# drive VOLUME: qemu's -drive for VOLUME, served by nbdkit disk.
drive()
{
	echo "file=nbd+unix:///$1?socket=$TESTDIR/disk.sock,format=raw,if=virtio,cache=none"
}

# snap_sha NAME: sets SHA to the sha256 of `bftblk export NAME`.
snap_sha()
{
	SHA=$("$ADMIN" export --dir "$CLUSTER_DIR" "$1" - \
	    2>>"$TESTDIR/log/export.log" | sha256sum) || fail "export $1"
	SHA=${SHA%% *}
}

nbdkit_start disk
vm_start write clone-write -drive "$(drive vm)"
vm_wait_line write BFTBLK-FROZEN
t0=$SECONDS
if ! "$ADMIN" snap create --dir "$CLUSTER_DIR" --volume vm --name frozen \
    >"$TESTDIR/log/snap.log" 2>&1; then
	vm_tell write failed
	cat "$TESTDIR/log/snap.log" >&2
	fail "snap create vm@frozen under a frozen guest"
fi
vm_tell write thaw
log "vm@frozen taken in $((SECONDS - t0))s while the guest was frozen"
vm_wait write
nbdkit_stop disk

"$ADMIN" volume clone --dir "$CLUSTER_DIR" --from vm@frozen --name clone \
    >"$TESTDIR/log/clone.log" 2>&1 ||
    { cat "$TESTDIR/log/clone.log" >&2; fail "volume clone"; }
snap_sha vm@frozen
sha_before=$SHA
nbdkit_start disk
vm_start check clone-check -drive "$(drive clone)"
vm_wait check
nbdkit_stop disk

grep -qa '^BFTBLK-FSCK: clean' "$TESTDIR/log/vm-check.log" ||
    fail "e2fsck -f -n of the clone did not say clean"
# lines VM TAG: the guest's TAG lines, sorted, without the tag.
lines()
{
	grep -a "^BFTBLK-$2: " "$TESTDIR/log/vm-$1.log" |
	    sed "s/^BFTBLK-$2: //; s/\r\$//" | sort
}
lines write SUM >"$TESTDIR/tree.write"
lines check SUM >"$TESTDIR/tree.check"
lines write BEFORE >"$TESTDIR/before"
lines write AFTER >"$TESTDIR/after"
lines check W >"$TESTDIR/clone-w"
n_tree=$(wc -l <"$TESTDIR/tree.write")
n_before=$(wc -l <"$TESTDIR/before")
n_after=$(wc -l <"$TESTDIR/after")
n_clone=$(wc -l <"$TESTDIR/clone-w")
[ "$n_tree" -gt 50 ] || fail "the first guest listed only $n_tree tree files"
[ "$n_before" -ge 20 ] || fail "only $n_before files before the freeze"
[ "$n_after" -ge 10 ] || fail "only $n_after files after the thaw"
diff "$TESTDIR/tree.write" "$TESTDIR/tree.check" >&2 ||
    fail "the clone's tree is not the one the first guest wrote"
missing=$(comm -23 "$TESTDIR/before" "$TESTDIR/clone-w")
[ -z "$missing" ] || { echo "$missing" | head -n 20 >&2
	fail "files written before the freeze missing or changed in the clone"; }
late=$(sed 's/^[^ ]*  //' "$TESTDIR/clone-w" | sort |
    comm -12 - "$TESTDIR/after")
[ -z "$late" ] || { echo "$late" | head -n 20 >&2
	fail "files begun after the thaw are in the snapshot"; }
log "clone of vm@frozen: fsck clean, $n_tree tree files, all $n_before" \
    "written before the freeze ($n_clone of the writer's in all), none" \
    "of the $n_after begun after the thaw"

snap_sha vm@frozen
sha_after=$SHA
[ "$sha_before" = "$sha_after" ] ||
    fail "writing the clone changed vm@frozen ($sha_before, now $sha_after)"
log "ok: vm@frozen exports as before the clone was written (${sha_after:0:16})"
