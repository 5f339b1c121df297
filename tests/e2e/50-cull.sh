#!/bin/bash
# 50-cull: space management after cachefilesd (DESIGN.md "Space"): culling
# of least-recently-used clean objects under the brun/bcull/bstop thresholds
# of the cache file system and under cache.max_size.
#   a) tmpfs      the cache directory on a 64 MiB tmpfs, brun/bcull/bstop
#                 30/20/10%: 200 files of 1 MiB (200 MiB) read through
#                 nfscached.  Every read succeeds and is the export's file;
#                 cache.bytes, sampled after every file and every 50 ms in
#                 the background, never exceeds 64 MiB less the bstop
#                 reserve; objects and bytes were culled; the tmpfs never
#                 filled up (cache.nospace as a diagnostic)
#   b) write-back the same on a fresh tmpfs with write-back: 8 files written
#                 UNSTABLE and never committed stay dirty (dirty_expire_ms
#                 ten minutes) while 112 more are copied in with nfs-cp, each
#                 followed by a read of another export file: objects were
#                 culled, the 8 are still dirty and read back right, and
#                 after `nfscachectl flush` all 120 export files are their
#                 sources; no error or lost dirty bytes in the log
#   c) max_size   cache.max_size 8M (on a 1 GiB tmpfs, far from its
#                 thresholds), 30/20/5%: 30 files of 1 MiB read right,
#                 cache.bytes never above 8 MiB less 5%, objects culled.  The
#                 index keeps last access to the minute and breaks ties by
#                 object id, so within a minute the oldest-created go first:
#                 the files left whole in the cache are the newest ones, they
#                 read again with no upstream READ, the first one needs the
#                 upstream
#   d) cull       max_size 16M, 60/10/5%, 9 MiB cached: between bcull and
#                 brun, nothing is culled until `nfscachectl cull`, which
#                 answers ok with culled_objects > 0 and leaves cache.bytes
#                 <= 40% of 16 MiB; a second `cull` culls nothing; the state
#                 is `cache caching`
#   e) no room    max_size 4M, 30/20/10%, 3 MiB cached (a 2 MiB file, a
#                 1 MiB one): a FILE_SYNC WRITE of 1 MiB at 0 of the 2 MiB
#                 file goes through and cannot be stored (it would cross
#                 bstop): the next read through nfscached returns the new
#                 bytes, never the older ones the cache held; and again
#                 after a restart
# Run time, culled objects and bytes and the largest cache.bytes seen are
# printed as diagnostics.
TEST_TIMEOUT=${TEST_TIMEOUT:-280}
. "$(dirname "$0")/../lib.sh"
needs_daemon "culling in nfscached"
needs_own_upstream

MIB=1048576
CACHE_DIR=$T_TMP/cache
T_MOUNTED=0

# The cache directory is a tmpfs of the test's own: at exit nfscached stops
# before it is unmounted, and lib.sh's t_cleanup runs after that.  The exit
# may come (the watchdog's SIGTERM) inside a function called with its output
# redirected, as nfs_cat is: the report goes to the test's own stdout and
# stderr, saved here.
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

# mount_cache SIZE: a fresh tmpfs of SIZE at the cache directory (nfscached stopped)
mount_cache() {
    mkdir -p "$CACHE_DIR"
    mount -t tmpfs -o "size=$1,mode=0700" nfscached-cull "$CACHE_DIR" 2>"$T_TMP/mount.err" ||
        fail_or_skip "mount a tmpfs: $(cat "$T_TMP/mount.err")"
    T_MOUNTED=1
}
PART_T0=$SECONDS
umount_cache() {
    stop_nfscached
    ok $? "nfscached exits cleanly on SIGTERM ($1)"
    diag "$1: $((SECONDS - PART_T0)) s"
    PART_T0=$SECONDS
    umount "$CACHE_DIR" && T_MOUNTED=0   # else the exit trap tries again
}

# A small Python client of the control socket (python3 starts once: the
# nfscachectl of an ASan build takes tens of ms a call): a line
# "cache.bytes cache.dirty.bytes free-blocks" (free blocks of the cache file
# system, statvfs f_bavail; "-" for a counter when the daemon did not
# answer) for each line read from stdin ("serve"), or every 50 ms into FILE
# ("loop FILE").
cat > "$T_TMP/probe.py" <<'PY'
import os, socket, sys, time
ctl, cache_dir, mode = sys.argv[1:4]
def stats():
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(ctl)
        s.sendall(b"stats\n")
        buf = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            buf += d
        s.close()
    except OSError:
        return {}
    return dict(l.split() for l in buf.decode().splitlines() if len(l.split()) == 2)
def sample():
    st = stats()
    return "%s %s %d" % (st.get("cache.bytes", "-"), st.get("cache.dirty.bytes", "-"),
                         os.statvfs(cache_dir).f_bavail)
if mode == "loop":
    with open(sys.argv[4], "a") as f:
        while True:
            f.write(sample() + "\n")
            f.flush()
            time.sleep(0.05)
for _ in sys.stdin:
    print(sample(), flush=True)
PY
coproc PROBE { exec python3 -u "$T_TMP/probe.py" "$CTL" "$CACHE_DIR" serve; }
track "$PROBE_PID"
# probe: P_BYTES (cache.bytes) and P_FREE (free blocks) now
probe() {
    P_BYTES=- P_FREE=-
    [ -n "${PROBE[1]:-}" ] || return 1   # the coprocess is gone
    echo >&"${PROBE[1]}" && read -r -t 10 P_BYTES _ P_FREE <&"${PROBE[0]}"
}
SAMPLER=
start_sampler() {
    : > "$1"
    python3 "$T_TMP/probe.py" "$CTL" "$CACHE_DIR" loop "$1" &
    SAMPLER=$!
    track "$SAMPLER"
}
stop_sampler() { kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null; SAMPLER=; }

# the export's files: r000..r199, 1 MiB of random bytes each, and their md5
head -c $((200 * MIB)) /dev/urandom | split -b "$MIB" -d -a 3 - "$EXPORT_DIR/r"
declare -A WANT
while read -r sum name; do WANT[$name]=$sum; done < <(cd "$EXPORT_DIR" && md5sum r*)

# read_files PREFIX NAME...: each file through nfscached; counts
# R_FAILED (client exit status not 0) and R_BAD (md5 not the export's);
# after each file R_MAX is the largest cache.bytes so far and R_FREE the
# fewest free blocks of the cache file system
read_files() {
    local n pre=$1
    shift
    for n in "$@"; do
        if ! nfs_cat "$(proxy_url "$n")" > "$T_TMP/got" 2>>"$T_TMP/$pre.err"; then
            R_FAILED=$((R_FAILED + 1))
        fi
        [ "$(md5 "$T_TMP/got")" = "${WANT[$n]}" ] || R_BAD=$((R_BAD + 1))
        probe
        [[ "$P_BYTES" =~ ^[0-9]+$ ]] || { R_NOSAMPLE=$((R_NOSAMPLE + 1)); continue; }
        [ "$P_BYTES" -gt "$R_MAX" ] && R_MAX=$P_BYTES
        [ "$P_FREE" -lt "$R_FREE" ] && R_FREE=$P_FREE
    done
}
r_reset() { R_FAILED=0 R_BAD=0 R_MAX=0 R_NOSAMPLE=0 R_FREE=$(stat -f -c %a "$CACHE_DIR"); }

# max_col FILE COL / min_col FILE COL: over the numbers in column COL
max_col() { awk -v c="$2" '$c ~ /^[0-9]+$/ && $c + 0 > m + 0 { m = $c } END { print m + 0 }' "$1"; }
min_col() { awk -v c="$2" '$c ~ /^[0-9]+$/ && (m == "" || $c + 0 < m + 0) { m = $c } END { print m + 0 }' "$1"; }

# ---- a) 200 MiB through a 64 MiB tmpfs -----------------------------------
A_FILES=()
for i in $(seq -f %03g 0 199); do A_FILES+=("r$i"); done
mount_cache 64m
setup -o cache.brun=30% -o cache.bcull=20% -o cache.bstop=10%
is "$(ctl status | awk '$1 == "cache_fs_bytes" { print $2 }')" $((64 * MIB)) \
    "a: status: cache_fs_bytes is the tmpfs's 64 MiB"
LIMIT=$((64 * MIB * 90 / 100))
r_reset
start_sampler "$T_TMP/a.samples"
t0=$(now_ms)
read_files a "${A_FILES[@]}"
t_a=$(( $(now_ms) - t0 ))
stop_sampler
snap a1
is "$R_FAILED" 0 "a: every one of the 200 reads succeeded"
is "$R_BAD" 0 "a: every file read is the export's (md5)"
is "$R_NOSAMPLE" 0 "a: cache.bytes sampled after every file"
num_ok "$R_MAX" -le "$LIMIT" "a: cache.bytes after each file <= 64 MiB - 10% (max $R_MAX)"
s_max=$(max_col "$T_TMP/a.samples" 1)
s_n=$(grep -c '^[0-9]' "$T_TMP/a.samples")
num_ok "$s_max" -le "$LIMIT" "a: cache.bytes polled every 50 ms <= 64 MiB - 10% (max $s_max, $s_n samples)"
num_ok "$(sv a1 cache.culled.objects)" -gt 0 "a: objects were culled"
num_ok "$(sv a1 cache.culled.bytes)" -gt 0 "a: bytes were culled"
free_min=$(min_col "$T_TMP/a.samples" 3)
[ "$R_FREE" -lt "$free_min" ] && free_min=$R_FREE
num_ok "$free_min" -gt 0 "a: the tmpfs never filled up (fewest free 4 KiB blocks seen: $free_min)"
diag "a: 200 MiB read in $t_a ms; culled $(sv a1 cache.culled.objects) objects," \
     "$(sv a1 cache.culled.bytes) bytes; cache.bytes max $R_MAX after a file, $s_max polled;" \
     "now $(sv a1 cache.bytes) in $(sv a1 cache.objects) objects; cache.nospace $(sv a1 cache.nospace);" \
     "upstream READs $(sv a1 upstream.calls.READ); fewest free blocks $free_min"
umount_cache "after a"

# ---- b) write-back: dirty objects are never culled ------------------------
# 8 files written UNSTABLE with no COMMIT stay dirty (dirty_expire_ms is ten
# minutes); then 112 files copied in with nfs-cp (COMMIT at close), each
# followed by a read of a file of the export, push the cache through
# culling around them.
N_DIRTY=8
mkdir -p "$T_TMP/src"
head -c $((120 * MIB)) /dev/urandom | split -b "$MIB" -d -a 3 - "$T_TMP/src/w"
while read -r sum name; do WANT[$name]=$sum; done < <(cd "$T_TMP/src" && md5sum w*)
mount_cache 64m
LOG_FROM=$(($(wc -l < "$T_TMP/nfscached.log") + 1))
start_nfscached -o cache.brun=30% -o cache.bcull=20% -o cache.bstop=10% \
    -o cache.write_mode=writeback -o cache.dirty_expire_ms=600000 2>"$T_TMP/start.err"
ok $? "b: nfscached starts on a fresh 64 MiB tmpfs, write-back on" || done_testing
rpc mnt > "$T_TMP/mnt.out"
ROOT=$(val "$T_TMP/mnt.out" fh)
W_FAILED=0
for i in $(seq -f %03g 0 $((N_DIRTY - 1))); do
    rpc create "$ROOT" "w$i" > "$T_TMP/create.out" 2>&1
    fh=$(val "$T_TMP/create.out" fh)
    rpc writefile "$fh" "$T_TMP/src/w$i" --no-commit > "$T_TMP/wf.out" 2>&1
    [ "$(val "$T_TMP/create.out" nfs_status) $(val "$T_TMP/wf.out" write_errors)" = "NFS3_OK 0" ] ||
        { W_FAILED=$((W_FAILED + 1)); diag "b: w$i: $(tr '\n' ' ' < "$T_TMP/wf.out")"; }
done
is "$W_FAILED" 0 "b: $N_DIRTY files of 1 MiB written UNSTABLE without COMMIT"
snap b0
is "$(sv b0 cache.dirty.bytes)" $((N_DIRTY * MIB)) "b: they are dirty in the cache"
r_reset
W_FAILED=0
start_sampler "$T_TMP/b.samples"
t0=$(now_ms)
for i in $(seq "$N_DIRTY" 119); do
    n=w$(printf %03d "$i")
    nfs_cp "$T_TMP/src/$n" "$(proxy_url "$n")" > "$T_TMP/cp.out" 2>&1 ||
        { W_FAILED=$((W_FAILED + 1)); diag "b: nfs-cp $n: $(tr '\n' ' ' < "$T_TMP/cp.out")"; }
    read_files b "r$(printf %03d "$i")"
done
t_b=$(( $(now_ms) - t0 ))
stop_sampler
snap b1
is "$W_FAILED" 0 "b: every nfs-cp of $((120 - N_DIRTY)) more files into the export succeeded"
is "$R_FAILED" 0 "b: every read of $((120 - N_DIRTY)) export files in between succeeded"
is "$R_BAD" 0 "b: every file read is the export's (md5)"
num_ok "$(d b0 b1 cache.culled.objects)" -gt 0 "b: objects were culled"
is "$(sv b1 cache.dirty.bytes)" $((N_DIRTY * MIB)) "b: the $N_DIRTY UNSTABLE files are still dirty"
s_n=$(grep -c '^[0-9]' "$T_TMP/b.samples")
num_ok "$(min_col "$T_TMP/b.samples" 2)" -eq $((N_DIRTY * MIB)) \
    "b: cache.dirty.bytes stayed $N_DIRTY MiB all along ($s_n samples)"
s_max=$(max_col "$T_TMP/b.samples" 1)
[ "$R_MAX" -gt "$s_max" ] && s_max=$R_MAX
num_ok "$s_max" -le "$LIMIT" "b: cache.bytes <= 64 MiB - 10% (max $s_max)"
free_min=$(min_col "$T_TMP/b.samples" 3)
[ "$R_FREE" -lt "$free_min" ] && free_min=$R_FREE
num_ok "$free_min" -gt 0 "b: the tmpfs never filled up (fewest free blocks seen: $free_min)"
bad=0
for i in $(seq -f %03g 0 $((N_DIRTY - 1))); do
    nfs_cat "$(proxy_url "w$i")" > "$T_TMP/got" 2>/dev/null
    [ "$(md5 "$T_TMP/got")" = "${WANT[w$i]}" ] || bad=$((bad + 1))
done
is "$bad" 0 "b: the dirty files read back right through nfscached before the flush"
ctl flush > "$T_TMP/flush.out" 2>&1
ok $? "b: flush" || diag "$(cat "$T_TMP/flush.out")"
is "$(stat_value cache.dirty.bytes)" 0 "b: nothing dirty after the flush"
bad=0
for i in $(seq -f %03g 0 119); do
    [ "$(md5 "$EXPORT_DIR/w$i" 2>/dev/null)" = "${WANT[w$i]}" ] || { bad=$((bad + 1)); diag "b: w$i differs"; }
done
is "$bad" 0 "b: all 120 written files in the export are their sources (md5)"
tail -n "+$LOG_FROM" "$T_TMP/nfscached.log" > "$T_TMP/b.log"
! grep -E "dirty bytes lost| error: " "$T_TMP/b.log"
ok $? "b: no error and no lost dirty bytes in the daemon log"
snap b2
diag "b: $((120 - N_DIRTY)) copies and reads in $t_b ms; culled $(d b0 b2 cache.culled.objects) objects," \
     "$(d b0 b2 cache.culled.bytes) bytes; cache.bytes max $s_max;" \
     "written back $(sv b2 cache.writeback.bytes) bytes; cache.nospace $(sv b2 cache.nospace)"
umount_cache "after b"

# ---- c) max_size -----------------------------------------------------------
# cache.max_size = 8M on a file system with room to spare (a 1 GiB tmpfs: the
# host's disk may be below any threshold), brun/bcull/bstop 30/20/5%.
mount_cache 1g
start_nfscached -o cache.max_size=8M -o cache.brun=30% -o cache.bcull=20% -o cache.bstop=5% \
    2>"$T_TMP/start.err"
ok $? "c: nfscached starts with cache.max_size = 8M" || done_testing
LIMIT=$((8 * MIB * 95 / 100))
snap c0
r_reset
start_sampler "$T_TMP/c.samples"
C_FILES=()
for i in $(seq -f %03g 0 29); do C_FILES+=("r$i"); done
read_files c "${C_FILES[@]}"
stop_sampler
snap c1
is "$R_FAILED" 0 "c: every one of the 30 reads succeeded"
is "$R_BAD" 0 "c: every file read is the export's (md5)"
s_max=$(max_col "$T_TMP/c.samples" 1)
[ "$R_MAX" -gt "$s_max" ] && s_max=$R_MAX
num_ok "$s_max" -le "$LIMIT" "c: cache.bytes <= 8 MiB - 5% (max $s_max)"
num_ok "$(d c0 c1 cache.culled.objects)" -gt 0 "c: objects were culled"
# The index keeps the last access to the minute and breaks ties by object id
# (creation order): read in order within a minute or two, the files go
# oldest first, and those left are the newest.  Which files the cache holds
# is told without touching them: the backing files hold a file's bytes at
# their offsets.
for _ in $(seq 50); do ctl status | grep -qx 'cache caching' && break; sleep 0.1; done
find "$CACHE_DIR/objects" -type f -exec md5sum {} + > "$T_TMP/backing.md5"
held=()
for n in "${C_FILES[@]}"; do grep -q "^${WANT[$n]} " "$T_TMP/backing.md5" && held+=("$n"); done
k=${#held[@]}
num_ok "$k" -ge 4 "c: at least the 4 newest files are whole in the cache (${held[*]})"
is "${held[*]}" "${C_FILES[*]:$((30 - k))}" "c: the files left are the newest: the oldest went first"
reads=$(stat_value upstream.calls.READ)
r_reset
read_files c "${C_FILES[@]:26}"
is "$R_FAILED $R_BAD" "0 0" "c: the 4 newest read again right"
is "$(stat_value upstream.calls.READ)" "$reads" "c: and with no upstream READ"
read_files c r000
is "$R_FAILED $R_BAD" "0 0" "c: the oldest read again right"
num_ok "$(( $(stat_value upstream.calls.READ) - reads ))" -gt 0 "c: from the upstream (it was culled)"
snap c2
diag "c: culled $(d c0 c2 cache.culled.objects) objects, $(d c0 c2 cache.culled.bytes) bytes;" \
     "cache.bytes max $s_max; held after the 30 reads: ${held[*]}"
umount_cache "after c"

# ---- d) nfscachectl cull ------------------------------------------------------
# max_size 16M, brun/bcull/bstop 60/10/5%: 9 MiB leaves 44% free, between
# bcull and brun: nothing is culled until asked; `cull` then culls until
# 60% is free (cache.bytes <= 6.4 MiB); a second `cull` has nothing to do.
mount_cache 1g
start_nfscached -o cache.max_size=16M -o cache.brun=60% -o cache.bcull=10% -o cache.bstop=5% \
    2>"$T_TMP/start.err"
ok $? "d: nfscached starts with cache.max_size = 16M" || done_testing
D_FILES=()
for i in $(seq -f %03g 100 108); do D_FILES+=("r$i"); done
r_reset
read_files d "${D_FILES[@]}"
is "$R_FAILED $R_BAD" "0 0" "d: 9 files of 1 MiB read right"
sleep 2   # a batch puts the last objects in the index
snap d0
is "$(sv d0 cache.bytes)" $((9 * MIB)) "d: cache.bytes is 9 MiB"
is "$(sv d0 cache.culled.objects)" 0 "d: between bcull and brun nothing was culled"
is "$(ctl status | awk '$1 == "cache" { print $2 }')" caching "d: status: cache caching"
ctl cull > "$T_TMP/cull1.out" 2>&1
ok $? "d: cull answers ok" || diag "$(cat "$T_TMP/cull1.out")"
snap d1
culled=$(awk '$1 == "culled_objects" { print $2 }' "$T_TMP/cull1.out")
num_ok "$culled" -gt 0 "d: cull: culled_objects > 0"
num_ok "$(awk '$1 == "culled_bytes" { print $2 }' "$T_TMP/cull1.out")" -gt 0 "d: cull: culled_bytes > 0"
is "$(d d0 d1 cache.culled.objects)" "$culled" "d: cache.culled.objects rose by as many"
num_ok "$(sv d1 cache.bytes)" -le $((16 * MIB * 40 / 100)) "d: cache.bytes <= 40% of 16 MiB after the cull"
ctl cull > "$T_TMP/cull2.out" 2>&1
ok $? "d: a second cull answers ok" || diag "$(cat "$T_TMP/cull2.out")"
is "$(awk '$1 == "culled_objects" { print $2 }' "$T_TMP/cull2.out")" 0 "d: and culls nothing"
snap d2
is "$(d d1 d2 cache.culled.objects)" 0 "d: cache.culled.objects did not rise"
is "$(ctl status | awk '$1 == "cache" { print $2 }')" caching "d: status: cache caching at the end"
diag "d: first cull: $(tr '\n' ' ' < "$T_TMP/cull1.out")" "d: second cull: $(tr '\n' ' ' < "$T_TMP/cull2.out")" \
     "d: cache.bytes $(sv d0 cache.bytes) before, $(sv d1 cache.bytes) after"
umount_cache "after d"

# ---- e) a WRITE the cache has no room for ----------------------------------
mount_cache 1g
E_OPTS=(-o cache.write_mode=writethrough -o cache.max_size=4M -o cache.brun=30%
    -o cache.bcull=20% -o cache.bstop=10%)
head -c $((2 * MIB)) /dev/urandom > "$EXPORT_DIR/e0"
head -c $((1 * MIB)) /dev/urandom > "$EXPORT_DIR/e1"
head -c $MIB /dev/urandom > "$T_TMP/e.new"
{ cat "$T_TMP/e.new"; tail -c +$((MIB + 1)) "$EXPORT_DIR/e0"; } > "$T_TMP/e.want"
start_nfscached "${E_OPTS[@]}" 2>"$T_TMP/start.err"
ok $? "e: nfscached starts with cache.max_size = 4M" || done_testing
nfs_cat "$(proxy_url e0)" > /dev/null && nfs_cat "$(proxy_url e1)" > /dev/null
ok $? "e: 3 MiB read through nfscached"
is "$(stat_value cache.bytes)" $((3 * MIB)) "e: cache.bytes 3 MiB"
E0FH=$(fh_of e0)
rpc writefile "$E0FH" "$T_TMP/e.new" --offset 0 --chunk $MIB --stable file_sync > "$T_TMP/e.wf" 2>&1
ok $? "e: 1 MiB FILE_SYNC WRITE at 0 through nfscached" || diag "$(cat "$T_TMP/e.wf")"
cmp -s "$EXPORT_DIR/e0" "$T_TMP/e.want"
ok $? "e: the export holds the new bytes"
nfs_cat "$(proxy_url e0)" > "$T_TMP/e.got"
cmp -s "$T_TMP/e.got" "$T_TMP/e.want"
ok $? "e: a read through nfscached returns the new bytes, not the cached older ones"
stop_nfscached
start_nfscached "${E_OPTS[@]}" 2>"$T_TMP/start.err"
ok $? "e: restart"
nfs_cat "$(proxy_url e0)" > "$T_TMP/e.got"
cmp -s "$T_TMP/e.got" "$T_TMP/e.want"
ok $? "e: and after the restart"
umount_cache "after e"

done_testing
