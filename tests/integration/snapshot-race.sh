#!/bin/bash
# Snapshots taken concurrently (t=1, volume v of 4 MiB, served by name,
# one writer at a time).
#
# A writer counts through blocks 40-47 (each block filled with its tag
# and the count), logging when each write was sent and acknowledged.  A
# snapshot's image is checked against that log with the cut rule of
# docs/snapshots.md: each block holds a count at least the last one
# acknowledged for it before `snap create` was called, and below the
# first one sent to it after the call returned; every other block is
# zeros.
#
# 1. Two admins (two client keys) run `snap create` at the same moment
#    while the holder writes: both snapshots are listed, each with a
#    boundary of its own, each reads back per the cut.  Then both ask
#    for the same name: exactly one succeeds, the other fails saying the
#    name exists.  The writer sees no error.
# 2. A takeover racing a snapshot: holder A (lease 2 s) is stopped
#    (SIGSTOP) while it writes; `snap create` starts, and a little later
#    (0 to 1.4 s: the takeover's claim lands before, around or after the
#    cut's lease read) writer B opens v through another nbdkit, which
#    takes the volume over, and writes.  The snapshot holds every write
#    A had acknowledged before the call.  Its boundary is the generation
#    the cut fenced: A's when the cut came first (B then claims above
#    it, after one refusal), or B's when B's claim came first (B then
#    follows the re-asserted claim, and B's writes made during the call
#    may be in the snapshot, as any write in flight at a cut may).  No
#    write of B sent after the call returned, or of a generation above
#    the boundary, is in it.  B's writes all succeed; A, continued,
#    writes no more (no write it sent once stopped is acknowledged, its
#    next write fails, its log says fenced or lost), and the head ends
#    with B's data.
# An admin waiting for another's lock reads it every second, and then
# waits its guard (the cluster here is not finalized): the second of two
# creates at once returns a few seconds after the first.
# Throughout: every snapshot's boundary is kept by n-t servers (their
# logs), and no server keeps a view that no snapshot entry names.
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NBDKIT_PIN=			# volumes by export name
NBDKIT_SHARED=			# one writer per volume: the lease holder
PY=/usr/bin/python3
require_python_nbd "$PY"
RACE_ROUNDS=${RACE_ROUNDS:-2}
TAKEOVER_OFFSETS=${TAKEOVER_OFFSETS:-"0 1.0 1.1 1.2 1.4"}

cluster_start 1
client_add admin2 rw
"$ADMIN" volume create --dir "$CLUSTER_DIR" --name v --size 4M \
    >/dev/null || fail "creating v"

now() { date +%s.%N; }

# The writer: counts through blocks FIRST..FIRST+7, one write at a time,
# until STOPFILE exists or DEADLINE passes.  Logs "ack N BLOCK T0 T1" or
# "err N BLOCK T0 T1 MSG" (then exits 1).  With --retry-open S, an open
# the plugin refuses (the lease is held) is tried again for S seconds.
cat >"$TESTDIR/writer.py" <<'EOF'
import argparse, os, struct, sys, time
import nbd
p = argparse.ArgumentParser()
p.add_argument("--uri"); p.add_argument("--tag"); p.add_argument("--log")
p.add_argument("--stop"); p.add_argument("--deadline", type=float)
p.add_argument("--retry-open", type=float, default=0)
a = p.parse_args()
log = open(a.log, "w", buffering=1)
h = None
until = time.time() + a.retry_open
while True:
    try:
        h = nbd.NBD()
        h.connect_uri(a.uri)
        break
    except nbd.Error as e:
        log.write("open-refused %.6f %s\n" % (time.time(), e))
        if time.time() >= until:
            sys.exit("open: %s" % e)
        time.sleep(0.3)
log.write("open %.6f\n" % time.time())
n = 0
while not os.path.exists(a.stop) and time.time() < a.deadline:
    n += 1
    b = 40 + n % 8
    data = (a.tag.encode() * 8 + struct.pack("<Q", n)) * 4096
    t0 = time.time()
    try:
        h.pwrite(data, b * 65536)
    except nbd.Error as e:
        log.write("err %d %d %.6f %.6f %s\n" % (n, b, t0, time.time(), e))
        sys.exit(1)
    log.write("ack %d %d %.6f %.6f\n" % (n, b, t0, time.time()))
h.shutdown()
EOF

# The image check: check.py IMG CALLED RETURNED BOUNDARY LOG:TAG[:GEN]...
# Each writer's log with its tag and, when known, the generation its
# writes carried (a write of a generation above the boundary must not
# be in the image).
cat >"$TESTDIR/check.py" <<'EOF'
import struct, sys
img = open(sys.argv[1], "rb").read()
called, returned, boundary = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
writers = {}
for w in sys.argv[5:]:
    f, tag, gen = (w.split(":") + [None])[:3]
    rows = []
    for l in open(f):
        x = l.split()
        if x[0] in ("ack", "err"):
            rows.append((x[0], int(x[1]), int(x[2]), float(x[3]), float(x[4])))
    writers[tag] = (rows, int(gen) if gen else None)
zero = bytes(65536)
for b in range(len(img) // 65536):
    blk = img[b * 65536:(b + 1) * 65536]
    if not 40 <= b < 48:
        assert blk == zero, "block %d is not zeros" % b
        continue
    # The newest acknowledged write before the call, over every writer.
    last = max([(t1, tag, n) for tag, (rows, _) in writers.items()
                for k, n, bb, t0, t1 in rows
                if k == "ack" and bb == b and t1 < called], default=None)
    if blk == zero:
        assert last is None, "block %d is zeros, but %s:%d was acknowledged " \
            "before the call" % (b, last[1], last[2])
        continue
    tag = chr(blk[0])
    n = struct.unpack("<Q", blk[8:16])[0]
    assert blk == (tag.encode() * 8 + struct.pack("<Q", n)) * 4096, \
        "block %d is not one write" % b
    assert tag in writers, "block %d holds tag %r" % (b, tag)
    rows, gen = writers[tag]
    sent = [r for r in rows if r[1] == n and r[2] == b]
    assert sent, "block %d holds %s:%d, never sent to it" % (b, tag, n)
    t0 = sent[0][3]
    assert t0 < returned, "block %d holds %s:%d, sent after the call " \
        "returned" % (b, tag, n)
    if gen is not None:
        assert gen <= boundary, "block %d holds %s:%d of generation %d, " \
            "above the boundary %d" % (b, tag, n, gen, boundary)
    if last is not None:
        ltag, ln = last[1], last[2]
        if ltag == tag:
            assert n >= ln, "block %d holds %s:%d; %s:%d was acknowledged " \
                "before the call" % (b, tag, n, ltag, ln)
        else:
            # Another writer's value: it must be newer than that one's.
            assert t0 > last[0], "block %d holds %s:%d, older than %s:%d " \
                "acknowledged before the call" % (b, tag, n, ltag, ln)
    print("  block %d: %s:%d (last acknowledged before the call: %s)"
          % (b, tag, n, "%s:%d" % (last[1], last[2]) if last else "none"),
          file=sys.stderr)
EOF

# snap_boundary NAME: the boundary generation `snap info` gives.
snap_boundary()
{
	"$ADMIN" snap info --dir "$CLUSTER_DIR" --volume v --name "$1" |
	    awk -F': ' '$1 == "boundary generation" { print $2 }'
}

# check_snap NAME CALLED RETURNED WRITERLOG...: exports v@NAME and runs
# check.py on it.
check_snap()
{
	local name=$1 called=$2 returned=$3 g
	shift 3
	g=$(snap_boundary "$name")
	[ -n "$g" ] || fail "snap info $name gives no boundary"
	"$ADMIN" export --dir "$CLUSTER_DIR" "v@$name" "$TESTDIR/$name.img" \
	    2>"$TESTDIR/log/export-$name.log" ||
	    { cat "$TESTDIR/log/export-$name.log" >&2; fail "export v@$name"; }
	log "v@$name: boundary $g"
	"$PY" "$TESTDIR/check.py" "$TESTDIR/$name.img" "$called" "$returned" \
	    "$g" "$@" || fail "v@$name is not cut between its call and return"
}

# create NAME KEYFILE OUT: `snap create` in the background, its start
# and end times in OUT.t, output in OUT, status in OUT.rc.
create()
{
	local name=$1 keys=$2 out=$3
	(
		t0=$(now)
		rc=0
		timeout 60 "$ADMIN" snap create --dir "$CLUSTER_DIR" \
		    --keys "$keys" --volume v --name "$name" >"$out" 2>&1 ||
		    rc=$?
		echo "$t0 $(now)" >"$out.t"
		echo "$rc" >"$out.rc"
	) &
	CREATE_PIDS+=($!)
	_track "$!" "create-$name"
}

# show_creates NAME...: each create's status, start and end, and output:
# when one fails, the other's tells what it was doing meanwhile.
show_creates()
{
	local s
	for s in "$@"; do
		echo "---- snap create $s: rc $(cat "$TESTDIR/create-$s.rc")," \
		    "from/to $(cat "$TESTDIR/create-$s.t")" >&2
		cat "$TESTDIR/create-$s" >&2
	done
}

wait_creates()
{
	local pid
	for pid in "${CREATE_PIDS[@]}"; do
		_reap "$pid"
		_forget_pid "$pid"
	done
	CREATE_PIDS=()
}

# ---- 1. two admins at once, under a writing holder ----
log "step 1: two admins' snap create at once, while the holder writes"
NBDKIT_ARGS="-v -D nbdkit.backend.datapath=0" nbdkit_start nbd
URI="nbd+unix:///v?socket=$TESTDIR/nbd.sock"
rm -f "$TESTDIR/stop-w"
"$PY" "$TESTDIR/writer.py" --uri "$URI" --tag W --log "$TESTDIR/w.log" \
    --stop "$TESTDIR/stop-w" --deadline "$(($(date +%s) + 120))" \
    >"$TESTDIR/log/writer-w.log" 2>&1 &
WPID=$!
_track "$WPID" writer-w
sleep 1
grep -q '^ack' "$TESTDIR/w.log" || fail "the writer wrote nothing in 1 s"
CREATE_PIDS=()
declare -a SNAPS=()
for r in $(seq 1 "$RACE_ROUNDS"); do
	create "a$r" "$CLUSTER_DIR/client.key" "$TESTDIR/create-a$r"
	create "b$r" "$CLUSTER_DIR/admin2.key" "$TESTDIR/create-b$r"
	wait_creates
	for s in "a$r" "b$r"; do
		[ "$(cat "$TESTDIR/create-$s.rc")" = 0 ] ||
		    { show_creates "a$r" "b$r"; fail "snap create $s"; }
		log "$s: $(cat "$TESTDIR/create-$s")"
		SNAPS+=("$s")
	done
	sleep 0.5
done
log "step 1: both admins name the same snapshot"
create same "$CLUSTER_DIR/client.key" "$TESTDIR/create-same1"
create same "$CLUSTER_DIR/admin2.key" "$TESTDIR/create-same2"
wait_creates
ok=0
for k in 1 2; do
	f=$TESTDIR/create-same$k
	if [ "$(cat "$f.rc")" = 0 ]; then
		ok=$((ok + 1))
		SAME_T=$(cat "$f.t")
	else
		grep -q "volume 'v' has a snapshot named 'same'" "$f" ||
		    { cat "$f" >&2; fail "the loser of the same name fails" \
		    "without saying the name exists"; }
	fi
	log "same ($k): rc $(cat "$f.rc"): $(cat "$f")"
done
[ "$ok" = 1 ] || fail "$ok of 2 admins succeeded with the same name"
SNAPS+=(same)
sleep 0.5
touch "$TESTDIR/stop-w"
_reap "$WPID"
_forget_pid "$WPID"
[ "$_STATUS" -eq 0 ] && ! grep -q '^err' "$TESTDIR/w.log" ||
    { cat "$TESTDIR/log/writer-w.log" >&2; grep '^err' "$TESTDIR/w.log" >&2
    fail "the writer saw an error"; }
log "the writer: $(grep -c '^ack' "$TESTDIR/w.log") writes, none failed"

"$ADMIN" snap list --dir "$CLUSTER_DIR" --volume v --json \
    >"$TESTDIR/snaps1.json" || fail "snap list"
"$PY" - "$TESTDIR/snaps1.json" "${SNAPS[@]}" <<'EOF' ||
import json, sys
s = json.load(open(sys.argv[1]))
names = sorted(x["name"] for x in s)
assert names == sorted(sys.argv[2:]), "listed %s, made %s" % (names, sys.argv[2:])
b = [x["boundary"] for x in s]
assert len(set(b)) == len(b), "boundaries shared: %s" % s
EOF
    { cat "$TESTDIR/snaps1.json" >&2; fail "snap list after step 1"; }
for s in "${SNAPS[@]}"; do
	if [ "$s" = same ]; then
		read -r c0 c1 <<<"$SAME_T"
	else
		read -r c0 c1 <<<"$(cat "$TESTDIR/create-$s.t")"
	fi
	check_snap "$s" "$c0" "$c1" "$TESTDIR/w.log:W"
done
nbdkit_stop nbd

# ---- 2. a takeover racing a snapshot ----
# gen_of NBDKIT: the generation its lease was last acquired under.
gen_of()
{
	grep -ao "lease: acquired, generation [0-9]*" \
	    "$TESTDIR/log/nbdkit-$1.log" | tail -n 1 | awk '{ print $4 }'
}

# all_stopped PID: waits (5 s at most) until every thread of PID is
# stopped.
all_stopped()
{
	local deadline=$((SECONDS + 5)) f st running
	while :; do
		running=0
		for f in /proc/"$1"/task/*/stat; do
			st=$(cat "$f" 2>/dev/null) || continue
			st=${st##*) }
			[ "${st%% *}" = T ] || running=1
		done
		[ "$running" = 1 ] || return 0
		[ "$SECONDS" -lt "$deadline" ] ||
		    fail "pid $1 has threads running 5 s after SIGSTOP"
		sleep 0.01
	done
}

k=0
for off in $TAKEOVER_OFFSETS; do
	k=$((k + 1))
	log "step 2.$k: A stopped, snap create, B takes over ${off}s later"
	NBDKIT_ARGS="-v -D nbdkit.backend.datapath=0" \
	    nbdkit_start "a$k" lease=2
	rm -f "$TESTDIR/stop-$k"
	"$PY" "$TESTDIR/writer.py" --uri "nbd+unix:///v?socket=$TESTDIR/a$k.sock" \
	    --tag A --log "$TESTDIR/a$k.log" --stop "$TESTDIR/stop-$k" \
	    --deadline "$(($(date +%s) + 40))" --retry-open 10 \
	    >"$TESTDIR/log/writer-a$k.log" 2>&1 &
	APID=$!
	_track "$APID" "writer-a$k"
	deadline=$((SECONDS + 15))
	while :; do
		n=$(grep -c '^ack' "$TESTDIR/a$k.log" 2>/dev/null) || n=0
		[ "$n" -lt 16 ] || break
		[ "$SECONDS" -lt "$deadline" ] || fail "A wrote too little in 15 s"
		sleep 0.1
	done
	kill -STOP "${NBDKIT_PID[a$k]}"
	# kill returns before every thread has stopped: a thread on the
	# other core may finish a write meanwhile.
	all_stopped "${NBDKIT_PID[a$k]}"
	STOPPED=$(now)
	create "t$k" "$CLUSTER_DIR/client.key" "$TESTDIR/create-t$k"
	sleep "$off"
	NBDKIT_ARGS="-v -D nbdkit.backend.datapath=0" \
	    nbdkit_start "b$k" lease=2
	"$PY" "$TESTDIR/writer.py" --uri "nbd+unix:///v?socket=$TESTDIR/b$k.sock" \
	    --tag B --log "$TESTDIR/b$k.log" --stop "$TESTDIR/stop-$k" \
	    --deadline "$(($(date +%s) + 40))" --retry-open 15 \
	    >"$TESTDIR/log/writer-b$k.log" 2>&1 &
	BPID=$!
	_track "$BPID" "writer-b$k"
	wait_creates
	[ "$(cat "$TESTDIR/create-t$k.rc")" = 0 ] ||
	    { cat "$TESTDIR/create-t$k" >&2; fail "snap create t$k"; }
	log "t$k: $(cat "$TESTDIR/create-t$k")"
	# B must be writing before A runs again.
	deadline=$((SECONDS + 20))
	until grep -q '^ack' "$TESTDIR/b$k.log" 2>/dev/null; do
		[ "$SECONDS" -lt "$deadline" ] || fail "B wrote nothing in 20 s"
		_alive "$BPID" || { cat "$TESTDIR/log/writer-b$k.log" >&2
		    fail "writer B exited"; }
		sleep 0.1
	done
	kill -CONT "${NBDKIT_PID[a$k]}"
	# A's writer: its stalled write or the next one must fail.
	deadline=$((SECONDS + 20))
	while _alive "$APID" && [ "$SECONDS" -lt "$deadline" ]; do
		sleep 0.1
	done
	_alive "$APID" && fail "A went on writing after B took over"
	_reap "$APID"
	_forget_pid "$APID"
	grep -q '^err' "$TESTDIR/a$k.log" ||
	    fail "A's writer ended without a failed write"
	grep -aEq "lease: (fenced|lost)" "$TESTDIR/log/nbdkit-a$k.log" ||
	    fail "A's plugin does not say its lease was fenced or lost"
	sleep 1
	touch "$TESTDIR/stop-$k"
	_reap "$BPID"
	_forget_pid "$BPID"
	[ "$_STATUS" -eq 0 ] && ! grep -q '^err' "$TESTDIR/b$k.log" ||
	    { cat "$TESTDIR/log/writer-b$k.log" >&2; grep '^err' "$TESTDIR/b$k.log" >&2
	    fail "B saw an error"; }
	ga=$(gen_of "a$k")
	gb=$(gen_of "b$k")
	g=$(snap_boundary "t$k")
	# A cut that found the claim moved between its lease read and its
	# re-assertion started over; its servers forgot the first boundary.
	restarts=$(cat "$TESTDIR"/log/server-*.log |
	    grep -c "volume [0-9]*: forgot the view" || true)
	log "t$k: A's generation $ga, B's $gb, boundary $g;" \
	    "views forgotten by restarted cuts so far: $restarts;" \
	    "B opened after $(grep -c '^open-refused' "$TESTDIR/b$k.log")" \
	    "refusals, wrote $(grep -c '^ack' "$TESTDIR/b$k.log") blocks"
	[ -n "$ga" ] && [ -n "$gb" ] || fail "no generation in the plugins' logs"
	# The boundary is the generation step 3 fenced: A's, when the cut
	# came first (B then took over above it), or B's, when B's claim
	# came first (B then follows the re-asserted claim to g+1).
	if [ "$g" = "$ga" ]; then
		[ "$gb" -gt "$g" ] ||
		    fail "B wrote under $gb, not above the boundary $g"
	elif [ "$g" = "$gb" ]; then
		grep -aq "generation $((g + 1)): a snapshot re-asserted this" \
		    "$TESTDIR/log/nbdkit-b$k.log" ||
		    fail "B did not follow the snapshot to generation $((g + 1))"
	else
		fail "boundary $g is neither A's generation $ga nor B's $gb"
	fi
	# No write A sent once stopped is acknowledged: it would have been
	# handled after A ran again, beside B.  (The one in flight at the
	# stop may be acknowledged late: then it completed before B's claim,
	# which makes the servers refuse A's generation.)
	late=$(awk -v s="$STOPPED" '$1 == "ack" && $4 > s' "$TESTDIR/a$k.log")
	[ -z "$late" ] || fail "A wrote after it was stopped (at $STOPPED): $late"
	read -r c0 c1 <<<"$(cat "$TESTDIR/create-t$k.t")"
	check_snap "t$k" "$c0" "$c1" "$TESTDIR/a$k.log:A" "$TESTDIR/b$k.log:B:$gb"
	# The head: B's last acknowledged write in every block.
	"$ADMIN" export --dir "$CLUSTER_DIR" v "$TESTDIR/head$k.img" 2>/dev/null ||
	    fail "export v"
	"$PY" - "$TESTDIR/head$k.img" "$TESTDIR/b$k.log" <<'EOF' ||
import struct, sys
img = open(sys.argv[1], "rb").read()
last = {}
for l in open(sys.argv[2]):
    x = l.split()
    if x[0] == "ack":
        last[int(x[2])] = int(x[1])
for b in range(40, 48):
    want = (b"B" * 8 + struct.pack("<Q", last[b])) * 4096
    assert img[b * 65536:(b + 1) * 65536] == want, "block %d is not B:%d" % (b, last[b])
EOF
	    fail "the head is not B's last writes"
	nbdkit_stop "b$k"
	nbdkit_stop "a$k"
done

# ---- every boundary kept by n-t servers, no view without an entry ----
"$ADMIN" snap list --dir "$CLUSTER_DIR" --volume v --json \
    >"$TESTDIR/snaps.json" || fail "snap list"
"$PY" - "$TESTDIR/snaps.json" "$CLUSTER_N" "$CLUSTER_T" \
    "$TESTDIR"/log/server-*.log <<'EOF' || fail "servers' views and entries differ"
import json, re, sys
s = json.load(open(sys.argv[1]))
n, t = int(sys.argv[2]), int(sys.argv[3])
vol = s[0]["volume_id"]
bounds = {x["boundary"]: x["name"] for x in s}
assert len(bounds) == len(s), "two snapshots share a boundary: %s" % s
pat = re.compile(r"volume %d: (keeps|forgot) the view at generation (\d+)" % vol)
kept = {}
for f in sys.argv[4:]:
    views = set()
    for m in pat.finditer(open(f, errors="replace").read()):
        g = int(m.group(2))
        (views.add if m.group(1) == "keeps" else views.discard)(g)
    for g in views:
        assert g in bounds, "%s keeps a view at %d, which no snapshot " \
            "names (%s)" % (f, g, sorted(bounds))
        kept[g] = kept.get(g, 0) + 1
for g, name in sorted(bounds.items()):
    assert kept.get(g, 0) >= n - t, "%s's boundary %d is kept by %d servers" \
        % (name, g, kept.get(g, 0))
    print("  %s: boundary %d kept by %d servers" % (name, g, kept[g]),
          file=sys.stderr)
EOF
log "PASS"
