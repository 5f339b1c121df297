#!/bin/bash
# 73-kclient-commit: the Linux kernel NFS client (Debian 12 kernel in qemu)
# writes 200 MiB with `dd conv=fsync` through nfscached with cache.commit =
# local while the upstream is stopped (tests/kclient/guest-commit.sh): the
# file was created and written once before the stop, and the kernel and
# nfscached (its namespace cache on) keep attributes and ACCESS results for
# an hour, so nothing the writes need goes upstream.  dd succeeds (its COMMIT answered OK from the
# cache's disk); the export holds at most the first 4 MiB and cache.
# unwritten.bytes is the 200 MiB; the upstream started again,
# `nfscachectl flush`: the export file is the pattern (md5) and the
# unwritten gauges are 0.
TEST_TIMEOUT=${TEST_TIMEOUT:-420}
. "$(dirname "$0")/../lib.sh"
needs_daemon "local commit in nfscached"
needs_own_upstream
needs_kclient
TTL=3600
setup -o cache.write_mode=writeback -o cache.commit=local -o cache.dirty_expire_ms=1000 -o cache.metadata=yes \
    -o upstream.timeout_ms=5000 -o cache.acregmin=$TTL -o cache.acregmax=$TTL \
    -o cache.acdirmin=$TTL -o cache.acdirmax=$TTL

SIZE=209715200
LINE="nfscached local commit: the bytes of a COMMIT answered from the cache's disk"
WANT=$(yes "$LINE" | head -c "$SIZE" | md5sum | cut -d' ' -f1)

snap s0
KCLIENT_LOG=$T_TMP/console.log MNTPORT=${PORT_MNT:-$PORT} VM_TIMEOUT=360 \
    MNTOPTS="acregmin=$TTL,acregmax=$TTL,acdirmin=$TTL,acdirmax=$TTL" \
    "$KC/run.sh" "$PORT" "$KC/guest-commit.sh" > "$T_TMP/run.out" 2>&1 &
VM=$!
track "$VM"
# the guest made commit.bin and waits: stop the upstream
for ((i = 0; i < 1800; i++)); do
    [ -n "$(kc_state ready)" ] && break
    kill -0 "$VM" 2>/dev/null || break
    sleep 0.1
done
is "$(kc_state ready)" 1 "guest: commit.bin made and written (4 MiB, dd conv=fsync) with the upstream up"
stop_upstream KILL
is "$(kc_state dd.start)" "" "the upstream is stopped before the guest's dd starts"
for ((i = 0; i < 3000; i++)); do
    [ -n "$(kc_state dd.rc)" ] && break
    kill -0 "$VM" 2>/dev/null || break
    sleep 0.1
done
is "$(kc_state dd.rc)" 0 "guest: dd of 200 MiB conv=fsync succeeds with the upstream stopped ($(kc_state write.ms) ms)" ||
    diag "$(tail -n 5 "$T_TMP/run.out")" "--- console:" "$(grep -v '^\[' "$T_TMP/console.log" | tail -n 30)"
snap s1
num_ok "$(stat -c %s "$EXPORT_DIR/commit.bin")" -le $((4 << 20)) \
    "the export holds at most the first 4 MiB (written back before the stop, or not yet)"
is "$(sv s1 cache.unwritten.bytes)" "$SIZE" "cache.unwritten.bytes is the 200 MiB committed locally"
num_ok "$(d s0 s1 nfs3.calls.COMMIT)" -gt 0 "the kernel sent COMMITs"
start_upstream
ok $? "the upstream is started again"
wait "$VM"
ok $? "the VM run passes" || diag "$(tail -n 5 "$T_TMP/run.out")"
diag "$(grep -h '^run.sh: VM ran' "$T_TMP/run.out")"
for ((i = 0; i < 10; i++)); do
    ctl flush > "$T_TMP/flush.out" 2>&1 && break
    sleep 1
done
ok $? "nfscachectl flush" || diag "$(cat "$T_TMP/flush.out")"
is "$(md5 "$EXPORT_DIR/commit.bin")" "$WANT" "the export file holds the 200 MiB pattern (md5)"
snap s2
for c in cache.write.bytes cache.writeback.bytes upstream.calls.WRITE upstream.calls.COMMIT \
    nfs3.calls.WRITE nfs3.calls.COMMIT cache.writeback.errors; do
    diag "$c: $(d s0 s2 "$c")"
done
is "$(sv s2 cache.unwritten.bytes) $(sv s2 cache.unwritten.oldest_s) $(sv s2 cache.dirty.bytes)" "0 0 0" \
    "unwritten and dirty gauges 0 after the flush"
num_ok "$(d s1 s2 cache.writeback.bytes)" -ge "$(sv s1 cache.unwritten.bytes)" \
    "cache.writeback.bytes: what was unwritten at the end of the outage was written back after it"
done_testing
