#!/bin/bash
# Small writes and the block cache (lib/blockcache_int.h, write.c).
#
# 1. One writer: random writes of 1 byte to 12 KiB, most of them 4 KiB
#    and aligned, some across a block boundary, over 24 blocks, checked
#    byte for byte against a model after every batch; then 4 KiB writes
#    to distinct slots of the same blocks, 32 in flight at once (nbdkit
#    threads meeting on one block's range lock); then everything again
#    after restarting nbdkit, so it comes from the servers.
# 2. Two writers, a and b, on the same blocks, one request at a time,
#    the writer picked at random for each: each nbdkit's cache holds
#    values the other one has since overwritten, so a cached value used
#    without checking its timestamp loses the other writer's bytes
#    (the model catches it).  The block the other writer just wrote is
#    favoured, so this happens hundreds of times, and a's statistics
#    must show stale cache entries caught and read again.
# 3. The same two-writer run with cache=0: no hits, same bytes.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PY=${LIN_PYTHON:-/usr/bin/python3}
require_python_nbd "$PY"

export NBDKIT_ARGS="-v"
cluster_start 1

# The model and its checks, shared by every phase.  The model file
# carries the expected bytes of blocks 0..BLOCKS-1 across phases.
common='
import os, random, sys
import nbd
BS = 65536
BLOCKS = 24
MODEL = os.environ["MODEL"]
rng = random.Random(int(os.environ["SEED"]))

def connect(name):
    h = nbd.NBD()
    h.connect_uri("nbd+unix:///?socket=%s/%s.sock" % (os.environ["TESTDIR"], name))
    return h

def load():
    if os.path.exists(MODEL):
        return bytearray(open(MODEL, "rb").read())
    return bytearray(BLOCKS * BS)

def save(m):
    open(MODEL, "wb").write(bytes(m))

def verify(h, m, what):
    got = h.pread(BLOCKS * BS, 0)
    if got != bytes(m):
        bad = next(i for i in range(len(m)) if got[i] != m[i])
        raise SystemExit("%s: disk differs from the model first at byte %d "
                         "(block %d +%d)" % (what, bad, bad // BS, bad % BS))

def random_write(rng):
    """Mostly aligned 4 KiB; also odd sizes and block-crossing ones."""
    r = rng.random()
    if r < 0.6:
        off = rng.randrange(BLOCKS * BS // 4096) * 4096
        n = 4096
    elif r < 0.8:
        off = rng.randrange(BLOCKS * BS - 1)
        n = rng.randint(1, min(4096, BLOCKS * BS - off))
    else:
        b = rng.randrange(1, BLOCKS)
        off = b * BS - rng.randint(1, 6144)
        n = rng.randint(BS * b - off + 1, BS * b - off + 6144)
    return off, n
'

log "phase 1: one writer, random small writes against a model"
nbdkit_start a
MODEL=$TESTDIR/model SEED=$RANDOM TESTDIR=$TESTDIR "$PY" - <<EOF || fail "phase 1"
$common
h = connect("a")
m = load()
for batch in range(8):
    for i in range(40):
        off, n = random_write(rng)
        data = rng.randbytes(n)
        if rng.random() < 0.1:
            h.zero(n, off)
            data = bytes(n)
        else:
            h.pwrite(data, off)
        m[off:off + n] = data
    verify(h, m, "batch %d" % batch)

# 4 KiB writes to distinct slots of blocks 0-7, 32 in flight: nbdkit
# threads wait on each other's range locks on the same blocks.
slots = [b * BS + s * 4096 for b in range(8) for s in range(16)]
rng.shuffle(slots)
cookies = []
for off in slots:
    data = rng.randbytes(4096)
    m[off:off + 4096] = data
    while h.aio_in_flight() >= 32:
        h.poll(-1)
    cookies.append(h.aio_pwrite(data, off))
while h.aio_in_flight() > 0:
    h.poll(-1)
for c in cookies:
    h.aio_command_completed(c)
verify(h, m, "after concurrent writes")
h.flush()
save(m)
print("phase 1: %d bytes verified" % len(m))
EOF
nbdkit_stop a
grep -o 'partial writes: .*' "$TESTDIR/log/nbdkit-a.log" | tail -1 >&2
hits=$(grep -o 'partial writes: [0-9]* cache hits' \
    "$TESTDIR/log/nbdkit-a.log" | tail -1 | awk '{ print $3 }')
[ "${hits:-0}" -gt 100 ] ||
    fail "phase 1: only ${hits:-no} partial writes hit the cache"

log "phase 1: reading back through a new nbdkit"
nbdkit_start a
MODEL=$TESTDIR/model SEED=0 TESTDIR=$TESTDIR "$PY" - <<EOF || fail "read back"
$common
verify(connect("a"), load(), "after restart")
EOF

# two_writers SEED: alternates requests between nbdkit a and b at
# random, favouring the block the other one wrote last, verifying the
# block after every write and everything at the end.
two_writers()
{
	MODEL=$TESTDIR/model SEED=$1 TESTDIR=$TESTDIR "$PY" - <<EOF
$common
hs = {"a": connect("a"), "b": connect("b")}
m = load()
last = {"a": 0, "b": 0}
for i in range(400):
    w = rng.choice("ab")
    other = "b" if w == "a" else "a"
    if rng.random() < 0.7:
        # Into the block the other writer last wrote, elsewhere in it.
        off = last[other] * BS + rng.randrange(16) * 4096
        n = 4096
    else:
        off, n = random_write(rng)
    data = rng.randbytes(n)
    hs[w].pwrite(data, off)
    m[off:off + n] = data
    last[w] = off // BS
    b = off // BS
    # Read through the writer itself: a read through the other one
    # would refresh its cache and hide exactly what this tests.
    got = hs[w].pread(BS, b * BS)
    if got != bytes(m[b * BS:(b + 1) * BS]):
        bad = next(j for j in range(BS) if got[j] != m[b * BS + j])
        raise SystemExit("write %d (%s, %d bytes at %d): block %d differs "
                         "at +%d" % (i, w, n, off, b, bad))
for h in hs.values():
    verify(h, m, "end of two-writer run")
save(m)
print("two writers: 400 writes verified")
EOF
}

# stat_of NAME FIELD: from the last stats line of nbdkit NAME.
stat_of()
{
	grep -o 'partial writes: [0-9]* cache hits ([0-9]* stale' \
	    "$TESTDIR/log/nbdkit-$1.log" | tail -1 |
	    awk -v f="$2" '{ gsub(/\(/, ""); print (f == "hits") ? $3 : $6 }'
}

log "phase 2: two writers interleaving small writes to the same blocks"
nbdkit_start b
two_writers "$RANDOM" || fail "phase 2: two writers"
nbdkit_stop a
nbdkit_stop b
for w in a b; do
	grep -o 'partial writes: .*' "$TESTDIR/log/nbdkit-$w.log" | tail -1 >&2
done
hits=$(stat_of a hits)
stale=$(stat_of a stale)
[ "${hits:-0}" -gt 50 ] || fail "phase 2: a had only ${hits:-no} cache hits"
[ "${stale:-0}" -gt 20 ] ||
    fail "phase 2: a caught only ${stale:-no} stale cache entries;" \
    "the other writer's writes were not noticed"

log "phase 3: the same with cache=0"
nbdkit_start a cache=0
nbdkit_start b cache=0
two_writers "$RANDOM" || fail "phase 3: two writers, cache=0"
nbdkit_stop a
nbdkit_stop b
[ "$(stat_of a hits)" = 0 ] || fail "cache=0, yet a had cache hits"
log "ok"
