#!/bin/bash
# Data directories that are not what they should be (t=1).
#
# 0. A data dir that does not exist (a disk that failed to mount): the
#    server must refuse to start, saying so, and create nothing; with
#    --create-data-dir it creates the dir and starts; under umask 022
#    the dir must be 0700 and every file in it 0600.  An existing empty
#    dir is a new server's and is initialised (the other cluster's
#    server 0 below).
# 1. A data dir made by server 0 of another cluster: this cluster's
#    server 0 must refuse it (non-zero exit, message naming the other
#    cluster); this cluster's server 1 key on server 0's own dir must be
#    refused naming the index; a second server on a dir in use must be
#    refused too.
# 2. A byte flipped in the middle of server 2's segment file while it is
#    stopped, and its index checkpoint gone (as after a crash before
#    one was written): it must start, report the discarded record found
#    by the replay, and reads through nbdkit must return the right data;
#    writes must still work.  (With the checkpoint, damage is found when
#    the record is read: tests/faults/crash-corrupt.sh.)
# 3. The tail of server 2's last segment file cut off mid-record (a torn
#    append): it must start, report the torn record, and serve as before.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# must_refuse WHAT PATTERN SERVER-ARGS...: runs a server that must exit
# non-zero before listening, with PATTERN in its output.
must_refuse()
{
	local what=$1 pattern=$2 out rc=0
	shift 2
	out=$TESTDIR/log/refuse-$what.log
	timeout -k 5 60 "$SERVER" "$@" >"$out" 2>&1 </dev/null || rc=$?
	case "$rc" in
	0) fail "$what: the server exited 0 (it must refuse)" ;;
	124|137) fail "$what: the server did not exit within 60s" ;;
	esac
	if grep -q "listening on" "$out"; then
		fail "$what: the server started listening"
	fi
	grep -q -- "$pattern" "$out" || { _show_log_tail "$out";
	    fail "$what: no \"$pattern\" in its message"; }
	log "$what: refused with status $rc: $(grep -m1 -- "$pattern" "$out")"
}

# A port nobody listens on, so that a server that wrongly got past its
# data dir would not fail on a busy port instead.
spare_port()
{
	_pick_ports 1
}

cluster_start 1
nbdkit_start nbd

# --- 1: foreign and misassigned data dirs ---
other=$TESTDIR/other
oport=$(_pick_ports 4)
"$ADMIN" keygen --dir "$other" --t 1 --size 64M --host 127.0.0.1 \
    --base-port "$oport" >"$TESTDIR/log/keygen-other.log" 2>&1 ||
    fail "keygen of the second cluster failed"
foreign=$TESTDIR/data/foreign
mkdir -p "$foreign"
flog=$TESTDIR/log/foreign-server.log
: >"$flog"
"$SERVER" --config "$other/bftblk.conf" --key "$other/server-0.key" \
    --data "$foreign" >>"$flog" 2>&1 </dev/null &
fpid=$!
_track "$fpid" foreign-server
_wait_log "$fpid" "$flog" 0 "listening on" "the other cluster's server 0"
_stop_pid "$fpid" TERM
_forget_pid "$fpid"
[ "$_STATUS" -eq 0 ] || fail "the other cluster's server exited $_STATUS"
[ -e "$foreign/identity" ] || fail "no identity file in $foreign"
log "the other cluster's server 0 made $foreign and stopped"

missing=$TESTDIR/data/missing
must_refuse missing-dir "data directory $missing does not exist; create it" \
    --config "$other/bftblk.conf" --key "$other/server-1.key" \
    --data "$missing" --listen "127.0.0.1:$(spare_port)"
grep -q -- "--create-data-dir if this is a new server" \
    "$TESTDIR/log/refuse-missing-dir.log" ||
    fail "the refusal does not name --create-data-dir"
[ ! -e "$missing" ] || fail "the refused server created $missing"
clog=$TESTDIR/log/created-server.log
: >"$clog"
# Under umask 022 (a shell's, outside systemd's UMask=0077).
(umask 022 && exec "$SERVER" --config "$other/bftblk.conf" \
    --key "$other/server-1.key" --data "$missing" --create-data-dir \
    --listen "127.0.0.1:$(spare_port)") >>"$clog" 2>&1 </dev/null &
cpid=$!
_track "$cpid" created-server
_wait_log "$cpid" "$clog" 0 "listening on" "the server with --create-data-dir"
_stop_pid "$cpid" TERM
_forget_pid "$cpid"
[ "$_STATUS" -eq 0 ] || fail "the server with --create-data-dir exited" \
    "$_STATUS"
[ -e "$missing/identity" ] || fail "--create-data-dir made no $missing"
log "with --create-data-dir the server made $missing and started"
# An unencrypted volume's fragments are slices of its blocks: no other
# local user may read them, whatever the umask.
[ "$(stat -c %a "$missing")" = 700 ] ||
    fail "$missing is mode $(stat -c %a "$missing"), not 700"
nfiles=0
for f in "$missing"/*; do
	[ "$(stat -c %a "$f")" = 600 ] ||
	    fail "$f is mode $(stat -c %a "$f"), not 600"
	nfiles=$((nfiles + 1))
done
ls "$missing"/seg-* >/dev/null 2>&1 && [ -e "$missing/index.ckpt" ] ||
    fail "no segment or checkpoint in $missing to check: $(ls "$missing")"
log "$missing is 700 and its $nfiles files 600 under umask 022"

other_id=$(sed -n 's/^cluster-id *= *//p' "$other/bftblk.conf")
must_refuse foreign-cluster "$other_id" \
    --config "$CLUSTER_DIR/bftblk.conf" --key "$CLUSTER_DIR/server-0.key" \
    --data "$foreign" --listen "127.0.0.1:$(spare_port)"
grep -q "cluster" "$TESTDIR/log/refuse-foreign-cluster.log" ||
    fail "the message does not say it is about the cluster"

server_kill 0 TERM
must_refuse wrong-index "server index" \
    --config "$CLUSTER_DIR/bftblk.conf" --key "$CLUSTER_DIR/server-1.key" \
    --data "$TESTDIR/data/server-0" --listen "127.0.0.1:$(spare_port)"
server_start 0

must_refuse dir-in-use "in use" \
    --config "$CLUSTER_DIR/bftblk.conf" --key "$CLUSTER_DIR/server-1.key" \
    --data "$TESTDIR/data/server-1" --listen "127.0.0.1:$(spare_port)"

# --- 2 and 3: damaged segment files ---
seed=$RANDOM$RANDOM
py="
import random
BS = 65536
NB = 48

def pattern(tag, n):
    return random.Random('$seed-' + tag).randbytes(n)

FIRST = [('blk%d' % i, i * BS, BS) for i in range(0, 40)] + \
        [('inside41', 41 * BS + 100, 1000), ('across42-43', 43 * BS - 9, 18)]
LATER = [('later44', 44 * BS, BS), ('later3', 3 * BS + 5, 5000)]

def write(writes):
    for tag, off, n in writes:
        h.pwrite(pattern(tag, n), off)

def check(rounds, what):
    model = bytearray(NB * BS)
    for writes in rounds:
        for tag, off, n in writes:
            model[off:off + n] = pattern(tag, n)
    got = h.pread(NB * BS, 0)
    if got != model:
        bad = next(i for i in range(len(model)) if got[i] != model[i])
        raise AssertionError('%s: byte %d (block %d) differs'
                             % (what, bad, bad // BS))
    print('%s: blocks 0-%d match byte for byte' % (what, NB - 1))
"
log "writing 42 blocks"
nbdsh_run nbd "$py
write(FIRST)
h.flush()
check([FIRST], 'written')
"

# biggest_segment DIR: the largest seg-*.log in DIR.
biggest_segment()
{
	local f
	f=$(ls -S "$1"/seg-*.log 2>/dev/null | sed -n 1p)
	[ -n "$f" ] || fail "no segment file in $1"
	echo "$f"
}

server_kill 2 TERM
seg=$(biggest_segment "$TESTDIR/data/server-2")
segsize=$(stat -c %s "$seg")
off=$((segsize / 2))
old=$(od -An -tx1 -j "$off" -N 1 "$seg" | tr -d ' ')
python3 - "$seg" "$off" <<'EOF'
import sys
path, off = sys.argv[1], int(sys.argv[2])
with open(path, 'r+b') as f:
    f.seek(off)
    b = f.read(1)
    f.seek(off)
    f.write(bytes([b[0] ^ 0xff]))
EOF
new=$(od -An -tx1 -j "$off" -N 1 "$seg" | tr -d ' ')
[ "$old" != "$new" ] || fail "the byte at $off of $seg did not change"
log "flipped byte $off of $seg ($segsize bytes): $old -> $new"
rm -f "$TESTDIR/data/server-2/index.ckpt"
logoff=$(stat -c %s "$TESTDIR/log/server-2.log")
server_start 2
[[ "$(tail -c "+$((logoff + 1))" "$TESTDIR/log/server-2.log")" == *discarded* ]] ||
    fail "server-2 did not report a discarded record"
log "server-2: $(tail -c "+$((logoff + 1))" "$TESTDIR/log/server-2.log" |
    grep -m1 -E 'record skipped|torn record|ends the segment|discarded')"
_alive "${SERVER_PID[2]}" || fail "server-2 died"
nbdsh_run nbd "$py
check([FIRST], 'server 2 with a flipped byte')
write(LATER)
check([FIRST, LATER], 'after writing again')
"

# The same server again, so that no block ever has two damaged copies.
server_kill 2 TERM
seg=$(ls "$TESTDIR/data/server-2"/seg-*.log | sort | tail -n 1)
segsize=$(stat -c %s "$seg")
[ "$segsize" -gt 1000 ] || fail "$seg is too small to tear"
truncate -s $((segsize - 1000)) "$seg"
log "cut the last 1000 bytes off $seg ($segsize bytes)"
logoff=$(stat -c %s "$TESTDIR/log/server-2.log")
server_start 2
[[ "$(tail -c "+$((logoff + 1))" "$TESTDIR/log/server-2.log")" == *"torn record"* ]] ||
    fail "server-2 did not report the torn record"
log "server-2: $(tail -c "+$((logoff + 1))" "$TESTDIR/log/server-2.log" |
    grep -m1 'torn record')"
nbdsh_run nbd "$py
check([FIRST, LATER], 'server 2 with a torn tail')
"
nbdkit_start fresh
nbdsh_run fresh "$py
check([FIRST, LATER], 'fresh nbdkit')
"
log "ok"
