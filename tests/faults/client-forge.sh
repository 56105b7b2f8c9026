#!/bin/bash
# A Byzantine reader writes back forged candidates (t=1).
#
# The reader is an authorized read-only client ("forger", added with
# bftblk client add --role ro while the servers run, then SIGHUP): it has
# a channel key but no MAC key, which is all a reader may ever hold.
# bftblk-testclient forge-filter / forge-repair COLLECT the real lc of a
# block and send FILTER / REPAIR with forgeries of it: random nonces
# under huge timestamps, the real ts and vec with a wrong nonce, the real
# ts and nonce with a garbled vec, the real candidate with a garbled ts
# MAC, with a higher ts.num, under another writer id, and mixes of those
# with the real candidate.  After each, every server's lc is COLLECTed:
# a correct server must never take a forgery (the tool exits 1 if one
# did).  This runs on a block all servers agree on, and on a block where
# a writer crashed after its COMPLETE reached only server 0, so servers
# 1-3 hold the new write's Hist entry under an older lc: the only state
# in which a forgery under the real timestamp can change anything.
#
# Then, for each forgery under the real timestamp, a fresh block is put
# in that state, the forgery is sent to every server, server 0 (the only
# one with the real lc) is killed, and a fresh nbdkit must read the old
# or the new value byte for byte (never zeros: the old one had completed),
# write a newer one and read it back, also after server 0 is back.  The
# crashed writer's value may still show up after that newer write (its
# WRITE never completed, so it may take effect at any time), but once
# it has, no read may go back to the newer one.
# Finally every block must read back as written, through two nbdkits.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TC=$BUILD/tests/bftblk-testclient
[ -x "$TC" ] || fail "$TC is missing: run make first"

cluster_start 1
CONF=$CLUSTER_DIR/bftblk.conf
KEYS=$CLUSTER_DIR/client.key
client_add forger ro
FORGER=$CLUSTER_DIR/forger.key
mkdir -p "$TESTDIR/v"
head -c 65536 /dev/zero >"$TESTDIR/v/zeros"
# mkval NAME...: the 64 KiB value of each seed NAME, in $TESTDIR/v.
mkval()
{
	local s
	for s in "$@"; do
		"$TC" pattern --data-seed "$s" >"$TESTDIR/v/$s" ||
		    fail "pattern $s"
	done
}
py="
import os
BS = 65536
TD = '$TESTDIR'

def val(name):
    with open('%s/v/%s' % (TD, name), 'rb') as f:
        return f.read()

# A completed write starts a new history for check(): forget the past.
def write(block, name):
    h.pwrite(val(name), block * BS)
    if os.path.exists('%s/seen-%d' % (TD, block)):
        os.unlink('%s/seen-%d' % (TD, block))
    print('wrote %s to block %d' % (name, block))

# Reads block several times: every read must be byte for byte one of
# names (oldest first), and never older than what a read returned before.
def check(block, names, what, reads=3):
    sf = '%s/seen-%d' % (TD, block)
    seen = open(sf).read() if os.path.exists(sf) else None
    lo = names.index(seen) if seen in names else 0
    for r in range(reads):
        d = h.pread(BS, block * BS)
        got = [nm for nm in names if val(nm) == d]
        if not got:
            what_is = ('zeros' if d == bytes(BS) else 'the value %s' % nm
                       for nm in sorted(os.listdir(TD + '/v'))
                       if val(nm) == d)
            raise AssertionError('%s: block %d read %s, expected one of %s'
                                 % (what, block, next(what_is,
                                    'unknown data'), names))
        i = names.index(got[0])
        if i < lo:
            raise AssertionError('%s: block %d read %s after a read had '
                                 'returned %s' % (what, block, got[0],
                                                  names[lo]))
        lo = i
    open(sf, 'w').write(names[lo])
    print('%s: block %d reads %s (%d reads)' % (what, block, names[lo], reads))
"
failures=()
# forge CMD BLOCK [ARGS]: runs the tool; a forgery accepted is a failure.
forge()
{
	local cmd=$1 block=$2 out rc=0
	shift 2
	out=$TESTDIR/log/$cmd-$block.log
	"$TC" "$cmd" --config "$CONF" --keys "$FORGER" --block "$block" "$@" \
	    >"$out" 2>&1 ||
	    rc=$?
	grep -E '^(FORGED|servers with|forging)|forgeries accepted' "$out" |
	    sed "s/^/  $cmd $block: /" >&2
	if [ "$rc" -ne 0 ]; then
		failures+=("$cmd on block $block $*: exit $rc (see $out)")
	fi
}
# lagging BLOCK SEED: a write of SEED whose COMPLETE reached server 0 only.
lagging()
{
	"$TC" partial-write --config "$CONF" --keys "$KEYS" --block "$1" \
	    --data-seed "$2" --stop-after complete --complete-to 0 \
	    >"$TESTDIR/log/partial-$1-$2.log" 2>&1 ||
	    { cat "$TESTDIR/log/partial-$1-$2.log" >&2; fail "partial-write"; }
	log "block $1: $2 stored everywhere, completed at server 0 only"
}

mkval a1 b1 b2 b3 r1 r2
for k in 0 1 2; do
	mkval "c$k-old" "c$k-new" "c$k-later"
done
nbdkit_start nbd
nbdsh_run nbd "$py
write(20, 'a1')
write(21, 'b1')
write(22, 'r1')
for k in range(3):
    write(30 + k, 'c%d-old' % k)
h.flush()
"

log "forgeries against a block every server agrees on (20)"
forge forge-filter 20
forge forge-repair 20
log "forgeries against blocks with a crashed writer's lagging COMPLETE"
lagging 21 b2
forge forge-filter 21
lagging 22 r2
forge forge-repair 22

for k in 0 1 2; do
	b=$((30 + k))
	log "block $b: forgery $k to every server, then server-0 is killed"
	lagging "$b" "c$k-new"
	forge forge-filter "$b" --forgery "$k"
	server_kill 0 KILL
	nbdkit_start "probe$k"
	nbdsh_run "probe$k" "$py
check($b, ['c$k-old', 'c$k-new'], 'server 0 down')
" || failures+=("block $b: bad read after forgery $k with server 0 down")
	nbdsh_run "probe$k" "$py
write($b, 'c$k-later')
check($b, ['c$k-later', 'c$k-new'], 'server 0 down, after a new write')
" || failures+=("block $b: write lost after forgery $k with server 0 down")
	nbdkit_stop "probe$k"
	server_start 0
	wait_connected 0
done

log "every block reads back as written, through two nbdkits"
check_all="
check(20, ['a1'], 'end')
check(21, ['b1', 'b2'], 'end')
check(22, ['r1', 'r2'], 'end')
for k in range(3):
    check(30 + k, ['c%d-later' % k, 'c%d-new' % k], 'end')
"
nbdsh_run nbd "$py$check_all" || failures+=("final check through nbd")
nbdkit_start fresh
nbdsh_run fresh "$py$check_all" || failures+=("final check through fresh")

if [ "${#failures[@]}" -gt 0 ]; then
	printf 'failure: %s\n' "${failures[@]}" >&2
	fail "${#failures[@]} checks failed"
fi
log "ok: no forgery accepted, every read byte-exact"
