#!/bin/bash
# libbftblk as its users see it.  The documentation's example program
# (docs/example.c, built against libbftblk.so and the public header
# alone) writes and reads a block; `bftblk ping` reports the servers it
# reaches and refuses when fewer than n-t remain; a read-only key reads
# but cannot write.  The shared objects export only their entry points:
# bftblk_ functions from libbftblk.so, plugin_init from the plugin (nbdkit
# loads plugins with RTLD_GLOBAL, so anything more could clash).
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

EXAMPLE=$BUILD/tests/bftblk-example
[ -x "$EXAMPLE" ] || fail "$EXAMPLE is missing (make)"
command -v nm >/dev/null || skip "nm (binutils) is not installed"

log "exported symbols"
syms=$(nm -D --defined-only "$BUILD/libbftblk.so" | awk '$2 ~ /^[TDBRVW]$/ {print $3}')
[ -n "$syms" ] || fail "libbftblk.so exports nothing"
other=$(grep -v '^bftblk_' <<<"$syms" || true)
[ -z "$other" ] || fail "libbftblk.so exports non-bftblk_ symbols: $other"
# Every function of the public header, and nothing else: no bftblk__
# internal, the rebuild's peer reads (lib/peer.h) included, which the
# server has from the static library.
public=$(grep -o '\bbftblk_[a-z_]*(' "$SRCDIR/lib/bftblk.h" |
    tr -d '(' | grep -v '_fn$' | sort -u)
exported=$(sed 's/@.*//' <<<"$syms" | sort -u)
[ "$public" = "$exported" ] ||
    fail "libbftblk.so's symbols differ from bftblk.h's functions:" \
    "$(diff <(echo "$public") <(echo "$exported") | grep '^[<>]' | tr '\n' ' ')"
grep -q '^bftblk__' <<<"$exported" &&
    fail "libbftblk.so exports internals: $(grep '^bftblk__' <<<"$exported")"
# Inside the static library, lib/'s objects define bftblk_ functions of
# the public header and bftblk__ internals, nothing else: a name
# without either prefix could clash with a program's own or with
# common/'s bft_ (common/ and BLAKE3, linked in, are not looked at).
# stray_globals reads `nm -A` output and prints the offenders; it is
# tried on a made-up line first so that it can be seen to fail.
stray_globals()
{
	awk -v objs="$(cd "$SRCDIR/lib" && ls -- *.c | sed 's/\.c$/.o/')" \
	    -v public="$1" '
	BEGIN {
		n = split(objs, o, "\n")
		for (i = 1; i <= n; i++)
			lib[o[i]] = 1
		n = split(public, p, "\n")
		for (i = 1; i <= n; i++)
			pub[p[i]] = 1
	}
	$2 ~ /^[TDBRVWCG]$/ {
		n = split($1, f, ":")
		# ASan adds __odr_asan.NAME beside each global NAME.
		if (!(f[n - 1] in lib) || $3 ~ /^bftblk__/ || ($3 in pub) ||
		    $3 ~ /^__(odr_)?asan/)
			next
		print f[n - 1] ": " $3
	}'
}
[ "$(echo 'x.a:engine.o:0000 T engine_free' | stray_globals "$public")" = \
    "engine.o: engine_free" ] || fail "stray_globals misses a stray name"
libnm=$(nm -A --defined-only "$BUILD/libbftblk.a") ||
    fail "nm cannot read $BUILD/libbftblk.a"
grep -q ' T bftblk__' <<<"$libnm" || fail "libbftblk.a has no bftblk__ symbol"
stray=$(stray_globals "$public" <<<"$libnm")
[ -z "$stray" ] ||
    fail "lib/ defines globals that are neither bftblk_ public nor" \
    "bftblk__: $(tr '\n' ' ' <<<"$stray")"

psyms=$(nm -D --defined-only "$PLUGIN" | awk '$2 ~ /^[TDBRVW]$/ {print $3}')
[ "$psyms" = plugin_init ] ||
    fail "the plugin exports more than plugin_init: $(tr '\n' ' ' <<<"$psyms")"
log "libbftblk.so: $(wc -l <<<"$syms") bftblk_ symbols; plugin: plugin_init"

cluster_start 1

log "the example program"
out=$("$EXAMPLE" "$CLUSTER_DIR/bftblk.conf" "$CLUSTER_DIR/client.key" \
    2>"$TESTDIR/log/example.log") ||
    { _show_log_tail "$TESTDIR/log/example.log"; fail "example failed"; }
[ "$out" = "hello from libbftblk" ] || fail "example printed '$out'"

# The block is on the servers: another client (the plugin) reads it.
nbdkit_start nbd
nbdsh_run nbd "
got = h.pread(64, 0)
assert got == b'hello from libbftblk' + bytes(44), got
"
nbdkit_stop nbd

# A failed open says why, from bftblk_errmsg(NULL).
"$EXAMPLE" "$CLUSTER_DIR/bftblk.conf" "$CLUSTER_DIR/nokey.key" \
    >"$TESTDIR/log/example-bad.out" 2>&1 &&
    fail "the example ran with a key file that does not exist"
grep -q "open: " "$TESTDIR/log/example-bad.out" ||
    fail "a failed open says nothing: $(cat "$TESTDIR/log/example-bad.out")"

log "bftblk ping, all servers up"
"$ADMIN" ping --dir "$CLUSTER_DIR" >"$TESTDIR/log/ping-up.out" 2>&1 ||
    { cat "$TESTDIR/log/ping-up.out"; fail "ping failed with every server up"; }
grep -q "^4 of 4 servers reachable, I/O needs 3: ok" "$TESTDIR/log/ping-up.out" ||
    fail "ping: $(cat "$TESTDIR/log/ping-up.out")"
grep -q "^read of block 0: ok" "$TESTDIR/log/ping-up.out" ||
    fail "ping did not read: $(cat "$TESTDIR/log/ping-up.out")"

log "a read-only client reads the example's block and cannot write"
client_add reader ro
"$ADMIN" ping --dir "$CLUSTER_DIR" --keys "$CLUSTER_DIR/reader.key" \
    >"$TESTDIR/log/ping-ro.out" 2>&1 ||
    { cat "$TESTDIR/log/ping-ro.out"; fail "ping with a read-only key failed"; }
grep -q "client 'reader' (read-only)" "$TESTDIR/log/ping-ro.out" ||
    fail "ping: $(cat "$TESTDIR/log/ping-ro.out")"
"$EXAMPLE" "$CLUSTER_DIR/bftblk.conf" "$CLUSTER_DIR/reader.key" \
    >"$TESTDIR/log/example-ro.out" 2>&1 &&
    fail "the example wrote with a read-only key"
grep -q "read-only" "$TESTDIR/log/example-ro.out" ||
    fail "a refused write says: $(cat "$TESTDIR/log/example-ro.out")"

log "bftblk ping with one server down, then two"
server_kill 3
"$ADMIN" ping --dir "$CLUSTER_DIR" --timeout 1 >"$TESTDIR/log/ping-1.out" 2>&1 ||
    { cat "$TESTDIR/log/ping-1.out"; fail "ping failed with one server down"; }
grep -q "^server 3 .*: unreachable" "$TESTDIR/log/ping-1.out" ||
    fail "ping does not name the dead server: $(cat "$TESTDIR/log/ping-1.out")"
grep -q "^3 of 4 servers reachable, I/O needs 3: ok" "$TESTDIR/log/ping-1.out" ||
    fail "ping: $(cat "$TESTDIR/log/ping-1.out")"
server_kill 2
if "$ADMIN" ping --dir "$CLUSTER_DIR" --timeout 1 \
    >"$TESTDIR/log/ping-2.out" 2>&1; then
	fail "ping succeeded with two of four servers down"
fi
grep -q "^2 of 4 servers reachable, I/O needs 3: UNAVAILABLE" \
    "$TESTDIR/log/ping-2.out" || fail "ping: $(cat "$TESTDIR/log/ping-2.out")"
log "ok"
