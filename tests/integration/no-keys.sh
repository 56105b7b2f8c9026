#!/bin/bash
# A writer without the cluster's keys cannot change the disk (t=1).
#
# A forged client key file has the right cluster-id and n, and the same
# format as the real client.key, but random keys.  A second nbdkit runs
# with it next to the real one.  Its writes (whole blocks, unaligned,
# over written and never-written blocks) must fail, with EPERM for whole
# blocks (the servers refuse the STOREs' MACs); the data the real client
# wrote must be unchanged, never-written blocks must still be zeros, and
# the servers must have logged the MAC failures.  The real client must
# still write and read normally afterwards.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cluster_start 1
nbdkit_start nbd

forged=$TESTDIR/forged.key
python3 - "$CLUSTER_DIR/client.key" "$forged" <<'EOF'
import os, re, sys
real, out = sys.argv[1], sys.argv[2]
lines = []
keys = 0
for line in open(real):
    m = re.match(r'\s*(key\.\d+|writer-key)\s*=\s*([0-9a-f]+)\s*$', line)
    if m:
        new = os.urandom(len(m.group(2)) // 2).hex()
        assert new != m.group(2)
        line = '%s = %s\n' % (m.group(1), new)
        keys += 1
    lines.append(line)
assert keys >= 2, 'no keys found in %s' % real
fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.write(fd, ''.join(lines).encode())
os.close(fd)
print('forged %s: %d keys replaced by random ones' % (out, keys))
EOF
chmod 600 "$forged"
grep -q "^cluster-id = $(sed -n 's/^cluster-id = //p' "$CLUSTER_DIR/client.key")\$" \
    "$forged" || fail "forged key lost the cluster-id"

seed=$RANDOM$RANDOM
py="
import errno, random, nbd
BS = 65536
NB = 16

def pattern(tag, n):
    return random.Random('$seed-' + tag).randbytes(n)

REAL = [('real0', 0, BS), ('real2-3', 2 * BS, 2 * BS),
        ('real5', 5 * BS + 1000, 3000)]
LATER = [('later8', 8 * BS, BS)]

def model(rounds):
    m = bytearray(NB * BS)
    for writes in rounds:
        for tag, off, n in writes:
            m[off:off + n] = pattern(tag, n)
    return bytes(m)

def check(rounds, what):
    want = model(rounds)
    got = h.pread(NB * BS, 0)
    if got != want:
        bad = next(i for i in range(len(want)) if got[i] != want[i])
        raise AssertionError('%s: byte %d (block %d) differs'
                             % (what, bad, bad // BS))
    print('%s: blocks 0-%d match byte for byte' % (what, NB - 1))
"

log "real client writes"
nbdsh_run nbd "$py
for tag, off, n in REAL:
    h.pwrite(pattern(tag, n), off)
h.flush()
check([REAL], 'real client')
"

log "nbdkit with the forged key"
nbdkit_start_with forged "$PLUGIN" config="$CLUSTER_DIR/bftblk.conf" \
    keys="$forged" timeout=5 shared=on
nbdsh_run forged "$py
# (offset, length, must be EPERM): whole blocks go straight to STORE, so
# the servers' MAC check is what refuses them; a partial block is read
# first, which may already fail with another error.
ATTEMPTS = [(0, BS, True), (2 * BS, 2 * BS, True), (12 * BS, BS, True),
            (5 * BS + 1000, 3000, False), (13 * BS + 7, 100, False)]
for off, n, need_eperm in ATTEMPTS:
    try:
        h.pwrite(b'\\xee' * n, off)
    except nbd.Error as e:
        print('forged write of %d bytes at %d failed: %s (errno %s)'
              % (n, off, e.string, e.errno))
        if need_eperm and e.errnum != errno.EPERM:
            raise AssertionError('expected EPERM, got %s' % e.errno)
    else:
        raise AssertionError('forged write of %d at %d succeeded' % (n, off))
# What a reader without the keys sees is not specified; it must not be
# able to change anything, which the real client checks below.
try:
    d = h.pread(BS, 0)
    print('forged read of block 0 returned %s' % (
        'zeros' if d == bytes(BS) else 'the real data'
        if d == pattern('real0', BS) else 'other data'))
except nbd.Error as e:
    print('forged read of block 0 failed: %s' % e.string)
"

log "real client: data unchanged"
nbdsh_run nbd "$py
check([REAL], 'after forged writes')
"

bad=0
for ((i = 0; i < CLUSTER_N; i++)); do
	c=$(grep -c 'bad MAC' "$TESTDIR/log/server-$i.log" || true)
	log "server-$i logged $c 'bad MAC' lines"
	[ "$c" -gt 0 ] || bad=1
done
[ "$bad" = 0 ] || fail "not every server logged the forged MACs"

log "real client still writes after the forged one"
nbdsh_run nbd "$py
for tag, off, n in LATER:
    h.pwrite(pattern(tag, n), off)
check([REAL, LATER], 'real client after forged writes')
"
nbdkit_stop forged
log "ok"
