#!/bin/bash
# What debian/ repeats from the source, checked without building (make
# deb needs debhelper; this runs with make check): debian/changelog's
# version is lib/bftblk.h's, and debian/libbftblk1.symbols names the
# functions of lib/libbftblk.syms, no more and no fewer.  A version bump
# or a new library function without its debian/ line fails here first.
# The checks are also run on doctored copies, so that they can fail.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# version HEADER: the version as the Makefile computes it.
version()
{
	awk '/^#define BFTBLK_VERSION_(MAJOR|MINOR|PATCH)[ \t]/ \
	    { v = v sep $3; sep = "." } END { print v }' "$1"
}
# changelog_version CHANGELOG: its first entry's version.
changelog_version()
{
	sed -n '1s/^[a-z0-9.+-]* (\([^)]*\)).*/\1/p' "$1"
}
# syms_names SYMS / symbols_names SYMBOLS: the function names, sorted.
syms_names()
{
	sed -n 's/^[ \t]*\(bftblk_[a-z0-9_]*\);.*/\1/p' "$1" | sort
}
symbols_names()
{
	sed -n 's/^ \(bftblk_[a-z0-9_]*\)@LIBBFTBLK_1 .*/\1/p' "$1" | sort
}

v=$(version "$SRCDIR/lib/bftblk.h")
[ -n "$v" ] || fail "no version in lib/bftblk.h"
cv=$(changelog_version "$SRCDIR/debian/changelog")
[ "$cv" = "$v" ] || fail "debian/changelog says $cv, lib/bftblk.h $v:" \
    "add a changelog entry (dch -v $v)"
log "debian/changelog: $cv, as lib/bftblk.h"

syms=$(syms_names "$SRCDIR/lib/libbftblk.syms")
symbols=$(symbols_names "$SRCDIR/debian/libbftblk1.symbols")
[ "$(wc -l <<<"$syms")" -ge 20 ] || fail "too few names read from libbftblk.syms"
[ "$syms" = "$symbols" ] ||
    fail "libbftblk.syms and debian/libbftblk1.symbols differ:" \
	"$(diff <(echo "$syms") <(echo "$symbols") | grep '^[<>]' | tr '\n' ' ')"
log "debian/libbftblk1.symbols: the $(wc -l <<<"$syms") functions of" \
    "lib/libbftblk.syms"

# The checks fail on a changelog one version behind, and on a symbols
# file that lost a function.
printf '#define BFTBLK_VERSION_MAJOR\t9\n#define BFTBLK_VERSION_MINOR\t0\n#define BFTBLK_VERSION_PATCH\t1\n' \
    >"$TESTDIR/bumped.h"
[ "$(version "$TESTDIR/bumped.h")" = 9.0.1 ] || fail "version() misreads"
[ "$(changelog_version "$SRCDIR/debian/changelog")" != 9.0.1 ] ||
    fail "the version check cannot fail"
grep -v ' bftblk_close@' "$SRCDIR/debian/libbftblk1.symbols" \
    >"$TESTDIR/short.symbols"
[ "$(symbols_names "$TESTDIR/short.symbols")" != "$syms" ] ||
    fail "the symbols check cannot fail"
log "ok"
