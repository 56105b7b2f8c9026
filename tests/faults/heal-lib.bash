# shellcheck shell=bash
# Sourced by tests/faults/heal-*.sh: servers that lost writes or their
# whole disk rebuild themselves from their peers (server/rebuild/rebuild.h).
# (A scenario may have sourced it already, through byz-lib.bash.)
if ! declare -F cluster_start >/dev/null; then
	# shellcheck source=tests/integration/lib.sh
	. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
fi

HEAL_SEED=${HEAL_SEED:-$RANDOM}
HEAL_WAIT=${HEAL_WAIT:-120}
log "heal seed $HEAL_SEED (HEAL_SEED=$HEAL_SEED to repeat)"

# The bytes of block B under TAG, the same in every nbdsh.
heal_py="
import random
BS = 65536
def data(tag, b):
    return random.Random('$HEAL_SEED-%s-%d' % (tag, b)).randbytes(BS)
"

# heal_write NBD TAG FIRST COUNT: writes COUNT blocks from FIRST.
heal_write()
{
	local name=$1 tag=$2 first=$3 count=$4
	nbdsh_run "$name" "$heal_py
for b in range($first, $first + $count):
    h.pwrite(data('$tag', b), b * BS)
h.flush()
" || fail "writing $count blocks of $tag failed"
	log "wrote blocks $first..$((first + count - 1)) ($tag)"
}

# heal_check NBD TAG FIRST COUNT WHAT: those blocks read back exactly.
heal_check()
{
	local name=$1 tag=$2 first=$3 count=$4 what=$5
	nbdsh_run "$name" "$heal_py
bad = [b for b in range($first, $first + $count)
       if h.pread(BS, b * BS) != data('$tag', b)]
assert not bad, '%d blocks differ, first %d' % (len(bad), bad[0])
" || fail "$what: blocks $first..$((first + count - 1)) ($tag) differ"
	log "$what: blocks $first..$((first + count - 1)) ($tag) read back exactly"
}

# heal_check_model NBD WHAT SPEC...: every block of each SPEC,
# TAG:FIRST:COUNT, reads back as TAG's data.  The reads go 32 at a time,
# so that a check where every read needs a second round stays short.
# With HEAL_ALLOW_EIO=1 a read may fail (too few servers can answer) but
# never return other bytes; HEAL_EIO is then how many failed.  Reads
# still pending after HEAL_CHECK_WAIT seconds (60) fail the check: a read
# that cannot decide restarts for minutes.
HEAL_CHECK_WAIT=${HEAL_CHECK_WAIT:-60}
heal_check_model()
{
	local name=$1 what=$2 out
	shift 2
	out=$(nbdsh_run "$name" "$heal_py
import nbd, sys, time
spec = [(t, int(f), int(c)) for t, f, c in
        (s.split(':') for s in '$*'.split())]
deadline = time.time() + $HEAL_CHECK_WAIT
def wait_below(k):
    while h.aio_in_flight() > k:
        if time.time() > deadline:
            print('%d reads still pending after ${HEAL_CHECK_WAIT}s'
                  % h.aio_in_flight(), file=sys.stderr)
            sys.stderr.flush()
            import os
            os._exit(1)
        h.poll(1000)
pend = []
for tag, first, count in spec:
    for b in range(first, first + count):
        buf = nbd.Buffer(BS)
        pend.append((tag, b, buf, h.aio_pread(buf, b * BS)))
        wait_below(31)
wait_below(0)
bad, eio = [], []
for tag, b, buf, c in pend:
    try:
        h.aio_command_completed(c)
    except nbd.Error as e:
        eio.append(b)
        continue
    if buf.to_bytearray() != data(tag, b):
        bad.append(b)
assert not bad, '%d blocks read back other bytes, first %d' % (len(bad), bad[0])
assert ${HEAL_ALLOW_EIO:-0} or not eio, '%d reads failed, first of block %d' % (len(eio), eio[0])
print('reads %d failed %d' % (len(pend), len(eio)))
") || fail "$what: blocks of $* differ"
	[[ $out =~ reads\ ([0-9]+)\ failed\ ([0-9]+) ]] ||
	    fail "$what: nbdsh said $out"
	HEAL_EIO=${BASH_REMATCH[2]}
	if [ "$HEAL_EIO" -eq 0 ]; then
		log "$what: ${BASH_REMATCH[1]} blocks read back exactly ($*)"
	else
		log "$what: ${BASH_REMATCH[1]} blocks read, $HEAL_EIO reads" \
		    "failed, every other one exact ($*)"
	fi
}

# heal_held I: the blocks server I holds, from bftblk status (empty when
# it does not answer).
heal_held()
{
	"$ADMIN" status --dir "$CLUSTER_DIR" --json --timeout 3 2>/dev/null |
	    python3 -c "import json, sys
for s in json.load(sys.stdin)['servers']:
    if s['index'] == $1 and s.get('reachable'):
        print(s['blocks_held'])" || true
}

# heal_mark I: remembers where server I's log ends, for heal_wait_done.
declare -A HEAL_OFF=()
heal_mark()
{
	HEAL_OFF[$1]=$(stat -c %s "$TESTDIR/log/server-$1.log" 2>/dev/null || echo 0)
}

# heal_wait_done I: waits (HEAL_WAIT s at most) until server I, past its
# mark, logs that a rebuild pass finished, and sets HEAL_REBUILT to the
# number of blocks it found newer at its peers (0 when none were).
heal_wait_done()
{
	local i=$1 logf deadline=$((SECONDS + HEAL_WAIT)) line
	logf=$TESTDIR/log/server-$i.log
	until line=$(tail -c "+$((${HEAL_OFF[$i]:-0} + 1))" "$logf" |
	    grep -a -m1 -E 'rebuild: (done, [0-9]+/[0-9]+ blocks|caught up|in step)'); do
		[ "$SECONDS" -lt "$deadline" ] ||
		    { _show_log_tail "$logf"; fail "server-$i did not finish a rebuild within ${HEAL_WAIT}s"; }
		sleep 0.2
	done
	HEAL_REBUILT=0
	if [[ $line =~ done,\ ([0-9]+)/([0-9]+)\ blocks ]]; then
		HEAL_REBUILT=${BASH_REMATCH[2]}
	fi
	log "server-$i: $(sed 's/^[^ ]* [^ ]* //' <<<"$line")"
}

# heal_wipe I: server I loses its disk: SIGKILL (when it runs), data
# directory emptied, restarted on the empty directory.
heal_wipe()
{
	local i=$1
	[ -z "${SERVER_PID[$i]:-}" ] || server_kill "$i" KILL
	rm -rf "$TESTDIR/data/server-$i"
	mkdir -p "$TESTDIR/data/server-$i"
	heal_mark "$i"
	server_start "$i"
	log "injected: server-$i restarted on an empty data directory"
}

# heal_rot I: bit rot in running server I's first log segment: 12 bytes
# flipped, spread evenly over it.
heal_rot()
{
	local i=$1 seg
	seg=$(ls "$TESTDIR"/data/server-"$i"/seg-*.log | head -1)
	PATH=/usr/bin:$PATH python3 - "$seg" <<'PY' || fail "cannot flip bytes"
import os, sys
path = sys.argv[1]
size = os.path.getsize(path)
with open(path, 'r+b') as f:
    for k in range(12):
        off = size * (k + 1) // 14
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 0x5a]))
PY
	log "injected: 12 bytes flipped in $(basename "$seg") of running server $i"
}

# heal_since I: server I's log past its mark (heal_mark).
heal_since()
{
	tail -c "+$((${HEAL_OFF[$1]:-0} + 1))" "$TESTDIR/log/server-$1.log"
}

# heal_wait_caught_up I: waits (HEAL_WAIT s at most) until server I, on
# a new data directory, logs past its mark that it has caught up with
# its peers, which it does only after a pass in which every block it
# found newer was read, checked and adopted.  ("done, X/Y blocks" alone
# is not enough: it counts blocks tried, failed ones included.)  Sets
# HEAL_FIRST_NEWER and HEAL_NEWER to the blocks its first and last pass
# found newer at its peers and HEAL_RETRIES to the passes that left
# blocks to try again or heard from too few peers; checks that the
# marker file is gone.
heal_wait_caught_up()
{
	local i=$1 deadline=$((SECONDS + HEAL_WAIT)) since line
	until heal_since "$i" | grep -aq 'rebuild: the new data directory has caught up'; do
		[ "$SECONDS" -lt "$deadline" ] || {
			_show_log_tail "$TESTDIR/log/server-$i.log"
			fail "server-$i did not catch up within ${HEAL_WAIT}s"; }
		[ -n "${SERVER_PID[$i]:-}" ] && _alive "${SERVER_PID[$i]}" ||
		    fail "server-$i is not running"
		sleep 0.2
	done
	since=$(heal_since "$i")
	HEAL_RETRIES=$(grep -acE 'could not be rebuilt yet|peers needed answered the comparison|cannot read the volume table' <<<"$since" || true)
	HEAL_FIRST_NEWER=0
	HEAL_NEWER=0
	line=$(grep -a 'rebuild: [0-9]* blocks are newer' <<<"$since" | head -n 1)
	if [[ $line =~ rebuild:\ ([0-9]+)\ blocks\ are\ newer ]]; then
		HEAL_FIRST_NEWER=${BASH_REMATCH[1]}
	fi
	line=$(grep -a 'rebuild: [0-9]* blocks are newer' <<<"$since" | tail -n 1)
	if [[ $line =~ rebuild:\ ([0-9]+)\ blocks\ are\ newer ]]; then
		HEAL_NEWER=${BASH_REMATCH[1]}
	fi
	[ ! -e "$TESTDIR/data/server-$i/rebuild-pending" ] ||
	    fail "server-$i caught up but kept its rebuild-pending marker"
	log "server-$i caught up: passes found $HEAL_FIRST_NEWER (first) and" \
	    "$HEAL_NEWER (last) blocks newer, $HEAL_RETRIES left blocks to" \
	    "retry; marker gone;" \
	    "$(grep -a 'rebuild: done,' <<<"$since" | tail -n 1 |
	    sed 's/^[^ ]* [^ ]* //')"
}

# heal_same_view I J VID GEN COUNT WHAT: servers I and J answer alike
# (VCOLLECT, testclient view-lc) for each of blocks 0..COUNT-1 of volume
# VID's view at generation GEN: a reader's quorum would hide one wrong
# server.  WHAT names the view in the failure.
heal_same_view()
{
	local i
	for i in "$1" "$2"; do
		"$BUILD/tests/bftblk-testclient" view-lc \
		    --config "$CLUSTER_DIR/bftblk.conf" \
		    --keys "$CLUSTER_DIR/client.key" --servers "$i" \
		    --block $(($3 << 40)) --count "$5" --view "$4" |
		    sed 's/^server [0-9]* //' >"$TESTDIR/views-$i.txt" ||
		    fail "view-lc on server $i"
	done
	cmp -s "$TESTDIR/views-$1.txt" "$TESTDIR/views-$2.txt" || {
		diff "$TESTDIR/views-$1.txt" "$TESTDIR/views-$2.txt" |
		    head -8 >&2
		fail "servers $1 and $2 hold different views of $6"
	}
}

# heal_image OUT TAG PLAN [BASE]: an image of NB blocks written to OUT:
# BASE (zeros without it) with the blocks PLAN lists changed.  PLAN is
# a Python expression over nb, a list of (block, how): how "w" writes
# the block with data of TAG, block and HEAL_SEED alone; "z" zeroes it.
heal_image()
{
	PATH=/usr/bin:$PATH python3 - "$HEAL_SEED" "$NB" "$@" <<'PY'
import random, sys
seed, nb, out, tag, plan = sys.argv[1], int(sys.argv[2]), *sys.argv[3:6]
base = sys.argv[6] if len(sys.argv) > 6 and sys.argv[6] else None
BS = 65536
img = bytearray(open(base, "rb").read()) if base else bytearray(nb * BS)
for b, how in eval("(%s)" % plan, {"nb": nb}):
    if how == "z":
        img[b * BS:(b + 1) * BS] = bytes(BS)
    else:
        img[b * BS:(b + 1) * BS] = random.Random(
            "%s-%s-%d" % (seed, tag, b)).randbytes(BS)
open(out, "wb").write(img)
PY
}

# heal_check_exports WHAT REF:IMAGE...: each REF (V or V@S), exported
# with `bftblk export`, has the same sha256 as $TESTDIR/IMAGE.img.
heal_check_exports()
{
	local what=$1 ref
	shift
	for ref in "$@"; do
		"$ADMIN" export --dir "$CLUSTER_DIR" "${ref%%:*}" \
		    "$TESTDIR/out.img" 2>>"$TESTDIR/log/export.log" ||
		    fail "$what: export ${ref%%:*} failed"
		[ "$(sha256sum <"$TESTDIR/out.img")" = \
		    "$(sha256sum <"$TESTDIR/${ref#*:}.img")" ] ||
		    fail "$what: ${ref%%:*} does not read back as it was"
	done
}
