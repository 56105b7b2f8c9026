#!/bin/bash
# A rolling upgrade from the previous release to this tree's, following
# README's procedure (Operations, "Rolling upgrades") command for
# command, under load (t=1).
#
# The previous release is the newest one NEWS lists with a commit; it is
# built from that commit (git archive, so the repository gains no
# worktree) in the test's directory, as tags may not have travelled with
# the clone.  BFTBLK_OLD_BUILD=DIR uses binaries built there instead.
#
# 1. A cluster made and run by the old release: keygen, four servers,
#    two nbdkits with the old plugin; a sequential fio pass writes and
#    verifies 16 MiB.  An nbdkit with the new plugin writes and verifies
#    on the old servers too.
# 2. Under load, two writers' histories recorded on hot blocks, and fio
#    writing and verifying as it goes: the servers are upgraded one by
#    one, each waited for until bftblk status says OK; status says
#    mixed releases meanwhile.  Then server 3 goes back to the old
#    release (before finalize, that works) and forward again.  No I/O
#    error, every verify clean, the history linearizable.
# 3. The old admin tool still reads the status of the new servers.  The
#    plugins are restarted on the new release, which reads what the old
#    one wrote.
#    A clone (whose table entry the old release cannot read) is refused
#    before finalize, saying why; the old admin tool lists the volumes.
# 4. bftblk cluster finalize; status says finalized, and so does
#    libbftblk's bftblk__cluster_finalized (0 before, on 0.2.0 servers);
#    the clone is made now and reads as its parent.
# 5. Refusals after finalize, each with a sentence that says why: the
#    old server on its data directory, the old library (bftblk ping) and
#    the old plugin (a read through it fails) against the servers.
# 6. The data written in step 1 still verifies; a new pass writes and
#    verifies through the new plugin.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_fio_nbd

DURATION=${UPGRADE_DURATION:-45}
NEW_ADMIN=$ADMIN
NEW_SERVER=$SERVER
NEW_PLUGIN=$PLUGIN
export LIN_ARGS="--blocks 4 --first-block 1024 --clients-per-uri 2 --op-timeout 20"
hist=$TESTDIR/upgrade.jsonl

# The previous release: the first entry of NEWS with a commit.
read -r OLD_VER OLD_HASH < <(sed -n \
    's/^\([0-9][0-9.]*\), [0-9-]*, commit \([0-9a-f]\{40\}\)$/\1 \2/p' \
    "$SRCDIR/NEWS" | head -n 1)
[ -n "${OLD_HASH:-}" ] || fail "NEWS names no released commit"
NEW_VER=$(sed -n 's/^#define BFTBLK_VERSION_\(MAJOR\|MINOR\|PATCH\)\t*\([0-9]*\)/\2/p' \
    "$SRCDIR/lib/bftblk.h" | paste -sd.)
log "upgrading from $OLD_VER (commit $OLD_HASH) to $NEW_VER"

if [ -n "${BFTBLK_OLD_BUILD:-}" ]; then
	OLD=$BFTBLK_OLD_BUILD
else
	git -C "$SRCDIR" cat-file -e "$OLD_HASH^{commit}" 2>/dev/null ||
	    skip "commit $OLD_HASH is not in this clone (a shallow one?)"
	mkdir -p "$TESTDIR/old"
	git -C "$SRCDIR" archive "$OLD_HASH" | tar -x -C "$TESTDIR/old" ||
	    fail "cannot unpack $OLD_HASH"
	log "building $OLD_VER in $TESTDIR/old"
	make -C "$TESTDIR/old" -j"$(nproc)" BUILD=build build/bftblk \
	    build/bftblk-server build/nbdkit-bftblk-plugin.so \
	    >"$TESTDIR/log/old-build.log" 2>&1 ||
	    { _show_log_tail "$TESTDIR/log/old-build.log"; fail "cannot build $OLD_VER"; }
	OLD=$TESTDIR/old/build
fi
OLD_ADMIN=$OLD/bftblk
OLD_SERVER=$OLD/bftblk-server
OLD_PLUGIN=$OLD/nbdkit-bftblk-plugin.so
out=$("$OLD_SERVER" --version) || fail "no old server in $OLD"
[ "$out" = "bftblk-server $OLD_VER" ] || fail "the old server says: $out"

# status_run NAME ARGS...: the new admin tool's status, into
# $TESTDIR/log/NAME.out; RC is its exit status.
status_run()
{
	local name=$1
	shift
	RC=0
	"$NEW_ADMIN" status --dir "$CLUSTER_DIR" --timeout 2 "$@" \
	    >"$TESTDIR/log/$name.out" 2>&1 || RC=$?
}

# wait_ok NAME: until bftblk status says OK (every server answers, none
# rebuilding), at most 90 s: the procedure's wait between servers.
wait_ok()
{
	local name=$1 deadline=$((SECONDS + 90))
	until status_run "$name" && [ "$RC" -eq 0 ]; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			cat "$TESTDIR/log/$name.out" >&2
			fail "status not OK within 90s ($name)"
		fi
		sleep 1
	done
	sed "s/^/  $name: /" "$TESTDIR/log/$name.out" | head -n 3 >&2
}

# run_fio NAME FIO-ARGS...: fio through nbdkit $FIO_ON (default a); any
# error fails.
run_fio()
{
	local name=$1 f rc=0
	shift
	f=$TESTDIR/log/fio-$name.log
	log "fio $name: $*"
	fio --name="$name" --ioengine=nbd --uri="$(nbd_uri "${FIO_ON:-a}")" \
	    --iodepth=8 "$@" >"$f" 2>&1 || rc=$?
	fio_ok "$name" "$rc"
}

# fio_ok NAME RC: fio's exit status and report were clean.
fio_ok()
{
	local f=$TESTDIR/log/fio-$1.log
	if [ "$2" -ne 0 ] || grep -qE 'err= *[1-9]|verify failed|bad magic' \
	    "$f" || ! grep -qE 'err= *0' "$f"; then
		_show_log_tail "$f" 40
		fail "fio $1: exit status $2, or errors in $f"
	fi
	log "fio $1: exit 0, err=0, no verify errors"
}

# lib_finalized WANT: what libbftblk's bftblk__cluster_finalized says of
# clone entries (the test client's "finalized"), "finalized 0" or 1.
lib_finalized()
{
	local out
	out=$("$BUILD/tests/bftblk-testclient" finalized \
	    --config "$CLUSTER_DIR/bftblk.conf" \
	    --keys "$CLUSTER_DIR/client.key" 2>>"$TESTDIR/log/testclient.log") ||
	    true
	log "bftblk__cluster_finalized: $out"
	[ "$out" = "$1" ] || fail "bftblk__cluster_finalized: '$out', not '$1'"
}

# upgrade_server I BIN: README's steps for one server: stop it, start
# it on BIN with the same data directory, wait until status says OK.
upgrade_server()
{
	local i=$1 bin=$2
	server_kill "$i"
	SERVER_BIN=$bin server_start "$i"
	wait_ok "after-server-$i"
}

lin_build
# shellcheck disable=SC2034 # cluster_start reads it
CLUSTER_SIZE=128M
seq_old=(--offset=0 --size=16M --rw=write --bs=64k --verify=crc32c
    --do_verify=1 --verify_fatal=1)

log "step 1: a cluster of $OLD_VER"
ADMIN=$OLD_ADMIN SERVER_BIN=$OLD_SERVER cluster_start 1
PLUGIN=$OLD_PLUGIN nbdkit_start a
PLUGIN=$OLD_PLUGIN nbdkit_start b
run_fio seq-old "${seq_old[@]}"
# The other way round works too: the new plugin on the old servers.
PLUGIN=$NEW_PLUGIN nbdkit_start c
FIO_ON=c run_fio new-on-old --offset=96M --size=8M --rw=randrw \
    --rwmixread=30 --bsrange=4k-64k --verify=crc32c --do_verify=1 \
    --verify_fatal=1 --randrepeat=0
nbdkit_stop c
wait_ok before
grep -qx "releases: $OLD_VER on servers 0 1 2 3; not finalized" \
    "$TESTDIR/log/before.out" || fail "status does not see $OLD_VER"
lib_finalized "finalized 0"

log "step 2: servers upgraded one by one under load"
lin_record_start "$hist" "$DURATION" "$(nbd_uri a)" "$(nbd_uri b)"
bgfio=$TESTDIR/log/fio-during.log
fio --name=during --ioengine=nbd --uri="$(nbd_uri a)" --iodepth=8 \
    --offset=32M --size=16M --rw=write --bs=64k --time_based \
    --runtime="$DURATION" --verify=crc32c --verify_backlog=16 \
    --verify_fatal=1 >"$bgfio" 2>&1 </dev/null &
FIO_PID=$!
_track "$FIO_PID" fio-during
# A few seconds of each mixed cluster under load before the next step.
for ((i = 0; i < CLUSTER_N; i++)); do
	upgrade_server "$i" "$NEW_SERVER"
	sleep 4
	if [ "$i" -lt $((CLUSTER_N - 1)) ]; then
		grep -q "^releases: .*(mixed: an upgrade is under way); not finalized$" \
		    "$TESTDIR/log/after-server-$i.out" ||
		    fail "status does not say mixed after server $i"
	fi
done
grep -qx "releases: $NEW_VER on servers 0 1 2 3; not finalized" \
    "$TESTDIR/log/after-server-3.out" || fail "status after the servers"
log "before finalize, server 3 goes back to $OLD_VER and forward again"
upgrade_server 3 "$OLD_SERVER"
grep -q "^releases: .*$OLD_VER on servers 3 (mixed" \
    "$TESTDIR/log/after-server-3.out" || fail "status after the downgrade"
sleep 4
upgrade_server 3 "$NEW_SERVER"
lin_record_wait
deadline=$((SECONDS + DURATION + 60))
while _alive "$FIO_PID" && [ "$SECONDS" -lt "$deadline" ]; do
	sleep 1
done
_alive "$FIO_PID" && fail "fio during the upgrade did not end"
_reap "$FIO_PID"
_forget_pid "$FIO_PID"
fio_ok during "$_STATUS"
lin_final_read "$hist" "$(nbd_uri a)" "$(nbd_uri b)"
lin_check "$hist"
for k in write_errors read_errors garbage misplaced; do
	[ "${LIN_STAT[$k]}" = 0 ] ||
	    fail "$k=${LIN_STAT[$k]} during the upgrade"
done

log "step 3: the old admin tool reads the new servers; plugins upgraded"
"$OLD_ADMIN" status --dir "$CLUSTER_DIR" --timeout 2 \
    >"$TESTDIR/log/old-status.out" 2>&1 ||
    { cat "$TESTDIR/log/old-status.out" >&2; fail "old status failed"; }
nbdkit_stop a
PLUGIN=$NEW_PLUGIN nbdkit_start a
nbdkit_stop b
PLUGIN=$NEW_PLUGIN nbdkit_start b
run_fio seq-old-by-new "${seq_old[@]}" --verify_only=1
# The change through the gate: a clone's table entry, which the old
# release cannot read, is refused until the cluster is finalized, and
# the old admin tool still reads the table meanwhile.
python3 -c "import os, sys; open(sys.argv[1], 'wb').write(os.urandom(4 << 20))" \
    "$TESTDIR/gold.img"
"$NEW_ADMIN" volume create --dir "$CLUSTER_DIR" --name gold --size 4M \
    >/dev/null || fail "volume create gold"
"$NEW_ADMIN" import --dir "$CLUSTER_DIR" "$TESTDIR/gold.img" gold \
    2>/dev/null || fail "import into gold"
"$NEW_ADMIN" snap create --dir "$CLUSTER_DIR" --volume gold --name s \
    >/dev/null || fail "snap create gold@s"
"$NEW_ADMIN" volume clone --dir "$CLUSTER_DIR" --from gold@s --name vm1 \
    >"$TESTDIR/log/clone-early.out" 2>&1 && fail "a clone before finalize"
grep -q "clones need the cluster finalized" "$TESTDIR/log/clone-early.out" ||
    { cat "$TESTDIR/log/clone-early.out" >&2; fail "the clone's refusal"; }
"$OLD_ADMIN" volume list --dir "$CLUSTER_DIR" >"$TESTDIR/log/old-list.out" \
    2>&1 || { cat "$TESTDIR/log/old-list.out" >&2; fail "old volume list"; }
grep -q "^gold " "$TESTDIR/log/old-list.out" ||
    { cat "$TESTDIR/log/old-list.out" >&2; fail "old volume list: no gold"; }

log "step 4: finalize"
"$NEW_ADMIN" cluster finalize --dir "$CLUSTER_DIR" \
    >"$TESTDIR/log/finalize.out" 2>&1 ||
    { cat "$TESTDIR/log/finalize.out" >&2; fail "finalize failed"; }
wait_ok finalized
grep -qx "releases: $NEW_VER on servers 0 1 2 3; finalized at level 1" \
    "$TESTDIR/log/finalized.out" || fail "status does not say finalized"
lib_finalized "finalized 1"
"$NEW_ADMIN" volume clone --dir "$CLUSTER_DIR" --from gold@s --name vm1 \
    >/dev/null || fail "volume clone after finalize"
"$NEW_ADMIN" export --dir "$CLUSTER_DIR" vm1 "$TESTDIR/vm1.img" 2>/dev/null ||
    fail "export vm1"
cmp -s "$TESTDIR/vm1.img" "$TESTDIR/gold.img" ||
    fail "the clone does not read as its parent"

log "step 5: $OLD_VER refused, saying why"
server_kill 0
rc=0
timeout 20 "$OLD_SERVER" --config "$CLUSTER_DIR/bftblk.conf" \
    --key "$CLUSTER_DIR/server-0.key" --data "$TESTDIR/data/server-0" \
    >"$TESTDIR/log/old-server-refused.log" 2>&1 </dev/null || rc=$?
sed 's/^/  old server: /' "$TESTDIR/log/old-server-refused.log" >&2
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
	fail "the old server did not refuse the finalized directory ($rc)"
fi
grep -q "older bftblk servers must not open this directory" \
    "$TESTDIR/log/old-server-refused.log" ||
    fail "the old server's refusal does not say why"
server_start 0
wait_ok back
rc=0
timeout 30 "$OLD_ADMIN" ping --dir "$CLUSTER_DIR" --timeout 3 \
    >"$TESTDIR/log/old-ping.out" 2>&1 || rc=$?
sed 's/^/  old ping: /' "$TESTDIR/log/old-ping.out" >&2
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
	fail "the old library was let in ($rc)"
fi
grep -q "another bftblk version" "$TESTDIR/log/old-ping.out" ||
    fail "the old library's refusal does not say why"
grep -q "below level 1 this cluster was finalized at" \
    "$TESTDIR/log/server-1.log" || fail "server 1 did not log why"
# The old plugin: its reads fail, and its log says why.
nbdkit_env "$OLD_PLUGIN"
env "${NBDKIT_ENV[@]}" nbdkit -f --exit-with-parent \
    -U "$TESTDIR/old.sock" "$OLD_PLUGIN" config="$CLUSTER_DIR/bftblk.conf" \
    keys="$CLUSTER_DIR/client.key" shared=on volume-id=0 timeout=3 \
    >"$TESTDIR/log/nbdkit-old.log" 2>&1 </dev/null &
pid=$!
_track "$pid" nbdkit-old
deadline=$((SECONDS + 20))
until [ -S "$TESTDIR/old.sock" ]; do
	[ "$SECONDS" -lt "$deadline" ] || fail "the old nbdkit did not start"
	sleep 0.2
done
# The size comes from bftblk.conf; a read needs the servers.
rc=0
PATH=/usr/bin:$PATH timeout 60 nbdsh -u \
    "nbd+unix:///?socket=$TESTDIR/old.sock" -c 'h.pread(4096, 0)' \
    >"$TESTDIR/log/old-read.out" 2>&1 || rc=$?
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
	fail "the old plugin read from a finalized cluster ($rc)"
fi
deadline=$((SECONDS + 20))
until grep -q "another bftblk version" "$TESTDIR/log/nbdkit-old.log"; do
	[ "$SECONDS" -lt "$deadline" ] || { _show_log_tail \
	    "$TESTDIR/log/nbdkit-old.log"; fail "the old plugin's log does not say why"; }
	sleep 0.5
done
_stop_pid "$pid" TERM
_forget_pid "$pid"

log "step 6: the data stays; the new plugin writes and verifies"
run_fio seq-old-final "${seq_old[@]}" --verify_only=1
run_fio new-pass --offset=64M --size=16M --rw=randrw --rwmixread=30 \
    --bsrange=4k-64k --verify=crc32c --do_verify=1 --verify_fatal=1 \
    --randrepeat=0
log "ok"
