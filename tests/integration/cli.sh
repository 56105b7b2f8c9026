#!/bin/bash
# Every program answers --help and --version, with exit status 0 and
# output on stdout, and the version is the one lib/bftblk.h keeps: the
# admin tool (on its own and after any command), the server, the
# plugin (nbdkit --dump-plugin, and its options under nbdkit --help) and
# libbftblk (bftblk_version(), through the admin tool's line).  An
# unknown command still fails.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_build
hdr=$SRCDIR/lib/bftblk.h
ver=$(awk '/#define BFTBLK_VERSION_(MAJOR|MINOR|PATCH)\t/ { v = v sep $3; sep = "." }
    END { print v }' "$hdr")
[[ "$ver" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "no version in $hdr: '$ver'"
log "version $ver"

out=$("$ADMIN" --version) || fail "bftblk --version failed"
[ "$out" = "bftblk $ver (libbftblk $ver)" ] || fail "bftblk --version: $out"
out=$("$SERVER" --version) || fail "bftblk-server --version failed"
[ "$out" = "bftblk-server $ver" ] || fail "bftblk-server --version: $out"
"$SERVER" --help | grep -q "^usage: bftblk-server" ||
    fail "bftblk-server --help says no usage"
nbdkit_env "$PLUGIN"
env "${NBDKIT_ENV[@]}" nbdkit --dump-plugin "$PLUGIN" >"$TESTDIR/dump.out" ||
    fail "nbdkit --dump-plugin failed"
grep -qx "version=$ver" "$TESTDIR/dump.out" ||
    fail "the plugin says $(grep '^version=' "$TESTDIR/dump.out")"
# nbdkit PLUGIN --help lists every option of lib/options.c's table: the
# plugin hands nbdkit bftblk_options_help() as it is loaded.
env "${NBDKIT_ENV[@]}" nbdkit "$PLUGIN" --help >"$TESTDIR/help.out" ||
    fail "nbdkit PLUGIN --help failed"
keys=$(sed -n 's/^\t{ "\([a-z-]*\)", .*/\1/p' "$SRCDIR/lib/options.c")
[ -n "$keys" ] || fail "no options found in lib/options.c's table"
for k in $keys; do
	grep -q "^$k=" "$TESTDIR/help.out" ||
	    fail "nbdkit --help does not show $k=:" \
	    "$(tail -5 "$TESTDIR/help.out")"
done

for cmd in "" keygen client "client add" volume-key volume "volume create" \
    "volume list" ping scrub server "server replace" "server rotate" \
    status; do
	# shellcheck disable=SC2086
	out=$("$ADMIN" $cmd --help) || fail "bftblk $cmd --help failed"
	grep -q "^usage: bftblk volume create" <<<"$out" ||
	    fail "bftblk $cmd --help: $(head -3 <<<"$out")"
	# shellcheck disable=SC2086
	out=$("$ADMIN" $cmd --version) || fail "bftblk $cmd --version failed"
	[ "$out" = "bftblk $ver (libbftblk $ver)" ] ||
	    fail "bftblk $cmd --version: $out"
done
if "$ADMIN" frobnicate >"$TESTDIR/unknown.out" 2>&1; then
	fail "an unknown command succeeded"
fi
grep -q "unknown command 'frobnicate'" "$TESTDIR/unknown.out" ||
    fail "an unknown command says: $(cat "$TESTDIR/unknown.out")"
log "ok"
