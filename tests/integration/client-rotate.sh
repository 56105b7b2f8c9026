#!/bin/bash
# A client's channel key rotated in place, with no moment in which its
# holder is locked out (t=1).
#
# 1. Client app (rw) writes through nbdkit a under its key, in a loop
#    that must never see an error.
# 2. `client rotate`: app.key.new is written and let in beside the old
#    key (as app.next); servers reload; both keys connect (bftblk ping),
#    and a keeps writing.
# 3. The holder switches: nbdkit b under app.key.new takes over the
#    writing loop; a stops.
# 4. `client rotate --finish`: servers reload; b's connections stay and
#    its loop never fails; the old key is refused; app.key is the new
#    one and app.key.new is gone; the config names app once.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NBDKIT_PIN=
NBDKIT_SHARED=
require_python_nbd /usr/bin/python3
cluster_start 1
client_add app rw
cp "$CLUSTER_DIR/app.key" "$TESTDIR/app-old.key"

# writer NAME: checked_writer (lib.sh) for at most 120 s.
writer() { checked_writer "$1" 120; }

ping_with()
{
	"$ADMIN" ping --dir "$CLUSTER_DIR" --keys "$1" --timeout 3 \
	    >"$TESTDIR/log/ping.log" 2>&1
}

log "step 1: app writes under its key"
nbdkit_start_with a "$PLUGIN" config="$CLUSTER_DIR/bftblk.conf" \
    keys="$CLUSTER_DIR/app.key" shared=on
writer a &
WA=$!
_track "$WA" writer-a
sleep 2

log "step 2: rotate: the new key let in beside the old"
"$ADMIN" client rotate --dir "$CLUSTER_DIR" --name app \
    >"$TESTDIR/log/rotate.log" 2>&1 ||
    { cat "$TESTDIR/log/rotate.log" >&2; fail "client rotate"; }
[ -f "$CLUSTER_DIR/app.key.new" ] || fail "no app.key.new"
grep -q "^client.app.next = rw " "$CLUSTER_DIR/bftblk.conf" ||
    fail "the new key is not in bftblk.conf"
"$ADMIN" client rotate --dir "$CLUSTER_DIR" --name app \
    >"$TESTDIR/log/rotate2.log" 2>&1 && fail "a second rotate started"
servers_reload
ping_with "$TESTDIR/app-old.key" || fail "the old key during the rotation"
ping_with "$CLUSTER_DIR/app.key.new" || fail "the new key during the rotation"

log "step 3: the holder moves to the new key file"
nbdkit_start_with b "$PLUGIN" config="$CLUSTER_DIR/bftblk.conf" \
    keys="$CLUSTER_DIR/app.key.new" shared=on
writer b &
WB=$!
_track "$WB" writer-b
sleep 2
touch "$TESTDIR/stop-a"
_reap "$WA"
_forget_pid "$WA"
[ "$_STATUS" -eq 0 ] ||
    { cat "$TESTDIR/log/writer-a.log" >&2; fail "writer a failed"; }
cat "$TESTDIR/log/writer-a.log" >&2
nbdkit_stop a

log "step 4: rotate --finish: only the new key"
"$ADMIN" client rotate --dir "$CLUSTER_DIR" --name app --finish \
    >"$TESTDIR/log/finish.log" 2>&1 ||
    { cat "$TESTDIR/log/finish.log" >&2; fail "rotate --finish"; }
servers_reload
sleep 2
touch "$TESTDIR/stop-b"
_reap "$WB"
_forget_pid "$WB"
[ "$_STATUS" -eq 0 ] ||
    { cat "$TESTDIR/log/writer-b.log" >&2; fail "writer b failed"; }
cat "$TESTDIR/log/writer-b.log" >&2
ping_with "$TESTDIR/app-old.key" && fail "the old key still gets in"
log "the old key: $(tail -n 1 "$TESTDIR/log/ping.log")"
ping_with "$CLUSTER_DIR/app.key" || fail "the new key (now app.key)"
[ ! -e "$CLUSTER_DIR/app.key.new" ] || fail "app.key.new is still there"
[ "$(grep -c '^client\.app' "$CLUSTER_DIR/bftblk.conf")" = 1 ] ||
    fail "bftblk.conf does not name app once"
grep -q "^client.app = rw " "$CLUSTER_DIR/bftblk.conf" ||
    fail "app is not named app again"
log "ok"
