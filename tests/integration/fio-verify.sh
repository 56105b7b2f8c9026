#!/bin/bash
# fio data-integrity jobs through fio's nbd engine, nbdkit and a t=1
# cluster: a sequential 64 KiB write pass over 64 MiB verified by crc32c,
# then random reads and writes of 4 KiB..64 KiB (so writes smaller than,
# equal to and straddling the 64 KiB blocks, i.e. read-modify-writes) over
# another 64 MiB, verified the same way.  Finally the sequential range is
# verified once more through a fresh nbdkit, so the data read back must
# come from the servers.  Any fio error or verify mismatch fails.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_fio_nbd

# run_fio NAME FIO-ARGS...: runs one fio job against nbdkit "nbd" and
# fails the test on a non-zero exit, an "err=" other than 0 in fio's
# report, or any verify complaint.
run_fio()
{
	local name=$1 out rc=0
	shift
	out=$TESTDIR/log/fio-$name.log
	log "fio $name: $*"
	fio --name="$name" --ioengine=nbd --uri="$(nbd_uri nbd)" \
	    --iodepth=16 "$@" >"$out" 2>&1 || rc=$?
	if [ "$rc" -ne 0 ] || grep -qE 'err= *[1-9]|verify failed|bad magic' \
	    "$out"; then
		_show_log_tail "$out" 60
		fail "fio $name: exit status $rc, or errors in $out"
	fi
	grep -qE 'err= *0' "$out" || { _show_log_tail "$out" 60;
	    fail "fio $name: no job report in $out"; }
	log "fio $name: exit 0, err=0, no verify errors" \
	    "($(grep -oE '(READ|WRITE): bw=[^,]*' "$out" | tr '\n' ' '))"
}

CLUSTER_SIZE=128M
cluster_start 1
nbdkit_start nbd

seq_args=(--offset=0 --size=64M --rw=write --bs=64k --verify=crc32c
    --do_verify=1 --verify_fatal=1)
run_fio seq-write-verify "${seq_args[@]}"

run_fio rand-rw-verify --offset=64M --size=64M --rw=randrw --rwmixread=30 \
    --bsrange=4k-64k --verify=crc32c --do_verify=1 --verify_fatal=1 \
    --randrepeat=0

log "re-verifying the sequential range through a fresh nbdkit"
nbdkit_stop nbd
nbdkit_start nbd
run_fio seq-verify-only "${seq_args[@]}" --verify_only=1
log "ok"
