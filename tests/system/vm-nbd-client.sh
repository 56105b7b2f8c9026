#!/bin/bash
# The kernel's NBD client on a bftblk export: a TCG guest loads nbd.ko
# and runs `nbd-client -C 1` against the export, reached through qemu's
# user network (10.0.2.100:10809 forwarded to nbdkit's unix socket).
# The host's fio, shared into the guest over 9p, first runs a randrw
# crc32c verify job on /dev/nbd0 with libaio and O_DIRECT.  Then on
# /dev/nbd0 the guest makes xfs and then ext4, copies a tree of files
# with known checksums, unmounts, mounts again, verifies, and fsck finds
# nothing.  Then, while the guest writes files with fsync to the ext4,
# one server (t = 1) is killed with SIGKILL; afterwards the guest's fs
# must still check clean and every file verify (tests/vm/guest/nbd-fs.sh).
# shellcheck source=tests/system/syslib.bash
. "$(dirname "${BASH_SOURCE[0]}")/syslib.bash"

vm_prepare
# xfs needs 300 MB at least.
CLUSTER_SIZE=512M
cluster_start 1
nbdkit_start nbd
vm_nbd_net nbd
# The guest runs the host's fio from its /usr, shared read-only over 9p.
vm_start nbd nbd-fs "${VM_NET[@]}" -virtfs \
    local,path=/usr,mount_tag=hostusr,security_model=none,readonly=on

vm_wait_line nbd BFTBLK-KILL-NOW
server_kill 1 KILL
vm_tell nbd killed
vm_wait nbd
grep -qa '^bftblk-guest: .* the last 16 after the host' \
    "$TESTDIR/log/vm-nbd.log" ||
    fail "the guest did not write on after the kill"
log "ok"
