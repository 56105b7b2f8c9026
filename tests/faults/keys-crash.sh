#!/bin/bash
# A MAC key rotation that survives crashes in the middle (t=1,
# docs/key-epochs.md): of the admin during `keys reauth`, of a server
# the pass was talking to, and of a server while it retires the old
# epoch.
#
# 1. Finalized; 200 blocks of volume 0 and 300 of each of two named
#    volumes written, their sha256 as read back recorded.
# 2. `keys rotate`, every server reloads, the writers sign under epoch 1.
# 3. `keys reauth` runs; once it has saved where it is
#    (DIR/keys-reauth.state), server 2 hangs (SIGSTOP), so REAUTHs stop
#    reaching it; once the pass has saved a place past volume 0, the
#    admin is SIGKILLed, then the hung server 2 too, which is restarted
#    on its data with its key file of two epochs.
# 4. `keys reauth` again (at most 3 passes): the first resumes from the
#    state file, reads fewer blocks than a whole pass and gives server 2
#    what it missed; the passes end with every server taking every
#    version, and one more pass finds everything under epoch 1.
# 5. `keys retire` writes the files of epoch 1 alone.  Before the
#    servers reload, a candidate forged under the epoch-0 file is
#    written back and taken by all four, so no server's census can let
#    epoch 0 go.  Server 1 reloads (retiring), its census says a version
#    is still under epoch 0, and it is SIGKILLed there and restarted
#    from its file of epoch 1 alone; the others reload.  A writer that
#    still holds both epochs overwrites the block under epoch 1: servers
#    0, 2 and 3 log "MAC key epoch 0 retired", status says epoch 1 on
#    every server.
# 6. Every block reads back with the sha256 of before, through fresh
#    nbdkits on the retired key file; the forgery under epoch 0 is taken
#    by no server and a STORE under it is refused by all four.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_python_nbd /usr/bin/python3
TC=$BUILD/tests/bftblk-testclient
CONF=
STATE=
FORGED_BLOCK=900
# Blocks written: volume 0, vm1, vm2.
declare -A NB=([a]=200 [v1]=300 [v2]=300)
declare -A BEFORE=()

cluster_start 1
CONF=$CLUSTER_DIR/bftblk.conf
STATE=$CLUSTER_DIR/keys-reauth.state

# A sleep without a fork, for the tight polls below: a read that times
# out on a FIFO nobody writes.
mkfifo "$TESTDIR/nap"
exec {NAP}<>"$TESTDIR/nap"
nap() { read -r -t "$1" -u "$NAP" _ || true; }

# write_blocks NAME N: N blocks of data seeded by NAME and the block.
write_blocks()
{
	nbdsh_run "$1" "
import random
for b in range($2):
    h.pwrite(random.Random('$1-%d' % b).randbytes(65536), b * 65536)"
}

# sum_of NAME N: sha256 of the first N blocks of nbdkit NAME's export,
# read 16 blocks at a time.
sum_of()
{
	nbdsh_run "$1" "
import hashlib
s = hashlib.sha256()
for b in range(0, $2, 16):
    s.update(h.pread(min(16, $2 - b) * 65536, b * 65536))
print(s.hexdigest())"
}

# written_sum NAME N: sha256 of what write_blocks NAME N wrote.
written_sum()
{
	python3 -c "
import hashlib, random
s = hashlib.sha256()
for b in range($2):
    s.update(random.Random('$1-%d' % b).randbytes(65536))
print(s.hexdigest())"
}

forge()
{
	"$TC" forge-keys --config "$CONF" --keys "$TESTDIR/old/client.key" \
	    --block "$FORGED_BLOCK" >"$TESTDIR/log/forge-$1.log" 2>&1
}

# reauth_count LOG: the blocks a pass read ("N blocks read: ...").
reauth_count()
{
	grep -E '^[0-9]+ blocks read' "$1" | cut -d' ' -f1
}

# signing NAME WHAT: waits until nbdkit NAME signs under epoch 1.
signing()
{
	_wait_log "${NBDKIT_PID[$1]}" "$TESTDIR/log/nbdkit-$1.log" 0 \
	    "every server accepts epoch 1; writes are signed under it" \
	    "nbdkit $1 ($2)"
}

log "step 1: data in volume 0, vm1 and vm2"
"$ADMIN" cluster finalize --dir "$CLUSTER_DIR" \
    >"$TESTDIR/log/finalize.log" 2>&1 ||
    { cat "$TESTDIR/log/finalize.log" >&2; fail "cluster finalize"; }
for v in vm1 vm2; do
	"$ADMIN" volume create --dir "$CLUSTER_DIR" --name "$v" --size 32M \
	    >>"$TESTDIR/log/volume.log" 2>&1 ||
	    { cat "$TESTDIR/log/volume.log" >&2; fail "volume create $v"; }
done
nbdkit_start a
for v in 1 2; do
	nbdkit_start_with "v$v" "$PLUGIN" config="$CONF" \
	    keys="$CLUSTER_DIR/client.key" volume="vm$v" timeout=2 io-timeout=4
done
for w in a v1 v2; do
	write_blocks "$w" "${NB[$w]}" || fail "writing ${NB[$w]} blocks through $w"
	BEFORE[$w]=$(sum_of "$w" "${NB[$w]}") || fail "reading back $w"
	[ "${BEFORE[$w]}" = "$(written_sum "$w" "${NB[$w]}")" ] ||
	    fail "$w does not read back what was written to it"
	log "$w: ${NB[$w]} blocks, sha256 ${BEFORE[$w]}"
done
mkdir -p "$TESTDIR/old" "$TESTDIR/both"
cp "$CLUSTER_DIR"/*.key "$TESTDIR/old/"

log "step 2: rotate; every server reloads; the writers sign under epoch 1"
"$ADMIN" keys rotate --dir "$CLUSTER_DIR" --timeout 3 \
    >"$TESTDIR/log/rotate.log" 2>&1 ||
    { cat "$TESTDIR/log/rotate.log" >&2; fail "keys rotate"; }
servers_reload "MAC key epoch 1 accepted"
for w in a v1 v2; do
	signing "$w" "epoch 1"
done
cp "$CLUSTER_DIR/client.key" "$TESTDIR/both/"

log "step 3: reauth; server 2 hangs in it, then the admin and server 2 crash"
"$ADMIN" keys reauth --dir "$CLUSTER_DIR" --timeout 2 \
    >"$TESTDIR/log/reauth-killed.log" 2>&1 </dev/null &
RA=$!
_track "$RA" reauth-killed
deadline=$((SECONDS + 20))
k=0
until [ -e "$STATE" ]; do
	k=$((k + 1))
	if [ $((k % 50)) = 0 ] && ! _alive "$RA"; then
		cat "$TESTDIR/log/reauth-killed.log" >&2
		fail "keys reauth ended before it saved where it was"
	fi
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "keys reauth wrote no $STATE within 20 s"
	nap 0.002
done
server_kill 2 STOP
read -r first <"$STATE" || fail "cannot read $STATE"
log "injected: server-2 hung (SIGSTOP) once the pass saved \"$first\""
# The pass waits out its --timeout on server 2, then goes on without
# it and saves its place again past volume 0: the admin dies there.
deadline=$((SECONDS + 20))
while :; do
	[ -e "$STATE" ] || { cat "$TESTDIR/log/reauth-killed.log" >&2
	    fail "the pass ended before it could be killed"; }
	read -r _ _ _ vol _ <"$STATE" 2>/dev/null || vol=0
	[ "$vol" = 0 ] || break
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "the pass saved no place past volume 0 within 20 s"
	nap 0.002
done
kill -s KILL "$RA"
_reap "$RA"
_forget_pid "$RA"
read -r saved <"$STATE" || fail "the killed pass left no $STATE"
log "injected: keys reauth SIGKILLed (status $_STATUS) at \"$saved\""
grep -qE '^[0-9]+ blocks read' "$TESTDIR/log/reauth-killed.log" &&
    { cat "$TESTDIR/log/reauth-killed.log" >&2; fail "the pass had" \
    "finished: its kill crashed nothing"; }
read -r _ se _ sv _ sb <<<"$saved"
[ "$se" = 1 ] && [ "$sv" -gt 0 ] || fail "unexpected state \"$saved\""
server_kill 2 KILL
server_start 2
grep -q "^next-epoch = 1$" "$CLUSTER_DIR/server-2.key" ||
    fail "server-2.key does not hold the next epoch"
status_has "4 of 4 servers accept 1"
status_has "MAC keys: reauth pass to epoch 1 stopped at"
log "status: $(grep "reauth pass" "$TESTDIR/log/status.log")"

log "step 4: reauth resumes; passes until every server took every version"
ok=0
for p in 1 2 3; do
	rl=$TESTDIR/log/reauth-$p.log
	if "$ADMIN" keys reauth --dir "$CLUSTER_DIR" --timeout 3 \
	    >"$rl" 2>&1; then
		ok=1
	fi
	sed -n '/blocks read/,$p' "$rl" | sed "s/^/  pass $p: /" >&2
	if [ "$p" = 1 ]; then
		grep -q "resuming epoch 1's pass at volume $sv block $sb" "$rl" ||
		    { cat "$rl" >&2; fail "the pass did not resume from" \
		    "\"$saved\""; }
		resumed=$(reauth_count "$rl")
		[ -n "$resumed" ] || { cat "$rl" >&2; fail "the resumed pass" \
		    "printed no count"; }
		took2=$(sed -n 's/^server 2: \([0-9]*\) taken.*/\1/p' "$rl")
		[ "${took2:-0}" -gt 0 ] || { cat "$rl" >&2; fail "the resumed" \
		    "pass gave server 2 nothing, yet it missed what came after" \
		    "it hung"; }
	fi
	[ "$ok" = 0 ] || break
done
[ "$ok" = 1 ] || fail "keys reauth still fails after 3 passes"
[ -e "$STATE" ] && fail "a finished pass left $STATE"
keys_reauth reauth-check "the checking pass"
grep -qE "^[0-9]+ blocks read: 0 re-authenticated, [0-9]+ under epoch 1 already, [0-9]+ never written, 0 failed" \
    "$TESTDIR/log/reauth-check.log" ||
    { cat "$TESTDIR/log/reauth-check.log" >&2; fail "a whole pass after" \
    "the resumed ones found versions under epoch 0"; }
full=$(reauth_count "$TESTDIR/log/reauth-check.log")
written=$((NB[a] + NB[v1] + NB[v2]))
[ "$full" -ge "$written" ] ||
    fail "a whole pass read $full blocks, fewer than the $written written"
[ "$resumed" -lt "$full" ] ||
    fail "the resumed pass read $resumed blocks, a whole one $full"
log "resumed at \"$saved\": $resumed blocks read, server 2 took $took2;" \
    "a whole pass reads $full, all under epoch 1 already"

# The servers' census (a pass every few seconds) must come down to no
# version under epoch 0 on every server, server 2 included.
deadline=$((SECONDS + 20))
while :; do
	"$ADMIN" status --dir "$CLUSTER_DIR" >"$TESTDIR/log/status.log" 2>&1 ||
	    true
	census=$(grep "versions still under epoch 0:" "$TESTDIR/log/status.log" ||
	    true)
	counts=$(grep -oE "server [0-9]+ [0-9]+" <<<"$census" | cut -d' ' -f3 |
	    sort -u | tr '\n' ' ')
	[ "$(grep -oE "server [0-9]+ [0-9]+" <<<"$census" | wc -l)" = 4 ] &&
	    [ "$counts" = "0 " ] && break
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "every pass succeeded, yet 20 s later the servers still" \
	    "count versions under epoch 0, which no pass re-authenticates" \
	    "any more (the passes found them under epoch 1 already):" \
	    "${census:-no census in bftblk status}"
	sleep 1
done
log "census: ${census%%;*}"

log "step 5: retire; server 1 crashes while retiring"
keys_retire 20
for f in client.key server-0.key server-1.key server-2.key server-3.key; do
	grep -q "^epoch = 1$" "$CLUSTER_DIR/$f" || fail "$f is not at epoch 1"
	grep -q "next-" "$CLUSTER_DIR/$f" && fail "$f still holds two epochs"
done
# The files are written, no server has reloaded: epoch 0 still counts.
if forge before-reload; then
	cat "$TESTDIR/log/forge-before-reload.log" >&2
	fail "no server took a forgery under epoch 0 before reloading: the" \
	    "attack tests nothing"
fi
grep -q "4 of 4 servers took it" "$TESTDIR/log/forge-before-reload.log" ||
    { cat "$TESTDIR/log/forge-before-reload.log" >&2; fail "the forgery" \
    "did not reach every server"; }
log "injected: block $FORGED_BLOCK forged under epoch 0, taken by 4 of 4"
l1=$TESTDIR/log/server-1.log
off=$(stat -c %s "$l1")
kill -s HUP "${SERVER_PID[1]}"
_wait_log "${SERVER_PID[1]}" "$l1" "$off" "reload: retiring MAC key epoch 0" \
    "server-1 (retiring)"
# The census pauses 5 s between passes: its count may take two.
BFTBLK_WAIT=20 _wait_log "${SERVER_PID[1]}" "$l1" "$off" \
    "are still under epoch 0; retiring it waits" "server-1 (census)"
server_kill 1 KILL
tail -c "+$((off + 1))" "$l1" | grep -q "MAC key epoch 0 retired" &&
    fail "server-1 retired epoch 0 before its crash: it crashed too late"
log "injected: server-1 SIGKILLed while retiring, its census waiting"
server_start 1
for i in 0 2 3; do
	off=$(stat -c %s "$TESTDIR/log/server-$i.log")
	kill -s HUP "${SERVER_PID[$i]}"
	_wait_log "${SERVER_PID[$i]}" "$TESTDIR/log/server-$i.log" "$off" \
	    "reload: retiring MAC key epoch 0" "server-$i (retiring)"
done
# A writer that still holds both epochs (as one whose host has not got
# the new file yet) overwrites the forged block under epoch 1.
nbdkit_start_with w2 "$PLUGIN" config="$CONF" \
    keys="$TESTDIR/both/client.key" shared=on volume-id=0 timeout=2 \
    io-timeout=4
signing w2 "both epochs"
nbdsh_run w2 "h.pwrite(b'w2' * 32768, $FORGED_BLOCK * 65536)" ||
    fail "overwriting the forged block under epoch 1"
nbdkit_stop w2
for i in 0 2 3; do
	BFTBLK_WAIT=25 _wait_log "${SERVER_PID[$i]}" \
	    "$TESTDIR/log/server-$i.log" 0 "MAC key epoch 0 retired" \
	    "server-$i (retired)"
done
status_has "MAC keys: epoch 1 on every server that answered"
for w in a v1 v2; do
	_wait_log "${NBDKIT_PID[$w]}" "$TESTDIR/log/nbdkit-$w.log" 0 \
	    "holds epoch 1 alone" "nbdkit $w (retired key file)"
done

log "step 6: the data, and the epoch-0 file again"
if ! forge after; then
	cat "$TESTDIR/log/forge-after.log" >&2
	fail "a server took a forgery under the retired epoch"
fi
[ "$(grep -c ": lc unchanged" "$TESTDIR/log/forge-after.log")" = 4 ] ||
    { cat "$TESTDIR/log/forge-after.log" >&2; fail "not every server" \
    "answered with its lc unchanged"; }
"$TC" partial-write --config "$CONF" --keys "$TESTDIR/old/client.key" \
    --block 1000 --stop-after store >"$TESTDIR/log/store.log" 2>&1 || true
[ "$(grep -c ": STORE MAC did not verify" "$TESTDIR/log/store.log")" = 4 ] ||
    { cat "$TESTDIR/log/store.log" >&2; fail "a STORE under the retired" \
    "epoch was not refused by every server"; }
for w in a v1 v2; do
	nbdkit_stop "$w"
done
nbdkit_start fa
nbdkit_start_with f1 "$PLUGIN" config="$CONF" \
    keys="$CLUSTER_DIR/client.key" volume=vm1 timeout=2 io-timeout=4
nbdkit_start_with f2 "$PLUGIN" config="$CONF" \
    keys="$CLUSTER_DIR/client.key" volume=vm2 timeout=2 io-timeout=4
for w in a v1 v2; do
	after=$(sum_of "f${w#v}" "${NB[$w]}") || fail "reading back $w"
	[ "$after" = "${BEFORE[$w]}" ] ||
	    fail "$w changed: sha256 $after, ${BEFORE[$w]} before"
	log "$w: sha256 ${BEFORE[$w]} before and after"
done
nbdsh_run fa "assert h.pread(65536, $FORGED_BLOCK * 65536) == b'w2' * 32768" ||
    fail "block $FORGED_BLOCK does not read as overwritten under epoch 1"
log "ok: the rotation survived the admin's crash, server 2's hang and" \
    "crash in the pass and server 1's crash while retiring"
