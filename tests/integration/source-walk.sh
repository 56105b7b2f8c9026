#!/bin/bash
# README's walk through the source names every source file of lib/,
# server/, common/, admin/, nbd-plugin/ and docs/ in its directory's
# table, and no file that does not exist (tests/tools/check-walk.py).
# A file added or removed without the walk following fails here.  The
# checker is also run on a README whose walk lost a row and gained a
# row for a missing file, so it can fail.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CHECK=$SRCDIR/tests/tools/check-walk.py
python3 "$CHECK" "$SRCDIR" >"$TESTDIR/walk.out" 2>&1 ||
    fail "$(cat "$TESTDIR/walk.out")"
log "$(cat "$TESTDIR/walk.out")"

# The same tree with a doctored README: one row gone, one row invented.
copy=$TESTDIR/tree
mkdir -p "$copy"
for d in lib server common admin nbd-plugin docs; do
	cp -r "$SRCDIR/$d" "$copy/"
done
sed -e '/^| `lease.c`, `lease_int.h` |/d' \
    -e 's/^| `drop.c`, `drop_int.h` |/| `drop.c`, `drop_int.h`, `gone.c` |/' \
    "$SRCDIR/README.md" >"$copy/README.md"
if python3 "$CHECK" "$copy" >"$TESTDIR/walk-bad.out" 2>&1; then
	fail "the checker passed a walk without lease.c: $(cat "$TESTDIR/walk-bad.out")"
fi
grep -q "not in README's source walk: lib/lease.c" "$TESTDIR/walk-bad.out" ||
    fail "the checker missed lib/lease.c: $(cat "$TESTDIR/walk-bad.out")"
grep -q "does not exist: lib/gone.c" "$TESTDIR/walk-bad.out" ||
    fail "the checker missed lib/gone.c: $(cat "$TESTDIR/walk-bad.out")"
log "ok"
