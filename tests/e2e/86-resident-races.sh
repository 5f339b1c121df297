#!/bin/bash
# 86-resident-races: objects resident on demand while reads race with
# changes in the export, invalidation and culling.  N files of 4096 bytes
# (tests/resident_races.py does the reading):
#   rounds   nfscached with cache.resident_max = 5, every ac* TTL 0 (every
#            READ revalidates) and cache.max_size = 800000 (culling runs all
#            the time).  Each of ROUNDS rounds rewrites some files in the
#            export (sizes 0, 100, 4096, 5000, 9000), then 4 connections
#            READ every file in an order of their own, 16 calls in flight
#            each, while `nfscachectl invalidate --all`, `cull` and
#            `invalidate /export/r/NAME` run in turns 20 ms apart: every
#            READ is NFS3_OK with the export's bytes, every nfscachectl call
#            succeeds, and cache.objects, cache.bytes at the end of the round
#            are counts, not a subtraction below zero (under 2^40).
#   reread   the same daemon, cache.max_size raised to 100 MB by a reload
#            (SIGHUP; max_size is in the file for that), no administrator:
#            some files rewritten, then three plain re-reads of all files
#            (one call in flight): all right; the third sends no upstream
#            READ (nothing changed since the second: the cache holds them
#            all, culling did not empty it on a cache.bytes gone below
#            zero); cache.objects.resident <= 5 once the reads are done.
#   index    after a clean stop the index holds no two objects of the same
#            (volume, fh), and its count(*), sum(bytes) are the
#            cache.objects, cache.bytes of just before the stop; the log has
#            no "index batch failed" and no "UNIQUE"; no sanitizer report; a
#            restart reports the same cache.objects and cache.bytes.
#   plain    a cache of its own, resident_max 260, max_size 800000, no
#            administrator, no changes: ROUNDS2 rounds of the 4 readers
#            (counters under 2^40 after each), then the index checks and the
#            restart; once with the default ac* TTLs ("default"), once with
#            them all 0 ("ttl0").
TEST_TIMEOUT=${TEST_TIMEOUT:-240}
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib/sample.sh"
needs_daemon "objects resident on demand under concurrent reads, culling and invalidation"
needs_own_upstream

N=300
SIZE=4096
ROUNDS=${RESIDENT_RACES_ROUNDS:-5}
ROUNDS2=${RESIDENT_RACES_ROUNDS2:-4}
CHANGE=30
R=5
R2=260
MAX=800000
BIG=100000000
WRAP=$((1 << 40))
AC0=(-o cache.acregmin=0 -o cache.acregmax=0 -o cache.acdirmin=0 -o cache.acdirmax=0)

[ -n "$(make_files "$EXPORT_DIR/r" "$N" "$SIZE")" ]
ok $? "$N files of $SIZE bytes made in the export"

# races TAG SEED ARGS...: tests/resident_races.py through nfscached, output
# in TAG.out; asserts every READ (and nfscachectl call) was right
races() {
    local tag=$1 seed=$2
    shift 2
    timeout -k 5 120 python3 "$top_srcdir/tests/resident_races.py" --port "$PORT" \
        --nfscachectl "$NFSCACHECTL" --ctl "$CTL" --export-dir "$EXPORT_DIR" \
        --count "$N" --seed "$seed" "$@" > "$T_TMP/$tag.out" 2>&1
    local rc=$? o=$T_TMP/$tag.out want=$N
    case " $* " in *" round "*) want=$((N * 4)) ;; esac
    is "$rc $(val "$o" reads) $(val "$o" read_errors) $(val "$o" wrong_bytes)" "0 $want 0 0" \
        "$tag: every READ NFS3_OK with the export's bytes" ||
        diag "first error: $(val "$o" first_error)" "$(grep -v '^changed:' "$o" | tail -n 5)"
    if grep -q '^admin_calls:' "$o"; then
        is "$(val "$o" admin_errors)" 0 "$tag: every one of $(val "$o" admin_calls) nfscachectl invalidate/cull calls succeeded" ||
            diag "$(val "$o" first_admin_error)"
    fi
}
# unwrapped TAG: cache.objects and cache.bytes of snapshot TAG are under 2^40
unwrapped() {
    local c v
    for c in cache.objects cache.bytes; do
        v=$(sv "$1" "$c")
        [[ "$v" =~ ^[0-9]{1,13}$ ]] && [ "$v" -lt "$WRAP" ]
        ok $? "$1: $c not below zero (under 2^40: $v)"
    done
}
# index_checks TAG FROM: after a clean stop, the index against snapshot TAG
# (taken just before it) and the log from line FROM on
index_checks() {
    is "$(index_query 'SELECT count(*) FROM (SELECT volume, fh FROM objects GROUP BY 1, 2 HAVING count(*) > 1)')" 0 \
        "$1: the index holds no two objects of the same (volume, fh)"
    is "$(index_query "SELECT count(*) || ' ' || coalesce(sum(bytes), 0) FROM objects")" \
        "$(sv "$1" cache.objects) $(sv "$1" cache.bytes)" \
        "$1: count(*), sum(bytes) of the index are cache.objects, cache.bytes before the stop"
    local bad
    bad=$(tail -n +"$2" "$T_TMP/nfscached.log" | grep -E 'index batch failed|UNIQUE' |
        cut -d' ' -f2- | sort | uniq -c | sort -rn | head -n 3)
    is "$bad" "" "$1: no \"index batch failed\" and no \"UNIQUE\" in the log"
}
# stop_checked TAG: a clean stop, no sanitizer report
stop_checked() {
    stop_nfscached
    ok $? "$1: nfscached exits cleanly on SIGTERM"
    no_sanitizer_report "$T_TMP/nfscached.log"
    ok $? "$1: no sanitizer report in the daemon log"
}

# cache.max_size in the configuration file (CACHE_MAX), not on the command
# line: a SIGHUP can then change it
CACHE_MAX=$MAX
eval "base_$(declare -f write_nfscached_conf)"
write_nfscached_conf() {
    base_write_nfscached_conf
    sed -i "s/^\[cache\]\$/[cache]\nmax_size = $CACHE_MAX/" "$T_TMP/nfscached.conf"
}

# ---- rounds: reads racing with changes, invalidation and culling ------------
setup -o cache.resident_max="$R" "${AC0[@]}"
for ((k = 0; k < ROUNDS; k++)); do
    races "round$k" $((k + 1)) --change "$CHANGE" round --admin
    snap "round$k"
    unwrapped "round$k"
    diag "round$k: objects $(sv "round$k" cache.objects), bytes $(sv "round$k" cache.bytes)," \
         "resident $(sv "round$k" cache.objects.resident), culled $(sv "round$k" cache.culled.objects)," \
         "index lookups $(sv "round$k" cache.index.lookups), upstream READ $(sv "round$k" upstream.calls.READ)"
done

# ---- reread: the cache works again ------------------------------------------
# the same daemon, max_size raised by a reload: every file fits, culling
# (which goes by cache.bytes) leaves them all
CACHE_MAX=$BIG
write_nfscached_conf
L=$(($(log_lines) + 1))
kill -HUP "$NFSCACHED_PID"
for ((i = 0; i < 100; i++)); do
    tail -n +"$L" "$T_TMP/nfscached.log" | grep -q 'configuration reloaded' && break
    sleep 0.1
done
tail -n +"$L" "$T_TMP/nfscached.log" | grep -q 'configuration reloaded'
ok $? "reload with cache.max_size = $BIG" || diag "$(tail -n +"$L" "$T_TMP/nfscached.log" | tail -n 5)"
races reread1 $((ROUNDS + 1)) --change "$CHANGE" reread
snap reread1
races reread2 $((ROUNDS + 2)) reread
snap reread2
races reread3 $((ROUNDS + 3)) reread
snap reread3
is "$(d reread2 reread3 upstream.calls.READ)" 0 "reread3: no upstream READ (nothing changed since reread2)"
unwrapped reread3
for ((i = 0; i < 50; i++)); do
    [ "$(stat_value cache.objects.resident)" -le "$R" ] 2>/dev/null && break
    sleep 0.1
done
num_ok "$(stat_value cache.objects.resident)" -le "$R" "reread: cache.objects.resident <= $R once the reads are done"
diag "reread: upstream READ +$(d round$((ROUNDS - 1)) reread1 upstream.calls.READ), +$(d reread1 reread2 upstream.calls.READ)," \
     "+$(d reread2 reread3 upstream.calls.READ); read.hits +$(d reread2 reread3 cache.read.hits);" \
     "objects $(sv reread3 cache.objects), bytes $(sv reread3 cache.bytes)," \
     "culled +$(d round$((ROUNDS - 1)) reread3 cache.culled.objects)"

# ---- index: a clean stop, then a restart -------------------------------------
sleep 1
snap stop1
stop_checked stop1
index_checks stop1 1
start_nfscached -o cache.resident_max="$R" "${AC0[@]}" 2>"$T_TMP/start.err"
ok $? "restart" || { diag "$(cat "$T_TMP/start.err")"; done_testing; }
snap start2
is "$(sv start2 cache.objects) $(sv start2 cache.bytes)" "$(sv stop1 cache.objects) $(sv stop1 cache.bytes)" \
    "restart: cache.objects, cache.bytes as before the stop"
stop_checked start2

# ---- resident_max 260, culling, no administrator --------------------------------
# plain TAG OPTION...: ROUNDS2 rounds of the readers on an empty cache of
# their own with resident_max R2, max_size MAX and the OPTIONs, then the
# index checks and a restart
plain() {
    local tag=$1 from k
    shift
    rm -rf "$T_TMP/cache"
    CACHE_MAX=$MAX
    from=$(($(log_lines) + 1))
    start_nfscached -o cache.resident_max="$R2" "$@" 2>"$T_TMP/start.err"
    ok $? "$tag: start on an empty cache, resident_max $R2 $*" ||
        { diag "$(cat "$T_TMP/start.err")"; done_testing; }
    for ((k = 0; k < ROUNDS2; k++)); do
        races "$tag-r$k" $((k + 1)) round
        snap "$tag-r$k"
        unwrapped "$tag-r$k"
    done
    sleep 1
    snap "$tag-stop"
    stop_checked "$tag-stop"
    index_checks "$tag-stop" "$from"
    start_nfscached -o cache.resident_max="$R2" "$@" 2>"$T_TMP/start.err"
    ok $? "$tag: restart" || { diag "$(cat "$T_TMP/start.err")"; done_testing; }
    snap "$tag-start"
    is "$(sv "$tag-start" cache.objects) $(sv "$tag-start" cache.bytes)" \
        "$(sv "$tag-stop" cache.objects) $(sv "$tag-stop" cache.bytes)" \
        "$tag: restart: cache.objects, cache.bytes as before the stop"
    stop_checked "$tag-start"
}
plain default
plain ttl0 "${AC0[@]}"
done_testing
