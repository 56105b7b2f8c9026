#!/bin/bash
# Sealed frames tampered with in transit must cost the sender its
# connection and nothing else (t=1, channel = aead, the default).
#
# bftblk-testclient tamper sets up a real channel to server 0 with the
# cluster's client key, says HELLO, and then sends a COLLECT with one
# ciphertext bit flipped; a COLLECT that was answered, replayed byte for
# byte; two COLLECTs sealed in order and sent swapped; two sealed and
# only the second sent; one cut short with its length prefix adjusted;
# and half of one followed by EOF.  Each time server 0 must close the
# connection without answering, log why ("failed authentication", or
# for the cut frame the peer's close: server 0 runs with -v), stay up,
# and nbdkit I/O must still read back byte for byte.  The control: an
# untampered COLLECT is answered (the tool then exits 1).
#
# And what travels is ciphertext: bftblk-testclient peek FILTERs back a
# block written through nbdkit and keeps the reply as it came off the
# wire, which must not decode and must hold no 32-byte run of the
# fragment it carries once opened (malformed.sh checks that the same
# peek does see the plaintext on a channel = plain cluster).  At the
# end, with server 1 killed so that server 0 takes part in every
# quorum, all data still reads back.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TC=$BUILD/tests/bftblk-testclient
[ -x "$TC" ] || fail "$TC is missing: run make first"
VICTIM=0

export SERVER_ARGS_0="-v"
cluster_start 1
grep -q '^channel *= *plain' "$CLUSTER_DIR/bftblk.conf" &&
    fail "the default cluster runs channel = plain"
nbdkit_start nbd
pid=${SERVER_PID[$VICTIM]}
vlog=$TESTDIR/log/server-$VICTIM.log
tc=("$TC" --config "$CLUSTER_DIR/bftblk.conf" --keys "$CLUSTER_DIR/client.key"
    --servers "$VICTIM")

seed=$RANDOM$RANDOM
py="
import random
BS = 65536
NB = 16

def pattern(i):
    return random.Random('$seed-%d' % i).randbytes(BS)

def check(upto, what):
    want = b''.join(pattern(i) for i in range(upto))
    got = h.pread(upto * BS, 0)
    if got != want:
        bad = next(i for i in range(len(want)) if got[i] != want[i])
        raise AssertionError('%s: byte %d (block %d) differs'
                             % (what, bad, bad // BS))
    print('%s: blocks 0-%d match byte for byte' % (what, upto - 1))
"
nbdsh_run nbd "$py
h.pwrite(pattern(0), 0)
check(1, 'before tampering')
"

log "peek: the FILTER_ACK carrying block 0's fragment, as sent"
prc=0
"${tc[0]}" peek "${tc[@]:1}" --block 0 >"$TESTDIR/log/peek.log" 2>&1 ||
    prc=$?
cat "$TESTDIR/log/peek.log" >&2
[ "$prc" -eq 0 ] || fail "peek: exit $prc (3: plaintext on the wire)"

# tamper MODE LOG-PATTERN: one tampered connection, then the checks.
nblock=1
tamper()
{
	local mode=$1 pattern=$2 offset out rc=0 deadline
	out=$TESTDIR/log/tamper-$mode.log
	offset=$(stat -c %s "$vlog")
	"${tc[0]}" tamper "${tc[@]:1}" --block 0 --mode "$mode" >"$out" 2>&1 ||
	    rc=$?
	sed "s/^/  $mode: /" "$out" >&2
	[ "$rc" -eq 0 ] ||
	    fail "tamper $mode: the server did not close the connection"
	_alive "$pid" || fail "tamper $mode: server-$VICTIM (pid $pid) died"
	deadline=$((SECONDS + 5))
	until tail -c "+$((offset + 1))" "$vlog" | grep -q -- "$pattern"; do
		[ "$SECONDS" -lt "$deadline" ] ||
		    fail "tamper $mode: no \"$pattern\" in $vlog"
		sleep 0.1
	done
	log "tamper $mode: server logged:" \
	    "$(tail -c "+$((offset + 1))" "$vlog" | grep -m1 -- "$pattern")"
	nbdsh_run nbd "$py
h.pwrite(pattern($nblock), $nblock * BS)
check($((nblock + 1)), 'after $mode')
" || fail "tamper $mode: I/O through nbdkit failed"
	nblock=$((nblock + 1))
}

auth="closing: a frame failed authentication"
tamper flip "$auth"
tamper replay "$auth"
tamper reorder "$auth"
tamper drop "$auth"
tamper truncate "$auth"
tamper cut "closed by peer"
n_auth=$(grep -c -- "$auth" "$vlog")
[ "$n_auth" -eq 5 ] ||
    fail "server-$VICTIM logged $n_auth authentication failures, wanted 5"

log "control: an untampered COLLECT must be answered (tamper exits 1)"
rc=0
"${tc[0]}" tamper "${tc[@]:1}" --block 0 --mode none \
    >"$TESTDIR/log/tamper-none.log" 2>&1 || rc=$?
sed 's/^/  none: /' "$TESTDIR/log/tamper-none.log" >&2
[ "$rc" -eq 1 ] && grep -q "bytes after the tampered frame" \
    "$TESTDIR/log/tamper-none.log" ||
    fail "tamper none: exit $rc; the server did not answer a good frame"

log "SIGKILL to server-1: server-$VICTIM must now take part in every quorum"
server_kill 1 KILL
nbdsh_run nbd "$py
h.pwrite(pattern($nblock), $nblock * BS)
check($((nblock + 1)), 'server 1 down')
" || fail "I/O with server 1 down failed"
log "ok"
