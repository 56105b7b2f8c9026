#!/bin/bash
# Makes the seed corpora of the fuzz harnesses from real traffic:
# starts a t=1 cluster of 64 blocks (the geometry of fuzz_handler) whose
# servers record every frame body they receive (--record-frames, so they
# are the test build build/tests/bftblk-server-test), runs a
# short workload through nbdkit (writes whole and partial blocks,
# overwrites, reads, flushes, a server killed and back, so reads write
# back) plus a crashed writer and forged write-backs from
# bftblk-testclient, then cuts the recordings into seeds:
#
#   corpus/fuzz_handler/  [flags 0x0f] HELLO + runs of consecutive frames
#                         one server received; and lease-seeds.py's
#                         takeovers (a new claim, then an old holder's
#                         writes)
#   corpus/fuzz_decode/   [type selector] [array header] [body after type]
#                         for requests and for the handler's replies to them
#   corpus/fuzz_frame/    [n selector 0] one to three whole frames
#
# Replies are what build/tests/test_fuzz_handler answers to the recorded
# requests (FUZZ_DUMP_REPLIES), as the server itself would.  Seeds are
# deduplicated by their sequence of message types, and the big ones (a
# STORE or FILTER_ACK carries a 32 KiB fragment) are capped, so the
# corpora stay small.  Needs `make` first; replaces tests/fuzz/corpus/.
#
#   tests/fuzz/make-seeds.sh
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"

TC=$BUILD/tests/bftblk-testclient
HARNESS=$BUILD/tests/test_fuzz_handler
for f in "$TC" "$HARNESS" "$TEST_SERVER"; do
	[ -x "$f" ] || fail "$f is missing: run make first"
done
REC=$TESTDIR/rec
OUT=$SRCDIR/tests/fuzz/corpus
export BFTBLK_TEST_BYZANTINE=1	# --record-frames is test-only

# Every server records into a directory of its own: lib.sh's
# server_start is wrapped to add the option, so cluster_start and
# restarts both use it.
eval "$(declare -f server_start | sed '1s/server_start/_lib_server_start/')"
server_start()
{
	local d=$REC/server-$1
	# A restarted server numbers its files from 0 again.
	[ -e "$d" ] && d=$d.$SECONDS
	mkdir -p "$d"
	SERVER_BIN=$TEST_SERVER SERVER_ARGS="--record-frames $d" \
	    _lib_server_start "$1"
}

CLUSTER_SIZE=4M cluster_start 1
CONF=$CLUSTER_DIR/bftblk.conf
KEYS=$CLUSTER_DIR/client.key
nbdkit_start nbd

log "workload: writes, overwrites, reads, flush"
nbdsh_run nbd "
import random
BS = 65536
rng = random.Random(5)
for b in range(4):
    h.pwrite(rng.randbytes(BS), b * BS)
h.pwrite(rng.randbytes(4096), 4 * BS + 1000)      # read-modify-write
h.pwrite(rng.randbytes(7000), 6 * BS - 3000)      # across two blocks
for i in range(2):
    h.pwrite(rng.randbytes(BS), 0)                # overwrites
h.pread(3 * BS, 0)
h.pread(BS, 20 * BS)                              # never written
h.flush()
"

log "a writer that stops after STORE, one whose COMPLETE reaches server 0"
"$TC" partial-write --config "$CONF" --keys "$KEYS" --block 10 \
    --data-seed a --stop-after store >"$TESTDIR/log/tc.log" 2>&1 ||
    fail "partial-write 10"
"$TC" partial-write --config "$CONF" --keys "$KEYS" --block 11 \
    --data-seed b --stop-after complete --complete-to 0 \
    >>"$TESTDIR/log/tc.log" 2>&1 || fail "partial-write 11"
log "forged write-backs"
for b in 0 11; do
	"$TC" forge-filter --config "$CONF" --keys "$KEYS" --block "$b" \
	    >>"$TESTDIR/log/tc.log" 2>&1 || fail "forge-filter $b"
	"$TC" forge-repair --config "$CONF" --keys "$KEYS" --block "$b" \
	    >>"$TESTDIR/log/tc.log" 2>&1 || fail "forge-repair $b"
done
nbdsh_run nbd "
h.pread(2 * 65536, 10 * 65536)                    # write-back of 11
"

log "server 3 misses writes, then readers bring it up to date"
server_kill 3
nbdsh_run nbd "
import random
rng = random.Random(6)
h.pwrite(rng.randbytes(65536), 12 * 65536)
h.pwrite(rng.randbytes(65536), 1 * 65536)
h.flush()
"
server_start 3
wait_connected 3
nbdsh_run nbd "
h.pread(65536, 12 * 65536)
h.pread(65536, 1 * 65536)
h.pread(65536, 11 * 65536)
h.flush()
"
nbdkit_stop nbd
for i in 0 1 2 3; do
	server_kill "$i"
done
log "recorded: $(find "$REC" -type f | wc -l) frames"

rm -rf "$OUT"
mkdir -p "$OUT"/fuzz_handler "$OUT"/fuzz_decode "$OUT"/fuzz_frame \
    "$TESTDIR/replies"
python3 - "$REC" "$OUT" handler <<'EOF'
import hashlib, os, struct, sys
rec, out, what = sys.argv[1:4]

def frames(d):
    return [open(os.path.join(d, f), 'rb').read() for f in sorted(os.listdir(d))]

def rtype(body):  # [fixarray, type as fixint or uint8 (0xcc t)]
    return body[2] if body[1] == 0xcc else body[1]

def frame(body):
    return struct.pack('>I', len(body)) + body

def save(sub, data):
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(out, sub, name), 'wb') as f:
        f.write(data)

# Server 1's sequence (the harness is server 1), cut into runs of up to
# eight frames that each start with the connection's last HELLO.
seq = frames(os.path.join(rec, 'server-1'))
seen, total, hello, run = set(), 0, None, []
def flush_run():
    global total
    if not run or hello is None:
        return
    sig = tuple(rtype(b) for b in run)
    data = bytes([0x0f]) + frame(hello) + b''.join(frame(b) for b in run)
    if sig in seen or len(data) > 130000 or total + len(data) > 900000:
        return
    seen.add(sig)
    total += len(data)
    save('fuzz_handler', data)
for b in seq:
    if rtype(b) == 1:
        flush_run()
        hello, run = b, []
        continue
    run.append(b)
    if len(run) == 8:
        flush_run()
        run = []
flush_run()
EOF
log "replies: the handler's answers to the handler seeds"
FUZZ_DUMP_REPLIES=$TESTDIR/replies "$HARNESS" "$OUT/fuzz_handler" >/dev/null ||
    fail "test_fuzz_handler on the new seeds"
python3 - "$REC" "$OUT" "$TESTDIR/replies" <<'EOF'
import hashlib, os, struct, sys
rec, out, replies = sys.argv[1:4]

def frames(d):
    return [open(os.path.join(d, f), 'rb').read() for f in sorted(os.listdir(d))]

def rtype(body):
    return body[2] if body[1] == 0xcc else body[1]

def frame(body):
    return struct.pack('>I', len(body)) + body

def save(sub, data):
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(out, sub, name), 'wb') as f:
        f.write(data)

reqs = frames(os.path.join(rec, 'server-1'))
reps = frames(replies)
# fuzz_decode: per type, the six smallest distinct bodies and the biggest.
by_type = {}
for b in reqs + reps:
    by_type.setdefault(rtype(b), set()).add(b)
for t, bodies in sorted(by_type.items()):
    bodies = sorted(bodies, key=len)
    pick = bodies[:6] + ([bodies[-1]] if len(bodies) > 6 else [])
    # fuzz_decode's selector: HELLO..FLUSH 0..7, their ACKs 8..15,
    # SUMMARY..STATUS 16..18, their ACKs 19..21; from SCRUB (12) on,
    # each request and its ACK side by side from 22.
    base = t & 0x7f
    if base <= 8:
        ti = base - 1 + (8 if t & 0x80 else 0)
    elif base <= 11:
        ti = base - 9 + (19 if t & 0x80 else 16)
    else:
        ti = 22 + 2 * (base - 12) + (1 if t & 0x80 else 0)
    hl = 2 if t & 0x80 else 1
    for b in pick:
        save('fuzz_decode', bytes([ti]) + b[:1] + b[1 + hl:])
# fuzz_frame: runs of one to three frames, new type sequences only,
# smallest first so that every type fits in before the big ones.
runs = [src[i:i + k] for src in (reqs, reps) for k in (1, 2, 3)
        for i in range(len(src) - k + 1)]
seen, total = set(), 0
for run in sorted(runs, key=lambda r: sum(map(len, r))):
    sig = tuple(rtype(b) for b in run)
    data = bytes([0]) + b''.join(frame(b) for b in run)
    if sig in seen or total + len(data) > 500000:
        continue
    seen.add(sig)
    total += len(data)
    save('fuzz_frame', data)
EOF
# No workload stores under an old lease generation: written by hand.
python3 "$SRCDIR/tests/fuzz/lease-seeds.py" "$OUT/fuzz_handler" >/dev/null ||
    fail "lease-seeds.py failed"
for h in fuzz_handler fuzz_decode fuzz_frame; do
	log "$h: $(find "$OUT/$h" -type f | wc -l) seeds," \
	    "$(du -sb "$OUT/$h" | cut -f1) bytes"
done
