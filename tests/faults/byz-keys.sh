#!/bin/bash
# A MAC key rotation, from rotate to retire, with one Byzantine server of
# four (t=1) in every mode in turn (docs/key-epochs.md).
#
# The first phase runs under epoch 0 alone; then `bftblk keys rotate`
# writes epoch 1 into every key file and the honest servers take it on
# SIGHUP, while each Byzantine server restarted for its mode loads both.
# The writers switch to epoch 1 as soon as every server says it accepts
# it, which a liar may delay (a mode that garbles or withholds STATUS
# replies) but never hasten past a server that does not hold the key.
# Each phase is byz-lib.bash's: fio with crc32c verification, a
# two-writer history checked by lincheck, the known data of every phase
# read back through both nbdkits; no I/O may fail.
#
# Then `bftblk keys reauth` runs once per mode, started with a phase, so
# that it reads and re-authenticates blocks while they are written.
# Before each, 8 fresh blocks are written under epoch 0 through an nbdkit
# on the key file of before the rotation, so that every pass has old
# versions to re-authenticate and not only ones the writers signed under
# epoch 1 already.  A liar may refuse REAUTH or withhold its replies
# (refuse and mute do), so the pass may exit 1, but for the liar alone:
# it must read every block it walks, and each correct server must take
# every version sent or not hold it (a write landed meanwhile).  The
# pass walks what t+1 servers say they hold, so a liar's invented
# volumes and listings (lie-heal) must not make it read a block nobody
# wrote.  A liar can hold retire back by counting old versions in its
# census, as it may, so retire comes only once every server is correct
# again: a last pass must exit 0, `keys retire` must succeed, every
# server drop epoch 0 and each writer hold epoch 1 alone.  A phase under
# epoch 1 alone follows, and a fresh nbdkit on the retired key file
# reads all known data and the blocks written under epoch 0.
. "$(dirname "${BASH_SOURCE[0]}")/byz-lib.bash"

PHASE_SECS=${PHASE_SECS:-4}
MODES=(corrupt-fragment bad-checksum stale forge-candidate bad-mac
    equivocate refuse mute slow trim-lie)
# Not slow: each batch of a pass would wait its 2 s, some 40 s a pass,
# for nothing that mute does not test.
REAUTH_MODES=(corrupt-fragment bad-checksum stale forge-candidate bad-mac
    equivocate refuse mute trim-lie lie-heal hide-writes)

cluster_start 1
"$ADMIN" cluster finalize --dir "$CLUSTER_DIR" \
    >"$TESTDIR/log/finalize.log" 2>&1 ||
    { cat "$TESTDIR/log/finalize.log" >&2; fail "cluster finalize"; }
byz_nbdkit_start a
byz_nbdkit_start b

k=0
prev=
for mode in "${MODES[@]}"; do
	victim=$((k % CLUSTER_N))
	if [ -n "$prev" ] && [ "$prev" != "$victim" ]; then
		byz_switch "$prev" honest
	fi
	byz_switch "$victim" "$mode"
	byz_workload "keys-$mode" "$PHASE_SECS"
	if [ "$k" = 0 ]; then
		mkdir -p "$TESTDIR/old"
		cp "$CLUSTER_DIR/client.key" "$TESTDIR/old/"
		"$ADMIN" keys rotate --dir "$CLUSTER_DIR" --timeout 3 \
		    >"$TESTDIR/log/rotate.log" 2>&1 ||
		    { cat "$TESTDIR/log/rotate.log" >&2; fail "keys rotate"; }
		for i in "${!SERVER_PID[@]}"; do
			[ "${BYZ_MODES[$i]:-honest}" = honest ] &&
			    kill -s HUP "${SERVER_PID[$i]}"
		done
		log "injected: MAC key epoch 1 (servers reloaded but" \
		    "server-$victim, which takes it at its next start)"
	fi
	prev=$victim
	k=$((k + 1))
done
byz_switch "$prev" honest
for name in a b; do
	_wait_log "${NBDKIT_PID[$name]}" "$TESTDIR/log/nbdkit-$name.log" 0 \
	    "every server accepts epoch 1" "nbdkit $name (signing under epoch 1)"
done

# reauth_phase MODE VICTIM: a phase with server VICTIM in MODE (honest:
# none) and a `keys reauth` pass started with it, so that the pass reads
# and re-authenticates blocks while they are written.  Sets REAUTH_RC.
reauth_phase()
{
	local mode=$1 victim=$2 rl=$TESTDIR/log/reauth-$1.log pid deadline
	if [ "$mode" != honest ]; then
		byz_switch "$victim" "$mode"
		cold_write
	fi
	"$ADMIN" keys reauth --dir "$CLUSTER_DIR" --timeout 3 \
	    >"$rl" 2>&1 </dev/null &
	pid=$!
	_track "$pid" "reauth-$mode"
	byz_load_start "reauth-$mode" "$PHASE_SECS"
	deadline=$((SECONDS + PHASE_SECS + 90))
	while _alive "$pid" && [ "$SECONDS" -lt "$deadline" ]; do
		sleep 0.2
	done
	_alive "$pid" && { cat "$rl" >&2; fail "keys reauth ($mode) still" \
	    "running after $((PHASE_SECS + 90)) s"; }
	_reap "$pid"
	_forget_pid "$pid"
	REAUTH_RC=$_STATUS
	byz_load_finish
	reauth_check "$rl" "$mode" "$victim"
}

# cold_write: 8 blocks nobody wrote yet, written under epoch 0 through
# an nbdkit on the key file of before the rotation (servers accept both
# epochs until retire), and never again: only a pass re-authenticates
# them.  Sets COLD to the blocks written so far.
COLD_BLOCK=800
COLD=0
cold_write()
{
	nbdkit_start_with old "$PLUGIN" config="$CLUSTER_DIR/bftblk.conf" \
	    keys="$TESTDIR/old/client.key" shared=on volume-id=0
	nbdsh_run old "
import random
for b in range($((COLD_BLOCK + COLD)), $((COLD_BLOCK + COLD + 8))):
    h.pwrite(random.Random('$BYZ_SEED-cold-%d' % b).randbytes(65536),
             b * 65536)" || fail "writing cold blocks under epoch 0"
	nbdkit_stop old
	COLD=$((COLD + 8))
}

# cold_check NAME: the cold blocks read back through nbdkit NAME.
cold_check()
{
	nbdsh_run "$1" "
import random
for b in range($COLD_BLOCK, $((COLD_BLOCK + COLD))):
    assert h.pread(65536, b * 65536) == \\
        random.Random('$BYZ_SEED-cold-%d' % b).randbytes(65536), b
print('$COLD cold blocks written under epoch 0 read back')" ||
	    fail "a cold block does not read back through nbdkit $1"
}

# reauth_check LOG MODE VICTIM: the pass read every block it walked, and
# every server but VICTIM (none when MODE is honest) took or did not hold
# each version sent; only VICTIM may account for a non-zero exit.
reauth_check()
{
	local rl=$1 mode=$2 victim=$3 re sum sent i line
	re='^([0-9]+) blocks read: ([0-9]+) re-authenticated, ([0-9]+) under'
	re+=' epoch 1 already, ([0-9]+) never written, ([0-9]+) failed$'
	sum=$(grep -E '^[0-9]+ blocks read: ' "$rl") && [[ "$sum" =~ $re ]] ||
	    { cat "$rl" >&2; fail "keys reauth ($mode) printed no summary"; }
	[ "${BASH_REMATCH[5]}" = 0 ] ||
	    { cat "$rl" >&2; fail "keys reauth ($mode): blocks failed to" \
	    "read with at most t faulty servers"; }
	sent=$((BASH_REMATCH[2] + BASH_REMATCH[3]))
	# Only volume 0 is written, and t+1 servers list what is walked: a
	# liar's volumes (lie-heal) must end at block 0, its listing of
	# every block must not make the pass read a block never written.
	[ "${BASH_REMATCH[4]}" = 0 ] && ! grep -Eq \
	    '^volume ([1-9][0-9]*): up to block [1-9]' "$rl" ||
	    { cat "$rl" >&2; fail "keys reauth ($mode) walked what no" \
	    "correct server holds"; }
	[ "$mode" = honest ] || [ "${BASH_REMATCH[2]}" -ge 8 ] ||
	    { cat "$rl" >&2; fail "keys reauth ($mode) re-authenticated" \
	    "${BASH_REMATCH[2]} versions, not the 8 cold blocks just" \
	    "written under epoch 0"; }
	[ "$sent" -gt 0 ] ||
	    { cat "$rl" >&2; fail "keys reauth ($mode) sent no REAUTH"; }
	for ((i = 0; i < CLUSTER_N; i++)); do
		line=$(grep "^server $i: " "$rl") ||
		    { cat "$rl" >&2; fail "keys reauth ($mode): no line for" \
		    "server $i"; }
		if [ "$mode" != honest ] && [ "$i" = "$victim" ]; then
			log "reauth ($mode): liar $line"
			case "$mode,$line" in
			mute,*" not sent "*) ;;
			refuse,*" refused "*|refuse,*" not sent "*) ;;
			mute,*|refuse,*)
				fail "reauth ($mode): the liar's replies were" \
				    "taken as a correct server's: $line" ;;
			esac
			continue
		fi
		[[ "$line" =~ ^server\ $i:\ ([0-9]+)\ taken,\ ([0-9]+)\ not\ held$ ]] ||
		    { cat "$rl" >&2; fail "reauth ($mode): correct server $i" \
		    "did not take every version: $line"; }
		[ $((BASH_REMATCH[1] + BASH_REMATCH[2])) = "$sent" ] ||
		    { cat "$rl" >&2; fail "reauth ($mode): server $i answered" \
		    "$((BASH_REMATCH[1] + BASH_REMATCH[2])) of $sent"; }
	done
	case "$REAUTH_RC,$mode" in
	0,*) ;;
	1,honest)
		cat "$rl" >&2
		fail "keys reauth with every server correct exited 1" ;;
	1,*)
		grep -Eq "^server $victim: .*(refused|not sent)" "$rl" ||
		    { cat "$rl" >&2; fail "keys reauth ($mode) exited 1," \
		    "yet not for the liar"; } ;;
	*)
		cat "$rl" >&2
		fail "keys reauth ($mode) exited $REAUTH_RC" ;;
	esac
	log "reauth ($mode): exit $REAUTH_RC; $sum"
}

prev=
for mode in "${REAUTH_MODES[@]}"; do
	victim=$((k % CLUSTER_N))
	if [ -n "$prev" ] && [ "$prev" != "$victim" ]; then
		byz_switch "$prev" honest
	fi
	reauth_phase "$mode" "$victim"
	prev=$victim
	k=$((k + 1))
done
byz_switch "$prev" honest

reauth_phase honest -
keys_retire 40
for f in client.key server-0.key server-1.key server-2.key server-3.key; do
	grep -q "^epoch = 1$" "$CLUSTER_DIR/$f" || fail "$f is not at epoch 1"
	grep -q "next-" "$CLUSTER_DIR/$f" && fail "$f still holds two epochs"
done
servers_reload "reload: retiring MAC key epoch 0"
for i in "${!SERVER_PID[@]}"; do
	BFTBLK_WAIT=30 _wait_log "${SERVER_PID[$i]}" \
	    "$TESTDIR/log/server-$i.log" 0 "MAC key epoch 0 retired" \
	    "server-$i (retired)"
done
status_has "MAC keys: epoch 1 on every server that answered"
for name in a b; do
	_wait_log "${NBDKIT_PID[$name]}" "$TESTDIR/log/nbdkit-$name.log" 0 \
	    "holds epoch 1 alone" "nbdkit $name (epoch 1 alone)"
done
log "injected: epoch 0 retired on every server and writer"
byz_workload "retired" "$PHASE_SECS"
for name in a b; do
	byz_nbdkit_stats "$name"
done
nbdkit_start fresh
nbdsh_run fresh "$BYZ_PY
check($(byz_tags_py), 'epoch 0 retired, fresh nbdkit')
" || fail "known data through a fresh nbdkit: see above"
cold_check fresh
log "ok"
