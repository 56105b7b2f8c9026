#!/bin/bash
# The volume table under one Byzantine server of four (t=1), in every
# mode in turn.  The table is registers of a reserved volume, read and
# written through the protocol, so a liar must not make a client see a
# volume nobody created, a wrong size, a lost volume or another volume's
# bytes.
#
# Each phase, with server (k mod 4) in the phase's mode: create a
# volume v<k> (its own size), grow it, write its own bytes through
# nbdkit's export of that name, delete v<k-2>, and then check, against
# a model kept here: `bftblk volume list --json` (names, sizes, ids
# never given twice; a deleted volume may only still show as deleting,
# when the liar withheld its DROP), `nbdinfo --list` through nbdkit,
# and the bytes of every live volume read back from its export.  The
# liar's exit line must show its mode changed or withheld replies.  At
# the end, all honest, one more create finishes every pending delete and
# the table must equal the model exactly.
. "$(dirname "${BASH_SOURCE[0]}")/byz-lib.bash"

MODES=(corrupt-fragment bad-checksum stale forge-candidate bad-mac
    equivocate refuse mute slow trim-lie)

# Exports by volume name, the plugin's own mode.
NBDKIT_PIN=
cluster_start 1
byz_nbdkit_start a
MiB=$((1024 * 1024))

vol() { "$ADMIN" volume "$@" --dir "$CLUSTER_DIR" --timeout 2; }
uri() { echo "nbd+unix:///$1?socket=$TESTDIR/a.sock"; }
declare -A SIZE=()		# live volumes of the model: name -> bytes
declare -A GONE=()		# deleted ones
declare -A IDS=()		# every id seen: name -> id

# write_own NAME: NAME's own bytes at its start and its end.
write_own()
{
	PATH=/usr/bin:$PATH nbdsh -u "$(uri "$1")" -c "
import random
d = random.Random('$BYZ_SEED-$1').randbytes(3 * 65536 + 77)
h.pwrite(d, 0)
h.pwrite(d, h.get_size() - len(d))
h.flush()" || fail "writing volume $1"
}

check_own()
{
	PATH=/usr/bin:$PATH nbdsh -u "$(uri "$1")" -c "
import random
d = random.Random('$BYZ_SEED-$1').randbytes(3 * 65536 + 77)
assert h.get_size() == ${SIZE[$1]}, h.get_size()
assert h.pread(len(d), 0) == d, 'start'
assert h.pread(len(d), h.get_size() - len(d)) == d, 'end'" ||
	    fail "volume $1 does not read back its own bytes ($2)"
}

# check_table WHAT: the table against the model.
check_table()
{
	local live gone ids
	live=$(for n in "${!SIZE[@]}"; do echo "$n:${SIZE[$n]}"; done |
	    sort | paste -sd,)
	gone=$(printf '%s\n' "${!GONE[@]}" | sort | paste -sd,)
	vol list --json >"$TESTDIR/list.json" || fail "volume list ($1)"
	ids=$(python3 -c "
import json, sys
live = dict(x.split(':') for x in '$live'.split(',') if x)
gone = set(x for x in '$gone'.split(',') if x)
v = json.load(open(sys.argv[1]))['volumes']
got = {x['name']: x for x in v}
assert len(got) == len(v), 'a name twice: %s' % v
assert len({x['id'] for x in v}) == len(v), 'an id twice: %s' % v
for n, s in live.items():
    assert n in got, 'volume %s is missing' % n
    assert got[n]['size'] == int(s), '%s: size %d' % (n, got[n]['size'])
    assert got[n]['state'] == 'live', got[n]
for n, x in got.items():
    assert n in live or (n in gone and x['state'] == 'deleting'), \
        'volume %s should not be there: %s' % (n, x)
print(' '.join('%s=%d' % (x['name'], x['id']) for x in v))
" "$TESTDIR/list.json") || fail "the volume table is wrong ($1)"
	for kv in $ids; do
		n=${kv%=*}
		[ -z "${IDS[$n]:-}" ] || [ "${IDS[$n]}" = "${kv#*=}" ] ||
		    fail "volume $n changed id: ${IDS[$n]} -> ${kv#*=} ($1)"
		IDS[$n]=${kv#*=}
	done
	PATH=/usr/bin:$PATH nbdinfo --list --json "$(uri '')" \
	    >"$TESTDIR/exports.json" || fail "nbdinfo --list ($1)"
	python3 -c "
import json, sys
e = {x['export-name'] for x in json.load(open(sys.argv[1]))['exports']}
want = {x.split(':')[0] for x in '$live'.split(',') if x} | {''}
assert e == want, (sorted(e), sorted(want))
" "$TESTDIR/exports.json" || fail "nbdinfo --list is wrong ($1)"
	for n in "${!SIZE[@]}"; do
		check_own "$n" "$1"
	done
}

k=0
prev=
for mode in "${MODES[@]}"; do
	victim=$((k % CLUSTER_N))
	if [ -n "$prev" ] && [ "$prev" != "$victim" ]; then
		byz_switch "$prev" honest
	fi
	byz_switch "$victim" "$mode"
	name=v$k
	vol create --name "$name" --size $(((k + 1) * MiB)) >/dev/null ||
	    fail "create $name beside $mode"
	vol resize --name "$name" --size $(((k + 2) * MiB)) >/dev/null ||
	    fail "resize $name beside $mode"
	SIZE[$name]=$(((k + 2) * MiB))
	write_own "$name"
	if [ "$k" -ge 2 ]; then
		vol delete --name "v$((k - 2))" >"$TESTDIR/del.log" ||
		    fail "delete v$((k - 2)) beside $mode"
		unset "SIZE[v$((k - 2))]"
		GONE[v$((k - 2))]=1
		log "delete v$((k - 2)) beside $mode: $(cat "$TESTDIR/del.log")"
	fi
	check_table "$mode"
	log "phase $mode: the table and the volumes' bytes are right"
	prev=$victim
	k=$((k + 1))
done
byz_switch "$prev" honest

vol create --name final --size 1M >/dev/null || fail "the last create"
SIZE[final]=$MiB
write_own final
GONE=()
check_table "all honest"
log "ok: $(tr -d '\n' <"$TESTDIR/list.json" | head -c 400)"
