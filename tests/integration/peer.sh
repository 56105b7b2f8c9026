#!/bin/bash
# Servers as peers (t=1): a server's key file is an identity the other
# servers let in with the role peer, which reads but never writes, and
# which its own server refuses.
#
# 1. The writer writes blocks 0-3 through nbdkit.
# 2. bftblk-testclient probe with server-1.key: server 1 refuses its own
#    key at the handshake and logs it; servers 0, 2 and 3 answer
#    COLLECT, FLUSH, SUMMARY, LCLIST and STATUS (status 0) and refuse
#    CLOCK, STORE and COMPLETE with EPERM (status 9), logging the
#    refusal of "peer client server-1".
# 3. An nbdkit with server-key=server-2.key (libbftblk's peer identity)
#    exports the disk read-only, reads blocks 0-3 byte for byte, fails a
#    pwrite, and never tries server 2: no refusal in its log.
# 4. The writer still writes, and the peer reads the new value.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TC=$BUILD/tests/bftblk-testclient
[ -x "$TC" ] || fail "$TC is missing: run make first"

cluster_start 1
CONF=$CLUSTER_DIR/bftblk.conf
nbdkit_start nbd

seed=$RANDOM$RANDOM
py="
import random, nbd
BS = 65536

def pattern(tag):
    return random.Random('$seed-%s' % tag).randbytes(BS)

def check(tags, what):
    for b, tag in enumerate(tags):
        if h.pread(BS, b * BS) != pattern(tag):
            raise AssertionError('%s: block %d is not %s' % (what, b, tag))
    print('%s: blocks 0-%d match byte for byte' % (what, len(tags) - 1))

TAGS = ['w%d' % b for b in range(4)]
"
nbdsh_run nbd "$py
for b, tag in enumerate(TAGS):
    h.pwrite(pattern(tag), b * BS)
h.flush()
check(TAGS, 'writer')
"

log "step 2: server-1.key straight at the servers"
declare -A off=()
for ((i = 0; i < CLUSTER_N; i++)); do
	off[$i]=$(stat -c %s "$TESTDIR/log/server-$i.log")
done
out=$TESTDIR/log/probe-peer.log
"$TC" probe --config "$CONF" --keys "$CLUSTER_DIR/server-1.key" --block 2 \
    >"$out" 2>&1 || { cat "$out" >&2; fail "probe with server-1.key failed"; }
sed 's/^/  peer: /' "$out" >&2
grep -q "^probe: peer client 'server-1'" "$out" ||
    fail "the probe did not take server-1.key as the peer server-1"
grep -q "^server 1: channel refused (status 1): unknown client key" "$out" ||
    fail "server-1 did not refuse its own key at the handshake"
grep -q "^server 1: .* status [0-9]" "$out" &&
    fail "server-1 answered a request under its own key"
tail -c "+$((${off[1]} + 1))" "$TESTDIR/log/server-1.log" |
    grep -q "refused: unknown client key.*: it is this server's own key" ||
    fail "server-1 did not log why it refused its own key"
for i in 0 2 3; do
	for op in CLOCK STORE COMPLETE; do
		grep -q "^server $i: $op status 9 " "$out" ||
		    fail "server-$i did not refuse the peer's $op with EPERM"
		tail -c "+$((${off[$i]} + 1))" "$TESTDIR/log/server-$i.log" |
		    grep -q "peer client server-1 sent $op: refused" ||
		    fail "server-$i did not log the refusal of the peer's $op"
	done
	for op in COLLECT FLUSH SUMMARY LCLIST STATUS; do
		grep -q "^server $i: $op status 0 " "$out" ||
		    fail "server-$i refused the peer's $op"
	done
done
log "servers 0, 2, 3 answered the peer's reads and refused its writes"

log "step 3: libbftblk as server 2 (server-key=)"
nbdkit_start_with peer "$PLUGIN" config="$CONF" \
    server-key="$CLUSTER_DIR/server-2.key" timeout=5
nbdsh_run peer "$py
if not h.is_read_only():
    raise AssertionError('a server key exports a writable disk')
check(TAGS, 'peer')
try:
    h.pwrite(pattern('peer-write'), 1 * BS)
except nbd.Error as e:
    print('peer: pwrite refused: %s' % e)
else:
    raise AssertionError('a pwrite through the peer export succeeded')
" || fail "the peer's nbdkit misbehaved"
if grep -q "server 2: channel refused" "$TESTDIR/log/nbdkit-peer.log"; then
	fail "the peer tried to connect to its own server"
fi

log "step 4: the writer writes on, the peer reads it"
nbdsh_run nbd "$py
h.pwrite(pattern('new1'), 1 * BS)
h.flush()" || fail "writer: overwrite of block 1"
nbdsh_run peer "$py
TAGS[1] = 'new1'
check(TAGS, 'peer after the writer overwrote block 1')
" || fail "the peer does not see the new value of block 1"
nbdkit_stop peer
log "ok"
