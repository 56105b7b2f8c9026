#!/bin/bash
# A holder's lease renewal that meets a snapshot's cut (t=1, volume v).
#
# The cut keeps the volume's view at the holder's generation g, then
# writes the holder's claim back under g+1 (docs/snapshots.md); that
# write's STORE fences g on the servers, and a read returns the claim
# under g+1 only once its COMPLETE is in.  A renewal between the two
# reads the claim under g and is refused.  The holder must follow the
# claim to g+1 and write its renewal again, as a fenced data write does:
# left unwritten, a few cuts in a row that each meet a renewal fence a
# holder whom nobody took the volume from (snapshot-race met that).
#
# To hold the cut between STORE and COMPLETE, the admin reaches the
# servers through delay proxies (+DELAY ms each way).  Once n-t servers
# keep the view, the proxies are armed (tests/tools/delay-proxy.py):
# the write-back's STORE passes, its replies are held.  The holder's
# next renewal (every 5 s, lease 15 s) is refused by the servers; then
# the replies go on and the cut finishes.  The holder must log that it
# took g+1 from the snapshot, never that a renewal was not written or
# that its lease was fenced or lost, and go on writing.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NBDKIT_PIN=			# volumes by export name
NBDKIT_SHARED=			# one writer per volume: the lease holder
PY=/usr/bin/python3
require_python_nbd "$PY"
DELAY=${RENEW_PROXY_DELAY_MS:-250}

cluster_start 1
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name v --size 4M \
    >/dev/null || fail "creating v"

NBDKIT_ARGS="-v -D nbdkit.backend.datapath=0" nbdkit_start holder
HLOG=$TESTDIR/log/nbdkit-holder.log
URI="nbd+unix:///v?socket=$TESTDIR/holder.sock"

# The holder's client, connected throughout (the plugin holds the lease
# while a client is): each line read from the fifo is a tag, written to
# block 3, flushed and read back; "ok TAG" or "err TAG MSG" in its log.
mkfifo "$TESTDIR/cmd"
cat >"$TESTDIR/client.py" <<'EOF'
import sys
import nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
log = open(sys.argv[3], "w", buffering=1)
for tag in open(sys.argv[2]):
    tag = tag.strip()
    data = (tag.encode() * 65536)[:65536]
    try:
        h.pwrite(data, 3 * 65536)
        h.flush()
        assert h.pread(65536, 3 * 65536) == data, "reads back otherwise"
        log.write("ok %s\n" % tag)
    except (nbd.Error, AssertionError) as e:
        log.write("err %s %s\n" % (tag, e))
h.shutdown()
EOF
"$PY" "$TESTDIR/client.py" "$URI" "$TESTDIR/cmd" "$TESTDIR/client.log" \
    >"$TESTDIR/log/client.log" 2>&1 &
CLIENT_PID=$!
_track "$CLIENT_PID" client
exec 3>"$TESTDIR/cmd"

# write_check TAG: the client writes TAG (10 s at most).
write_check()
{
	local deadline=$((SECONDS + 10))
	echo "$1" >&3
	until grep -qE "^(ok|err) $1( |\$)" "$TESTDIR/client.log" 2>/dev/null; do
		[ "$SECONDS" -lt "$deadline" ] ||
		    fail "the holder's client did not write $1 in 10 s"
		_alive "$CLIENT_PID" || { cat "$TESTDIR/log/client.log" >&2
		    fail "the holder's client exited"; }
		sleep 0.05
	done
	grep -q "^ok $1\$" "$TESTDIR/client.log" ||
	    fail "the holder could not write: $(grep "^err $1" \
	    "$TESTDIR/client.log")"
}
write_check before
grep -aq "lease: acquired, generation 1" "$HLOG" ||
    fail "the holder did not take v's lease at generation 1"

# The admin's own cluster directory, its servers behind the proxies.
proxy_start "$(seq -s ' ' 0 $((CLUSTER_N - 1)))" "$DELAY"
SLOW=$TESTDIR/slow-admin
mkdir -p "$SLOW"
cp "$CLUSTER_DIR/client.key" "$SLOW/"
cp "$PROXY_CONF" "$SLOW/bftblk.conf"

# count_logged PATTERN: how many servers' logs have PATTERN.
count_logged()
{
	local f n=0
	for f in "$TESTDIR"/log/server-*.log; do
		grep -aqE "$1" "$f" && n=$((n + 1))
	done
	echo "$n"
}

need=$((CLUSTER_N - CLUSTER_T))
t0=$(date +%s.%N)
timeout 120 "$ADMIN" snap create --dir "$SLOW" --volume v --name s1 \
    --timeout 10 >"$TESTDIR/create.out" 2>&1 &
CPID=$!
_track "$CPID" create

# The cut's first step, the view, on n-t servers.  Its write-back comes
# next: the proxies are armed to pass its data (the STORE, which fences
# generation 1) and hold the replies, so that it cannot complete.
deadline=$((SECONDS + 30))
until [ "$(count_logged "keeps the view at generation 1")" -ge "$need" ]; do
	[ "$SECONDS" -lt "$deadline" ] || fail "no view kept in 30 s"
	_alive "$CPID" || { cat "$TESTDIR/create.out" >&2
	    fail "snap create ended before its view"; }
	sleep 0.02
done
kill -HUP "${PROXY_PIDS[@]}"
log "view kept at generation 1 after $(awk -v a="$t0" -v b="$(date +%s.%N)" \
    'BEGIN { printf "%.1f", b - a }') s; the admin's proxies armed"
deadline=$((SECONDS + 10))
until [ "$(grep -l "^holding replies" "$TESTDIR"/log/proxy-*.log |
    wc -l)" -ge "$need" ]; do
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "the cut's write-back reached fewer than $need proxies in 10 s"
	sleep 0.02
done
grep -aq "a snapshot re-asserted" "$HLOG" &&
    fail "the holder saw the claim written back before it completed"

# The holder's next renewal, refused as fenced by t+1 servers at least.
deadline=$((SECONDS + 8))
until [ "$(count_logged "lease generation 1 below the volume's 2")" -gt \
    "$CLUSTER_T" ]; do
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "no renewal of the holder refused in 8 s"
	sleep 0.05
done
log "the holder's renewal refused by the fence; the cut goes on"
sleep 0.5
kill -USR2 "${PROXY_PIDS[@]}"


_reap "$CPID"
_forget_pid "$CPID"
[ "$_STATUS" -eq 0 ] || { cat "$TESTDIR/create.out" >&2; fail "snap create"; }
log "$(cat "$TESTDIR/create.out")"
proxy_stop

# The renewer follows the re-asserted claim within a renewal interval.
deadline=$((SECONDS + 10))
until grep -aq "generation 2: a snapshot re-asserted this holder's claim" \
    "$HLOG"; do
	[ "$SECONDS" -lt "$deadline" ] ||
	    fail "the holder did not follow the snapshot to generation 2"
	sleep 0.1
done
if grep -aE "renewal not written|lease: fenced|lease: lost" "$HLOG" >&2; then
	fail "the holder's renewal was left refused"
fi
write_check after
# A renewal after the cut, written under generation 2.
sleep 6
if grep -aE "renewal not written|lease: fenced|lease: lost" "$HLOG" >&2; then
	fail "the holder's renewal failed after the cut"
fi
write_check later
exec 3>&-
_reap "$CLIENT_PID"
_forget_pid "$CLIENT_PID"
[ "$_STATUS" -eq 0 ] || { cat "$TESTDIR/log/client.log" >&2
    fail "the holder's client exited with status $_STATUS"; }
nbdkit_stop holder
log "PASS"
