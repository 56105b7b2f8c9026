#!/bin/bash
# MAC keys rotated on a live cluster (t=1), docs/key-epochs.md.
#
# 1. Before `cluster finalize`, `keys rotate` is refused, naming it, and
#    changes no file: release 0.2.0 cannot load a key file with epochs.
# 2. Finalized; nbdkit writes and reads back in a loop that must never
#    see an error.  `keys rotate` adds epoch 1 to client.key and every
#    server-I.key (0600); run again, it changes nothing.  The plugin
#    takes the file by itself and goes on signing under epoch 0.
# 3. Servers 0-2 reload: status says 3 of 4 accept epoch 1, server 3
#    not yet, and the writer still signs under 0.  A write signed under
#    epoch 1 alone is stored by servers 0-2 and refused by server 3
#    ("MAC did not verify"); one under epoch 0 alone by all four.
# 4. Server 3 reloads: the writer signs under epoch 1 within seconds,
#    and status says so.  A plugin holding epoch 0 alone (the file from
#    before the rotation) reads nothing written since: it fails with an
#    error, not with zeros or old data; given the new file as 64 reads
#    are in flight, it reads every one back.
# 5. Every server restarted: they load both epochs from their files, and
#    what was written under either reads back the same.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_python_nbd /usr/bin/python3
TC=$BUILD/tests/bftblk-testclient
cluster_start 1
CONF=$CLUSTER_DIR/bftblk.conf
mkdir -p "$TESTDIR/old"
cp "$CLUSTER_DIR"/*.key "$TESTDIR/old/"

rotate()
{
	"$ADMIN" keys rotate --dir "$CLUSTER_DIR" --timeout 3 \
	    >"$TESTDIR/log/rotate.log" 2>&1
}

# reload I: SIGHUP to server I, waiting for it to take epoch 1.
reload()
{
	local logf=$TESTDIR/log/server-$1.log offset
	offset=$(stat -c %s "$logf")
	kill -s HUP "${SERVER_PID[$1]}"
	_wait_log "${SERVER_PID[$1]}" "$logf" "$offset" \
	    "MAC key epoch 1 accepted" "server-$1 (reload)"
}

# store_with KEYFILE: a STORE of block 1000 signed with KEYFILE's keys
# to every server; their statuses, one line each, in store.log.
store_with()
{
	"$TC" partial-write --config "$CONF" --keys "$1" --block 1000 \
	    --stop-after store >"$TESTDIR/log/store.log" 2>&1 ||
	    { cat "$TESTDIR/log/store.log" >&2; fail "partial-write $1"; }
}

log "step 1: refused before the cluster is finalized"
rotate && fail "keys rotate ran on a cluster not finalized"
grep -q "bftblk cluster finalize" "$TESTDIR/log/rotate.log" ||
    { cat "$TESTDIR/log/rotate.log" >&2; fail "the refusal does not say" \
    "how to finalize"; }
for f in "$TESTDIR"/old/*.key; do
	cmp -s "$f" "$CLUSTER_DIR/${f##*/}" || fail "the refusal changed ${f##*/}"
done
status_has "MAC keys: epoch 0 on every server that answered"

log "step 2: finalize, write, rotate"
"$ADMIN" cluster finalize --dir "$CLUSTER_DIR" \
    >"$TESTDIR/log/finalize.log" 2>&1 ||
    { cat "$TESTDIR/log/finalize.log" >&2; fail "cluster finalize"; }
nbdkit_start a
checked_writer a 150 &
WA=$!
_track "$WA" writer-a
sleep 2
NBDLOG=$TESTDIR/log/nbdkit-a.log
noff=$(stat -c %s "$NBDLOG")
rotate || { cat "$TESTDIR/log/rotate.log" >&2; fail "keys rotate"; }
for f in client.key server-0.key server-1.key server-2.key server-3.key; do
	grep -q "^next-epoch = 1$" "$CLUSTER_DIR/$f" ||
	    fail "$f has no next epoch"
	[ "$(stat -c %a "$CLUSTER_DIR/$f")" = 600 ] || fail "$f is not 0600"
done
cp "$CLUSTER_DIR/client.key" "$TESTDIR/client.key.rotated"
rotate || { cat "$TESTDIR/log/rotate.log" >&2; fail "keys rotate again"; }
grep -q "under way" "$TESTDIR/log/rotate.log" ||
    fail "a second rotate did not say one is under way"
cmp -s "$CLUSTER_DIR/client.key" "$TESTDIR/client.key.rotated" ||
    fail "a second rotate made other keys"
_wait_log "${NBDKIT_PID[a]}" "$NBDLOG" "$noff" \
    "holds epochs 0 and 1; signing under 0" "nbdkit a (key file)"

log "step 3: servers 0-2 take epoch 1, server 3 not yet"
for i in 0 1 2; do reload "$i"; done
status_has "3 of 4 servers accept 1 (not yet: 3)"
sleep 5
grep -q "signed under it from now on" "$NBDLOG" &&
    fail "the writer signs under epoch 1 before server 3 accepts it"
# The next epoch's keys as a file's only ones, and the old epoch's.
python3 - "$TESTDIR/client.key.rotated" >"$TESTDIR/epoch1.key" <<'EOF'
import re, sys
for line in open(sys.argv[1]):
    k = line.split("=")[0].strip()
    if k in ("epoch", "next-epoch") or re.match(r"(key\.\d+|writer-key)$", k):
        continue
    print(re.sub(r"^next-", "", line), end="")
EOF
chmod 600 "$TESTDIR/epoch1.key"
store_with "$TESTDIR/epoch1.key"
for i in 0 1 2; do
	grep -q "^server $i: STORE ok" "$TESTDIR/log/store.log" ||
	    { cat "$TESTDIR/log/store.log" >&2; fail "server $i refused" \
	    "epoch 1 after its reload"; }
done
grep -q "^server 3: STORE MAC did not verify" "$TESTDIR/log/store.log" ||
    { cat "$TESTDIR/log/store.log" >&2; fail "server 3 took epoch 1" \
    "before its reload"; }
store_with "$TESTDIR/old/client.key"
[ "$(grep -c ": STORE ok" "$TESTDIR/log/store.log")" = 4 ] ||
    { cat "$TESTDIR/log/store.log" >&2; fail "epoch 0 refused during" \
    "the rotation"; }

log "step 4: server 3 takes epoch 1; the writer switches"
reload 3
_wait_log "${NBDKIT_PID[a]}" "$NBDLOG" "$noff" \
    "every server accepts epoch 1; writes are signed under it" \
    "nbdkit a (signing under epoch 1)"
status_has "4 of 4 servers accept 1; writers sign under it"
sleep 2
touch "$TESTDIR/stop-a"
wait "$WA" || { cat "$TESTDIR/log/writer-a.log" >&2; fail "the writer" \
    "saw an error during the rotation"; }
cat "$TESTDIR/log/writer-a.log"
sum_of()
{
	nbdsh_run "$1" "
import hashlib
print(hashlib.sha256(h.pread(101 * 65536, 0)).hexdigest())"
}
nbdsh_run a "h.pwrite(b'e1' * 32768, 100 * 65536)" ||
    fail "a write under epoch 1"
before=$(sum_of a) || fail "reading back through nbdkit a"
nbdsh_run a "
for b in range(200, 264):
    h.pwrite(bytes([b & 255]) * 65536, b * 65536)" ||
    fail "64 blocks written under epoch 1"
cp "$TESTDIR/old/client.key" "$TESTDIR/reader.key"
nbdkit_start_with old "$PLUGIN" config="$CONF" \
    keys="$TESTDIR/reader.key" shared=on volume-id=0 timeout=2 \
    io-timeout=4
if nbdsh_run old "print(h.pread(65536, 100 * 65536)[:8])" \
    >"$TESTDIR/log/old-read.log" 2>&1
then
	cat "$TESTDIR/log/old-read.log" >&2
	fail "a plugin without epoch 1 read a block written under it"
fi
log "a plugin holding epoch 0 alone: $(tail -n 1 "$TESTDIR/log/old-read.log")"
# Its key file gets epoch 1 as 64 reads of blocks written under it are
# in flight.  The first read to find t+1 replies it cannot verify looks
# at the file and takes the keys; a read whose replies were checked
# under the old keys before that must start again, not fail as if the
# file were still out of date.
nbdsh_run old "
import os, shutil
tmp = '$TESTDIR/reader.key.new'
shutil.copy('$TESTDIR/client.key.rotated', tmp)
os.chmod(tmp, 0o600)
os.rename(tmp, '$TESTDIR/reader.key')
pend = []
for b in range(200, 264):
    buf = nbd.Buffer(65536)
    pend.append((b, buf, h.aio_pread(buf, b * 65536)))
while h.aio_in_flight() > 0:
    h.poll(-1)
for b, buf, c in pend:
    h.aio_command_completed(c)
    assert buf.to_bytearray() == bytes([b & 255]) * 65536, b
print('64 reads in flight as the key file got epoch 1: all read back')" \
    >"$TESTDIR/log/old-reload.log" 2>&1 ||
    { cat "$TESTDIR/log/old-reload.log" >&2; fail "reads in flight as the" \
    "key file got epoch 1 failed"; }
log "$(tail -n 1 "$TESTDIR/log/old-reload.log")"
nbdkit_stop old

log "step 5: every server restarted loads both epochs"
for i in 0 1 2 3; do
	server_kill "$i"
	server_start "$i"
done
status_has "4 of 4 servers accept 1; writers sign under it"
nbdkit_start b
# A new engine asks the servers as it connects: it switches at once.
_wait_log "${NBDKIT_PID[b]}" "$TESTDIR/log/nbdkit-b.log" 0 \
    "every server accepts epoch 1" "nbdkit b (signing under epoch 1)"
after=$(sum_of b) || fail "reading back after the restart"
[ "$before" = "$after" ] || fail "the data changed across the restart"
log "ok: sha256 $after before and after"
