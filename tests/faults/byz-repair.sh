#!/bin/bash
# REPAIR (Dobre et al., Algorithm 6, lines 169-174) runs when a server
# breaks MAC vectors, and never without one (t=1).
#
# 1. Fault-free: a phase of tests/faults/byz-lib.bash (fio randrw with
#    crc32c verification, a two-writer history checked by lincheck, known
#    data) through nbdkit "a" and "b"; at their exit the plugin's counters
#    must show 0 repairs, and at the servers' exit (-v) their request
#    counters 0 REPAIR requests.
# 2. Server 0 in bad-mac mode: its COLLECT and FILTER replies carry the
#    right timestamps and nonces but a vec broken in every entry except
#    its own.  Server 0 is first in the client's order, so its COLLECT
#    reply is often the copy of a candidate a reader selects; that copy's
#    vec differs from the one t+1 FILTER replies agree on, and the reader
#    must repair it.  The same load with fresh nbdkits: the plugins must
#    count repairs, the honest servers must have received REPAIR requests,
#    and every read must still return the right data.
. "$(dirname "${BASH_SOURCE[0]}")/byz-lib.bash"

PHASE_SECS=${PHASE_SECS:-6}
SERVER_ARGS="${SERVER_ARGS:-} -v"

# repair_requests I: stops server I and sets REQS to the REPAIR requests
# it counted (its -v exit line).
repair_requests()
{
	local i=$1 line
	byz_stop "$i"
	line=$(grep -a 'requests: hello' "$TESTDIR/log/server-$i.log" |
	    tail -n 1)
	[ -n "$line" ] || fail "server-$i logged no request counters"
	line=$(grep -oE 'repair [0-9]+' <<<"$line")
	REQS=${line#repair }
}

# plugin_repairs: stops nbdkit a and b and sets REPAIRS to their sum.
plugin_repairs()
{
	local name n
	REPAIRS=0
	for name in a b; do
		byz_nbdkit_stats "$name"
		n=${BYZ_STAT[repairs]}
		REPAIRS=$((REPAIRS + n))
	done
}

cluster_start 1
byz_nbdkit_start a
byz_nbdkit_start b

log "step 1: no fault"
byz_workload clean "$PHASE_SECS"
plugin_repairs
[ "$REPAIRS" -eq 0 ] ||
    fail "no server broke a MAC, yet the plugins made $REPAIRS repairs"
for i in 0 1 2 3; do
	repair_requests "$i"
	[ "$REQS" -eq 0 ] || fail "fault-free, yet server-$i got $REQS REPAIRs"
done
log "checked: 0 repairs and 0 REPAIR requests without a fault"

log "step 2: server-0 breaks MAC vectors"
byz_start 0 bad-mac
for i in 1 2 3; do
	byz_start "$i" honest
done
byz_nbdkit_start a
byz_nbdkit_start b
byz_wait_conns 0
byz_workload bad-mac "$PHASE_SECS"
plugin_repairs
[ "$REPAIRS" -gt 0 ] ||
    fail "server-0 broke MAC vectors, yet no read repaired one"
got=0
for i in 1 2 3; do
	repair_requests "$i"
	log "server-$i received $REQS REPAIR requests"
	got=$((got + REQS))
done
[ "$got" -gt 0 ] || fail "the plugins counted $REPAIRS repairs, yet no" \
    "honest server received a REPAIR request"
byz_stop 0
log "checked: $REPAIRS repairs by the plugins, $got REPAIR requests at" \
    "the honest servers, and every read right"
log "ok"
