#!/bin/bash
# make install into a scratch DESTDIR (PREFIX=/usr) lays out the tree
# the manual pages and units describe, the units pass
# `systemd-analyze verify`, and make uninstall takes it all away again.
#
# verify checks that every Exec command exists, on this machine's root;
# the installed units name /usr/... paths that exist only under DESTDIR,
# so it runs on copies whose commands point into DESTDIR (a --root would
# need a whole system there).  The paths the units name are checked
# against the DESTDIR tree separately, plugin included.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v systemd-analyze >/dev/null ||
    skip "systemd-analyze is missing (apt-get install systemd)"
require_build

root=$TESTDIR/root
# The build's own flags, so that make finds everything up to date and
# only copies and renders.
san=
if ldd "$SERVER" | grep -q libasan; then
	san=SAN=1
fi
make_install()
{
	make -C "$SRCDIR" --no-print-directory BUILD="$BUILD" $san PREFIX=/usr \
	    DESTDIR="$root" "$@" >>"$TESTDIR/log/make-install.log" 2>&1 ||
	    { cat "$TESTDIR/log/make-install.log"; fail "make $* failed"; }
}
make_install install
plugindir=$(pkg-config --variable=plugindir nbdkit 2>/dev/null || true)
unitdir=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null ||
    true)
[ -n "$unitdir" ] || unitdir=/usr/lib/systemd/system
plugin=${plugindir:-/usr/lib/$(cc -print-multiarch)/nbdkit/plugins}
plugin=$plugin/nbdkit-bftblk-plugin.so
want=(
	/usr/bin/bftblk /usr/sbin/bftblk-server
	/usr/lib/libbftblk.so.1 /usr/lib/libbftblk.so /usr/include/bftblk.h
	/usr/lib/pkgconfig/bftblk.pc
	"$plugin"
	/usr/share/man/man1/nbdkit-bftblk-plugin.1
	/usr/share/man/man5/bftblk.conf.5
	/usr/share/man/man8/bftblk.8 /usr/share/man/man8/bftblk-server.8
	"$unitdir/bftblk-server@.service" "$unitdir/bftblk-nbd.service"
	"$unitdir/bftblk-nbd.socket" /usr/lib/sysusers.d/bftblk.conf
)
for f in "${want[@]}"; do
	[ -e "$root$f" ] || fail "make install did not install $f"
done
# The public header is the one installed: lib/peer.h, shared with the
# server's rebuild, includes common/ headers that are not.
[ "$(ls "$root/usr/include")" = bftblk.h ] ||
    fail "make install installed headers besides bftblk.h:" \
    "$(ls "$root/usr/include" | tr '\n' ' ')"
[ "$(readlink "$root/usr/lib/libbftblk.so")" = libbftblk.so.1 ] ||
    fail "libbftblk.so does not point at libbftblk.so.1"
[ "$(stat -c %a "$root/usr/sbin/bftblk-server")" = 755 ] ||
    fail "bftblk-server is not mode 755"
log "make install laid out ${#want[@]} files"

# The installed library and header build the documentation's example.
PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root/usr/lib/pkgconfig \
    pkg-config --cflags --libs bftblk >"$TESTDIR/pc.out" ||
    fail "pkg-config cannot read bftblk.pc"
# shellcheck disable=SC2046 # pkg-config prints a list of words.
cc -std=c11 -o "$TESTDIR/example" "$SRCDIR/docs/example.c" \
    $(cat "$TESTDIR/pc.out") -Wl,-rpath,"$root/usr/lib" ||
    fail "docs/example.c does not build against the installed library"
log "pkg-config: $(cat "$TESTDIR/pc.out")"

# The installed plugin loads in nbdkit.
nbdkit_env "$root$plugin"
env "${NBDKIT_ENV[@]}" nbdkit --dump-plugin "$root$plugin" \
    >"$TESTDIR/dump.out" 2>&1 ||
    { cat "$TESTDIR/dump.out"; fail "nbdkit cannot load the installed plugin"; }
grep -qx 'name=bftblk' "$TESTDIR/dump.out" ||
    fail "the installed plugin is not bftblk: $(head -3 "$TESTDIR/dump.out")"

# Every absolute path the units' commands name is in the tree, and the
# sysusers line makes the user they run as.
units=$root$unitdir
for u in bftblk-server@.service bftblk-nbd.service; do
	grep -q '^User=bftblk$' "$units/$u" || fail "$u does not run as bftblk"
	for p in $(sed -n 's/^Exec[A-Za-z]*=//p' "$units/$u" |
	    grep -oE '(^| )/[^ ]+' | tr -d ' '); do
		case "$p" in
		/bin/kill) [ -x "$p" ] || fail "$u: $p is missing" ;;
		/usr/bin/nbdkit) [ -x "$(command -v nbdkit)" ] || fail "no nbdkit" ;;
		/etc/*|/var/*) ;;
		*) [ -e "$root$p" ] || fail "$u names $p, not installed" ;;
		esac
	done
done
grep -qE '^u bftblk ' "$root/usr/lib/sysusers.d/bftblk.conf" ||
    fail "sysusers.d/bftblk.conf makes no user bftblk"

mkdir -p "$TESTDIR/units"
cp "$units"/bftblk-* "$TESTDIR/units/"
sed -i -E "s|^(ExecStart=)(/usr/sbin/bftblk-server)|\\1$root\\2|" \
    "$TESTDIR/units/bftblk-server@.service"
grep -q "^ExecStart=$root/usr/sbin/bftblk-server " \
    "$TESTDIR/units/bftblk-server@.service" || fail "substitution failed"
# The manual pages the units name: the installed ones.
(cd "$TESTDIR/units" &&
    MANPATH=$root/usr/share/man:/usr/share/man systemd-analyze verify \
    ./bftblk-server@0.service ./bftblk-server@7.service \
    ./bftblk-nbd.socket ./bftblk-nbd.service) \
    >"$TESTDIR/log/verify.log" 2>&1 ||
    { cat "$TESTDIR/log/verify.log"; fail "systemd-analyze verify failed"; }
if [ -s "$TESTDIR/log/verify.log" ]; then
	cat "$TESTDIR/log/verify.log" >&2
	fail "systemd-analyze verify had something to say"
fi
log "systemd-analyze verify: units clean"

make_install uninstall
left=$(find "$root" -type f -o -type l)
[ -z "$left" ] || fail "make uninstall left: $left"
log "make uninstall removed every file"
log "PASS"
