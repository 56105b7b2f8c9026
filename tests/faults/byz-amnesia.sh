#!/bin/bash
# A server that loses its disk mid-run (t=1).  Going back to the initial
# state is a Byzantine fault (Dobre et al., proof of Theorem III.1), and
# here it is the only fault.
#
# 1. Known data is written with every server intact.
# 2. A phase of tests/faults/byz-lib.bash (fio randrw with crc32c
#    verification, a two-writer history checked by lincheck, known data)
#    runs for 14 s; 2 s in, server 1 is killed with SIGKILL, its data
#    directory removed, and it is restarted empty (it makes a new one
#    with the same identity); 4 s later the same again.
# 3. All known data, including what server 1 no longer holds, reads
#    back through both nbdkit instances and a fresh one.
# 4. The restarted server must also be a working member: fresh data is
#    written, server 3 is stopped (SIGSTOP), so that every round needs
#    server 1, and the fresh data must read back; after SIGCONT all
#    known data is checked once more.
. "$(dirname "${BASH_SOURCE[0]}")/byz-lib.bash"

VICTIM=1
OTHER=3

cluster_start 1
byz_nbdkit_start a
byz_nbdkit_start b

BYZ_TAGS+=(before)
byz_known a "write('before')
check($(byz_tags_py), 'all intact')"

byz_load_start amnesia 14
sleep 2
byz_amnesia "$VICTIM"
sleep 4
byz_amnesia "$VICTIM"
byz_load_finish

nbdkit_start fresh
byz_known fresh "check($(byz_tags_py), 'after the amnesia, fresh nbdkit')"
nbdkit_stop fresh

fresh_py="
import random
BS = 65536
FIRST = 900
NB = 16
def data(i):
    return random.Random('$BYZ_SEED-fresh-%d' % i).randbytes(BS)
"
log "fresh data on blocks 900-915 with every server up"
nbdsh_run a "$fresh_py
for i in range(NB):
    h.pwrite(data(i), (FIRST + i) * BS)
print('wrote %d fresh blocks' % NB)
" || fail "writing fresh data failed"
log "injected: SIGSTOP to server-$OTHER: every round now needs server-$VICTIM"
server_kill "$OTHER" STOP
nbdsh_run a "$fresh_py
for i in range(NB):
    if h.pread(BS, (FIRST + i) * BS) != data(i):
        raise AssertionError('block %d: the fresh data does not read back '
                             'with server $OTHER stopped' % (FIRST + i))
print('%d fresh blocks read back through servers 0-2' % NB)
" || fail "fresh data with server-$OTHER stopped: see above"
server_kill "$OTHER" CONT
log "SIGCONT to server-$OTHER"
byz_known b "check($(byz_tags_py), 'all servers running again')"
log "ok"
