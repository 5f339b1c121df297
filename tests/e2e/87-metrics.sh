#!/bin/bash
# 87-metrics: the Prometheus endpoint, GET /metrics on metrics.listen
# (127.0.0.1:0 here: the port is chosen at start and shown by
# `nfscachectl status` as `metrics ADDRESS:PORT`), scraped with curl.
#   scrape   200, Content-Type text/plain; version=0.0.4; charset=utf-8, the
#            connection kept for the next scrape; the HELP and TYPE lines and the series (names and labels, not
#            values) of `nfscachectl stats --prometheus`, in the same order;
#            HEAD: the same status and type, no body; `promtool check
#            metrics` (Debian's prometheus package, unpacked) finds no error
#            and no lint problem but the one of a name the interface
#            contract fixes (cache.unwritten.oldest_s), also once the
#            upstream round-trip histogram is in the scrape
#   counters a 64 KiB file read through the cache twice (one READ each): the
#            scrape shows 2 client READs, 1 miss, 1 hit, 64 KiB from the
#            cache, the same values as `nfscachectl stats`; the per-export
#            counters get the export's name ("/export") from the upstream
#            after a scrape, as after `stats --prometheus`
#   errors   another path 404; POST, PUT and DELETE 405 with
#            `Allow: GET, HEAD`; a GET with a body is answered; malformed requests sent raw (an empty
#            target, a header line without a colon, a request line of one
#            word, 64 KiB of headers) get libmicrohttpd's 4xx or a closed
#            connection; the daemon then answers NFS NULL, a READ and a
#            scrape
#   bounded  40 scrapes at once (more than the 16 connections served at a
#            time) all answered 200, each within 2 s; scrapes while a 64 MiB
#            file is read six times through nfscached (client READs
#            counted between them) each answered within 2 s
#   config   -t prints [metrics] listen; a restart without metrics.listen
#            listens on the NFS port alone and says `metrics off`; [::1]:0
#            serves over IPv6; a bad metrics.listen exits 2 with FILE:LINE
#            (and -o); an address in use exits 1 with a log line
TEST_TIMEOUT=${TEST_TIMEOUT:-240}
. "$(dirname "$0")/../lib.sh"
. "$top_srcdir/tests/deps.sh"
needs_daemon "the metrics endpoint of nfscached"
needs_own_upstream
command -v curl >/dev/null || fail_or_skip "curl is not installed"
PROMTOOL=$(promtool_fetch 2>"$T_TMP/promtool.err") ||
    fail_or_skip "promtool: $(tail -n 2 "$T_TMP/promtool.err" | tr '\n' ' ')"
setup -o metrics.listen=127.0.0.1:0

CT='text/plain; version=0.0.4; charset=utf-8'
SIZE=65536
head -c "$SIZE" /dev/urandom > "$EXPORT_DIR/small"
head -c $((64 * 1048576)) /dev/urandom > "$EXPORT_DIR/big"

# metrics_addr: ADDRESS:PORT of `metrics` in `nfscachectl status`
metrics_addr() { ctl status | awk '$1 == "metrics" { print $2 }'; }

# scrape TAG [CURL OPTION...]: GET of http://$MADDR/metrics (or the path of
# PATH_=...); T_TMP/TAG.body, TAG.hdr; prints "STATUS SECONDS"
scrape() {
    curl -s -m 10 -o "$T_TMP/$1.body" -D "$T_TMP/$1.hdr" -w '%{http_code} %{time_total}' \
        "${@:2}" "http://$MADDR${PATH_:-/metrics}"
}

# header TAG NAME: the value of header NAME in T_TMP/TAG.hdr
header() {
    awk -v n="$2" 'BEGIN { n = tolower(n) ":" }
        tolower($1) == n { sub(/^[^:]*: */, ""); sub(/\r$/, ""); print; exit }' "$T_TMP/$1.hdr"
}

# series FILE: the exposition without values: comments, and each sample's
# name and labels
series() { sed -E '/^#/!s/ [^ ]+$//' "$1"; }

# pv TAG SERIES: the value of SERIES (name and labels) in T_TMP/TAG.body
pv() { awk -v s="$2" '$1 == s { print $2; f = 1 } END { if (!f) print "missing" }' "$T_TMP/$1.body"; }

# raw TAG: the bytes of stdin sent on one connection to the endpoint; the
# answer's status line in T_TMP/TAG.raw ("closed" when there is none)
raw() {
    timeout -k 2 10 python3 -c '
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
s.settimeout(5)
try:
    s.sendall(sys.stdin.buffer.read())
    got = s.recv(4096)
except OSError:
    got = b""
line = got.split(b"\r\n")[0].decode("latin-1")
print(line if line else "closed")
' "${MADDR%:*}" "${MADDR##*:}" > "$T_TMP/$1.raw" 2>&1
    cat "$T_TMP/$1.raw"
}

# ---- the address ------------------------------------------------------
MADDR=$(metrics_addr)
[[ "$MADDR" =~ ^127\.0\.0\.1:[0-9]+$ && "${MADDR##*:}" != 0 ]]
ok $? "status: metrics $MADDR (the port chosen at start)" || diag "status said '$MADDR'"
grep -q "metrics: serving http://$MADDR/metrics" "$T_TMP/nfscached.log"
ok $? "the log names the address and port"
[ -z "$MADDR" ] && done_testing

# ---- a scrape: the same exposition as stats --prometheus ---------------
r=$(scrape s0)
is "${r% *}" 200 "GET /metrics: 200"
is "$(header s0 Content-Type)" "$CT" "GET /metrics: Content-Type"
ctl stats --prometheus > "$T_TMP/c0.prom"
is "$(series "$T_TMP/s0.body" | md5sum)" "$(series "$T_TMP/c0.prom" | md5sum)" \
    "the scrape has the lines of stats --prometheus, in order (names and labels)" ||
    diag "$(diff <(series "$T_TMP/c0.prom") <(series "$T_TMP/s0.body") | head -n 10)"
n=$(grep -c '^nfscached_' "$T_TMP/s0.body")
num_ok "$n" -ge 80 "the scrape holds every series ($n)"
r=$(curl -s -m 10 -o /dev/null -o /dev/null -w '%{http_code}:%{num_connects} ' \
        "http://$MADDR/metrics" "http://$MADDR/metrics")
is "$r" "200:1 200:0 " "two scrapes on one connection (kept alive)"
r=$(scrape h0 -I)
is "${r% *}" 200 "HEAD /metrics: 200"
is "$(header h0 Content-Type)" "$CT" "HEAD /metrics: Content-Type"
# read to the end of the connection: nothing after the headers
timeout -k 2 10 python3 -c '
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
s.settimeout(5)
s.sendall(b"HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
got = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    got += b
head, _, body = got.partition(b"\r\n\r\n")
print(head.split(b"\r\n")[0].decode(), len(body))
' "${MADDR%:*}" "${MADDR##*:}" > "$T_TMP/head.out" 2>&1
is "$(cat "$T_TMP/head.out")" "HTTP/1.1 200 OK 0" "HEAD /metrics: 200 and no body"

# promtool_ok TAG WHAT: `promtool check metrics` of T_TMP/TAG.body finds no
# error (status 1) and no lint problem (status 3) but the one of the name
# the interface contract gives a unit suffix (cache.unwritten.oldest_s)
promtool_ok() {
    local rc
    "$PROMTOOL" check metrics < "$T_TMP/$1.body" > "$T_TMP/$1.promtool" 2>&1
    rc=$?
    [ "$rc" = 0 ] || [ "$rc" = 3 ]
    ok $? "promtool check metrics, $2: no error (status $rc)" ||
        diag "$(head -n 5 "$T_TMP/$1.promtool")"
    is "$(grep -v '^nfscached_cache_unwritten_oldest_s metric names should not contain abbreviated units$' \
            "$T_TMP/$1.promtool")" "" "promtool check metrics, $2: no other lint problem"
}
promtool_ok s0 "first scrape"

# ---- counters after reads through the cache ----------------------------
FH=$(fh_of small)
rread r1 "$FH" 0 "$SIZE"
is "$(rv nfs_status) $(rv count)" "NFS3_OK $SIZE" "first READ of the 64 KiB file"
rread r2 "$FH" 0 "$SIZE"
is "$(rv nfs_status) $(rv count) $(rv md5)" "NFS3_OK $SIZE $(md5 "$EXPORT_DIR/small")" \
    "second READ: the file's bytes"
scrape s1 > /dev/null
snap c1
for c in cache.read.hits:1 cache.read.misses:1 cache.read.partial_hits:0 \
         cache.read.bytes_local:$SIZE nfs3.calls.READ:2; do
    name=nfscached_$(echo "${c%%:*}" | tr . _)_total
    is "$(pv s1 "$name")" "${c#*:}" "scrape after two READs: $name ${c#*:}"
    is "$(pv s1 "$name")" "$(sv c1 "${c%%:*}")" "$name is ${c%%:*} of nfscachectl stats"
done
b=$(pv s1 nfscached_cache_read_bytes_upstream_total)
num_ok "$b" -ge "$SIZE" "scrape: nfscached_cache_read_bytes_upstream_total covers the miss ($b)"

# the scrape above named nothing yet; it started the walk that names the
# file system: a later scrape shows the export's name
for i in $(seq 50); do
    scrape s2 > /dev/null
    [ "$(pv s2 'nfscached_export_cache_read_hits_total{export="/export"}')" != missing ] && break
    sleep 0.1
done
is "$(pv s2 'nfscached_export_cache_read_hits_total{export="/export"}')" 1 \
    "per-export counters named by the upstream after a scrape: /export 1 hit"
ctl stats --prometheus > "$T_TMP/c2.prom"
scrape s3 > /dev/null
is "$(series "$T_TMP/s3.body" | md5sum)" "$(series "$T_TMP/c2.prom" | md5sum)" \
    "with per-export counters too: the lines of stats --prometheus, in order" ||
    diag "$(diff <(series "$T_TMP/c2.prom") <(series "$T_TMP/s3.body") | head -n 10)"
grep -qx '# TYPE nfscached_upstream_rtt_seconds histogram' "$T_TMP/s3.body"
ok $? "the scrape holds the upstream round-trip histogram"
n=$(pv s3 'nfscached_upstream_rtt_seconds_count{proc="READ"}')
is "$(pv s3 'nfscached_upstream_rtt_seconds_bucket{proc="READ",le="+Inf"}')" "$n" \
    "histogram: the +Inf bucket of READ holds its count ($n)"
num_ok "$n" -eq "$(pv s3 nfscached_upstream_calls_READ_total)" \
    "histogram: one READ round trip per READ sent upstream"
promtool_ok s3 "after reads, with per-export counters and the histogram"

# ---- requests that are not a scrape ------------------------------------
r=$(PATH_=/nope scrape e1)
is "${r% *}" 404 "GET /nope: 404"
r=$(PATH_=/ scrape e2)
is "${r% *}" 404 "GET /: 404"
r=$(scrape gb --data-binary @"$EXPORT_DIR/small" -X GET)
is "${r% *}" 200 "GET /metrics with a 64 KiB body: 200 (the body dropped)"
for m in POST PUT DELETE; do
    r=$(scrape "m$m" -X "$m" --data-binary x)
    is "${r% *} $(header "m$m" Allow)" "405 GET, HEAD" "$m /metrics: 405 with Allow: GET, HEAD"
done
is "$(printf 'GET  HTTP/1.1\r\nHost: x\r\n\r\n' | raw b1)" "HTTP/1.1 400 Bad Request" \
    "a request line without a target: 400"
is "$(printf 'GET /metrics HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n' | raw b2)" \
    "HTTP/1.1 400 Bad Request" "a header line without a colon: 400"
r=$(printf 'GARBAGE\r\n\r\n' | raw b3)
[[ "$r" = closed || "$r" =~ ^HTTP/1\.1\ 4[0-9][0-9] ]]
ok $? "a request line of one word: closed or 4xx ($r)"
r=$( { printf 'GET /metrics HTTP/1.1\r\nHost: x\r\n'; for i in $(seq 1024); do
           printf 'X-Filler-%d: %060d\r\n' "$i" 0; done; printf '\r\n'; } | raw b4)
[[ "$r" = closed || "$r" =~ ^HTTP/1\.1\ 4[0-9][0-9] ]]
ok $? "64 KiB of headers (more than a connection may hold): closed or 4xx ($r)"
kill -0 "$NFSCACHED_PID"
ok $? "the daemon runs after the bad requests"
rpc null > "$T_TMP/null.out" 2>&1
ok $? "NFS NULL answered after the bad requests"
rread r3 "$FH" 0 "$SIZE"
is "$(rv nfs_status) $(rv count)" "NFS3_OK $SIZE" "a READ answered after the bad requests"
r=$(scrape s4)
is "${r% *} $(pv s4 nfscached_nfs3_calls_READ_total)" "200 3" "a scrape after the bad requests: 3 READs"

# ---- bounded: many scrapes at once, scrapes while the daemon is busy ----
pids=()
for i in $(seq 40); do
    scrape "p$i" > "$T_TMP/p$i.r" &
    pids+=($!)
done
wait "${pids[@]}"
bad=0 slow=0
for i in $(seq 40); do
    read -r code secs < "$T_TMP/p$i.r"
    [ "$code" = 200 ] && [ "$(series "$T_TMP/p$i.body" | wc -l)" = "$(series "$T_TMP/s4.body" | wc -l)" ] ||
        bad=$((bad + 1))
    awk -v s="$secs" 'BEGIN { exit !(s < 2) }' || slow=$((slow + 1))
done
is "$bad" 0 "40 scrapes at once: each 200 with every line"
is "$slow" 0 "40 scrapes at once: each within 2 s ($(cat "$T_TMP"/p*.r | awk '$2 > m { m = $2 } END { print "slowest " m " s" }'))"

# every connection slot taken by kept-alive scrapes, all closed at once: the
# connections waiting meanwhile, and later scrapes, are still answered
timeout -k 2 30 python3 - "${MADDR%:*}" "${MADDR##*:}" > "$T_TMP/full.out" 2>&1 <<'PY'
import socket, sys
host, port = sys.argv[1].strip("[]"), int(sys.argv[2])
held = []
for _ in range(16):
    s = socket.create_connection((host, port), timeout=10)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(65536)
    held.append(s)
waiting = socket.create_connection((host, port), timeout=10)
waiting.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
for s in held:
    s.close()
print(waiting.recv(64).split(b"\r\n")[0].decode())
PY
is "$(head -n 1 "$T_TMP/full.out")" "HTTP/1.1 200 OK" \
    "16 kept-alive scrapes closed at once: the scrape waiting for a slot is answered"
r=$(scrape full1)
is "${r% *}" 200 "... and a scrape after them: 200"

( for i in 1 2 3 4 5 6; do nfs_cat "$(proxy_url big)" | md5sum; done > "$T_TMP/big.md5" 2>&1 ) &
READER=$!
track "$READER"
n=0 slow=0 failed=0 first= last=
while kill -0 "$READER" 2>/dev/null && [ "$n" -lt 30 ]; do
    r=$(scrape busy)
    [ "${r% *}" = 200 ] || { failed=$((failed + 1)); continue; }
    n=$((n + 1))
    awk -v s="${r#* }" 'BEGIN { exit !(s < 2) }' || slow=$((slow + 1))
    echo "${r#* }" >> "$T_TMP/busy.times"
    v=$(pv busy nfscached_nfs3_calls_READ_total)
    first=${first:-$v} last=$v
    sleep 0.1
done
wait "$READER"
ok $? "six reads of the 64 MiB file through nfscached"
is "$(sort -u "$T_TMP/big.md5" | awk '{ print $1 }')" "$(md5 "$EXPORT_DIR/big")" "the reads got the file's bytes"
num_ok "$n" -ge 3 "scrapes answered while the file was read ($n)"
is "$failed" 0 "no scrape failed while the file was read"
is "$slow" 0 "scrapes while the file was read: each within 2 s ($(sort -g "$T_TMP/busy.times" | tail -n 1) s the slowest)"
num_ok "$((last - first))" -gt 0 "client READs answered between those scrapes ($first -> $last)"

# ---- configuration -----------------------------------------------------
"$NFSCACHED" -t -c "$T_TMP/nfscached.conf" -o metrics.listen=127.0.0.1:9187 > "$T_TMP/t.out" 2>&1
is "$?:$(awk '/^\[metrics\]/ { s = 1; next } s && /^listen/ { print; exit }' "$T_TMP/t.out")" \
    "0:listen = 127.0.0.1:9187" "-t prints [metrics] listen"
"$NFSCACHED" -t -c "$T_TMP/nfscached.conf" > "$T_TMP/t0.out" 2>&1
is "$?:$(awk '/^\[metrics\]/ { s = 1; next } s && /^listen/ { print; exit }' "$T_TMP/t0.out")" \
    "0:listen = " "-t: metrics.listen is empty by default"

cp "$T_TMP/nfscached.conf" "$T_TMP/bad.conf"
printf '[metrics]\nlisten = 127.0.0.1:65536\n' >> "$T_TMP/bad.conf"
line=$(grep -n '^listen = 127.0.0.1:65536' "$T_TMP/bad.conf" | cut -d: -f1)
"$NFSCACHED" -f -c "$T_TMP/bad.conf" > "$T_TMP/bad.out" 2>&1
is "$?" 2 "a bad metrics.listen: exit 2"
grep -qF "$T_TMP/bad.conf:$line: metrics.listen: \"127.0.0.1:65536\" is not ADDRESS:PORT" "$T_TMP/bad.out"
ok $? "a bad metrics.listen: FILE:LINE and the value" || diag "$(cat "$T_TMP/bad.out")"
"$NFSCACHED" -t -c "$T_TMP/nfscached.conf" -o metrics.listen=localhost:80 > "$T_TMP/bad2.out" 2>&1
is "$?" 2 "metrics.listen=localhost:80 (not numeric): exit 2"
grep -qF -- '-o metrics.listen=localhost:80: metrics.listen:' "$T_TMP/bad2.out"
ok $? "-o metrics.listen: the override named" || diag "$(cat "$T_TMP/bad2.out")"
"$NFSCACHED" -t -c "$T_TMP/nfscached.conf" -o server.listen=127.0.0.1:2049 \
    -o metrics.listen=0.0.0.0:2049 > "$T_TMP/bad3.out" 2>&1
is "$?" 2 "metrics.listen on the port of server.listen: exit 2 at -t"
grep -qF -- '-o metrics.listen=0.0.0.0:2049: metrics.listen: "0.0.0.0:2049" is the port server.listen takes' \
    "$T_TMP/bad3.out"
ok $? "... saying so" || diag "$(cat "$T_TMP/bad3.out")"

mkdir -p "$T_TMP/cache2"
timeout 20 "$NFSCACHED" -f -c "$T_TMP/nfscached.conf" -o "cache.dir=$T_TMP/cache2" \
    -o "control.socket=$T_TMP/ctl2.sock" -o "metrics.listen=$MADDR" > "$T_TMP/inuse.out" 2>&1
is "$?" 1 "metrics.listen on an address in use: exit 1"
grep -q "metrics: cannot listen on $MADDR: Address already in use" "$T_TMP/inuse.out"
ok $? "metrics.listen on an address in use: the log says so" || diag "$(tail -n 3 "$T_TMP/inuse.out")"
no_sanitizer_report "$T_TMP/inuse.out"
ok $? "no sanitizer report after the failed start"

stop_nfscached
ok $? "nfscached stops cleanly with the endpoint on"
start_nfscached 2> "$T_TMP/start2.err"
ok $? "nfscached starts without metrics.listen" || diag "$(cat "$T_TMP/start2.err")"
is "$(metrics_addr)" off "status: metrics off"
is "$(ss -Hltnp 2>/dev/null | grep -c "pid=$NFSCACHED_PID,")" 1 \
    "without metrics.listen the daemon listens on one TCP port (NFS and MOUNT)"
curl -s -m 5 -o /dev/null "http://$MADDR/metrics"
is "$?" 7 "nothing answers on the old metrics address"

stop_nfscached
ok $? "nfscached stops cleanly"
start_nfscached -o 'metrics.listen=[::1]:0' 2> "$T_TMP/start3.err"
ok $? "nfscached starts with metrics.listen = [::1]:0" || diag "$(cat "$T_TMP/start3.err")"
MADDR=$(metrics_addr)
[[ "$MADDR" =~ ^\[::1\]:[0-9]+$ && "${MADDR##*:}" != 0 ]]
ok $? "status: metrics $MADDR"
r=$(scrape v6)
is "${r% *} $(header v6 Content-Type)" "200 $CT" "GET /metrics over IPv6: 200"

done_testing
