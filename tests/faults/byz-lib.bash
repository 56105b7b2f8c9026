# shellcheck shell=bash
# Sourced by tests/faults/byz-*.sh: Byzantine servers (the test build
# build/tests/bftblk-server-test with --byzantine, see
# server/testing/byzantine.h) under a concurrent workload.  Honest servers
# run the production bftblk-server, so it is that binary the liars are
# mixed with.
#
# (Named .bash, not .sh, so that `make check-faults` does not run it as a
# scenario of its own.)
#
# A phase (byz_workload) runs, at the same time and for a few seconds:
#   - fio randrw through nbdkit "a" on the first BYZ_FIO_SIZE bytes, 4k-64k
#     requests (so read-modify-writes too), every write verified by crc32c
#     as it goes (verify_backlog, verify_fatal);
#   - when tests/faults/lib.sh has the lincheck functions and Go is there,
#     the history recorder with two clients on each of nbdkit "a" and "b"
#     (two writers) on 4 fresh hot blocks, then a final read of them
#     through both, and lincheck on the whole history: every read must
#     return the last completed write or a concurrent one;
#   - nbdsh writes of this phase's known data (aligned, inside a block,
#     across a boundary, multi-block, one byte) through "a", then a
#     byte-for-byte check of the known data of every phase so far through
#     "a" and "b".
# No I/O may fail: with at most t faulty servers there is no excuse.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_fio_nbd

[ -x "$TEST_SERVER" ] || fail "$TEST_SERVER is missing: run make first"
export BFTBLK_TEST_BYZANTINE=1
CLUSTER_SIZE=${CLUSTER_SIZE:-64M}
BYZ_SEED=${BYZ_SEED:-$RANDOM$RANDOM}
BYZ_FIO_SIZE=${BYZ_FIO_SIZE:-24M}
BYZ_KNOWN_BLOCK=600		# known data: blocks 600-663
BYZ_LIN_BLOCK=700		# hot blocks: 4 fresh ones per phase from here
BYZ_NPHASE=0
declare -a BYZ_TAGS=()		# phases whose known data was written
declare -A BYZ_MODES=()		# server index -> its --byzantine modes
BYZ_LIN=0

log "seed $BYZ_SEED (BYZ_SEED=$BYZ_SEED reproduces the forged bytes and" \
    "the known data)"
if declare -F lin_record_start lin_record_wait lin_final_read lin_check \
    >/dev/null && { command -v go >/dev/null || [ -x /usr/local/go/bin/go ]; }
then
	BYZ_LIN=1
	lin_build
else
	log "NOTE: no lincheck (functions or Go missing): histories are" \
	    "not recorded; fio and the known-data checks still run"
fi

# The known data, as nbdsh code: write(tag) writes a phase's data,
# check(tags, what) compares the whole region with the model of the
# tags' writes, in order, and says whose data a wrong byte holds.
BYZ_PY="
import random
BS = 65536
KBASE = $BYZ_KNOWN_BLOCK * BS
KNB = 64

def phase_writes(tag):
    r = random.Random('$BYZ_SEED-' + tag)
    n = r.randrange(2, 8192)
    return [(tag + '-aligned', KBASE + r.randrange(KNB) * BS, BS),
            (tag + '-inside', KBASE + r.randrange(KNB) * BS +
             r.randrange(1, BS // 2), r.randrange(1, BS // 2)),
            (tag + '-across', KBASE + r.randrange(1, KNB) * BS - n // 2, n),
            (tag + '-multi', KBASE + r.randrange(KNB - 3) * BS +
             r.randrange(BS), 2 * BS + r.randrange(BS)),
            (tag + '-byte', KBASE + r.randrange(KNB * BS), 1)]

def pattern(wtag, n):
    return random.Random('$BYZ_SEED-data-' + wtag).randbytes(n)

def write(tag):
    for wtag, off, n in phase_writes(tag):
        h.pwrite(pattern(wtag, n), off)
    print('wrote the known data of %s' % tag)

def whose(tags, pos, byte):
    for tag in reversed(tags):
        for wtag, off, n in reversed(phase_writes(tag)):
            if off <= KBASE + pos < off + n and \
                    pattern(wtag, n)[KBASE + pos - off] == byte:
                return wtag
    return 'zeros' if byte == 0 else 'no write'

def check(tags, what):
    want = bytearray(KNB * BS)
    for tag in tags:
        for wtag, off, n in phase_writes(tag):
            want[off - KBASE:off - KBASE + n] = pattern(wtag, n)
    got = h.pread(KNB * BS, KBASE)
    if got != want:
        bad = [i for i in range(len(want)) if got[i] != want[i]]
        i = bad[0]
        raise AssertionError('%s: %d bytes differ, first at disk offset '
            '%d (block %d): read 0x%02x (as written by %s), expected '
            '0x%02x (written by %s)' % (what, len(bad), KBASE + i,
            (KBASE + i) // BS, got[i], whose(tags, i, got[i]), want[i],
            whose(tags, i, want[i])))
    for tag in tags:
        for wtag, off, n in phase_writes(tag):
            if h.pread(n, off) != bytes(want[off - KBASE:off - KBASE + n]):
                raise AssertionError('%s: the read of %s alone differs'
                                     % (what, wtag))
    print('%s: known data of %d phases matches byte for byte'
          % (what, len(tags)))
"

# byz_start I MODES: starts server I as the test server with
# --byzantine=MODES (comma list), or as the production server when MODES
# is "honest".
byz_start()
{
	local i=$1 modes=$2
	BYZ_MODES[$i]=$modes
	if [ "$modes" = honest ]; then
		server_start "$i"
		return 0
	fi
	SERVER_BIN=$TEST_SERVER \
	    SERVER_ARGS="${SERVER_ARGS:-} --byzantine=$modes --byzantine-seed=$BYZ_SEED" \
	    server_start "$i"
	grep -q 'BYZANTINE TEST MODE' "$TESTDIR/log/server-$i.log" ||
	    fail "server-$i does not say it runs in Byzantine mode"
	log "injected: server-$i is Byzantine: $modes"
}

# byz_stop I: stops server I; when it was Byzantine, its exit line must
# show that each of its modes changed or withheld replies (else the
# phase tested nothing).
byz_stop()
{
	local i=$1 modes=${BYZ_MODES[$1]:-honest} line m n
	local -a ms
	server_kill "$i" TERM
	unset 'BYZ_MODES[$i]'
	[ "$modes" != honest ] || return 0
	line=$(grep -a 'byzantine .*: replies changed:' \
	    "$TESTDIR/log/server-$i.log" | tail -n 1)
	[ -n "$line" ] || fail "server-$i: no Byzantine summary at exit"
	log "server-$i ($modes) did: ${line#*replies changed: }"
	IFS=, read -ra ms <<<"$modes"
	for m in "${ms[@]}"; do
		case "$m" in
		mute) n=$(grep -oE 'dropped [0-9]+' <<<"$line") ;;
		slow) n=$(grep -oE 'delayed [0-9]+' <<<"$line") ;;
		*) n=$(grep -oE " $m [0-9]+" <<<"$line") ;;
		esac
		n=${n##* }
		[ "${n:-0}" -gt 0 ] ||
		    fail "server-$i: mode $m changed no reply, so nothing" \
		    "was injected: $line"
	done
}

# byz_switch I MODES: restarts server I in MODES and waits until every
# running nbdkit is connected to it again.
byz_switch()
{
	local i=$1
	[ -z "${SERVER_PID[$i]:-}" ] || byz_stop "$i"
	byz_start "$i" "$2"
	byz_wait_conns "$i"
}

# byz_wait_conns I: waits until server I has one established connection
# per running nbdkit.
byz_wait_conns()
{
	local i=$1 port want have deadline=$((SECONDS + BFTBLK_WAIT))
	port=$((CLUSTER_BASE_PORT + i))
	want=${#NBDKIT_PID[@]}
	while :; do
		have=$(ss -Htn state established "( sport = :$port )" | wc -l)
		[ "$have" -lt "$want" ] || break
		[ "$SECONDS" -lt "$deadline" ] ||
		    fail "server-$i: $have of $want nbdkit connections after" \
		    "${BFTBLK_WAIT}s"
		sleep 0.1
	done
}

# byz_fio_check LOG NAME: fio's report must show err=0 and no verify
# complaint.
byz_fio_check()
{
	local out=$1 name=$2
	if grep -qE 'err= *[1-9]|verify failed|bad magic|crc32c: verify' \
	    "$out" || ! grep -qE 'err= *0' "$out"; then
		_show_log_tail "$out" 60
		fail "fio $name reported errors (see $out)"
	fi
}

# byz_known NAME WHAT...: nbdsh through nbdkit NAME running the known-data
# code followed by WHAT.
byz_known()
{
	local name=$1
	shift
	nbdsh_run "$name" "$BYZ_PY
$*" || fail "known data through nbdkit $name: see above"
}

# byz_tags_py: the phases so far as a Python list.
byz_tags_py()
{
	local t out=
	for t in "${BYZ_TAGS[@]}"; do
		out+="'$t', "
	done
	echo "[$out]"
}

# byz_load_start NAME SECS: starts a phase as described at the top,
# against nbdkit instances "a" and "b", and writes and checks its known
# data while fio and the recorder run; byz_load_finish ends it.
byz_load_start()
{
	local name=$1 secs=$2 first=$((BYZ_LIN_BLOCK + 4 * BYZ_NPHASE))
	[ -z "${BYZ_LOAD:-}" ] || fail "byz_load_start: $BYZ_LOAD is running"
	BYZ_LOAD=$name
	BYZ_LOAD_SECS=$secs
	log "phase $name: fio randrw with crc32c verify for ${secs}s," \
	    "$([ "$BYZ_LIN" = 1 ] && echo "history on blocks $first-$((first + 3)),")" \
	    "known data"
	fio --name="$name" --ioengine=nbd --uri="$(nbd_uri a)" --iodepth=16 \
	    --offset=0 --size="$BYZ_FIO_SIZE" --rw=randrw --rwmixread=50 \
	    --bsrange=4k-64k --verify=crc32c --verify_backlog=32 \
	    --verify_fatal=1 --time_based=1 --runtime="$secs" \
	    --randrepeat=0 >"$TESTDIR/log/fio-$name.log" 2>&1 </dev/null &
	BYZ_FIO_PID=$!
	_track "$BYZ_FIO_PID" fio
	if [ "$BYZ_LIN" = 1 ]; then
		# shellcheck disable=SC2034 # read by lib.sh's lin_* functions
		LIN_ARGS="--blocks 4 --first-block $first --clients-per-uri 2"
		lin_record_start "$TESTDIR/hist-$name.jsonl" "$secs" \
		    "$(nbd_uri a)" "$(nbd_uri b)"
	fi
	BYZ_TAGS+=("$name")
	byz_known a "write('$name')
check($(byz_tags_py), '$name, during the load, through a')"
	byz_known b "check($(byz_tags_py), '$name, during the load, through b')"
}

byz_load_finish()
{
	local name=$BYZ_LOAD fio_log=$TESTDIR/log/fio-$BYZ_LOAD.log k deadline
	local hist=$TESTDIR/hist-$BYZ_LOAD.jsonl
	deadline=$((SECONDS + BYZ_LOAD_SECS + 90))
	while _alive "$BYZ_FIO_PID" && [ "$SECONDS" -lt "$deadline" ]; do
		sleep 0.2
	done
	_alive "$BYZ_FIO_PID" && fail "fio $name still running long after its end"
	_reap "$BYZ_FIO_PID"
	_forget_pid "$BYZ_FIO_PID"
	if [ "$_STATUS" -ne 0 ]; then
		_show_log_tail "$fio_log" 60
		fail "fio $name exited with status $_STATUS"
	fi
	byz_fio_check "$fio_log" "$name"
	log "fio $name: exit 0, err=0, no verify errors;" \
	    "$(grep -oE 'issued rwts: total=[0-9]+,[0-9]+' "$fio_log")"
	if [ "$BYZ_LIN" = 1 ]; then
		lin_record_wait
		for k in write_errors read_errors timeouts garbage misplaced; do
			[ "${LIN_STAT[$k]:-0}" = 0 ] ||
			    fail "phase $name: recorder saw $k=${LIN_STAT[$k]}"
		done
		if [ "${LIN_STAT[writes]:-0}" -eq 0 ] ||
		    [ "${LIN_STAT[reads]:-0}" -eq 0 ]; then
			fail "phase $name: the recorder did no reads or no writes"
		fi
		lin_final_read "$hist" "$(nbd_uri a)" "$(nbd_uri b)"
		lin_check "$hist"
	fi
	byz_known a "check($(byz_tags_py), '$name, after the load, through a')"
	byz_known b "check($(byz_tags_py), '$name, after the load, through b')"
	BYZ_NPHASE=$((BYZ_NPHASE + 1))
	BYZ_LOAD=
}

# byz_workload NAME SECS: one whole phase.
byz_workload()
{
	byz_load_start "$@"
	byz_load_finish
}

# byz_amnesia I: server I loses everything: SIGKILL, its data directory
# wiped, restarted empty (it makes a new one with the same identity).
byz_amnesia()
{
	local i=$1
	server_kill "$i" KILL
	rm -rf "$TESTDIR/data/server-$i"
	server_start "$i"
	log "injected: amnesia: server-$i was killed and restarted with an" \
	    "empty data directory"
	byz_wait_conns "$i"
}

# byz_nbdkit_start NAME [PARAM=VALUE...]: nbdkit with -v, for the plugin's
# counters at exit, but without a debug line per request.
byz_nbdkit_start()
{
	NBDKIT_ARGS="${NBDKIT_ARGS:-} -v -D nbdkit.backend.datapath=0" \
	    nbdkit_start "$@"
}

# byz_nbdkit_stats NAME: stops nbdkit NAME (byz_nbdkit_start) and sets
# BYZ_STAT[reads], [fastreads], [readfallbacks], [restarts], [repairs],
# [writes], [fastwrites], [writefallbacks], [flushes], [forged],
# [timeouts], [reconnects] from the plugin's exit line.
# shellcheck disable=SC2034 # for the scenarios
declare -A BYZ_STAT=()
byz_nbdkit_stats()
{
	local name=$1 line k re
	nbdkit_stop "$name"
	line=$(grep -a 'bftblk: [0-9]* reads' "$TESTDIR/log/nbdkit-$name.log" |
	    tail -n 1)
	[ -n "$line" ] || fail "nbdkit $name printed no stats (is it run with -v?)"
	line=${line#*bftblk: }
	log "nbdkit $name: $line"
	# N reads (F in one round, B fell back, R restarts, P repairs), W
	# writes (X without CLOCK, Y fell back), F flushes, G forged
	# timestamps, T timeouts, C reconnects.  Each number is found by the
	# words after it, so a counter added to the line cannot shift the
	# others (as "without CLOCK" once shifted forged and timeouts).
	declare -A re=(
	    [reads]='([0-9]+) reads' [fastreads]='([0-9]+) in one round'
	    [readfallbacks]='\(([0-9]+) in one round, ([0-9]+) fell back'
	    [restarts]='([0-9]+) restarts' [repairs]='([0-9]+) repairs'
	    [writes]='([0-9]+) writes' [fastwrites]='([0-9]+) without CLOCK'
	    [writefallbacks]='without CLOCK, ([0-9]+) fell back'
	    [flushes]='([0-9]+) flushes' [forged]='([0-9]+) forged'
	    [timeouts]='([0-9]+) timeouts' [reconnects]='([0-9]+) reconnects')
	for k in "${!re[@]}"; do
		[[ "$line" =~ ${re[$k]} ]] ||
		    fail "nbdkit $name: no '$k' in its stats line: $line"
		BYZ_STAT[$k]=${BASH_REMATCH[-1]}
	done
}
