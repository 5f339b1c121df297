#!/bin/bash
# 82-resident: objects resident on demand.  N tiny files (aged a day) read
# through nfscached (rpc.py readmany: LOOKUPs, then one READ each, 32 calls in
# flight) with cache.resident_max = R, far below N: the index holds all N
# objects, memory at most R.  Reading all of them again is right (the md5 of
# every file's bytes in name order is the export's) and comes from the cache:
# no upstream READ; the objects no longer in memory are found in the index
# (cache.index.lookups rises by at least N - R: whatever the order, only R
# can still be in memory); cache.objects.resident, sampled every 0.2 s during
# the re-read, is never above R plus the 32 objects of calls in flight; cache.objects and cache.bytes stay N and
# N * SIZE.
# Memory: the re-read brings every object through memory again, R at a
# time, so it adds almost nothing to the RSS after the first read: at most
# REREAD_GROWTH_MAX_KB (4 MiB; 8 MiB for an ASan build, whose quarantine
# and redzones take what the objects leave behind; what it adds is mostly
# the page cache of the index's second connection), where all N objects
# in memory would add about 400 bytes each.  The first read holds more
# objects for a while (a new object stays in memory until a batch recorded
# it: a batch's worth of them) and the heap keeps what it once took, so the
# growth from the start is printed beside that of a start with the default
# resident_max on the same cache, every object in memory, not asserted
# (20,000 objects of 64 bytes, -O2: 11 MiB against 15 MiB; ASan: 29
# against 31 MiB).
TEST_TIMEOUT=${TEST_TIMEOUT:-420}
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib/sample.sh"
needs_daemon "objects of nfscached resident on demand"
needs_own_upstream

N=${RESIDENT_FILES:-20000}
R=${RESIDENT_MAX:-1000}
SIZE=64
if ldd "$NFSCACHED" 2>/dev/null | grep -q libasan; then
    REREAD_GROWTH_MAX_KB=${RESIDENT_REREAD_GROWTH_MAX_KB:-$((8 * 1024))}
else
    REREAD_GROWTH_MAX_KB=${RESIDENT_REREAD_GROWTH_MAX_KB:-$((4 * 1024))}
fi
DIR=$EXPORT_DIR/many

WANT_MD5=$(make_files "$DIR" "$N" "$SIZE")
[ -n "$WANT_MD5" ]
ok $? "$N files of $SIZE bytes made in the export"

ASAN_Q="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4"
ASAN_OPTIONS=$ASAN_Q setup -o cache.resident_max="$R"
RSS0=$(rss_kb)
DIRFH=$(fh_of many)
[ -n "$DIRFH" ] || { ok 1 "LOOKUP of many"; done_testing; }


# ---- the first read: N objects, R of them in memory ------------------------
snap p0
sampler_start "$T_TMP/read.samples" 0.2 cache.objects.resident
readall read
sampler_stop
snap p1
RSS1=$(rss_kb)
is "$(d p0 p1 upstream.calls.READ)" "$N" "read: one upstream READ per file"
is "$(sv p1 cache.objects) $(sv p1 cache.bytes)" "$N $((N * SIZE))" \
    "read: cache.objects = $N, cache.bytes = $((N * SIZE))"
index_wait "$INDEX_RANGED" "$N" 30
ok $? "read: the index records all $N objects with their range"
num_ok "$(stat_value cache.objects.resident)" -le "$R" "read: cache.objects.resident <= $R once they are recorded"
diag "read: $(val "$T_TMP/read.out" lookup_ms) ms of LOOKUPs, $(val "$T_TMP/read.out" read_ms) ms of READs;" \
     "cache.objects.resident at most $(col_max "$T_TMP/read.samples" 1) ($(col_n "$T_TMP/read.samples" 1) samples);" \
     "cache.index.lookups $(sv p1 cache.index.lookups)"

# ---- the re-read: all from the cache, most through the index --------------
sampler_start "$T_TMP/reread.samples" 0.2 cache.objects.resident
readall reread
sampler_stop
snap p2
RSS2=$(rss_kb)
is "$(d p1 p2 upstream.calls.READ)" 0 "re-read: no upstream READ"
num_ok "$(d p1 p2 cache.index.lookups)" -ge $((N - R)) \
    "re-read: cache.index.lookups rose by at least $((N - R)) (the objects not in memory)"
is "$(sv p2 cache.objects) $(sv p2 cache.bytes)" "$N $((N * SIZE))" \
    "re-read: cache.objects = $N, cache.bytes = $((N * SIZE))"
# the objects of the 32 calls in flight are in use, beyond the bound
samples_max_ok "$T_TMP/reread.samples" 1 "$((R + 32))" \
    "re-read: cache.objects.resident never above $R + the 32 calls in flight, sampled every 0.2 s"
num_ok "$(sv p2 cache.objects.resident)" -le "$R" "re-read: cache.objects.resident <= $R after it"
diag "re-read: $(val "$T_TMP/reread.out" lookup_ms) ms of LOOKUPs, $(val "$T_TMP/reread.out" read_ms) ms of READs;" \
     "upstream GETATTR +$(d p1 p2 upstream.calls.GETATTR), LOOKUP +$(d p1 p2 upstream.calls.LOOKUP);" \
     "cache.index.lookups +$(d p1 p2 cache.index.lookups); read.hits +$(d p1 p2 cache.read.hits)"

# ---- memory --------------------------------------------------------------------
# the same objects all in memory for comparison: a start with the default
# resident_max on the same cache, everything read again
stop_nfscached
ok $? "clean stop"
ASAN_OPTIONS=$ASAN_Q start_nfscached 2>"$T_TMP/start.err"
ok $? "start with the default resident_max" || { diag "$(cat "$T_TMP/start.err")"; done_testing; }
RSS3=$(rss_kb)
readall all
snap p3
RSS4=$(rss_kb)
is "$(sv p3 cache.objects.resident)" "$N" "all: with the default resident_max all $N objects stay in memory"
diag "VmRSS: $RSS0 KiB at start, $RSS1 after the read, $RSS2 after the re-read;" \
     "peak during the re-read $(col_max "$T_TMP/reread.samples" 2) KiB;" \
     "all in memory: $RSS3 KiB at start, $RSS4 after reading all"
[[ "$RSS0 $RSS2 $RSS3 $RSS4" =~ ^[0-9]+\ [0-9]+\ [0-9]+\ [0-9]+$ ]]
ok $? "VmRSS of nfscached read"
diag "RSS growth: $(( (RSS2 - RSS0) / 1024 )) MiB with $R objects in memory," \
     "$(( (RSS4 - RSS3) / 1024 )) MiB with all $N"
REREAD_GROWTH=$((RSS2 > RSS1 ? RSS2 - RSS1 : 0))
num_ok "$REREAD_GROWTH" -le "$REREAD_GROWTH_MAX_KB" \
    "RSS growth during the re-read of all $N objects, $R in memory: $REREAD_GROWTH KiB <= $REREAD_GROWTH_MAX_KB KiB"

# ---- a stop while calls wait for lookups ---------------------------------------
# the calls waiting for a lookup are woken while the upstream still takes
# them: the daemon exits cleanly, with no sanitizer report
stop_nfscached
ok $? "clean stop"
ASAN_OPTIONS=$ASAN_Q start_nfscached -o cache.resident_max=1 2>"$T_TMP/start.err"
ok $? "start with cache.resident_max = 1" || { diag "$(cat "$T_TMP/start.err")"; done_testing; }
rpc_long readmany "$DIRFH" --count "$N" --read-size 4096 --depth 32 > "$T_TMP/stop.out" 2>&1 &
READER=$!
LOOKUPS=0
for _ in $(seq 1 300); do   # the LOOKUPs come first, then the READs
    LOOKUPS=$(stat_value cache.index.lookups)
    [[ "$LOOKUPS" =~ ^[0-9]+$ ]] && [ "$LOOKUPS" -ge 100 ] && break
    sleep 0.1
done
num_ok "$LOOKUPS" -ge 100 "stop: READs bring objects in through the index"
stop_nfscached
ok $? "stop: nfscached exits cleanly on SIGTERM while calls wait for lookups"
wait "$READER" 2>/dev/null

done_testing
