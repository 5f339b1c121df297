# tests/deps.sh — the Debian 12 packages nfscached is built and tested with
# (sourced by demo.sh, tests/run-all.sh and .ci/run).
BUILD_PKGS="autoconf automake libtool pkg-config make gcc libnfs-dev libev-dev libbsd-dev
libsqlite3-dev libtirpc-dev libinih-dev libsystemd-dev libmicrohttpd-dev libncurses-dev"
DEMO_PKGS="$BUILD_PKGS libnfs-utils nfs-ganesha nfs-ganesha-vfs rpcbind iproute2"
# clang and its fuzzer runtime (clang-14 only recommends it): tests/fuzz/;
# debhelper, dpkg-dev, build-essential, lintian: the Debian package (tests/pkg/)
TEST_PKGS="$DEMO_PKGS tshark qemu-system-x86 busybox-static cpio python3 procps groff-base systemd
clang libclang-rt-dev curl tmux debhelper dpkg-dev build-essential lintian"

# install_missing PKG...: apt-get install those not installed yet (root).
install_missing() {
    local p missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$p")
    done
    [ ${#missing[@]} = 0 ] && return 0
    echo "=== installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # tshark: no setuid dumpcap, no question asked
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get -o DPkg::Lock::Timeout=600 update -q &&
        apt-get -o DPkg::Lock::Timeout=600 install -y -q "${missing[@]}"
}

# promtool_fetch: prints the path of promtool (tests/e2e/87-metrics.sh).  It
# comes from Debian's prometheus package, unpacked, never installed (the
# package would start a Prometheus server), into NFSCACHED_TOOLS_CACHE
# (default ~/.cache/nfscached); the first call downloads the package with
# `apt-get download`, after an `apt-get update` when the lists lack it.
# 1 with the reason on stderr when it cannot.
promtool_fetch() {
    local dir=${NFSCACHED_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nfscached}/prometheus
    local tmp
    if [ ! -x "$dir/usr/bin/promtool" ]; then
        mkdir -p "${dir%/*}" && tmp=$(mktemp -d "$dir.XXXXXX") || return 1
        if ! (cd "$tmp" && { apt-get download -q prometheus 2>/dev/null ||
                             { apt-get -o DPkg::Lock::Timeout=600 update -q &&
                               apt-get download -q prometheus; }; }) >&2 ||
           ! dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/root" ||
           ! { [ -x "$dir/usr/bin/promtool" ] || mv -T "$tmp/root" "$dir"; }; then
            rm -rf "$tmp"
            echo "cannot fetch promtool from the prometheus package" >&2
            return 1
        fi
        rm -rf "$tmp"
    fi
    echo "$dir/usr/bin/promtool"
}
