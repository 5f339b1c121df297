#!/bin/bash
# 01-roundtrip: files of 0, 1 and 4097 bytes and of 100 MiB go up and down
# through nfscached with nfs-cp (down also with nfs-cat) and are byte for byte
# the files in the upstream's export directory; the counters show the calls.
. "$(dirname "$0")/../lib.sh"
setup

SRC=$T_TMP/src
mkdir -p "$SRC" "$T_TMP/got"
for n in 0 1 4097; do head -c "$n" /dev/urandom > "$SRC/f$n"; done
head -c $((100 << 20)) /dev/urandom > "$SRC/big"
mounts=0        # client mounts through the proxy: one MNT each

for f in f0 f1 f4097 big; do
    want=$(md5 "$SRC/$f")
    t0=$(now_ms)
    nfs_cp "$SRC/$f" "$(proxy_url "up-$f")" >/dev/null
    ok $? "nfs-cp upload of $f through the proxy"
    t_up=$(( $(now_ms) - t0 ))
    mounts=$((mounts + 1))
    is "$(md5 "$EXPORT_DIR/up-$f")" "$want" "uploaded $f is identical in the export"

    cp "$SRC/$f" "$EXPORT_DIR/down-$f"
    t0=$(now_ms)
    nfs_cp "$(proxy_url "down-$f")" "$T_TMP/got/$f" >/dev/null
    ok $? "nfs-cp download of $f through the proxy"
    t_down=$(( $(now_ms) - t0 ))
    mounts=$((mounts + 1))
    is "$(md5 "$T_TMP/got/$f")" "$want" "downloaded $f is identical"

    nfs_cat "$(proxy_url "down-$f")" > "$T_TMP/got/$f.cat"
    ok $? "nfs-cat of $f through the proxy"
    mounts=$((mounts + 1))
    is "$(md5 "$T_TMP/got/$f.cat")" "$want" "nfs-cat output of $f is identical"
done
diag "100 MiB through nfscached: upload $t_up ms, download $t_down ms"

if [ -n "$UP_NFS_PORT" ]; then
    t0=$(now_ms)
    nfs_cp "$SRC/big" "$(direct_url direct-big)" >/dev/null
    t1=$(now_ms)
    nfs_cp "$(direct_url direct-big)" "$T_TMP/got/direct-big" >/dev/null
    t2=$(now_ms)
    diag "100 MiB direct to the upstream: upload $((t1 - t0)) ms, download $((t2 - t1)) ms"
fi

stat_ok mount3.calls.MNT -eq "$mounts"
stat_ok nfs3.calls.WRITE -ge 100
stat_ok upstream.calls.WRITE -gt 0
stat_ok nfs3.calls.READ -ge 200
done_testing
