#!/bin/bash
# The libvirt <disk> snippet of README.md ("Back a VM disk"), taken from
# the README itself, inside a minimal domain, must validate against
# libvirt's domain schema.  libvirt's daemon is not run here (too heavy
# for the test machines), so this checks the snippet's syntax and
# structure, and vm-disk.sh checks the same disk as a qemu -drive.
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"

command -v virt-xml-validate >/dev/null && command -v xmllint >/dev/null ||
    skip "virt-xml-validate (libvirt-clients) or xmllint is not installed"

readme=$SRCDIR/README.md
disk=$(sed -n '/^```xml$/,/^```$/p' "$readme" | sed '1d;$d')
[ -n "$disk" ] || fail "no xml block found in README.md"
grep -q "<source protocol='nbd'>" <<<"$disk" ||
    fail "README's xml block is not the NBD disk"

dom=$TESTDIR/domain.xml
cat >"$dom" <<XML
<domain type='qemu'>
  <name>bftblk-readme</name>
  <memory unit='MiB'>512</memory>
  <os><type arch='x86_64'>hvm</type></os>
  <devices>
$disk
  </devices>
</domain>
XML
virt-xml-validate "$dom" domain >"$TESTDIR/validate.out" 2>&1 || {
	cat "$TESTDIR/validate.out"
	fail "README's libvirt disk does not validate"
}
log "README's libvirt <disk> validates in a domain: $(cat "$TESTDIR/validate.out")"

# And a broken one must not, so the check can fail.
sed "s/<source protocol='nbd'>/<source protocol='nbdx'>/" "$dom" \
    >"$TESTDIR/bad.xml"
if virt-xml-validate "$TESTDIR/bad.xml" domain >/dev/null 2>&1; then
	fail "virt-xml-validate accepted an invalid protocol"
fi
log "a disk with a bogus protocol is rejected"
