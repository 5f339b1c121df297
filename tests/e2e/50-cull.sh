#!/bin/bash
# 50-cull: space management after cachefilesd (DESIGN.md "Space").
#   a) tmpfs     the cache directory on a 64 MiB tmpfs, brun/bcull/bstop
#                30/20/10%: 200 files of 1 MiB (200 MiB) read through
#                nfscached.  Every read succeeds and is the export file;
#                cache.bytes (after every file, and polled every 50 ms in
#                the background) never exceeds 64 MiB less the bstop
#                reserve; objects were culled; the tmpfs never filled up
#
TEST_TIMEOUT=${TEST_TIMEOUT:-240}
. "$(dirname "$0")/../lib.sh"
needs_daemon "culling in nfscached"
needs_own_upstream

MIB=1048576
CACHE_DIR=$T_TMP/cache
T_MOUNTED=0

# The cache directory is a tmpfs of the test's own: at exit nfscached stops
# before it is unmounted, and lib.sh's t_cleanup runs after that.
cull_cleanup() {
    local rc=$? pid
    if [ "$BASHPID" = "$$" ] && [ "$T_MOUNTED" = 1 ]; then
        for pid in "${T_BG_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
        [ -n "$NFSCACHED_PID" ] && stop_nfscached
        umount "$CACHE_DIR" 2>/dev/null || umount -l "$CACHE_DIR"
        T_MOUNTED=0
    fi
    (exit "$rc")
    t_cleanup
}
trap cull_cleanup EXIT

# mount_cache SIZE: a fresh tmpfs of SIZE at the cache directory (nfscached stopped)
mount_cache() {
    mkdir -p "$CACHE_DIR"
    mount -t tmpfs -o "size=$1,mode=0700" nfscached-cull "$CACHE_DIR" 2>"$T_TMP/mount.err" ||
        fail_or_skip "mount a tmpfs: $(cat "$T_TMP/mount.err")"
    T_MOUNTED=1
}
umount_cache() {
    stop_nfscached
    ok $? "nfscached exits cleanly on SIGTERM ($1)"
    umount "$CACHE_DIR"
    T_MOUNTED=0
}

# sampler FILE: every 50 ms one line "cache.bytes free-blocks" into FILE
sampler() {
    local b
    while :; do
        b=$(ctl stats 2>/dev/null | awk '$1 == "cache.bytes" { print $2 }')
        echo "${b:-?} $(stat -f -c %a "$CACHE_DIR")" >> "$1"
        sleep 0.05
    done
}
SAMPLER=
start_sampler() { : > "$1"; sampler "$1" & SAMPLER=$!; track "$SAMPLER"; }
stop_sampler() { kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null; SAMPLER=; }

# the export's files: r000..r199, 1 MiB of random bytes each, and their md5
head -c $((200 * MIB)) /dev/urandom | split -b "$MIB" -d -a 3 - "$EXPORT_DIR/r"
declare -A WANT
while read -r sum name; do WANT[$name]=$sum; done < <(cd "$EXPORT_DIR" && md5sum r*)

# read_files PREFIX NAME...: each file through nfscached; counts
# R_FAILED (client exit status not 0) and R_BAD (md5 not the export's),
# R_MAX is the largest cache.bytes seen after a file
read_files() {
    local n b pre=$1
    shift
    for n in "$@"; do
        if ! nfs_cat "$(proxy_url "$n")" > "$T_TMP/got" 2>>"$T_TMP/$pre.err"; then
            R_FAILED=$((R_FAILED + 1))
        fi
        [ "$(md5 "$T_TMP/got")" = "${WANT[$n]}" ] || R_BAD=$((R_BAD + 1))
        b=$(stat_value cache.bytes)
        [ "${b:-0}" -gt "$R_MAX" ] && R_MAX=$b
    done
}

# max_col FILE COL / min_col FILE COL: over the sampler's numeric lines
max_col() { awk -v c="$2" '$c ~ /^[0-9]+$/ && $c > m { m = $c } END { print m + 0 }' "$1"; }
min_col() { awk -v c="$2" '$c ~ /^[0-9]+$/ && (m == "" || $c < m) { m = $c } END { print m + 0 }' "$1"; }

# ---- a) 200 MiB through a 64 MiB tmpfs -----------------------------------
mount_cache 64m
setup -o cache.brun=30% -o cache.bcull=20% -o cache.bstop=10%
FS_BYTES=$(ctl status | awk '$1 == "cache_fs_bytes" { print $2 }')
is "$FS_BYTES" $((64 * MIB)) "a: status: cache_fs_bytes is the tmpfs's 64 MiB"
LIMIT=$((64 * MIB * 90 / 100))
R_FAILED=0 R_BAD=0 R_MAX=0
: > "$T_TMP/a.samples" #XX
t0=$(now_ms)
read_files a $(cd "$EXPORT_DIR" && ls r*)
t_a=$(( $(now_ms) - t0 ))
: #XX
snap a1
is "$R_FAILED" 0 "a: every one of the 200 reads succeeded"
is "$R_BAD" 0 "a: every file read is the export's (md5)"
num_ok "$R_MAX" -le "$LIMIT" "a: cache.bytes after each file <= 64 MiB - 10% ($R_MAX)"
s_max=$(max_col "$T_TMP/a.samples" 1)
num_ok "$s_max" -le "$LIMIT" \
    "a: cache.bytes polled every 50 ms <= 64 MiB - 10% ($s_max, $(wc -l < "$T_TMP/a.samples") samples)"
num_ok "$(sv a1 cache.culled.objects)" -gt 0 "a: objects were culled"
num_ok "$(sv a1 cache.culled.bytes)" -gt 0 "a: bytes were culled"
free_min=$(min_col "$T_TMP/a.samples" 2)
num_ok "$free_min" -gt 0 "a: the tmpfs never filled up (fewest free blocks seen: $free_min)"
diag "a: 200 MiB read in $t_a ms; culled $(sv a1 cache.culled.objects) objects," \
     "$(sv a1 cache.culled.bytes) bytes; cache.bytes max $R_MAX (after a file), $s_max (polled)," \
     "now $(sv a1 cache.bytes) in $(sv a1 cache.objects) objects; cache.nospace $(sv a1 cache.nospace);" \
     "upstream READs $(sv a1 upstream.calls.READ)"
umount_cache "after a"

done_testing
