#!/bin/bash
# 23-kclient-cache: the Linux kernel NFS client (Debian 12 kernel in qemu)
# reads a 20 MB file, made on the host in the export, through nfscached
# twice, with `echo 3 > /proc/sys/vm/drop_caches` in between. Both reads are
# the host's file (md5). The guest tells the host when the first read is done
# (it creates kcache.cold-done through the mount) and waits for the host
# (kcache.go, seen thanks to lookupcache=positive) before the second read, so
# the host's counter snapshots split the session exactly: the first read
# fetched from the upstream; the second reached nfscached (nfs3.calls.READ
# rose) and was answered wholly from the cache: every READ a hit, no upstream
# READ, no byte from the upstream.
TEST_TIMEOUT=${TEST_TIMEOUT:-480}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the read cache of nfscached"
needs_kclient
setup

SIZE=20000000
F=$EXPORT_DIR/kcache.bin
head -c "$SIZE" /dev/urandom > "$F"
WANT=$(md5 "$F")

snap s0
KCLIENT_LOG=$T_TMP/console.log MNTPORT=${PORT_MNT:-$PORT} MNTOPTS=lookupcache=positive VM_TIMEOUT=360 \
    "$KC/run.sh" "$PORT" "$KC/guest-cache.sh" > "$T_TMP/run.out" 2>&1 &
RUN_PID=$!
track "$RUN_PID"

# the first read is over when the guest's marker appears in the export
deadline=$((SECONDS + 360))
while [ ! -e "$EXPORT_DIR/kcache.cold-done" ] && [ "$SECONDS" -lt "$deadline" ] &&
    kill -0 "$RUN_PID" 2>/dev/null; do
    sleep 0.1
done
[ -e "$EXPORT_DIR/kcache.cold-done" ]
ok $? "the guest finished its first read (kcache.cold-done)"
snap s1
: > "$EXPORT_DIR/kcache.go"
wait "$RUN_PID"
rc=$?
snap s2
ok "$rc" "the guest's two reads through nfscached pass in the VM" ||
    diag "$(tail -n 5 "$T_TMP/run.out")" "--- console:" "$(grep -v '^\[' "$T_TMP/console.log" | tail -n 30)"
diag "$(grep -h '^run.sh: VM ran' "$T_TMP/run.out")" \
     "20 MB in the guest: cold read $(kc_state cold.ms) ms, warm read $(kc_state warm.ms) ms"

is "$(kc_state cold.md5)" "$WANT" "first read: the host's file (md5)"
is "$(kc_state warm.md5)" "$WANT" "second read, after drop_caches: the host's file (md5)"

num_ok "$(d s0 s1 nfs3.calls.READ)" -gt 0 "first read: the kernel sent READs"
num_ok "$(d s0 s1 upstream.calls.READ)" -gt 0 "first read: READs went upstream"
num_ok "$(d s0 s1 cache.read.misses)" -gt 0 "first read: cache misses"
num_ok "$(d s0 s1 cache.read.bytes_upstream)" -ge "$SIZE" "first read: the whole file came from the upstream"
diag "first read: $(d s0 s1 nfs3.calls.READ) READs from the kernel, $(d s0 s1 upstream.calls.READ) upstream, $(d s0 s1 cache.read.bytes_upstream) bytes fetched"

client_reads=$(d s1 s2 nfs3.calls.READ)
num_ok "$client_reads" -gt 0 "second read: the kernel sent READs ($client_reads; its page cache was dropped)"
is "$(d s1 s2 upstream.calls.READ)" 0 "second read: no upstream READ"
is "$(d s1 s2 cache.read.misses)" 0 "second read: no miss"
is "$(d s1 s2 cache.read.hits)" "$client_reads" "second read: every READ a hit"
is "$(d s1 s2 cache.read.bytes_upstream)" 0 "second read: no byte from the upstream"
num_ok "$(d s1 s2 cache.read.bytes_local)" -ge "$SIZE" "second read: the whole file from the cache"
diag "second read: upstream GETATTRs $(d s1 s2 upstream.calls.GETATTR)"
done_testing
