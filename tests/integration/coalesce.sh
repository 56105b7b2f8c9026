#!/bin/bash
# Small writes to one block in flight together are written as one block
# write (lib/coalesce_int.h).  Checks, against a model, that batching
# loses or mixes nothing:
#
# 1. 4 KiB writes to every slot of 8 blocks, 64 in flight, several
#    writes to the same slot among them: every slot must end up equal to
#    exactly one of the writes that targeted it (each request is atomic),
#    the rest byte for byte; and the stats line must show writes that
#    went out in another request's block write (else nothing was tested).
# 2. Small writes racing a 4-block write over the same blocks: each slot
#    is the big write's bytes or a small write's, never a mix.
# 3. With 2 of 4 servers down every batched write fails (none hangs or
#    reports success), and once they are back writes succeed again.
# 4. fio's nbd engine, sequential 4 KiB writes at iodepth 32 with crc32c
#    verification, read back through a fresh nbdkit; some must have
#    been coalesced.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PY=${LIN_PYTHON:-/usr/bin/python3}
require_python_nbd "$PY"

export NBDKIT_ARGS="-v"
cluster_start 1

common='
import os, random
import nbd
BS = 65536
SLOT = 4096
BLOCKS = 8
rng = random.Random(int(os.environ["SEED"]))

def connect():
    h = nbd.NBD()
    h.connect_uri("nbd+unix:///?socket=%s/nbd.sock" % os.environ["TESTDIR"])
    return h

def drain(h, limit):
    """Waits until fewer than limit commands are in flight."""
    while h.aio_in_flight() >= limit:
        h.poll(-1)

def check_slots(got, cands, what):
    """Each slot must equal one of its candidate values, whole."""
    for s, opts in cands.items():
        v = bytes(got[s * SLOT:(s + 1) * SLOT])
        if v not in opts:
            raise SystemExit("%s: slot %d (block %d) is none of its %d "
                             "writes: torn or lost" %
                             (what, s, s * SLOT // BS, len(opts)))
'

log "phase 1: 64 small writes in flight over 8 blocks, some to one slot"
nbdkit_start
SEED=$RANDOM TESTDIR=$TESTDIR "$PY" - <<EOF || fail "phase 1"
$common
h = connect()
nslots = BLOCKS * BS // SLOT
h.pwrite(rng.randbytes(BLOCKS * BS), 0)
# Every slot is written at least once, so its old bytes are no answer.
cands = {s: set() for s in range(nslots)}
writes = [(s, rng.randbytes(SLOT)) for s in range(nslots)]
writes += [(rng.randrange(nslots), rng.randbytes(SLOT)) for _ in range(64)]
rng.shuffle(writes)
for s, data in writes:
    cands[s].add(data)
cookies = []
for s, data in writes:
    drain(h, 64)
    cookies.append(h.aio_pwrite(data, s * SLOT))
drain(h, 1)
for c in cookies:
    h.aio_command_completed(c)
check_slots(h.pread(BLOCKS * BS, 0), cands, "phase 1")
h.flush()
print("phase 1: %d writes to %d slots checked" % (len(writes), nslots))
EOF
nbdkit_stop
merged=$(grep -o '[0-9]* small writes coalesced into others' \
    "$TESTDIR/log/nbdkit-nbd.log" | tail -1 | awk '{ print $1 }')
log "phase 1: ${merged:-no} small writes went out in another's block write"
[ "${merged:-0}" -gt 0 ] ||
    fail "phase 1: no small write was coalesced; the batching is untested"

log "phase 2: small writes racing a 4-block write"
nbdkit_start
SEED=$RANDOM TESTDIR=$TESTDIR "$PY" - <<EOF || fail "phase 2"
$common
h = connect()
for rnd in range(6):
    big = rng.randbytes(4 * BS)
    first = rng.randrange(BLOCKS - 3)
    slots = list(range(first * BS // SLOT, (first + 4) * BS // SLOT))
    cands = {s: {big[(s - slots[0]) * SLOT:(s - slots[0] + 1) * SLOT]}
             for s in slots}
    cookies = []
    small = rng.sample(slots, 24)
    for i, s in enumerate(small):
        data = rng.randbytes(SLOT)
        cands[s].add(data)
        cookies.append(h.aio_pwrite(data, s * SLOT))
        if i == 8:
            cookies.append(h.aio_pwrite(big, first * BS))
    drain(h, 1)
    for c in cookies:
        h.aio_command_completed(c)
    got = h.pread(4 * BS, first * BS)
    check_slots(b"\0" * (slots[0] * SLOT) + got, cands, "round %d" % rnd)
print("phase 2: 6 rounds checked")
EOF
nbdkit_stop

log "phase 3: batched writes with 2 of 4 servers down must all fail"
nbdkit_start timeout=3
SEED=$RANDOM TESTDIR=$TESTDIR "$PY" - <<EOF || fail "phase 3 setup"
$common
h = connect()
h.pwrite(bytes(BS), 0)
h.flush()
EOF
server_kill 2
server_kill 3
SEED=$RANDOM TESTDIR=$TESTDIR "$PY" - <<EOF || fail "phase 3"
$common
h = connect()
cookies = [h.aio_pwrite(rng.randbytes(SLOT), s * SLOT) for s in range(16)]
ok = failed = 0
deadline = 200
while h.aio_in_flight() > 0 and deadline > 0:
    h.poll(1000)
    deadline -= 1
if h.aio_in_flight() > 0:
    raise SystemExit("phase 3: %d writes still in flight after ~200 s" %
                     h.aio_in_flight())
for c in cookies:
    try:
        h.aio_command_completed(c)
        ok += 1
    except nbd.Error:
        failed += 1
if ok:
    raise SystemExit("phase 3: %d writes reported success with 2 of 4 "
                     "servers down" % ok)
print("phase 3: all %d batched writes failed" % failed)
EOF
server_start 2
server_start 3
wait_connected 2
wait_connected 3
SEED=$RANDOM TESTDIR=$TESTDIR "$PY" - <<EOF || fail "phase 3 recovery"
$common
h = connect()
data = rng.randbytes(BS)
h.pwrite(data, 0)
if h.pread(BS, 0) != data:
    raise SystemExit("phase 3: block 0 wrong after the servers came back")
print("phase 3: writes succeed again")
EOF
nbdkit_stop

# Under valgrind (make check-valgrind) 16 MiB of 4 KiB writes take five
# minutes; 1 MiB still puts 16 writes on each block.
FIO_SIZE=16M
[ "$VALGRIND" = 1 ] && FIO_SIZE=1M
if command -v fio >/dev/null &&
    [[ " $(fio --enghelp 2>/dev/null | tr -s '\t\n' '  ') " == *" nbd "* ]]
then
	log "phase 4: fio sequential 4 KiB writes, iodepth 32, crc32c verified"
	nbdkit_start
	fio --name=seq4k --ioengine=nbd --uri="$(nbd_uri nbd)" --iodepth=32 \
	    --rw=write --bs=4k --size=$FIO_SIZE --offset=1M --verify=crc32c \
	    --do_verify=1 --verify_fatal=1 >"$TESTDIR/log/fio-seq4k.log" 2>&1 ||
	    { _show_log_tail "$TESTDIR/log/fio-seq4k.log" 40; fail "fio seq4k"; }
	grep -qE 'err= *0' "$TESTDIR/log/fio-seq4k.log" ||
	    fail "fio seq4k: no clean job report"
	nbdkit_stop
	merged=$(grep -o '[0-9]* small writes coalesced into others' \
	    "$TESTDIR/log/nbdkit-nbd.log" | tail -1 | awk '{ print $1 }')
	log "phase 4: $FIO_SIZE of 4 KiB writes, ${merged:-no} of them in" \
	    "another's block write"
	[ "${merged:-0}" -gt 0 ] || fail "phase 4: fio's writes were not coalesced"
	nbdkit_start
	fio --name=seq4k --ioengine=nbd --uri="$(nbd_uri nbd)" --iodepth=32 \
	    --rw=write --bs=4k --size=$FIO_SIZE --offset=1M --verify=crc32c \
	    --verify_only=1 --verify_fatal=1 \
	    >"$TESTDIR/log/fio-seq4k-verify.log" 2>&1 ||
	    { _show_log_tail "$TESTDIR/log/fio-seq4k-verify.log" 40;
	      fail "fio seq4k re-verify"; }
	nbdkit_stop
	log "phase 4: read back and verified through a fresh nbdkit"
else
	log "phase 4 skipped: fio or its nbd engine is missing"
fi
log "ok"
