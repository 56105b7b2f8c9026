#!/bin/bash
# The servers and nbdkit with the plugin under valgrind (memcheck, full
# leak check), a short workload, and a clean SIGTERM shutdown: every
# valgrind log must say "ERROR SUMMARY: 0 errors", and no process may
# exit with valgrind's error status (lib.sh fails the test on that).
#
# The plugin holds its volume's lease (shared=off).  The workload:
# whole-block, unaligned and block-crossing writes and
# reads of a few MiB through nbdsh, verified byte for byte; one server
# restarted (so log replay runs under valgrind too) and one killed with
# SIGKILL, with the data checked after each.
#
# Runs with VALGRIND=1 set or whenever valgrind is installed; skips on
# ASan builds, which valgrind cannot run.
if ! command -v valgrind >/dev/null 2>&1; then
	echo "SKIP: valgrind is not installed" >&2
	exit 77
fi
export VALGRIND=1
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_build
# Not ldd | grep -q: with pipefail, grep's early exit would fail ldd.
if [[ "$(ldd "$SERVER" "$PLUGIN" 2>/dev/null)" == *libasan* ]]; then
	skip "$BUILD is an ASan build; valgrind cannot run it"
fi

# check_valgrind_logs WHAT...: every valgrind log of WHAT (server-0,
# nbdkit-nbd, ...) must exist and report no errors.
check_valgrind_logs()
{
	local what f n
	for what in "$@"; do
		n=0
		for f in "$TESTDIR/log/$what".valgrind.*; do
			[ -e "$f" ] || continue
			n=$((n + 1))
			if ! grep -q 'ERROR SUMMARY: 0 errors' "$f"; then
				_show_log_tail "$f" 200
				fail "valgrind found errors in $what ($f)"
			fi
			grep -q 'definitely lost: [1-9]' "$f" &&
			    fail "valgrind found a definite leak in $what ($f)"
		done
		[ "$n" -gt 0 ] || fail "no valgrind log for $what"
		log "$what: $n valgrind log(s), ERROR SUMMARY: 0 errors"
	done
}

CLUSTER_SIZE=16M
cluster_start 1
# shared=off: the lease's thread, renewals and release run under
# valgrind too.
nbdkit_start nbd shared=off lease=30

seed=$RANDOM$RANDOM
py="
import random
BS = 65536
NB = 64

def pattern(tag, n):
    return random.Random('$seed-' + tag).randbytes(n)

W = [('big0-31', 0, 32 * BS), ('inside33', 33 * BS + 1000, 3000),
     ('across35-36', 36 * BS - 4096, 8192), ('big40-47', 40 * BS, 8 * BS),
     ('byte50', 50 * BS + 7, 1), ('over2', 2 * BS + 12345, 20000)]

def write(writes):
    for tag, off, n in writes:
        h.pwrite(pattern(tag, n), off)

def check(what):
    model = bytearray(NB * BS)
    for tag, off, n in W:
        model[off:off + n] = pattern(tag, n)
    got = h.pread(NB * BS, 0)
    if got != model:
        bad = next(i for i in range(len(model)) if got[i] != model[i])
        raise AssertionError('%s: byte %d (block %d) differs'
                             % (what, bad, bad // BS))
    for tag, off, n in W:
        if h.pread(n, off) != bytes(model[off:off + n]):
            raise AssertionError('%s: read of %s differs' % (what, tag))
    print('%s: %d blocks match byte for byte' % (what, NB))
"

log "writing about 2.5 MiB under valgrind"
nbdsh_run nbd "$py
write(W)
h.flush()
check('written')
"

log "restarting server-1 (its log replay runs under valgrind)"
server_kill 1 TERM
server_start 1
log "SIGKILL to server-3"
server_kill 3 KILL
nbdsh_run nbd "$py
check('server 1 restarted, server 3 killed')
"
server_start 3

log "stopping everything with SIGTERM"
nbdkit_stop nbd
for ((i = 0; i < CLUSTER_N; i++)); do
	server_kill "$i" TERM
done
check_valgrind_logs nbdkit-nbd server-0 server-1 server-2
# Server 3's SIGKILLed run left a log without a summary; its second run
# must be clean.
f=$(ls -t "$TESTDIR"/log/server-3.valgrind.* | sed -n 1p)
grep -q 'ERROR SUMMARY: 0 errors' "$f" || { _show_log_tail "$f" 200;
    fail "valgrind found errors in server-3 ($f)"; }
log "server-3 (restarted): ERROR SUMMARY: 0 errors"
log "ok"
