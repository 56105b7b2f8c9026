#!/bin/bash
# A model-based test of snapshots, clones, flatten and rollback (t=1).
#
# The hand-written tests (tests/integration/clone.sh, snapshot.sh,
# byz-clone.sh, byz-snapshot.sh) each check the orders of operations
# their authors thought of; this one draws the order at random, so that
# the combinations nobody wrote down are tried too: a rollback of a clone
# to a snapshot taken before it was flattened, a clone of a snapshot of
# a clone whose own parent has since been rolled back, a 4 KiB write into
# a block a clone inherits, a trim after a rollback.
#
# tests/faults/snap_model.py keeps the model: what each head and each
# snapshot must read as (a snapshot is its volume's head when taken, a
# clone starts as its parent snapshot, rollback sets the head to the
# snapshot, flatten changes nothing visible, writes, trims and
# write-zeroes change only their volume's head), and which snapshot each
# clone and each snapshot of a clone depends on.  Each step draws one
# operation on a 2 MiB volume v and its clones: writes of whole blocks
# and of 4 KiB pieces inside blocks, trims and write-zeroes (through
# nbdkit, one connection per step), snap create, snap delete (refused
# while something depends on the snapshot, and then the refusal must
# name exactly those dependants), volume clone, flatten, rollback (with
# nbdkit stopped: no writer may hold the volume), and volume delete of a
# clone (refused while it has snapshots).  After every step every head
# and every snapshot is exported and compared with the model byte for
# byte, and the table must list exactly the model's names.
#
# First an honest phase, then one phase per mode of the test server,
# server (k mod 4) lying in phase k: table changes and exports must not
# notice, and the liar's exit line must show its mode changed replies
# (lie-heal only lies to rebuilding servers, which nothing here is, so
# it is not among the modes).  A clone needs every server to say the
# cluster is finalized, and a rollback every server's list of changes,
# so while the liar withholds or refuses replies either may be refused
# for that reason, and only that one, with nothing changed.  The model runs on across phases.
#
# The seed is printed; SNAP_MODEL_SEED=N reproduces the whole run
# (operations, data, and the liars' forged bytes).  SNAP_MODEL_STEPS and
# SNAP_MODEL_BYZ_STEPS set the honest and per-mode step counts; each
# table change waits out the admin lock (--timeout plus half a second),
# so they are kept small enough for the run to take a few minutes.
SNAP_MODEL_SEED=${SNAP_MODEL_SEED:-$(date +%s%N | cut -c7-15)}
BYZ_SEED=${BYZ_SEED:-$SNAP_MODEL_SEED}
. "$(dirname "${BASH_SOURCE[0]}")/byz-lib.bash"

MODES=(corrupt-fragment bad-checksum stale forge-candidate bad-mac
    equivocate mute slow collude refuse trim-lie view-head hide-writes)
STEPS=${SNAP_MODEL_STEPS:-20}
BYZ_STEPS=${SNAP_MODEL_BYZ_STEPS:-8}
BLOCKS=32			# v is 2 MiB

NBDKIT_PIN=			# volumes by export name
NBDKIT_SHARED=			# one writer per volume: rollback needs it gone
require_python_nbd /usr/bin/python3
log "seed $SNAP_MODEL_SEED (SNAP_MODEL_SEED=$SNAP_MODEL_SEED reproduces" \
    "this run)"
cluster_start 1
"$ADMIN" cluster finalize --dir "$CLUSTER_DIR" >/dev/null ||
    fail "cluster finalize"
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name v \
    --size $((BLOCKS * 64))K >/dev/null || fail "creating v"
byz_nbdkit_start a

# A clone needs every server to say the cluster is finalized, and a
# rollback every server's list of changes, so while the liar withholds
# or refuses its replies (WITHHOLDS=1) the model accepts either refused
# for that reason, and only for that one, with nothing changed.
export ADMIN CLUSTER_DIR TESTDIR SOCK=$TESTDIR/a.sock ADMIN_TIMEOUT=2
export WITHHOLDS=0
STATE=$TESTDIR/model.pickle
model() { /usr/bin/python3 "$SRCDIR/tests/faults/snap_model.py" "$@"; }
model init "$STATE" "$BLOCKS" || fail "model init"

# steps PHASE N: N steps of the model, tagged PHASE-K.
steps()
{
	local phase=$1 n=$2 k st
	for ((k = 1; k <= n; k++)); do
		st=0
		model step "$STATE" "$SNAP_MODEL_SEED" "$phase-$k" \
		    >"$TESTDIR/step.out" || st=$?
		case $st in
		0) ;;
		3)
			# Rollback refuses a volume a writer holds.
			nbdkit_stop a
			model rollback "$STATE" "$SNAP_MODEL_SEED" "$phase-$k" ||
			    fail "step $phase-$k (rollback of" \
			    "$(cat "$TESTDIR/step.out")); seed $SNAP_MODEL_SEED"
			byz_nbdkit_start a
			;;
		*) fail "step $phase-$k; seed $SNAP_MODEL_SEED" ;;
		esac
	done
}

log "phase honest: $STEPS steps"
steps honest "$STEPS"
for k in "${!MODES[@]}"; do
	liar=$((k % CLUSTER_N))
	log "phase $k: server $liar is ${MODES[$k]}, $BYZ_STEPS steps"
	byz_switch "$liar" "${MODES[$k]}"
	case ${MODES[$k]} in
	mute | slow | refuse) WITHHOLDS=1 ;;
	*) WITHHOLDS=0 ;;
	esac
	steps "${MODES[$k]}" "$BYZ_STEPS"
	byz_switch "$liar" honest
done
log "PASS (seed $SNAP_MODEL_SEED)"
