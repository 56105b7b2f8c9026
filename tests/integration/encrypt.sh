#!/bin/bash
# Client-side encryption (encrypt=on volume-key=FILE): servers learn
# nothing, and nothing but the right key reads the data.
#
#  - the plugin refuses encrypt=on without a volume key, a volume key
#    without encrypt=on, a key file others can read, and writer-id=;
#  - recognizable plaintext written with encrypt=on (whole blocks, a
#    read-modify-write inside a block, zero and trim requests) reads back
#    byte for byte, also after an nbdkit restart; never-written blocks
#    read as zeros;
#  - no server data directory holds the plaintext pattern, while a
#    control pattern written with encrypt=off is found there (so the
#    grep would have seen it);
#  - with a wrong volume key, reads of written blocks fail with an error
#    naming the block, never returning bytes; with encrypt=off, reads of
#    the encrypted blocks never return the plaintext; encrypt=on does not
#    pass off the unencrypted control block as authentic either.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cluster_start 1
VOLKEY=$TESTDIR/vol.key
WRONGKEY=$TESTDIR/wrong.key
"$ADMIN" volume-key --out "$VOLKEY" >"$TESTDIR/log/volume-key.log" 2>&1 ||
    fail "bftblk volume-key failed: $(cat "$TESTDIR/log/volume-key.log")"
"$ADMIN" volume-key --out "$WRONGKEY" --aead xchacha20poly1305 \
    >>"$TESTDIR/log/volume-key.log" 2>&1 || fail "second volume-key failed"
[ "$(stat -c %a "$VOLKEY")" = 600 ] || fail "volume key is not mode 600"
if "$ADMIN" volume-key --out "$VOLKEY" >/dev/null 2>&1; then
	fail "bftblk volume-key overwrote an existing key"
fi

# bad_config WHAT PATTERN PARAM...: nbdkit must refuse to start, saying
# PATTERN.
bad_config()
{
	local what=$1 pattern=$2 out
	shift 2
	nbdkit_env "$PLUGIN"
	if out=$(env "${NBDKIT_ENV[@]}" nbdkit -f -U "$TESTDIR/bad.sock" \
	    --run true "$PLUGIN" \
	    config="$CLUSTER_DIR/bftblk.conf" keys="$CLUSTER_DIR/client.key" \
	    "$@" 2>&1); then
		fail "$what: nbdkit started"
	fi
	grep -q -- "$pattern" <<<"$out" ||
	    fail "$what: no \"$pattern\" in: $out"
	log "refused: $what"
}
bad_config "encrypt=on without a key" "needs volume-key" encrypt=on
bad_config "volume-key without encrypt" "encrypt is off" \
    volume-key="$VOLKEY"
cp "$VOLKEY" "$TESTDIR/loose.key"
chmod 644 "$TESTDIR/loose.key"
bad_config "a key file others can read" "chmod 600" encrypt=on \
    volume-key="$TESTDIR/loose.key"
bad_config "a fixed writer id" "writer-id" encrypt=on \
    volume-key="$VOLKEY" writer-id=5

common="
import nbd
BS = 65536
MARK = b'SECRET-PLAINTEXT-%06d;'
CTRL = b'CONTROL-CLEARTEXT-%06d;'

def pattern(fmt, block):
    unit = fmt % block
    return (unit * (BS // len(unit) + 1))[:BS]

# Blocks 0-7: whole blocks; block 8: a 5000-byte write inside it (a
# read-modify-write); block 9: written, then zeroed; block 10: written,
# then trimmed; block 11 is never written; block 20: the control.
def want(block):
    if block < 8:
        return pattern(MARK, block)
    if block == 8:
        b = bytearray(BS)
        b[1000:6000] = pattern(MARK, 8)[:5000]
        return bytes(b)
    return bytes(BS)

def check(first, last):
    for b in range(first, last + 1):
        got = h.pread(BS, b * BS)
        assert got == want(b), 'block %d differs' % b
"

nbdkit_start enc encrypt=on volume-key="$VOLKEY"
log "writing the plaintext pattern with encrypt=on"
nbdsh_run enc "$common
assert h.pread(12 * BS, 0) == bytes(12 * BS), 'fresh disk not zeros'
h.pwrite(b''.join(pattern(MARK, b) for b in range(8)), 0)
h.pwrite(pattern(MARK, 8)[:5000], 8 * BS + 1000)
h.pwrite(pattern(MARK, 9), 9 * BS)
h.pwrite(pattern(MARK, 10), 10 * BS)
h.zero(BS, 9 * BS)
h.trim(BS, 10 * BS)
h.flush()
check(0, 11)
# Overwrites get new timestamps, so new ciphertexts: still read back.
h.pwrite(pattern(MARK, 3), 3 * BS)
check(0, 11)
"
nbdkit_stop enc

nbdkit_start plain
log "writing a control pattern with encrypt=off"
nbdsh_run plain "$common
h.pwrite(pattern(CTRL, 20), 20 * BS)
h.flush()
"
nbdkit_stop plain

# Servers log with write(): stopped or not, the data dirs hold it all.
log "searching the server data directories"
grep -rqaF "CONTROL-CLEARTEXT-000020;" "$TESTDIR/data" ||
    fail "control pattern not found in the data dirs: the grep is blind"
if grep -rlaF "SECRET-PLAINTEXT-" "$TESTDIR/data"; then
	fail "plaintext written with encrypt=on is on a server's disk"
fi
for ((i = 0; i < CLUSTER_N; i++)); do
	[ -n "$(find "$TESTDIR/data/server-$i" -type f -size +64k)" ] ||
	    fail "server-$i holds no data at all"
done

log "reading back after an nbdkit restart"
nbdkit_start enc encrypt=on volume-key="$VOLKEY"
nbdsh_run enc "$common
check(0, 11)
"
log "the unencrypted control block does not authenticate"
nbdsh_run enc "$common
try:
    h.pread(BS, 20 * BS)
except nbd.Error:
    pass
else:
    raise AssertionError('an unsealed block read as authentic')
"
grep -q "block 20: servers hold fragments of another size" \
    "$TESTDIR/log/nbdkit-enc.log" ||
    fail "no fragment-size diagnosis for block 20 in the nbdkit log"
nbdkit_stop enc

log "a wrong volume key: reads fail, naming the block"
nbdkit_start wrong encrypt=on volume-key="$WRONGKEY"
nbdsh_run wrong "$common
for b in (0, 5, 8):
    try:
        got = h.pread(BS, b * BS)
    except nbd.Error:
        continue
    raise AssertionError('block %d read with the wrong key' % b)
# Never-written blocks are zeros under any key.
assert h.pread(BS, 11 * BS) == bytes(BS)
"
grep -q "block 5: read failed: the value does not authenticate" \
    "$TESTDIR/log/nbdkit-wrong.log" ||
    fail "no authentication failure naming block 5 in the nbdkit log"
nbdkit_stop wrong

log "encrypt=off on the encrypted volume never shows the plaintext"
nbdkit_start plain
nbdsh_run plain "$common
for b in range(0, 9):
    try:
        got = h.pread(BS, b * BS)
    except nbd.Error:
        continue
    assert b'SECRET-PLAINTEXT' not in got, 'block %d in clear' % b
"
grep -q "block 5: servers hold fragments of another size" \
    "$TESTDIR/log/nbdkit-plain.log" ||
    fail "no fragment-size diagnosis for block 5 in the nbdkit log"
nbdkit_stop plain

log "the right key still reads everything"
nbdkit_start enc encrypt=on volume-key="$VOLKEY"
nbdsh_run enc "$common
check(0, 11)
"
log "ok"
