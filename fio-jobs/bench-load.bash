# shellcheck shell=bash
# The load bench-keys and bench-recover keep on a cluster while it
# changes under it, sourced after tests/faults/lib.sh with NBLOCKS set
# and nbdkit "bftblk" running: a second writer with its own key file
# (nbdkit "b"); fio's randrw-verify job run after run on the third
# quarter of the disk through "bftblk" (every range written is read
# back and its crc32c checked); and the history recorder's 4 clients,
# 2 through each writer, on 4 blocks near the disk's end.

# load_verify_loop STOP: randrw-verify until STOP exists (at most 500
# runs); the runs into $TESTDIR/verify-runs, exit 1 at the first that
# fails.
load_verify_loop()
{
	local n=0
	while [ ! -e "$1" ] && [ "$n" -lt 500 ]; do
		fio --name=verify --ioengine=nbd --uri="$(nbd_uri bftblk)" \
		    --rw=randrw --rwmixread=30 --bsrange=4k-64k --iodepth=16 \
		    --verify=crc32c --verify_fatal=1 --do_verify=1 \
		    --verify_state_save=0 --offset=$((NBLOCKS / 2 * 65536)) \
		    --size=$((NBLOCKS / 4 * 65536)) \
		    >"$TESTDIR/verify-$n.out" 2>&1 || return 1
		n=$((n + 1))
		echo "$n" >"$TESTDIR/verify-runs"
	done
}

# load_start SECS: the load, with a recording SECS long.  Sets LOAD_END,
# the SECONDS at which the recording ends.
load_start()
{
	[ -n "${NBDKIT_PID[b]:-}" ] || {
		client_add b rw
		nbdkit_start_with b "$PLUGIN" \
		    config="$CLUSTER_DIR/bftblk.conf" \
		    keys="$CLUSTER_DIR/b.key" shared=on volume-id=0
	}
	LOAD_HIST=$TESTDIR/load.jsonl
	export LIN_ARGS="--blocks 4 --first-block $((NBLOCKS - 8))"
	LIN_ARGS+=" --clients-per-uri 2"
	# The recorder's registers start as zeros; the fill wrote them.
	nbdsh_run bftblk "h.pwrite(bytes(4 * 65536), $((NBLOCKS - 8)) * 65536)" ||
	    fail "zeroing the recorder's blocks"
	rm -f "$TESTDIR/stop-verify" "$TESTDIR/verify-runs"
	load_verify_loop "$TESTDIR/stop-verify" &
	LOAD_VL=$!
	_track "$LOAD_VL" verify-loop
	LOAD_END=$((SECONDS + $1))
	lin_record_start "$LOAD_HIST" "$1" "$(nbd_uri bftblk)" "$(nbd_uri b)"
}

# load_finish: the recording's end; fails on a fio run that did not
# verify, an op of the history that failed, or a history that is not
# linearizable.  Sets LOAD_RUNS (fio runs) and LOAD_LIN (what lincheck
# said, or why it did not run).
load_finish()
{
	local k
	lin_record_wait
	touch "$TESTDIR/stop-verify"
	_reap "$LOAD_VL"
	_forget_pid "$LOAD_VL"
	[ "$_STATUS" = 0 ] || { tail -20 "$TESTDIR"/verify-*.out >&2
		fail "fio randrw-verify failed under the load"; }
	LOAD_RUNS=$(cat "$TESTDIR/verify-runs" 2>/dev/null || echo 0)
	[ "$LOAD_RUNS" -gt 0 ] ||
	    fail "no randrw-verify run finished under the load"
	for k in write_errors read_errors timeouts garbage misplaced \
	    connect_errors; do
		[ "${LIN_STAT[$k]}" = 0 ] ||
		    fail "the history under the load saw $k=${LIN_STAT[$k]}"
	done
	lin_final_read "$LOAD_HIST" "$(nbd_uri bftblk)" "$(nbd_uri b)"
	if command -v go >/dev/null || [ -x /usr/local/go/bin/go ]; then
		lin_check "$LOAD_HIST"
		LOAD_LIN="linearizable"
	else
		LOAD_LIN="not checked (no go for lincheck)"
	fi
}

# load_summary: its lines for a bench's summary.
load_summary()
{
	echo "  fio randrw-verify on $((NBLOCKS / 4 * 64 / 1024)) MiB:" \
	    "$LOAD_RUNS runs, every one verified"
	echo "  history, 2 writers x 2 clients on 4 blocks:" \
	    "ops=${LIN_STAT[ops]}, 0 errors, $LOAD_LIN"
}
