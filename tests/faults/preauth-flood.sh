#!/bin/bash
# Connections that never prove a key must neither lock real clients out
# nor flood the server's log (t=1, every server with its default limits:
# --max-conns 256, --max-preauth 64, --max-preauth-per-addr 8).
#
# 1. Garbage: 2,000 connections to servers 0 and 1 each (random bytes,
#    some shorter than a client hello, some longer, then closed), as
#    fast as they go.  Each server's log may grow by a few lines only;
#    the figure "log lines per 1,000 garbage connections" is printed.
# 2. Flood: for FLOOD_S seconds, 300 idle TCP connections to each of
#    servers 0 and 1, every one the server closes opened again each
#    half second, plus 25 garbage connections per half second to each.  All from
#    127.0.0.1, the address nbdkit and the other servers use too.  While
#    it runs, a freshly started plugin writes and reads back 16 blocks,
#    three times: every round must succeed within ROUND_S seconds (with
#    two of four servers locked, as when the idle connections took the
#    --max-conns slots, the plugin is kept out until they time out).  Each flooded server's log grows by fewer
#    than MAX_LINES lines over the flood, and says in a summary line how
#    many connections it closed.
# Every process started here is stopped by PID (lib.sh's EXIT trap).
# shellcheck source=tests/faults/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FLOOD_S=25
IDLE=300
GARBAGE_BURST=2000
GARBAGE_PER_TICK=25
ROUND_S=6
MAX_LINES=50
FLOODED="0 1"

cluster_start 1

flood=$TESTDIR/flood.py
cat >"$flood" <<'EOF'
# flood.py MODE SECONDS IDLE GARBAGE PORT...: connections that never
# authenticate.  MODE garbage: GARBAGE connections to each port, each
# sends random bytes and closes, as fast as they go.  MODE flood: for
# SECONDS, IDLE idle connections to each port, those the server closed
# opened again every half second, and GARBAGE garbage connections
# every half second to each port.  Prints what it did; exits 0 on SIGTERM too.
import os, random, resource, select, signal, socket, sys, time

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
mode, seconds, idle, garbage = (sys.argv[1], float(sys.argv[2]),
                                int(sys.argv[3]), int(sys.argv[4]))
ports = [int(p) for p in sys.argv[5:]]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
rng = random.Random(1)
stats = {'garbage': 0, 'opened': 0, 'closed by server': 0, 'errors': 0}


def send_garbage(port):
    try:
        s = socket.create_connection(('127.0.0.1', port), timeout=2)
        # Shorter than a client hello (88 bytes) or longer.
        s.sendall(os.urandom(rng.choice((1, 40, 87, 88, 200, 4096))))
        s.close()
        stats['garbage'] += 1
    except OSError:
        stats['errors'] += 1


def open_idle(port):
    try:
        s = socket.create_connection(('127.0.0.1', port), timeout=2)
        s.setblocking(False)
        stats['opened'] += 1
        return s
    except OSError:
        stats['errors'] += 1
        return None


if mode == 'garbage':
    for port in ports:
        for _ in range(garbage):
            send_garbage(port)
else:
    held = {port: [None] * idle for port in ports}
    end = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < end and rounds < seconds * 4 + 10:
        rounds += 1
        t0 = time.monotonic()
        for port in ports:
            socks = held[port]
            live = [s for s in socks if s is not None]
            # Which of them the server has closed (EOF or reset).
            gone = set()
            if live:
                r, _, _ = select.select(live, [], [], 0)
                for s in r:
                    try:
                        if s.recv(4096) == b'':
                            gone.add(s)
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        gone.add(s)
            for i, s in enumerate(socks):
                if s is not None and s in gone:
                    s.close()
                    stats['closed by server'] += 1
                    socks[i] = None
                if socks[i] is None:
                    socks[i] = open_idle(port)
            for _ in range(garbage):
                send_garbage(port)
        time.sleep(max(0.0, 0.5 - (time.monotonic() - t0)))
    for socks in held.values():
        for s in socks:
            if s is not None:
                s.close()
print(' '.join('%s=%d' % (k.replace(' ', '_'), v) for k, v in stats.items()))
EOF

ports=()
for i in $FLOODED; do
	ports+=($((CLUSTER_BASE_PORT + i)))
done
lines()
{
	wc -l <"$TESTDIR/log/server-$1.log"
}
declare -A before=()

log "1. $GARBAGE_BURST garbage connections to each of servers $FLOODED"
for i in $FLOODED; do
	before[$i]=$(lines "$i")
done
out=$(timeout 120 python3 "$flood" garbage 0 0 "$GARBAGE_BURST" \
    "${ports[@]}") || fail "the garbage sender failed"
log "garbage sender: $out"
sent=$(sed -n 's/.*garbage=\([0-9]*\).*/\1/p' <<<"$out")
[ "${sent:-0}" -ge $((GARBAGE_BURST * 3 / 2)) ] ||
    fail "only ${sent:-0} garbage connections got through"
sleep 1
worst=0
for i in $FLOODED; do
	_alive "${SERVER_PID[$i]}" || fail "server-$i died of garbage"
	grew=$(($(lines "$i") - ${before[$i]}))
	per=$((grew * 1000 / GARBAGE_BURST))
	log "server-$i: $grew log lines for $GARBAGE_BURST garbage" \
	    "connections: $per.$(((grew * 10000 / GARBAGE_BURST) % 10))" \
	    "log lines per 1,000 garbage connections"
	[ "$grew" -gt "$worst" ] && worst=$grew
done
[ "$worst" -lt "$MAX_LINES" ] ||
    fail "$worst log lines for $GARBAGE_BURST garbage connections"

log "2. flood for ${FLOOD_S}s: $IDLE idle connections and" \
    "$GARBAGE_PER_TICK garbage ones every 0.5s at servers $FLOODED"
for i in $FLOODED; do
	before[$i]=$(lines "$i")
done
python3 "$flood" flood "$FLOOD_S" "$IDLE" "$GARBAGE_PER_TICK" "${ports[@]}" \
    >"$TESTDIR/log/flood.out" 2>&1 &
fpid=$!
_track "$fpid" flood
sleep 3
_alive "$fpid" || fail "the flood ended early: $(cat "$TESTDIR/log/flood.out")"
for port in "${ports[@]}"; do
	log "port $port: $(ss -Htn state established "( sport = :$port )" |
	    wc -l) connections established on the server's side"
done

t0=$SECONDS
nbdkit_start nbd
seed=$RANDOM$RANDOM
for round in 1 2 3; do
	start=$SECONDS
	nbdsh_run nbd "
import random
BS = 65536
for b in range(16):
    h.pwrite(random.Random('$seed-$round-%d' % b).randbytes(BS), b * BS)
for b in range(16):
    if h.pread(BS, b * BS) != random.Random('$seed-$round-%d' % b).randbytes(BS):
        raise AssertionError('block %d differs' % b)
print('round $round: 16 blocks written and read back')
" >"$TESTDIR/log/io-$round.log" 2>&1 ||
	    { cat "$TESTDIR/log/io-$round.log" >&2
	      fail "round $round: I/O failed during the flood"; }
	log "$(cat "$TESTDIR/log/io-$round.log")" \
	    "in $((SECONDS - start))s ($((SECONDS - t0))s after the plugin" \
	    "started)"
	[ $((SECONDS - start)) -le "$ROUND_S" ] ||
	    fail "round $round took $((SECONDS - start))s: the plugin was" \
	    "kept out by the flood"
	_alive "$fpid" || log "note: the flood ended before round $round"
	sleep 2
done

# The flood ends by itself within FLOOD_S (its loop is bounded too).
deadline=$((SECONDS + FLOOD_S + 30))
while _alive "$fpid"; do
	[ "$SECONDS" -lt "$deadline" ] || fail "the flood did not end"
	sleep 0.5
done
_reap "$fpid"
_forget_pid "$fpid"
[ "$_STATUS" -eq 0 ] || fail "the flood exited with $_STATUS"
log "flood: $(cat "$TESTDIR/log/flood.out")"
# The summary of the flood's last interval.
sleep 11
for i in $FLOODED; do
	_alive "${SERVER_PID[$i]}" || fail "server-$i died in the flood"
	grew=$(($(lines "$i") - ${before[$i]}))
	log "server-$i: $grew log lines over the flood"
	[ "$grew" -lt "$MAX_LINES" ] ||
	    fail "server-$i logged $grew lines over the flood"
	tail -n "$grew" "$TESTDIR/log/server-$i.log" |
	    grep -q "unauthenticated connections in the last" ||
	    fail "server-$i logged no summary of the refused connections"
	log "server-$i: $(tail -n "$grew" "$TESTDIR/log/server-$i.log" |
	    grep "unauthenticated connections in the last" | tail -1)"
done
nbdsh_run nbd "h.pread(65536, 0)" >/dev/null ||
    fail "no read after the flood"
log "ok"
