#!/bin/bash
# A server whose host is lost is replaced by a new one, with a new key
# and a new address, and rebuilds; the old key is refused (t=1).
#
# 1. 150 blocks written.  Server 1 is killed and its data directory
#    removed (the host is gone).
# 2. bftblk server replace --index 1 --host 127.0.0.1:NEWPORT: a new
#    server-1.key, the old kept as server-1.key.replaced, bftblk.conf
#    updated.  The other servers get SIGHUP; the running plugin must
#    notice the change by itself.
# 3. Server 1 starts at the new address on an empty data directory and
#    rebuilds all 150 blocks.
# 4. The old key is refused: a plugin connecting with it as a peer
#    (server-key=, and the configuration as it was) is turned away by
#    the other servers.
# 5. Server 2 stopped and server 3 wiped: reads need the new server 1's
#    fragments, and every block reads back exactly.
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

cluster_start 1
nbdkit_start nbd
heal_write nbd a 0 150
NLOG=$TESTDIR/log/nbdkit-nbd.log

server_kill 1 KILL
rm -rf "$TESTDIR/data/server-1"
log "injected: server 1's host is lost (killed, data directory gone)"

cp "$CLUSTER_DIR/bftblk.conf" "$TESTDIR/old.conf"
newport=$(_pick_ports 1)
"$ADMIN" server replace --dir "$CLUSTER_DIR" --index 1 \
    --host "127.0.0.1:$newport" >"$TESTDIR/log/replace.out" 2>&1 ||
    { cat "$TESTDIR/log/replace.out"; fail "bftblk server replace failed"; }
[ -f "$CLUSTER_DIR/server-1.key.replaced" ] ||
    fail "the old key file was not kept aside"
grep -q "^server.1 = 127.0.0.1:$newport\$" "$CLUSTER_DIR/bftblk.conf" ||
    fail "bftblk.conf does not give server 1's new address"
log "replaced: $(head -1 "$TESTDIR/log/replace.out")"
servers_reload
for i in 0 2 3; do
	grep -aq "reload: server 1 is now 127.0.0.1:$newport with a new key" \
	    "$TESTDIR/log/server-$i.log" ||
	    fail "server $i did not take server 1's new address and key"
done

mkdir -p "$TESTDIR/data/server-1"
heal_mark 1
server_start 1
heal_wait_done 1
[ "$HEAL_REBUILT" -eq 150 ] ||
    fail "the new server 1 rebuilt $HEAL_REBUILT blocks, expected 150"
deadline=$((SECONDS + 15))
until grep -aq "server 1 is now 127.0.0.1:$newport" "$NLOG"; do
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "the plugin did not notice server 1's new address"
	sleep 0.2
done
log "plugin: $(grep -a -m1 -o "server 1 is now 127.0.0.1:$newport.*" "$NLOG")"

# The old identity, with the configuration it knew, is refused.
nbdkit_start_with old "$PLUGIN" config="$TESTDIR/old.conf" \
    server-key="$CLUSTER_DIR/server-1.key.replaced" timeout=5
deadline=$((SECONDS + 15))
until grep -aq "channel refused: unknown client key" \
    "$TESTDIR/log/nbdkit-old.log"; do
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "a plugin with the old server 1 key was not refused"
	sleep 0.2
done
log "old key: $(grep -a -m1 -o 'server [0-9]: channel refused.*' "$TESTDIR/log/nbdkit-old.log")"
nbdkit_stop old

server_kill 2
heal_wipe 3
heal_check nbd a 0 150 "servers 0, 1 (new host, rebuilt) and 3 (wiped)"
log "ok"
