#!/bin/bash
# `make install DESTDIR=...` from the build tree: binaries, configuration,
# systemd unit, sysusers.d file and man pages at the configured paths; an edited configuration
# survives a second install and `make uninstall`; the installed unit passes
# `systemd-analyze verify`; the man pages render without warnings.
. "$(dirname "$0")/../lib.sh"

root=$T_TMP/root
[ -f "$top_builddir/Makefile" ] || fail_or_skip "no Makefile in $top_builddir"

# mk ARGS...: make in the build tree, not as part of the make running us
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top_builddir" --no-print-directory "$@"; }

# the configured directories, as the Makefile expands them
dirs=$(mk -s -f Makefile -f - nfscached-print-dirs <<'EOF'
nfscached-print-dirs:
	@echo "sbindir=$(sbindir)"
	@echo "bindir=$(bindir)"
	@echo "sysconfdir=$(sysconfdir)"
	@echo "mandir=$(mandir)"
	@echo "unitdir=$(systemdsystemunitdir)"
	@echo "sysusersdir=$(sysusersdir)"
EOF
)
ok $? "the Makefile names the installation directories"
sbindir=$(sed -n 's/^sbindir=//p' <<<"$dirs")
bindir=$(sed -n 's/^bindir=//p' <<<"$dirs")
sysconfdir=$(sed -n 's/^sysconfdir=//p' <<<"$dirs")
mandir=$(sed -n 's/^mandir=//p' <<<"$dirs")
unitdir=$(sed -n 's/^unitdir=//p' <<<"$dirs")
sysusersdir=$(sed -n 's/^sysusersdir=//p' <<<"$dirs")
diag "sbindir $sbindir, bindir $bindir, sysconfdir $sysconfdir, mandir $mandir, unit dir ${unitdir:-(none)}, sysusers.d ${sysusersdir:-(none)}"
conf=$root$sysconfdir/nfscached.conf

mk install DESTDIR="$root" > "$T_TMP/install.log" 2>&1
ok $? "make install DESTDIR=... succeeds" || diag "$(tail -n 20 "$T_TMP/install.log")"

[ -x "$root$sbindir/nfscached" ]; ok $? "nfscached is in sbindir"
[ -x "$root$bindir/nfscachectl" ]; ok $? "nfscachectl is in bindir"
is "$("$root$sbindir/nfscached" -V)" "$("$NFSCACHED" -V)" "the installed nfscached runs"
cmp -s "$conf" "$top_srcdir/etc/nfscached.conf"; ok $? "nfscached.conf is installed into sysconfdir"
"$root$sbindir/nfscached" -t -c "$conf" >/dev/null 2>&1; ok $? "the installed configuration passes nfscached -t"
for page in man8/nfscached.8 man5/nfscached.conf.5 man8/nfscachectl.8; do
    [ -s "$root$mandir/$page" ]; ok $? "$page is in mandir"
done

unit=$root$unitdir/nfscached.service
if [ -n "$unitdir" ]; then
    [ -s "$unit" ]; ok $? "nfscached.service is in systemd's unit directory"
    grep -qx "ExecStart=$sbindir/nfscached -f" "$unit"; ok $? "its ExecStart is the installed nfscached: $(grep ^ExecStart= "$unit")"
    grep -q '@[a-z_]*@' "$unit"; ok $((!$?)) "no substitution is left in the unit"
    grep -qx 'User=nfscached' "$unit" && grep -qx 'Group=nfscached' "$unit"
    ok $? "the unit runs as user and group nfscached"
else
    skip "nfscached.service is installed" "configured --with-systemdsystemunitdir=no"
fi
sysusers=$root$sysusersdir/nfscached.conf
if [ -n "$sysusersdir" ]; then
    cmp -s "$sysusers" "$top_srcdir/etc/nfscached.sysusers"
    ok $? "etc/nfscached.sysusers is installed as $sysusersdir/nfscached.conf"
    if command -v systemd-sysusers >/dev/null; then
        # what systemd-sysusers would create, in a root of its own
        mkdir -p "$T_TMP/sysroot/etc"
        out=$(systemd-sysusers --root="$T_TMP/sysroot" "$sysusers" 2>&1)
        ok $? "systemd-sysusers takes it" || diag "$out"
        grep -q '^nfscached:x:[0-9]*:[0-9]*:.*:/usr/sbin/nologin$' "$T_TMP/sysroot/etc/passwd" &&
            grep -q '^nfscached:x:' "$T_TMP/sysroot/etc/group"
        ok $? "and makes the system user and group nfscached" || diag "$(cat "$T_TMP/sysroot/etc/passwd" 2>&1)"
    else
        fail_or_skip "systemd-sysusers is not installed (Debian: systemd)"
    fi
else
    skip "the sysusers.d file is installed" "configured --with-sysusersdir=no"
fi

# the administrator's configuration is never overwritten
echo "# edited by the administrator" >> "$conf"
cp "$conf" "$T_TMP/edited.conf"
mk install DESTDIR="$root" > "$T_TMP/install2.log" 2>&1
ok $? "a second make install succeeds" || diag "$(tail -n 20 "$T_TMP/install2.log")"
cmp -s "$conf" "$T_TMP/edited.conf"; ok $? "and keeps the edited nfscached.conf"
grep -q "nfscached.conf exists: kept" "$T_TMP/install2.log"; ok $? "and says so"

mk uninstall DESTDIR="$root" > "$T_TMP/uninstall.log" 2>&1
ok $? "make uninstall succeeds" || diag "$(tail -n 20 "$T_TMP/uninstall.log")"
[ ! -e "$root$sbindir/nfscached" ] && [ ! -e "$root$bindir/nfscachectl" ] &&
    [ ! -e "$root$mandir/man8/nfscached.8" ] && [ ! -e "$unit" ] && [ ! -e "$sysusers" ]
ok $? "and removes the binaries, man pages, unit and sysusers.d file"
cmp -s "$conf" "$T_TMP/edited.conf"; ok $? "but keeps the edited nfscached.conf"
rm -f "$conf"
mk install DESTDIR="$root" > "$T_TMP/install3.log" 2>&1 && mk uninstall DESTDIR="$root" >> "$T_TMP/install3.log" 2>&1
ok $? "install and uninstall again" || diag "$(tail -n 20 "$T_TMP/install3.log")"
[ ! -e "$conf" ]; ok $? "an unchanged nfscached.conf is removed by make uninstall"
left=$(find "$root" -type f)
is "$left" "" "nothing else is left behind"

mk install DESTDIR="$root" > "$T_TMP/install4.log" 2>&1
ok $? "install once more, for the checks below"

# the unit as systemd reads it, run from the build tree
if [ -z "$unitdir" ]; then
    skip "systemd-analyze verify" "no unit installed"
elif ! command -v systemd-analyze >/dev/null; then
    fail_or_skip "systemd-analyze is not installed (Debian: systemd)"
else
    mkdir -p "$T_TMP/unit"
    sed "s|^ExecStart=$sbindir/nfscached|ExecStart=$NFSCACHED|" "$unit" > "$T_TMP/unit/nfscached.service"
    grep -q "^ExecStart=$NFSCACHED -f" "$T_TMP/unit/nfscached.service"
    ok $? "the copy's ExecStart is the built nfscached"
    # Documentation=man:... pages are looked up in the installed mandir
    out=$(cd "$T_TMP/unit" && MANPATH=$root$mandir timeout 60 systemd-analyze verify nfscached.service 2>&1)
    rc=$?
    is "$rc:$out" "0:" "systemd-analyze verify: no complaint"
fi

# the man pages render without warnings
for page in man8/nfscached.8 man5/nfscached.conf.5 man8/nfscachectl.8; do
    f=$root$mandir/$page
    if command -v groff >/dev/null; then
        out=$(groff -man -ww -z "$f" 2>&1)
        is "$?:$out" "0:" "groff -man -ww renders $page without warnings"
    else
        fail_or_skip "groff is not installed (Debian: groff-base)"
    fi
    if command -v man >/dev/null; then
        out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
        is "$?:$out" "0:" "man -l $page: no warnings"
    fi
done
if command -v mandoc >/dev/null; then
    out=$(mandoc -T lint -W warning "$root$mandir"/man*/nfscache*.[58] 2>&1)
    is "$?:$out" "0:" "mandoc -T lint: no warnings"
fi

done_testing
