#!/bin/bash
# SUMMARY costs a server what it returns, not the volume's size (t=1).
#
# 1. Volume 7 is a 250 TiB thin volume (the plugin's volume-id= and
#    size=) with only its first and last blocks written, as a GPT
#    backup header does: each server's page table for it spans millions
#    of empty page slots.
# 2. A writer's key floods servers 0, 1 and 2 with SUMMARYs (1024
#    ranges of 1024 blocks) in the empty middle of the volume and over
#    its last page, two such clients at once, for 20 s, while a writer
#    on volume 0 writes and flushes a block at a time, timing each (a
#    write needs n - t = 3 servers, so at least one flooded one).  Each
#    SUMMARY once walked the empty slots one by one (2-8 s of a
#    server's event loop here) and the floods were answered a few dozen
#    times: now they must be answered hundreds of times, no SUMMARY and
#    no write may take 3 s (a margin for a machine shared with other
#    work; unloaded, the slowest write takes well under 0.1 s).
# 3. The same flood from a read-only key is refused with EPERM (9) by
#    every server: comparing states is for peers and writers.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TC=$BUILD/tests/bftblk-testclient
[ -x "$TC" ] || fail "$TC is missing: run make first"

cluster_start 1
CONF=$CLUSTER_DIR/bftblk.conf
nbdkit_start nbd
nbdkit_start big volume-id=7 size=250T

log "step 1: a 250 TiB volume written at its two ends"
nbdsh_run big "
BS = 65536
size = h.get_size()
assert size == 250 << 40, size
h.pwrite(b'first' * (BS // 5) + b'f', 0)
h.pwrite(b'last!' * (BS // 5) + b'l', size - BS)
h.flush()
assert h.pread(5, size - BS) == b'last!'
" || fail "writing the ends of the 250 TiB volume"

# The volume's last block, and a block in its empty middle, as addresses.
VOL=7
LAST=$(((250 << 40) / 65536 - 1))
MID=$(((VOL << 40) | (1 << 31)))
END=$(((VOL << 40) | (LAST + 1 - (1 << 20))))

log "step 2: SUMMARY floods beside a writer"
flood()
{
	"$TC" flood --config "$CONF" --keys "$CLUSTER_DIR/$1.key" \
	    --servers 0,1,2 --block "$2" --hold 20 --count 100000 \
	    >"$TESTDIR/log/flood-$1-$3.log" 2>&1
}
flood client "$MID" mid & f1=$!
flood client "$END" end & f2=$!
sleep 1
nbdsh_run nbd "
import time
BS = 65536
worst = 0
start = time.monotonic()
n = 0
while time.monotonic() - start < 15 and n < 2000:
    t0 = time.monotonic()
    h.pwrite(bytes([n % 256]) * BS, (n % 64) * BS)
    h.flush()
    worst = max(worst, time.monotonic() - t0)
    n += 1
print('writer: %d writes with flush, slowest %.3f s' % (n, worst))
assert n >= 20, 'only %d writes in 15 s' % n
assert worst < 3.0, 'a write took %.3f s while SUMMARYs were answered' % worst
" >"$TESTDIR/log/writer.log" 2>&1 || wr=$?
cat "$TESTDIR/log/writer.log" >&2
r1=0 r2=0
wait "$f1" || r1=$?
wait "$f2" || r2=$?
cat "$TESTDIR/log/flood-client-mid.log" "$TESTDIR/log/flood-client-end.log" >&2
[ "$r1" -eq 0 ] && [ "$r2" -eq 0 ] || fail "the floods exited $r1 $r2"
[ "${wr:-0}" -eq 0 ] || fail "the writer was held up by the SUMMARY flood"
for f in mid end; do
	ok=$(sed -n 's/^flood: \([0-9]*\) answered ok.*/\1/p' \
	    "$TESTDIR/log/flood-client-$f.log")
	[ -n "$ok" ] && [ "$ok" -ge 200 ] ||
	    fail "the $f flood was answered only ${ok:-0} times"
	slow=$(sed -n 's/^flood: .*slowest \([0-9]*\) ms$/\1/p' \
	    "$TESTDIR/log/flood-client-$f.log")
	[ -n "$slow" ] && [ "$slow" -lt 3000 ] ||
	    fail "a SUMMARY of the $f flood took ${slow:-?} ms"
done
log "the writer kept its latency under 3 s through the floods"

log "step 3: the read-only key may not compare states"
client_add reader ro
"$TC" flood --config "$CONF" --keys "$CLUSTER_DIR/reader.key" \
    --block "$MID" --count 3 >"$TESTDIR/log/flood-reader.log" 2>&1 ||
    { cat "$TESTDIR/log/flood-reader.log" >&2; fail "reader flood failed"; }
cat "$TESTDIR/log/flood-reader.log" >&2
grep -q "^flood: 0 answered ok, $((3 * CLUSTER_N)) refused (status 9)" \
    "$TESTDIR/log/flood-reader.log" ||
    fail "a read-only key's SUMMARY was not refused with EPERM"
log "ok"
