#!/bin/bash
# The production bftblk-server holds none of the test server's code
# (server/testing/: the Byzantine modes and frame recording) and knows
# none of its options; build/tests/bftblk-server-test has both.
#
# 1. nm of bftblk-server shows no byz, bft_record_ or bft_test_ symbol, nor
#    the store's test-only bft_store_discard and bft_store_reset, and
#    strings -a (which reads the debug info too) no "byzantine" or
#    "record-frames"; the same checks find them in the test server, so
#    they would see code linked back in.
# 2. With BFTBLK_TEST_BYZANTINE=1 set, so that the test server's gate
#    cannot be what refuses them, bftblk-server exits non-zero on
#    --byzantine, --byzantine-seed and --record-frames with getopt's
#    "unrecognized option" and never starts listening; its --help names
#    none of them.
# 3. The test server's --help names all three, and without the variable
#    it still refuses them; with it, --record-frames is taken as its own
#    option next to the server's --rebuild-rate.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_build
[ -x "$TEST_SERVER" ] || fail "$TEST_SERVER is missing: run make first"
for tool in nm strings; do
	command -v "$tool" >/dev/null || skip "$tool is not installed (binutils)"
done

# bft_record_, not record: the wire decoder's get_records is the
# server's own, and an ASan build keeps it out of line.
SYMS='byz|bft_record_|bft_test_|bft_store_discard|bft_store_reset'
WORDS='byzantine|record-frames'

# count_syms BIN: the symbols of BIN that belong to the test server.
count_syms()
{
	nm "$1" >"$TESTDIR/nm.out" || fail "nm $1 failed"
	grep -ciE "$SYMS" "$TESTDIR/nm.out" || true
}

# count_words BIN: the test server's words among the strings of BIN.
count_words()
{
	strings -a "$1" >"$TESTDIR/strings.out" || fail "strings $1 failed"
	grep -ciE "$WORDS" "$TESTDIR/strings.out" || true
}

n=$(count_syms "$TEST_SERVER")
[ "$n" -gt 0 ] || fail "nm finds no test symbols even in $TEST_SERVER:" \
    "the check below would prove nothing"
n=$(count_words "$TEST_SERVER")
[ "$n" -gt 0 ] || fail "strings finds no test words even in $TEST_SERVER"

n=$(count_syms "$SERVER")
if [ "$n" -ne 0 ]; then
	grep -iE "$SYMS" "$TESTDIR/nm.out" | head -n 20 >&2
	fail "$SERVER has $n test-only symbols ($SYMS)"
fi
log "nm: no symbol of $SERVER matches $SYMS"
n=$(count_words "$SERVER")
if [ "$n" -ne 0 ]; then
	grep -iE "$WORDS" "$TESTDIR/strings.out" | head -n 20 >&2
	fail "$SERVER has $n strings naming test-only code ($WORDS)"
fi
log "strings: none of $SERVER matches $WORDS"

# must_reject NAME ARG...: the production server must refuse ARG as an
# unknown option, whatever the environment says.
must_reject()
{
	local name=$1 out=$TESTDIR/log/reject-$1.log rc=0
	shift
	BFTBLK_TEST_BYZANTINE=1 timeout -k 5 30 "$SERVER" "$@" \
	    --config "$TESTDIR/none.conf" --key "$TESTDIR/none.key" \
	    --data "$TESTDIR/none" >"$out" 2>&1 </dev/null || rc=$?
	case "$rc" in
	0) fail "$SERVER $*: exited 0" ;;
	124|137) fail "$SERVER $*: still running after 30s" ;;
	esac
	! grep -q "listening on" "$out" || fail "$SERVER $*: it listened"
	grep -q "unrecognized option" "$out" || { _show_log_tail "$out";
	    fail "$SERVER $*: refused, but not as an unknown option"; }
	log "$SERVER $*: status $rc, $(grep -m1 'unrecognized option' "$out")"
}

must_reject byzantine --byzantine=mute
must_reject byzantine-split --byzantine mute
must_reject seed --byzantine-seed=1
mkdir -p "$TESTDIR/rec"
must_reject record --record-frames "$TESTDIR/rec"
[ -z "$(ls -A "$TESTDIR/rec")" ] || fail "$SERVER recorded frames"

"$SERVER" --help >"$TESTDIR/log/help.log" 2>&1 ||
    fail "$SERVER --help failed"
grep -q -- '--config' "$TESTDIR/log/help.log" ||
    fail "$SERVER --help printed no usage"
! grep -qE -- "--($WORDS)" "$TESTDIR/log/help.log" ||
    fail "$SERVER --help lists test-only options"
log "$SERVER --help lists no test-only option"

"$TEST_SERVER" --help >"$TESTDIR/log/help-test.log" 2>&1 ||
    fail "$TEST_SERVER --help failed"
for opt in --byzantine --byzantine-seed --record-frames; do
	grep -q -- "$opt " "$TESTDIR/log/help-test.log" ||
	    fail "$TEST_SERVER --help does not list $opt"
done
log "$TEST_SERVER --help lists --byzantine, --byzantine-seed," \
    "--record-frames"

out=$TESTDIR/log/gate.log
rc=0
env -u BFTBLK_TEST_BYZANTINE timeout -k 5 30 "$TEST_SERVER" \
    --byzantine=mute --config "$TESTDIR/none.conf" \
    --key "$TESTDIR/none.key" --data "$TESTDIR/none" >"$out" 2>&1 \
    </dev/null || rc=$?
[ "$rc" -ne 0 ] || fail "$TEST_SERVER took --byzantine without" \
    "BFTBLK_TEST_BYZANTINE=1"
grep -q "BFTBLK_TEST_BYZANTINE=1" "$out" || { _show_log_tail "$out";
    fail "$TEST_SERVER refused --byzantine, but not for the variable"; }
log "$TEST_SERVER without BFTBLK_TEST_BYZANTINE=1: refused (status $rc)"

# With the variable, the test server's options must not be taken for the
# server's own (--record-frames once shared getopt's letter with
# --rebuild-rate and was parsed as a rate).
"$ADMIN" keygen --dir "$TESTDIR/rf" --t 1 --size 64M --host 127.0.0.1 \
    --base-port "$(_pick_ports 4)" >"$TESTDIR/log/keygen.log" 2>&1 ||
    fail "keygen failed"
mkdir -p "$TESTDIR/rf-data" "$TESTDIR/rec2"
out=$TESTDIR/log/record.log
rc=0
BFTBLK_TEST_BYZANTINE=1 timeout -k 5 2 "$TEST_SERVER" \
    --config "$TESTDIR/rf/bftblk.conf" --key "$TESTDIR/rf/server-0.key" \
    --data "$TESTDIR/rf-data" --record-frames "$TESTDIR/rec2" \
    --rebuild-rate 5 --byzantine=mute --byzantine-seed=0123456789 \
    >"$out" 2>&1 </dev/null || rc=$?
grep -q "recording received frames" "$out" && grep -q "listening on" "$out" ||
    { _show_log_tail "$out"; fail "$TEST_SERVER --record-frames DIR" \
    "--rebuild-rate 5 did not start recording and listening"; }
# Tests print the seed they drew; one with a leading zero is still that
# decimal number (it once read as octal, and 8 or 9 in it was refused).
grep -q "BYZANTINE TEST MODE: mute (seed 123456789)" "$out" ||
    { _show_log_tail "$out"; fail "$TEST_SERVER --byzantine-seed=0123456789" \
    "was not taken as decimal 123456789"; }
log "$TEST_SERVER with the variable: --record-frames, --rebuild-rate and" \
    "--byzantine-seed=0123456789 (decimal) all taken (stopped by timeout," \
    "status $rc)"
log "ok"
