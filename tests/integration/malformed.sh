#!/bin/bash
# Malformed input on a server's TCP port must cost the sender its
# connection and nothing else (t=1).
#
# Plain python3 sockets connect to server 0 and send, one case at a time:
# random garbage, a length prefix of 0xffffffff, a frame of the right
# length holding garbage msgpack, a well-formed STORE before HELLO, a
# HELLO with the wrong cluster id, a reply frame, a nesting bomb, an
# array claiming 2^32-1 elements, and after a valid HELLO an
# unauthenticated STORE, a STORE beyond the disk and a STORE with a
# short MAC vector; finally a flood of connections that each send half a
# frame and disconnect.  Messages are msgpack encoded by hand following
# common/wire.h.  After each case: the server closed the connection where
# it must (and answered where it must), logged a "closing" line with the
# reason, is still alive, and nbdkit I/O still reads back byte for byte.
# At the end no connection from the flood is left open on the server,
# and with server 1 killed (so server 0 must take part in every quorum)
# all data still reads back.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VICTIM=0

cluster_start 1
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
# attack.py PORT N T NBLOCKS INDEX CLUSTER_ID CASE: sends one malformed
# input to a bftblk server and checks its answer; exits non-zero when the
# server misbehaves.
import os, socket, struct, sys, time

port, n, t, nblocks, index = (int(x) for x in sys.argv[1:6])
cid = bytes.fromhex(sys.argv[6])
case = sys.argv[7]
BS = 65536

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

def connect():
    s = socket.create_connection(('127.0.0.1', port), timeout=10)
    s.settimeout(10)
    return s

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
if case == 'garbage':
    g = os.urandom(64 * 1024)
    print('  sending 64 KiB of random bytes (prefix %#010x), then EOF'
          % struct.unpack('>I', g[:4]))
    s = connect()
    send(s, g)
    try:
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    expect_close(s, case)
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
    conns = []
    for i in range(300):
        s = connect()
        if i % 3 == 0:
            s.sendall(b'\x00\x00')              # half a length prefix
        else:
            s.sendall(struct.pack('>I', 1000) + os.urandom(500))
        conns.append(s)
    print('  opened 300 connections, each sent half a frame; closing all')
    for s in conns:
        s.close()
else:
    sys.exit('unknown case %s' % case)
EOF

seed=$RANDOM$RANDOM
py="
import random
BS = 65536
NB = 16

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
	python3 "$attack" "$port" "$CLUSTER_N" "$CLUSTER_T" \
	    $((size / 65536)) "$VICTIM" "$cid" "$name" ||
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

run_case garbage ""
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

log "SIGKILL to server-1: server-$VICTIM must now take part in every quorum"
server_kill 1 KILL
nbdsh_run nbd "$py
h.pwrite(pattern($nblock, BS), $nblock * BS)
check($((nblock + 1)), 'server 1 down')
"
log "ok"
