# shellcheck shell=bash
# Sourced by every integration test: starts a bftblk cluster and nbdkit
# in the test's own directory and tears everything down again.
#
# Every process a test starts is a child of the test's shell, recorded
# by PID; the EXIT trap stops exactly those PIDs (TERM, bounded wait,
# KILL), so tests never kill by name and cannot hit a neighbour's
# processes.  A server or nbdkit that exits non-zero on SIGTERM fails the
# test: that is how leaks found by ASan or valgrind become failures.
#
# Environment:
#   BUILD       build directory with the binaries (default build; a
#               relative path is taken from the source tree)
#   TESTDIR     scratch directory (tests/run-integration makes one; when
#               unset a temporary one is made and removed at exit)
#   VALGRIND=1  run servers and nbdkit under valgrind
#   BFTBLK_WAIT seconds to wait for a process to come up (default 10,
#               120 under valgrind)
#   CLUSTER_SIZE disk size for cluster_start (default 64M)
#   SERVER_ARGS extra arguments for every bftblk-server (e.g. -v)
#   SERVER_ARGS_I extra arguments for bftblk-server I only
#   SERVER_BIN  the server binary server_start runs (default $SERVER,
#               the production bftblk-server; $TEST_SERVER for the
#               test-only options --byzantine and --record-frames)
#   CLUSTER_CHANNEL aead (default) or plain: cluster_start's keygen
#               --channel
#   NBDKIT_ARGS extra nbdkit options (e.g. -v)

set -euo pipefail

LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRCDIR=${BFTBLK_SRCDIR:-$(cd "$LIB_DIR/../.." && pwd)}
BUILD=${BUILD:-build}
case "$BUILD" in
/*) ;;
*) BUILD=$SRCDIR/$BUILD ;;
esac
ADMIN=$BUILD/bftblk
SERVER=$BUILD/bftblk-server
# Built from the same sources plus server/testing/; only the tests that
# lie or record pick it, through SERVER_BIN.
TEST_SERVER=$BUILD/tests/bftblk-server-test
PLUGIN=$BUILD/nbdkit-bftblk-plugin.so

VALGRIND=${VALGRIND:-0}
if [ "$VALGRIND" = 1 ]; then
	BFTBLK_WAIT=${BFTBLK_WAIT:-120}
	_STOP_WAIT=120
else
	BFTBLK_WAIT=${BFTBLK_WAIT:-10}
	_STOP_WAIT=15
fi
CLUSTER_SIZE=${CLUSTER_SIZE:-64M}
# Valgrind's own error status, distinct from any the programs use.
VALGRIND_STATUS=99

_OWN_TESTDIR=0
if [ -z "${TESTDIR:-}" ]; then
	TESTDIR=$(mktemp -d "${TMPDIR:-/tmp}/bftblk-test.XXXXXX")
	_OWN_TESTDIR=1
fi
TESTDIR=$(cd "$TESTDIR" && pwd)
mkdir -p "$TESTDIR/log"

declare -a _PIDS=()		# every live child we started, in start order
declare -A _PID_WHAT=()		# pid -> "server-I" / "nbdkit-NAME"
declare -A SERVER_PID=()	# I -> pid
declare -A NBDKIT_PID=()	# NAME -> pid
# Set by cluster_start for the tests to use.
# shellcheck disable=SC2034
CLUSTER_DIR=
CLUSTER_T=
CLUSTER_N=
CLUSTER_BASE_PORT=

# Progress on stderr with the elapsed time, so logs show where time goes.
log()
{
	printf '[%4ds] %s\n' "$SECONDS" "$*" >&2
}

# Fails the test with a reason; the EXIT trap then shows the logs.
fail()
{
	printf 'FAIL: %s\n' "$*" >&2
	exit 1
}

# Skips the test (tests/run-integration counts exit 77 as skipped).
skip()
{
	printf 'SKIP: %s\n' "$*" >&2
	exit 77
}

# require_python_nbd PY: skips the test unless PY can import libnbd's
# Python module (Debian's python3-libnbd is for /usr/bin/python3, which
# pyenv's python3 may shadow on PATH).
require_python_nbd()
{
	"$1" -c 'import nbd' 2>/dev/null ||
	    skip "$1 has no nbd module (apt-get install python3-libnbd)"
}

# status_each FIELD: FIELD of every server in `bftblk status --json`
# (bytes_live, bytes_total, ...), space-separated in index order; -1
# for a server that does not report it.
status_each()
{
	"$ADMIN" status --dir "$CLUSTER_DIR" --json | python3 -c "import json, sys
r = json.load(sys.stdin)
print(' '.join(str(s.get(sys.argv[1], -1)) for s in r['servers']))" "$1"
}

# require_fio_nbd: skips the test unless fio is installed with its nbd
# engine (fio 3.x built with libnbd, as Debian 12's is).
require_fio_nbd()
{
	command -v fio >/dev/null || skip "fio is not installed"
	[[ " $(fio --enghelp 2>/dev/null | tr -s '\t\n' '  ') " == *" nbd "* ]] ||
	    skip "fio has no nbd engine"
}

require_build()
{
	local f
	for f in "$ADMIN" "$SERVER" "$PLUGIN"; do
		[ -e "$f" ] || fail "$f is missing: run make first"
	done
}

# Prints a process's state letter (R, S, T, Z, ...), or nothing.
_state()
{
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	echo "${stat%% *}"
}

# A process counts as gone once it is a zombie: a child stays in /proc
# until we wait for it, which is also what keeps its PID from reuse.
_alive()
{
	local st
	st=$(_state "$1")
	[ -n "$st" ] && [ "$st" != Z ]
}

_forget_pid()
{
	local pid=$1 i
	for i in "${!_PIDS[@]}"; do
		if [ "${_PIDS[$i]}" = "$pid" ]; then
			unset '_PIDS[i]'
		fi
	done
	_PIDS=("${_PIDS[@]}")
	unset '_PID_WHAT[$pid]'
}

# _reap PID: waits for an exited child and sets _STATUS to its status.
_reap()
{
	_STATUS=0
	wait "$1" 2>/dev/null || _STATUS=$?
}

# _stop_pid PID SIG: signals a child, waits up to _STOP_WAIT seconds for
# it to exit, then kills it.  Sets _STATUS to the exit status.
_stop_pid()
{
	local pid=$1 sig=$2 deadline
	# A stopped process (server_kill I STOP) would keep the signal
	# pending forever.  Only then: a SIGCONT would also cancel the
	# SIGSTOP of LeakSanitizer's ptrace attach at exit and hang it.
	if [ "$(_state "$pid")" = T ]; then
		kill -s CONT "$pid" 2>/dev/null || true
	fi
	kill -s "$sig" "$pid" 2>/dev/null || true
	deadline=$((SECONDS + _STOP_WAIT))
	while _alive "$pid" && [ "$SECONDS" -lt "$deadline" ]; do
		sleep 0.1
	done
	if _alive "$pid"; then
		log "${_PID_WHAT[$pid]:-pid $pid} ignored SIG$sig for" \
		    "${_STOP_WAIT}s; sending SIGKILL"
		kill -s KILL "$pid" 2>/dev/null || true
	fi
	_reap "$pid"
}

# _track PID WHAT: records a child for the EXIT trap.
_track()
{
	_PIDS+=("$1")
	_PID_WHAT[$1]=$2
}

_show_log_tail()
{
	local f=$1 lines=${2:-40}
	[ -s "$f" ] || return 0
	printf -- '---- last %d lines of %s ----\n' "$lines" "$f" >&2
	tail -n "$lines" "$f" >&2
}

# _wait_log PID LOG OFFSET PATTERN WHAT: waits until LOG, past byte
# OFFSET, holds PATTERN.  Fails early with the log if the process dies.
_wait_log()
{
	local pid=$1 logf=$2 offset=$3 pattern=$4 what=$5 deadline
	deadline=$((SECONDS + BFTBLK_WAIT))
	# Not grep -q: leaving early would kill tail with SIGPIPE, and
	# under pipefail a match in a large log would read as none.
	while ! tail -c "+$((offset + 1))" "$logf" 2>/dev/null |
	    grep -- "$pattern" >/dev/null; do
		if ! _alive "$pid"; then
			_reap "$pid"
			_forget_pid "$pid"
			_show_log_tail "$logf"
			fail "$what exited with status $_STATUS before" \
			    "it was ready"
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			_show_log_tail "$logf"
			fail "$what not ready after ${BFTBLK_WAIT}s" \
			    "(no \"$pattern\" in $logf)"
		fi
		sleep 0.1
	done
}

# Picks n consecutive TCP ports that nothing uses, below the kernel's
# ephemeral range so that no outgoing connection can take them later.
_pick_ports()
{
	local n=$1 lo hi base try p used free
	read -r lo _ </proc/sys/net/ipv4/ip_local_port_range
	hi=60000
	if [ "$lo" -gt 20000 ] && [ "$lo" -le 60000 ]; then
		hi=$lo
	fi
	used=$(ss -Htan | awk '{ n = split($4, a, ":"); print a[n] }')
	for try in $(seq 1 100); do
		base=$((20000 + (RANDOM * 32768 + RANDOM) % (hi - 20000 - n)))
		free=1
		for ((p = base; p < base + n; p++)); do
			if grep -qx "$p" <<<"$used"; then
				free=0
				break
			fi
		done
		if [ "$free" = 1 ]; then
			echo "$base"
			return 0
		fi
		: "$try"
	done
	fail "no free range of $n TCP ports found"
}

# cluster_start [T]: keygen into $TESTDIR/cluster and start n = 3T+1
# servers, waiting until each is listening.
cluster_start()
{
	local t=${1:-1} i
	require_build
	# shellcheck disable=SC2034 # for the tests
	CLUSTER_T=$t
	CLUSTER_N=$((3 * t + 1))
	CLUSTER_DIR=$TESTDIR/cluster
	CLUSTER_BASE_PORT=$(_pick_ports "$CLUSTER_N")
	log "keygen: t=$t n=$CLUSTER_N size=$CLUSTER_SIZE" \
	    "ports $CLUSTER_BASE_PORT..$((CLUSTER_BASE_PORT + CLUSTER_N - 1))"
	"$ADMIN" keygen --dir "$CLUSTER_DIR" --t "$t" --size "$CLUSTER_SIZE" \
	    --host 127.0.0.1 --base-port "$CLUSTER_BASE_PORT" \
	    ${CLUSTER_CHANNEL:+--channel "$CLUSTER_CHANNEL"} \
	    >"$TESTDIR/log/keygen.log" 2>&1 ||
	    { _show_log_tail "$TESTDIR/log/keygen.log"; fail "keygen failed"; }
	for ((i = 0; i < CLUSTER_N; i++)); do
		server_start "$i"
	done
}

# cluster_finalize: `bftblk cluster finalize`, as scripts/bftblk-demo
# does for a new cluster (docs/upgrades.md): from then on the servers use
# what release 0.2.0 cannot read, such as reused segment files.
cluster_finalize()
{
	"$ADMIN" cluster finalize --dir "$CLUSTER_DIR" \
	    >"$TESTDIR/log/finalize.log" 2>&1 ||
	    { _show_log_tail "$TESTDIR/log/finalize.log"; fail "cluster finalize"; }
}

# server_start I: starts server I (again) on its own data directory.
server_start()
{
	local i=$1 logf offset pid own
	local -a cmd=()
	[ -n "$CLUSTER_DIR" ] || fail "server_start $i: no cluster_start yet"
	if [ -n "${SERVER_PID[$i]:-}" ]; then
		fail "server_start $i: server $i is running (pid ${SERVER_PID[$i]})"
	fi
	# bftblk-server refuses a data dir that does not exist.
	mkdir -p "$TESTDIR/data/server-$i"
	logf=$TESTDIR/log/server-$i.log
	touch "$logf"
	offset=$(stat -c %s "$logf")
	if [ "$VALGRIND" = 1 ]; then
		_valgrind_suppressions
		cmd=(valgrind --vgdb=no --error-exitcode="$VALGRIND_STATUS"
		    --leak-check=full --num-callers=30
		    --suppressions="$TESTDIR/valgrind.supp"
		    --log-file="$TESTDIR/log/server-$i.valgrind.%p")
	fi
	own=SERVER_ARGS_$i
	# shellcheck disable=SC2206 # SERVER_ARGS are lists of words.
	cmd+=("${SERVER_BIN:-$SERVER}" --config "$CLUSTER_DIR/bftblk.conf"
	    --key "$CLUSTER_DIR/server-$i.key"
	    --data "$TESTDIR/data/server-$i" ${SERVER_ARGS:-} ${!own:-})
	echo "== $(date +%T) ${cmd[*]}" >>"$logf"
	"${cmd[@]}" >>"$logf" 2>&1 </dev/null &
	pid=$!
	_track "$pid" "server-$i"
	SERVER_PID[$i]=$pid
	_wait_log "$pid" "$logf" "$offset" "listening on" "server-$i"
	log "server-$i up (pid $pid)"
}

# server_kill I [SIG]: sends SIG (default TERM) to server I.  For TERM,
# INT and KILL it waits for the exit and sets SERVER_STATUS; a TERM or
# INT that does not end in status 0 fails the test.  Other signals (STOP,
# CONT, ...) are only sent.
server_kill()
{
	local i=$1 sig=${2:-TERM} pid
	pid=${SERVER_PID[$i]:-}
	[ -n "$pid" ] || fail "server_kill $i: server $i is not running"
	sig=${sig#SIG}
	case "$sig" in
	TERM|INT|KILL|9|15|2) ;;
	*)
		kill -s "$sig" "$pid" || fail "server_kill $i $sig: kill failed"
		return 0 ;;
	esac
	_stop_pid "$pid" "$sig"
	SERVER_STATUS=$_STATUS
	_forget_pid "$pid"
	unset 'SERVER_PID[$i]'
	log "server-$i stopped by SIG$sig (status $SERVER_STATUS)"
	case "$sig" in
	KILL|9) ;;
	*)
		if [ "$SERVER_STATUS" -ne 0 ]; then
			_show_log_tail "$TESTDIR/log/server-$i.log"
			_show_valgrind_logs "server-$i"
			fail "server-$i exited with status $SERVER_STATUS" \
			    "on SIG$sig"
		fi ;;
	esac
}

# servers_reload [PATTERN]: SIGHUP to every running server; waits until
# each has logged PATTERN since (default: that it reread the client
# lines of bftblk.conf).
servers_reload()
{
	local i logf offset pattern=${1:-"reload: .* clients allowed in"}
	for i in "${!SERVER_PID[@]}"; do
		logf=$TESTDIR/log/server-$i.log
		offset=$(stat -c %s "$logf")
		kill -s HUP "${SERVER_PID[$i]}" ||
		    fail "servers_reload: SIGHUP to server-$i failed"
		_wait_log "${SERVER_PID[$i]}" "$logf" "$offset" "$pattern" \
		    "server-$i (reload)"
	done
	log "servers reloaded: ${1:-their client lists}"
}

# keys_retire SECS: bftblk keys retire, again every second for at most
# SECS while it is refused (servers finish counting their versions under
# the old epoch every few seconds); its output in log/retire.log.
keys_retire()
{
	local deadline=$((SECONDS + $1))
	until "$ADMIN" keys retire --dir "$CLUSTER_DIR" --timeout 3 \
	    >"$TESTDIR/log/retire.log" 2>&1; do
		[ "$SECONDS" -lt "$deadline" ] ||
		    { cat "$TESTDIR/log/retire.log" >&2; fail "keys retire" \
		    "still refused after $1 s"; }
		sleep 1
	done
}

# keys_reauth NAME WHAT: a bftblk keys reauth pass that must succeed,
# its output in log/NAME.log (shown, with WHAT, when it fails).
keys_reauth()
{
	"$ADMIN" keys reauth --dir "$CLUSTER_DIR" --timeout 3 \
	    >"$TESTDIR/log/$1.log" 2>&1 ||
	    { cat "$TESTDIR/log/$1.log" >&2; fail "$2"; }
}

# status_has TEXT: bftblk status prints TEXT (a failure shows it all).
status_has()
{
	"$ADMIN" status --dir "$CLUSTER_DIR" >"$TESTDIR/log/status.log" 2>&1 ||
	    true
	grep -qF -- "$1" "$TESTDIR/log/status.log" ||
	    { cat "$TESTDIR/log/status.log" >&2; fail "status lacks: $1"; }
}

# client_add NAME [rw|ro]: a new client in the cluster (key file
# $CLUSTER_DIR/NAME.key), then servers_reload if servers are running.
client_add()
{
	local name=$1 role=${2:-rw}
	"$ADMIN" client add --dir "$CLUSTER_DIR" --name "$name" \
	    --role "$role" >>"$TESTDIR/log/admin.log" 2>&1 ||
	    { _show_log_tail "$TESTDIR/log/admin.log"; fail "client add $name"; }
	log "client $name ($role) added: $CLUSTER_DIR/$name.key"
	[ "${#SERVER_PID[@]}" -eq 0 ] || servers_reload
}

# client_revoke NAME: drops a client's line, then servers_reload.
client_revoke()
{
	"$ADMIN" client revoke --dir "$CLUSTER_DIR" --name "$1" \
	    >>"$TESTDIR/log/admin.log" 2>&1 ||
	    { _show_log_tail "$TESTDIR/log/admin.log"; fail "client revoke $1"; }
	log "client $1 revoked"
	[ "${#SERVER_PID[@]}" -eq 0 ] || servers_reload
}

# proxy_start "I..." DELAY_MS: slow links to servers I..., for clients
# only.  Starts a tests/tools/delay-proxy.py in front of each server I,
# adding DELAY_MS each way, and writes $PROXY_CONF: the cluster's
# bftblk.conf with each server I's address its proxy's (the servers
# keep the original).  nbdkit_start ... config="$PROXY_CONF" makes a
# plugin go through them.  $PROXY_PIDS lists the proxies; one set at a
# time; proxy_stop ends them, the EXIT trap if not.
PROXY_PIDS=()
PROXY_CONF=
proxy_start()
{
	local list=$1 delay=$2 i port logf offset
	[ -n "$CLUSTER_DIR" ] || fail "proxy_start: no cluster_start yet"
	[ "${#PROXY_PIDS[@]}" -eq 0 ] || fail "proxy_start: proxies are running"
	PROXY_CONF=$TESTDIR/via-proxy.conf
	cp "$CLUSTER_DIR/bftblk.conf" "$PROXY_CONF"
	for i in $list; do
		port=$(_pick_ports 1)
		logf=$TESTDIR/log/proxy-$i.log
		touch "$logf"
		offset=$(stat -c %s "$logf")
		python3 "$SRCDIR/tests/tools/delay-proxy.py" \
		    --listen "127.0.0.1:$port" \
		    --target "127.0.0.1:$((CLUSTER_BASE_PORT + i))" \
		    --delay-ms "$delay" >>"$logf" 2>&1 </dev/null &
		PROXY_PIDS+=("$!")
		_track "$!" "proxy-$i"
		_wait_log "$!" "$logf" "$offset" "listening on" "proxy-$i"
		sed -i "s/^server\\.$i = .*/server.$i = 127.0.0.1:$port/" \
		    "$PROXY_CONF"
		grep -q "^server\\.$i = 127.0.0.1:$port\$" "$PROXY_CONF" ||
		    fail "proxy_start: no server.$i line in bftblk.conf"
		log "proxy up (pid $!): server-$i via port $port," \
		    "+$delay ms each way"
	done
}

proxy_stop()
{
	local pid
	[ "${#PROXY_PIDS[@]}" -gt 0 ] || fail "proxy_stop: no proxy running"
	for pid in "${PROXY_PIDS[@]}"; do
		_stop_pid "$pid" TERM
		_forget_pid "$pid"
		[ "$_STATUS" -eq 0 ] ||
		    fail "proxy $pid exited with status $_STATUS"
	done
	PROXY_PIDS=()
	log "proxies stopped"
}

nbd_uri()
{
	echo "nbd+unix:///?socket=$TESTDIR/${1:-nbd}.sock"
}

# Valgrind suppressions for what is not ours: Debian's nbdkit leaks a
# little per connection, and a thread of its own may still run when it
# exits.  Each entry needs the nbdkit binary itself right below the
# allocation or pthread_create, so nothing the plugin allocates or
# starts (directly or through nbdkit_* helpers) is hidden.
_valgrind_suppressions()
{
	[ -e "$TESTDIR/valgrind.supp" ] && return 0
	cat >"$TESTDIR/valgrind.supp" <<'EOF'
{
   nbdkit-own-allocation
   Memcheck:Leak
   match-leak-kinds: definite
   fun:malloc
   obj:*/nbdkit
   obj:*/nbdkit
   obj:*/nbdkit
   obj:*/nbdkit
}
{
   nbdkit-own-thread-alive-at-exit
   Memcheck:Leak
   match-leak-kinds: possible
   fun:calloc
   ...
   fun:_dl_allocate_tls
   ...
   fun:pthread_create*
   obj:*/nbdkit
}
EOF
}

# wait_grep FILE PATTERN SECS WHAT: waits until FILE has a line with
# PATTERN (grep -a), and fails saying WHAT did not happen within SECS.
# WAITED is then how many seconds it took.
wait_grep()
{
	local f=$1 pattern=$2 secs=$3 what=$4 start=$SECONDS
	until grep -aq -- "$pattern" "$f"; do
		if [ $((SECONDS - start)) -gt "$secs" ]; then
			_show_log_tail "$f" 30
			fail "$what within $secs s"
		fi
		sleep 0.2
	done
	WAITED=$((SECONDS - start))
}

# wait_connected I...: waits until every listed server has an
# established connection on its port, i.e. nbdkit's client reconnected.
wait_connected()
{
	local i port deadline=$((SECONDS + BFTBLK_WAIT))
	for i in "$@"; do
		port=$((CLUSTER_BASE_PORT + i))
		until [ -n "$(ss -Htn state established "( sport = :$port )")" ]; do
			[ "$SECONDS" -lt "$deadline" ] ||
			    fail "no client reconnected to server-$i" \
			    "(port $port) within ${BFTBLK_WAIT}s"
			sleep 0.1
		done
	done
	log "client connected to servers $*"
}

# nbdkit_env PLUGIN: sets NBDKIT_ENV to the environment nbdkit needs
# for PLUGIN (for tests that run nbdkit themselves, too).  Preloading the
# plugin keeps it mapped after nbdkit's dlclose, so leak reports have
# symbols and what its globals still point to is not counted as lost.
# An ASan plugin in an uninstrumented nbdkit also needs the ASan runtime
# first; nbdkit itself leaks at exit, so only the servers and the
# valgrind run check leaks.
nbdkit_env()
{
	local plugin=$1 asan
	NBDKIT_ENV=()
	[ -f "$plugin" ] || return 0
	asan=$(ldd "$plugin" 2>/dev/null |
	    awk '$1 ~ /^libasan\.so/ { print $3 }')
	if [ -n "$asan" ]; then
		NBDKIT_ENV=(LD_PRELOAD="$asan $plugin"
		    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")
	else
		NBDKIT_ENV=(LD_PRELOAD="$plugin")
	fi
}

# nbdkit_start_with NAME PLUGIN [ARGS...]: serves PLUGIN on the unix
# socket $TESTDIR/NAME.sock and waits until a client can connect.
nbdkit_start_with()
{
	local name=$1 plugin=$2 logf sock pid deadline
	local -a cmd=() envv=()
	shift 2
	if [ -n "${NBDKIT_PID[$name]:-}" ]; then
		fail "nbdkit $name is already running (pid ${NBDKIT_PID[$name]})"
	fi
	sock=$TESTDIR/$name.sock
	logf=$TESTDIR/log/nbdkit-$name.log
	rm -f "$sock"
	nbdkit_env "$plugin"
	envv=("${NBDKIT_ENV[@]}")
	if [ "$VALGRIND" = 1 ]; then
		_valgrind_suppressions
		cmd=(valgrind --vgdb=no --error-exitcode="$VALGRIND_STATUS"
		    --leak-check=full --num-callers=30 --trace-children=no
		    --suppressions="$TESTDIR/valgrind.supp"
		    --log-file="$TESTDIR/log/nbdkit-$name.valgrind.%p")
	fi
	# shellcheck disable=SC2206 # NBDKIT_ARGS is a list of words.
	cmd=(env "${envv[@]}" "${cmd[@]}" nbdkit -f --exit-with-parent
	    -U "$sock" ${NBDKIT_ARGS:-} "$plugin" "$@")
	echo "== $(date +%T) ${cmd[*]}" >>"$logf"
	"${cmd[@]}" >>"$logf" 2>&1 </dev/null &
	pid=$!
	_track "$pid" "nbdkit-$name"
	NBDKIT_PID[$name]=$pid
	deadline=$((SECONDS + BFTBLK_WAIT))
	until [ -S "$sock" ] && nbdinfo --size "$(nbd_uri "$name")" \
	    >/dev/null 2>&1; do
		if ! _alive "$pid"; then
			_reap "$pid"
			_forget_pid "$pid"
			unset 'NBDKIT_PID[$name]'
			_show_log_tail "$logf"
			fail "nbdkit $name exited with status $_STATUS" \
			    "before serving"
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			_show_log_tail "$logf"
			fail "nbdkit $name not serving after ${BFTBLK_WAIT}s"
		fi
		sleep 0.2
	done
	log "nbdkit $name up (pid $pid): $(nbd_uri "$name")"
}

# nbdkit_start [NAME] [PARAM=VALUE...]: the bftblk plugin for the
# cluster of cluster_start, with extra plugin parameters.  Most tests
# run several writers on one volume (two nbdkits, lincheck histories,
# restarts after SIGKILL), so shared=$NBDKIT_SHARED (default on) is
# added unless a parameter gives shared=; NBDKIT_SHARED= (empty) leaves
# the plugin's default, one writer per volume, which lease.sh and
# volumes.sh test.
#
# Most tests are about volume 0 and count one handle's connections per
# nbdkit, so $NBDKIT_PIN (default volume-id=0) is added unless a
# parameter names a volume; NBDKIT_PIN= (empty) serves volumes by export
# name, the plugin's own mode (volumes.sh, byz-volumes.sh,
# idle-compact.sh).
NBDKIT_SHARED=${NBDKIT_SHARED-on}
NBDKIT_PIN=${NBDKIT_PIN-volume-id=0}
nbdkit_start()
{
	local name=nbd p shared=$NBDKIT_SHARED pin=$NBDKIT_PIN
	local -a extra=()
	# make check's choice of sender threads; a test's own senders= wins.
	# Only for this tree's plugin: an older release's (the upgrade
	# tests) has no such option and refuses to start with it.
	[ -z "${BFTBLK_TEST_SENDERS:-}" ] ||
	    [ "$PLUGIN" != "$BUILD/nbdkit-bftblk-plugin.so" ] ||
	    extra+=("senders=$BFTBLK_TEST_SENDERS")
	if [ $# -gt 0 ] && [[ "$1" != *=* ]]; then
		name=$1
		shift
	fi
	[ -n "$CLUSTER_DIR" ] || fail "nbdkit_start: no cluster_start yet"
	for p in "$@"; do
		[[ "$p" != shared=* ]] || shared=
		[[ "$p" != volume=* && "$p" != volume-id=* ]] || pin=
	done
	[ -z "$shared" ] || extra+=("shared=$shared")
	[ -z "$pin" ] || extra+=("$pin")
	nbdkit_start_with "$name" "$PLUGIN" \
	    config="$CLUSTER_DIR/bftblk.conf" keys="$CLUSTER_DIR/client.key" \
	    "${extra[@]}" "$@"
}

# nbdkit_stop [NAME]: SIGTERM, and the exit status must be 0.
nbdkit_stop()
{
	local name=${1:-nbd} pid
	pid=${NBDKIT_PID[$name]:-}
	[ -n "$pid" ] || fail "nbdkit_stop: nbdkit $name is not running"
	_stop_pid "$pid" TERM
	_forget_pid "$pid"
	unset 'NBDKIT_PID[$name]'
	log "nbdkit $name stopped (status $_STATUS)"
	if [ "$_STATUS" -ne 0 ]; then
		_show_log_tail "$TESTDIR/log/nbdkit-$name.log"
		_show_valgrind_logs "nbdkit-$name"
		fail "nbdkit $name exited with status $_STATUS on SIGTERM"
	fi
}

# nbdsh_run NAME CODE: runs Python CODE in nbdsh connected to nbdkit
# NAME, with the handle as `h`.  Returns nbdsh's status.
nbdsh_run()
{
	local name=$1 code=$2
	PATH=/usr/bin:$PATH nbdsh -u "$(nbd_uri "$name")" -c "$code"
}

# checked_writer NAME SECONDS: writes and reads back 4 KiB in a loop on
# nbdkit NAME's export until $TESTDIR/stop-NAME exists (at most
# SECONDS), into log/writer-NAME.log; exits 1 on any error.  For tests
# that change keys under a writer that must not notice.
checked_writer()
{
	nbdsh_run "$1" "
import os, time
stop = '$TESTDIR/stop-$1'
n, end = 0, time.time() + $2
while not os.path.exists(stop) and time.time() < end:
    data = (b'%08d' % n) * 512
    h.pwrite(data, (n % 64) * 65536)
    assert h.pread(4096, (n % 64) * 65536) == data, 'read back differs'
    n += 1
    time.sleep(0.05)
print('$1: %d writes, no error' % n)
" >"$TESTDIR/log/writer-$1.log" 2>&1
}

_show_valgrind_logs()
{
	local f
	for f in "$TESTDIR/log/$1".valgrind.*; do
		[ -e "$f" ] || continue
		if grep -qE 'ERROR SUMMARY: [1-9]' "$f"; then
			_show_log_tail "$f" 200
		fi
	done
}

# The EXIT trap: stops every child still recorded (nbdkit before the
# servers it talks to), fails the test if one did not exit cleanly,
# shows the logs on failure and removes what it made.
_cleanup()
{
	local rc=$? pid what i f bad=0
	set +e
	trap - EXIT INT TERM HUP
	for ((i = ${#_PIDS[@]} - 1; i >= 0; i--)); do
		pid=${_PIDS[$i]}
		what=${_PID_WHAT[$pid]:-pid $pid}
		case "$what" in nbdkit-*) ;; *) continue ;; esac
		_stop_pid "$pid" TERM
		if [ "$_STATUS" -ne 0 ]; then
			log "$what exited with status $_STATUS on SIGTERM"
			_show_valgrind_logs "$what"
			bad=1
		fi
	done
	for ((i = ${#_PIDS[@]} - 1; i >= 0; i--)); do
		pid=${_PIDS[$i]}
		what=${_PID_WHAT[$pid]:-pid $pid}
		case "$what" in nbdkit-*) continue ;; esac
		_stop_pid "$pid" TERM
		if [ "$_STATUS" -ne 0 ]; then
			log "$what exited with status $_STATUS on SIGTERM"
			_show_valgrind_logs "$what"
			bad=1
		fi
	done
	if [ "$rc" -eq 0 ] && [ "$bad" = 1 ]; then
		rc=1
	fi
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		for f in "$TESTDIR"/log/*.log; do
			_show_log_tail "$f" 30
		done
	fi
	if [ "$_OWN_TESTDIR" = 1 ]; then
		rm -rf "$TESTDIR"
	fi
	exit "$rc"
}
trap _cleanup EXIT
# Without these a signal would end the shell without the EXIT trap.
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP
