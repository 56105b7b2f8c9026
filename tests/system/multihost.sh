#!/bin/bash
# README's "Deploy on N hosts", on five hosts: four server hosts node0..3
# and the client host app1, each a network namespace with its own
# addresses on a bridge, and its own mount namespace in which /usr holds
# what `make install` installed, and /etc, /var and /run are its own.
# Nothing of the machine's /etc, /var or network is touched.
#
# 1. The network: a bridge in a namespace of its own, a veth from each
#    host into it; IPv4 10.213.47.0/24 (servers .1-.4, client .10) and
#    IPv6 fd5b:f7c1:2f::/64 (::1-::4, ::10), both unused here (checked).
# 2. make install DESTDIR=... PREFIX=/usr; each host sees that tree over
#    its /usr, so the plugin is in nbdkit's own plugin directory there
#    and `nbdkit bftblk` finds it by its short name, as on a real host.
#    systemd-sysusers makes the user bftblk in each host's /etc, as make
#    install does without DESTDIR.
# 3. keygen --hosts with servers 0 and 1 by IPv4 address and servers 2
#    and 3 by IPv6 address ([fd5b:...::3]), port 7700 (each host has its
#    own ports).  Each host gets only the files README's table gives it,
#    and runs README's own command lines: every line the test runs on a
#    host is checked to be in the section, word for word.  The servers
#    run what bftblk-server@.service runs (checked against the installed
#    unit), as the user bftblk.
# 4. fio on app1, through the NBD socket: 64 MiB of 64 KiB random writes
#    at 3 MB/s with a crc32c verify pass.  Mid-run node2 is cut off with
#    nftables (all but loopback dropped): writes go on (fio's bandwidth
#    log, and a write and read of a block outside fio's range), bftblk
#    status on app1 says AT RISK with server 2 unreachable, and fio's
#    verify pass reads everything back with node2 still cut off.
# 5. node2 is reconnected: its rebuild finds the blocks it missed (its
#    log: "rebuild: done, K/K blocks", K > 0), status is OK again with
#    node2 holding as many blocks as node0.  Every server's metrics,
#    served on its host's address (IPv4 or IPv6) and scraped from app1,
#    pass promtool and the Python client's parser.  Then node0 is
#    stopped and fio verifies the 64 MiB again, through nodes 1, 2 and 3.
#
# With MH_FROM=deb (tests/system/deb-multihost.sh) step 2 installs the
# Debian packages of `make deb` instead: each host's /usr, /etc and /var
# are writable overlays of the machine's, with a dpkg database of its
# own, and `apt-get install ./PACKAGE.deb` installs what the host needs
# (bftblk-server on node0..3; nbdkit-plugin-bftblk, bftblk-tools and
# libbftblk-dev on app1, which is also the administration machine; each
# with bftblk-common and libbftblk1 as they need);
# their postinst makes the user bftblk.  The machine's own root is never
# written.  Then the units must be installed and not enabled, the
# library's example must build with pkg-config and run on app1, and at
# the end app1 and node0 purge the packages: none of their files may
# stay (keys, data and the user do, as on any Debian host).
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"

[ "$(id -u)" -eq 0 ] || skip "needs root (network and mount namespaces)"
for c in ip nft nsenter unshare setpriv systemd-sysusers fio nbdinfo curl \
    promtool; do
	command -v "$c" >/dev/null ||
	    skip "$c is not installed (scripts/install-deps)"
done
[[ " $(fio --enghelp 2>/dev/null | tr -s '\t\n' '  ') " == *" nbd "* ]] ||
    skip "fio has no nbd engine"
[ -d /proc/sys/net/ipv6 ] || skip "the kernel has no IPv6"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
    skip "no overlay file system (the hosts' /usr, /etc and /var)"
MH_FROM=${MH_FROM:-install}
if [ "$MH_FROM" = deb ]; then
	for c in apt-get dpkg-buildpackage dh; do
		command -v "$c" >/dev/null ||
		    skip "$c is not installed (scripts/install-deps)"
	done
else
	require_build
fi

NET4=10.213.47
NET6=fd5b:f7c1:2f:
PORT=7700
# Unique names, so that two runs (or a neighbour) never share one.
TAG=bmh$$
BRNS=$TAG-br
HOSTS=(node0 node1 node2 node3 app1)
declare -A ADDR4=([node0]=1 [node1]=2 [node2]=3 [node3]=4 [app1]=10)
declare -A HOLDER=()		# host -> pid of the process holding its mounts
declare -a NETNS=()		# namespaces made, for the EXIT trap
HROOT=$TESTDIR/hosts
ROOT=$TESTDIR/root
SECTION=$TESTDIR/deploy-section.sh
SOCK=/run/bftblk/nbd.sock
URI="nbd+unix:///?socket=$SOCK"

# The EXIT trap: the processes holding the hosts' mount namespaces go
# first (they are not lib.sh's), then the namespaces; the servers and
# nbdkit, still in them, are stopped by lib.sh's cleanup, and each
# namespace goes with its last process.
_mh_cleanup()
{
	local rc=$? h ns
	set +e
	for h in "${!HOLDER[@]}"; do
		kill -s KILL "${HOLDER[$h]}" 2>/dev/null
		wait "${HOLDER[$h]}" 2>/dev/null
	done
	for ns in "${NETNS[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	(exit "$rc")
	_cleanup
}
trap _mh_cleanup EXIT

ip netns add "$BRNS" 2>"$TESTDIR/log/netns.err" ||
    skip "ip netns add failed: $(cat "$TESTDIR/log/netns.err")"
NETNS+=("$BRNS")

# --- 1. The network -----------------------------------------------------
if ip -o addr show | grep -qE " ($NET4\\.|${NET6}:)"; then
	skip "$NET4.0/24 or ${NET6}:/64 is in use on this machine"
fi
if ip route show | grep -q "^$NET4\\." ||
    ip -6 route show | grep -q "^${NET6}:"; then
	skip "$NET4.0/24 or ${NET6}:/64 is routed on this machine"
fi
ip -n "$BRNS" link set lo up
ip -n "$BRNS" link add br0 type bridge 2>"$TESTDIR/log/netns.err" ||
    skip "no bridge: $(cat "$TESTDIR/log/netns.err")"
ip -n "$BRNS" link set br0 up
for h in "${HOSTS[@]}"; do
	ns=$TAG-$h
	ip netns add "$ns"
	NETNS+=("$ns")
	ip link add eth0 netns "$ns" type veth peer name "$h" netns "$BRNS"
	ip -n "$BRNS" link set "$h" master br0 up
	ip -n "$ns" link set lo up
	ip -n "$ns" addr add "$NET4.${ADDR4[$h]}/24" dev eth0
	ip -n "$ns" addr add "${NET6}:${ADDR4[$h]}/64" dev eth0 nodad
	ip -n "$ns" link set eth0 up
done
# IPv6 addresses are usable once not tentative; nodad makes that at once.
deadline=$((SECONDS + 10))
for h in "${HOSTS[@]}"; do
	until [ -z "$(ip -n "$TAG-$h" -6 addr show tentative)" ]; do
		[ "$SECONDS" -lt "$deadline" ] ||
		    fail "$h: IPv6 address still tentative after 10s"
		sleep 0.1
	done
done
log "network: bridge in $BRNS, hosts ${HOSTS[*]} on $NET4.0/24" \
    "and ${NET6}:/64"

# --- 2. The packages, and the hosts' file systems ----------------------
# hold HOST: a sleep in HOST's network namespace and a mount namespace
# of its own, which holds both; sets HOLDER[HOST].
hold()
{
	local h=$1 deadline
	ip netns exec "$TAG-$h" unshare --mount --propagation private \
	    sleep 100000 </dev/null &
	HOLDER[$h]=$!
	deadline=$((SECONDS + 10))
	until [ "$(readlink "/proc/${HOLDER[$h]}/ns/mnt")" != \
	    "$(readlink /proc/self/ns/mnt)" ] &&
	    [ "$(readlink "/proc/${HOLDER[$h]}/exe")" = "$(command -v sleep)" ]
	do
		[ "$SECONDS" -lt "$deadline" ] || fail "$h: no mount namespace"
		sleep 0.1
	done
}

if [ "$MH_FROM" = deb ]; then
	DEBS=${BFTBLK_DEBS:-}
	if [ -z "$DEBS" ]; then
		DEBS=$TESTDIR/debs
		make -C "$SRCDIR" --no-print-directory DEB_DIR="$DEBS" deb \
		    >"$TESTDIR/log/make-deb.log" 2>&1 ||
		    { _show_log_tail "$TESTDIR/log/make-deb.log"; fail "make deb"; }
		log "make deb: $(cd "$DEBS" && echo ./*.deb)"
	fi
	# What each host needs, with the packages of ours they depend on
	# (apt finds those only among the files it is given).
	server_pkgs="bftblk-server bftblk-common"
	declare -A HOST_PKGS=([node0]=$server_pkgs [node1]=$server_pkgs
	    [node2]=$server_pkgs [node3]=$server_pkgs
	    [app1]="nbdkit-plugin-bftblk bftblk-tools libbftblk-dev libbftblk1 bftblk-common")
	# A host: the machine's /usr, /etc and /var as writable overlays,
	# their changes in $HROOT/HOST; /run an empty tmpfs (so no systemd
	# runs there, and maintainer scripts find none); /usr/local empty,
	# so that a `make install` on the machine cannot stand in for the
	# packages on PATH.  /lib, /bin and /sbin are links into /usr on
	# Debian 12.
	for h in "${HOSTS[@]}"; do
		d=$HROOT/$h
		mkdir -p "$d/incoming"
		for m in usr etc var; do
			mkdir -p "$d/$m" "$d/$m.work"
		done
		hold "$h"
		debs=
		for p in ${HOST_PKGS[$h]}; do
			f=$(echo "$DEBS/${p}_"*.deb)
			[ -f "$f" ] || fail "no package $p in $DEBS"
			debs+=" $f"
		done
		# The packages' dependencies are the machine's build
		# dependencies' libraries and nbdkit: apt must find them
		# installed, as the host has no network to fetch any.  (Not
		# --no-download: with it, apt 2.6 takes the local files'
		# paths for relative ones and fails.)
		nsenter -t "${HOLDER[$h]}" -m -- sh -ec "
		    for m in usr etc var; do
			mount -t overlay overlay -o lowerdir=/\$m,upperdir=$d/\$m,workdir=$d/\$m.work /\$m
		    done
		    mount -t tmpfs -o mode=755 tmpfs /run
		    mount -t tmpfs -o mode=755 tmpfs /usr/local
		    if id bftblk >/dev/null 2>&1; then
			echo 'user bftblk: there before the packages'
		    fi
		    DEBIAN_FRONTEND=noninteractive apt-get install -y \
			--no-install-recommends $debs
		    id bftblk" \
		    >"$TESTDIR/log/apt-$h.log" 2>&1 ||
		    { _show_log_tail "$TESTDIR/log/apt-$h.log" 30
		      fail "$h: apt-get install ${HOST_PKGS[$h]}"; }
		log "$h: apt-get install ${HOST_PKGS[$h]}"
	done
else
	san=
	if ldd "$SERVER" | grep -q libasan; then
		san=SAN=1
	fi
	make -C "$SRCDIR" --no-print-directory BUILD="$BUILD" $san \
	    PREFIX=/usr DESTDIR="$ROOT" install \
	    >"$TESTDIR/log/make-install.log" 2>&1 ||
	    { _show_log_tail "$TESTDIR/log/make-install.log"
	      fail "make install"; }
	log "make install DESTDIR=$ROOT PREFIX=/usr"

	# What make install gives systemd-sysusers (where pkg-config says).
	SYSUSERS=$(find "$ROOT" -path '*/sysusers.d/bftblk.conf' | head -n 1)
	[ -n "$SYSUSERS" ] ||
	    fail "make install installed no sysusers.d/bftblk.conf"

	# A host: /usr is the installed tree over the machine's
	# (read-only), /etc and /var the machine's with the installed files
	# and the host's own changes in $HROOT/HOST, /run an empty tmpfs.
	for h in "${HOSTS[@]}"; do
		d=$HROOT/$h
		mkdir -p "$d/incoming" "$d/etc" "$d/etc.work" "$d/var" \
		    "$d/var.work"
		hold "$h"
		nsenter -t "${HOLDER[$h]}" -m -- sh -ec "
		    mount -t overlay overlay -o lowerdir=$ROOT/usr:/usr /usr
		    mount -t overlay overlay -o lowerdir=$ROOT/etc:/etc,upperdir=$d/etc,workdir=$d/etc.work /etc
		    mount -t overlay overlay -o lowerdir=$ROOT/var:/var,upperdir=$d/var,workdir=$d/var.work /var
		    mount -t tmpfs -o mode=755 tmpfs /run
		    systemd-sysusers $SYSUSERS" \
		    >>"$TESTDIR/log/hosts.log" 2>&1 ||
		    { _show_log_tail "$TESTDIR/log/hosts.log"; fail "$h: mounts"; }
	done
fi
log "hosts ready: /usr from $MH_FROM, own /etc /var /run, user bftblk"

# on HOST CMD...: runs CMD on HOST (its network and mounts).
on()
{
	local h=$1
	shift
	nsenter -t "${HOLDER[$h]}" -m -n -- "$@"
}

# README's "Deploy on N hosts" code, continuation lines joined and
# trailing comments dropped, one command a line.
sed -n '/^## Deploy on N hosts/,/^## /p' "$SRCDIR/README.md" |
    awk '/^```/ { code = !code; next }
	code { if (sub(/\\$/, "")) { part = part $0; next }
	    line = part $0; part = ""
	    sub(/[ \t]+#.*$/, "", line); sub(/^[ \t]+/, "", line)
	    gsub(/[ \t]+/, " ", line)
	    if (line != "" && line !~ /^#/) print line }' >"$SECTION"
[ -s "$SECTION" ] || fail "README.md has no Deploy on N hosts code"

# documented LINE: fails unless README's section has LINE as a command.
documented()
{
	grep -qxF -- "$1" "$SECTION" ||
	    fail "README's Deploy on N hosts section has no line: $1"
}

# doc HOST I LINE...: runs README's LINEs on HOST in one shell, in the
# directory the files were copied to, with I set (the server's index).
doc()
{
	local h=$1 i=$2 l script="cd $HROOT/$1/incoming && I=$2"
	shift 2
	for l in "$@"; do
		documented "$l"
		script+=" && $l"
	done
	echo "== $h: $*" >>"$TESTDIR/log/hosts.log"
	on "$h" sh -c "$script" >>"$TESTDIR/log/hosts.log" 2>&1 ||
	    { _show_log_tail "$TESTDIR/log/hosts.log"; fail "$h: $*"; }
}

# doc_daemon HOST I NAME LINE...: like doc, in the background, the last
# LINE exec'd as the process lib.sh tracks as NAME; its output goes to
# $TESTDIR/log/NAME.log.  Sets DAEMON_PID.
doc_daemon()
{
	local h=$1 i=$2 name=$3 l script logf=$TESTDIR/log/$3.log
	shift 3
	script="cd $HROOT/$h/incoming && I=$i"
	for l in "$@"; do
		documented "$l"
		if [ "$l" = "${*: -1}" ]; then
			script+=" && exec $l"
		else
			script+=" && $l"
		fi
	done
	echo "== $(date +%T) $h: $*" >>"$logf"
	# Not through on(): a function in the background is a subshell,
	# and lib.sh must track the daemon itself (nsenter and sh exec it).
	nsenter -t "${HOLDER[$h]}" -m -n -- sh -c "$script" \
	    >>"$logf" 2>&1 </dev/null &
	DAEMON_PID=$!
	_track "$DAEMON_PID" "$name"
}

# --- 3. Keys, and what each host gets -----------------------------------
ADMINDIR=$TESTDIR/admin
mkdir -p "$ADMINDIR"
HOSTLIST=$NET4.1:$PORT,$NET4.2:$PORT,[${NET6}:3]:$PORT,[${NET6}:4]:$PORT
if [ "$MH_FROM" = deb ]; then
	ADMIN_TOOL=(on app1 bftblk)	# bftblk-tools' bftblk on app1
else
	ADMIN_TOOL=("$ROOT/usr/bin/bftblk")
fi
"${ADMIN_TOOL[@]}" keygen --dir "$ADMINDIR/cluster" --size 128M \
    --hosts "$HOSTLIST" >"$TESTDIR/log/keygen.log" 2>&1 ||
    { _show_log_tail "$TESTDIR/log/keygen.log"; fail "keygen --hosts"; }
for i in 0 1 2 3; do
	grep -q "^server\\.$i = " "$ADMINDIR/cluster/bftblk.conf" ||
	    fail "bftblk.conf has no server.$i line"
done
grep -qF "server.2 = [${NET6}:3]:$PORT" "$ADMINDIR/cluster/bftblk.conf" ||
    fail "server 2 is not by its IPv6 address: $(grep '^server' \
	"$ADMINDIR/cluster/bftblk.conf")"
log "keygen --hosts $HOSTLIST"

# The server hosts' own lines, run with only their files; the units'
# command (checked below) and its optional server-I.env.
SERVER_LINES=(
	'install -m 644 bftblk.conf /etc/bftblk/'
	'install -o bftblk -g bftblk -m 600 server-$I.key /etc/bftblk/'
	'install -d -o bftblk -g bftblk -m 700 /var/lib/bftblk/server-$I'
)
SERVER_RUN=(
	'set -a; . /etc/bftblk/server-$I.env; set +a'
	'setpriv --reuid=bftblk --regid=bftblk --init-groups bftblk-server --config /etc/bftblk/bftblk.conf --key /etc/bftblk/server-$I.key --data /var/lib/bftblk/server-$I $BFTBLK_SERVER_ARGS'
)
CLIENT_LINES=(
	'install -m 644 bftblk.conf /etc/bftblk/'
	'install -o bftblk -g bftblk -m 600 client.key /etc/bftblk/'
	'install -d -o bftblk -g bftblk -m 755 /run/bftblk'
)
CLIENT_RUN=(
	'set -a; . /etc/bftblk/nbd.env; set +a'
	'setpriv --reuid=bftblk --regid=bftblk --init-groups nbdkit -f -U /run/bftblk/nbd.sock bftblk config=/etc/bftblk/bftblk.conf keys=/etc/bftblk/client.key $BFTBLK_NBD_ARGS'
)
CLIENT_METRICS=$NET4.10:9101

# The command the README gives is the unit's ExecStart (%i = $I, the
# program by its name), so that a host without systemd runs what
# systemctl would.
if [ "$MH_FROM" = deb ]; then
	unit=$TESTDIR/bftblk-server@.service
	on node0 cat /lib/systemd/system/bftblk-server@.service >"$unit" ||
	    fail "bftblk-server installed no bftblk-server@.service"
	# Installed, not enabled: no link to any bftblk unit in /etc, and
	# none in deb-systemd-helper's record of the links it made (its
	# *.dsh-also files only list what enabling would make).
	for h in node0 app1; do
		links=$(on "$h" find /etc/systemd \
		    /var/lib/systemd/deb-systemd-helper-enabled \
		    -name '*bftblk*' ! -name '*.dsh-also' 2>/dev/null |
		    tr '\n' ' ')
		[ -z "$links" ] || fail "$h: units enabled by installing: $links"
	done
	[ -n "$(on app1 ls /lib/systemd/system/bftblk-nbd.socket \
	    /lib/systemd/system/bftblk-nbd.service)" ] ||
	    fail "nbdkit-plugin-bftblk installed no units"
	log "units installed, none enabled"
	# The programs the hosts run are the packages'.
	[ "$(on node0 sh -c 'command -v bftblk-server')" = \
	    /usr/sbin/bftblk-server ] || fail "node0 runs no packaged server"
	[ "$(on app1 sh -c 'command -v bftblk')" = /usr/bin/bftblk ] ||
	    fail "app1 runs no packaged bftblk"
else
	unit=$(find "$ROOT" -name 'bftblk-server@.service' | head -n 1)
	[ -n "$unit" ] ||
	    fail "make install installed no bftblk-server@.service"
fi
exec_start=$(sed -n '/^ExecStart=/,/[^\\]$/p' "$unit" | tr -d '\\\n' |
    sed -e 's/^ExecStart=//' -e 's/%i/$I/g' -e 's|/usr/sbin/||' |
    tr -s ' \t' '  ')
[ "$exec_start" = "${SERVER_RUN[1]#setpriv * --init-groups }" ] ||
    fail "README's command is not the unit's: '$exec_start'"

for i in 0 1 2 3; do
	h=node$i
	cp "$ADMINDIR/cluster/bftblk.conf" "$ADMINDIR/cluster/server-$i.key" \
	    "$HROOT/$h/incoming/"
	doc "$h" "$i" "${SERVER_LINES[@]}"
	# A caught-up server compares with its peers every 60 s by default;
	# every 10 s here, through the unit's environment file, which also
	# serves metrics on the host's own address.
	if [ "$i" -lt 2 ]; then maddr=$NET4.$((i + 1)); else
		maddr="[${NET6}:$((i + 1))]"; fi
	METRICS[$i]=$maddr:9100
	on "$h" sh -c "echo 'BFTBLK_SERVER_ARGS=\"--rebuild-interval 10 \
--metrics ${METRICS[$i]}\"' >/etc/bftblk/server-$i.env"
	have=$(on "$h" ls /etc/bftblk | tr '\n' ' ')
	[ "$have" = "bftblk.conf server-$i.env server-$i.key " ] ||
	    fail "$h's /etc/bftblk holds $have"
	[ "$(on "$h" stat -c '%U %a' "/etc/bftblk/server-$i.key" \
	    "/var/lib/bftblk/server-$i" | tr '\n' ' ')" = \
	    "bftblk 600 bftblk 700 " ] || fail "$h: wrong owners or modes"
	doc_daemon "$h" "$i" "server-$i" "${SERVER_RUN[@]}"
	SERVER_PID[$i]=$DAEMON_PID
done
for i in 0 1 2 3; do
	_wait_log "${SERVER_PID[$i]}" "$TESTDIR/log/server-$i.log" 0 \
	    "listening on" "server-$i"
	log "node$i: $(grep -o 'listening on .*' "$TESTDIR/log/server-$i.log")"
	[ "$(awk '/^Uid:/ { print $2 }' "/proc/${SERVER_PID[$i]}/status")" = \
	    "$(on "node$i" id -u bftblk)" ] ||
	    fail "server-$i does not run as bftblk"
done
# Each listens on its own address, IPv6 for node2.
grep -q "listening on .*${NET6}:3\\]*:$PORT" "$TESTDIR/log/server-2.log" ||
    fail "server-2 is not listening on its IPv6 address"

cp "$ADMINDIR/cluster/bftblk.conf" "$ADMINDIR/cluster/client.key" \
    "$HROOT/app1/incoming/"
doc app1 - "${CLIENT_LINES[@]}"
# The plugin's metrics too, through the unit's environment file.
on app1 sh -c "echo 'BFTBLK_NBD_ARGS=\"metrics=$CLIENT_METRICS\"' \
    >/etc/bftblk/nbd.env"
[ "$(on app1 ls /etc/bftblk | tr '\n' ' ')" = \
    "bftblk.conf client.key nbd.env " ] ||
    fail "app1's /etc/bftblk holds more than bftblk.conf, client.key, nbd.env"
doc_daemon app1 - nbdkit-nbd "${CLIENT_RUN[@]}"
NBDKIT_PID[nbd]=$DAEMON_PID
deadline=$((SECONDS + BFTBLK_WAIT))
until on app1 nbdinfo --size "$URI" >/dev/null 2>&1; do
	_alive "$DAEMON_PID" || fail "nbdkit exited before serving"
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "nbdkit not serving after ${BFTBLK_WAIT}s"
	sleep 0.2
done
doc app1 - "nbdinfo '$URI'"
log "app1: nbdkit serving $URI, $(on app1 nbdinfo --size "$URI") bytes"

# _status_run NAME ARGS...: README's status line on app1 with ARGS, into
# log/NAME.out; sets RC.
_status_run()
{
	local name=$1 line='bftblk status --dir /etc/bftblk'
	shift
	documented "$line"
	RC=0
	# shellcheck disable=SC2086 # a command line of words.
	on app1 $line --timeout 2 "$@" >"$TESTDIR/log/$name.out" \
	    2>"$TESTDIR/log/$name.err" || RC=$?
	sed "s/^/  $name: /" "$TESTDIR/log/$name.out" >&2
}
# Servers started on new data directories compare with their peers
# first, and say "waiting for peers" until enough of them answered:
# the cluster is healthy once they have, within a rebuild retry or two.
deadline=$((SECONDS + 60))
_status_run healthy
while [ "$RC" -ne 0 ] && [ "$SECONDS" -lt "$deadline" ] &&
    grep -q 'waiting for peers' "$TESTDIR/log/healthy.out"; do
	sleep 1
	_status_run healthy
done
[ "$RC" -eq 0 ] || fail "status on app1 exited $RC with every server up"

# --- 4. fio, and node2 cut off mid-run ----------------------------------
# fio_job NAME OPTIONS...: writes $TESTDIR/NAME.fio, the job with OPTIONS.
fio_job()
{
	local name=$1
	shift
	{
		printf '%s\n' '[global]' ioengine=nbd "uri=$URI" size=64M bs=64k \
		    iodepth=8 rw=randwrite verify=crc32c verify_fatal=1 \
		    verify_state_save=0 "$@" "[$name]"
	} >"$TESTDIR/$name.fio"
}

# fio_start NAME: fio on app1 runs NAME.fio with a JSON report.
fio_start()
{
	nsenter -t "${HOLDER[app1]}" -m -n -- fio --output-format=json --output="$TESTDIR/log/fio-$1.json" \
	    "$TESTDIR/$1.fio" >"$TESTDIR/log/fio-$1.log" 2>&1 &
	FIO_PID=$!
}
# fio_wait NAME: fio must exit 0 with no error, having verified 64 MiB.
fio_wait()
{
	local name=$1 rc=0
	wait "$FIO_PID" || rc=$?
	if [ "$rc" -ne 0 ]; then
		_show_log_tail "$TESTDIR/log/fio-$name.log" 30
		_show_log_tail "$TESTDIR/log/fio-$name.json" 30
		fail "fio $name exited with status $rc"
	fi
	python3 - "$TESTDIR/log/fio-$name.json" <<'PY' ||
import json, sys
text = open(sys.argv[1]).read()
job = json.loads(text[text.index("{"):])["jobs"][0]
if job["error"]:
    sys.exit("fio job error %d" % job["error"])
if job["read"]["io_bytes"] != 64 << 20:
    sys.exit("fio verified %d bytes, not 64 MiB" % job["read"]["io_bytes"])
print("fio: wrote %d B, verified %d B" % (job["write"]["io_bytes"],
                                          job["read"]["io_bytes"]))
PY
	    fail "fio $name: bad report"
}

cut_off()
{
	on "$1" nft -f - <<'EOF'
table inet cutoff {
	chain input { type filter hook input priority 0; policy drop;
		iifname "lo" accept; }
	chain output { type filter hook output priority 0; policy drop;
		oifname "lo" accept; }
}
EOF
	log "$1 cut off (nftables: all but loopback dropped)"
}
reconnect()
{
	on "$1" nft delete table inet cutoff
	log "$1 reconnected"
}

log "fio: 64 MiB of random 64 KiB writes at 3 MB/s, then a verify pass"
fio_job write rate=3m "write_bw_log=$TESTDIR/fio-write" log_avg_msec=1000
fio_start write
fio_t0=$SECONDS
sleep 4
cut_off node2
cut_t=$((SECONDS - fio_t0))
sleep 2
_status_run cut
[ "$RC" -eq 1 ] || fail "status with node2 cut off exited $RC, not 1"
line=$(head -n 1 "$TESTDIR/log/cut.out")
[ "$line" = "health: AT RISK (server 2 unreachable: no fault left to spare)" ] ||
    fail "unexpected health line with node2 cut off: $line"
grep -q "^server 2 .*${NET6}:3\\]*:$PORT: unreachable" "$TESTDIR/log/cut.out" ||
    fail "status does not say server 2 is unreachable"
# Another client's I/O, beyond fio's 64 MiB, goes through too.
# nbdsh is /usr/bin/python3's (python3-libnbd), whatever python3 PATH has.
on app1 env PATH="/usr/bin:$PATH" timeout 30 nbdsh -u "$URI" -c '
import os
b = os.urandom(65536)
h.pwrite(b, 96 << 20)
assert h.pread(65536, 96 << 20) == b' ||
    fail "a write and read with node2 cut off failed"
log "a write and read beyond fio's range went through"
fio_wait write
fio_end=$((SECONDS - fio_t0))
# The bandwidth log: one line a second, "ms, KiB/s, ...".  From 2 s after
# the cut to the end of the writes, fio must have gone on writing at
# least half its rate on average.
python3 - "$TESTDIR"/fio-write_bw.*.log "$cut_t" <<'PY' ||
import sys
rows = [l.split(",") for l in open(sys.argv[1]) if l.strip()]
cut = float(sys.argv[2])
win = [int(r[1]) for r in rows if int(r[0]) / 1000.0 > cut + 2]
if len(win) < 5:
    sys.exit("only %d bandwidth samples after the cut" % len(win))
# The verify pass is reads: fio logs write bandwidth only while writing.
avg = sum(win) / len(win)
print("fio after the cut: %d samples, %.0f KiB/s on average, min %d" %
      (len(win), avg, min(win)))
if avg < 1500:
    sys.exit("fio wrote %.0f KiB/s after the cut, not ~3000" % avg)
PY
    fail "fio's writes stalled with node2 cut off"
log "fio done in ${fio_end}s with node2 cut off from ${cut_t}s on"

# --- 5. node2 back: it catches up, and is then needed -------------------
logf=$TESTDIR/log/server-2.log
offset=$(stat -c %s "$logf")
reconnect node2
BFTBLK_WAIT=40 _wait_log "${SERVER_PID[2]}" "$logf" "$offset" \
    "rebuild: done, " "server-2 (catch-up)"
caught=$(tail -c "+$((offset + 1))" "$logf" | grep -m1 -o 'rebuild: done, [0-9]*/[0-9]* blocks')
k=${caught#rebuild: done, }
k=${k%%/*}
[ "$k" -gt 0 ] && [ "$caught" = "rebuild: done, $k/$k blocks" ] ||
    fail "node2's catch-up: $caught"
log "node2: $caught"
deadline=$((SECONDS + 20))
until _status_run back --json && [ "$RC" -eq 0 ] &&
    python3 - "$TESTDIR/log/back.out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
held = [s.get("blocks_held") for s in r["servers"]]
print("blocks held:", held, file=sys.stderr)
sys.exit(0 if held[2] == held[0] and held[0] >= 1024 else 1)
PY
do
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "status not OK with node2 holding node0's blocks after 20s"
	sleep 1
done
log "status OK again, node2 holds as many blocks as node0"

# Every server's metrics, scraped from app1 across the bridge, pass
# promtool and the Python client's parser, and count the writes.
for i in 0 1 2 3; do
	out=$TESTDIR/log/metrics-$i.txt
	on app1 curl -fsS --max-time 5 "http://${METRICS[$i]}/metrics" \
	    >"$out" || fail "no metrics from server $i at ${METRICS[$i]}"
	promtool check metrics <"$out" >/dev/null 2>&1 ||
	    fail "promtool rejects server $i's metrics: $(promtool check \
	    metrics <"$out" 2>&1 | head -3)"
	/usr/bin/python3 - "$out" <<'PY' || fail "server $i's metrics: parser"
import sys
from prometheus_client.parser import text_string_to_metric_families
stores = 0
for fam in text_string_to_metric_families(open(sys.argv[1]).read()):
    for s in fam.samples:
        if s.name == "bftblk_server_requests_total" and \
                s.labels.get("type") == "store":
            stores = s.value
assert stores >= 1024, "only %d STOREs counted" % stores
PY
done
log "metrics of the four servers parse, each counts the writes"
out=$TESTDIR/log/metrics-client.txt
on app1 curl -fsS --max-time 5 "http://$CLIENT_METRICS/metrics" >"$out" ||
    fail "no metrics from the plugin at $CLIENT_METRICS"
promtool check metrics <"$out" >/dev/null 2>&1 ||
    fail "promtool rejects the plugin's metrics"
/usr/bin/python3 - "$out" <<'PY' || fail "the plugin's metrics: parser"
import sys
from prometheus_client.parser import text_string_to_metric_families
up = {}
for fam in text_string_to_metric_families(open(sys.argv[1]).read()):
    for s in fam.samples:
        if s.name == "bftblk_client_server_connected":
            up[s.labels["server"]] = s.value
assert up == {"0": 1, "1": 1, "2": 1, "3": 1}, up
PY
log "the plugin's metrics parse and show the four servers connected"

server_kill 0
log "fio: verify the 64 MiB again with node0 stopped"
fio_job reverify verify_only=1
fio_start reverify
fio_wait reverify

# --- 6. From the packages: the library's example, then a purge ----------
if [ "$MH_FROM" = deb ]; then
	nbdkit_stop nbd
	# libbftblk-dev as a program uses it: pkg-config, the header and
	# the shared library from the packages, none from the source tree
	# but the example itself.
	cp "$SRCDIR/docs/example.c" "$HROOT/app1/incoming/"
	on app1 sh -c "cd $HROOT/app1/incoming &&
	    cc -o example example.c \$(pkg-config --cflags --libs bftblk)" \
	    >"$TESTDIR/log/example-build.log" 2>&1 ||
	    { _show_log_tail "$TESTDIR/log/example-build.log"
	      fail "the example does not build against libbftblk-dev"; }
	# ldd may name it by /lib, a link to /usr/lib on Debian 12.
	lib=$(on app1 ldd "$HROOT/app1/incoming/example" |
	    awk '$1 == "libbftblk.so.1" { print $3 }')
	if [ -z "$lib" ] || [ "$(on app1 readlink -f "$lib")" != \
	    "/usr/lib/$(gcc -print-multiarch)/libbftblk.so.1" ]; then
		fail "the example does not use libbftblk1's library: '$lib'"
	fi
	on app1 timeout 60 "$HROOT/app1/incoming/example" \
	    /etc/bftblk/bftblk.conf /etc/bftblk/client.key \
	    >"$TESTDIR/log/example.log" 2>&1 ||
	    { _show_log_tail "$TESTDIR/log/example.log"
	      fail "the example failed against the cluster"; }
	grep -qx 'hello from libbftblk' "$TESTDIR/log/example.log" ||
	    fail "the example did not read its block back"
	log "app1: the example, built with pkg-config bftblk, wrote and" \
	    "read a block"

	# Purged, a package leaves none of its files (directories, /lib
	# among them, may stay: other packages share them); what the admin put
	# in /etc/bftblk and /var/lib/bftblk stays (dpkg keeps a directory
	# that is not empty), and so does the user: Debian leaves system
	# users in place, since files they own may outlive the package.
	for h in app1 node0; do
		read -ra pkgs <<<"${HOST_PKGS[$h]}"
		on "$h" dpkg -L "${pkgs[@]}" >"$TESTDIR/log/files-$h.txt" ||
		    fail "$h: dpkg -L ${pkgs[*]}"
		on "$h" env DEBIAN_FRONTEND=noninteractive apt-get purge -y \
		    "${pkgs[@]}" >"$TESTDIR/log/purge-$h.log" 2>&1 ||
		    { _show_log_tail "$TESTDIR/log/purge-$h.log"
		      fail "$h: apt-get purge ${pkgs[*]}"; }
		# shellcheck disable=SC2016 # the host's shell expands it.
		left=$(on "$h" sh -c 'while read -r f; do
		    if [ ! -d "$f" ] && { [ -e "$f" ] || [ -L "$f" ]; }; then
			echo "$f"
		    fi
		done' <"$TESTDIR/log/files-$h.txt" | tr '\n' ' ')
		[ -z "$left" ] || fail "$h: purged, still there: $left"
		for p in "${pkgs[@]}"; do
			# shellcheck disable=SC2016 # dpkg-query's field.
			st=$(on "$h" dpkg-query -W -f='${db:Status-Abbrev}' \
			    "$p" 2>/dev/null || true)
			[ -z "$st" ] || [ "$st" = "un " ] ||
			    fail "$h: $p is '$st' after the purge"
		done
		on "$h" id bftblk >/dev/null ||
		    fail "$h: the purge removed the user bftblk"
		log "$h: purged ${pkgs[*]}: $(wc -l <"$TESTDIR/log/files-$h.txt")" \
		    "paths listed, no file left; /etc/bftblk holds" \
		    "$(on "$h" ls /etc/bftblk | tr '\n' ' ')"
	done
fi
log "ok"
