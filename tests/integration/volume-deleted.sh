#!/bin/bash
# A deleted volume stays deleted (t=1).
#
# 1. Volume v is created and written through nbdkit.  A read-only key
#    COLLECTs one of its blocks' lc straight from the servers and keeps
#    the candidate (bftblk-testclient collect-save).
# 2. `bftblk volume delete v`.  The reader sends the kept candidate to
#    every server as a FILTER, whose write-back once took it into lc
#    (lc is zero after the DROP and its MACs verify) and brought the
#    volume back on every server, where nothing could delete it again.
#    Now every server must answer status 12 (volume deleted), and no
#    server may list the volume in `bftblk status`.
# 3. The same after every server restarted (so from the DROP record
#    and the index checkpoint on disk), with server 3's checkpoint
#    removed so that it replays its whole log.
# 4. A new volume gets an id above the deleted one's.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NBDKIT_PIN=			# volumes by export name

TC=$BUILD/tests/bftblk-testclient
[ -x "$TC" ] || fail "$TC is missing: run make first"

cluster_start 1
CONF=$CLUSTER_DIR/bftblk.conf
client_add reader ro

log "step 1: v written, a reader keeps a candidate of it"
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name v --size 64M \
    >/dev/null || fail "creating v"
"$ADMIN" volume list --dir "$CLUSTER_DIR" --json >"$TESTDIR/list.json" ||
    fail "volume list"
VOL=$(python3 -c "
import json, sys
print([x['id'] for x in json.load(open(sys.argv[1]))['volumes']
       if x['name'] == 'v'][0])" "$TESTDIR/list.json") ||
    fail "no id for v"
nbdkit_start nbd
PATH=/usr/bin:$PATH nbdsh -u "nbd+unix:///v?socket=$TESTDIR/nbd.sock" -c "
h.pwrite(b'resurrect me' * 5461 + b'....', 2 * 65536)
h.flush()
" || fail "writing v"
nbdkit_stop nbd
ADDR=$(((VOL << 40) | 2))
"$TC" collect-save --config "$CONF" --keys "$CLUSTER_DIR/reader.key" \
    --block "$ADDR" --data-seed "$TESTDIR/cand" \
    >"$TESTDIR/log/collect.log" 2>&1 ||
    { cat "$TESTDIR/log/collect.log" >&2; fail "collect-save"; }
cat "$TESTDIR/log/collect.log" >&2

# filter_back WHAT: the kept candidate to every server, each refusing it.
filter_back()
{
	local out=$TESTDIR/log/filter-$1.log i
	"$TC" filter-back --config "$CONF" --keys "$CLUSTER_DIR/reader.key" \
	    --block "$ADDR" --data-seed "$TESTDIR/cand" >"$out" 2>&1 ||
	    { cat "$out" >&2; fail "filter-back ($1)"; }
	sed "s/^/  $1: /" "$out" >&2
	for ((i = 0; i < CLUSTER_N; i++)); do
		grep -q "^server $i: FILTER status 12 " "$out" ||
		    fail "server-$i took the deleted volume's candidate ($1)"
	done
	"$ADMIN" status --dir "$CLUSTER_DIR" --json >"$TESTDIR/status.json" ||
	    fail "bftblk status ($1)"
	python3 -c "
import json, sys
for s in json.load(open(sys.argv[1]))['servers']:
    ids = [x['id'] for x in s.get('volumes', [])]
    assert $VOL not in ids, 'volume $VOL is listed again: %s' % ids
" "$TESTDIR/status.json" || fail "a server lists the deleted volume ($1)"
	log "$1: every server refused the write-back with status 12"
}

log "step 2: v deleted, its candidate written back"
"$ADMIN" volume delete --dir "$CLUSTER_DIR" --name v >/dev/null ||
    fail "deleting v"
filter_back "after the delete"

log "step 3: after a restart of every server"
for ((i = 0; i < CLUSTER_N; i++)); do
	server_kill "$i"
done
rm -f "$TESTDIR/data/server-3/index.ckpt"
for ((i = 0; i < CLUSTER_N; i++)); do
	server_start "$i"
done
filter_back "after a restart"

log "step 4: ids are not reused"
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name w --size 64M \
    >/dev/null || fail "creating w"
"$ADMIN" volume list --dir "$CLUSTER_DIR" --json >"$TESTDIR/list2.json" ||
    fail "volume list"
python3 -c "
import json, sys
w = [x['id'] for x in json.load(open(sys.argv[1]))['volumes']
     if x['name'] == 'w'][0]
assert w > $VOL, 'w has id %d, v had $VOL' % w
" "$TESTDIR/list2.json" || fail "w reuses or precedes v's id"
log "ok"
