#!/bin/bash
# Prometheus metrics: every server with --metrics (IPv4, a host name,
# and IPv6 when the loopback has it) and nbdkit with metrics=.  Each
# scrape must pass both promtool's checks (lint included) and the
# parser of the Python client library, and show what the I/O did:
# request counters that grow, every server connected to the client.
# The endpoints answer 404 elsewhere, 400 to garbage and 431 to an
# oversized request, and go on serving; 20 scrapers at once do not hurt
# a server; idle connections are cut after 5 s and hold at most 8
# slots, so a scraper is refused only while they do.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PY=/usr/bin/python3
command -v promtool >/dev/null ||
    skip "no promtool (apt-get install prometheus)"
"$PY" -c 'import prometheus_client' 2>/dev/null ||
    skip "no prometheus_client (apt-get install python3-prometheus-client)"
command -v curl >/dev/null || skip "no curl (apt-get install curl)"

# Four servers and the client, each its own port.
mbase=$(_pick_ports 5)
declare -a MADDR=() MURL=()
for i in 0 1 2 3; do
	MADDR[i]=127.0.0.1:$((mbase + i))
done
MADDR[2]=localhost:$((mbase + 2))
if ip -6 addr show lo 2>/dev/null | grep -q '::1/'; then
	MADDR[3]=[::1]:$((mbase + 3))
fi
for i in 0 1 2 3; do
	# shellcheck disable=SC2034 # read by server_start
	declare "SERVER_ARGS_$i=--metrics ${MADDR[i]}"
	MURL[i]=http://${MADDR[i]}/metrics
done
CADDR=127.0.0.1:$((mbase + 4))
CURL_CLIENT=http://$CADDR/metrics

cluster_start 1
nbdkit_start nbd metrics="$CADDR"

# scrape URL FILE: the body, which must be a valid exposition.
scrape()
{
	local url=$1 out=$2 hdr=$2.headers
	curl -sS -f --max-time 5 -D "$hdr" -o "$out" "$url" ||
	    fail "scrape of $url failed"
	grep -qi '^Content-Type: text/plain; version=0.0.4; charset=utf-8' \
	    "$hdr" || fail "$url: wrong Content-Type: $(cat "$hdr")"
	promtool check metrics <"$out" >"$out.promtool" 2>&1 ||
	    { cat "$out.promtool" >&2; fail "$url: promtool check failed"; }
	"$PY" - "$out" <<-'EOF' || fail "$url: the Python parser refused it"
	import sys
	from prometheus_client.parser import text_string_to_metric_families
	fams = list(text_string_to_metric_families(open(sys.argv[1]).read()))
	assert len(fams) > 10, len(fams)
	EOF
}

# value FILE NAME [LABELS]: one sample's value, as the parser read it.
value()
{
	"$PY" - "$@" <<-'EOF'
	import sys
	from prometheus_client.parser import text_string_to_metric_families
	path, name = sys.argv[1], sys.argv[2]
	want = dict(kv.split('=', 1) for kv in sys.argv[3:])
	for fam in text_string_to_metric_families(open(path).read()):
	    for s in fam.samples:
	        if s.name == name and s.labels == want:
	            print(int(s.value) if s.value == int(s.value) else s.value)
	            sys.exit(0)
	sys.exit('no sample %s %s in %s' % (name, want, path))
	EOF
}

# http ADDR RAW [shut]: sends RAW bytes (Python escapes), with shut
# then shuts down its side, and prints the status line of the answer,
# or "closed" when none came.
http()
{
	"$PY" - "$@" <<-'EOF'
	import socket, sys
	addr, raw = sys.argv[1], sys.argv[2].encode().decode('unicode_escape')
	host, port = addr.rsplit(':', 1)
	s = socket.create_connection((host.strip('[]'), int(port)), timeout=10)
	try:
	    s.sendall(raw.encode('latin-1'))
	    if len(sys.argv) > 3:
	        s.shutdown(socket.SHUT_WR)
	    data = b''
	    while True:
	        b = s.recv(65536)
	        if not b:
	            break
	        data += b
	except (ConnectionResetError, BrokenPipeError):
	    pass
	line = data.split(b'\r\n', 1)[0].decode()
	print(line if line else 'closed')
	EOF
}

log "scraping before any I/O"
for i in 0 1 2 3; do
	scrape "${MURL[i]}" "$TESTDIR/s$i.before"
	[ "$(value "$TESTDIR/s$i.before" bftblk_server_info index="$i" \
	    n=4 t=1)" = 1 ] || fail "server $i: wrong bftblk_server_info"
	if [ "$(value "$TESTDIR/s$i.before" bftblk_server_recovering)" != 0 ] ||
	    [ "$(value "$TESTDIR/s$i.before" \
	    bftblk_server_recoveries_total)" != 0 ]; then
		fail "server $i: recovering when it was never asked to"
	fi
done
scrape "$CURL_CLIENT" "$TESTDIR/c.before"

log "writing and reading 4 MiB"
nbdsh_run nbd "
import os
data = os.urandom(4 << 20)
h.pwrite(data, 0)
h.flush()
assert h.pread(len(data), 0) == data
"

log "scraping after"
for i in 0 1 2 3; do
	f=$TESTDIR/s$i.after
	scrape "${MURL[i]}" "$f"
	b=$(value "$TESTDIR/s$i.before" bftblk_server_requests_total type=store)
	a=$(value "$f" bftblk_server_requests_total type=store)
	[ "$a" -ge $((b + 64)) ] ||
	    fail "server $i: STOREs went from $b to $a after 64 block writes"
	a=$(value "$f" bftblk_server_request_duration_seconds_count type=store)
	[ "$a" -ge 64 ] || fail "server $i: $a STOREs in the histogram"
	[ "$(value "$f" bftblk_server_connections)" -ge 1 ] ||
	    fail "server $i: no connection counted"
	[ "$(value "$f" bftblk_server_received_bytes_total)" -gt $((2 << 20)) ] ||
	    fail "server $i: too few bytes received"
	[ "$(value "$f" bftblk_server_store_blocks_held)" -ge 64 ] ||
	    fail "server $i: fewer than 64 blocks held"
	[ "$(value "$f" bftblk_server_store_syncs_total)" -ge 1 ] ||
	    fail "server $i: the FLUSH made no sync"
done
f=$TESTDIR/c.after
scrape "$CURL_CLIENT" "$f"
for i in 0 1 2 3; do
	[ "$(value "$f" bftblk_client_server_connected server="$i")" = 1 ] ||
	    fail "client: server $i not connected"
	[ "$(value "$f" bftblk_client_server_replies_total server="$i")" -gt 0 ] ||
	    fail "client: no replies from server $i"
done
a=$(value "$f" bftblk_client_ops_total op=write)
[ "$a" -ge 64 ] || fail "client: $a block writes counted, want 64"
a=$(value "$f" bftblk_client_op_duration_seconds_count op=read)
[ "$a" -ge 64 ] || fail "client: $a reads in the histogram, want 64"

log "bad requests"
for addr in "${MADDR[0]}" "$CADDR"; do
	r=$(curl -sS -o /dev/null -w '%{http_code}' "http://$addr/nope")
	[ "$r" = 404 ] || fail "$addr: /nope answered $r, want 404"
	r=$(http "$addr" 'garbage\r\n\r\n')
	[[ "$r" == "HTTP/1.1 400 "* ]] || fail "$addr: garbage answered '$r'"
	r=$(http "$addr" 'GET /metrics HTTP/1.0\r\n\r\n' shut)
	[[ "$r" == "HTTP/1.1 200 "* ]] ||
	    fail "$addr: a request and a shutdown answered '$r'"
	r=$(http "$addr" 'POST /metrics HTTP/1.1\r\n\r\n')
	[[ "$r" == "HTTP/1.1 405 "* ]] || fail "$addr: POST answered '$r'"
	r=$(http "$addr" "GET /metrics HTTP/1.1\\r\\nX: $(head -c 20000 \
	    /dev/zero | tr '\0' a)\\r\\n\\r\\n")
	[[ "$r" == "HTTP/1.1 431 "* ]] ||
	    fail "$addr: an oversized request answered '$r'"
	scrape "http://$addr/metrics" "$TESTDIR/after-bad"
done

log "20 scrapers at once"
declare -a pids=()
for j in $(seq 1 20); do
	curl -sS -o "$TESTDIR/par.$j" --max-time 10 "${MURL[0]}" \
	    2>/dev/null &
	pids+=($!)
done
ok=0
for p in "${pids[@]}"; do
	if wait "$p"; then ok=$((ok + 1)); fi
done
log "$ok of 20 answered"
[ "$ok" -ge 1 ] || fail "none of 20 scrapers was answered"
kill -0 "${SERVER_PID[0]}" || fail "server 0 died under 20 scrapers"
scrape "${MURL[0]}" "$TESTDIR/s0.par"

log "idle connections: 8 slots, cut after 5 s"
"$PY" - "${MADDR[0]}" <<-'EOF' || fail "the idle connection limits failed"
import socket, sys, time, urllib.request
host, port = sys.argv[1].rsplit(':', 1)
url = 'http://%s/metrics' % sys.argv[1]
idle = [socket.create_connection((host, int(port)), timeout=10)
        for _ in range(8)]
time.sleep(0.5)
try:
    urllib.request.urlopen(url, timeout=3).read()
    sys.exit('a 9th connection was served while 8 idle ones held the slots')
except Exception:
    pass
start = time.time()
for s in idle:
    if s.recv(1) != b'':
        sys.exit('an idle connection got data')
took = time.time() - start
if took > 6:
    sys.exit('idle connections stayed %.1f s' % took)
body = urllib.request.urlopen(url, timeout=3).read()
assert b'bftblk_server_requests_total' in body
EOF
f=$TESTDIR/s0.idle
scrape "${MURL[0]}" "$f"
[ "$(value "$f" bftblk_server_metrics_rejected_total reason=timeout)" -ge 8 ] ||
    fail "server 0: idle connections not counted as timed out"
[ "$(value "$f" bftblk_server_metrics_rejected_total reason=refused)" -ge 1 ] ||
    fail "server 0: the refused connection not counted"

log "the cluster still serves"
nbdsh_run nbd "assert h.pread(65536, 0) == h.pread(65536, 0)"
for i in 0 1 2 3; do
	kill -0 "${SERVER_PID[$i]}" || fail "server $i died"
done
log "ok"
