#!/bin/bash
# Zero and trim write the zero value, which holds no fragment on the
# servers, and write nothing at all to blocks that already read as zeros
# (lib/write.c), t=1.  The servers run 1 MiB segments, so compaction
# can reclaim a trimmed range while the test runs.
#
# 1. Trim and write-zeroes of 48 MiB never written: every server's data
#    directory grows by less than 1 MiB (writing the zeros would add
#    half the range to each: 24 MiB), and the range reads as zeros.
# 2. 4 MiB of a pattern is written, then trimmed, and must read back as
#    zeros (these blocks are written: their zeros do go to the servers);
#    trimming it a second time adds nothing.
# 3. A trim that covers blocks only in part still zeroes exactly the
#    bytes asked for, and leaves the rest.
# 4. Trimming 24 MiB of written data frees the servers' space: after the
#    trim and a second pass of writes elsewhere (which drives compaction),
#    every data directory holds less than it did before the trim by at
#    least half the fragments trimmed; write-zeroes does the same, and a
#    write of a whole block of zeros as well.  The range reads as zeros
#    from a fresh connection and after nbdkit restarts.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CLUSTER_SIZE=128M
SERVER_ARGS="${SERVER_ARGS:-} --segment-mb 1"
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

# shrunk BEFORE AFTER LIMIT WHAT: fails unless every server's directory
# went down by at least LIMIT bytes.
shrunk()
{
	local -a a=($1) b=($2)
	local i
	for ((i = 0; i < CLUSTER_N; i++)); do
		[ $((a[i] - b[i])) -ge "$3" ] ||
		    fail "server $i went from ${a[i]} to ${b[i]} bytes:" \
		    "less than $3 freed ($4)"
	done
}

# free_check HOW: writes 24 MiB at 64 MiB, removes it by HOW (a Python
# statement over the range), drives compaction with 8 MiB of writes
# elsewhere, and checks what the data directories freed.  Each server
# holds a third of a block per block written (k = 2 of n = 4 fragments
# at t = 1: half), so 24 MiB of data is 12 MiB of fragments per server.
free_check()
{
	local how=$1 before after
	nbdsh_run nbd "
import random
h.pwrite(random.Random(11).randbytes(24 * $MiB), 64 * $MiB)
h.flush()
" || fail "writing the range to free"
	before=$(sizes)
	nbdsh_run nbd "
import random
off, n = 64 * $MiB, 24 * $MiB
$how
h.flush()
assert h.pread(n, off) == bytes(n)
for i in range(4):
    h.pwrite(random.Random(12 + i).randbytes(8 * $MiB), 96 * $MiB)
    h.flush()
" || fail "$how"
	after=$(sizes)
	log "24 MiB written then removed by $how: servers $before -> $after bytes"
	shrunk "$before" "$after" $((6 * MiB)) "$how"
	nbdsh_run nbd "
assert h.pread(24 * $MiB, 64 * $MiB) == bytes(24 * $MiB)
" || fail "the range does not read as zeros on a new connection"
}

free_check "h.trim(n, off)"
free_check "h.zero(n, off)"
free_check "h.pwrite(bytes(n), off)"
nbdkit_stop nbd
nbdkit_start nbd
nbdsh_run nbd "
assert h.pread(24 * $MiB, 64 * $MiB) == bytes(24 * $MiB)
" || fail "the freed range does not read as zeros after nbdkit restarts"
log "ok"
