#!/bin/bash
# Servers key blocks by (volume, block), t=1.  Three nbdkits serve the
# cluster's disk (volume 0) and volumes 1 and 2 of the same four
# servers (the plugin's volume-id=, with size=):
#
# 1. The same block numbers hold different bytes in each volume, read
#    back exactly from fresh connections: no volume sees another's.
# 2. Two fio crc32c verify jobs run at once on volumes 1 and 2 (random
#    4-64 KiB reads and writes), with a third volume written and
#    trimmed beside them: both verify.
# 3. bftblk status lists each volume's live bytes on every server (the
#    trimmed volume 3 holds records, not fragments).  A server whose
#    data directory is wiped rebuilds volumes 1 and 2 as well as 0 (it
#    learns them from its peers' VOLUMES), and with a second server
#    stopped and a third wiped every volume reads back exactly.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v fio >/dev/null || skip "fio is not installed"

CLUSTER_SIZE=64M
cluster_start 1
nbdkit_start nbd
nbdkit_start v1 volume-id=1 size=256M
nbdkit_start v2 volume-id=2 size=256M

# fill NAME TAG: blocks 0..7 and 4000..4003 (past volume 0's end) of
# NAME's volume get bytes that name TAG.
seed=$RANDOM
py_data="
import random
BS = 65536
def data(tag, b):
    return random.Random('$seed-%s-%d' % (tag, b)).randbytes(BS)
"
fill()
{
	nbdsh_run "$1" "$py_data
for b in list(range(8)) + ([4000, 4001, 4002, 4003] if h.get_size() > 4004 * BS else []):
    h.pwrite(data('$2', b), b * BS)
h.flush()
" || fail "writing volume $2"
}

# check NAME TAG: those blocks read back as TAG's.
check()
{
	nbdsh_run "$1" "$py_data
for b in list(range(8)) + ([4000, 4001, 4002, 4003] if h.get_size() > 4004 * BS else []):
    got = h.pread(BS, b * BS)
    assert got == data('$2', b), 'block %d of volume $2 is not its own' % b
" || fail "volume $2 does not read back its own bytes"
}

fill nbd v0
fill v1 v1
fill v2 v2
check nbd v0
check v1 v1
check v2 v2
log "three volumes, the same block numbers, each reads back its own"
nbdinfo --size "$(nbd_uri v1)" | grep -qx 268435456 ||
    fail "volume 1's export is not 256 MiB"
nbdkit_env "$PLUGIN"
if env "${NBDKIT_ENV[@]}" timeout 30 nbdkit -f -U "$TESTDIR/bad.sock" \
    "$PLUGIN" config="$CLUSTER_DIR/bftblk.conf" \
    keys="$CLUSTER_DIR/client.key" volume-id=3 \
    >"$TESTDIR/log/nbdkit-bad.log" 2>&1; then
	fail "volume-id=3 without size= was accepted"
fi
grep -q "volume-id=3 needs size=" "$TESTDIR/log/nbdkit-bad.log" ||
    fail "volume-id=3 without size= did not say why it was refused"

# fio_verify NAME OFFSET: random 4-64 KiB reads and writes with crc32c.
fio_verify()
{
	fio --name="verify-$1" --ioengine=nbd --uri="$(nbd_uri "$1")" \
	    --iodepth=8 --offset="$2" --size=32M --rw=randrw --rwmixread=30 \
	    --bsrange=4k-64k --verify=crc32c --do_verify=1 --verify_fatal=1 \
	    --randrepeat=0 >"$TESTDIR/log/fio-$1.log" 2>&1
}
nbdkit_start v3 volume-id=3 size=64M
fio_verify v1 64M & f1=$!
fio_verify v2 64M & f2=$!
nbdsh_run v3 "
import random
for i in range(4):
    h.pwrite(random.Random(i).randbytes(8 << 20), 0)
    h.trim(8 << 20, 0)
assert h.pread(8 << 20, 0) == bytes(8 << 20)
" || fail "volume 3, written and trimmed beside the fio jobs"
r1=0 r2=0
wait "$f1" || r1=$?
wait "$f2" || r2=$?
for v in v1 v2; do
	grep -qE 'err= *0' "$TESTDIR/log/fio-$v.log" &&
	    ! grep -qE 'verify failed|bad magic' "$TESTDIR/log/fio-$v.log" ||
	    { _show_log_tail "$TESTDIR/log/fio-$v.log" 40; fail "fio on $v"; }
done
[ "$r1" -eq 0 ] && [ "$r2" -eq 0 ] || fail "fio exit statuses $r1 $r2"
log "fio verify on volumes 1 and 2 at once, volume 3 written and trimmed: ok"
# bftblk status shows each volume's live bytes on every server: volumes
# 1 and 2 hold fragments, volume 3 (trimmed) only its records.
"$ADMIN" status --dir "$CLUSTER_DIR" --json >"$TESTDIR/status.json" ||
    fail "bftblk status failed"
python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
for s in r['servers']:
    v = {x['id']: x['bytes_live'] for x in s['volumes']}
    assert v.get(1, 0) > 1 << 20 and v.get(2, 0) > 1 << 20, v
    assert 0 < v.get(3, 0) < 256 << 10, v
print(' '.join('%d:%d' % (k, v) for k, v in sorted(
    (x['id'], x['bytes_live']) for x in r['servers'][0]['volumes'])))
" "$TESTDIR/status.json" >"$TESTDIR/vols.txt" ||
    fail "bftblk status --json does not show the volumes' bytes"
log "server 0's volumes, id:live bytes: $(cat "$TESTDIR/vols.txt")"
"$ADMIN" status --dir "$CLUSTER_DIR" | grep -q '^volume 3: .* live on' ||
    fail "bftblk status does not list volume 3"
check nbd v0
check v1 v1
check v2 v2

# A wiped server rebuilds every volume by itself.
server_kill 0 KILL
rm -rf "$TESTDIR/data/server-0"
mkdir -p "$TESTDIR/data/server-0"
off=$(stat -c %s "$TESTDIR/log/server-0.log")
server_start 0
deadline=$((SECONDS + 120))
until tail -c "+$((off + 1))" "$TESTDIR/log/server-0.log" |
    grep -aqE 'rebuild: done, [0-9]+/[0-9]+ blocks'; do
	[ "$SECONDS" -lt "$deadline" ] || fail "server-0 did not rebuild"
	sleep 0.2
done
line=$(tail -c "+$((off + 1))" "$TESTDIR/log/server-0.log" |
    grep -aoE 'rebuild: done, [0-9]+/[0-9]+ blocks' | head -1)
log "server-0: $line"
server_kill 1
off=$(stat -c %s "$TESTDIR/log/server-3.log")
server_kill 3 KILL
rm -rf "$TESTDIR/data/server-3"
mkdir -p "$TESTDIR/data/server-3"
server_start 3
check nbd v0
check v1 v1
check v2 v2
log "with server 1 stopped and 3 wiped, every volume reads back from" \
    "server 0 (rebuilt) and 2"
log "ok"
