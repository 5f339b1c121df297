#!/bin/bash
# 84-crash-lazy: a start after kill -9 loads only the objects with dirty
# data.  N files of SIZE bytes (aged a day) read through nfscached in
# write-back mode (dirty_expire_ms ten minutes: nothing is written back
# before the kill) until the index records all of them; then
#   D files f00000..   new bytes written UNSTABLE, never committed, and left
#                      until the index records their dirty ranges;
#   C files after them new bytes written UNSTABLE (pipelined) with kill -9
#                      right after the last reply: the crash window, after
#                      the batch that marked them written to, before one
#                      that records their bytes;
#   the others         untouched.
# The start after the kill logs one start-up line: N objects in the index,
# D + C loaded at start (those with recorded dirty data or a write not
# recorded), at least D.  Without any client call the D files are written
# back (the export holds their new bytes; cache.writeback.bytes rises by
# D * SIZE at least). Reading the others again is right (md5 of all of them
# in name order) with no upstream READ (revalidated, not refetched); the D
# files read back their new bytes; the C files read back what the export
# holds, the ones whose bytes the index did not record refetched from the
# upstream (an upstream READ each at least).
TEST_TIMEOUT=${TEST_TIMEOUT:-480}
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib/sample.sh"
needs_daemon "write-back and the start of nfscached after kill -9"
needs_own_upstream

N=${CRASH_LAZY_FILES:-5000}
D=100
C=20
SIZE=4096
DIR=$EXPORT_DIR/many
DAEMON_OPTS=(-o cache.write_mode=writeback -o cache.dirty_expire_ms=600000)

WANT_MD5=$(make_files "$DIR" "$N" "$SIZE")
[ -n "$WANT_MD5" ]
ok $? "$N files of $SIZE bytes made in the export"
# the new bytes of the D and C files, one file each in T_TMP/new
NEW_D_MD5=$(make_files "$T_TMP/new" "$D" "$SIZE")
NEW_C_MD5=$(make_files "$T_TMP/newc" "$C" "$SIZE")
for i in $(seq 0 $((C - 1))); do
    mv "$T_TMP/newc/$(printf 'f%05d' "$i")" "$T_TMP/new/$(printf 'f%05d' $((D + i)))"
done
[ -n "$NEW_D_MD5" ] && [ -n "$NEW_C_MD5" ]
ok $? "new bytes for $D + $C files"

setup "${DAEMON_OPTS[@]}"
DIRFH=$(fh_of many)
[ -n "$DIRFH" ] || { ok 1 "LOOKUP of many"; done_testing; }

# readset TAG FIRST COUNT: files FIRST.. read through nfscached into TAG.out
readset() {
    rpc_long readmany "$DIRFH" --first "$2" --count "$3" --read-size "$SIZE" --depth 32 \
        > "$T_TMP/$1.out" 2>&1
    ok $? "$1: $3 LOOKUPs and READs through nfscached" || diag "$(tail -n 5 "$T_TMP/$1.out")"
    is "$(val "$T_TMP/$1.out" lookup_errors) $(val "$T_TMP/$1.out" read_errors) $(val "$T_TMP/$1.out" bytes)" \
        "0 0 $(($3 * SIZE))" "$1: every LOOKUP and READ answered"
}
# export_md5 FIRST COUNT: md5 of the export's files FIRST.. in name order
export_md5() {
    local i name files=()
    for ((i = $1; i < $1 + $2; i++)); do
        printf -v name '%s/f%05d' "$DIR" "$i"
        files+=("$name")
    done
    cat "${files[@]}" /dev/null | md5sum | cut -d' ' -f1
}
# The writer: LOOKUPs, then one UNSTABLE WRITE of the file's new bytes at 0
# for each name, 32 in flight on one connection; with a PID, SIGKILL to it
# right after the last reply.  Prints written (UNSTABLE WRITEs answered
# NFS3_OK), write_errors, and each file handle as "fh NAME HEX".
cat > "$T_TMP/writer.py" <<'PY'
import os, signal, sys
sys.path.insert(0, sys.argv[1])
import rpc
port, dirfh, first, count, src, kill_pid = (int(sys.argv[2]), bytes.fromhex(sys.argv[3]),
    int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], int(sys.argv[7]))
names = ["f%05d" % i for i in range(first, first + count)]
c = rpc.Conn("127.0.0.1", port, timeout=30)
fhs, errs, written = {}, [], [0]
def on_lookup(name, rep):
    d = rpc.decode_lookup(rep.body)
    if d["nfs_status"] == "NFS3_OK":
        fhs[name] = bytes.fromhex(d["fh"])
    else:
        errs.append("LOOKUP %s: %s" % (name, d["nfs_status"]))
def on_write(name, rep):
    r = rpc.decode_write(rep.body)
    if r["nfs_status"] != "NFS3_OK" or r["committed"] != rpc.UNSTABLE:
        errs.append("WRITE %s: %s %s" % (name, r["nfs_status"], r.get("committed")))
    else:
        written[0] += 1
p = rpc.Pipeline(c, 32, on_lookup)
for n in names:
    p.send(rpc.NFSPROC3_LOOKUP, rpc.lookup_args(dirfh, n), n)
p.drain()
datas = dict((n, open(os.path.join(src, n), "rb").read()) for n in fhs)
p = rpc.Pipeline(c, 32, on_write)
for n in names:
    if n in fhs:
        p.send(rpc.NFSPROC3_WRITE, rpc.write_args(fhs[n], 0, datas[n], stable=rpc.UNSTABLE), n)
p.drain()
if kill_pid:
    os.kill(kill_pid, signal.SIGKILL)
print("written: %d" % written[0])
print("write_errors: %d" % len(errs))
if errs:
    print("first_error: %s" % errs[0])
for n in names:
    if n in fhs:
        print("fh %s %s" % (n, fhs[n].hex()))
PY
writer() {
    timeout -k 5 120 python3 "$T_TMP/writer.py" "$top_srcdir/tests" "$PORT" "$DIRFH" "$@"
}

# ---- all N cached and recorded ---------------------------------------------
snap p0
readset read 0 "$N"
is "$(val "$T_TMP/read.out" md5)" "$WANT_MD5" "read: every byte right (md5 of all files)"
snap p1
is "$(d p0 p1 upstream.calls.READ)" "$N" "read: one upstream READ per file"
index_wait "$INDEX_RANGED" "$N" 30
ok $? "the index records all $N objects with their range"

# ---- D files with recorded dirty data ----------------------------------------
writer 0 "$D" "$T_TMP/new" 0 > "$T_TMP/wd.out" 2>&1
is "$(val "$T_TMP/wd.out" written) $(val "$T_TMP/wd.out" write_errors)" "$D 0" \
    "dirty: $D UNSTABLE WRITEs answered NFS3_OK, UNSTABLE" || diag "$(head -n 3 "$T_TMP/wd.out")"
[ "$(export_md5 0 "$D")" != "$NEW_D_MD5" ]
ok $? "dirty: the export does not hold the new bytes (write-back, not through)"
index_wait "SELECT count(DISTINCT object) FROM dirty_ranges" "$D" 30
ok $? "dirty: the index records the dirty ranges of all $D files"
snap p2
is "$(sv p2 cache.dirty.bytes)" $((D * SIZE)) "dirty: cache.dirty.bytes = $((D * SIZE))"

# ---- C files in the crash window, kill -9 ------------------------------------
writer "$D" "$C" "$T_TMP/new" "$NFSCACHED_PID" > "$T_TMP/wc.out" 2>&1
is "$(val "$T_TMP/wc.out" written) $(val "$T_TMP/wc.out" write_errors)" "$C 0" \
    "crash window: $C UNSTABLE WRITEs answered NFS3_OK, UNSTABLE" || diag "$(head -n 3 "$T_TMP/wc.out")"
{ wait "$NFSCACHED_PID"; } 2>/dev/null
rc=$?
NFSCACHED_PID=
is "$rc" 137 "crash window: nfscached killed (SIGKILL) right after the last reply"
# the C objects whose new bytes the index did not record
C_UNREC=0
while read -r _ _ fh; do
    n=$(index_query "SELECT count(*) FROM dirty_ranges WHERE object = (SELECT id FROM objects WHERE fh = x'$fh')")
    [ "$n" = 0 ] && C_UNREC=$((C_UNREC + 1))
done < <(grep '^fh ' "$T_TMP/wc.out")
diag "crash window: $C_UNREC of the $C files have no dirty range recorded"
num_ok "$C_UNREC" -ge 1 "crash window: writes not recorded in the index at the kill"
ORIG_C=$(export_md5 "$D" "$C")
WANT_O=$(export_md5 $((D + C)) $((N - D - C)))

# ---- the start after the kill ------------------------------------------------
from=$(( $(log_lines) + 1 ))
start_nfscached "${DAEMON_OPTS[@]}" 2>"$T_TMP/start.err"
ok $? "restart after kill -9 (port reported after $NFSCACHED_START_MS ms)" ||
    { diag "$(cat "$T_TMP/start.err")"; done_testing; }
snap s0
index_lines "$from" > "$T_TMP/start.lines"
is "$(wc -l < "$T_TMP/start.lines")" 1 "restart: exactly one start-up line of the cache" ||
    diag "$(grep 'cache: ' "$T_TMP/nfscached.log" | tail -n 5)"
read -r l_n _ l_k < "$T_TMP/start.lines"
is "${l_n:-}" "$N" "restart: $N objects in the index"
num_ok "${l_k:-}" -ge "$D" "restart: at least the $D objects with recorded dirty data loaded at start (${l_k:-?})"
is "${l_k:-}" $((D + C)) "restart: $((D + C)) loaded at start: those with dirty data or writes not recorded"
is "$(sv s0 cache.objects)" "$N" "restart: cache.objects = $N"

# the recorded dirty data goes back to the upstream without a client
for ((i = 0; i < 150; i++)); do
    [ "$(export_md5 0 "$D")" = "$NEW_D_MD5" ] && [ "$(stat_value cache.dirty.bytes)" = 0 ] && break
    sleep 0.2
done
is "$(export_md5 0 "$D")" "$NEW_D_MD5" "restart: the export holds the new bytes of the $D dirty files (written back, $((i / 5)) s)"
bad=0
for ((i = 0; i < D; i++)); do
    n=$(printf 'f%05d' "$i")
    cmp -s "$DIR/$n" "$T_TMP/new/$n" || bad=$((bad + 1))
done
is "$bad" 0 "restart: each of the $D export files equals its new bytes"
snap s1
num_ok "$(sv s1 cache.writeback.bytes)" -ge $((D * SIZE)) \
    "restart: cache.writeback.bytes since the start at least $((D * SIZE)) ($(sv s1 cache.writeback.bytes))"
is "$(sv s1 nfs3.calls.WRITE):$(sv s1 nfs3.calls.COMMIT)" 0:0 "restart: with no WRITE or COMMIT from a client"

# ---- reading after the restart -------------------------------------------------
readset others $((D + C)) $((N - D - C))
is "$(val "$T_TMP/others.out" md5)" "$WANT_O" "others: the $((N - D - C)) untouched files right (md5)"
snap s2
is "$(d s1 s2 upstream.calls.READ)" 0 "others: no upstream READ (revalidated, not refetched)"
diag "others: upstream GETATTR +$(d s1 s2 upstream.calls.GETATTR), LOOKUP +$(d s1 s2 upstream.calls.LOOKUP)"

readset dirty 0 "$D"
is "$(val "$T_TMP/dirty.out" md5)" "$NEW_D_MD5" "dirty: the $D files read back their new bytes"
snap s3
diag "dirty: upstream READ +$(d s2 s3 upstream.calls.READ)"

# what the export holds now: the new bytes where recorded and written back
WANT_C=$(export_md5 "$D" "$C")
[ "$C_UNREC" = "$C" ] && is "$WANT_C" "$ORIG_C" "crash window: the export holds the $C files' old bytes (no write recorded, none written back)"
readset window "$D" "$C"
is "$(val "$T_TMP/window.out" md5)" "$WANT_C" "crash window: the $C files read back what the export holds"
snap s4
num_ok "$(d s3 s4 upstream.calls.READ)" -ge "$C_UNREC" \
    "crash window: the $C_UNREC whose writes were not recorded refetched (upstream READ +$(d s3 s4 upstream.calls.READ))"
done_testing
