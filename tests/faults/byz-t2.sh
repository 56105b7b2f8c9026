#!/bin/bash
# Two Byzantine servers of seven (t=2), in the same mode and in mixed
# modes, and one Byzantine server plus one that loses its disk.
#
# Each phase of tests/faults/byz-lib.bash (fio randrw with crc32c
# verification, a two-writer history checked by lincheck, known data read
# back byte for byte through both nbdkit instances) runs with a pair:
#   stale + stale              two rolled-back servers: only the n-t
#                              others know the newest writes
#   collude + collude          same seed, so both forge the same cc and
#                              fragments: t agreeing liars, one short of
#                              what safe() needs; they sit at servers 0
#                              and 1, where the client looks first
#   bad-checksum + corrupt-fragment
#   forge-candidate + equivocate
#   bad-mac + refuse
#   mute + slow                liveness with only n-t = 5 prompt servers
#   trim-lie + trim-lie        both claim every written block trimmed: t
#                              agreeing on the zero value's cc, one short
#                              of what a read needs to return zeros
#   stale + amnesia            server 5 rolled back while server 2 is
#                              killed, wiped and restarted twice mid-phase
# Every Byzantine server's exit line must show its modes changed or
# withheld replies.  At the end, all honest again, a fresh nbdkit reads
# every phase's known data.
. "$(dirname "${BASH_SOURCE[0]}")/byz-lib.bash"

PHASE_SECS=${PHASE_SECS:-6}
# name:server=modes[:server=modes]
PHASES=(
	"stale:1=stale:4=stale"
	"collude:0=collude:1=collude"
	"checksum:2=bad-checksum:5=corrupt-fragment"
	"forge:3=forge-candidate:6=equivocate"
	"badmac:0=bad-mac:6=refuse"
	"liveness:1=mute:5=slow"
	"trimlie:0=trim-lie:1=trim-lie"
)

# set_byzantine SPEC...: every server named gets its modes, every other
# one is honest; servers leave Byzantine modes before others enter them,
# so at most t are faulty at any moment.
set_byzantine()
{
	local spec i
	declare -A want=()
	for spec in "$@"; do
		want[${spec%%=*}]=${spec#*=}
	done
	for i in "${!BYZ_MODES[@]}"; do
		if [ "${BYZ_MODES[$i]}" != honest ] &&
		    [ "${want[$i]:-honest}" != "${BYZ_MODES[$i]}" ]; then
			byz_switch "$i" honest
		fi
	done
	for i in "${!want[@]}"; do
		[ "${BYZ_MODES[$i]:-honest}" = "${want[$i]}" ] ||
		    byz_switch "$i" "${want[$i]}"
	done
}

cluster_start 2
byz_nbdkit_start a t=2
byz_nbdkit_start b t=2

for phase in "${PHASES[@]}"; do
	IFS=: read -ra parts <<<"$phase"
	set_byzantine "${parts[@]:1}"
	byz_workload "t2-${parts[0]}" "$PHASE_SECS"
done

set_byzantine 5=stale
byz_load_start t2-amnesia $((PHASE_SECS + 6))
sleep 2
byz_amnesia 2
sleep 3
byz_amnesia 2
byz_load_finish
set_byzantine

forged=0
for name in a b; do
	byz_nbdkit_stats "$name"
	n=${BYZ_STAT[forged]}
	forged=$((forged + n))
done
[ "$forged" -gt 0 ] ||
    fail "forge-candidate ran, yet no nbdkit refused a forged timestamp"
log "checked: the plugins refused $forged forged timestamps"

nbdkit_start fresh t=2
nbdsh_run fresh "$BYZ_PY
check($(byz_tags_py), 'all honest again, fresh nbdkit')
" || fail "known data through a fresh nbdkit: see above"
log "ok"
