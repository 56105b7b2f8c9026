#!/bin/bash
# A server's channel key rotated in place, with no moment in which
# anyone is locked out of it (t=1).
#
# 1. Before `cluster finalize`, `server rotate` is refused, naming it,
#    and changes nothing: release 0.2.0 cannot load the line it adds.
# 2. Finalized; nbdkit writes and reads back in a loop that must never
#    see an error.  `server rotate --index 2`: server-2.key.new (0600)
#    and server.2.pk.next; servers reload; ping reaches all four.
#    --finish is refused while server 2 still runs its old key.
# 3. Server 2 restarts under the new key: ping reaches all four, and
#    with server 0 stopped the writer goes on, so nbdkit reached server 2
#    under its new key with no help; libbftblk as server 2 (its peer
#    identity, server-key=) reads under the new key too.
# 4. --finish: server.2.pk is the new key, no .next line, server-2.key
#    the new file.  The writer saw no error, and nbdkit never dropped a
#    connection for the keys changing.  A host with the file from before
#    the rotation cannot reach server 2 any more; the current file can.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_python_nbd /usr/bin/python3
cluster_start 1
CONF=$CLUSTER_DIR/bftblk.conf
mkdir -p "$TESTDIR/old"
cp "$CONF" "$CLUSTER_DIR/client.key" "$TESTDIR/old/"

# writer NAME: checked_writer (lib.sh) for at most 150 s.
writer() { checked_writer "$1" 150; }

# rotate [ARGS...]: bftblk server rotate --index 2, output in rotate.log.
rotate()
{
	"$ADMIN" server rotate --dir "$CLUSTER_DIR" --index 2 --timeout 3 \
	    "$@" >"$TESTDIR/log/rotate.log" 2>&1
}

# ping_dir DIR: bftblk ping with DIR's bftblk.conf, output in ping.log.
ping_dir()
{
	"$ADMIN" ping --dir "$1" --timeout 3 >"$TESTDIR/log/ping.log" 2>&1
}

log "step 1: refused before the cluster is finalized"
rotate && fail "server rotate ran on a cluster not finalized"
grep -q "bftblk cluster finalize" "$TESTDIR/log/rotate.log" ||
    { cat "$TESTDIR/log/rotate.log" >&2; fail "the refusal does not say" \
    "how to finalize"; }
cmp -s "$CONF" "$TESTDIR/old/bftblk.conf" || fail "the refusal changed" \
    "bftblk.conf"
[ ! -e "$CLUSTER_DIR/server-2.key.new" ] || fail "the refusal left a key"

log "step 2: finalize, write, rotate"
"$ADMIN" cluster finalize --dir "$CLUSTER_DIR" \
    >"$TESTDIR/log/finalize.log" 2>&1 ||
    { cat "$TESTDIR/log/finalize.log" >&2; fail "cluster finalize"; }
nbdkit_start a
writer a &
WA=$!
_track "$WA" writer-a
sleep 2
rotate || { cat "$TESTDIR/log/rotate.log" >&2; fail "server rotate"; }
[ "$(stat -c %a "$CLUSTER_DIR/server-2.key.new")" = 600 ] ||
    fail "server-2.key.new is not mode 0600"
grep -q "^server.2.pk.next = " "$CONF" || fail "no server.2.pk.next"
rotate && fail "a second rotate started"
servers_reload
# The plugin looks at bftblk.conf every two seconds.
sleep 3
ping_dir "$CLUSTER_DIR" || { cat "$TESTDIR/log/ping.log" >&2;
    fail "ping during the rotation"; }
grep -q "4 of 4 servers reachable" "$TESTDIR/log/ping.log" ||
    { cat "$TESTDIR/log/ping.log" >&2; fail "not all servers reached"; }
rotate --finish && fail "--finish ran while server 2 runs its old key"
grep -q "still proves its old key" "$TESTDIR/log/rotate.log" ||
    { cat "$TESTDIR/log/rotate.log" >&2; fail "the early --finish did" \
    "not say why"; }
grep -q "^server.2.pk.next = " "$CONF" || fail "the early --finish" \
    "changed bftblk.conf"

log "step 3: server 2 restarts under its new key"
cp "$CLUSTER_DIR/server-2.key.new" "$CLUSTER_DIR/server-2.key"
server_kill 2
server_start 2
sleep 3
ping_dir "$CLUSTER_DIR" || { cat "$TESTDIR/log/ping.log" >&2;
    fail "ping after the restart"; }
grep -q "4 of 4 servers reachable" "$TESTDIR/log/ping.log" ||
    { cat "$TESTDIR/log/ping.log" >&2; fail "server 2 not reached under" \
    "its new key"; }
# libbftblk as server 2, under its new key: the peers let it in.
nbdkit_start_with peer "$PLUGIN" config="$CONF" \
    server-key="$CLUSTER_DIR/server-2.key" timeout=5
nbdsh_run peer "assert len(h.pread(65536, 0)) == 65536" ||
    fail "server 2's peer identity cannot read under its new key"
grep -q "channel refused" "$TESTDIR/log/nbdkit-peer.log" &&
    fail "a server refused server 2's new key"
nbdkit_stop peer
# Without server 0 every write needs server 2.
server_kill 0
sleep 3
_alive "$WA" || { cat "$TESTDIR/log/writer-a.log" >&2; fail "the writer" \
    "stopped with server 0 down"; }
server_start 0
sleep 2

log "step 4: rotate --finish"
NEWPK=$(sed -n 's/^server\.2\.pk\.next = //p' "$CONF")
rotate --finish || { cat "$TESTDIR/log/rotate.log" >&2; fail "--finish"; }
grep -q "^server\.2\.pk = $NEWPK\$" "$CONF" || fail "server.2.pk is not" \
    "the new key"
grep -q "^server\.2\.pk\.next" "$CONF" && fail "the .next line stayed"
[ ! -e "$CLUSTER_DIR/server-2.key.new" ] || fail "server-2.key.new stayed"
servers_reload
sleep 3
touch "$TESTDIR/stop-a"
_reap "$WA"
_forget_pid "$WA"
[ "$_STATUS" -eq 0 ] ||
    { cat "$TESTDIR/log/writer-a.log" >&2; fail "the writer failed"; }
cat "$TESTDIR/log/writer-a.log" >&2
grep -q "reconnecting" "$TESTDIR/log/nbdkit-a.log" &&
    { grep "reconnecting" "$TESTDIR/log/nbdkit-a.log" >&2; fail "nbdkit" \
    "dropped a connection for the keys changing"; }
nbdkit_stop a
ping_dir "$TESTDIR/old"
grep -q "^server 2 .*: unreachable" "$TESTDIR/log/ping.log" ||
    { cat "$TESTDIR/log/ping.log" >&2; fail "the old key of server 2 is" \
    "still accepted"; }
log "with the old file: $(grep '^server 2 ' "$TESTDIR/log/ping.log")"
if ! ping_dir "$CLUSTER_DIR" ||
    ! grep -q "4 of 4 servers reachable" "$TESTDIR/log/ping.log"; then
	cat "$TESTDIR/log/ping.log" >&2
	fail "ping after the rotation"
fi
log "ok"
