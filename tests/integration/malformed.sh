#!/bin/bash
# Malformed input on a server's TCP port must cost the sender its
# connection and nothing else (t=1).
#
# The cluster runs with channel = plain, so that after the channel
# handshake (done in pure Python by tests/tools/bftchan.py with the
# client key's chan-key) hand-made frames reach the decoder.  Plain
# python3 sockets connect to server 0 and send, one case at a time:
#
# at the handshake: 88 bytes of garbage as the client hello, 64 KiB of
# garbage, an unknown client key, a hello naming another cluster and
# another server index, a hello asking for aead from a plain server, a
# correct hello followed by a wrong finish tag, and a client that
# connects and sends nothing (server 0 runs with --handshake-timeout
# 2000: it must close within a few seconds, not at once);
#
# after the handshake: a length prefix of 0xffffffff, a frame of the
# right length holding garbage msgpack, a well-formed STORE before
# HELLO, a HELLO with the wrong cluster id, a reply frame, a nesting
# bomb, an array claiming 2^32-1 elements, and after a valid HELLO an
# unauthenticated STORE, a STORE beyond the disk and a STORE with a
# short MAC vector;
#
# finally a flood of connections that each send half a hello, or half a
# frame (some after a whole handshake), and disconnect.  Messages are
# msgpack encoded by hand following common/wire.h.  After each case: the
# server refused or closed where it must (and answered where it must),
# logged the reason, is still alive, and nbdkit I/O still reads back
# byte for byte.  At the end no connection from the flood is left open
# on the server, bftblk-testclient peek sees the plaintext of this
# channel = plain cluster on the wire (the control for channel-tamper's
# check that aead frames hold none), and with server 1 killed (so server
# 0 must take part in every quorum) all data still reads back.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VICTIM=0
HS_TIMEOUT_MS=2000

export CLUSTER_CHANNEL=plain
# -v: a server logs one line for the first of a run of refused or failed
# handshakes, then a summary every 10 s; with -v each has its own line,
# and the cases look for their reasons there.
export SERVER_ARGS_0="-v --handshake-timeout $HS_TIMEOUT_MS"
cluster_start 1
grep -q '^channel *= *plain' "$CLUSTER_DIR/bftblk.conf" ||
    fail "keygen --channel plain did not write channel = plain"
nbdkit_start nbd

port=$((CLUSTER_BASE_PORT + VICTIM))
pid=${SERVER_PID[$VICTIM]}
vlog=$TESTDIR/log/server-$VICTIM.log
cid=$(sed -n 's/^cluster-id *= *//p' "$CLUSTER_DIR/bftblk.conf")
size=$(sed -n 's/^size *= *//p' "$CLUSTER_DIR/bftblk.conf")
if [ -z "$cid" ] || [ -z "$size" ]; then
	fail "cannot read cluster-id and size from $CLUSTER_DIR/bftblk.conf"
fi

attack=$TESTDIR/attack.py
cat >"$attack" <<'EOF'
# attack.py TOOLS CONF KEY NBLOCKS INDEX CASE: sends one malformed input
# to a bftblk server (after the channel handshake unless CASE is about
# the handshake) and checks its answer; exits non-zero when the server
# misbehaves.
import hashlib, os, socket, struct, sys, time

sys.path.insert(0, sys.argv[1])
import bftchan

cl = bftchan.Cluster(sys.argv[2])
sk = bftchan.client_sk(sys.argv[3])
nblocks, index = int(sys.argv[4]), int(sys.argv[5])
case = sys.argv[6]
n, t, cid = cl.n, cl.t, cl.cluster_id
BS = 65536
# The unknown client of case unknown-key; the script greps its print.
UNKNOWN_SK = hashlib.blake2b(b'malformed.sh unknown key',
                             digest_size=32).digest()

def uint(v):
    if v < 0x80:
        return bytes([v])
    for tag, fmt, lim in ((0xcc, '>B', 1 << 8), (0xcd, '>H', 1 << 16),
                          (0xce, '>I', 1 << 32), (0xcf, '>Q', 1 << 64)):
        if v < lim:
            return bytes([tag]) + struct.pack(fmt, v)
    raise ValueError(v)

def binv(b):
    if len(b) < 1 << 8:
        return b'\xc4' + struct.pack('>B', len(b)) + b
    if len(b) < 1 << 16:
        return b'\xc5' + struct.pack('>H', len(b)) + b
    return b'\xc6' + struct.pack('>I', len(b)) + b

def arr(items):
    assert len(items) < 16
    return bytes([0x90 | len(items)]) + b''.join(items)

def frame(body):
    return struct.pack('>I', len(body)) + body

def hello(cluster_id, idx=index):
    return frame(arr([uint(1), uint(1), uint(0), binv(cluster_id), uint(n),
                      uint(t), uint(BS), uint(nblocks), uint(idx)]))

def store(block, vec_len=None):
    vec_len = n * 16 if vec_len is None else vec_len
    ts = arr([uint(7), uint(12345), binv(os.urandom(16))])
    return frame(arr([uint(3), uint(2), uint(block), ts, binv(os.urandom(32)),
                      binv(os.urandom(vec_len)), binv(os.urandom(n * 32)),
                      binv(os.urandom(1000))]))

def decode(b, pos=0):
    """The subset of msgpack the status replies use."""
    c = b[pos]
    if c < 0x80:
        return c, pos + 1
    if 0x90 <= c <= 0x9f:
        out, pos = [], pos + 1
        for _ in range(c & 0x0f):
            v, pos = decode(b, pos)
            out.append(v)
        return out, pos
    if c >= 0xe0:
        return c - 0x100, pos + 1
    for tag, fmt in ((0xcc, '>B'), (0xcd, '>H'), (0xce, '>I'), (0xcf, '>Q'),
                     (0xd0, '>b'), (0xd1, '>h'), (0xd2, '>i'), (0xd3, '>q')):
        if c == tag:
            w = struct.calcsize(fmt)
            return struct.unpack(fmt, b[pos + 1:pos + 1 + w])[0], pos + 1 + w
    raise ValueError('unexpected msgpack byte %#x' % c)

def raw_connect():
    return bftchan.connect(cl, index)

def connect():
    """A connection through the handshake, ready for frames."""
    s = raw_connect()
    bftchan.handshake(s, cl, index, sk)
    return s

def refused(status, **kw):
    """A handshake the server must refuse with status."""
    s = raw_connect()
    try:
        bftchan.handshake(s, cl, index, kw.pop('key', sk), **kw)
    except bftchan.Refused as e:
        print('  %s' % e)
        if e.status != status:
            raise AssertionError('wanted status %d' % status)
        expect_close(s, case)
        return
    raise AssertionError('the server accepted the handshake')

def recv_exact(s, k):
    buf = b''
    while len(buf) < k:
        chunk = s.recv(k - len(buf))
        if not chunk:
            raise AssertionError('connection closed after %d of %d bytes'
                                 % (len(buf), k))
        buf += chunk
    return buf

def reply(s, want_type, want_status):
    (blen,) = struct.unpack('>I', recv_exact(s, 4))
    if blen > 1 << 20:
        raise AssertionError('reply length %d' % blen)
    msg, _ = decode(recv_exact(s, blen))
    print('  reply %r' % (msg,))
    if msg[0] != want_type or msg[3] != want_status:
        raise AssertionError('wanted type %#x status %d, got %r'
                             % (want_type, want_status, msg))

def expect_close(s, what):
    """The server must close the connection (EOF or reset) by itself."""
    try:
        while True:
            data = s.recv(65536)
            if not data:
                break
            print('  (server sent %d bytes first)' % len(data))
    except ConnectionResetError:
        pass
    except socket.timeout:
        raise AssertionError('%s: server kept the connection open for 10s'
                             % what)
    print('  server closed the connection')
    s.close()

def send(s, data):
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        print('  (server closed while we were sending)')

print('case %s:' % case)
if case == 'bad-hello':
    print('  sending 88 bytes of random bytes as the client hello')
    s = raw_connect()
    send(s, os.urandom(bftchan.CHELLO_LEN))
    sh = bftchan.recv_exact(s, bftchan.SHELLO_LEN)
    print('  server hello %s' % sh[:8].hex())
    if sh[:4] != b'BFTS' or sh[5] != 6:
        raise AssertionError('wanted a refusal with status 6 (malformed '
                             'client hello)')
    expect_close(s, case)
elif case == 'garbage':
    g = os.urandom(64 * 1024)
    print('  sending 64 KiB of random bytes (prefix %#010x), then EOF'
          % struct.unpack('>I', g[:4]))
    s = raw_connect()
    send(s, g)
    try:
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    expect_close(s, case)
elif case == 'unknown-key':
    print('  handshake as a client not in bftblk.conf (key %s...)'
          % bftchan.fingerprint(bftchan.public_key(UNKNOWN_SK)))
    refused(1, key=UNKNOWN_SK)
elif case == 'hello-wrong-cluster':
    print('  client hello naming another cluster id')
    refused(2, cluster_id=bytes(b ^ 0xa5 for b in cid))
    print('  client hello naming server %d' % ((index + 1) % n))
    s = raw_connect()
    try:
        bftchan.handshake(s, cl, index, sk)
    finally:
        s.close()
    s = raw_connect()
    eph_sk, eph_pk = bftchan.keypair()
    send(s, bftchan.client_hello(cl, (index + 1) % n, sk, eph_pk))
    sh = bftchan.recv_exact(s, bftchan.SHELLO_LEN)
    if sh[5] != 2:
        raise AssertionError('wrong index: status %d, wanted 2' % sh[5])
    expect_close(s, case)
elif case == 'hello-wrong-mode':
    print('  client hello asking for aead from a plain server')
    refused(3, mode=bftchan.MODES['aead'])
elif case == 'bad-finish':
    print('  correct client hello, finish tag with one bit flipped')
    s = raw_connect()
    bftchan.handshake(s, cl, index, sk, bad_finish=True)
    send(s, hello(cid))
    expect_close(s, case)
elif case == 'silent':
    print('  connecting and sending nothing')
    s = raw_connect()
    s.settimeout(15)
    t0 = time.monotonic()
    expect_close(s, case)
    took = time.monotonic() - t0
    print('  closed after %.1f s' % took)
    if not 1.5 <= took <= 6:
        raise AssertionError('closed after %.1f s, wanted the 2 s '
                             'handshake timeout' % took)
elif case == 'huge-length':
    print('  sending a length prefix of 0xffffffff and 100 bytes')
    s = connect()
    send(s, b'\xff\xff\xff\xff' + os.urandom(100))
    expect_close(s, case)
elif case == 'bad-msgpack':
    body = os.urandom(200)
    print('  sending a 200-byte frame of random bytes (first %#04x)'
          % body[0])
    s = connect()
    send(s, frame(body))
    expect_close(s, case)
elif case == 'store-before-hello':
    print('  sending a well-formed STORE as the first frame')
    s = connect()
    send(s, store(1))
    expect_close(s, case)
elif case == 'wrong-cluster':
    other = bytes(b ^ 0x5a for b in cid)
    print('  sending HELLO with cluster id %s' % other.hex())
    s = connect()
    send(s, hello(other))
    reply(s, 0x81, 7)           # HELLO_ACK, BFT_ECLUSTER
    expect_close(s, case)
elif case == 'reply-frame':
    print('  sending a HELLO_ACK to the server')
    s = connect()
    send(s, frame(arr([uint(0x81), uint(1), uint(0), uint(0)])))
    expect_close(s, case)
elif case == 'deep-nesting':
    print('  sending 1000 nested arrays')
    s = connect()
    send(s, frame(b'\x91' * 1000 + b'\x00'))
    expect_close(s, case)
elif case == 'huge-array':
    print('  sending an array header claiming 2^32-1 elements')
    s = connect()
    send(s, frame(b'\xdd\xff\xff\xff\xff' + b'\x00' * 16))
    expect_close(s, case)
elif case == 'after-hello':
    print('  valid HELLO; STORE with a forged MAC; STORE beyond the disk;'
          ' STORE with a short vec')
    s = connect()
    send(s, hello(cid))
    reply(s, 0x81, 0)
    send(s, store(3))
    reply(s, 0x83, 2)           # BFT_EAUTH: connection stays open
    send(s, store(nblocks + 5))
    reply(s, 0x83, 3)           # BFT_ERANGE
    send(s, store(3, vec_len=n * 16 - 1))
    expect_close(s, case)
elif case == 'half-frames':
    # 200 connections: under the server's default --max-conns (256) with
    # nbdkit's, and at most 10 through the handshake under this one key
    # (--max-client-conns is 16 by default).
    conns, errors = [], 0
    for i in range(200):
        try:
            if i % 4 == 3 and i < 40:
                s = connect()               # then half a frame
                s.sendall(struct.pack('>I', 1000) + os.urandom(500))
            else:
                s = raw_connect()
                s.sendall((b'\x00\x00',         # half a hello
                           os.urandom(40),      # half a hello
                           os.urandom(88) + b'\x00\x00',
                           struct.pack('>I', 1000) + os.urandom(500))[i % 4])
        except (OSError, bftchan.Refused, AssertionError) as e:
            errors += 1
            print('  connection %d: %s' % (i, e))
            continue
        conns.append(s)
    print('  opened 200 connections, each sent half a hello or half a '
          'frame (10 after a handshake); closing all')
    for s in conns:
        s.close()
    if errors:
        raise AssertionError('%d connections failed' % errors)
else:
    sys.exit('unknown case %s' % case)
EOF

seed=$RANDOM$RANDOM
py="
import random
BS = 65536
NB = 32

def pattern(i, n):
    return random.Random('$seed-%d' % i).randbytes(n)

def check(upto, what):
    # Block i < upto holds pattern i; the first 7000 bytes of block NB
    # were written across the boundary at the start.
    want = b''.join(pattern(i, BS) for i in range(upto))
    want += bytes((NB - upto) * BS)
    got = h.pread(NB * BS, 0)
    if got != want:
        bad = next(i for i in range(len(want)) if got[i] != want[i])
        raise AssertionError('%s: byte %d (block %d) differs'
                             % (what, bad, bad // BS))
    if h.pread(7000, NB * BS - 3000) != want[-3000:] + pattern(99, 4000):
        raise AssertionError('%s: unaligned read differs' % what)
    print('%s: blocks 0-%d match byte for byte' % (what, upto - 1))
"

nbdsh_run nbd "$py
h.pwrite(bytes(3000) + pattern(99, 4000), NB * BS - 3000)
h.pwrite(pattern(0, BS), 0)
check(1, 'before the attacks')
"

# run_case NAME LOG-PATTERN: runs one attack, then the checks.
nblock=1
run_case()
{
	local name=$1 pattern=$2 offset
	offset=$(stat -c %s "$vlog")
	python3 "$attack" "$SRCDIR/tests/tools" "$CLUSTER_DIR/bftblk.conf" \
	    "$CLUSTER_DIR/client.key" $((size / 65536)) "$VICTIM" "$name" ||
	    fail "case $name: the server did not react as it must"
	if ! kill -0 "$pid" 2>/dev/null || ! _alive "$pid"; then
		fail "case $name: server-$VICTIM (pid $pid) died"
	fi
	if [ -n "$pattern" ]; then
		# The log line may trail the close by a moment.
		local deadline=$((SECONDS + 5))
		until [[ "$(tail -c "+$((offset + 1))" "$vlog")" == *"$pattern"* ]]; do
			[ "$SECONDS" -lt "$deadline" ] ||
			    fail "case $name: no \"$pattern\" in $vlog"
			sleep 0.1
		done
		log "case $name: server logged:" \
		    "$(tail -c "+$((offset + 1))" "$vlog" | grep -m1 -- "$pattern")"
	fi
	nbdsh_run nbd "$py
h.pwrite(pattern($nblock, BS), $nblock * BS)
check($((nblock + 1)), 'after $name')
" || fail "case $name: I/O through nbdkit failed"
	nblock=$((nblock + 1))
}

run_case bad-hello "refused: malformed client hello"
run_case garbage "refused: malformed client hello"
fp=$(python3 -c "
import hashlib, sys
sys.path.insert(0, '$SRCDIR/tests/tools')
import bftchan
sk = hashlib.blake2b(b'malformed.sh unknown key', digest_size=32).digest()
print(bftchan.fingerprint(bftchan.public_key(sk)))")
run_case unknown-key "refused: unknown client key (not in the server's bftblk.conf, or revoked) (key $fp...)"
run_case hello-wrong-cluster "refused: wrong cluster id or server index"
run_case hello-wrong-mode "refused: channel mode differs"
run_case bad-finish "closing: client failed to prove its key"
run_case silent "closing: no handshake and HELLO within $HS_TIMEOUT_MS ms"
run_case huge-length "closing: frame length beyond the limit"
run_case bad-msgpack "closing: malformed frame: "
run_case store-before-hello "closing: STORE before HELLO"
run_case wrong-cluster "HELLO mismatch: cluster-id"
grep -q "closing after the reply: " "$vlog" ||
    fail "no 'closing after the reply' line for the wrong cluster id"
run_case reply-frame "closing: a reply sent to the server"
run_case deep-nesting "closing: malformed frame: nesting deeper"
run_case huge-array "closing: malformed frame: array or map longer"
run_case after-hello "closing: malformed frame: STORE: vec length"
grep -q "bad MAC" "$vlog" || fail "the forged STORE's MAC was not logged"
run_case half-frames ""

# Every half-frame connection must be gone on the server's side too;
# what remains is nbdkit's.
deadline=$((SECONDS + 10))
while :; do
	left=$(ss -Htn state all exclude time-wait exclude listening \
	    "( sport = :$port )" | wc -l)
	[ "$left" -le 1 ] && break
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "server-$VICTIM still has $left connections after the flood"
	sleep 0.2
done
log "server-$VICTIM has $left connection(s) left after the flood (nbdkit's)"
log "server-$VICTIM logged $(grep -c "closing" "$vlog") closing lines"

# The control for channel-tamper.sh's peek: on a plain channel the
# fragment of block 0 must be visible on the wire (exit 3).
prc=0
"$BUILD/tests/bftblk-testclient" peek --config "$CLUSTER_DIR/bftblk.conf" \
    --keys "$CLUSTER_DIR/client.key" --block 0 --servers "$VICTIM" \
    >"$TESTDIR/log/peek.log" 2>&1 || prc=$?
cat "$TESTDIR/log/peek.log" >&2
[ "$prc" -eq 3 ] ||
    fail "peek on a plain channel: exit $prc, wanted 3 (plaintext seen)"

log "SIGKILL to server-1: server-$VICTIM must now take part in every quorum"
server_kill 1 KILL
nbdsh_run nbd "$py
h.pwrite(pattern($nblock, BS), $nblock * BS)
check($((nblock + 1)), 'server 1 down')
"
log "ok"
