# shellcheck shell=bash
# Sourced by the system tests (tests/system/*.sh) after the integration
# tests' lib.sh, whose cluster, nbdkit and PID-based cleanup they use.
# It adds what real use needs on top: the export as a host block device
# (nbdfuse + loop), mounts, and TCG guests booted from tests/vm.
#
# Everything set up here is undone by the EXIT trap, in reverse: guests
# stopped, filesystems unmounted, loop devices detached, FUSE mounts
# removed, then lib.sh's cleanup of nbdkit and the servers.  Each step is
# bounded by a timeout so that a dead export cannot hang the test.
#
# Environment (besides lib.sh's):
#   BFTBLK_VM_TIMEOUT  seconds one guest may run (default 300)

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"

VM_SRC=$SRCDIR/tests/vm
VM_DIR=$BUILD/vm
VM_TIMEOUT=${BFTBLK_VM_TIMEOUT:-300}
# Undone at exit, in reverse order of these lists.
declare -a _MOUNTS=() _LOOPS=() _FUSES=()
declare -A FUSE_PID=() VM_PID=()

# _drop ARRAY VALUE: removes every element equal to VALUE from ARRAY,
# which stays indexed 0..n-1.
_drop()
{
	local -n _arr=$1
	local i
	for i in "${!_arr[@]}"; do
		if [ "${_arr[$i]}" = "$2" ]; then
			unset '_arr[i]'
		fi
	done
	_arr=("${_arr[@]}")
}

require_root()
{
	[ "$(id -u)" -eq 0 ] || skip "needs root (loop devices and mounts)"
}

# fuse_attach NAME [NBDKIT]: exposes nbdkit NBDKIT (default nbd) as the
# file $TESTDIR/fuse-NAME/nbd with nbdfuse; sets FUSE_FILE.
fuse_attach()
{
	local name=$1 uri dir pidf pid deadline
	uri=$(nbd_uri "${2:-nbd}")
	dir=$TESTDIR/fuse-$name
	pidf=$TESTDIR/nbdfuse-$name.pid
	mkdir -p "$dir"
	rm -f "$pidf"
	nbdfuse -P "$pidf" "$dir" "$uri" \
	    >>"$TESTDIR/log/nbdfuse-$name.log" 2>&1 </dev/null &
	pid=$!
	_track "$pid" "nbdfuse-$name"
	FUSE_PID[$name]=$pid
	_FUSES+=("$name")
	deadline=$((SECONDS + BFTBLK_WAIT))
	until [ -s "$pidf" ]; do
		_alive "$pid" || fail "nbdfuse $name exited before serving"
		[ "$SECONDS" -lt "$deadline" ] ||
		    fail "nbdfuse $name not serving after ${BFTBLK_WAIT}s"
		sleep 0.1
	done
	FUSE_FILE=$dir/nbd
	log "nbdfuse $name: $FUSE_FILE ($(stat -c %s "$FUSE_FILE") bytes)"
}

# fuse_detach NAME: unmounts the FUSE file, which ends nbdfuse.
fuse_detach()
{
	local name=$1 pid=${FUSE_PID[$1]:-}
	[ -n "$pid" ] || return 0
	timeout -k 5 60 umount "$TESTDIR/fuse-$name" ||
	    timeout -k 5 60 umount -l "$TESTDIR/fuse-$name" || true
	_stop_pid "$pid" TERM
	_forget_pid "$pid"
	unset 'FUSE_PID[$name]'
	_drop _FUSES "$name"
	log "nbdfuse $name stopped (status $_STATUS)"
}

# loop_attach FILE: a loop device over FILE; sets LOOP_DEV.
loop_attach()
{
	LOOP_DEV=$(timeout 60 losetup --find --show "$1") ||
	    fail "losetup of $1 failed"
	_LOOPS+=("$LOOP_DEV")
	log "loop device $LOOP_DEV over $1"
}

loop_detach()
{
	timeout -k 5 60 losetup -d "$1" || log "losetup -d $1 failed"
	_drop _LOOPS "$1"
}

# mount_dev DEV DIR [OPTIONS...]: mounts DEV on DIR (made if missing).
mount_dev()
{
	local dev=$1 dir=$2
	shift 2
	mkdir -p "$dir"
	timeout 120 mount "$@" "$dev" "$dir" || fail "mount $dev $dir failed"
	_MOUNTS+=("$dir")
}

umount_dir()
{
	timeout -k 5 120 umount "$1" || fail "umount $1 failed"
	_drop _MOUNTS "$1"
}

# pick_doc KIB: sets PICKED to the top-level entries of /usr/share/doc,
# in order, until they add up to KIB KiB (a real tree of bounded size),
# and PICKED_KIB to their size.
pick_doc()
{
	local d
	PICKED=()
	PICKED_KIB=0
	for d in /usr/share/doc/*; do
		[ "$PICKED_KIB" -lt "$1" ] || break
		PICKED+=("$d")
		PICKED_KIB=$((PICKED_KIB + $(du -sk "$d" | cut -f1)))
	done
	[ "${#PICKED[@]}" -gt 0 ] || skip "no /usr/share/doc to copy"
}

# fsck_clean DEV: a forced read-only e2fsck that must find nothing.
fsck_clean()
{
	local out=$TESTDIR/log/fsck.log
	if ! timeout 300 e2fsck -f -n "$1" >"$out" 2>&1; then
		_show_log_tail "$out" 40
		fail "e2fsck -f -n $1 is not clean"
	fi
	log "e2fsck -f -n $1: clean ($(tail -n 1 "$out"))"
}

# nbdkit_kill9 [NAME]: kills nbdkit NAME (default nbd) with SIGKILL, as a
# crash of the client side would.
nbdkit_kill9()
{
	local name=${1:-nbd} pid
	pid=${NBDKIT_PID[$name]:-}
	[ -n "$pid" ] || fail "nbdkit_kill9: nbdkit $name is not running"
	_stop_pid "$pid" KILL
	_forget_pid "$pid"
	unset 'NBDKIT_PID[$name]'
	log "nbdkit $name killed by SIGKILL"
}

# vm_prepare: the guest kernel and initramfs (cached under $BUILD/vm).
vm_prepare()
{
	command -v qemu-system-x86_64 >/dev/null ||
	    skip "qemu-system-x86_64 is not installed (scripts/install-deps)"
	BUILD=$BUILD "$VM_SRC/fetch-kernel" || fail "tests/vm/fetch-kernel failed"
	BUILD=$BUILD "$VM_SRC/mkinitramfs" || fail "tests/vm/mkinitramfs failed"
}

# vm_start NAME TEST [QEMU-ARGS...]: boots a TCG guest in the background
# that runs tests/vm/guest/TEST.sh.  Its console is $TESTDIR/log/vm-NAME.log;
# its second serial port is the pipe $TESTDIR/vm-NAME.ctl.{in,out}, for
# vm_tell.
vm_start()
{
	local name=$1 test=$2 pid
	shift 2
	mkfifo "$TESTDIR/vm-$name.ctl.in" "$TESTDIR/vm-$name.ctl.out"
	: >"$TESTDIR/log/vm-$name.log"
	# --foreground keeps qemu in the test's process group, where
	# tests/run-integration looks for leftovers.
	timeout --foreground -k 10 "$VM_TIMEOUT" qemu-system-x86_64 \
	    -accel tcg -m 512 -smp 1 -nodefaults -no-user-config \
	    -display none -no-reboot \
	    -kernel "$VM_DIR/kernel/vmlinuz" -initrd "$VM_DIR/initramfs.gz" \
	    -append "console=ttyS0 panic=-1 quiet bftblk.test=$test" \
	    -serial "file:$TESTDIR/log/vm-$name.log" \
	    -serial "pipe:$TESTDIR/vm-$name.ctl" \
	    "$@" >"$TESTDIR/log/qemu-$name.log" 2>&1 </dev/null &
	pid=$!
	_track "$pid" "vm-$name"
	VM_PID[$name]=$pid
	log "guest $name booting: $test.sh (pid $pid)"
}

# vm_wait_line NAME TEXT: waits until the guest's console shows TEXT.
vm_wait_line()
{
	local name=$1 text=$2 logf=$TESTDIR/log/vm-$1.log
	until grep -qaF -- "$text" "$logf"; do
		if grep -qaF 'BFTBLK-RESULT:' "$logf" ||
		    ! _alive "${VM_PID[$name]}"; then
			vm_wait "$name"
			fail "guest $name ended without printing $text"
		fi
		sleep 0.2
	done
}

# vm_tell NAME WORD: a line to the guest's /dev/ttyS1.
vm_tell()
{
	# shellcheck disable=SC2016 # the inner shell expands them.
	timeout 30 sh -c 'echo "$1" >"$2"' sh "$2" "$TESTDIR/vm-$1.ctl.in" ||
	    fail "could not write to guest $1"
}

# vm_wait NAME: waits for the guest to power off; fails the test unless
# it reported BFTBLK-RESULT: ok.
vm_wait()
{
	local name=$1 pid=${VM_PID[$1]} logf=$TESTDIR/log/vm-$1.log
	_reap "$pid"
	_forget_pid "$pid"
	unset 'VM_PID[$name]'
	grep -a '^bftblk-guest:\|^BFTBLK-FAIL' "$logf" | sed 's/^/    /' >&2
	if ! grep -qa '^BFTBLK-RESULT: ok' "$logf"; then
		_show_log_tail "$logf" 60
		_show_log_tail "$TESTDIR/log/qemu-$name.log" 20
		if [ "$_STATUS" -eq 124 ] || [ "$_STATUS" -eq 137 ]; then
			fail "guest $name timed out after ${VM_TIMEOUT}s"
		fi
		fail "guest $name failed (qemu exit status $_STATUS)"
	fi
	log "guest $name: BFTBLK-RESULT: ok (qemu exit status $_STATUS)"
}

# vm_nbd_net NBDKIT: sets VM_NET to the qemu arguments for a NIC whose
# only reachable address, 10.0.2.100:10809, is nbdkit NBDKIT's unix
# socket.  restrict=on keeps the guest off every other network, and no
# host port is opened.  qemu connects to the socket once, at start, so
# the guest gets one NBD connection (hence nbd-client -C 1).
vm_nbd_net()
{
	local fwd=tcp:10.0.2.100:10809-unix:$TESTDIR/$1.sock
	# shellcheck disable=SC2034,SC2054 # for the tests; commas are qemu's.
	VM_NET=(-netdev "user,id=n0,restrict=on,guestfwd=$fwd"
	    -device virtio-net-pci,netdev=n0,romfile=)
}

_sys_cleanup()
{
	local rc=$? i name
	set +e
	for name in "${!VM_PID[@]}"; do
		_stop_pid "${VM_PID[$name]}" TERM
		_forget_pid "${VM_PID[$name]}"
	done
	for ((i = ${#_MOUNTS[@]} - 1; i >= 0; i--)); do
		timeout -k 5 60 umount "${_MOUNTS[$i]}" ||
		    timeout -k 5 60 umount -l "${_MOUNTS[$i]}"
	done
	for ((i = ${#_LOOPS[@]} - 1; i >= 0; i--)); do
		timeout -k 5 60 losetup -d "${_LOOPS[$i]}"
	done
	for name in "${_FUSES[@]}"; do
		fuse_detach "$name"
	done
	(exit "$rc")
	_cleanup
}
trap _sys_cleanup EXIT
