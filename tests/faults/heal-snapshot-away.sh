#!/bin/bash
# A server that was down while a snapshot was taken holds it once it is
# back (t=1).
#
# 1. Volume v (4 MiB) is imported as image A; server 3 is stopped.
# 2. Snapshot s1 is taken without it (n-t servers keep the boundary),
#    and image B imported over v: every block B changes moves past s1's
#    boundary at servers 0-2.
# 3. Server 3 starts again on its data, and a writer changes the head
#    through NBD (C) as soon as it is up.  Its rebuild reads the volume
#    table before its catch-up moves any block past s1, and takes s1's
#    boundary: what it holds of A becomes its view of s1 as the
#    catch-up brings B.  Until it has read the table, it answers a
#    client's COMPLETE with EAGAIN, so that C, of a generation above
#    s1's, cannot reach it first and make it refuse the boundary.
# 4. Its answers for every block of s1 (VCOLLECT, testclient view-lc)
#    are then those of server 2; with server 0 stopped, v@s1 and v
#    read back exactly A and B+C, every snapshot read needing server 3.
# Without the boundary taken on return, server 3 answers "do not know"
# for every changed block of s1, and step 4 fails.
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

NBDKIT_PIN=			# volumes by export name
NBDKIT_SHARED=			# one writer per volume: the lease holder
NB=64

require_python_nbd /usr/bin/python3
cluster_start 1

# image OUT TAG [BASE]: A is every block, B every other one, C the
# first 16 (heal_image).
image()
{
	local plan
	case $2 in
	A) plan='[(b, "w") for b in range(nb)]' ;;
	B) plan='[(b, "w") for b in range(0, nb, 2)]' ;;
	C) plan='[(b, "w") for b in range(0, 16)]' ;;
	esac
	heal_image "$1" "$2" "$plan" "${3:-}"
}

# check WHAT: every snapshot and the head read back as their images.
check()
{
	heal_check_exports "$1" v@s1:a v:bc
	log "$1: v@s1 and v read back exactly"
}

log "step 1: v imported as A; server 3 stopped"
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name v --size 4M \
    >/dev/null || fail "creating v"
image "$TESTDIR/a.img" A
image "$TESTDIR/b.img" B "$TESTDIR/a.img"
image "$TESTDIR/bc.img" C "$TESTDIR/b.img"
"$ADMIN" import --dir "$CLUSTER_DIR" "$TESTDIR/a.img" v \
    2>>"$TESTDIR/log/import.log" || fail "import A"
server_kill 3

log "step 2: snapshot s1 and image B without server 3"
"$ADMIN" snap create --dir "$CLUSTER_DIR" --volume v --name s1 \
    >/dev/null || fail "snap create v@s1"
"$ADMIN" import --dir "$CLUSTER_DIR" "$TESTDIR/b.img" v \
    2>>"$TESTDIR/log/import.log" || fail "import B"

log "step 3: server 3 back on its data; C written at once"
heal_mark 3
server_start 3
nbdkit_start nbd
V_URI="nbd+unix:///v?socket=$TESTDIR/nbd.sock"
PATH=/usr/bin:$PATH nbdsh -u "$V_URI" -c "
f = open('$TESTDIR/bc.img', 'rb').read()
for b in range(16):
    h.pwrite(f[b * 65536:(b + 1) * 65536], b * 65536)
h.flush()
" || fail "writing C"
heal_wait_done 3
gen=$("$ADMIN" snap info --dir "$CLUSTER_DIR" --volume v --name s1 |
    sed -n 's/^boundary generation: //p')
vid=$("$ADMIN" snap info --dir "$CLUSTER_DIR" --volume v --name s1 |
    sed -n 's/^volume id: //p')
[ -n "$gen" ] && [ -n "$vid" ] || fail "snap info v@s1"
heal_since 3 | grep -aq "keeps the view at generation $gen" || {
	heal_since 3 >&2
	fail "server-3 did not take s1's boundary on its return"
}
if heal_since 3 | grep -aq "views are not held here"; then
	heal_since 3 >&2
	fail "server-3 refused s1's boundary"
fi

log "step 4: server 3's view of s1 against server 2's; server 0 stopped"
heal_same_view 3 2 "$vid" "$gen" "$NB" v@s1
log "servers 3 and 2 hold the same view of v@s1"
server_kill 0
check "servers 1, 2 and 3 (back after s1)"
log "ok"
