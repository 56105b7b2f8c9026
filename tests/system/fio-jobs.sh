#!/bin/bash
# The job files of fio-jobs/ run as their headers document them, through
# fio's nbd engine against the export's unix socket: the four benchmark
# jobs (seq-write-64k first, so the reads read written blocks) for a few
# seconds each, then randrw-verify.fio over 384 MiB, random reads and
# writes of 4 KiB..64 KiB with a crc32c verify pass.  Each must exit 0
# with no error in fio's JSON report and have moved data; the verify job
# must have read back all it wrote in its verify pass, with no verify
# error (verify_fatal would also stop it with a non-zero exit).
# shellcheck source=tests/system/syslib.bash
. "$(dirname "${BASH_SOURCE[0]}")/syslib.bash"

command -v fio >/dev/null || skip "fio is not installed"
[[ " $(fio --enghelp 2>/dev/null | tr -s '\t\n' '  ') " == *" nbd "* ]] ||
    skip "fio has no nbd engine"

# check_report JSON: fio's report has no job error; prints the job's
# "read_bytes write_bytes".
check_report()
{
	python3 - "$1" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
# fio's nbd engine may print a line before the JSON document.
job = json.loads(text[text.index("{"):])["jobs"][0]
if job["error"]:
    sys.exit("fio job error %d" % job["error"])
print(job["read"]["io_bytes"], job["write"]["io_bytes"])
PY
}

# run_job JOB: runs fio-jobs/JOB.fio as documented, with a JSON report;
# sets READ_BYTES and WRITE_BYTES.
run_job()
{
	local job=$1 json=$TESTDIR/log/fio-$1.json rc=0 bytes
	log "NBD_URI=$NBD_URI FIO_SIZE=$FIO_SIZE FIO_RUNTIME=${FIO_RUNTIME:-}" \
	    "fio fio-jobs/$job.fio"
	fio --output-format=json --output="$json" "$SRCDIR/fio-jobs/$job.fio" \
	    >"$TESTDIR/log/fio-$job.log" 2>&1 || rc=$?
	if [ "$rc" -ne 0 ]; then
		_show_log_tail "$TESTDIR/log/fio-$job.log" 30
		_show_log_tail "$json" 30
		fail "fio $job exited with status $rc"
	fi
	bytes=$(check_report "$json") || fail "fio $job reported an error"
	read -r READ_BYTES WRITE_BYTES <<<"$bytes"
	log "fio $job: exit 0, no error, read $READ_BYTES B, wrote $WRITE_BYTES B"
}

CLUSTER_SIZE=512M
cluster_start 1
nbdkit_start nbd
export NBD_URI FIO_SIZE FIO_RUNTIME
NBD_URI=$(nbd_uri nbd)

FIO_SIZE=64M
FIO_RUNTIME=5
for job in seq-write-64k seq-read-64k rand-write-4k rand-read-4k; do
	run_job "$job"
	case "$job" in
	*write*) [ "$WRITE_BYTES" -gt 0 ] || fail "fio $job wrote nothing" ;;
	*read*) [ "$READ_BYTES" -gt 0 ] || fail "fio $job read nothing" ;;
	esac
done

FIO_SIZE=384M
unset FIO_RUNTIME
run_job randrw-verify
# The random phase moves FIO_SIZE bytes in all, reads and writes; what
# was read beyond that is the verify pass, which must cover every write.
verified=$((READ_BYTES - ((384 << 20) - WRITE_BYTES)))
[ "$WRITE_BYTES" -gt 0 ] || fail "randrw-verify wrote nothing"
[ "$verified" -ge "$WRITE_BYTES" ] ||
    fail "randrw-verify verified $verified B of the $WRITE_BYTES B it wrote"
out=$TESTDIR/log/fio-randrw-verify.log
if grep -qiE 'verify|bad magic|crc32c' "$out"; then
	_show_log_tail "$out" 30
	fail "randrw-verify reported verify errors"
fi
log "randrw-verify: $verified B verified by crc32c, no verify error"
log "ok"
