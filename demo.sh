#!/bin/bash
# demo.sh — nfscached's main job, end to end, on one Debian 12 machine (root):
# installs what it needs, builds, starts a throwaway nfs-ganesha upstream on
# loopback and nfscached in front of it, copies a file out through nfscached
# twice (cold, then from the cache) and one in, with the libnfs tools, and
# prints `nfscachectl status` and `stats`.
# Everything runs under a temporary directory and is stopped at the end.
set -u
cd "$(dirname "$0")" || exit 1

. tests/deps.sh
install_missing $DEMO_PKGS || exit 1
if [ ! -x ./nfscached ] || [ ! -x ./nfscachectl ]; then
    echo "== building"
    { [ -f Makefile ] || { autoreconf -fi && ./configure; }; } >/dev/null && make -j2 >/dev/null || exit 1
fi

top_srcdir=$PWD top_builddir=$PWD
. tests/lib.sh

echo "== starting an nfs-ganesha upstream on loopback"
start_upstream || exit 1
echo "   upstream: nfs://127.0.0.1/export (NFS port $UP_NFS_PORT, MOUNT port $UP_MNT_PORT), export dir $EXPORT_DIR"
echo "== starting nfscached in front of it"
start_nfscached || exit 1
echo "   nfscached: 127.0.0.1:$PORT (NFS and MOUNT), control socket $CTL"

head -c 64M /dev/urandom > "$EXPORT_DIR/remote.bin"
echo "== nfs-cp a 64 MiB file of the export out through nfscached, twice"
t0=$(now_ms); nfs_cp "$(proxy_url remote.bin)" "$T_TMP/cold.bin" || exit 1; t1=$(now_ms)
before=$(ctl stats | awk '$1 == "upstream.calls.READ" { print $2 }')
nfs_cp "$(proxy_url remote.bin)" "$T_TMP/warm.bin" || exit 1; t2=$(now_ms)
after=$(ctl stats | awk '$1 == "upstream.calls.READ" { print $2 }')
echo "   cold (fetched from the upstream): $((t1 - t0)) ms, warm (from the cache): $((t2 - t1)) ms"
echo "   upstream READs for the warm copy: $((after - before))"
echo "   md5 in export $(md5 "$EXPORT_DIR/remote.bin"), cold copy $(md5 "$T_TMP/cold.bin"), warm copy $(md5 "$T_TMP/warm.bin")"

head -c 16M /dev/urandom > "$T_TMP/file.bin"
echo "== nfs-cp 16 MiB into the export through nfscached (taken locally, written back at COMMIT)"
nfs_cp "$T_TMP/file.bin" "$(proxy_url file.bin)" || exit 1
echo "   md5 source $(md5 "$T_TMP/file.bin"), in export $(md5 "$EXPORT_DIR/file.bin")"
echo "== nfs-ls through nfscached"
nfs_ls "$(proxy_url)"
echo "== nfscachectl status"
ctl status
echo "== nfscachectl stats (non-zero)"
ctl stats | awk '$2 != 0'
[ "$(md5 "$EXPORT_DIR/remote.bin")" = "$(md5 "$T_TMP/warm.bin")" ] &&
    [ "$(md5 "$T_TMP/file.bin")" = "$(md5 "$EXPORT_DIR/file.bin")" ] || { echo "MISMATCH"; exit 1; }
T_DONE=1
echo "== done; stopping nfscached and the upstream"
