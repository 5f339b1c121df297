#!/bin/bash
# setup.sh: prepares the kernel-client VM of run.sh, idempotently.
#
# Fetches the Debian 12 cloud kernel package with `apt-get download` (it is
# never installed on the host), unpacks only vmlinuz and the modules an NFSv3
# client over virtio-net needs, and builds a busybox initramfs around init.
# Everything goes to $KCLIENT_WORK (default /tmp/nfscached-kclient):
#   kernel/vmlinuz, kernel/modules/*.ko   the kernel and its modules
#   base.cpio.gz                          busybox, modules, /init
# Needs: apt-get, dpkg-deb, busybox-static, cpio, gzip; root (mknod).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=${KCLIENT_WORK:-/tmp/nfscached-kclient}
FLAVOR=cloud-amd64
# load order: the package ships no modules.dep
MODULES="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci
failover net_failover virtio_net sunrpc grace lockd netfs fscache nfs nfs_acl nfsv3"
mkdir -p "$W"

for tool in busybox cpio dpkg-deb gzip; do
    command -v "$tool" >/dev/null || { echo "setup.sh: $tool is not installed" >&2; exit 1; }
done
# (grep without -q: an early exit would SIGPIPE busybox under pipefail)
busybox --list | grep -x nc >/dev/null || { echo "setup.sh: busybox has no nc applet (busybox-static)" >&2; exit 1; }

kernel_pkg() {
    apt-cache depends "linux-image-$FLAVOR" 2>/dev/null |
        awk '/Depends: linux-image-[0-9]/ && !found { print $2; found = 1 }'
}

if [ ! -f "$W/kernel/vmlinuz" ]; then
    pkg=$(kernel_pkg)
    [ -n "$pkg" ] || { apt-get update -qq >&2; pkg=$(kernel_pkg); }
    [ -n "$pkg" ] || { echo "setup.sh: no linux-image-$FLAVOR in apt" >&2; exit 1; }
    rm -rf "$W/dl" "$W/unpack" && mkdir -p "$W/dl" "$W/unpack"
    (cd "$W/dl" && { apt-get download "$pkg-unsigned" || apt-get download "$pkg"; }) >&2
    deb=$(ls "$W"/dl/*.deb | head -n 1)
    patterns=("./boot/vmlinuz-*")
    for m in $MODULES; do patterns+=("*/$m.ko"); done
    # a module built into this kernel is simply not found: not an error here
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$W/unpack" --wildcards "${patterns[@]}" 2>/dev/null || true
    mkdir -p "$W/kernel.new/modules"
    mv "$W"/unpack/boot/vmlinuz-* "$W/kernel.new/vmlinuz"
    find "$W/unpack" -name '*.ko' -exec mv {} "$W/kernel.new/modules/" \;
    basename "$deb" > "$W/kernel.new/package"
    rm -rf "$W/kernel" "$W/dl" "$W/unpack"
    mv "$W/kernel.new" "$W/kernel"
fi

# The initramfs is rebuilt when init, busybox or the module set changes.
stamp=$(cat "$HERE/init" /bin/busybox "$W/kernel/package" | md5sum | cut -d' ' -f1)
if [ "$(cat "$W/base.stamp" 2>/dev/null)" != "$stamp" ] || [ ! -f "$W/base.cpio.gz" ]; then
    st=$W/stage
    rm -rf "$st" && mkdir -p "$st"/{bin,sbin,dev,proc,sys,tmp,mnt,lib/modules}
    cp /bin/busybox "$st/bin/busybox"
    cp "$HERE/init" "$st/init" && chmod 755 "$st/init"
    cp "$W"/kernel/modules/*.ko "$st/lib/modules/"
    echo "$MODULES" | tr ' ' '\n' | grep . > "$st/lib/modules/order"
    mknod -m 600 "$st/dev/console" c 5 1
    mknod -m 666 "$st/dev/null" c 1 3
    (cd "$st" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) > "$W/base.cpio.gz.new"
    mv "$W/base.cpio.gz.new" "$W/base.cpio.gz"
    echo "$stamp" > "$W/base.stamp"
    rm -rf "$st"
fi
echo "kernel: $W/kernel/vmlinuz ($(cat "$W/kernel/package")), initramfs: $W/base.cpio.gz"
