#!/bin/bash
# Client roles (t=1): a read-only client reads but cannot write, and a
# key the cluster does not list gets nowhere.
#
# 1. The keygen writer ("client") writes blocks 0-7 through nbdkit.
# 2. `bftblk client add --role ro` adds "reader" while the servers run;
#    SIGHUP.  An nbdkit with reader.key exports the disk read-only
#    (nbdsh: is_read_only), reads blocks 0-7 byte for byte as written,
#    and a pwrite through it fails.  After the writer overwrites block 3
#    the reader reads the new value.
# 3. bftblk-testclient probe with reader.key sends CLOCK, STORE and
#    COMPLETE straight to every server: each must answer status 9
#    (EPERM) and log the refusal naming the client, and so must
#    SUMMARY and LCLIST (state comparison is for peers); COLLECT and FLUSH
#    are answered ok.  The control: the same probe with client.key is
#    not refused.  partial-write with reader.key stops before connecting
#    (it holds no MAC key).
# 4. "ghost" is added and revoked again, leaving a key file whose
#    chan-key no server lists: the testclient is refused at the
#    handshake (status 1) by every server, each logging "unknown client
#    key" with the key's fingerprint, and an nbdkit with ghost.key logs
#    the refusal and fails its reads.  The writer's I/O still works.
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

TAGS = ['w%d' % b for b in range(8)]
"
nbdsh_run nbd "$py
for b, tag in enumerate(TAGS):
    h.pwrite(pattern(tag), b * BS)
h.flush()
check(TAGS, 'writer')
"

log "step 2: a read-only client"
client_add reader ro
grep -q '^role *= *ro' "$CLUSTER_DIR/reader.key" ||
    fail "reader.key is not a read-only key file"
! grep -qE '^(writer-key|key\.[0-9]+) *=' "$CLUSTER_DIR/reader.key" ||
    fail "reader.key holds MAC keys"
nbdkit_start_with ro "$PLUGIN" config="$CONF" \
    keys="$CLUSTER_DIR/reader.key" timeout=5
nbdsh_run ro "$py
if not h.is_read_only():
    raise AssertionError('the read-only key exports a writable disk')
check(TAGS, 'reader')
try:
    h.pwrite(pattern('ro-write'), 2 * BS)
except nbd.Error as e:
    print('reader: pwrite refused: %s' % e)
else:
    raise AssertionError('a pwrite through the read-only export succeeded')
check(TAGS, 'reader after its refused write')
" || fail "the read-only nbdkit misbehaved"
nbdsh_run nbd "$py
h.pwrite(pattern('new3'), 3 * BS)
h.flush()" || fail "writer: overwrite of block 3"
nbdsh_run ro "$py
TAGS[3] = 'new3'
check(TAGS, 'reader after the writer overwrote block 3')
" || fail "the reader does not see the new value of block 3"

log "step 3: the read-only key straight at the servers"
declare -A off=()
for ((i = 0; i < CLUSTER_N; i++)); do
	off[$i]=$(stat -c %s "$TESTDIR/log/server-$i.log")
done
out=$TESTDIR/log/probe-reader.log
"$TC" probe --config "$CONF" --keys "$CLUSTER_DIR/reader.key" --block 5 \
    >"$out" 2>&1 || { cat "$out" >&2; fail "probe with reader.key failed"; }
sed 's/^/  reader: /' "$out" >&2
for ((i = 0; i < CLUSTER_N; i++)); do
	for op in CLOCK STORE COMPLETE; do
		grep -q "^server $i: $op status 9 " "$out" ||
		    fail "server-$i did not refuse the reader's $op with EPERM"
		tail -c "+$((${off[$i]} + 1))" "$TESTDIR/log/server-$i.log" |
		    grep -q "read-only client reader sent $op: refused" ||
		    fail "server-$i did not log the refusal of the reader's $op"
	done
	for op in COLLECT FLUSH; do
		grep -q "^server $i: $op status 0 " "$out" ||
		    fail "server-$i refused the reader's $op"
	done
	# Comparing states walks the index: the rebuild's, not a reader's.
	for op in SUMMARY LCLIST; do
		grep -q "^server $i: $op status 9 " "$out" ||
		    fail "server-$i did not refuse the reader's $op with EPERM"
	done
done
log "every server refused CLOCK, STORE, COMPLETE, SUMMARY and LCLIST with EPERM and logged it"
out=$TESTDIR/log/probe-writer.log
"$TC" probe --config "$CONF" --keys "$CLUSTER_DIR/client.key" --block 5 \
    >"$out" 2>&1 || { cat "$out" >&2; fail "probe with client.key failed"; }
sed 's/^/  writer: /' "$out" >&2
grep -q " status 9 " "$out" && fail "the writer's probe was refused with EPERM"
[ "$(grep -c ": CLOCK status 0 " "$out")" -eq "$CLUSTER_N" ] ||
    fail "the writer's CLOCK was not answered by every server"
rc=0
"$TC" partial-write --config "$CONF" --keys "$CLUSTER_DIR/reader.key" \
    --block 6 --stop-after complete >"$TESTDIR/log/pw-reader.log" 2>&1 ||
    rc=$?
cat "$TESTDIR/log/pw-reader.log" >&2
[ "$rc" -ne 0 ] && grep -q "read-only client 'reader'" \
    "$TESTDIR/log/pw-reader.log" ||
    fail "partial-write with a read-only key: exit $rc, no clear refusal"

log "step 4: a key no server lists"
client_add ghost ro
client_revoke ghost
fp=$(python3 -c "
import sys
sys.path.insert(0, '$SRCDIR/tests/tools')
import bftchan
print(bftchan.fingerprint(bftchan.public_key(
    bftchan.client_sk('$CLUSTER_DIR/ghost.key'))))")
for ((i = 0; i < CLUSTER_N; i++)); do
	off[$i]=$(stat -c %s "$TESTDIR/log/server-$i.log")
done
out=$TESTDIR/log/probe-ghost.log
"$TC" probe --config "$CONF" --keys "$CLUSTER_DIR/ghost.key" --block 5 \
    >"$out" 2>&1 || true
sed 's/^/  ghost: /' "$out" >&2
for ((i = 0; i < CLUSTER_N; i++)); do
	grep -q "^server $i: channel refused (status 1): unknown client key" \
	    "$out" || fail "server-$i did not refuse the ghost key (status 1)"
	grep -q "^server $i: .* status 0 " "$out" &&
	    fail "server-$i answered a request of the ghost key"
	tail -c "+$((${off[$i]} + 1))" "$TESTDIR/log/server-$i.log" |
	    grep -q "refused: unknown client key.*(key $fp\.\.\.)" ||
	    fail "server-$i did not log the unknown key $fp"
done
log "every server refused key $fp... at the handshake and logged it"
# volume-id=0: the disk itself, without the volume table, which this
# key cannot read either (every other export fails at open instead);
# shared=on: no lease, which it could not take either.
nbdkit_start_with ghost "$PLUGIN" config="$CONF" \
    keys="$CLUSTER_DIR/ghost.key" timeout=3 volume-id=0 shared=on
if nbdsh_run ghost "h.pread(65536, 0)" >"$TESTDIR/log/ghost-read.log" 2>&1
then
	fail "a read through the ghost key's nbdkit succeeded"
fi
deadline=$((SECONDS + 10))
until grep -q "channel refused: unknown client key" \
    "$TESTDIR/log/nbdkit-ghost.log"; do
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "nbdkit with the ghost key logged no clear refusal"
	sleep 0.2
done
log "nbdkit ghost: $(grep -m1 "channel refused" "$TESTDIR/log/nbdkit-ghost.log")"
nbdkit_stop ghost

nbdsh_run nbd "$py
TAGS[3] = 'new3'
check(TAGS, 'writer at the end')
h.pwrite(pattern('end'), 7 * BS)
TAGS[7] = 'end'
check(TAGS, 'writer after a last write')
" || fail "the writer's I/O failed at the end"
log "ok"
