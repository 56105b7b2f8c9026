# shellcheck shell=bash
# Sourced, after lib.sh, by the tests of a lease holder cut off from the
# cluster while another takes its volume over (lease-fence.sh,
# tests/faults/lease-byz.sh).  (Named .bash, not .sh, so that neither
# tests/run-integration nor `make check-faults` runs it as a test.)
#
# Host A reaches every server through its own tests/tools/cut-proxy.py,
# so its links can be cut and healed while the servers and host B go
# on; tests/tools/fence-writer.py writes and reads tagged blocks, with
# the time of every acknowledged write on the monotonic clock that the
# proxies log too.
#
# A round records what it found wrong with fence_bad instead of failing
# at once, so that one run shows every heal time that goes wrong and how;
# fence_verdict fails the test at the end if any did.

FENCE_PY=/usr/bin/python3
FENCE_WRITER=$SRCDIR/tests/tools/fence-writer.py
FENCE_PROXY=$SRCDIR/tests/tools/cut-proxy.py
require_python_nbd "$FENCE_PY"

FENCE_LEASE=${FENCE_LEASE:-4}	# seconds; renewed every FENCE_LEASE/3
FENCE_TIMEOUT=${FENCE_TIMEOUT:-2}	# the plugin's round timeout=
FENCE_SIZE=${FENCE_SIZE:-1M}		# each round's volume: blocks 0-7 used
# How long A's writer goes on after the heal: a renewal and more must
# have had their chance to run (and, unfenced, to overwrite B's
# claim), and the plugin to have reconnected after the cut.
FENCE_AFTER=${FENCE_AFTER:-$((FENCE_LEASE + 1))}
# A takeover waits out a lease period, and so may nbdkit_start of A when
# an earlier round's holder did not release its claim.
if [ "$BFTBLK_WAIT" -lt $((3 * FENCE_LEASE + 10)) ]; then
	BFTBLK_WAIT=$((3 * FENCE_LEASE + 10))
fi
# -v: the plugin's lease lines below WARN are debug lines; without a line
# per request, as the writers make thousands.
FENCE_NBDKIT_ARGS="${NBDKIT_ARGS:-} -v -D nbdkit.backend.datapath=0"

declare -a FENCE_FAILURES=()
declare -a FENCE_PROXY_PIDS=()
FENCE_CONF=
FENCE_WRITER_PID=

# fence_bad WHAT: one thing a round found wrong, kept for fence_verdict.
fence_bad()
{
	FENCE_FAILURES+=("$*")
	printf 'FAIL: %s\n' "$*" >&2
}

# fence_verdict: fails the test with every fence_bad of the run.
fence_verdict()
{
	local f
	[ "${#FENCE_FAILURES[@]}" -eq 0 ] && return 0
	printf '%d failed checks:\n' "${#FENCE_FAILURES[@]}" >&2
	for f in "${FENCE_FAILURES[@]}"; do
		printf '  %s\n' "$f" >&2
	done
	fail "${#FENCE_FAILURES[@]} checks failed (listed above)"
}

fence_now()
{
	"$FENCE_PY" -c 'import time; print("%.6f" % time.monotonic())'
}

# fence_proxies_start NAME: one cut-proxy per server, their logs
# log/cutproxy-NAME-I.log, and FENCE_CONF, the cluster's bftblk.conf
# with each server's address its proxy's.
fence_proxies_start()
{
	local name=$1 i port logf base
	[ "${#FENCE_PROXY_PIDS[@]}" -eq 0 ] || fail "fence proxies are running"
	base=$(_pick_ports "$CLUSTER_N")
	FENCE_CONF=$TESTDIR/via-cut-$name.conf
	cp "$CLUSTER_DIR/bftblk.conf" "$FENCE_CONF"
	for ((i = 0; i < CLUSTER_N; i++)); do
		port=$((base + i))
		logf=$TESTDIR/log/cutproxy-$name-$i.log
		: >"$logf"
		python3 "$FENCE_PROXY" --listen "127.0.0.1:$port" \
		    --target "127.0.0.1:$((CLUSTER_BASE_PORT + i))" \
		    --arm-barrier "$TESTDIR/armed-$name" \
		    --arm-peers "$CLUSTER_N" >>"$logf" 2>&1 </dev/null &
		FENCE_PROXY_PIDS[i]=$!
		_track "$!" "cutproxy-$name-$i"
		_wait_log "$!" "$logf" 0 "listening on" "cut-proxy $name-$i"
		sed -i "s/^server\\.$i = .*/server.$i = 127.0.0.1:$port/" \
		    "$FENCE_CONF"
		grep -q "^server\\.$i = 127.0.0.1:$port\$" "$FENCE_CONF" ||
		    fail "no server.$i line in bftblk.conf"
	done
	FENCE_PROXY_NAME=$name
	log "cut-proxies for $name up on ports $base..$((base + CLUSTER_N - 1))"
}

# fence_proxies_wait WORD: waits until every proxy logged WORD (cut,
# healed) as many times as it has been sent the signal for it.
fence_proxies_wait()
{
	local word=$1 want=$2 i logf deadline=$((SECONDS + 10))
	for i in "${!FENCE_PROXY_PIDS[@]}"; do
		logf=$TESTDIR/log/cutproxy-$FENCE_PROXY_NAME-$i.log
		until [ "$(grep -c "$word" "$logf")" -ge "$want" ]; do
			[ "$SECONDS" -lt "$deadline" ] ||
			    fail "cut-proxy $i did not log \"$word\" in 10s"
			sleep 0.05
		done
	done
}

# fence_cut / fence_heal: SIGUSR1 / SIGUSR2 to every proxy, and wait
# until each says it did it.
FENCE_NCUT=0
FENCE_NHEAL=0
fence_cut()
{
	local pid
	for pid in "${FENCE_PROXY_PIDS[@]}"; do
		kill -s USR1 "$pid"
	done
	FENCE_NCUT=$((FENCE_NCUT + 1))
	fence_proxies_wait ") cut: holding" "$FENCE_NCUT"
	log "A's links cut"
}

fence_heal()
{
	local pid
	for pid in "${FENCE_PROXY_PIDS[@]}"; do
		kill -s USR2 "$pid"
	done
	FENCE_NHEAL=$((FENCE_NHEAL + 1))
	fence_proxies_wait ") healed: delivering" "$FENCE_NHEAL"
	log "A's links healed"
}

# fence_proxies_stop: every proxy must exit 0 on SIGTERM.
fence_proxies_stop()
{
	local i pid
	for i in "${!FENCE_PROXY_PIDS[@]}"; do
		pid=${FENCE_PROXY_PIDS[$i]}
		_stop_pid "$pid" TERM
		_forget_pid "$pid"
		[ "$_STATUS" -eq 0 ] ||
		    fail "cut-proxy $i exited with status $_STATUS"
	done
	FENCE_PROXY_PIDS=()
	FENCE_NCUT=0
	FENCE_NHEAL=0
}

# fence_held_to_target: what each proxy held for the servers at its
# last heal, in bytes, one number a line.
fence_held_to_target()
{
	local i
	for i in "${!FENCE_PROXY_PIDS[@]}"; do
		grep -o 'healed: .*(\([0-9]*\) to the target' \
		    "$TESTDIR/log/cutproxy-$FENCE_PROXY_NAME-$i.log" |
		    tail -n 1 | grep -o '([0-9]*' | tr -d '(' || echo 0
	done
}

# fence_writer_start NBDKIT TAG LOG: the looping writer (one thread per
# block) through nbdkit NBDKIT; waits for its first 16 acknowledgements.
fence_writer_start()
{
	local name=$1 tag=$2 wlog=$3 deadline
	: >"$wlog"
	"$FENCE_PY" "$FENCE_WRITER" loop --uri "$(nbd_uri "$name")" \
	    --tag "$tag" --log "$wlog" --max-seconds 200 \
	    >>"$TESTDIR/log/writer-$name.log" 2>&1 </dev/null &
	FENCE_WRITER_PID=$!
	_track "$FENCE_WRITER_PID" "writer-$name"
	deadline=$((SECONDS + 15))
	until [ "$(grep -c '^ack' "$wlog")" -ge 16 ]; do
		_alive "$FENCE_WRITER_PID" ||
		    { _show_log_tail "$TESTDIR/log/writer-$name.log";
		    fail "writer $tag exited early"; }
		[ "$SECONDS" -lt "$deadline" ] ||
		    fail "writer $tag: fewer than 16 writes in 15s"
		sleep 0.1
	done
	log "writer $tag writes blocks 0-7 through nbdkit $name"
}

fence_writer_stop()
{
	[ -n "$FENCE_WRITER_PID" ] || return 0
	_stop_pid "$FENCE_WRITER_PID" TERM
	_forget_pid "$FENCE_WRITER_PID"
	FENCE_WRITER_PID=
}

# fence_check_blocks NAME VOL TAG WHAT [WANT]: a fresh reader (shared=on,
# so it takes no lease and has no cache of anyone's writes) must find
# TAG's write in each of blocks 0-7 of volume VOL; or with WANT, what it
# says (fence-writer.py check --want).
fence_check_blocks()
{
	local name=$1 vol=$2 tag=$3 what=$4 want=${5:-} out=$TESTDIR/check-$1.out
	local desc="$tag's writes"
	[ -z "$want" ] || desc=$want
	NBDKIT_ARGS=$FENCE_NBDKIT_ARGS nbdkit_start "$name" shared=on \
	    timeout="$FENCE_TIMEOUT" volume-id="$vol" size="$FENCE_SIZE"
	if timeout 60 "$FENCE_PY" "$FENCE_WRITER" check \
	    --uri "$(nbd_uri "$name")" --tag "$tag" \
	    ${want:+--want "$want"} >"$out" 2>&1; then
		log "$what: blocks 0-7 hold $desc"
	else
		fence_bad "$what: blocks 0-7 do not all hold $desc:" \
		    "$(grep -E 'want|not a whole|Error|error' "$out" |
		    tr '\n' ';' | head -c 400)"
	fi
	nbdkit_stop "$name"
}

# fence_takeover ROUND VOL OFFSET: the split-brain scenario on volume
# VOL.  A holds the volume and writes blocks 0-7 through its proxies;
# its links are cut; B (direct links) takes the volume over after a
# lease period and writes blocks 0-7 once; A's links heal OFFSET
# seconds after B's first acknowledged write, and A's writer goes on
# for FENCE_AFTER seconds.  Then:
#   - every block holds B's write;
#   - A had no write acknowledged after B's first;
#   - A's writer still tried after the heal, and what failed, failed
#     with EIO;
#   - A's plugin said its lease was fenced or lost, B's that it kept it.
fence_takeover()
{
	local r=$1 vol=$2 off=$3 a=a-$1 b=b-$1 what alog bout tb th late n
	local -a opts=(shared=off lease="$FENCE_LEASE" timeout="$FENCE_TIMEOUT"
	    volume-id="$vol" size="$FENCE_SIZE")
	what="round $r (heal ${off}s after B's first write)"
	alog=$TESTDIR/writer-$a.acks
	bout=$TESTDIR/writer-$b.out
	log "---- $what, volume $vol"
	fence_proxies_start "$r"
	NBDKIT_ARGS=$FENCE_NBDKIT_ARGS nbdkit_start "$a" config="$FENCE_CONF" \
	    "${opts[@]}"
	fence_writer_start "$a" A "$alog"
	fence_cut
	NBDKIT_ARGS=$FENCE_NBDKIT_ARGS nbdkit_start "$b" "${opts[@]}"
	grep -aq "volume $vol lease: .*taking the volume over" \
	    "$TESTDIR/log/nbdkit-$b.log" ||
	    fail "$what: nbdkit $b got the volume without taking it over"
	if ! timeout 60 "$FENCE_PY" "$FENCE_WRITER" once \
	    --uri "$(nbd_uri "$b")" --tag B \
	    --signal-pids "$(IFS=,; echo "${FENCE_PROXY_PIDS[*]}")" \
	    --signal-after "$off" >"$bout" 2>&1; then
		cat "$bout" >&2
		fail "$what: B, the new holder, could not write"
	fi
	FENCE_NHEAL=$((FENCE_NHEAL + 1))
	fence_proxies_wait ") healed: delivering" "$FENCE_NHEAL"
	tb=$(awk '$1 == "first-ack" { print $2 }' "$bout")
	th=$(awk '$1 == "signalled" { print $2 }' "$bout")
	[ -n "$tb" ] && [ -n "$th" ] || fail "$what: no times from B's writer"
	log "B wrote blocks 0-7 (first acknowledged at $tb); A's links" \
	    "healed at $th; A's writer goes on for ${FENCE_AFTER}s"
	sleep "$FENCE_AFTER"
	fence_writer_stop

	fence_check_blocks "r-$r" "$vol" B "$what"
	late=$(awk -v tb="$tb" '$1 == "ack" && $5 > tb' "$alog" | wc -l)
	if [ "$late" -gt 0 ]; then
		fence_bad "$what: $late writes of A acknowledged after B's" \
		    "first at $tb, e.g.: $(awk -v tb="$tb" \
		    '$1 == "ack" && $5 > tb' "$alog" | head -n 2 | tr '\n' ';')"
	fi
	n=$(awk -v th="$th" '$5 > th' "$alog" | wc -l)
	[ "$n" -gt 0 ] ||
	    fence_bad "$what: A's writer ended no write after the heal," \
	    "so the heal tested nothing"
	n=$(awk -v th="$th" '$1 == "err" && $5 > th && $6 != "EIO"' "$alog" |
	    wc -l)
	[ "$n" -eq 0 ] ||
	    fence_bad "$what: $n of A's writes after the heal failed" \
	    "otherwise than with EIO: $(awk -v th="$th" \
	    '$1 == "err" && $5 > th && $6 != "EIO"' "$alog" | head -n 1)"
	grep -aEq "volume $vol lease: (fenced|lost)" \
	    "$TESTDIR/log/nbdkit-$a.log" ||
	    fence_bad "$what: A's plugin never said its lease was fenced" \
	    "or lost"
	if grep -aq "volume $vol lease: lost" "$TESTDIR/log/nbdkit-$b.log"; then
		fence_bad "$what: B, which took the volume over, lost it:" \
		    "$(grep -ao "volume $vol lease: lost.*" \
		    "$TESTDIR/log/nbdkit-$b.log" | head -n 1)"
	fi
	log "$what: A had $(awk '$1 == "ack"' "$alog" | wc -l) writes" \
	    "acknowledged, $late of them after B's first; A's plugin:" \
	    "$(grep -aoE "volume $vol lease: (fenced|lost)[^;]*" \
	    "$TESTDIR/log/nbdkit-$a.log" | head -n 1)"
	nbdkit_stop "$a"
	nbdkit_stop "$b"
	fence_proxies_stop
}
