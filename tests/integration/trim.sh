#!/bin/bash
# Zero and trim of blocks that already read as zeros write nothing
# (lib/write.c, drop_zero_blocks), t=1.
#
# 1. Trim and write-zeroes of 48 MiB never written: every server's data
#    directory grows by less than 1 MiB (writing the zeros would add
#    half the range to each: 24 MiB), and the range reads as zeros.
# 2. 4 MiB of a pattern is written, then trimmed, and must read back as
#    zeros (these blocks are written: their zeros do go to the servers);
#    trimming it a second time adds nothing.
# 3. A trim that covers blocks only in part still zeroes exactly the
#    bytes asked for, and leaves the rest.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CLUSTER_SIZE=64M
cluster_start 1
nbdkit_start nbd

# The bytes in every server's data directory, one line.
sizes()
{
	local i
	for ((i = 0; i < CLUSTER_N; i++)); do
		du -sb "$TESTDIR/data/server-$i" | cut -f1
	done | paste -sd' '
}

# grown BEFORE AFTER LIMIT: fails unless every server grew by < LIMIT.
grown()
{
	local -a a=($1) b=($2)
	local i
	for ((i = 0; i < CLUSTER_N; i++)); do
		[ $((b[i] - a[i])) -lt "$3" ] ||
		    fail "server $i grew by $((b[i] - a[i])) bytes ($4)"
	done
}

MiB=$((1024 * 1024))
before=$(sizes)
nbdsh_run nbd "
h.trim(32 * $MiB, 0)
h.zero(16 * $MiB, 32 * $MiB)
assert h.pread(48 * $MiB, 0) == bytes(48 * $MiB)
" || fail "trim or zero of a never-written range"
after=$(sizes)
grown "$before" "$after" "$MiB" "trim of never-written blocks"
log "trim+zero of 48 MiB never written: servers $before -> $after bytes"

nbdsh_run nbd "
import random
data = random.Random(7).randbytes(4 * $MiB)
h.pwrite(data, 48 * $MiB)
assert h.pread(4 * $MiB, 48 * $MiB) == data
h.trim(4 * $MiB, 48 * $MiB)
assert h.pread(4 * $MiB, 48 * $MiB) == bytes(4 * $MiB)
" || fail "a written range did not read back as zeros after trim"
before=$(sizes)
nbdsh_run nbd "
h.trim(4 * $MiB, 48 * $MiB)
assert h.pread(4 * $MiB, 48 * $MiB) == bytes(4 * $MiB)
" || fail "second trim"
after=$(sizes)
grown "$before" "$after" "$MiB" "a second trim of trimmed blocks"
log "written, trimmed, trimmed again: the second added nothing"

nbdsh_run nbd "
import random
BS = 65536
data = random.Random(9).randbytes(3 * BS)
h.pwrite(data, 56 * $MiB)
h.trim(BS, 56 * $MiB + BS // 2)
want = data[:BS // 2] + bytes(BS) + data[BS // 2 + BS:]
assert h.pread(3 * BS, 56 * $MiB) == want
" || fail "a trim over parts of blocks"
log "a trim over parts of blocks zeroes exactly its bytes"
log "ok"
