#!/bin/bash
# Shared by the fault scenarios in tests/faults/: everything in
# tests/integration/lib.sh (clusters, nbdkit, cleanup by PID), plus the
# history recorder and linearizability check below.
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"

# History recording and linearizability checking.
#
# The recorder (tests/tools/record_history.py, Debian's python3-libnbd)
# runs client threads against NBD URIs and writes a JSON-lines history
# of whole-block reads and writes on a few hot blocks; lincheck
# (tests/linearizability, Porcupine) checks that every block behaved as
# an atomic register starting as zeros.  Typical use:
#
#	lin_record_start "$TESTDIR/h.jsonl" 15 "$(nbd_uri a)" "$(nbd_uri b)"
#	... inject faults ...
#	lin_record_wait
#	lin_final_read "$TESTDIR/h.jsonl" "$(nbd_uri a)"
#	lin_check "$TESTDIR/h.jsonl"
#
# Environment:
#   LIN_ARGS     extra recorder options, e.g. "--first-block 8
#                --op-timeout 20 --clients-per-uri 2" (see --help); the
#                final read uses them too, so its blocks match
#   LIN_TIMEOUT  lincheck's time limit (default 120s); running out of it
#                fails the test, since an unchecked history proves nothing
#   LIN_PYTHON   the Python with the nbd module (default /usr/bin/python3)
#   GO           the go command (default: go in PATH, else /usr/local/go)

LIN_PYTHON=${LIN_PYTHON:-/usr/bin/python3}
LIN_RECORDER=$SRCDIR/tests/tools/record_history.py
LIN_SRC=$SRCDIR/tests/linearizability
LINCHECK=$BUILD/lincheck
LIN_TIMEOUT=${LIN_TIMEOUT:-120s}
LIN_PID=
LIN_LOG=
LIN_DEADLINE=
# Set by lin_record_wait from the recorder's summary line.
# shellcheck disable=SC2034 # for the scenarios
declare -A LIN_STAT=()
# Final reads get client ids of their own, apart from the workload's.
_LIN_FINAL_CLIENT=1000

_lin_require_recorder()
{
	require_python_nbd "$LIN_PYTHON"
}

# lin_record_start OUT DURATION URI...: starts the recorder in the
# background for DURATION seconds; clients are spread over the URIs
# (--clients-per-uri in LIN_ARGS, default 2 each).
lin_record_start()
{
	local out=$1 dur=$2
	shift 2
	_lin_require_recorder
	[ -z "$LIN_PID" ] || fail "lin_record_start: recorder $LIN_PID is running"
	[ $# -gt 0 ] || fail "lin_record_start: no URI"
	LIN_LOG=$TESTDIR/log/recorder-${out##*/}.log
	# shellcheck disable=SC2206 # LIN_ARGS is a list of words.
	local -a cmd=("$LIN_PYTHON" "$LIN_RECORDER" --out "$out"
	    --duration "$dur" ${LIN_ARGS:-} "$@")
	echo "== $(date +%T) ${cmd[*]}" >>"$LIN_LOG"
	"${cmd[@]}" >>"$LIN_LOG" 2>&1 </dev/null &
	LIN_PID=$!
	_track "$LIN_PID" recorder
	# Past the duration, ops in flight may still need their timeouts.
	LIN_DEADLINE=$((SECONDS + ${dur%.*} + ${LIN_WAIT_SLACK:-90}))
	log "recorder started (pid $LIN_PID): ${dur}s on $# URI(s)," \
	    "options: ${LIN_ARGS:-none}; history $out"
}

# lin_record_wait: waits for the recorder, fails if it failed, shows its
# summary and sets LIN_STAT[ops], [writes], [reads], [write_errors],
# [read_errors], [timeouts], [garbage], [misplaced], [reconnects].
lin_record_wait()
{
	local pid=$LIN_PID summary kv
	[ -n "$pid" ] || fail "lin_record_wait: no recorder running"
	while _alive "$pid" && [ "$SECONDS" -lt "$LIN_DEADLINE" ]; do
		sleep 0.2
	done
	if _alive "$pid"; then
		_stop_pid "$pid" TERM
		_forget_pid "$pid"
		LIN_PID=
		_show_log_tail "$LIN_LOG"
		fail "the recorder did not finish in time"
	fi
	_reap "$pid"
	_forget_pid "$pid"
	LIN_PID=
	grep -F 'BAD READ' "$LIN_LOG" >&2 || true
	if [ "$_STATUS" -ne 0 ]; then
		_show_log_tail "$LIN_LOG"
		fail "the recorder exited with status $_STATUS"
	fi
	summary=$(grep '^record_history: ops=' "$LIN_LOG" | tail -n 1)
	[ -n "$summary" ] || fail "the recorder printed no summary ($LIN_LOG)"
	LIN_STAT=()
	for kv in ${summary#record_history: }; do
		# shellcheck disable=SC2034 # for the scenarios
		LIN_STAT[${kv%%=*}]=${kv#*=}
	done
	log "recorded: ${summary#record_history: }"
}

# lin_record OUT DURATION URI...: records in the foreground.
lin_record()
{
	lin_record_start "$@"
	lin_record_wait
}

# lin_final_read OUT URI...: once everything is back, reads every hot
# block through each URI and appends the reads to the history, so the
# check also covers the final state.  Every read must succeed.
lin_final_read()
{
	local out=$1 logf
	shift
	_lin_require_recorder
	logf=$TESTDIR/log/recorder-${out##*/}.log
	# shellcheck disable=SC2086 # LIN_ARGS is a list of words.
	if ! "$LIN_PYTHON" "$LIN_RECORDER" --out "$out" ${LIN_ARGS:-} \
	    --append --final-read --client-base "$_LIN_FINAL_CLIENT" \
	    "$@" >>"$logf" 2>&1 </dev/null; then
		grep -F 'BAD READ' "$logf" >&2 || true
		_show_log_tail "$logf"
		fail "final reads through $* failed"
	fi
	_LIN_FINAL_CLIENT=$((_LIN_FINAL_CLIENT + $#))
	grep -F 'BAD READ' "$logf" >&2 || true
	grep -F 'final read of block' "$logf" | tail -n 64 |
	    sed 's/^record_history: /  /' >&2
}

# lin_build: builds lincheck into $BUILD/lincheck when it is missing or
# older than its sources; skips the test when there is no Go.
lin_build()
{
	local go=${GO:-} tmp
	if [ -z "$go" ]; then
		go=$(command -v go || true)
		[ -n "$go" ] || [ ! -x /usr/local/go/bin/go ] ||
		    go=/usr/local/go/bin/go
	fi
	[ -n "$go" ] || skip "no go command: cannot build lincheck"
	if [ -x "$LINCHECK" ] && [ -z "$(find "$LIN_SRC" -maxdepth 1 \
	    \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) \
	    -newer "$LINCHECK")" ]; then
		return 0
	fi
	mkdir -p "$BUILD"
	tmp=$LINCHECK.tmp.$$
	log "building $LINCHECK"
	if ! (cd "$LIN_SRC" && GOFLAGS="-mod=mod -buildvcs=false" \
	    "$go" build -o "$tmp" .) >"$TESTDIR/log/go-build.log" 2>&1; then
		rm -f "$tmp"
		_show_log_tail "$TESTDIR/log/go-build.log"
		fail "cannot build lincheck from $LIN_SRC"
	fi
	mv -f "$tmp" "$LINCHECK"
}

# _lin_keep FILE VIZ: copies a failing history, its visualization, any
# bad read's bytes and the test's logs where they outlive the test.
_lin_keep()
{
	local file=$1 viz=$2 dir
	dir=${BFTBLK_TEST_LOGDIR:-$BUILD/test-logs}/lincheck-$(basename "$0" .sh)-$(date +%Y%m%d-%H%M%S)-$$
	mkdir -p "$dir"
	cp -p "$file" "$file".bad-read-*.bin "$dir"/ 2>/dev/null || true
	[ -e "$viz" ] && cp -p "$viz" "$dir"/
	cp -rp "$TESTDIR/log" "$dir"/ 2>/dev/null || true
	echo "$dir"
}

# lin_check FILE: the history must be linearizable.  Otherwise the test
# fails, naming the block and why, with the history, the visualization
# and the logs kept under $BUILD/test-logs.
lin_check()
{
	local file=$1 viz out rc=0 dir
	lin_build
	[ -s "$file" ] || fail "lin_check: no history in $file"
	viz=$TESTDIR/${file##*/}.html
	out=$TESTDIR/log/lincheck-${file##*/}.log
	"$LINCHECK" -v -timeout "$LIN_TIMEOUT" -viz "$viz" "$file" \
	    >"$out" 2>&1 || rc=$?
	sed 's/^/  /' "$out" >&2
	case "$rc" in
	0)
		log "lincheck: $file is linearizable" ;;
	1)
		dir=$(_lin_keep "$file" "$viz")
		fail "history $file is NOT linearizable:" \
		    "$(grep -m1 'NOT LINEARIZABLE' "$out");" \
		    "history, visualization and logs kept in $dir" ;;
	3)
		dir=$(_lin_keep "$file" "$viz")
		fail "lincheck could not decide within $LIN_TIMEOUT (history" \
		    "kept in $dir): record fewer ops or raise LIN_TIMEOUT" ;;
	*)
		fail "lincheck rejected $file as input (status $rc)" ;;
	esac
}

# lin_expect_illegal FILE: the negative control, lincheck must reject
# FILE as not linearizable (status 1).
lin_expect_illegal()
{
	local file=$1 rc=0 out
	lin_build
	out=$("$LINCHECK" -timeout "$LIN_TIMEOUT" "$file" 2>&1) || rc=$?
	printf '%s\n' "$out" | sed 's/^/  /' >&2
	if [ "$rc" -ne 1 ] || ! grep -q 'NOT LINEARIZABLE' <<<"$out"; then
		fail "lincheck did not reject $file (status $rc)"
	fi
	log "lincheck rejects $file, as it must"
}

# lin_stale_mutant HIST OUT: writes to OUT the history HIST with one
# read made stale: it returns the value of a write W1 although another
# write W2 to its block began after W1 ended and ended before the read
# began.  Values are unique, so no order can explain that read, and
# lincheck must reject OUT (lin_expect_illegal): the negative control on
# a real recorded history.  Fails when HIST has no such read.
lin_stale_mutant()
{
	"$LIN_PYTHON" - "$1" "$2" <<'EOF' || fail "no read to make stale in $1"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
writes = [r for r in recs if r["op"] == "w" and r["ok"]]
reads = [r for r in recs if r["op"] == "r" and r["ok"]]
for r in reads[len(reads) // 2:] + reads[:len(reads) // 2]:
    ws = [w for w in writes if w["block"] == r["block"]]
    for w2 in ws:
        if w2["ret"] >= r["call"]:
            continue
        w1 = next((w for w in ws if w["ret"] < w2["call"] and
                   w["value"] != r["value"]), None)
        if w1 is not None:
            print("made stale: read of block %d by client %d at %d now "
                  "returns %s" % (r["block"], r["client"], r["call"],
                                  w1["value"]), file=sys.stderr)
            r["value"] = w1["value"]
            with open(sys.argv[2], "w") as f:
                for x in recs:
                    f.write(json.dumps(x) + "\n")
            sys.exit(0)
sys.exit(1)
EOF
}

# lin_optional: builds lincheck if Go is here and defines lin CMD...,
# which runs CMD only then, so a scenario's other checks still run
# without Go.
lin_optional()
{
	local rc=0
	LIN=1
	(lin_build) || rc=$?
	case $rc in
	0) ;;
	77) LIN=0; log "no lincheck: histories are not recorded" ;;
	*) fail "cannot build lincheck" ;;
	esac
	lin() { [ "$LIN" = 0 ] || "$@"; }
}
