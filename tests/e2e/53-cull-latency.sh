#!/bin/bash
# 53-cull-latency: culling 10,000 objects does not stall the daemon.
# 10,000 files of 1 KiB in the export, all read through nfscached (rpc.py
# readmany: LOOKUP and READ, 32 calls in flight), so that the cache holds
# 10,000 objects; then cache.max_size = 16k written into the configuration
# and SIGHUP: culling of (nearly) all of them starts.  Meanwhile a client
# calls GETATTR back to back (rpc.py getattrloop): no error, the slowest call
# under 500 ms, a generous bound for a goal of 100 ms (count, max, p99 as
# diag).  Culling throughput (objects/s from the SIGHUP until the run is over) as diag; culled >= 9900 and
# cache.objects small at the end; files read after the culling are right and
# come from the upstream.
TEST_TIMEOUT=${TEST_TIMEOUT:-280}
. "$(dirname "$0")/../lib.sh"
needs_daemon "culling in nfscached"
needs_own_upstream
setup

N=10000
# the goal is no call over 100 ms (the diag lines say how close); the
# assertion is generous, as a shared 2-core machine stalls processes for tens
# of milliseconds by itself
GOAL_GETATTR_MS=100
MAX_GETATTR_MS=500
DIR=$EXPORT_DIR/many

# rpc_long ARGS...: rpc with room for 10,000 files
rpc_long() { RPC_LIMIT=200 RPC_TIMEOUT=30 rpc "$@"; }
index_rows() {
    python3 - "$T_TMP/cache/index.sqlite" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
print(db.execute("SELECT count(*) FROM objects o WHERE EXISTS"
                 " (SELECT 1 FROM ranges r WHERE r.object = o.id)").fetchone()[0])
db.close()
EOF
}

# N files of 1 KiB, f00000 ... (md5 of all of them, in name order)
WANT_MD5=$(python3 - "$DIR" "$N" <<'EOF'
import hashlib, os, sys
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(d, exist_ok=True)
h = hashlib.md5()
for i in range(n):
    data = os.urandom(1024)
    with open(os.path.join(d, "f%05d" % i), "wb") as f:
        f.write(data)
    h.update(data)
print(h.hexdigest())
EOF
)
[ -n "$WANT_MD5" ]
ok $? "$N files of 1 KiB made in the export"
head -c 4096 /dev/urandom > "$EXPORT_DIR/g"

DIRFH=$(fh_of many)
GFH=$(fh_of g)
[ -n "$DIRFH" ] && [ -n "$GFH" ] || { ok 1 "LOOKUP of many and g"; done_testing; }

snap p0
t0=$(now_ms)
rpc_long readmany "$DIRFH" --count "$N" --read-size 4096 --depth 32 > "$T_TMP/rm.out" 2>&1
rc=$?
rm_ms=$(( $(now_ms) - t0 ))
snap p1
rmv() { val "$T_TMP/rm.out" "$1"; }
ok "$rc" "readmany: $N LOOKUPs and READs through nfscached ($rm_ms ms)" || diag "$(tail -n 5 "$T_TMP/rm.out")"
is "$(rmv lookup_errors) $(rmv read_errors) $(rmv reads) $(rmv bytes)" "0 0 $N $((N * 1024))" \
    "readmany: every LOOKUP and READ answered, $N KiB read" ||
    diag "$(grep first_ "$T_TMP/rm.out")"
is "$(rmv md5)" "$WANT_MD5" "readmany: every byte right"
diag "readmany: lookup_ms $(rmv lookup_ms) read_ms $(rmv read_ms); upstream READ +$(d p0 p1 upstream.calls.READ)"
objects=$(sv p1 cache.objects)
num_ok "$objects" -ge "$N" "cache.objects >= $N ($objects; cache.bytes $(sv p1 cache.bytes))"
# culling takes its candidates from the index: wait for the batches
for _ in $(seq 300); do
    rows=$(index_rows)
    [ "$rows" -ge "$N" ] 2>/dev/null && break
    sleep 0.1
done
num_ok "$rows" -ge "$N" "the index holds $N objects with ranges"
is "$(cache_state)" caching "status: cache caching before the reload"

# a baseline of GETATTR latency without culling (diag only)
rpc getattrloop "$GFH" --seconds 15 > "$T_TMP/ga0.out" 2>&1
diag "GETATTR before culling (15 s): count $(val "$T_TMP/ga0.out" count), max $(val "$T_TMP/ga0.out" max_ms) ms," \
     "p99 $(val "$T_TMP/ga0.out" p99_ms) ms, p50 $(val "$T_TMP/ga0.out" p50_ms) ms; slow: $(val "$T_TMP/ga0.out" slow)"

# and to the upstream itself: what the machine gives
GFH_UP=$(up lookup "$(up mnt | awk '$1 == "fh:" { print $2 }')" g | awk '$1 == "fh:" { print $2 }')
up getattrloop "$GFH_UP" --seconds 2 > "$T_TMP/gaup.out" 2>&1
diag "GETATTR to the upstream itself: count $(val "$T_TMP/gaup.out" count), max $(val "$T_TMP/gaup.out" max_ms) ms," \
     "p99 $(val "$T_TMP/gaup.out" p99_ms) ms, p50 $(val "$T_TMP/gaup.out" p50_ms) ms"

# GETATTRs back to back while culling runs
python3 "$top_srcdir/tests/rpc.py" --port "$PORT" --mount-port "${PORT_MNT:-$PORT}" --timeout 20 \
    getattrloop "$GFH" --seconds 150 --stop-file "$T_TMP/ga.stop" > "$T_TMP/ga.out" 2>&1 &
GA_PID=$!
track "$GA_PID"
sleep 0.5

snap c0
sed -i '/^\[cache\]/a max_size = 16k' "$T_TMP/nfscached.conf"
before=$(grep -c "main: reload" "$T_TMP/nfscached.log")
t0=$(now_ms)
kill -HUP "$NFSCACHED_PID"
culled=0 seen_culling=0 t_9900= t_end=
# (polled 5 times a second: the poll itself takes CPU from the GETATTRs)
while [ $(( $(now_ms) - t0 )) -lt 150000 ]; do
    culled=$(ctl stats | awk '$1 == "cache.culled.objects" { print $2 }')
    s=$(cache_state)
    [ "$s" = culling ] && seen_culling=1
    [ -z "$t_9900" ] && [ "${culled:-0}" -ge 9900 ] && t_9900=$(( $(now_ms) - t0 ))
    # the run is over: the state is no longer culling and the count is still
    if [ "${culled:-0}" -ge 9900 ] && [ "$s" != culling ]; then
        t_end=$(( $(now_ms) - t0 ))
        break
    fi
    sleep 0.2
done
touch "$T_TMP/ga.stop"
wait "$GA_PID"
ga_rc=$?
snap c1
grep -q "main: configuration reloaded" "$T_TMP/nfscached.log"
ok $? "SIGHUP: the configuration was reloaded"
grep -q "main: reload: cache.max_size changed" "$T_TMP/nfscached.log"
ok $? "the log names cache.max_size"
diag "culled $(d c0 c1 cache.culled.objects) objects, $(d c0 c1 cache.culled.bytes) bytes;" \
     ">= 9900 after ${t_9900:-?} ms, run over after ${t_end:-?} ms (state seen culling: $seen_culling)"
if [ -n "$t_9900" ]; then
    diag "culling throughput: $(( 9900 * 1000 / (t_9900 > 0 ? t_9900 : 1) )) objects/s (first 9900)"
fi
if [ -n "$t_end" ]; then
    diag "culling throughput: $(( $(d c0 c1 cache.culled.objects) * 1000 / (t_end > 0 ? t_end : 1) )) objects/s"
fi
num_ok "$(d c0 c1 cache.culled.objects)" -ge 9900 "cache.culled.objects rose by >= 9900"
num_ok "$(d c0 c1 cache.culled.bytes)" -ge $((9900 * 1024)) "cache.culled.bytes rose by >= 9900 KiB"
[ -n "$t_end" ]
ok $? "the culling run ended within 150 s (state $(cache_state))"
num_ok "$(sv c1 cache.objects)" -le 100 "cache.objects is small at the end ($(sv c1 cache.objects))"
num_ok "$(sv c1 cache.bytes)" -le $((16 * 1024)) "cache.bytes <= max_size at the end ($(sv c1 cache.bytes))"

gav() { val "$T_TMP/ga.out" "$1"; }
ok "$ga_rc" "GETATTR loop ran through the culling" || diag "$(tail -n 4 "$T_TMP/ga.out")"
diag "GETATTR during culling: count $(gav count), max $(gav max_ms) ms, p99 $(gav p99_ms) ms," \
     "p50 $(gav p50_ms) ms, mean $(gav mean_ms) ms, calls >= 100 ms: $(gav over_100ms)"
diag "GETATTR during culling: slow calls (start+latency): $(gav slow)"
is "$(gav errors)" 0 "GETATTR during culling: no error"
max_ms=$(gav max_ms)
awk -v m="$max_ms" -v lim="$MAX_GETATTR_MS" 'BEGIN { exit !(m != "" && m + 0 < lim) }'
ok $? "GETATTR during culling: the slowest call took under $MAX_GETATTR_MS ms (${max_ms:-?} ms; goal $GOAL_GETATTR_MS ms)"

# backing files are gone with their objects
for _ in $(seq 50); do
    nfiles=$(find "$T_TMP/cache/objects" -type f | wc -l)
    [ "$nfiles" -le 100 ] && break
    sleep 0.1
done
num_ok "$nfiles" -le 100 "the backing files are gone ($nfiles left)"

# the files read again: right, from the upstream
snap r0
rpc readmany "$DIRFH" --count 200 --read-size 4096 > "$T_TMP/rm2.out" 2>&1
want=$(cd "$DIR" && cat $(printf 'f%05d ' $(seq 0 199)) | md5sum | cut -d' ' -f1)
is "$(val "$T_TMP/rm2.out" read_errors) $(val "$T_TMP/rm2.out" md5)" "0 $want" \
    "200 of the files read again after the culling: right"
snap r1
num_ok "$(d r0 r1 upstream.calls.READ)" -ge 150 "and from the upstream (+$(d r0 r1 upstream.calls.READ) READs)"
done_testing
