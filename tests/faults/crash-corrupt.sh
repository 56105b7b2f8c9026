#!/bin/bash
# Damaged data on a server's disk (t=1, then t=2 with two servers).
#
# 16 blocks are written twice through nbdkit (so the logs hold old and
# live records), then t servers are stopped and their segment files
# damaged in several places: bytes of live fragments, a live record's
# cross-checksums, the nonces of live lc records, a record header, and
# a torn last record.  Restarted, each damaged server must report the
# damage in its log, and every block must read back byte for byte
# through the running nbdkit and a fresh one.  Then (t=1) bytes of live
# fragments are damaged under the running server, which must notice when
# it reads them ("not serving it") while clients still read the right
# data (through an nbdkit that has not learnt to pass over the server,
# which a 1-round read does after a bad fragment).  Finally new writes to every block must succeed and read back.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NB=16
cat >"$TESTDIR/corrupt.py" <<'PY'
"""corrupt.py DATADIR N MODE [SKIP...]: damages segment files in place.

MODE "down": the server is stopped; damage records of several kinds
and tear the last record.  MODE "live": only flip bytes in live
fragments of blocks not in SKIP.  Prints what it did and, last, the
blocks it touched."""
import glob, os, struct, sys

HDR, SUM = 32, 4
datadir, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
skip = {int(b) for b in sys.argv[4:]}
FRAG = HDR + 32 + 32 + n * 48 + 4      # fragment offset in a HIST record

def records():
    out = []
    for path in sorted(glob.glob(os.path.join(datadir, 'seg-*.log'))):
        buf = open(path, 'rb').read()
        off = 0
        while off + HDR <= len(buf) and buf[off:off + 4] == b'BFTR':
            typ = buf[off + 4]
            plen, = struct.unpack_from('<I', buf, off + 8)
            block, = struct.unpack_from('<Q', buf, off + 24)
            end = off + HDR + plen + SUM
            if end > len(buf):
                break
            out.append(dict(path=path, off=off, end=end, type=typ,
                            block=block))
            off = end
    return out

def flip(rec, where, what):
    with open(rec['path'], 'r+b') as f:
        f.seek(rec['off'] + where)
        b = f.read(1)
        f.seek(rec['off'] + where)
        f.write(bytes([b[0] ^ 0xff]))
    print('%s: %s, block %d, record at %s+%d, byte %d' % (
        mode, what, rec['block'], os.path.basename(rec['path']),
        rec['off'], where))

recs = records()
last = {}                               # (type, block) -> latest record
for r in recs:
    last[(r['type'], r['block'])] = r
hist = [r for k, r in sorted(last.items()) if k[0] == 1
        and r['block'] not in skip and r is not recs[-1]]
lcs = [r for k, r in sorted(last.items()) if k[0] == 2
       and r['block'] not in skip and r is not recs[-1]]
touched = set()
if mode == 'live':
    for r in hist[:3]:
        flip(r, FRAG + (r['end'] - r['off'] - FRAG) // 2, 'live fragment')
        touched.add(r['block'])
else:
    used = set()
    def take(rs):
        # Never two damaged records in a row: each must be skippable.
        for r in rs:
            i = recs.index(r)
            if not used & {i - 1, i, i + 1} and r['block'] not in touched:
                used.add(i)
                touched.add(r['block'])
                return r
        raise SystemExit('not enough records to damage')
    for k in range(3):
        r = take(hist)
        flip(r, FRAG + 1000 + k * 7919, 'live fragment')
    r = take(hist)
    flip(r, HDR + 32 + 32 + n * 16 + 5, 'live cross-checksum')
    for k in range(2):
        r = take(lcs)
        flip(r, HDR + 32 + 3, 'live lc nonce')
    r = take(hist)
    flip(r, 17, 'record header (sequence number)')
    t = recs[-1]
    os.truncate(t['path'], t['end'] - 7)
    touched.add(t['block'])
    print('down: torn last record, block %d, %s+%d, 7 bytes cut' % (
        t['block'], os.path.basename(t['path']), t['off']))
print(' '.join(str(b) for b in sorted(touched)))
PY

py="
import random
BS = 65536
NB = $NB

def pattern(tag):
    return random.Random(tag).randbytes(BS)

def check(rnd, what):
    got = h.pread(NB * BS, 0)
    for b in range(NB):
        if got[b * BS:(b + 1) * BS] != pattern('%s-%d' % (rnd, b)):
            raise AssertionError('%s: block %d is not the value of write '
                                 'round %s' % (what, b, rnd))
    print('%s: %d blocks match byte for byte' % (what, NB))

def write(rnd):
    for b in range(NB):
        h.pwrite(pattern('%s-%d' % (rnd, b)), b * BS)
    h.flush()
"
DAMAGE_RE='checksum mismatch, record skipped|torn record|unreadable record|is damaged'

# damage_down I: stops server I, damages its log, restarts it and requires
# its log to name the damage.
damage_down()
{
	local i=$1 logf=$TESTDIR/log/server-$1.log before out
	server_kill "$i" TERM
	out=$TESTDIR/log/corrupt-$i.log
	python3 "$TESTDIR/corrupt.py" "$TESTDIR/data/server-$i" "$CLUSTER_N" \
	    down >"$out" 2>&1 || { cat "$out" >&2; fail "corrupt.py failed"; }
	sed '$d; s/^/  server-'"$i"': /' "$out" >&2
	DAMAGED[$i]=$(tail -n 1 "$out")
	before=$(grep -cE "$DAMAGE_RE" "$logf" || true)
	server_start "$i"
	found=$(($(grep -cE "$DAMAGE_RE" "$logf" || true) - before))
	grep -E "$DAMAGE_RE" "$logf" | tail -n "$found" | sed 's/^/  /' >&2
	# Seven damaged records: the six in the middle each skipped, the torn
	# tail cut off.
	[ "$found" -ge 7 ] ||
	    fail "server-$i reported $found damaged records, expected 7"
	log "server-$i reported $found damaged records on restart"
}

run_t()
{
	local t=$1 i
	shift
	declare -gA DAMAGED=()
	cluster_start "$t"
	nbdkit_start nbd
	nbdsh_run nbd "$py
write('one')
write('two')
check('two', 'before the damage')
"
	for i in "$@"; do
		log "t=$t: damaging server-$i while it is down"
		damage_down "$i"
	done
	wait_connected "$@"
	nbdsh_run nbd "$py
check('two', 't=$t, damaged servers $*: running nbdkit')
" || fail "t=$t: wrong data after the damage"
	nbdkit_start fresh
	nbdsh_run fresh "$py
check('two', 't=$t, damaged servers $*: fresh nbdkit')
" || fail "t=$t: wrong data through a fresh nbdkit"
	if [ "$t" = 1 ]; then
		i=$1
		log "t=1: damaging live fragments under running server-$i"
		# shellcheck disable=SC2086 # a list of block numbers
		python3 "$TESTDIR/corrupt.py" "$TESTDIR/data/server-$i" \
		    "$CLUSTER_N" live ${DAMAGED[$i]} >"$TESTDIR/log/live.log" ||
		    fail "corrupt.py live failed"
		sed '$d; s/^/  /' "$TESTDIR/log/live.log" >&2
		nbdsh_run fresh "$py
check('two', 't=1, fragments damaged under a running server')
" || fail "t=1: wrong data with fragments damaged under a running server"
		# A server reads a fragment only when asked for it, and the
		# 1-round read stops asking server-$i for a while once it has
		# failed to give one (here: the blocks damaged while it was
		# down).  A new nbdkit asks it again, so it must read them.
		nbdkit_start live
		nbdsh_run live "$py
check('two', 't=1, fragments damaged under a running server, new nbdkit')
" || fail "t=1: wrong data with fragments damaged under a running server"
		nbdkit_stop live
		grep -q 'is damaged; not serving it' \
		    "$TESTDIR/log/server-$i.log" ||
		    fail "server-$i did not notice the damaged fragments"
		grep 'is damaged; not serving it' "$TESTDIR/log/server-$i.log" |
		    sed 's/^/  /' >&2
	fi
	nbdsh_run fresh "$py
write('three')
check('three', 't=$t: new writes after the damage')
" || fail "t=$t: new writes failed"
	nbdsh_run nbd "$py
check('three', 't=$t: new writes, the other nbdkit')
" || fail "t=$t: new writes not seen by the other nbdkit"
}

run_t 1 1
log "stopping the t=1 cluster"
nbdkit_stop fresh
nbdkit_stop nbd
for ((i = 0; i < CLUSTER_N; i++)); do
	server_kill "$i" TERM
done
rm -rf "$TESTDIR/cluster" "$TESTDIR/data"
run_t 2 1 4
log "ok"
