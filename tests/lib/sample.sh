# tests/lib/sample.sh: the daemon under test watched while a test works it
# (bash): counters sampled in the background, its resident memory, the line
# its cache logs at start, queries of its cache index; and trees of files
# made in the export.
#
# Definitions only: sourcing this file starts nothing. Uses CTL,
# NFSCACHED_PID, T_TMP, top_srcdir and track (tests/lib/proc.sh).

# rss_kb: VmRSS of nfscached (/proc/PID/status), KiB
rss_kb() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$NFSCACHED_PID/status" 2>/dev/null; }

# sampler_start FILE SECONDS COUNTER...: every SECONDS (a fraction is fine)
# one line appended to FILE: the values of the COUNTERs in `stats` ("-" for
# one the daemon did not report or when it did not answer), then its VmRSS in
# KiB. One python process asks the control socket itself (nfscachectl of an
# ASan build takes tens of ms a call). Its PID in SAMPLER_PID, tracked.
SAMPLER_PID=
sampler_start() {
    local file=$1 every=$2
    shift 2
    : > "$file"
    python3 - "$CTL" "$NFSCACHED_PID" "$file" "$every" "$@" <<'PY' &
import socket, sys, time
ctl, pid, path, every, names = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5:]
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
def rss():
    try:
        with open("/proc/%s/status" % pid) as f:
            for l in f:
                if l.startswith("VmRSS:"):
                    return l.split()[1]
    except OSError:
        pass
    return "-"
with open(path, "a") as f:
    while True:
        st = stats()
        f.write(" ".join([st.get(n, "-") for n in names] + [rss()]) + "\n")
        f.flush()
        time.sleep(every)
PY
    SAMPLER_PID=$!
    track "$SAMPLER_PID"
}

# sampler_stop: the sampler stopped (its last line is complete)
sampler_stop() {
    [ -n "$SAMPLER_PID" ] || return 0
    kill "$SAMPLER_PID" 2>/dev/null
    wait "$SAMPLER_PID" 2>/dev/null
    SAMPLER_PID=
}

# col_max FILE COL, col_min FILE COL: over the numbers of column COL (0 when
# there are none); col_n FILE COL: how many numbers the column holds
col_max() { awk -v c="$2" '$c ~ /^[0-9]+$/ && $c + 0 > m + 0 { m = $c } END { print m + 0 }' "$1"; }
col_min() { awk -v c="$2" '$c ~ /^[0-9]+$/ && (m == "" || $c + 0 < m + 0) { m = $c } END { print m + 0 }' "$1"; }
col_n() { awk -v c="$2" '$c ~ /^[0-9]+$/ { n++ } END { print n + 0 }' "$1"; }

# index_lines FROM: the lines the cache logs at start, from line FROM of
# T_TMP/nfscached.log on, as "N B K" each: "cache: DIR: N objects, B bytes in
# the index; K loaded at start" (K: objects with dirty data, recorded or not,
# loaded before the daemon is ready)
index_lines() {
    tail -n +"$1" "$T_TMP/nfscached.log" |
        sed -n -E 's/.*cache: .*: ([0-9]+) objects, ([0-9]+) bytes in the index; ([0-9]+) loaded at start.*/\1 \2 \3/p'
}

# log_lines: how many lines T_TMP/nfscached.log holds (0 before the first start)
log_lines() { wc -l < "$T_TMP/nfscached.log" 2>/dev/null || echo 0; }

# make_files DIR N SIZE [PREFIX [DIGITS]]: N files of SIZE random bytes in
# DIR (made when missing), PREFIX (f) and the number zero padded to DIGITS
# (5), aged a day (a tree nobody writes to: attributes unchanged since);
# prints the md5 of all their bytes in name order, as rpc.py readmany does
make_files() {
    python3 - "$1" "$2" "$3" "${4:-f}" "${5:-5}" <<'PY'
import hashlib, os, sys, time
d, n, size, prefix, digits = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
os.makedirs(d, exist_ok=True)
h = hashlib.md5()
t = time.time() - 86400
for i in range(n):
    p = os.path.join(d, prefix + "%0*d" % (digits, i))
    data = os.urandom(size)
    with open(p, "wb") as f:
        f.write(data)
    os.utime(p, (t, t))
    h.update(data)
os.utime(d, (t, t))
print(h.hexdigest())
PY
}

# samples_max_ok FILE COL MAX DESCRIPTION: column COL of the samples in FILE
# holds numbers (at least 2: sampled during the work, not once) and none
# above MAX
samples_max_ok() {
    local n m
    n=$(col_n "$1" "$2") m=$(col_max "$1" "$2")
    if [ "$n" -lt 2 ]; then
        ok 1 "$4"
        diag "  $n samples with a number of $(wc -l < "$1") taken (first: '$(head -n 1 "$1")')"
        return 1
    fi
    num_ok "$m" -le "$3" "$4 ($n samples, max $m)"
}

# index_query SQL: the first value of SQL's first row in the cache index,
# T_TMP/cache/index.sqlite (read as sqlite reads a WAL database: the daemon
# may be running, stopped or killed)
index_query() {
    python3 - "$T_TMP/cache/index.sqlite" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
print(db.execute(sys.argv[2]).fetchone()[0])
db.close()
PY
}
# shellcheck disable=SC2034  # used by the tests
# INDEX_RANGED: SQL counting the objects of the index with at least one range
INDEX_RANGED="SELECT count(*) FROM objects o WHERE EXISTS (SELECT 1 FROM ranges r WHERE r.object = o.id)"

# index_wait SQL WANT SECONDS: until index_query SQL gives WANT; 1 when it
# never did
index_wait() {
    local i
    for ((i = 0; i < $3 * 5; i++)); do
        [ "$(index_query "$1")" = "$2" ] && return 0
        sleep 0.2
    done
    return 1
}

# rpc_long ARGS...: tests/rpc.py for thousands of calls (higher limits)
rpc_long() { RPC_LIMIT=200 RPC_TIMEOUT=30 rpc "$@"; }

# readall TAG: every one of the N files of SIZE bytes in directory DIRFH read
# through nfscached (LOOKUPs, then one READ each, 32 in flight) into
# T_TMP/TAG.out; asserts that every call was answered and that the md5 of
# all the bytes is WANT_MD5 (the callers' variables)
readall() {
    rpc_long readmany "$DIRFH" --count "$N" --read-size 4096 --depth 32 > "$T_TMP/$1.out" 2>&1
    ok $? "$1: $N LOOKUPs and READs through nfscached" || diag "$(tail -n 5 "$T_TMP/$1.out")"
    is "$(val "$T_TMP/$1.out" lookup_errors) $(val "$T_TMP/$1.out" read_errors) $(val "$T_TMP/$1.out" reads) $(val "$T_TMP/$1.out" bytes)" \
        "0 0 $N $((N * SIZE))" "$1: every LOOKUP and READ answered"
    is "$(val "$T_TMP/$1.out" md5)" "$WANT_MD5" "$1: every byte right (md5 of all files)"
}
