#!/bin/bash
# Rebuild of a volume written with encrypt=on (t=1): its registers hold
# sealed values, a block and its AEAD tag, whose fragments are longer
# than a plain block's.  A wiped server must rebuild them too (read as
# sealed, never opened: servers hold no volume key), and a mix of plain
# and sealed blocks in one pass.
#
# 1. 60 blocks written through an encrypt=on plugin, 20 through a plain
#    one (other blocks).
# 2. Server 0 wiped: it rebuilds all 80.
# 3. Server 1 stopped, server 3 wiped: both sets read back exactly, so
#    server 0's rebuilt fragments (sealed and plain) are right.
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

VOLKEY=$TESTDIR/volume.key
cluster_start 1
"$ADMIN" volume-key --out "$VOLKEY" >"$TESTDIR/log/volume-key.log" 2>&1 ||
    fail "bftblk volume-key failed: $(cat "$TESTDIR/log/volume-key.log")"
nbdkit_start enc encrypt=on volume-key="$VOLKEY"
nbdkit_start plain
heal_write enc s 10 60
heal_write plain p 200 20

heal_wipe 0
heal_wait_done 0
[ "$HEAL_REBUILT" -eq 80 ] ||
    fail "server-0 rebuilt $HEAL_REBUILT blocks, expected 80"
if grep -aq 'rebuild: block .*read failed\|not adopted' "$TESTDIR/log/server-0.log"; then
	fail "server-0 failed blocks: $(grep -a 'rebuild: block' "$TESTDIR/log/server-0.log" | head -3)"
fi

server_kill 1
heal_wipe 3
heal_check enc s 10 60 "sealed blocks from servers 0 (rebuilt), 2 and 3 (wiped)"
heal_check plain p 200 20 "plain blocks from servers 0 (rebuilt), 2 and 3 (wiped)"
log "ok"
