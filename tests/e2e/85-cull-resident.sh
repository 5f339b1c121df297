#!/bin/bash
# 85-cull-resident: culling picks the least recently used objects whether
# they are in memory or only in the index.  A small cache (cache.max_size =
# 4M, brun/bcull/bstop 30/20/5%) with cache.resident_max = 50, far below the
# objects it holds, filled beyond its limit twice with files of 32 KiB read
# whole through nfscached (rpc.py readmany, ten files at a time, one call
# in flight: objects made in name order):
#   fill 1   A files a000.. (5 MiB): culling keeps the newest; the oldest
#            of them left (found by their bytes in the backing files) are
#            the hot set, H files, long out of memory.
#   hot      a minute later (the index keeps the last access to the
#            minute, and ties go by creation order), the H files read again:
#            from the cache (no READ), found in the index
#            (cache.index.lookups), now more recently used than every other
#            A file.
#   fill 2   B files b000.. (1.875 MiB): culling must take H files' worth at
#            least (by creation order alone the H files would be the first
#            to go) and less than the other A files left.
# Throughout, cache.bytes (sampled every 0.2 s) stays under max_size less
# bstop and cache.objects.resident under 50.  After fill 2 the H files are
# all still there (re-read: right, no upstream READ); the oldest A file left
# after fill 1 that is not hot went (re-read: right, from an upstream READ),
# as did a000, culled by fill 1.
TEST_TIMEOUT=${TEST_TIMEOUT:-480}
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib/sample.sh"
needs_daemon "culling of nfscached across resident and non-resident objects"
needs_own_upstream

MIB=1048576
FSIZE=32768
NA=160     # 5 MiB: beyond the 3.2 MiB at which culling starts
NB=60      # 1.875 MiB: from the 2.8 MiB culling leaves, beyond 3.2 MiB again
H=16
R=50
MAX=$((4 * MIB))
LIMIT=$((MAX * 95 / 100))
CACHE_DIR=$T_TMP/cache

# The cache directory is a 1 GiB tmpfs of the test's own, as in 50-cull c)
# (the host's disk may be below any threshold): at exit nfscached stops
# before it is unmounted, and lib.sh's t_cleanup runs after that.
T_MOUNTED=0
exec {T_STDOUT}>&1 {T_STDERR}>&2
cull_cleanup() {
    local rc=$?
    exec 1>&"$T_STDOUT" 2>&"$T_STDERR"
    if [ "$BASHPID" = "$$" ] && [ "$T_MOUNTED" = 1 ]; then
        stop_tracked
        [ -n "$NFSCACHED_PID" ] && stop_nfscached
        umount "$CACHE_DIR" 2>/dev/null || umount -l "$CACHE_DIR"
        T_MOUNTED=0
    fi
    (exit "$rc")
    t_cleanup
}
trap cull_cleanup EXIT
mkdir -p "$CACHE_DIR"
mount -t tmpfs -o size=1g,mode=0700 nfscached-cull "$CACHE_DIR" 2>"$T_TMP/mount.err" ||
    fail_or_skip "mount a tmpfs: $(cat "$T_TMP/mount.err")"
T_MOUNTED=1

A_MD5=$(make_files "$EXPORT_DIR/cull" "$NA" "$FSIZE" a 3)
B_MD5=$(make_files "$EXPORT_DIR/cull" "$NB" "$FSIZE" b 3)
[ -n "$A_MD5" ] && [ -n "$B_MD5" ]
ok $? "$NA + $NB files of $FSIZE bytes made in the export"
declare -A WANT
while read -r sum name; do WANT[$name]=$sum; done < <(cd "$EXPORT_DIR/cull" && md5sum a* b*)

setup -o cache.max_size=4M -o cache.brun=30% -o cache.bcull=20% -o cache.bstop=5% \
    -o cache.resident_max="$R"
DIRFH=$(fh_of cull)
[ -n "$DIRFH" ] || { ok 1 "LOOKUP of cull"; done_testing; }

# readf TAG PREFIX FIRST COUNT: files PREFIX<FIRST..> read whole through
# nfscached, ten at a time (LOOKUPs, then READs, one call in flight: a
# client's order, objects made in name order); asserts every call answered
# and every file's bytes right (md5 of each ten against the export's)
readf() {
    local i n bad=0 errs=0 bytes=0 names
    : > "$T_TMP/$1.out"
    for ((i = $3; i < $3 + $4; i += 10)); do
        n=$(( $3 + $4 - i < 10 ? $3 + $4 - i : 10 ))
        RPC_LIMIT=100 RPC_TIMEOUT=30 rpc readmany "$DIRFH" --prefix "$2" --digits 3 --first "$i" \
            --count "$n" --read-size "$FSIZE" --depth 1 > "$T_TMP/r.out" 2>&1
        cat "$T_TMP/r.out" >> "$T_TMP/$1.out"
        names=$(for ((j = i; j < i + n; j++)); do printf '%s%03d ' "$2" "$j"; done)
        # shellcheck disable=SC2086
        [ "$(rv md5)" = "$(names_md5 $names)" ] || bad=$((bad + 1))
        if [[ "$(rv lookup_errors) $(rv read_errors) $(rv bytes)" =~ ^([0-9]+)\ ([0-9]+)\ ([0-9]+)$ ]]; then
            errs=$((errs + BASH_REMATCH[1] + BASH_REMATCH[2])) bytes=$((bytes + BASH_REMATCH[3]))
        else
            errs=$((errs + 1))
        fi
    done
    is "$errs $bytes" "0 $(($4 * FSIZE))" "$1: $4 files read through nfscached" ||
        diag "$(grep -m 2 first_ "$T_TMP/$1.out")"
    is "$bad" 0 "$1: every byte right (md5 of each ten files against the export's)"
}
# names_md5 NAME...: md5 of the named export files' bytes in that order
names_md5() { (cd "$EXPORT_DIR/cull" && cat "$@") | md5sum | cut -d' ' -f1; }
# settle: culling ended (status: cache caching) and the culled objects'
# backing files gone (as many files as cache.objects)
settle() {
    local i
    for ((i = 0; i < 100; i++)); do
        [ "$(cache_state)" = caching ] &&
            [ "$(find "$CACHE_DIR/objects" -type f | wc -l)" = "$(stat_value cache.objects)" ] && return 0
        sleep 0.1
    done
    return 1
}
# held PREFIX COUNT: the files PREFIX000.. whole in the cache, told by their
# bytes in the backing files (which hold a file's bytes at its offsets)
held() {
    local n
    find "$CACHE_DIR/objects" -type f -exec md5sum {} + > "$T_TMP/backing.md5"
    for ((n = 0; n < $2; n++)); do
        grep -q "^${WANT[$1$(printf %03d "$n")]} " "$T_TMP/backing.md5" && printf '%s%03d\n' "$1" "$n"
    done
}

# ---- fill 1 ------------------------------------------------------------------
snap f0
sampler_start "$T_TMP/fill1.samples" 0.2 cache.bytes cache.objects.resident
readf fill1 a 0 "$NA"
T_FILL1=$SECONDS
settle
ok $? "fill1: culling settled"
sampler_stop
snap f1
is "$(d f0 f1 upstream.calls.READ)" "$NA" "fill1: one upstream READ per file"
num_ok "$(d f0 f1 cache.culled.objects)" -gt 0 "fill1: objects were culled ($(d f0 f1 cache.culled.objects))"
samples_max_ok "$T_TMP/fill1.samples" 1 "$LIMIT" "fill1: cache.bytes <= 4 MiB - 5% all along"
num_ok "$(sv f1 cache.bytes)" -le "$LIMIT" "fill1: cache.bytes <= 4 MiB - 5% after it ($(sv f1 cache.bytes))"
num_ok "$(sv f1 cache.objects)" -gt "$R" "fill1: more objects than resident_max ($(sv f1 cache.objects))"
samples_max_ok "$T_TMP/fill1.samples" 2 "$R" "fill1: cache.objects.resident never above $R"
mapfile -t LEFT < <(held a "$NA")
k=${#LEFT[@]}
is "$k" "$(sv f1 cache.objects)" "fill1: the backing files hold $k A files whole, one per object"
is "${LEFT[*]}" "$(for ((n = NA - k; n < NA; n++)); do printf 'a%03d ' "$n"; done | sed 's/ $//')" \
    "fill1: the files left are the newest: the oldest went first"
num_ok "$k" -ge $((H + 20)) "fill1: $k files left, the $H hot ones and more"
HOT=("${LEFT[@]:0:H}")
COLD=${LEFT[H]}
diag "fill1: held ${LEFT[0]}..${LEFT[k - 1]}; hot ${HOT[0]}..${HOT[H - 1]}; culled $(d f0 f1 cache.culled.objects)"

# ---- the hot set, a minute later -----------------------------------------------
wait_s=$((T_FILL1 + 62 - SECONDS))
[ "$wait_s" -gt 0 ] && sleep "$wait_s"
snap h0
readf hot a $((10#${HOT[0]#a})) "$H"
snap h1
is "$(d h0 h1 upstream.calls.READ)" 0 "hot: from the cache (no upstream READ)"
num_ok "$(d h0 h1 cache.index.lookups)" -ge "$H" "hot: found in the index (cache.index.lookups +$(d h0 h1 cache.index.lookups))"

# ---- fill 2 ------------------------------------------------------------------
sampler_start "$T_TMP/fill2.samples" 0.2 cache.bytes cache.objects.resident
readf fill2 b 0 "$NB"
settle
ok $? "fill2: culling settled"
sampler_stop
snap f2
culled=$(d h1 f2 cache.culled.objects)
num_ok "$culled" -ge "$H" "fill2: culled at least $H objects (by creation order the hot ones would have gone: $culled)"
num_ok "$culled" -lt $((k - H)) "fill2: culled fewer than the $((k - H)) A files left that are not hot"
samples_max_ok "$T_TMP/fill2.samples" 1 "$LIMIT" "fill2: cache.bytes <= 4 MiB - 5% all along"
samples_max_ok "$T_TMP/fill2.samples" 2 "$R" "fill2: cache.objects.resident never above $R"
num_ok "$(sv f2 cache.objects)" -gt "$R" "fill2: more objects than resident_max ($(sv f2 cache.objects))"
mapfile -t HELD < <(held a "$NA")
is "$(printf '%s\n' "${HELD[@]}" | grep -cxF -f <(printf '%s\n' "${HOT[@]}"))" "$H" \
    "fill2: the backing files hold all $H hot files whole"
diag "fill2: A files held ${HELD[*]}"

snap r0
readf rehot a $((10#${HOT[0]#a})) "$H"
snap r1
is "$(d r0 r1 upstream.calls.READ)" 0 "after: the hot files still cached (no upstream READ)"
readf cold a $((10#${COLD#a})) 1
snap r2
is "$(d r1 r2 upstream.calls.READ)" 1 "after: $COLD was culled (one upstream READ)"
readf oldest a 0 1
snap r3
is "$(d r2 r3 upstream.calls.READ)" 1 "after: a000 was culled (one upstream READ)"
diag "culled in all $(sv r3 cache.culled.objects) objects, $(sv r3 cache.culled.bytes) bytes;" \
     "cache.index.lookups $(sv r3 cache.index.lookups)"
done_testing
