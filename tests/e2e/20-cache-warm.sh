#!/bin/bash
# 20-cache-warm: a 64 MiB file read through nfscached with nfs-cp, three
# times.  Cold: the bytes come from the upstream, each byte fetched once and
# written to one backing file (at the same offsets as in the remote file)
# with no more pwrite calls than upstream READ replies.  Warm: no upstream
# READ at all, every READ a hit (no miss, no partial hit), every byte from
# the cache.  After a clean restart on the same cache directory the index
# brings the object back: the third read is again all hits and no upstream
# READ (a revalidating GETATTR is allowed); the extents sample taken at
# start reports that one backing file's FIEMAP extent count.  The copies
# are the export file, byte for byte.  Cold, warm and direct-to-upstream
# times and backing.write.calls per MiB are printed as diagnostics.
TEST_TIMEOUT=${TEST_TIMEOUT:-240}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the read cache of nfscached"
needs_own_upstream
setup

MIB=1048576
SIZE=$((64 * MIB))
NAME=warm64
CACHE_DIR=$T_TMP/cache
head -c "$SIZE" /dev/urandom > "$EXPORT_DIR/$NAME"
WANT=$(md5 "$EXPORT_DIR/$NAME")

# fetch OUT: nfs-cp of the file through the proxy to $T_TMP/OUT; sets T_MS
fetch() {
    local t0
    rm -f "$T_TMP/$1"
    t0=$(now_ms)
    nfs_cp "$(proxy_url "$NAME")" "$T_TMP/$1" > "$T_TMP/$1.log" 2>&1
    ok $? "nfs-cp of the 64 MiB file through nfscached ($1)" || diag "$(tail -n 3 "$T_TMP/$1.log")"
    T_MS=$(( $(now_ms) - t0 ))
    cmp -s "$T_TMP/$1" "$EXPORT_DIR/$NAME"
    ok $? "$1: the copy is the export file, byte for byte" ||
        diag "md5 $(md5 "$T_TMP/$1" 2>&1), want $WANT"
}

# backing_files: the backing files in the cache directory
backing_files() {
    find "$CACHE_DIR/objects" -type f 2>/dev/null |
        grep -E '/objects/[0-9a-f]{2}/[0-9a-f]{16}$' | LC_ALL=C sort
}

# ---- cold ---------------------------------------------------------------
snap s0
fetch cold
t_cold=$T_MS
snap s1
num_ok "$(d s0 s1 cache.read.misses)" -gt 0 "cold: READs missed the cache"
num_ok "$(d s0 s1 upstream.calls.READ)" -gt 0 "cold: READs went upstream"
is "$(d s0 s1 cache.read.bytes_upstream)" "$SIZE" "cold: each byte fetched from the upstream once"
is "$(d s0 s1 backing.write.bytes)" "$SIZE" "cold: each byte written to the backing file once"
up_reads=$(sv s1 upstream.calls.READ)
bw_calls=$(sv s1 backing.write.calls)
num_ok "$bw_calls" -gt 0 "cold: the data went to the backing file"
num_ok "$bw_calls" -le "$up_reads" \
    "cold: backing.write.calls ($bw_calls) <= upstream READ replies ($up_reads)"
is "$(sv s1 cache.objects)" 1 "cold: cache.objects is 1"
is "$(sv s1 cache.bytes)" "$SIZE" "cold: cache.bytes is the file's size"
files=$(backing_files)
is "$(grep -c . <<<"$files")" 1 "cold: one backing file under objects/XX/<16 hex digits>"
bf=$(head -n 1 <<<"$files")
if [ -n "$bf" ]; then
    cmp -s "$bf" "$EXPORT_DIR/$NAME"
    ok $? "cold: the backing file holds the file's bytes at their offsets"
else
    ok 1 "cold: the backing file holds the file's bytes at their offsets"
fi

# ---- warm ---------------------------------------------------------------
fetch warm
t_warm=$T_MS
snap s2
is "$(d s1 s2 upstream.calls.READ)" 0 "warm: no upstream READ"
is "$(d s1 s2 cache.read.misses)" 0 "warm: no miss"
is "$(d s1 s2 cache.read.partial_hits)" 0 "warm: no partial hit"
client_reads=$(d s1 s2 nfs3.calls.READ)
num_ok "$client_reads" -gt 0 "warm: the client sent READs ($client_reads)"
is "$(d s1 s2 cache.read.hits)" "$client_reads" "warm: every READ was a hit"
is "$(d s1 s2 cache.read.bytes_local)" "$SIZE" "warm: every byte came from the cache"
is "$(d s1 s2 cache.read.bytes_upstream)" 0 "warm: no byte from the upstream"
is "$(d s1 s2 backing.write.calls)" 0 "warm: nothing written to the backing file"
num_ok "$(( $(d s1 s2 backing.read.calls) + $(d s1 s2 backing.sendfile.calls) ))" -gt 0 \
    "warm: the backing file was read (pread or sendfile)"

# ---- direct, for comparison ---------------------------------------------
t_direct=
if [ -n "$UP_NFS_PORT" ]; then
    t0=$(now_ms)
    nfs_cp "$(direct_url "$NAME")" "$T_TMP/direct" >/dev/null 2>&1 && t_direct=$(( $(now_ms) - t0 ))
    rm -f "$T_TMP/direct"
fi
diag "64 MiB through nfscached: cold $t_cold ms, warm $t_warm ms; direct from the upstream ${t_direct:-?} ms"
diag "backing.write.calls per MiB fetched: $(awk -v c="$bw_calls" 'BEGIN { printf "%.2f", c / 64 }')" \
     "(upstream READs $up_reads, backing writes $bw_calls)"

# ---- restart on the same cache directory ---------------------------------
stop_nfscached
ok $? "nfscached exits cleanly on SIGTERM (before the restart)"
[ -s "$CACHE_DIR/index.sqlite" ]
ok $? "the index is on disk: $CACHE_DIR/index.sqlite"
if ! start_nfscached 2>"$T_TMP/start.err"; then
    ok 1 "nfscached starts again on the same cache directory"
    diag "$(cat "$T_TMP/start.err")"
    done_testing
fi
ok 0 "nfscached starts again on the same cache directory"
snap s3
is "$(sv s3 cache.objects)" 1 "restart: the object is back (cache.objects 1)"
is "$(sv s3 cache.bytes)" "$SIZE" "restart: its bytes are back (cache.bytes)"
# the extents sample taken at start (a worker job) counts the one backing
# file: its 99th percentile is that file's FIEMAP extent count
want_ext=$(filefrag "$bf" 2>/dev/null | awk '{ print $2 }')
for _ in $(seq 50); do
    [ "$(stat_value backing.extents_per_file_p99)" != 0 ] && break
    sleep 0.1
done
stat_ok backing.extents_per_file_p99 -ge 1
is "$(stat_value backing.extents_per_file_p99)" "$want_ext" \
    "restart: backing.extents_per_file_p99 is the file's extent count (filefrag: $want_ext)"
fetch restarted
snap s4
is "$(d s3 s4 upstream.calls.READ)" 0 "restart: no upstream READ"
is "$(d s3 s4 cache.read.misses)" 0 "restart: no miss"
client_reads=$(d s3 s4 nfs3.calls.READ)
num_ok "$client_reads" -gt 0 "restart: the client sent READs ($client_reads)"
is "$(d s3 s4 cache.read.hits)" "$client_reads" "restart: every READ was a hit"
is "$(d s3 s4 cache.read.bytes_local)" "$SIZE" "restart: every byte came from the cache"
diag "after the restart: $T_MS ms, upstream GETATTRs $(d s3 s4 upstream.calls.GETATTR)"
done_testing
