#!/bin/bash
# 81-restart-trust: every object is trusted after a clean stop.  N tiny files
# (more than the 1024 backing files kept open) read through nfscached (rpc.py
# readmany: LOOKUP and READ, 32 calls in flight) with its open files limited
# to FD_LIMIT: the backing files waiting for a batch must not hold a
# descriptor each, or a slow batch makes the next backing file fail to open
# and its data is not kept.  SIGTERM right after the last reply (no wait for
# the batches), a start on the same cache directory: the index holds every
# object with its range, and reading all of them again is right and sends no
# READ upstream (the attributes are unchanged: revalidated, never refetched).
TEST_TIMEOUT=${TEST_TIMEOUT:-200}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the cache index of nfscached across a clean restart"
needs_own_upstream
setup

N=${RESTART_TRUST_FILES:-4000}
SIZE=64
# 1024 backing files open at most, and what else the daemon holds
# (sockets, the index, the log): far below 1024 more
FD_LIMIT=1100
fd_limit() {
    prlimit --pid "$NFSCACHED_PID" --nofile="$FD_LIMIT:$FD_LIMIT"
    ok $? "$1: open files of nfscached limited to $FD_LIMIT ($(ls "/proc/$NFSCACHED_PID/fd" | wc -l) open)"
}
DIR=$EXPORT_DIR/many

rpc_long() { RPC_LIMIT=200 RPC_TIMEOUT=30 rpc "$@"; }
# objects of the index with at least one range
index_rows() {
    python3 - "$T_TMP/cache/index.sqlite" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
print(db.execute("SELECT count(*) FROM objects o WHERE EXISTS"
                 " (SELECT 1 FROM ranges r WHERE r.object = o.id)").fetchone()[0])
db.close()
PY
}

# N files of SIZE bytes, f00000 ... (md5 of all of them, in name order)
WANT_MD5=$(python3 - "$DIR" "$N" "$SIZE" <<'PY'
import hashlib, os, sys, time
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d, exist_ok=True)
h = hashlib.md5()
t = time.time() - 86400   # aged a day, as a tree nobody writes to
for i in range(n):
    data = os.urandom(size)
    with open(os.path.join(d, "f%05d" % i), "wb") as f:
        f.write(data)
    os.utime(os.path.join(d, "f%05d" % i), (t, t))
    h.update(data)
os.utime(d, (t, t))
print(h.hexdigest())
PY
)
[ -n "$WANT_MD5" ]
ok $? "$N files of $SIZE bytes made in the export"

DIRFH=$(fh_of many)
[ -n "$DIRFH" ] || { ok 1 "LOOKUP of many"; done_testing; }


fd_limit "first read"
snap p0
rpc_long readmany "$DIRFH" --count "$N" --read-size 4096 --depth 32 > "$T_TMP/read.out" 2>&1
ok $? "first read: $N LOOKUPs and READs through nfscached" || diag "$(tail -n 5 "$T_TMP/read.out")"
is "$(val "$T_TMP/read.out" lookup_errors) $(val "$T_TMP/read.out" read_errors) $(val "$T_TMP/read.out" reads) $(val "$T_TMP/read.out" bytes)" \
    "0 0 $N $((N * SIZE))" "first read: every LOOKUP and READ answered"
is "$(val "$T_TMP/read.out" md5)" "$WANT_MD5" "first read: every byte right"
snap p1
is "$(d p0 p1 upstream.calls.READ)" "$N" "first read: one upstream READ per file"
is "$(sv p1 cache.objects)" "$N" "cache.objects = $N"
is "$(sv p1 cache.bytes)" "$((N * SIZE))" "cache.bytes = $((N * SIZE))"

# at once: what the batches have not written yet goes with the last one
stop_nfscached
ok $? "clean stop right after the last reply"
is "$(index_rows)" "$N" "the index holds all $N objects with their range"

start_nfscached 2>"$T_TMP/start.err"
ok $? "restart on the same cache directory"
fd_limit "re-read"
snap p2
is "$(sv p2 cache.objects) $(sv p2 cache.bytes)" "$N $((N * SIZE))" \
    "cache.objects and cache.bytes as before the stop"
rpc_long readmany "$DIRFH" --count "$N" --read-size 4096 --depth 32 > "$T_TMP/reread.out" 2>&1
ok $? "re-read after the restart" || diag "$(tail -n 5 "$T_TMP/reread.out")"
is "$(val "$T_TMP/reread.out" lookup_errors) $(val "$T_TMP/reread.out" read_errors) $(val "$T_TMP/reread.out" reads) $(val "$T_TMP/reread.out" bytes)" \
    "0 0 $N $((N * SIZE))" "re-read: every LOOKUP and READ answered"
is "$(val "$T_TMP/reread.out" md5)" "$WANT_MD5" "re-read: every byte right"
snap p3
is "$(d p2 p3 upstream.calls.READ)" 0 "re-read: no upstream READ (all $N objects trusted)"
grep -q 'cannot open backing file' "$T_TMP/nfscached.log"
ok $((!$?)) "no backing file failed to open" || diag "$(grep -m 3 'cannot open backing file' "$T_TMP/nfscached.log")"
diag "re-read: upstream GETATTR +$(d p2 p3 upstream.calls.GETATTR), LOOKUP +$(d p2 p3 upstream.calls.LOOKUP), ACCESS +$(d p2 p3 upstream.calls.ACCESS)"
done_testing
