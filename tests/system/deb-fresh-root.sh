#!/bin/bash
# The Debian packages on a fresh Debian 12: mmdebstrap makes a minimal
# bookworm root (variant apt, plus libnbd-bin for nbdcopy), and inside
# it `apt-get install ./*.deb` installs the six packages with whatever
# they depend on from the Debian mirror, so a dependency missing from
# debian/control shows here, not on a user's host.  Then, in that root:
#
# 1. bftblk-common's postinst made the user bftblk; no unit is enabled.
# 2. A cluster on loopback, in a network and PID namespace of its own:
#    bftblk keygen, four bftblk-servers run as the unit runs them (as
#    bftblk), bftblk status OK, and nbdkit, finding the plugin by its
#    short name, copies 4 MiB in and back out (nbdcopy) unchanged.
# 3. apt-get purge of the six packages leaves none of their files; the
#    user stays (Debian leaves system users: files they own may outlive
#    the packages).
#
# It needs the mirror (skipped when mmdebstrap cannot reach it) and takes
# about a minute more than make deb; each step has a time limit, 6
# minutes at most in all after make deb.  BFTBLK_DEBS=DIR takes DIR's
# packages instead of running make deb.
# The single-quoted scripts below are for the shells they are given to.
# shellcheck disable=SC2016
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"

[ "$(id -u)" -eq 0 ] || skip "needs root (chroot, namespaces)"
for c in mmdebstrap unshare chroot findmnt dpkg-buildpackage dh; do
	command -v "$c" >/dev/null ||
	    skip "$c is not installed (scripts/install-deps)"
done

PKGS=(bftblk-common bftblk-server nbdkit-plugin-bftblk bftblk-tools
    libbftblk1 libbftblk-dev)
ROOTFS=$TESTDIR/rootfs

# Nothing may stay mounted under the root: run-integration deletes the
# test's directory, and a bind of /dev there would take /dev with it.
_fr_cleanup()
{
	local rc=$?
	set +e
	if findmnt -rn -o TARGET | grep -q "^$ROOTFS/"; then
		echo "deb-fresh-root: left mounted under $ROOTFS; unmounting" >&2
		umount -R -l "$ROOTFS"/* 2>/dev/null
		[ "$rc" -eq 0 ] && rc=1
	fi
	(exit "$rc")
	_cleanup
}
trap _fr_cleanup EXIT

DEBS=${BFTBLK_DEBS:-}
if [ -z "$DEBS" ]; then
	DEBS=$TESTDIR/debs
	make -C "$SRCDIR" --no-print-directory DEB_DIR="$DEBS" deb \
	    >"$TESTDIR/log/make-deb.log" 2>&1 ||
	    { _show_log_tail "$TESTDIR/log/make-deb.log"; fail "make deb"; }
	log "make deb"
fi
files=()
for p in "${PKGS[@]}"; do
	f=$(echo "$DEBS/${p}_"*.deb)
	[ -f "$f" ] || fail "no package $p in $DEBS"
	files+=("$f")
done

# --- The root, and the packages installed in it --------------------------
# The hook runs while mmdebstrap has /proc, /sys and /dev mounted in the
# root, and unmounts them after.
start=$SECONDS
if ! timeout -k 10 200 mmdebstrap --variant=apt --include=libnbd-bin \
    --customize-hook="copy-in ${files[*]} /tmp" \
    --customize-hook='chroot "$1" sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends /tmp/*.deb && rm /tmp/*.deb"' \
    bookworm "$ROOTFS" >"$TESTDIR/log/mmdebstrap.log" 2>&1; then
	if grep -qE 'Failed to fetch|Temporary failure resolving|Could not resolve|Unable to connect' \
	    "$TESTDIR/log/mmdebstrap.log"; then
		_show_log_tail "$TESTDIR/log/mmdebstrap.log" 10
		skip "mmdebstrap cannot reach the Debian mirror"
	fi
	_show_log_tail "$TESTDIR/log/mmdebstrap.log" 40
	fail "mmdebstrap with the packages failed"
fi
log "fresh bookworm root with the packages in $((SECONDS - start))s:" \
    "$(chroot "$ROOTFS" dpkg-query -W -f='${Package} ' "${PKGS[@]}")"

# --- 1. The user, and no unit enabled ------------------------------------
chroot "$ROOTFS" id bftblk >/dev/null ||
    fail "bftblk-common's postinst made no user bftblk"
enabled=$(find "$ROOTFS/etc/systemd" \
    "$ROOTFS/var/lib/systemd/deb-systemd-helper-enabled" \
    -name '*bftblk*' ! -name '*.dsh-also' 2>/dev/null | tr '\n' ' ')
[ -z "$enabled" ] || fail "units enabled by installing: $enabled"
for u in bftblk-server@.service bftblk-nbd.service bftblk-nbd.socket; do
	[ -f "$ROOTFS/lib/systemd/system/$u" ] || fail "$u is not installed"
done
log "user bftblk made by the postinst; units installed, none enabled"

# --- 2. A cluster on loopback, from the packages -------------------------
# Run as root in the root; the servers and nbdkit as bftblk, with the
# units' command lines.  It stops what it started by PID, each wait
# bounded.
cat >"$ROOTFS/root/cluster.sh" <<'EOF'
set -eu
cd /root
pids=
stop()
{
	for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
	for p in $pids; do
		n=0
		while kill -0 "$p" 2>/dev/null && [ "$n" -lt 150 ]; do
			sleep 0.1; n=$((n + 1))
		done
		kill -KILL "$p" 2>/dev/null || true
	done
}
trap stop EXIT
bftblk keygen --dir cluster --size 64M \
    --hosts 127.0.0.1:7701,127.0.0.1:7702,127.0.0.1:7703,127.0.0.1:7704
install -m 644 cluster/bftblk.conf /etc/bftblk/
install -o bftblk -g bftblk -m 600 cluster/client.key /etc/bftblk/
for i in 0 1 2 3; do
	install -o bftblk -g bftblk -m 600 cluster/server-$i.key /etc/bftblk/
	install -d -o bftblk -g bftblk -m 700 /var/lib/bftblk/server-$i
	setpriv --reuid=bftblk --regid=bftblk --init-groups \
	    bftblk-server --config /etc/bftblk/bftblk.conf \
	    --key /etc/bftblk/server-$i.key --data /var/lib/bftblk/server-$i \
	    >server-$i.log 2>&1 &
	pids="$pids $!"
done
for i in 0 1 2 3; do
	n=0
	until grep -q 'listening on' server-$i.log; do
		[ "$n" -lt 200 ] || { cat server-$i.log; exit 1; }
		sleep 0.1; n=$((n + 1))
	done
done
echo "servers listening"
n=0
until bftblk status --dir /etc/bftblk --timeout 2 >status.out 2>&1; do
	[ "$n" -lt 30 ] || { cat status.out; exit 1; }
	sleep 1; n=$((n + 1))
done
head -n 1 status.out
# nbdkit and its --run command run as bftblk: their files in a
# directory of its own.
install -d -o bftblk -g bftblk -m 700 /tmp/io
head -c 4194304 /dev/urandom >/tmp/io/in.bin
chown bftblk:bftblk /tmp/io/in.bin
setpriv --reuid=bftblk --regid=bftblk --init-groups \
    nbdkit -U - bftblk config=/etc/bftblk/bftblk.conf \
    keys=/etc/bftblk/client.key \
    --run 'nbdcopy /tmp/io/in.bin "$uri" && nbdcopy "$uri" /tmp/io/out.bin' \
    </dev/null
head -c 4194304 /tmp/io/out.bin | cmp - /tmp/io/in.bin
echo "nbdkit bftblk: 4 MiB copied in and back unchanged"
EOF
# The namespace's first process is the shell: when it ends, or unshare is
# killed (--kill-child), the kernel ends everything left in it.
if ! timeout -k 10 90 unshare --pid --net --kill-child \
    --mount-proc="$ROOTFS/proc" sh -ec '
	ip link set lo up
	mount --rbind /dev "$1/dev"
	exec chroot "$1" /bin/sh /root/cluster.sh' sh "$ROOTFS" \
    >"$TESTDIR/log/cluster.log" 2>&1; then
	_show_log_tail "$TESTDIR/log/cluster.log" 40
	fail "the cluster from the packages failed"
fi
sed 's/^/  /' "$TESTDIR/log/cluster.log" >&2
grep -q '^health: OK' "$TESTDIR/log/cluster.log" ||
    fail "bftblk status did not say OK"
log "cluster from the packages: status OK, nbdkit bftblk I/O verified"

# --- 3. The purge --------------------------------------------------------
chroot "$ROOTFS" dpkg -L "${PKGS[@]}" >"$TESTDIR/log/files.txt" ||
    fail "dpkg -L"
timeout -k 10 60 unshare --pid --kill-child --mount-proc="$ROOTFS/proc" \
    sh -ec 'root=$1; shift
	mount --rbind /dev "$root/dev"
	exec chroot "$root" env DEBIAN_FRONTEND=noninteractive \
	    apt-get purge -y "$@"' sh "$ROOTFS" "${PKGS[@]}" \
    >"$TESTDIR/log/purge.log" 2>&1 ||
    { _show_log_tail "$TESTDIR/log/purge.log"; fail "apt-get purge"; }
left=()
while read -r f; do
	# Directories may stay (others share them, /lib among them).
	if [ ! -d "$ROOTFS$f" ] && { [ -e "$ROOTFS$f" ] || [ -L "$ROOTFS$f" ]; }
	then
		left+=("$f")
	fi
done <"$TESTDIR/log/files.txt"
[ "${#left[@]}" -eq 0 ] || fail "purged, still there: ${left[*]}"
for p in "${PKGS[@]}"; do
	# shellcheck disable=SC2016 # dpkg-query's field.
	st=$(chroot "$ROOTFS" dpkg-query -W -f='${db:Status-Abbrev}' "$p" \
	    2>/dev/null || true)
	[ -z "$st" ] || [ "$st" = "un " ] || fail "$p is '$st' after the purge"
done
chroot "$ROOTFS" id bftblk >/dev/null || fail "the purge removed the user"
log "purged: $(wc -l <"$TESTDIR/log/files.txt") paths listed, no file" \
    "left; /etc/bftblk holds $(cd "$ROOTFS/etc/bftblk" && echo *)"
log "ok"
