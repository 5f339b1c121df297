#!/bin/bash
# 88-upstream-rtt: the round trips of calls to the upstream, measured per
# NFSv3 procedure (upstream.rtt.PROC histograms of `nfscachectl stats`) and
# smoothed (upstream_srtt_ms of `nfscachectl status`).
#   far     the upstream behind tests/bench/delay-relay, 5 ms each way (NFS
#           and MOUNT): before any call status says `upstream_srtt_ms -`;
#           LOOKUPs and READs of 20 small files (pass-through, cache miss),
#           LOOKUP and GETATTR of each, one 1 MiB file read whole.  For
#           LOOKUP, GETATTR and READ the histogram counts exactly the calls
#           sent upstream (upstream.calls.PROC), none below 10 ms (bucket
#           le="0.005" empty), le="+Inf" is the count, sum_us / count is at
#           least 10,000; procedures not sent (WRITE) have no lines;
#           `stats --json` and `stats --prometheus` say the same counts;
#           upstream_srtt_ms is at least 9 (and below 500)
#   near    the daemon restarted on the upstream itself, the same calls on
#           other files: the counts again exactly the calls sent, and
#           round trips below 10 ms counted in le="0.01"
# The relay's delay is a floor that no load can lower; the upper bounds
# are loose, for a busy machine.
TEST_TIMEOUT=${TEST_TIMEOUT:-150}
. "$(dirname "$0")/../lib.sh"
needs_daemon "upstream round trips measured by nfscached"
needs_own_upstream

RELAY=$top_builddir/tests/bench/delay-relay
[ -x "$RELAY" ] || fail_or_skip "$RELAY is not built (make tests/bench/delay-relay)"
start_upstream 2>"$T_TMP/up.err" || fail_or_skip "upstream: $(tr '\n' ' ' <"$T_TMP/up.err")"
pick_pair RELAY_PORT || fail_or_skip "no free port for the relay"
"$RELAY" 5 "127.0.0.1:$RELAY_PORT=127.0.0.1:$UP_NFS_PORT" \
    "127.0.0.1:$((RELAY_PORT + 1))=127.0.0.1:$UP_MNT_PORT" </dev/null >"$T_TMP/relay.log" 2>&1 &
RELAY_PID=$!
track "$RELAY_PID"
wait_serving "$RELAY_PID" "$(url "$RELAY_PORT" $((RELAY_PORT + 1)))" 20 ||
    fail_or_skip "delay-relay did not start: $(cat "$T_TMP/relay.log")"

N=20 SIZE=8192 BIG=$((1024 * 1024))
for dir in far near; do
    mkdir -p "$EXPORT_DIR/$dir"
    for ((i = 0; i < N; i++)); do
        head -c "$SIZE" /dev/urandom > "$EXPORT_DIR/$dir/$(printf 'f%05d' "$i")"
    done
    head -c "$BIG" /dev/urandom > "$EXPORT_DIR/$dir/big"
done

srtt_ms() { ctl status | awk '$1 == "upstream_srtt_ms" { print $2 }'; }

# quiet: until no call is in flight on any upstream connection (readahead
# may still be fetching after the client's last reply)
quiet() {
    local i
    for ((i = 0; i < 100; i++)); do
        ctl status | awk '$1 ~ /^upstream_conn[0-9]+$/ { n += $6 } END { exit n != 0 }' && return 0
        sleep 0.1
    done
    diag "calls still in flight upstream after 10 s"
    return 1
}

# calls PHASE DIR: LOOKUP and READ of the small files, LOOKUP and GETATTR
# of each, the big file read whole; counters in T_TMP/PHASE-{a,b}.stats
calls() {
    local names
    FH_ROOT=
    DIRFH=$(fh_of "$2")
    snap "$1-a"
    rpc readmany "$DIRFH" --count "$N" --read-size "$SIZE" --depth 8 > "$T_TMP/$1-read.out" 2>&1
    is "$(val "$T_TMP/$1-read.out" lookup_errors) $(val "$T_TMP/$1-read.out" read_errors) $(val "$T_TMP/$1-read.out" bytes)" \
        "0 0 $((N * SIZE))" "$1: $N small files looked up and read"
    names=$(for ((i = 0; i < N; i++)); do printf 'f%05d ' "$i"; done)
    # shellcheck disable=SC2086
    rpc statmany "$DIRFH" $names --depth 8 > "$T_TMP/$1-stat.out" 2>&1
    is "$(val "$T_TMP/$1-stat.out" found)" "$N" "$1: $N files looked up and stat'ed"
    is "$(cat_md5 "$2/big")" "$(md5 "$EXPORT_DIR/$2/big")" "$1: a 1 MiB file read whole"
    quiet
    snap "$1-b"
}

# rise FROM TO NAME: d, with a histogram line that is not there (no round
# trip of that procedure yet) read as 0
rise() {
    local a b
    a=$(sv "$1" "$3") b=$(sv "$2" "$3")
    [ "$a" = missing ] && a=0
    [[ "$a" =~ ^[0-9]+$ && "$b" =~ ^[0-9]+$ ]] && echo $((b - a)) || echo "?($a,$b)"
}

# hist PHASE PROC: the rise of the histogram of PROC within PHASE: count,
# sum_us, le="0.005", le="0.01", le="+Inf", and of upstream.calls.PROC
hist() {
    local a=$1-a b=$1-b p=upstream.rtt.$2
    echo "$(rise "$a" "$b" "$p.count") $(rise "$a" "$b" "$p.sum_us")" \
        "$(rise "$a" "$b" "$p{le=\"0.005\"}") $(rise "$a" "$b" "$p{le=\"0.01\"}")" \
        "$(rise "$a" "$b" "$p{le=\"+Inf\"}") $(d "$a" "$b" "upstream.calls.$2")"
}

# ---- far: 5 ms each way ------------------------------------------------------
NFSCACHED_UPSTREAM_URL="nfs://127.0.0.1/export?nfsport=$RELAY_PORT&mountport=$((RELAY_PORT + 1))"
start_nfscached 2>"$T_TMP/start.err" || fail_or_skip "nfscached: $(cat "$T_TMP/start.err")"
is "$(srtt_ms)" "-" "far: upstream_srtt_ms is - before any call"
calls far far
for proc in LOOKUP GETATTR READ; do
    read -r count sum le5 le10 inf sent <<< "$(hist far "$proc")"
    diag "far $proc: count $count sum_us $sum le=0.005 $le5 le=0.01 $le10 +Inf $inf calls $sent"
    num_ok "$count" -ge "$N" "far: $proc round trips counted"
    is "$count" "$sent" "far: $proc: one round trip per call sent upstream"
    is "$inf" "$count" "far: $proc: le=\"+Inf\" is the count"
    is "$le5" "0" "far: $proc: none below 5 ms"
    num_ok "$((sum / (count > 0 ? count : 1)))" -ge 10000 "far: $proc: mean round trip at least 10 ms (sum_us / count)"
done
sv far-b "upstream.rtt.WRITE.count" | grep -qx missing
ok $? "far: no lines for a procedure not sent (WRITE)"
read_count=$(sv far-b "upstream.rtt.READ.count")
json=$(ctl stats --json)
is "$(grep -o '"upstream.rtt.READ.count":[0-9]*' <<< "$json")" "\"upstream.rtt.READ.count\":$read_count" \
    "far: stats --json has the READ count"
is "$(grep -o '"upstream.rtt.READ.le.+Inf":[0-9]*' <<< "$json")" "\"upstream.rtt.READ.le.+Inf\":$read_count" \
    "far: stats --json has the READ le.+Inf bucket"
prom=$(ctl stats --prometheus)
is "$(grep '^nfscached_upstream_rtt_seconds_count{proc="READ"} ' <<< "$prom")" \
    "nfscached_upstream_rtt_seconds_count{proc=\"READ\"} $read_count" "far: stats --prometheus has the READ count"
is "$(grep -c '^# TYPE nfscached_upstream_rtt_seconds histogram$' <<< "$prom")" 1 \
    "far: stats --prometheus declares the histogram once"
srtt=$(srtt_ms)
diag "far: upstream_srtt_ms $srtt"
[[ "$srtt" =~ ^[0-9]+\.[0-9]{3}$ ]] && awk -v s="$srtt" 'BEGIN { exit !(s >= 9 && s < 500) }'
ok $? "far: upstream_srtt_ms $srtt is between 9 and 500"

stop_nfscached
ok $? "far: nfscached exits cleanly"

# ---- near: the upstream itself -------------------------------------------------
unset NFSCACHED_UPSTREAM_URL
start_nfscached 2>"$T_TMP/start.err" || fail_or_skip "nfscached: $(cat "$T_TMP/start.err")"
is "$(srtt_ms)" "-" "near: upstream_srtt_ms is - after a restart, before any call"
calls near near
for proc in LOOKUP GETATTR READ; do
    read -r count sum le5 le10 inf sent <<< "$(hist near "$proc")"
    diag "near $proc: count $count sum_us $sum le=0.005 $le5 le=0.01 $le10 +Inf $inf calls $sent"
    num_ok "$count" -ge "$N" "near: $proc round trips counted"
    is "$count" "$sent" "near: $proc: one round trip per call sent upstream"
    num_ok "$le10" -gt 0 "near: $proc: round trips below 10 ms counted in le=\"0.01\" (behind the relay none could be)"
done
srtt=$(srtt_ms)
diag "near: upstream_srtt_ms $srtt"
[[ "$srtt" =~ ^[0-9]+\.[0-9]{3}$ ]]
ok $? "near: upstream_srtt_ms $srtt is a number of milliseconds"

done_testing
