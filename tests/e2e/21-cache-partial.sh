#!/bin/bash
# 21-cache-partial: partially uptodate pages, EOF and 64-bit offsets in the
# read cache, with raw READs and WRITEs (tests/rpc.py) and cache.acregmax = 1.
#   partial pages   a 16 KiB file made in the export; 1000 bytes written
#                   through nfscached at offset 5000; a READ of 5000..5999 is
#                   answered locally (a partial hit, no upstream READ) with
#                   the bytes written; a READ of the page 4096..8191 takes one
#                   upstream READ and returns the export file's bytes; then
#                   the page is wholly valid and 5000..5999 is a plain hit.
#   EOF             a 10000-byte file: READ 4096 at 8192 gives 1808 bytes and
#                   eof, cold and warm; READs at 10000 and 20000 give 0 bytes
#                   and eof; counts and eof flags as the upstream's own.
#   64-bit          a sparse file of 4 GiB + 12 KiB with distinct 4 KiB
#                   patterns at 0, 8192, 4 GiB and 4 GiB + 8192 (and a hole
#                   at 4 GiB + 4096) reads back right cold and warm, the
#                   warm pass without upstream READs.
#   partial_pages = no   (a restart on a fresh cache directory) the same
#                   write-then-read needs the upstream: a miss.
TEST_TIMEOUT=${TEST_TIMEOUT:-240}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the read cache of nfscached"
needs_own_upstream
setup -o cache.acregmax=1

KIB=1024
GIB=$((1024 * 1024 * 1024))

# deltas FROM TO COUNTER...: "name+N" for each counter, for one `is`
deltas() {
    local a=$1 b=$2 c out=
    shift 2
    for c in "$@"; do out+="${out:+ }$c+$(d "$a" "$b" "$c")"; done
    echo "$out"
}
READ_COUNTERS=(upstream.calls.READ cache.read.hits cache.read.partial_hits cache.read.misses)

# ---- partial pages ---------------------------------------------------------
head -c $((16 * KIB)) /dev/urandom > "$EXPORT_DIR/part"
head -c 1000 /dev/urandom > "$T_TMP/w1000"
FH=$(fh_of part)
[ -n "$FH" ] || { ok 1 "LOOKUP of part through nfscached"; done_testing; }

rpc pwrite "$FH" 5000 "$T_TMP/w1000" > "$T_TMP/r.out"
is "$(rv nfs_status) $(rv count)" "NFS3_OK 1000" "WRITE of 1000 bytes at 5000 through nfscached"
is "$(range_md5 "$EXPORT_DIR/part" 5000 1000)" "$(md5 "$T_TMP/w1000")" \
    "the export file holds them at 5000"

snap p0
rread p1 "$FH" 5000 1000
snap p1
is "$(rv nfs_status) $(rv count) $(rv eof)" "NFS3_OK 1000 false" "READ 5000..5999: 1000 bytes, no eof"
is "$(md5 "$T_TMP/p1.data")" "$(md5 "$T_TMP/w1000")" "READ 5000..5999 returns the bytes written"
is "$(deltas p0 p1 "${READ_COUNTERS[@]}")" \
    "upstream.calls.READ+0 cache.read.hits+0 cache.read.partial_hits+1 cache.read.misses+0" \
    "READ 5000..5999 is a partial hit, answered without the upstream"
is "$(d p0 p1 cache.read.bytes_local)" 1000 "its 1000 bytes came from the cache"

rread p2 "$FH" 4096 4096
snap p2
is "$(rv nfs_status) $(rv count) $(rv eof)" "NFS3_OK 4096 false" "READ 4096..8191: 4096 bytes, no eof"
is "$(md5 "$T_TMP/p2.data")" "$(range_md5 "$EXPORT_DIR/part" 4096 4096)" \
    "READ 4096..8191 returns the export file's bytes"
is "$(deltas p1 p2 "${READ_COUNTERS[@]}")" \
    "upstream.calls.READ+1 cache.read.hits+0 cache.read.partial_hits+0 cache.read.misses+1" \
    "READ 4096..8191 is a miss with one upstream READ"

rread p3 "$FH" 5000 1000
snap p3
is "$(md5 "$T_TMP/p3.data")" "$(md5 "$T_TMP/w1000")" "READ 5000..5999 again: the bytes written"
is "$(deltas p2 p3 "${READ_COUNTERS[@]}")" \
    "upstream.calls.READ+0 cache.read.hits+1 cache.read.partial_hits+0 cache.read.misses+0" \
    "READ 5000..5999 again: a hit now that its page is wholly valid"

# ---- EOF -----------------------------------------------------------------------
head -c 10000 /dev/urandom > "$EXPORT_DIR/eof10k"
FH=$(fh_of eof10k)
TAIL_MD5=$(range_md5 "$EXPORT_DIR/eof10k" 8192 4096)

# eof_read WHEN OFFSET COUNT WANT_COUNT: count, eof and bytes of a READ
# through nfscached, and the same as the upstream's own answer
eof_read() {
    local when=$1 off=$2 count=$3 want=$4 got
    rread eof "$FH" "$off" "$count"
    got="$(rv nfs_status) $(rv count) $(rv eof)"
    is "$got" "NFS3_OK $want true" "$when: READ $count at $off: $want bytes and eof"
    is "$(md5 "$T_TMP/eof.data")" "$(range_md5 "$EXPORT_DIR/eof10k" "$off" "$count")" \
        "$when: READ $count at $off: the file's bytes"
    if [ -n "$UP_NFS_PORT" ]; then
        up read "$FH" "$off" "$count" > "$T_TMP/up.out"
        is "$got" "$(val "$T_TMP/up.out" nfs_status) $(val "$T_TMP/up.out" count) $(val "$T_TMP/up.out" eof)" \
            "$when: READ $count at $off: the upstream's count and eof"
    fi
}

snap e0
eof_read cold 8192 4096 1808
snap e1
num_ok "$(d e0 e1 upstream.calls.READ)" -ge 1 "cold: the tail came from the upstream"
eof_read cold 10000 4096 0
eof_read cold 20000 4096 0
snap e2
eof_read warm 8192 4096 1808
snap e3
is "$(deltas e2 e3 upstream.calls.READ cache.read.hits cache.read.misses)" \
    "upstream.calls.READ+0 cache.read.hits+1 cache.read.misses+0" \
    "warm: READ 4096 at 8192 is a hit (its page is valid up to EOF)"
eof_read warm 10000 4096 0
eof_read warm 20000 4096 0
eof_read warm 0 10000 10000
rread eof "$FH" 0 4096
is "$(rv count) $(rv eof)" "4096 false" "warm: READ 4096 at 0: 4096 bytes, no eof"

# ---- 64-bit offsets ------------------------------------------------------------
SP=$EXPORT_DIR/sparse
truncate -s $((4 * GIB + 12 * KIB)) "$SP"
OFFS=(0 8192 $((4 * GIB)) $((4 * GIB + 8192)))
for i in 0 1 2 3; do
    # distinct, recognisable patterns: a 16-byte line repeated, no zero byte
    yes "$(printf 'pattern%d-%06d' "$i" "$RANDOM")" | head -c 4096 > "$T_TMP/pat$i"
    dd if="$T_TMP/pat$i" of="$SP" bs=4096 seek=$((OFFS[i] / 4096)) conv=notrunc status=none
done
is "$(stat -c %s "$SP")" $((4 * GIB + 12 * KIB)) "sparse file of 4 GiB + 12 KiB in the export"
FH=$(fh_of sparse)

# sparse_pass WHEN: READs of the four patterns, the hole at 4 GiB + 4096 and a
# READ past EOF from 4 GiB + 8192
sparse_pass() {
    local i
    for i in 0 1 2 3; do
        rread sp "$FH" "${OFFS[i]}" 4096
        is "$(rv nfs_status) $(rv count) $(md5 "$T_TMP/sp.data")" "NFS3_OK 4096 $(md5 "$T_TMP/pat$i")" \
            "$1: READ 4096 at ${OFFS[i]}: pattern $i"
    done
    rread sp "$FH" $((4 * GIB + 4096)) 4096
    is "$(rv count) $(rv zero_bytes) $(rv eof)" "4096 4096 false" "$1: READ 4096 at 4 GiB + 4096: the hole, zeros"
    rread sp "$FH" $((4 * GIB + 8192)) 8192
    is "$(rv count) $(rv eof) $(md5 "$T_TMP/sp.data")" "4096 true $(md5 "$T_TMP/pat3")" \
        "$1: READ 8192 at 4 GiB + 8192: pattern 3, short, eof"
}
snap s0
sparse_pass cold
snap s1
num_ok "$(d s0 s1 upstream.calls.READ)" -ge 4 "cold: the patterns came from the upstream"
sparse_pass warm
snap s2
is "$(deltas s1 s2 upstream.calls.READ cache.read.misses cache.read.hits)" \
    "upstream.calls.READ+0 cache.read.misses+0 cache.read.hits+6" \
    "warm: all six READs were hits, no upstream READ"
is "$(d s1 s2 cache.read.bytes_local)" $((6 * 4096)) "warm: 24 KiB from the cache"

# ---- cache.partial_pages = no ---------------------------------------------------
stop_nfscached
ok $? "nfscached exits cleanly on SIGTERM (before the restart)"
if ! start_nfscached -o cache.acregmax=1 -o cache.partial_pages=no -o cache.dir="$T_TMP/cache2" \
        2>"$T_TMP/start.err"; then
    ok 1 "nfscached starts with cache.partial_pages = no"
    diag "$(cat "$T_TMP/start.err")"
    done_testing
fi
ok 0 "nfscached starts with cache.partial_pages = no on a fresh cache directory"
ROOT=
FH=$(fh_of part)
head -c 1000 /dev/urandom > "$T_TMP/w1000b"
rpc pwrite "$FH" 5000 "$T_TMP/w1000b" > "$T_TMP/r.out"
is "$(rv nfs_status) $(rv count)" "NFS3_OK 1000" "partial_pages=no: WRITE of 1000 bytes at 5000"
snap n0
rread n1 "$FH" 5000 1000
snap n1
is "$(rv count) $(md5 "$T_TMP/n1.data")" "1000 $(md5 "$T_TMP/w1000b")" \
    "partial_pages=no: READ 5000..5999 returns the bytes written"
is "$(deltas n0 n1 "${READ_COUNTERS[@]}")" \
    "upstream.calls.READ+1 cache.read.hits+0 cache.read.partial_hits+0 cache.read.misses+1" \
    "partial_pages=no: READ 5000..5999 is a miss that needs the upstream"
rread n2 "$FH" 5000 1000
snap n2
is "$(md5 "$T_TMP/n2.data")" "$(md5 "$T_TMP/w1000b")" "partial_pages=no: READ 5000..5999 again"
is "$(deltas n1 n2 "${READ_COUNTERS[@]}")" \
    "upstream.calls.READ+0 cache.read.hits+1 cache.read.partial_hits+0 cache.read.misses+0" \
    "partial_pages=no: then a hit (the fetched page is wholly valid)"
done_testing
