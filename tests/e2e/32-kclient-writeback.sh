#!/bin/bash
# 32-kclient-writeback: the Linux kernel NFS client (Debian 12 kernel in
# qemu) writes 20 MB through nfscached in write-back mode: it copies a
# random file the host made in the export to its /tmp, writes it back as
# wb.bin with `dd conv=fsync`, drops its page cache and reads wb.bin again
# (same md5 in the guest). On the host the export's wb.bin is the source
# byte for byte (cmp), and the counters show the path of the bytes: the
# WRITEs were taken into the cache (cache.write.bytes) and written back
# upstream (cache.writeback.bytes), nothing is left dirty.
TEST_TIMEOUT=${TEST_TIMEOUT:-240}
. "$(dirname "$0")/../lib.sh"
needs_daemon "write-back in nfscached"
needs_kclient
setup -o cache.write_mode=writeback

SIZE=20000000
head -c "$SIZE" /dev/urandom > "$T_TMP/src"
cp "$T_TMP/src" "$EXPORT_DIR/wb.src"
WANT=$(md5 "$T_TMP/src")

snap s0
KCLIENT_LOG=$T_TMP/console.log MNTPORT=${PORT_MNT:-$PORT} VM_TIMEOUT=180 \
    "$KC/run.sh" "$PORT" "$KC/guest-writeback.sh" > "$T_TMP/run.out" 2>&1
ok $? "the guest's copy, dd conv=fsync and read-back through nfscached pass in the VM" ||
    diag "$(tail -n 5 "$T_TMP/run.out")" "--- console:" "$(grep -v '^\[' "$T_TMP/console.log" | tail -n 30)"
snap s1
diag "$(grep -h '^run.sh: VM ran' "$T_TMP/run.out")" \
     "20 MB in the guest: dd conv=fsync $(kc_state write.ms) ms, read back after drop_caches $(kc_state read.ms) ms"

is "$(kc_state src.md5)" "$WANT" "guest: its copy of the source is the host's file (md5)"
is "$(kc_state got.md5)" "$WANT" "guest: wb.bin read back after drop_caches is the source (md5)"
cmp "$T_TMP/src" "$EXPORT_DIR/wb.bin" >"$T_TMP/cmp.out" 2>&1
ok $? "host: the export's wb.bin is the source (cmp)" || diag "$(cat "$T_TMP/cmp.out")"

for c in cache.write.bytes cache.writeback.bytes upstream.calls.WRITE upstream.calls.COMMIT \
    nfs3.calls.WRITE nfs3.calls.COMMIT cache.writeback.errors; do
    diag "$c: $(d s0 s1 "$c")"
done
num_ok "$(d s0 s1 nfs3.calls.WRITE)" -gt 0 "the kernel sent WRITEs"
num_ok "$(d s0 s1 nfs3.calls.COMMIT)" -gt 0 "the kernel sent COMMITs (fsync)"
num_ok "$(d s0 s1 cache.write.bytes)" -ge "$SIZE" "cache.write.bytes >= $SIZE: the bytes of the WRITEs went into the cache"
# the kernel sends FILE_SYNC WRITEs (forwarded as they are) when a flush
# writes all that is dirty at once, which a busy machine makes more likely:
# at least its UNSTABLE ones go by write-back
num_ok "$(d s0 s1 cache.writeback.bytes)" -ge 1048576 "cache.writeback.bytes >= 1 MiB: UNSTABLE WRITEs were written back upstream (write-back, not write-through)"
is "$(d s0 s1 cache.writeback.errors)" 0 "no failed write-back"
is "$(sv s1 cache.dirty.bytes)" 0 "nothing is left dirty"
done_testing
