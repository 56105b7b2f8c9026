#!/bin/bash
# Key rotation without restarting the cluster (t=1).
#
# 1. nbdkit "old" with the keygen writer's key (client "client") writes
#    blocks 0-3.
# 2. `bftblk client add` makes a second writer "client2"; SIGHUP.  An
#    nbdkit "new" with client2.key writes blocks 4-7 and reads blocks 0-7
#    byte for byte; "old" reads the blocks "new" wrote.
# 3. `bftblk client revoke --name client` while "old" still runs; SIGHUP.
#    Every server must log "client client was revoked" (closing its
#    connections), "old" must log the refusal of its reconnections and
#    its reads and writes must fail instead of succeeding, and the
#    testclient with client.key is refused at the handshake.
# 4. "new" keeps working: it writes block 8 and reads everything back.
#    The servers are the same processes from start to end.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TC=$BUILD/tests/bftblk-testclient
[ -x "$TC" ] || fail "$TC is missing: run make first"

cluster_start 1
CONF=$CLUSTER_DIR/bftblk.conf
pids_before="${SERVER_PID[*]}"
nbdkit_start_with old "$PLUGIN" config="$CONF" keys="$CLUSTER_DIR/client.key" \
    timeout=3 shared=on

seed=$RANDOM$RANDOM
py="
import random, nbd
BS = 65536

def pattern(b):
    return random.Random('$seed-%d' % b).randbytes(BS)

def check(blocks, what):
    for b in blocks:
        if h.pread(BS, b * BS) != pattern(b):
            raise AssertionError('%s: block %d differs' % (what, b))
    print('%s: blocks %s match byte for byte' % (what, list(blocks)))
"
nbdsh_run old "$py
for b in range(4):
    h.pwrite(pattern(b), b * BS)
check(range(4), 'old writer')
"

log "step 2: a second writer"
client_add client2 rw
nbdkit_start_with new "$PLUGIN" config="$CONF" \
    keys="$CLUSTER_DIR/client2.key" timeout=10 shared=on
nbdsh_run new "$py
for b in range(4, 8):
    h.pwrite(pattern(b), b * BS)
check(range(8), 'new writer')
" || fail "the new writer's I/O failed"
nbdsh_run old "$py
check(range(8), 'old writer, before the revocation')
" || fail "the old writer cannot read what the new one wrote"

log "step 3: revoking the old writer while its nbdkit runs"
declare -A off=()
for ((i = 0; i < CLUSTER_N; i++)); do
	off[$i]=$(stat -c %s "$TESTDIR/log/server-$i.log")
done
client_revoke client
deadline=$((SECONDS + 5))
for ((i = 0; i < CLUSTER_N; i++)); do
	# The line follows the reload's own by a moment.
	until tail -c "+$((${off[$i]} + 1))" "$TESTDIR/log/server-$i.log" |
	    grep -q "client client was revoked"; do
		[ "$SECONDS" -lt "$deadline" ] ||
		    fail "server-$i did not close the revoked client's" \
		    "connection"
		sleep 0.1
	done
done
log "every server closed the revoked client's connection"
rc=0
nbdsh_run old "$py
try:
    d = h.pread(BS, 0)
except nbd.Error as e:
    print('old writer: read failed as it must: %s' % e)
else:
    raise AssertionError('a read by the revoked writer succeeded')
try:
    h.pwrite(pattern(100), 9 * BS)
except nbd.Error as e:
    print('old writer: write failed as it must: %s' % e)
else:
    raise AssertionError('a write by the revoked writer succeeded')
" || rc=$?
[ "$rc" -eq 0 ] || fail "the revoked writer's nbdkit still did I/O"
deadline=$((SECONDS + 10))
until grep -q "channel refused: unknown client key" \
    "$TESTDIR/log/nbdkit-old.log"; do
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "the revoked writer's nbdkit logged no refusal"
	sleep 0.2
done
log "nbdkit old: $(grep -m1 "channel refused" "$TESTDIR/log/nbdkit-old.log")"
out=$TESTDIR/log/probe-revoked.log
"$TC" probe --config "$CONF" --keys "$CLUSTER_DIR/client.key" --servers 0 \
    --block 0 >"$out" 2>&1 || true
grep -q "^server 0: channel refused (status 1)" "$out" ||
    { cat "$out" >&2; fail "the revoked key still gets a channel"; }
nbdkit_stop old

log "step 4: the new writer keeps working"
nbdsh_run new "$py
h.pwrite(pattern(8), 8 * BS)
check(range(9), 'new writer after the revocation')
" || fail "the new writer's I/O failed after the revocation"
nbdkit_stop new
nbdkit_start_with fresh "$PLUGIN" config="$CONF" \
    keys="$CLUSTER_DIR/client2.key" shared=on
nbdsh_run fresh "$py
check(range(9), 'a fresh nbdkit with the new key')
" || fail "a fresh nbdkit with the new key cannot read"
for ((i = 0; i < CLUSTER_N; i++)); do
	_alive "${SERVER_PID[$i]}" || fail "server-$i died"
done
[ "${SERVER_PID[*]}" = "$pids_before" ] ||
    fail "server PIDs changed: $pids_before -> ${SERVER_PID[*]}"
log "ok: same servers (pids $pids_before) throughout"
