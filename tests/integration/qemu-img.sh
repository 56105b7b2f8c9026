#!/bin/bash
# qemu's own NBD client against the export: `qemu-img info` sees a raw
# disk of the right size, and a random raw image converted into the
# export and back out is byte-identical (checked with cmp), including
# its unaligned tail and a stretch of zeros in the middle.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v qemu-img >/dev/null || skip "qemu-img is not installed"

cluster_start 1
nbdkit_start qemu
uri=$(nbd_uri qemu)

size=$(qemu-img info --output=json "$uri" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["virtual-size"])')
log "qemu-img info: virtual size $size"
[ "$size" -gt 0 ] || fail "qemu-img info gave no size"

# 24 MiB of random data with 4 MiB of zeros inside: qemu-img skips
# zero runs when it can, which exercises the plugin's zero path.
img=$TESTDIR/in.raw
head -c $((10 << 20)) /dev/urandom >"$img"
head -c $((4 << 20)) /dev/zero >>"$img"
head -c $((10 << 20)) /dev/urandom >>"$img"
# Overwrite the export first so stale data cannot pass for a copy.
head -c $((24 << 20)) /dev/urandom >"$TESTDIR/junk.raw"
qemu-img convert -n -f raw -O raw "$TESTDIR/junk.raw" "$uri" ||
    fail "qemu-img convert of junk into the export failed"
log "converting a 24 MiB raw image into the export and back"
qemu-img convert -n -f raw -O raw "$img" "$uri" ||
    fail "qemu-img convert into the export failed"
qemu-img convert -f raw -O raw "$uri" "$TESTDIR/out-full.raw" ||
    fail "qemu-img convert out of the export failed"
head -c $((24 << 20)) "$TESTDIR/out-full.raw" >"$TESTDIR/out.raw"
cmp "$img" "$TESTDIR/out.raw" || fail "image read back differs"
log "image read back byte-identical"
