#!/bin/bash
# The server's resource limits (t=1): each refuses with a clear log line
# while the server keeps serving everyone else.  Server 0 runs with
#   --max-conns 6 --max-client-conns 3 --max-client-stores 8
#   --client-store-window 5000 --max-inflight 32 --max-pending 64
#   --max-preauth-per-addr 5 -v
# (-v for the debug line of a paused connection; --max-pending, the cap
# per block, well above the cap per client tested here).
#
# 1. --max-client-conns: with nbdkit's connection open, two handshakes
#    under client.key (tests/tools/bftchan.py) are accepted and a third
#    gets server hello status 5 (too many connections), logged with the
#    client's name; another identity still gets in.
# 2. No lock-out by a public key: only a connection whose finish
#    verified counts against --max-client-conns.  Four connections (one
#    more than the limit) each send a client hello carrying client's
#    public key as bftblk.conf lists it, and never the finish; each must
#    get a server hello with status 0.  While all four are held open,
#    bftblk-testclient probe under client.key must get a channel (no
#    "channel refused", the old failure being status 5) and CLOCK and
#    COLLECT answered ok; server 0 logs no "too many connections for
#    this client" meanwhile.  (The hellos and the probe's handshake are
#    5 unauthenticated connections, within --max-preauth-per-addr.)
# 3. --max-conns counts authenticated connections: two handshakes under
#    client.key and three under other.key fill server 0 up to 6 with
#    nbdkit's; one more under stutterer.key gets status 5, logged.
#    --max-preauth-per-addr 5: of seven raw connections that never send
#    a byte, the two oldest are closed and the five newest stay open
#    (they never counted against --max-conns).
# 4. --max-client-stores: a writer "stutterer" (its own identity)
#    STOREs 8 new versions of block 50 at server 0 and completes the
#    last, which retires all 8; then STOREs 12 more without completing:
#    8 are taken and 4 refused with EBUSY, logged naming the client, and
#    one more right after is refused too.  Once --client-store-window
#    (5 s) has passed since those, the 8 left above lc stop counting:
#    the stutterer's next STORE is taken, with no refusal logged.
#    nbdkit's writes (identity "client") are never refused meanwhile.
# 5. --max-inflight: bftblk-testclient pipeline sends 3000 FILTERs of
#    block 0 (each answered with a 32 KiB fragment: ~100 MB of replies)
#    without reading any reply.  Server 0 must pause reading with at
#    most 32 replies queued (its debug line says how many), its VmRSS
#    must grow by less than 48 MiB while the client holds, and once the
#    client reads it gets all 3000 replies, in order and ok.
# After each, nbdkit I/O reads back byte for byte; at the end server 1
# is killed so that server 0 takes part in every quorum.  The frame size
# limit and the handshake timeout are covered by malformed.sh.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TC=$BUILD/tests/bftblk-testclient
[ -x "$TC" ] || fail "$TC is missing: run make first"
VICTIM=0
MAX_CONNS=6
MAX_CLIENT_CONNS=3
MAX_STORES=8
STORE_WINDOW_MS=5000
MAX_INFLIGHT=32
RSS_MAX_KB=$((48 * 1024))

MAX_PREAUTH_PER_ADDR=5

export SERVER_ARGS_0="-v --max-conns $MAX_CONNS --max-client-conns
    $MAX_CLIENT_CONNS --max-client-stores $MAX_STORES --client-store-window
    $STORE_WINDOW_MS --max-inflight $MAX_INFLIGHT --max-pending 64
    --max-preauth-per-addr $MAX_PREAUTH_PER_ADDR"
cluster_start 1
CONF=$CLUSTER_DIR/bftblk.conf
nbdkit_start nbd
pid=${SERVER_PID[$VICTIM]}
vlog=$TESTDIR/log/server-$VICTIM.log

seed=$RANDOM$RANDOM
py="
import random
BS = 65536

def pattern(b):
    return random.Random('$seed-%d' % b).randbytes(BS)

def check(upto, what):
    for b in range(upto):
        if h.pread(BS, b * BS) != pattern(b):
            raise AssertionError('%s: block %d differs' % (what, b))
    print('%s: blocks 0-%d match byte for byte' % (what, upto - 1))
"
nblock=1
nbdsh_run nbd "$py
h.pwrite(pattern(0), 0)
check(1, 'start')
"
# io_check WHAT: a new block through nbdkit, and all read back.
io_check()
{
	_alive "$pid" || fail "$1: server-$VICTIM (pid $pid) died"
	nbdsh_run nbd "$py
h.pwrite(pattern($nblock), $nblock * BS)
check($((nblock + 1)), 'after $1')
" || fail "$1: I/O through nbdkit failed"
	nblock=$((nblock + 1))
}

# wait_vlog OFFSET PATTERN WHAT: server 0's log past OFFSET gets PATTERN.
wait_vlog()
{
	local deadline=$((SECONDS + 5))
	until tail -c "+$(($1 + 1))" "$vlog" | grep -q -- "$2"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$3: no \"$2\" in $vlog"
		sleep 0.1
	done
	log "$3: server-$VICTIM logged:" \
	    "$(tail -c "+$(($1 + 1))" "$vlog" | grep -m1 -- "$2")"
}

client_add other ro
client_add stutterer rw

conns=$TESTDIR/conns.py
cat >"$conns" <<'EOF'
# conns.py TOOLS CONF INDEX CASE ARGS...: connections to one server.
import os, socket, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
import bftchan

cl = bftchan.Cluster(sys.argv[2])
index, case = int(sys.argv[3]), sys.argv[4]

def still_open(s, wait=0.5):
    s.settimeout(wait)
    try:
        return s.recv(1) != b''
    except socket.timeout:
        return True
    except ConnectionError:
        return False

if case == 'client-conns':
    # client-conns KEY ALLOWED OTHER_KEY: ALLOWED handshakes under KEY
    # succeed, the next is refused with status 5, OTHER_KEY gets in.
    key, allowed = bftchan.client_sk(sys.argv[5]), int(sys.argv[6])
    other = bftchan.client_sk(sys.argv[7])
    held = []
    for k in range(allowed):
        s = bftchan.connect(cl, index)
        bftchan.handshake(s, cl, index, key)
        print('handshake %d under the key: accepted' % (k + 1))
        held.append(s)
    s = bftchan.connect(cl, index)
    try:
        bftchan.handshake(s, cl, index, key)
    except bftchan.Refused as e:
        print('handshake %d under the key: %s' % (allowed + 1, e))
        if e.status != 5:
            sys.exit('wanted status 5 (too many connections)')
    else:
        sys.exit('handshake %d under the key was accepted' % (allowed + 1))
    s = bftchan.connect(cl, index)
    bftchan.handshake(s, cl, index, other)
    print('another identity: accepted')
    held.append(s)
    for s in held:
        if not still_open(s):
            sys.exit('an accepted connection was closed')
elif case == 'slots':
    # slots KEY COUNT KEY COUNT LAST_KEY: COUNT handshakes under each KEY
    # are accepted; one more under LAST_KEY gets status 5.
    held = []
    for key, count in ((sys.argv[5], sys.argv[6]), (sys.argv[7],
                                                    sys.argv[8])):
        for k in range(int(count)):
            s = bftchan.connect(cl, index)
            bftchan.handshake(s, cl, index, bftchan.client_sk(key))
            held.append(s)
    print('%d handshakes accepted' % len(held))
    s = bftchan.connect(cl, index)
    try:
        bftchan.handshake(s, cl, index, bftchan.client_sk(sys.argv[9]))
    except bftchan.Refused as e:
        print('one more: %s' % e)
        if e.status != 5:
            sys.exit('wanted status 5 (too many connections)')
    else:
        sys.exit('a handshake over --max-conns was accepted')
elif case == 'preauth':
    # preauth ALLOWED EXTRA: of ALLOWED + EXTRA raw connections that
    # send nothing, the server closes the EXTRA oldest at once and keeps
    # the ALLOWED newest.
    allowed, extra = int(sys.argv[5]), int(sys.argv[6])
    socks = []
    for _ in range(allowed + extra):
        socks.append(bftchan.connect(cl, index))
        time.sleep(0.05)
    for k, s in enumerate(socks[:extra]):
        t0 = time.monotonic()
        if still_open(s, wait=3):
            sys.exit('old connection %d stayed open' % (k + 1))
        print('old connection %d: closed after %.2f s'
              % (k + 1, time.monotonic() - t0))
    for k, s in enumerate(socks[extra:]):
        if not still_open(s, wait=0.1):
            sys.exit('new connection %d was closed' % (k + 1))
    print('the %d newest connections still open' % allowed)
elif case == 'hellos':
    # hellos NAME COUNT OUT CMD...: COUNT connections each send a client
    # hello with NAME's public key from bftblk.conf (what anyone can
    # know) and never the finish; while they are held, CMD runs with its
    # output in OUT.  Fails when a hello was refused, CMD failed or did
    # not end within 60 s, or a held connection closed meanwhile.
    name, count, out = sys.argv[5], int(sys.argv[6]), sys.argv[7]
    pk = bytes.fromhex(
        bftchan.read_kv(sys.argv[2])['client.' + name].split()[1])
    bad, held = [], []
    for k in range(count):
        s = bftchan.connect(cl, index)
        _, eph_pk = bftchan.keypair()
        s.sendall(b'BFTC' + bytes([bftchan.VERSION, cl.mode,
                                   bftchan.CIPHERS, index]) +
                  cl.cluster_id + pk + eph_pk)
        sh = bftchan.recv_exact(s, bftchan.SHELLO_LEN)
        st = sh[5]
        print('hello %d with the public key of %s, no finish: status %d '
              '(%s)' % (k + 1, name, st, bftchan.STATUS.get(st, '?')))
        if st != 0:
            bad.append('hello %d refused with status %d' % (k + 1, st))
        else:
            held.append((k, s))
    t0 = time.monotonic()
    with open(out, 'w') as f:
        try:
            rc = subprocess.run(sys.argv[8:], stdout=f,
                                stderr=subprocess.STDOUT,
                                timeout=60).returncode
        except subprocess.TimeoutExpired:
            rc = 'timed out'
    print('%s while %d hellos were held: exit %s after %.2f s'
          % (os.path.basename(sys.argv[8]), count, rc,
             time.monotonic() - t0))
    if rc != 0:
        bad.append('%s: exit %s' % (sys.argv[8], rc))
    for k, s in held:
        if not still_open(s, wait=0.1):
            bad.append('held hello %d was closed before the end' % (k + 1))
    if bad:
        sys.exit('; '.join(bad))
    print('%d unfinished hellos held open throughout' % count)
else:
    sys.exit('unknown case ' + case)
EOF
conns()
{
	python3 "$conns" "$SRCDIR/tests/tools" "$CONF" "$VICTIM" "$@"
}
# drained WHAT: server 0 has seen the test's connections close; only
# nbdkit's is left.
drained()
{
	local deadline=$((SECONDS + 10))
	until [ "$(ss -Htn state established "( sport = :$((CLUSTER_BASE_PORT +
	    VICTIM)) )" | wc -l)" -le 1 ]; do
		[ "$SECONDS" -lt "$deadline" ] ||
		    fail "$1: server-$VICTIM kept the closed connections"
		sleep 0.2
	done
}

log "1. --max-client-conns $MAX_CLIENT_CONNS (nbdkit holds one)"
offset=$(stat -c %s "$vlog")
conns client-conns "$CLUSTER_DIR/client.key" $((MAX_CLIENT_CONNS - 1)) \
    "$CLUSTER_DIR/other.key" || fail "--max-client-conns not enforced"
wait_vlog "$offset" "refused: too many connections for this client: client client has $MAX_CLIENT_CONNS (--max-client-conns)" \
    "max-client-conns"
io_check max-client-conns
drained max-client-conns

log "2. $((MAX_CLIENT_CONNS + 1)) hellos with client's public key, never finished"
offset=$(stat -c %s "$vlog")
out=$TESTDIR/log/probe-hellos.log
rc=0
conns hellos client $((MAX_CLIENT_CONNS + 1)) "$out" \
    "$TC" probe --config "$CONF" --keys "$CLUSTER_DIR/client.key" \
    --servers "$VICTIM" --block 0 || rc=$?
sed 's/^/  probe: /' "$out" >&2
grep -q "channel refused" "$out" &&
    fail "hellos never finished locked client.key out:" \
    "$(grep -m1 "channel refused" "$out")"
for op in CLOCK COLLECT; do
	grep -q "^server $VICTIM: $op status 0 " "$out" ||
	    fail "client.key's probe got no ok $op while the hellos were held"
done
[ "$rc" -eq 0 ] || fail "the unfinished hellos were not all held (see above)"
tail -c "+$((offset + 1))" "$vlog" | grep "too many connections" &&
    fail "server-$VICTIM counted hellos without a finish against client"
log "client.key got in past $((MAX_CLIENT_CONNS + 1)) unfinished hellos"
drained "unfinished hellos"
io_check "unfinished hellos"

log "3. --max-conns $MAX_CONNS (nbdkit holds one)"
offset=$(stat -c %s "$vlog")
conns slots "$CLUSTER_DIR/client.key" $((MAX_CLIENT_CONNS - 1)) \
    "$CLUSTER_DIR/other.key" $((MAX_CONNS - MAX_CLIENT_CONNS)) \
    "$CLUSTER_DIR/stutterer.key" || fail "--max-conns not enforced"
wait_vlog "$offset" "refused: $MAX_CONNS connections open (--max-conns)" \
    max-conns
drained max-conns
log "3b. --max-preauth-per-addr $MAX_PREAUTH_PER_ADDR"
offset=$(stat -c %s "$vlog")
conns preauth "$MAX_PREAUTH_PER_ADDR" 2 ||
    fail "--max-preauth-per-addr not enforced"
wait_vlog "$offset" "the oldest of $MAX_PREAUTH_PER_ADDR (--max-preauth-per-addr)" \
    max-preauth-per-addr
# The held connections are gone once the server has seen them close.
drained max-conns
io_check max-conns

log "4. --max-client-stores $MAX_STORES, --client-store-window $STORE_WINDOW_MS"
stutter()
{
	local name=$1 rc=0
	shift
	"$TC" stutter --config "$CONF" --keys "$CLUSTER_DIR/stutterer.key" \
	    --block 50 --servers "$VICTIM" --data-seed "$name" "$@" \
	    >"$TESTDIR/log/stutter-$name.log" 2>&1 || rc=$?
	sed "s/^/  $name: /" "$TESTDIR/log/stutter-$name.log" >&2
	STUTTER_RC=$rc
}
ms()
{
	echo $(($(date +%s%N) / 1000000))
}
offset=$(stat -c %s "$vlog")
stutter fill --count "$MAX_STORES" --complete-last
[ "$STUTTER_RC" -eq 2 ] && grep -q "server $VICTIM: accepted $MAX_STORES ebusy 0 other 0" \
    "$TESTDIR/log/stutter-fill.log" &&
    grep -q "server $VICTIM: COMPLETE of the last write: ok" \
    "$TESTDIR/log/stutter-fill.log" ||
    fail "the first $MAX_STORES STOREs and the COMPLETE were not all taken"
t0=$(ms)
stutter over --count $((MAX_STORES + 4))
took=$(($(ms) - t0))
[ "$STUTTER_RC" -eq 0 ] && grep -q "server $VICTIM: accepted $MAX_STORES ebusy 4 other 0" \
    "$TESTDIR/log/stutter-over.log" ||
    fail "wanted $MAX_STORES STOREs taken (the completed ones retired) and 4 refused with EBUSY (in $took ms; the window is $STORE_WINDOW_MS ms)"
wait_vlog "$offset" "client stutterer has $MAX_STORES STOREs waiting above lc (--max-client-stores): refused" \
    max-client-stores
stutter still --count 1
took=$(($(ms) - t0))
[ "$STUTTER_RC" -eq 0 ] && grep -q "server $VICTIM: accepted 0 ebusy 1 other 0" \
    "$TESTDIR/log/stutter-still.log" ||
    fail "a STORE $took ms after the first of the $MAX_STORES was not refused with EBUSY (the window is $STORE_WINDOW_MS ms)"
# Every STORE the stutterer left above lc is now older than the window.
t1=$(ms)
log "waiting out --client-store-window $STORE_WINDOW_MS ms"
sleep $((STORE_WINDOW_MS / 1000 + 1))
offset=$(stat -c %s "$vlog")
stutter after --count 1
[ "$STUTTER_RC" -eq 2 ] && grep -q "server $VICTIM: accepted 1 ebusy 0 other 0" \
    "$TESTDIR/log/stutter-after.log" ||
    fail "the stutterer's STORE $(($(ms) - t1)) ms after its last was refused: the $MAX_STORES left above lc still count past --client-store-window $STORE_WINDOW_MS"
tail -c "+$((offset + 1))" "$vlog" | grep "STOREs waiting above lc" &&
    fail "server-$VICTIM logged a refusal after the window"
log "past the window the stutterer's next STORE was taken"
io_check max-client-stores
# The bound is per client: nbdkit's STOREs are still taken.  Not on
# block 50 itself: the stutterer COMPLETEs there at one server only,
# which no correct writer does (it waits for n-t STORE acks first).  A
# reader's write-back can spread that candidate to every server while
# only one holds its fragment, so the block cannot be read until it is
# written again with a higher timestamp; the fault model trusts writers.
nbdsh_run nbd "$py
h.pwrite(pattern(51), 51 * BS)
if h.pread(BS, 51 * BS) != pattern(51):
    raise AssertionError('block 51 differs')
print('nbdkit wrote block 51 beside the stutterer')
" || fail "nbdkit cannot write beside the stutterer"
grep -q "client client has .* STOREs waiting" "$vlog" &&
    fail "server-$VICTIM refused nbdkit's STOREs for the stutterer's"

log "5. --max-inflight $MAX_INFLIGHT"
rss()
{
	awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"
}
rss0=$(rss)
offset=$(stat -c %s "$vlog")
out=$TESTDIR/log/pipeline.log
: >"$out"
"$TC" pipeline --config "$CONF" --keys "$CLUSTER_DIR/client.key" --block 0 \
    --servers "$VICTIM" --count 3000 --hold 4 >"$out" 2>&1 &
ppid=$!
_track "$ppid" pipeline
deadline=$((SECONDS + 30))
until grep -q "^holding" "$out"; do
	_alive "$ppid" || { cat "$out" >&2; fail "pipeline exited early"; }
	[ "$SECONDS" -lt "$deadline" ] || fail "pipeline never held"
	sleep 0.2
done
sleep 1
rss1=$(rss)
log "server-$VICTIM VmRSS ${rss0} kB before, ${rss1} kB with the client" \
    "holding 3000 FILTERs"
wait_vlog "$offset" "replies queued, pausing reads" max-inflight
queued=$(tail -c "+$((offset + 1))" "$vlog" |
    sed -n 's/.* \([0-9]*\) replies queued, pausing reads.*/\1/p' | sort -n |
    tail -1)
[ -n "$queued" ] && [ "$queued" -le "$MAX_INFLIGHT" ] ||
    fail "server-$VICTIM paused with ${queued:-?} replies queued, over $MAX_INFLIGHT"
[ $((rss1 - rss0)) -lt "$RSS_MAX_KB" ] ||
    fail "server-$VICTIM grew by $((rss1 - rss0)) kB while the client held"
_reap "$ppid"
_forget_pid "$ppid"
cat "$out" >&2
[ "$_STATUS" -eq 0 ] && grep -q "^got 3000 replies of 3000, 0 out of order" \
    "$out" || fail "pipeline: exit $_STATUS, not every reply came back"
io_check max-inflight

log "SIGKILL to server-1: server-$VICTIM must now take part in every quorum"
server_kill 1 KILL
io_check "server 1 down"
log "ok"
