#!/bin/bash
# A wiped server rebuilds itself beside a Byzantine peer (t=1).
#
# 200 blocks are written.  Then, for each peer behaviour in turn
# (server/testing/byzantine.h): server 3 is restarted on its data as the
# test server in that mode, 20 blocks are overwritten (so that a stale
# peer has something to hide), server 0 is wiped and restarted, and:
#   - lie-heal, corrupt-fragment, bad-checksum, stale, bad-mac,
#     forge-candidate: server 0 must catch up on its own (beside lie-heal
#     after reading every block of the disk, since the liar claims each
#     one newer; beside forge-candidate within FORGE_WINDOW seconds and
#     with none of its own STOREs refused, since its reads drop
#     candidates whose MAC entry for it fails).  Beside lie-heal, server 0
#     runs passes every 2 s: the reads found the liar's lone claims
#     false, so the next pass must leave them alone instead of reading
#     the disk again;
#   - refuse, mute: with server 0 empty and server 3 refusing or silent,
#     two servers can answer a read, one fewer than the n-t = 3 it needs,
#     so the rebuild cannot finish, by design.  It must wait: no "caught
#     up" within STALL_WINDOW seconds, the marker kept, reads through
#     nbdkit fail or return the right bytes, never others.  Server 3 is
#     then replaced by an honest server and server 0 must catch up.
# Each Byzantine server's exit line must show that its mode changed or
# dropped replies.  Then server 0's fragments are proved right: server 1
# is stopped and server 3 wiped (it waits for its peers, answering as an
# empty server), so every read needs server 0's fragments besides server
# 2's; every block must read back exactly.  Server 1 comes back and
# server 3 catches up before the next phase.

# 8192 blocks: more than one LCLIST can list, so that the comparison
# goes through SUMMARY's digests first, which lie-heal lies about.
CLUSTER_SIZE=${CLUSTER_SIZE:-512M}
# shellcheck source=tests/faults/byz-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/byz-lib.bash"
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

N=200
SEG=20
MODES=${HEAL_BYZ_MODES:-lie-heal corrupt-fragment bad-checksum stale bad-mac forge-candidate refuse mute}
STALL_WINDOW=8
FORGE_WINDOW=30

cluster_start 1
# Reads that cannot gather n-t answers fail after 5 s, not 10.
nbdkit_start nbd timeout=5
heal_write nbd a 0 "$N"
nblocks=$(($(numfmt --from=iec "$CLUSTER_SIZE") / 65536))

# The model: segment p (SEG blocks from p * SEG) holds the data of
# phase p, which overwrote it, the rest the first write.
declare -a spec=()
model()
{
	local done=$((${#spec[@]} * SEG))
	echo "${spec[@]}" "a:$done:$((N - done))"
}

# caught_up: whether server 0 has caught up since its wipe.
caught_up()
{
	heal_since 0 | grep -aq 'rebuild: the new data directory has caught up'
}

# not_caught_up WHY: server 0 must still be rebuilding, marker kept.
not_caught_up()
{
	! caught_up || fail "server-0 caught up while $1"
	# "1" once it knows its peers hold data; empty while too few of
	# them have answered the comparison to know it.
	[ -f "$TESTDIR/data/server-0/rebuild-pending" ] ||
	    fail "server-0 lost its rebuild-pending marker while $1"
}

# replace_liar: server 3 becomes an honest server on its data.
replace_liar()
{
	byz_stop 3
	server_start 3
	log "injected: server-3 replaced by an honest server on its data"
}

p=0
for mode in $MODES; do
	log "=== phase $p: server 3 is $mode while server 0 rebuilds"
	server_kill 3 TERM
	byz_start 3 "$mode"
	# Every server must take the writes: one that reached only n-t
	# servers, server 0 among them, would be left after the wipe with
	# one correct holder beside the liar, too few to read it from.
	for ((i = 0; i < CLUSTER_N; i++)); do
		byz_wait_conns "$i"
	done
	heal_write nbd "$mode" $((p * SEG)) "$SEG"
	spec+=("$mode:$((p * SEG)):$SEG")

	if [ "$mode" = lie-heal ]; then
		SERVER_ARGS_0="--rebuild-interval 2" heal_wipe 0
	else
		heal_wipe 0
	fi
	case "$mode" in
	refuse|mute)
		sleep "$STALL_WINDOW"
		not_caught_up "server 3 was $mode: it cannot have read its" \
		    "blocks from n-t servers"
		since=$(heal_since 0)
		log "checked: after ${STALL_WINDOW}s server-0 has not caught" \
		    "up and keeps its marker; $(grep -ac 'read failed' \
		    <<<"$since") block reads failed; its log:" \
		    "$( (grep -a -m1 'rebuild: peer 3:' <<<"$since"
		    grep -a -m1 'blocks are newer' <<<"$since") |
		    sed 's/^[^ ]* [^ ]* //' | paste -sd';')"
		HEAL_ALLOW_EIO=1 heal_check_model nbd \
		    "server 0 rebuilding beside server 3 $mode" \
		    "$mode:$((p * SEG)):8" "a:$((N - 8)):8"
		replace_liar
		heal_wait_caught_up 0
		[ "$HEAL_RETRIES" -ge 1 ] ||
		    fail "server-0 caught up without a failed pass"
		;;
	forge-candidate)
		deadline=$((SECONDS + FORGE_WINDOW))
		until caught_up || [ "$SECONDS" -ge "$deadline" ]; do
			sleep 0.5
		done
		refused=$(heal_since 0 | grep -ac 'was refused' || true)
		log "beside $mode: server-0 holds $(heal_held 0) blocks," \
		    "$refused adoptions refused;" \
		    "$(caught_up && echo caught up || echo 'still rebuilding')"
		caught_up ||
		    fail "server-0 did not catch up in ${FORGE_WINDOW}s beside $mode"
		[ "$refused" -eq 0 ] ||
		    fail "server-0 adopted $refused forged candidates (refused)"
		heal_wait_caught_up 0
		byz_stop 3
		;;
	lie-heal)
		heal_wait_caught_up 0
		deadline=$((SECONDS + 20))
		until heal_since 0 | grep -aq 'only by ignored peers' ||
		    [ "$SECONDS" -ge "$deadline" ]; do
			sleep 0.5
		done
		since=$(heal_since 0)
		grep -aq 'peer 3 alone listed' <<<"$since" ||
		    fail "server-0 did not find server 3's lone claims false"
		grep -aq 'only by ignored peers' <<<"$since" ||
		    fail "server-0's next pass did not leave server 3's claims alone"
		passes=$(grep -ac 'blocks are newer at' <<<"$since")
		[ "$passes" -eq 1 ] ||
		    fail "server-0 reread what server 3 alone listed" \
		    "($passes passes found blocks newer)"
		log "checked: $(grep -a -m1 'peer 3 alone listed' <<<"$since" |
		    sed 's/^[^ ]* [^ ]* //'); then: $(grep -a -m1 \
		    'only by ignored peers' <<<"$since" | sed 's/^[^ ]* [^ ]* //')"
		byz_stop 3
		;;
	*)
		heal_wait_caught_up 0
		byz_stop 3
		;;
	esac
	want=$N
	[ "$mode" != lie-heal ] || want=$nblocks
	[ "$HEAL_FIRST_NEWER" -eq "$want" ] ||
	    fail "server-0's first pass found $HEAL_FIRST_NEWER blocks newer," \
	    "expected $want"

	server_kill 1
	heal_wipe 3
	# shellcheck disable=SC2046 # one word per segment
	heal_check_model nbd "phase $mode: server 0 (rebuilt), 2, 3 (wiped)" \
	    $(model)
	server_start 1
	heal_wait_caught_up 3
	p=$((p + 1))
done
log "ok"
