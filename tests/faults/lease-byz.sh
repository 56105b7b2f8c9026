#!/bin/bash
# A lease takeover with one Byzantine server of four (t=1), in every mode
# of the test server in turn (server/testing/byzantine.h).
#
# Each round is lease-fence.sh's takeover (tests/integration/
# fence-lib.bash) with the liar in place: host A, through cut-proxies,
# holds the volume and writes blocks 0-7; its links are cut; host B takes
# the volume over and writes blocks 0-7; A's links heal FENCE_HEAL_AT
# seconds after B's first acknowledged write.  Whatever the liar says,
# A must be fenced (no write of A acknowledged after B's first, A's
# plugin says so) and B's data must be what a fresh reader finds.  The
# liar is a different server each round, so its place among the replies
# varies; its exit line must show its mode changed or withheld replies,
# except lie-heal's, which only lies to a rebuilding server and so has
# no one to lie to here (it is run all the same: it must not be the one
# reply that lets A back in).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/integration/fence-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/../integration/fence-lib.bash"

[ -x "$TEST_SERVER" ] || fail "$TEST_SERVER is missing: run make first"
export BFTBLK_TEST_BYZANTINE=1
SEED=${BYZ_SEED:-$RANDOM$RANDOM}
# Between a claim read of A's renewer and its claim write, where the
# takeover was lost before fencing.
HEAL_AT=${FENCE_HEAL_AT:-0.5}
MODES=(${FENCE_BYZ_MODES:-corrupt-fragment bad-checksum stale
    forge-candidate bad-mac equivocate mute slow collude refuse lie-heal
    trim-lie})
log "seed $SEED (BYZ_SEED=$SEED reproduces the forged bytes)"

# byzantine I MODE: server I restarted as the test server in MODE.
byzantine()
{
	server_kill "$1" TERM
	SERVER_BIN=$TEST_SERVER \
	    SERVER_ARGS="${SERVER_ARGS:-} --byzantine=$2 --byzantine-seed=$SEED" \
	    server_start "$1"
	grep -q 'BYZANTINE TEST MODE' "$TESTDIR/log/server-$1.log" ||
	    fail "server-$1 does not say it runs in Byzantine mode"
	log "injected: server-$1 is Byzantine: $2"
}

# honest I MODE: server I, Byzantine in MODE, restarted honest; its exit
# line must show MODE did something (but lie-heal's, see above).
honest()
{
	local i=$1 mode=$2 line n off
	server_kill "$i" TERM
	line=$(grep -a 'byzantine .*: replies changed:' \
	    "$TESTDIR/log/server-$i.log" | tail -n 1)
	[ -n "$line" ] || fail "server-$i: no Byzantine summary at exit"
	log "server-$i ($mode) did: ${line#*replies changed: }"
	case "$mode" in
	mute) n=$(grep -oE 'dropped [0-9]+' <<<"$line") ;;
	slow) n=$(grep -oE 'delayed [0-9]+' <<<"$line") ;;
	*) n=$(grep -oE " $mode [0-9]+" <<<"$line") ;;
	esac
	n=${n##* }
	[ "${n:-0}" -gt 0 ] || [ "$mode" = lie-heal ] ||
	    fail "server-$i: mode $mode changed no reply, so nothing was" \
	    "injected: $line"
	off=$(stat -c %s "$TESTDIR/log/server-$i.log")
	server_start "$i"
	in_step "$i" "$off"
}

# in_step I OFF: waits (30 s at most) until server I, past byte OFF of
# its log, has compared itself with its peers.  Until its rebuild has
# read the volume table's snapshots a restarted server answers writes
# EAGAIN (bft_handler_bounds_hold), and the next round makes another
# server Byzantine: a mute one then stalls that first pass, and the new
# holder's writes have t+1 servers short of n-t.
in_step()
{
	local i=$1 off=$2 deadline=$((SECONDS + 30))
	until tail -c "+$((off + 1))" "$TESTDIR/log/server-$i.log" |
	    grep -aqE 'rebuild: (in step|caught up|done)'; do
		[ "$SECONDS" -lt "$deadline" ] ||
		    fail "server-$i: not in step with its peers 30 s after" \
		    "its restart"
		sleep 0.2
	done
}

cluster_start 1
k=0
for mode in "${MODES[@]}"; do
	victim=$((k % CLUSTER_N))
	byzantine "$victim" "$mode"
	fence_takeover "$mode" $((k + 1)) "$HEAL_AT"
	honest "$victim" "$mode"
	k=$((k + 1))
done
fence_verdict
log "ok"
