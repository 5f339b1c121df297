#!/bin/bash
# tests/pkg/deb.sh: the Debian package, built, linted, installed and run (as
# root; TAP output).  From a copy of the configured tree (`make distdir`,
# the release's files; the tree itself is left as it is):
# `dpkg-buildpackage -us -uc -b` (the unit tests run in the build), lintian
# on the result (an error fails, every tag is printed), then
# `apt install ./nfscached_*.deb`.  The installed package: /usr/sbin/nfscached
# -t passes on the shipped /etc/nfscached.conf, a conffile; the unit is
# installed and enabled, runs as the nfscached user, which exists with its
# group, and /var/cache/nfscached belongs to it; the man pages are there,
# compressed; installed again over itself, it keeps an edited conffile.
# Then a read through the INSTALLED nfscached, run as the unit
# runs it (user nfscached, ambient CAP_NET_BIND_SERVICE and CAP_SYS_RESOURCE;
# its upstream connections from reserved ports), in front of a
# ganesha upstream: a file read twice comes back whole, the second time from
# the cache (cache.read.hits up, no upstream READ, says the installed
# nfscachectl).  Last, `apt-get purge` removes it all again, and the user
# and group when the package created them: the machine is left as found.
# A machine where nfscached is installed already is not touched (fails).
#
# Environment: top_srcdir, top_builddir (a configured build tree; default:
# this source tree); NFSCACHED_KEEP_TMP=1 keeps the build and its logs.
# Prints "# package step: N s" (build, lint, install) as a diagnostic.
TEST_TIMEOUT=${TEST_TIMEOUT:-2400}
. "$(dirname "$0")/../lib.sh"

export DEBIAN_FRONTEND=noninteractive
APT_OPTS=(-o DPkg::Lock::Timeout=600 -q -y)
PKG_INSTALLED=0     # installed by this test, not purged yet
HAD_USER=0 HAD_GROUP=0

# purge_pkg: apt-get purge of the package this test installed; then the user
# and group it created, when there were none before.  0 when all went.
purge_pkg() {
    local rc=0
    apt-get "${APT_OPTS[@]}" purge nfscached > "$T_TMP/purge.log" 2>&1 || rc=1
    PKG_INSTALLED=0
    if [ "$HAD_USER" = 0 ] && getent passwd nfscached >/dev/null; then
        userdel nfscached >> "$T_TMP/purge.log" 2>&1 || rc=1
    fi
    if [ "$HAD_GROUP" = 0 ] && getent group nfscached >/dev/null; then
        groupdel nfscached >> "$T_TMP/purge.log" 2>&1 || rc=1
    fi
    return "$rc"
}

# the exit trap: the daemon stopped first, then the package purged if the
# test ended before it did so itself; then the usual clean-up
pkg_cleanup() {
    local rc=$?
    if [ "$BASHPID" = "$$" ]; then
        [ -n "$NFSCACHED_PID" ] && stop_nfscached
        if [ "$PKG_INSTALLED" = 1 ]; then
            purge_pkg || { echo "# apt-get purge nfscached failed:"; sed 's/^/# /' "$T_TMP/purge.log"; }
        fi
    fi
    (exit "$rc")
    t_cleanup
}
trap pkg_cleanup EXIT

# show LOG LINES: the last LINES lines of LOG as diagnostics
show() { diag "--- $1 (last $2 lines):"; tail -n "$2" "$1" | sed 's/^/# /'; }

[ "$(id -u)" = 0 ] || fail_or_skip "the package is installed: run as root"
for cmd in dpkg-buildpackage lintian apt; do
    command -v "$cmd" >/dev/null || fail_or_skip "$cmd is not installed (tests/deps.sh TEST_PKGS)"
done
[ -f "$top_builddir/Makefile" ] || fail_or_skip "no configured tree in $top_builddir (run configure)"
if dpkg-query -W -f='${Status}' nfscached 2>/dev/null | grep -q 'installed'; then
    ok 1 "nfscached is not installed yet (this test installs and purges its own; remove it first)"
    done_testing
fi
getent passwd nfscached >/dev/null && HAD_USER=1
getent group nfscached >/dev/null && HAD_GROUP=1

# ---- build, lint, install -------------------------------------------------
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$top_builddir/Makefile")
src=$T_TMP/build/nfscached-$version
mkdir -p "$T_TMP/build"
t0=$(date +%s)
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top_builddir" --no-print-directory \
    distdir distdir="$src" > "$T_TMP/distdir.log" 2>&1
ok $? "make distdir: a copy of the tree in $src" || { show "$T_TMP/distdir.log" 40; done_testing; }
for f in control rules changelog copyright source/format nfscached.postinst; do
    [ -f "$src/debian/$f" ] || { diag "debian/$f is not in the copy (EXTRA_DIST)"; false; } || break
done
ok $? "debian/ is in the release's files"

(cd "$src" && dpkg-buildpackage -us -uc -b -J2) > "$T_TMP/build.log" 2>&1
ok $? "dpkg-buildpackage -us -uc -b builds the package (log: build.log)" ||
    { show "$T_TMP/build.log" 80; done_testing; }
t_built=$(date +%s)
grep -qE '^(PASS|ok).*test_cache' "$T_TMP/build.log"
ok $? "the build ran the unit tests" || show "$T_TMP/build.log" 40
deb=$(ls "$T_TMP"/build/nfscached_"${version}"_*.deb 2>/dev/null | head -n 1)
changes=$(ls "$T_TMP"/build/nfscached_"${version}"_*.changes 2>/dev/null | head -n 1)
[ -f "$deb" ] && [ -f "$changes" ]
ok $? "the .deb and .changes are there: $(basename "${deb:-none}")" || done_testing

lintian --fail-on error --display-info "$changes" > "$T_TMP/lintian.log" 2>&1
ok $? "lintian: no error"
if [ -s "$T_TMP/lintian.log" ]; then
    diag "--- lintian --display-info $(basename "$changes"):"
    sed 's/^/# /' "$T_TMP/lintian.log"
else
    diag "lintian: no tag at all"
fi
t_linted=$(date +%s)

PKG_INSTALLED=1
(cd "$T_TMP/build" && apt "${APT_OPTS[@]}" install "./$(basename "$deb")") > "$T_TMP/install.log" 2>&1
ok $? "apt install ./$(basename "$deb")" || { show "$T_TMP/install.log" 60; done_testing; }
t_installed=$(date +%s)
diag "package step: $((t_installed - t0)) s (copy and build $((t_built - t0)) s, lintian $((t_linted - t_built)) s, install $((t_installed - t_linted)) s)"
grep -iE 'warning|error' "$T_TMP/install.log" | grep -v 'apt does not have a stable CLI' |
    sed 's/^/# install: /'

# ---- what is installed ----------------------------------------------------
out=$(/usr/sbin/nfscached -t 2>&1)
ok $? "/usr/sbin/nfscached -t passes on the shipped /etc/nfscached.conf" || diag "$out"
grep -q 'server.example' <<<"$out"
ok $? "and reads it (the example upstream, server.example)"
cmp -s /etc/nfscached.conf "$top_srcdir/etc/nfscached.conf"
ok $? "/etc/nfscached.conf is the tree's etc/nfscached.conf"
dpkg-query -W -f='${Conffiles}\n' nfscached | grep -qE '^ /etc/nfscached.conf [0-9a-f]{32}$'
ok $? "/etc/nfscached.conf is a conffile"

unit=/lib/systemd/system/nfscached.service
[ -s "$unit" ]; ok $? "the unit is $unit"
grep -qx 'ExecStart=/usr/sbin/nfscached -f' "$unit"
ok $? "its ExecStart is /usr/sbin/nfscached -f"
grep -qx 'User=nfscached' "$unit" && grep -qx 'Group=nfscached' "$unit"
ok $? "it runs as user and group nfscached"
[ -L /etc/systemd/system/multi-user.target.wants/nfscached.service ]
ok $? "it is enabled (multi-user.target.wants)"

[ -s /usr/lib/sysusers.d/nfscached.conf ]
ok $? "the sysusers.d file is /usr/lib/sysusers.d/nfscached.conf"
pw=$(getent passwd nfscached)
ok $? "the user nfscached exists: $pw"
uid=$(cut -d: -f3 <<<"$pw") gid=$(cut -d: -f4 <<<"$pw")
num_ok "$uid" -lt 1000 "it is a system user (uid $uid)"
is "$(getent group nfscached | cut -d: -f3)" "$gid" "its primary group is the group nfscached"
is "$(cut -d: -f7 <<<"$pw")" /usr/sbin/nologin "it has no login shell"
is "$(stat -c '%U:%G %a' /var/cache/nfscached 2>&1)" "nfscached:nfscached 750" \
    "/var/cache/nfscached belongs to it, mode 750"

for page in man8/nfscached.8 man5/nfscached.conf.5 man8/nfscachectl.8; do
    gzip -t "/usr/share/man/$page.gz" 2>/dev/null
    ok $? "/usr/share/man/$page.gz is installed, compressed"
done
[ -x /usr/bin/nfscachectl ]; ok $? "/usr/bin/nfscachectl is installed"

# the package again over itself (postinst configure of an upgrade): the
# administrator's edit of the conffile stays, the user keeps its uid
echo "# edited by the administrator" >> /etc/nfscached.conf
cp /etc/nfscached.conf "$T_TMP/edited.conf"
(cd "$T_TMP/build" && apt "${APT_OPTS[@]}" install --reinstall "./$(basename "$deb")") \
    > "$T_TMP/reinstall.log" 2>&1
ok $? "apt install --reinstall of the same .deb" || show "$T_TMP/reinstall.log" 40
cmp -s /etc/nfscached.conf "$T_TMP/edited.conf"
ok $? "keeps the edited /etc/nfscached.conf"
is "$(id -u nfscached 2>&1)" "$uid" "and the user's uid"
is "$(stat -c '%U:%G %a' /var/cache/nfscached 2>&1)" "nfscached:nfscached 750" \
    "and the cache directory's owner and mode"

# ---- a read through the installed nfscached, run as the unit runs it ------
NFSCACHED=$T_TMP/nfscached-as-user
NFSCACHECTL=/usr/bin/nfscachectl
# CAP_SYS_RESOURCE only where this machine's bounding set has it (a
# container's may not; systemd would not grant it there either)
caps=+net_bind_service
bnd=$(awk '$1 == "CapBnd:" { print $2 }' /proc/self/status)
if (( (16#$bnd >> 24) & 1 )); then
    caps=$caps,+sys_resource
else
    diag "no CAP_SYS_RESOURCE in the bounding set here: ambient CAP_NET_BIND_SERVICE only"
fi
cat > "$NFSCACHED" <<EOS
#!/bin/sh
exec setpriv --reuid=nfscached --regid=nfscached --clear-groups \\
    --inh-caps=$caps --ambient-caps=$caps /usr/sbin/nfscached "\$@"
EOS
chmod 755 "$NFSCACHED"
# the user reaches its configuration, cache and control socket in T_TMP
chmod 711 "$T_TMP"
mkdir -p "$T_TMP/cache" "$T_TMP/run"
chown nfscached:nfscached "$T_TMP/cache" "$T_TMP/run"
CTL=$T_TMP/run/ctl.sock
setup

pid_user=$(ps -o user= -p "$NFSCACHED_PID" 2>/dev/null | tr -d ' ')
is "$pid_user" nfscached "the installed nfscached runs as user nfscached"
is "$(readlink "/proc/$NFSCACHED_PID/exe")" /usr/sbin/nfscached "it is /usr/sbin/nfscached"
# its connections to the upstream's NFS port: from reserved ports, which
# CAP_NET_BIND_SERVICE alone lets it bind
sports=$(ss -Htn state established "( dport = :$UP_NFS_PORT )" |
    awk '{ n = split($3, a, ":"); print a[n] }' | sort -n | tr '\n' ' ')
[ -n "$sports" ] && [ "$(awk '{ print $NF }' <<<"$sports")" -lt 1024 ]
ok $? "its connections to the upstream come from reserved ports: ${sports:-none}"

head -c 3000000 /dev/urandom > "$EXPORT_DIR/f"
want=$(md5 "$EXPORT_DIR/f")
snap s0
is "$(cat_md5 f)" "$want" "first read through the installed nfscached: md5 right"
snap s1
num_ok "$(d s0 s1 upstream.calls.READ)" -gt 0 "it was fetched from the upstream (upstream.calls.READ)"
is "$(cat_md5 f)" "$want" "second read: md5 right"
snap s2
num_ok "$(d s1 s2 cache.read.hits)" -gt 0 "second read: cache.read.hits rose ($(d s1 s2 cache.read.hits))"
is "$(d s1 s2 upstream.calls.READ)" 0 "second read: no upstream READ"
objs=$(find "$T_TMP/cache/objects" -type f -user nfscached 2>/dev/null | grep -c .)
num_ok "$objs" -gt 0 "the backing file belongs to user nfscached"
stop_nfscached
ok $? "the installed nfscached exits cleanly on SIGTERM"

# ---- purge ----------------------------------------------------------------
purge_pkg
ok $? "apt-get purge nfscached" || show "$T_TMP/purge.log" 30
left=
for f in /usr/sbin/nfscached /usr/bin/nfscachectl /etc/nfscached.conf "$unit" \
    /etc/systemd/system/multi-user.target.wants/nfscached.service \
    /usr/lib/sysusers.d/nfscached.conf /usr/share/man/man8/nfscached.8.gz /var/cache/nfscached; do
    [ -e "$f" ] || [ -L "$f" ] && left="$left $f"
done
is "$left" "" "the purge leaves none of its files"
if [ "$HAD_USER" = 0 ]; then
    getent passwd nfscached >/dev/null
    ok $((!$?)) "nor the user, which was not there before"
fi
done_testing
