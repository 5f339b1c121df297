# tests/deps.sh — the Debian 12 packages nfscached is built and tested with
# (sourced by demo.sh, tests/run-all.sh and .ci/run).
BUILD_PKGS="autoconf automake libtool pkg-config make gcc libnfs-dev libev-dev libbsd-dev
libsqlite3-dev libtirpc-dev libinih-dev libsystemd-dev libmicrohttpd-dev libncurses-dev"
DEMO_PKGS="$BUILD_PKGS libnfs-utils nfs-ganesha nfs-ganesha-vfs rpcbind iproute2"
# clang and its fuzzer runtime (clang-14 only recommends it): tests/fuzz/;
# debhelper, dpkg-dev, build-essential, lintian: the Debian package (tests/pkg/)
TEST_PKGS="$DEMO_PKGS tshark qemu-system-x86 busybox-static cpio python3 procps groff-base systemd
clang libclang-rt-dev debhelper dpkg-dev build-essential lintian"

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
