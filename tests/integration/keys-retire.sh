#!/bin/bash
# A MAC key epoch retired on a live cluster (t=1), docs/key-epochs.md.
#
# 1. Finalized; a writer loop that must never see an error, 100 blocks
#    of known data, a volume with a table entry and a lease, and a
#    snapshot of it whose view keeps 2 blocks overwritten since.  The
#    attack: the epoch-0 key file alone (a leaked writer's) makes a
#    candidate above every lc and writes it back as a Byzantine server's
#    reads would: every server takes it.  A plain write overwrites it.
# 2. Rotated; every server reloads; the writer signs under epoch 1.
#    `keys retire` is refused: servers count versions under epoch 0,
#    and status says so.
# 3. status shows a pass's state file: stopped, or running while its
#    PID lives on this host.  `keys reauth` from a state file past
#    volume 0 resumes there and reads only the rest; then a whole pass walks what the servers hold
#    (progress lines), every server takes every version, and the
#    servers' counts fall to zero, the snapshot's retained versions
#    included (the pass reads its view of the blocks written since, and
#    the snapshot is kept).  Run again it finds everything under epoch 1.
# 4. `keys retire` writes files with epoch 1 alone; the plugin takes
#    its file, the servers reload and drop epoch 0 ("retired").
# 5. The attack again: no server takes the forgery as lc, a
#    STORE under epoch 0 is refused by all, and the data reads back the
#    same, the snapshot's too, also after every server restarts from its
#    epoch-1 file.  A server replaced then gets a key file of epoch 1.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_python_nbd /usr/bin/python3
TC=$BUILD/tests/bftblk-testclient
cluster_start 1
CONF=$CLUSTER_DIR/bftblk.conf
mkdir -p "$TESTDIR/old"
cp "$CLUSTER_DIR"/*.key "$TESTDIR/old/"
FORGED_BLOCK=900

# forge: the attack with the epoch-0 file on FORGED_BLOCK; its status.
forge()
{
	"$TC" forge-keys --config "$CONF" --keys "$TESTDIR/old/client.key" \
	    --block "$FORGED_BLOCK" >"$TESTDIR/log/forge.log" 2>&1
}

# sum_of NAME: sha256 of blocks 64-100, which the writer loop leaves.
sum_of()
{
	nbdsh_run "$1" "
import hashlib
print(hashlib.sha256(h.pread(37 * 65536, 64 * 65536)).hexdigest())"
}

log "step 1: data, and the attack with the epoch-0 file"
"$ADMIN" cluster finalize --dir "$CLUSTER_DIR" \
    >"$TESTDIR/log/finalize.log" 2>&1 ||
    { cat "$TESTDIR/log/finalize.log" >&2; fail "cluster finalize"; }
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name vm1 --size 4M \
    >"$TESTDIR/log/volume.log" 2>&1 ||
    { cat "$TESTDIR/log/volume.log" >&2; fail "volume create"; }
nbdkit_start a
nbdsh_run a "
import os
for b in range(101):
    h.pwrite(os.urandom(65536), b * 65536)
h.pwrite(b'v0' * 32768, $FORGED_BLOCK * 65536)" || fail "writing the data"
nbdkit_start_with vm "$PLUGIN" config="$CONF" \
    keys="$CLUSTER_DIR/client.key" volume=vm1 timeout=2 io-timeout=4
nbdsh_run vm "h.pwrite(b'vm' * 32768 * 3, 0)" || fail "writing vm1"
"$ADMIN" snap create --dir "$CLUSTER_DIR" --volume vm1 --name before \
    >"$TESTDIR/log/snap.log" 2>&1 ||
    { cat "$TESTDIR/log/snap.log" >&2; fail "snap create vm1@before"; }
nbdsh_run vm "h.pwrite(b'v2' * 32768 * 2, 65536)" ||
    fail "overwriting vm1 after its snapshot"
forge && { cat "$TESTDIR/log/forge.log" >&2; fail "no server took a" \
    "forgery under the cluster's own keys: the attack test tests nothing"; }
grep -q "4 of 4 servers took it" "$TESTDIR/log/forge.log" ||
    { cat "$TESTDIR/log/forge.log" >&2; fail "the attack did not reach" \
    "every server"; }
nbdsh_run a "h.pwrite(b'v1' * 32768, $FORGED_BLOCK * 65536)" ||
    fail "overwriting the forged block"
before=$(sum_of a) || fail "reading the data"
checked_writer a 150 &
WA=$!
_track "$WA" writer-a

log "step 2: rotate; retire refused while versions are under epoch 0"
NBDLOG=$TESTDIR/log/nbdkit-a.log
noff=$(stat -c %s "$NBDLOG")
"$ADMIN" keys rotate --dir "$CLUSTER_DIR" --timeout 3 \
    >"$TESTDIR/log/rotate.log" 2>&1 ||
    { cat "$TESTDIR/log/rotate.log" >&2; fail "keys rotate"; }
servers_reload "MAC key epoch 1 accepted"
_wait_log "${NBDKIT_PID[a]}" "$NBDLOG" "$noff" \
    "every server accepts epoch 1; writes are signed under it" \
    "nbdkit a (signing under epoch 1)"
if "$ADMIN" keys retire --dir "$CLUSTER_DIR" --timeout 3 \
    >"$TESTDIR/log/retire.log" 2>&1; then
	cat "$TESTDIR/log/retire.log" >&2
	fail "keys retire ran with versions still under epoch 0"
fi
cat "$TESTDIR/log/retire.log"
grep -qE "versions still under epoch 0|not counted its versions" \
    "$TESTDIR/log/retire.log" || fail "the refusal does not say why"
cmp -s "$TESTDIR/old/server-0.key" "$CLUSTER_DIR/server-0.key" &&
    fail "server-0.key is still the one from before the rotation"
grep -q "^next-epoch = 1$" "$CLUSTER_DIR/client.key" ||
    fail "the refused retire changed client.key"

log "step 3: reauth"
# As if a pass had stopped past volume 0: it resumes there, and volume
# 0's blocks are left to the next one.
printf 'epoch 1 volume 65536 block 0\n' >"$CLUSTER_DIR/keys-reauth.state"
status_has "MAC keys: reauth pass to epoch 1 stopped: bftblk keys reauth" \
    "resumes it at volume 65536 block 0"
# A pass of this host: running while its PID lives, stopped once not.
sleep 60 &
fake=$!
_track "$fake" fake-pass
printf 'epoch 1 volume 65536 block 0\nprogress 10 of 100 blocks, %s\n' \
    "65536 bytes/s, at $(date +%s), pid $fake on $(hostname)" \
    >"$CLUSTER_DIR/keys-reauth.state"
status_has "MAC keys: reauth pass to epoch 1: 10/100 blocks, 0.1 MB/s," \
    "ETA 1m30s (pid $fake on $(hostname))"
kill "$fake"
_reap "$fake"
_forget_pid "$fake"
status_has "MAC keys: reauth pass to epoch 1 stopped at 10/100 blocks"
printf 'epoch 1 volume 65536 block 0\n' >"$CLUSTER_DIR/keys-reauth.state"
keys_reauth reauth-resumed "keys reauth resumed"
grep -q "resuming epoch 1's pass at volume 65536 block 0" \
    "$TESTDIR/log/reauth-resumed.log" ||
    { cat "$TESTDIR/log/reauth-resumed.log" >&2; fail "the pass did not" \
    "resume from its state file"; }
resumed=$(grep -E '^[0-9]+ blocks read' "$TESTDIR/log/reauth-resumed.log" |
    cut -d' ' -f1)
[ "$resumed" -lt 100 ] || fail "the resumed pass read volume 0 again"
keys_reauth reauth "keys reauth"
cat "$TESTDIR/log/reauth.log"
grep -q "reauth: .* MiB .*took" "$TESTDIR/log/reauth.log" ||
    fail "reauth printed no progress"
grep -qE "^[0-9]+ blocks read: [1-9][0-9]* re-authenticated" \
    "$TESTDIR/log/reauth.log" || fail "reauth re-authenticated nothing"
grep -qE "^snapshot vm1@before: [2-9][0-9]* blocks written since" \
    "$TESTDIR/log/reauth.log" ||
    fail "reauth did not walk the snapshot's view of the blocks written since"
[ -e "$CLUSTER_DIR/keys-reauth.state" ] &&
    fail "a finished pass left its state file"
status_has "MAC keys:"
grep -q "reauth pass" "$TESTDIR/log/status.log" &&
    fail "status shows a pass that finished"
keys_reauth reauth2 "keys reauth again"
grep -qE "^[0-9]+ blocks read: 0 re-authenticated" \
    "$TESTDIR/log/reauth2.log" ||
    { cat "$TESTDIR/log/reauth2.log" >&2; fail "a second pass found" \
    "versions under epoch 0"; }

log "step 4: retire"
keys_retire 30
cat "$TESTDIR/log/retire.log"
for f in client.key server-0.key server-1.key server-2.key server-3.key; do
	grep -q "^epoch = 1$" "$CLUSTER_DIR/$f" || fail "$f is not at epoch 1"
	grep -q "next-" "$CLUSTER_DIR/$f" && fail "$f still holds two epochs"
done
_wait_log "${NBDKIT_PID[a]}" "$NBDLOG" "$noff" "holds epoch 1 alone" \
    "nbdkit a (retired key file)"
servers_reload "MAC key epoch 0 retired"
status_has "MAC keys: epoch 1 on every server that answered"

log "step 5: the attack again, and the data"
if ! forge; then
	cat "$TESTDIR/log/forge.log" >&2
	fail "a server took a forgery under the retired epoch"
fi
cat "$TESTDIR/log/forge.log"
[ "$(grep -c ": lc unchanged" "$TESTDIR/log/forge.log")" = 4 ] ||
    fail "not every server answered with its lc unchanged"
"$TC" partial-write --config "$CONF" --keys "$TESTDIR/old/client.key" \
    --block 1000 --stop-after store >"$TESTDIR/log/store.log" 2>&1 || true
[ "$(grep -c ": STORE MAC did not verify" "$TESTDIR/log/store.log")" = 4 ] ||
    { cat "$TESTDIR/log/store.log" >&2; fail "a STORE under the retired" \
    "epoch was not refused by every server"; }
touch "$TESTDIR/stop-a"
wait "$WA" || { cat "$TESTDIR/log/writer-a.log" >&2; fail "the writer" \
    "saw an error during the rotation"; }
cat "$TESTDIR/log/writer-a.log"
nbdkit_stop a
nbdkit_stop vm
for i in 0 1 2 3; do
	server_kill "$i"
	server_start "$i"
done
status_has "MAC keys: epoch 1 on every server that answered"
nbdkit_start b
after=$(sum_of b) || fail "reading back after the restart"
[ "$before" = "$after" ] || fail "the data changed"
nbdsh_run b "assert h.pread(65536, $FORGED_BLOCK * 65536) == b'v1' * 32768" ||
    fail "the forged block does not read as written"
nbdkit_start_with vm2 "$PLUGIN" config="$CONF" \
    keys="$CLUSTER_DIR/client.key" volume=vm1 timeout=2 io-timeout=4
nbdsh_run vm2 "assert h.pread(3 * 65536, 0) == b'vm' * 32768 + b'v2' * 32768 * 2" ||
    fail "vm1 does not read as written"
"$ADMIN" export --dir "$CLUSTER_DIR" vm1@before "$TESTDIR/before.img" \
    >"$TESTDIR/log/export.log" 2>&1 ||
    { cat "$TESTDIR/log/export.log" >&2; fail "export vm1@before"; }
python3 -c "
import sys
d = open(sys.argv[1], 'rb').read(3 * 65536)
assert d == b'vm' * 32768 * 3, 'vm1@before differs'" "$TESTDIR/before.img" ||
    fail "the snapshot does not read as it was taken"
# A server replaced after the rotation gets the MAC key of epoch 1 under
# that number: reported as epoch 0, its key would keep writers from
# ever switching to a next epoch.
"$ADMIN" server replace --dir "$CLUSTER_DIR" --index 3 \
    >"$TESTDIR/log/replace.log" 2>&1 ||
    { cat "$TESTDIR/log/replace.log" >&2; fail "server replace"; }
grep -q "^epoch = 1$" "$CLUSTER_DIR/server-3.key" ||
    fail "the replaced server's key file is not of epoch 1"
server_kill 3
server_start 3
servers_reload
status_has "4 of 4 servers answer"
status_has "MAC keys: epoch 1 on every server that answered"
log "ok: epoch 0 retired; sha256 $after before and after"
