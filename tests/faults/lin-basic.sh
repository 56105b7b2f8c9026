#!/bin/bash
# Linearizability with two writers and no faults (t=1).
#
# Two nbdkit instances (two writers with their own writer ids) serve one
# cluster; 4 clients, 2 per nbdkit, read and write whole 64 KiB blocks
# on 4 hot blocks for 15 s, every write a value of its own.  No op may
# fail, no read may return bytes no write wrote, and the history, with
# a final read of every block through both nbdkits appended, must be
# linearizable.
#
# Negative controls, so that the wiring can fail end to end: lincheck
# must reject testdata's stale-read and never-written histories, and the
# recorded history itself with one read changed into a stale read.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DURATION=15
export LIN_ARGS="--blocks 4 --first-block 0 --clients-per-uri 2"
hist=$TESTDIR/lin-basic.jsonl

lin_build
log "negative controls: lincheck on known non-linearizable histories"
lin_expect_illegal "$LIN_SRC/testdata/stale-read.jsonl"
lin_expect_illegal "$LIN_SRC/testdata/never-written.jsonl"

cluster_start 1
nbdkit_start a
nbdkit_start b

log "injected: nothing; 4 clients (2 per nbdkit) on blocks 0-3 for" \
    "${DURATION}s"
lin_record "$hist" "$DURATION" "$(nbd_uri a)" "$(nbd_uri b)"
# A bad read fails lin_check, which keeps the history: check it first.
lin_final_read "$hist" "$(nbd_uri a)" "$(nbd_uri b)"
lin_check "$hist"
for k in write_errors read_errors timeouts garbage misplaced connect_errors; do
	[ "${LIN_STAT[$k]}" = 0 ] ||
	    fail "no fault was injected, yet $k=${LIN_STAT[$k]}"
done
if [ "${LIN_STAT[writes]}" -eq 0 ] || [ "${LIN_STAT[reads]}" -eq 0 ]; then
	fail "the recorder did no reads or no writes"
fi

# Clients 0-1 use nbdkit a, 2-3 nbdkit b: a read through one of a
# value written through the other shows that the writers shared blocks.
cross=$("$LIN_PYTHON" - "$hist" <<'EOF'
import json, sys
n = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    v = r.get("value", "")
    if r["op"] == "r" and r["ok"] and v.startswith("c") and r["client"] < 4:
        writer = int(v[1:].split("s")[0])
        n += (writer < 2) != (r["client"] < 2)
print(n)
EOF
)
[ "$cross" -gt 0 ] || fail "no read returned a value from the other writer"
log "checked: $cross reads returned a value written through the other nbdkit"


# The same history with one read made stale (lin_stale_mutant).
mutant=$TESTDIR/lin-basic-stale.jsonl
lin_stale_mutant "$hist" "$mutant"
lin_expect_illegal "$mutant"
log "ok"
