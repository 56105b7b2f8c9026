# shellcheck shell=bash
# Sourced by tests/faults/heal-*.sh: servers that lost writes or their
# whole disk rebuild themselves from their peers (server/rebuild.h).
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"

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

# heal_wipe I: server I loses its disk: SIGKILL, data directory emptied,
# restarted on the empty directory.
heal_wipe()
{
	local i=$1
	server_kill "$i" KILL
	rm -rf "$TESTDIR/data/server-$i"
	mkdir -p "$TESTDIR/data/server-$i"
	heal_mark "$i"
	server_start "$i"
	log "injected: server-$i restarted on an empty data directory"
}
