#!/bin/bash
# A server that lost its disk gets its snapshots back (t=1).
#
# 1. Volume v (4 MiB) is imported as image A (some blocks zeros),
#    snapshot s1; then B (blocks changed, others zeroed, some written
#    for the first time), s2; then C, the head.
# 2. Server 0 is wiped and rebuilds slowly (--rebuild-rate 1) while a
#    writer changes the head through NBD (D), snapshot s3 is taken in
#    the middle of the rebuild, and more writes follow (E).  Server 0
#    must learn s1 and s2 from the volume table and rebuild each
#    block's views before its head; a client's write must not give a
#    block that server 0 has not rebuilt yet its first value (which
#    would freeze "never written" as the block's view at s1 and s2).
#    Server 0's own answers for every view of every block (VCOLLECT,
#    testclient view-lc) are then those of server 2, which never lost
#    anything: a reader's quorum would hide a wrong one.
# 3. With server 1 stopped, reads have only servers 0, 2 and 3, so every
#    snapshot read needs server 0's view: v@s1, v@s2, v@s3 and v read
#    back exactly A, B, C+D and C+D+E.
# 4. Server 1 back, server 3 wiped in turn and rebuilt (from views that
#    server 0 rebuilt among others); with server 2 stopped, the same.
# Without the views' rebuild, step 3 fails: server 0 answers "do not
# know" for every view of a block changed since the snapshot, and
# reads cannot hear from the n-t servers they need.
# shellcheck source=tests/faults/heal-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/heal-lib.bash"

NBDKIT_PIN=			# volumes by export name
NBDKIT_SHARED=			# one writer per volume: the lease holder
NB=64

require_python_nbd /usr/bin/python3
cluster_start 1

# image OUT TAG [BASE]: the image TAG of v; with BASE, BASE with TAG's
# blocks changed (heal_image).
image()
{
	local plan
	case $2 in
	A) plan='[(b, "w") for b in range(nb) if b % 4 != 3]' ;;
	B) plan='[(b, "w") for b in range(0, nb, 2)] +
	    [(b, "z") for b in range(1, nb, 8)]' ;;
	C) plan='[(b, "w") for b in range(0, nb, 3)]' ;;
	D) plan='[(b, "w") for b in range(40, 56)]' ;;
	E) plan='[(b, "w") for b in range(48, 64)]' ;;
	esac
	heal_image "$1" "$2" "$plan" "${3:-}"
}

# check WHAT: every snapshot and the head read back as their images.
check()
{
	heal_check_exports "$1" v@s1:a v@s2:b v@s3:cd v:cde
	log "$1: v@s1, v@s2, v@s3 and v read back exactly"
}

log "step 1: v with snapshots s1 (A) and s2 (B), head C"
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name v --size 4M \
    >/dev/null || fail "creating v"
image "$TESTDIR/a.img" A
image "$TESTDIR/b.img" B "$TESTDIR/a.img"
image "$TESTDIR/c.img" C "$TESTDIR/b.img"
image "$TESTDIR/cd.img" D "$TESTDIR/c.img"
image "$TESTDIR/cde.img" E "$TESTDIR/cd.img"
for s in a:s1 b:s2 c:; do
	"$ADMIN" import --dir "$CLUSTER_DIR" "$TESTDIR/${s%%:*}.img" v \
	    2>>"$TESTDIR/log/import.log" || fail "import ${s%%:*}"
	[ -z "${s#*:}" ] || "$ADMIN" snap create --dir "$CLUSTER_DIR" \
	    --volume v --name "${s#*:}" >/dev/null ||
	    fail "snap create v@${s#*:}"
done
nbdkit_start nbd
V_URI="nbd+unix:///v?socket=$TESTDIR/nbd.sock"

# write TAG: TAG's blocks written to v's head through NBD.
write()
{
	PATH=/usr/bin:$PATH nbdsh -u "$V_URI" -c "
f = open('$TESTDIR/$2.img', 'rb').read()
for b in $3:
    h.pwrite(f[b * 65536:(b + 1) * 65536], b * 65536)
h.flush()
" || fail "writing $1"
	log "wrote $1 to v through NBD"
}

log "step 2: server 0 wiped; writes and a snapshot while it rebuilds"
SERVER_ARGS_0="--rebuild-rate 1" heal_wipe 0
# A write that reached it before it learned the boundaries would make
# it refuse them (docs/snapshots.md, "A wiped server"): the writes here
# come after, while it rebuilds.
deadline=$((SECONDS + 30))
until heal_since 0 | grep -aq "keeping 2 snapshots' views"; do
	[ "$SECONDS" -lt "$deadline" ] ||
	    { heal_since 0 >&2; fail "server-0 did not learn s1 and s2"; }
	sleep 0.1
done
write D cd "range(40, 56)"
"$ADMIN" snap create --dir "$CLUSTER_DIR" --volume v --name s3 \
    >/dev/null || fail "snap create v@s3"
write E cde "range(48, 64)"
heal_wait_caught_up 0
if heal_since 0 | grep -aq "that view is not rebuilt here"; then
	heal_since 0 >&2
	fail "server-0 gave up a view"
fi

# same_views I J: servers I and J answer alike for each view of v.
same_views()
{
	local s gen vid
	for s in s1 s2 s3; do
		"$ADMIN" snap info --dir "$CLUSTER_DIR" --volume v --name "$s" \
		    >"$TESTDIR/info.txt" || fail "snap info v@$s"
		gen=$(sed -n 's/^boundary generation: //p' "$TESTDIR/info.txt")
		vid=$(sed -n 's/^volume id: //p' "$TESTDIR/info.txt")
		heal_same_view "$1" "$2" "$vid" "$gen" "$NB" "v@$s"
	done
	log "servers $1 and $2 hold the same views of v@s1, v@s2, v@s3"
}
same_views 0 2

log "step 3: server 1 stopped"
server_kill 1
check "servers 0 (rebuilt), 2 and 3"

log "step 4: server 3 wiped and rebuilt; server 2 stopped"
server_start 1
heal_wipe 3
heal_wait_caught_up 3
server_kill 2
check "servers 0, 1 and 3 (both rebuilt)"
log "ok"
