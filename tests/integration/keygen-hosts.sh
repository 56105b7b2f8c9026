#!/bin/bash
# keygen --hosts: one address per server, IPv6 in brackets (t=1).
#
# The four servers get their own addresses, two on 127.0.0.1 and two on
# [::1]; bftblk.conf must list them (IPv6 in brackets, as the file
# has it), the servers must listen there, and `bftblk ping` must reach
# all four.  A list of the wrong length, a repeated address or an
# unclosed bracket is refused with exit 2 and a message saying why; with
# no --t the number of hosts gives t.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_build
ip -6 addr show dev lo 2>/dev/null | grep -q 'inet6 ::1/' ||
    skip "no IPv6 loopback address here"

base=$(_pick_ports 4)
CLUSTER_DIR=$TESTDIR/cluster
CLUSTER_T=1
CLUSTER_N=4
CLUSTER_BASE_PORT=$base
"$ADMIN" keygen --dir "$CLUSTER_DIR" --size 64M --hosts \
    "127.0.0.1:$base,[::1]:$((base + 1)),127.0.0.1:$((base + 2)),[::1]:$((base + 3))" \
    >"$TESTDIR/log/keygen.log" 2>&1 ||
    { cat "$TESTDIR/log/keygen.log"; fail "keygen --hosts failed"; }
grep -qx "  server 1: \[::1\]:$((base + 1)) (server-1.key)" \
    "$TESTDIR/log/keygen.log" || fail "keygen's summary: $(cat "$TESTDIR/log/keygen.log")"
for want in "server.0 = 127.0.0.1:$base" "server.1 = [::1]:$((base + 1))" \
    "server.2 = 127.0.0.1:$((base + 2))" "server.3 = [::1]:$((base + 3))"; do
	grep -qxF "$want" "$CLUSTER_DIR/bftblk.conf" ||
	    fail "bftblk.conf lacks \"$want\""
done
for i in 0 1 2 3; do
	server_start "$i"
done
grep -q "listening on \[::1\]:$((base + 3))" "$TESTDIR/log/server-3.log" ||
    grep -q "listening on ::1:$((base + 3))" "$TESTDIR/log/server-3.log" ||
    fail "server 3 does not listen on [::1]:$((base + 3))"
"$ADMIN" ping --dir "$CLUSTER_DIR" >"$TESTDIR/log/ping.out" 2>&1 ||
    { cat "$TESTDIR/log/ping.out"; fail "ping failed"; }
grep -q "^4 of 4 servers reachable" "$TESTDIR/log/ping.out" ||
    fail "ping: $(cat "$TESTDIR/log/ping.out")"
log "four servers on their own addresses, ping reaches all"

# refused ARGS... PATTERN: keygen must exit 2 saying PATTERN.
refused()
{
	local pattern=${*: -1} rc=0 d=$TESTDIR/refused
	set -- "${@:1:$#-1}"
	rm -rf "$d"
	"$ADMIN" keygen --dir "$d" "$@" >"$TESTDIR/log/refused.out" 2>&1 || rc=$?
	[ "$rc" -eq 2 ] || fail "keygen $* exited $rc, not 2"
	grep -q -- "$pattern" "$TESTDIR/log/refused.out" ||
	    fail "keygen $*: $(cat "$TESTDIR/log/refused.out")"
	[ ! -e "$d/client.key" ] || fail "keygen $* wrote keys"
}
refused --hosts a,b,c "has 3 entries, but t=1 needs exactly n=4"
refused --t 2 --hosts a,b,c,d "has 4 entries, but t=2 needs exactly n=7"
refused --hosts a,b,a,d "servers 0 and 2 both at a port 7700"
refused --hosts "a,[::1,c,d" "entry 1 is not HOST"
refused --hosts "a,b:0,c,d" "entry 1 is not HOST"
refused --host a --hosts a,b,c,d "give one or the other"
log "bad lists refused"

"$ADMIN" keygen --dir "$TESTDIR/t2" --hosts h0,h1,h2,h3,h4,h5,h6:7000 \
    >"$TESTDIR/log/t2.out" 2>&1 || fail "keygen of seven hosts failed"
grep -q "^cluster in .*: t=2, n=7 servers" "$TESTDIR/log/t2.out" ||
    fail "seven hosts: $(cat "$TESTDIR/log/t2.out")"
grep -qx "server.6 = h6:7000" "$TESTDIR/t2/bftblk.conf" ||
    fail "server.6 is not h6:7000"
grep -qx "server.5 = h5:7700" "$TESTDIR/t2/bftblk.conf" ||
    fail "server.5 did not get the base port"

"$ADMIN" server replace --dir "$TESTDIR/t2" --index 2 --host "[fd00::2]:7002" \
    >"$TESTDIR/log/replace.out" 2>&1 ||
    { cat "$TESTDIR/log/replace.out"; fail "server replace --host [V6]:PORT"; }
grep -qxF "server.2 = [fd00::2]:7002" "$TESTDIR/t2/bftblk.conf" ||
    fail "server replace wrote $(grep '^server.2 ' "$TESTDIR/t2/bftblk.conf")"
log "PASS"
