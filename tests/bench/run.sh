#!/bin/bash
# tests/bench/run.sh: the benchmark suite of nfscached (`make bench`).
#
# Starts a private nfs-ganesha upstream (FSAL VFS, NFSv3 + NFSv4) behind
# tests/bench/delay-relay (0 ms and 5 ms one way), and compares three targets
# per scenario, every one reached through the relay:
#   direct     the upstream itself
#   nfscached  ./nfscached in front of it (write_mode writeback)
#   proxy      a second ganesha with FSAL PROXY_V4 in front of it
# with tests/bench/nfsbench (libnfs async client). Writes doc/BENCHMARKS.md,
# doc/bench/results.json and doc/bench/*.png (tests/bench/report.py, gnuplot).
#
# Usage: tests/bench/run.sh [--quick] [--keep]
#   --quick   tiny sizes: a smoke run of a couple of minutes
#   --keep    keep the temporary directory
# Environment:
#   BENCH_SCENARIOS   scenarios to run, separated by spaces or commas (default
#                     "S1 S2 S3 S4 S5 S6 S7 CP MEM META"); the report keeps the
#                     other scenarios' sections from the previous results.json
#   BENCH_DELAYS      one-way relay delays in ms (default "0 5")
#   BENCH_FAR_DELAY   a far link's one-way delay in ms (default 25; "" = none),
#                     run for BENCH_FAR_SCENARIOS only (default "S1 S2 S7"),
#                     with direct and nfscached only and a quarter of the
#                     calls (cap)
#   BENCH_TARGETS     targets (default "direct nfscached proxy")
#   BENCH_OUT         where the report goes (default $srcdir/doc)
#   CLIENT_TIMEOUT    seconds allowed to one client run (default 600; MEM's
#                     runs get 3 ms more a file: 3,600 s at 1,000,000)
#   BENCH_NO_INSTALL=1  do not apt-get install missing packages
#   S1_SIZE S2_SIZE S2_WRITES S2_READS S3_SIZE S3_REQS S4_SIZE S4_BLOCK
#   S5_REQS S5_REQS_REF S6_FILES S6_FILE_SIZE MEM_FILES MEM_FILES_LARGE S7_DIRS S7_FILES
#   S7_FILE_SIZE META_FILES: the scale (see below)
#   S6_AB=1           S6 through nfscached with cache.metadata=no as well
#   PROXY_CAP         calls (files) of S2, S3, S6, S7 given to PROXY_V4 at 5 ms (600)
# When ./nfscached is an ASan/UBSan build, an -O2 build of the same files is
# made in the temporary directory and measured instead.
# Every process started here is stopped by PID at exit.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"     # `sh run.sh` too
set -u

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
: "${top_srcdir:=$srcdir}"
: "${top_builddir:=$(pwd)}"
[ -x "$top_builddir/nfscached" ] || top_builddir=$srcdir
for lib in proc upstream daemon; do . "$srcdir/tests/lib/$lib.sh"; done
NFSCACHED=$top_builddir/nfscached
NFSCACHECTL=$top_builddir/nfscachectl
NFSBENCH=$top_builddir/tests/bench/nfsbench
RELAY=$top_builddir/tests/bench/delay-relay
REPORT_PY=$srcdir/tests/bench/report.py
OUT=${BENCH_OUT:-$srcdir/doc}
CLIENT_TIMEOUT=${CLIENT_TIMEOUT:-600}
GANESHA_PROTOCOLS="3, 4"        # the upstream and the proxy serve NFSv4 too
CTL_TIMEOUT=30
NFSCACHED_START_TIMEOUT=120     # opening an index of MEM_FILES objects
NFSCACHED_UP_TIMEOUT=20
NFSCACHED_STOP_TIMEOUT=300      # SIGTERM writes dirty data back first
# the daemon's own default (the end-to-end tests' configuration turns it off)
NFSCACHED_METADATA=${NFSCACHED_METADATA:-yes}

# PROXY_V4 over a 5 ms link answers a few dozen small calls a second: it
# gets at most PROXY_CAP calls (files for trees) of S2, S3 and S6, and its
# rates (IOPS, MB/s) are compared, not its total times
PROXY_CAP=${PROXY_CAP:-600}
QUICK=0 KEEP=0
for a in "$@"; do
    case $a in
        --quick) QUICK=1 ;;
        --keep) KEEP=1 ;;
        -h|--help) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $a" >&2; exit 2 ;;
    esac
done

SCENARIOS=$(echo "${BENCH_SCENARIOS:-S1 S2 S3 S4 S5 S6 S7 CP MEM META}" | tr ',' ' ')
DELAYS=${BENCH_DELAYS:-0 5}
FAR_DELAY=${BENCH_FAR_DELAY-25}
FAR_SCENARIOS=$(echo "${BENCH_FAR_SCENARIOS:-S1 S2 S7}" | tr ',' ' ')
TARGETS=${BENCH_TARGETS:-direct nfscached proxy}
ALL_TARGETS=$TARGETS
CP_RUNS=${CP_RUNS:-3}

# ---- scale --------------------------------------------------------------
MiB=$((1024 * 1024))
if [ "$QUICK" = 1 ]; then
    d_S1=8 d_S2=4 d_S2W=2000 d_S2R=700 d_S3=4 d_S3N=2000 d_S4=16 d_S5N=2000 d_S5REF=500
    d_S6N=200 d_S6SZ=20480 d_MEM=2000 d_MEML=5000 d_S7D=5 d_S7N=100 d_META=2000
else
    d_S1=64 d_S2=64 d_S2W=37500 d_S2R=12500 d_S3=50 d_S3N=25000 d_S4=128 d_S5N=20000 d_S5REF=5000
    d_S6N=2000 d_S6SZ=51200 d_MEM=100000 d_MEML=1000000 d_S7D=20 d_S7N=500 d_META=20000
fi
S1_SIZE=${S1_SIZE:-$d_S1}              # MiB, sequential read, 1 MiB blocks
S2_SIZE=${S2_SIZE:-$d_S2}              # MiB, W1 file
S2_WRITES=${S2_WRITES:-$d_S2W}         # 1 KiB random writes
S2_READS=${S2_READS:-$d_S2R}           # 1 KiB random reads
S3_SIZE=${S3_SIZE:-$d_S3}              # MiB, W2 file
S3_REQS=${S3_REQS:-$d_S3N}             # 2 KiB random requests, ratio 0.5
S4_SIZE=${S4_SIZE:-$d_S4}              # MiB written sequentially
S4_BLOCK=${S4_BLOCK:-16k}              # sysbench fileio's default block
S5_REQS=${S5_REQS:-$d_S5N}             # 4 KiB cached random reads through nfscached
S5_REQS_REF=${S5_REQS_REF:-$d_S5REF}   # the same for direct and proxy (0 ms only)
S6_FILES=${S6_FILES:-$d_S6N}           # files of the tree
S6_FILE_SIZE=${S6_FILE_SIZE:-$d_S6SZ}  # bytes each
MEM_FILES=${MEM_FILES:-$d_MEM}         # tiny files cached for RSS and start-up time
MEM_FILES_LARGE=${MEM_FILES_LARGE:-$d_MEML}  # the same at a larger size (0: not run)
S6_AB=${S6_AB:-0}                      # 1: S6 with cache.metadata=no too
S7_DIRS=${S7_DIRS:-$d_S7D}             # directories of the S7 tree
S7_FILES=${S7_FILES:-$d_S7N}           # files of the S7 tree, spread over them
S7_FILE_SIZE=${S7_FILE_SIZE:-4096}     # bytes each
META_FILES=${META_FILES:-$d_META}      # files walked for the bytes per metadata entry

# ---- state and cleanup ---------------------------------------------------
T_TMP=$(mktemp -d /tmp/nfscached-bench.XXXXXX)
EXPORT_DIR=$T_TMP/export
RES=$T_TMP/results
mkdir -p "$EXPORT_DIR" "$RES/raw"
RESULTS=$RES/results.jsonl
: > "$RESULTS"
GANESHA_PID= PROXY_PID= RELAY_PID= NFSCACHED_PID= RPCBIND_PID=
UP_NFS_PORT= UP_MNT_PORT= LP= LM= PP= PORT= DELAY= USED_PORTS=
CTL=$T_TMP/ctl.sock
T_START=$SECONDS

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*"; }

cleanup() {
    local rc=$?
    [ "$BASHPID" = "$$" ] || exit "$rc"
    trap - EXIT TERM INT HUP
    [ -n "$NFSCACHED_PID" ] && stop_pid "$NFSCACHED_PID" 20
    [ -n "$PROXY_PID" ] && stop_pid "$PROXY_PID" 2
    [ -n "$RELAY_PID" ] && stop_pid "$RELAY_PID" 2
    stop_upstream
    [ -n "$RPCBIND_PID" ] && stop_pid "$RPCBIND_PID" 3
    if [ "$KEEP" = 1 ] || [ "$rc" != 0 ]; then
        echo "temporary directory kept: $T_TMP"
        [ "$KEEP" = 1 ] || rm -rf "$EXPORT_DIR" "$T_TMP/cache"   # the bulky parts
    else
        rm -rf "$T_TMP"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

die() { echo "run.sh: $*" >&2; exit 1; }

# ---- prerequisites -------------------------------------------------------
BENCH_PKGS="nfs-ganesha nfs-ganesha-vfs nfs-ganesha-proxy-v4 rpcbind gnuplot-nox libnfs-utils python3"
if [ "${BENCH_NO_INSTALL:-0}" != 1 ]; then
    . "$srcdir/tests/deps.sh"
    if [ "$(id -u)" = 0 ]; then
        # shellcheck disable=SC2086
        install_missing $BENCH_PKGS || die "cannot install $BENCH_PKGS"
    fi
fi
for c in ganesha.nfsd rpcinfo nfs-ls python3 timeout; do
    command -v "$c" >/dev/null || die "$c is not installed (packages: $BENCH_PKGS)"
done
command -v gnuplot >/dev/null || echo "warning: gnuplot missing, no plots" >&2
[ -x "$NFSCACHED" ] && [ -x "$NFSCACHECTL" ] || die "nfscached is not built in $top_builddir"
[ -x "$NFSBENCH" ] || die "$NFSBENCH is not built (make bench-programs)"
[ -x "$RELAY" ] || die "$RELAY is not built (make bench-programs)"
[ -d /usr/lib/x86_64-linux-gnu/ganesha ] && PLUGINS_DIR=/usr/lib/x86_64-linux-gnu/ganesha ||
    PLUGINS_DIR=$(dirname "$(find /usr/lib* -name 'libfsalproxy_v4.so' 2>/dev/null | head -n 1)")

target_url() {   # target_url TARGET [PATH]
    case $1 in
        direct) url "$LP" "$LM" "${2:-}" ;;
        nfscached) url "$PORT" "$PORT" "${2:-}" ;;
        proxy) url "$PP" $((PP + 1)) "${2:-}" ;;
    esac
}

# ---- the relay: DELAY ms each way, for NFS and MOUNT ---------------------
start_relay() {   # start_relay DELAY_MS
    [ -n "$RELAY_PID" ] && { stop_pid "$RELAY_PID" 2; RELAY_PID=; }
    if [ -z "$LP" ]; then
        pick_pair LP || die "no free ports"
        LM=$((LP + 1))
        NFSCACHED_UPSTREAM_URL="nfs://127.0.0.1/export?nfsport=$LP&mountport=$LM"
    fi
    DELAY=$1
    "$RELAY" "$1" "127.0.0.1:$LP=127.0.0.1:$UP_NFS_PORT" "127.0.0.1:$LM=127.0.0.1:$UP_MNT_PORT" \
        </dev/null >>"$T_TMP/relay.log" 2>&1 &
    RELAY_PID=$!
    wait_serving "$RELAY_PID" "$(url "$LP" "$LM")" 20 || die "delay-relay did not start (log: $T_TMP/relay.log)"
    log "relay pid $RELAY_PID: ${1} ms, $LP/$LM -> $UP_NFS_PORT/$UP_MNT_PORT"
}

# ---- the peer: ganesha PROXY_V4 in front of the relay --------------------
start_proxy() {
    local d=$T_TMP/proxy
    stop_proxy
    rm -rf "$d"
    mkdir -p "$d/recov"
    [ -n "$PP" ] || pick_pair PP || die "no free ports"
    {
        ganesha_core "$d" 127.0.0.1 "$PP" $((PP + 1)) "$PLUGINS_DIR"
        ganesha_export 1 /export /export "" "FSAL {
        Name = PROXY_V4;
        Srv_Addr = 127.0.0.1;
        NFS_Port = $LP;
        Use_Privileged_Client_Port = false;
        RPC_Client_Timeout = 30;
    }"
    } > "$d/ganesha.conf"
    # a SIGKILLed ganesha leaves its rpcbind registrations behind and the next
    # one then fails "Cannot register NFS V3 on TCP": drop them (clients here
    # use explicit ports, never rpcbind)
    local prog v
    for prog in 100003 100005; do
        for v in 1 3 4; do rpcinfo -d "$prog" "$v" >/dev/null 2>&1; done
    done
    ganesha_spawn "$d"
    PROXY_PID=$!
    wait_serving "$PROXY_PID" "$(target_url proxy)" 30 && return 0
    [ "${1:-}" = retry ] && die "PROXY_V4 ganesha did not start (log: $d/ganesha.log)"
    # seen once: it could not connect to the relay; restart both and retry
    log "PROXY_V4 did not start; restarting the relay and the proxy"
    cp "$d/ganesha.log" "$T_TMP/proxy-failed-$(date +%s).log"
    start_relay "$DELAY"
    start_proxy retry
}
stop_proxy() {   # it never finishes a SIGTERM: SIGKILL after 2 s
    [ -n "$PROXY_PID" ] || return 0
    stop_pid "$PROXY_PID" 2
    PROXY_PID=
}

# ---- nfscached -----------------------------------------------------------
# bench_nfscached [--keep-cache] [-o SECTION.KEY=VALUE]...: (re)starts
# nfscached in front of the relay, write_mode writeback; a cold start (empty
# cache directory) unless --keep-cache.
bench_nfscached() {
    local keep=0
    [ "${1:-}" = --keep-cache ] && { keep=1; shift; }
    stop_nfscached
    [ "$keep" = 1 ] || rm -rf "$T_TMP/cache"
    echo "--- start $* (delay $DELAY ms)" >> "$T_TMP/nfscached.log"
    if ! start_nfscached -o cache.write_mode=writeback "$@"; then
        tail -n 20 "$T_TMP/nfscached.log" >&2
        die "nfscached did not start"
    fi
}
cpu_ticks() {   # utime + stime of nfscached, clock ticks (/proc/PID/stat 14, 15)
    sed 's/.*) //' "/proc/$NFSCACHED_PID/stat" 2>/dev/null | awk '{ print $12 + $13 }'
}
rss_kb() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$NFSCACHED_PID/status" 2>/dev/null; }

# ---- targets -------------------------------------------------------------
# start_target TARGET [nfscached options]: a cold start of the target
# (direct: nothing to start; its page cache and ganesha's caches stay warm)
start_target() {
    local t=$1
    shift
    case $t in
        direct) : ;;
        nfscached) bench_nfscached "$@" ;;
        proxy) start_proxy ;;
    esac
}
stop_targets() { stop_nfscached; stop_proxy; }

# ---- measuring -------------------------------------------------------------
# bench ID TARGET PHASE VARIANT [EXTRA_JSON] -- NFSBENCH_ARGS... (URL last)
# runs one nfsbench, saves its JSON, the nfscached counters, CPU time and
# RSS around it, and appends a record to results.jsonl.
# bench ID TARGET PHASE VARIANT [EXTRA_JSON] -- ls-R URL: the same for one
# `nfs-ls -R URL` (a fresh client: its mount included), timed as a whole.
# ls_json MICROSECONDS LINES RC: a result of nfsbench's form for such a run
# (requests = entries listed)
ls_json() {
    python3 -c 'import json, sys
us, n, rc = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
s = us / 1e6
print(json.dumps({"workload": "ls-R", "block": 0, "requests": n, "reads": 0, "writes": 0,
    "bytes": 0, "seconds": s, "mb_s": 0, "iops": n / s if s else 0, "entries": n,
    "lat_us": {"p50": 0, "p95": 0, "p99": 0, "max": 0, "mean": 0}, "errors": 1 if rc else 0}))' "$@"
}
SCEN= NRUN=0
bench() {
    local id=$1 target=$2 phase=$3 variant=$4 extra='{}' rc t0 t1 c0= c1= f
    shift 4
    if [ "$1" != -- ]; then extra=$1; shift; fi
    shift
    NRUN=$((NRUN + 1))
    f=$RES/raw/$(printf '%03d' "$NRUN")-$id
    if [ "$target" = nfscached ]; then
        ctl stats > "$f.stats0" 2>/dev/null
        c0=$(cpu_ticks)
    fi
    t0=$(date +%s%N)
    if [ "$1" = ls-R ]; then
        timeout -k 5 "$CLIENT_TIMEOUT" nfs-ls -R "$2" > "$f.out" 2> "$f.err"
        rc=$?
        t1=$(date +%s%N)
        ls_json "$(((t1 - t0) / 1000))" "$(wc -l < "$f.out")" "$rc" > "$f.json"
    else
        timeout -k 5 "$CLIENT_TIMEOUT" "$NFSBENCH" --json "$@" > "$f.json" 2> "$f.err"
        rc=$?
    fi
    t1=$(date +%s%N)
    if [ "$target" = nfscached ]; then
        c1=$(cpu_ticks)
        ctl stats > "$f.stats1" 2>/dev/null
    fi
    python3 "$REPORT_PY" add "$RESULTS" --id "$id" --scenario "$SCEN" --target "$target" \
        --delay "$DELAY" --phase "$phase" --variant "$variant" --rc "$rc" \
        --wall $(((t1 - t0) / 1000000)) --json-file "$f.json" --extra "$extra" \
        --cmd "nfsbench $*" ${c0:+--cpu0 "$c0"} ${c1:+--cpu1 "$c1"} \
        --stats0 "$f.stats0" --stats1 "$f.stats1" --rss "$( [ "$target" = nfscached ] && rss_kb)" \
        --clk-tck "$(getconf CLK_TCK)"
    if [ "$rc" != 0 ]; then
        log "  $id: nfsbench exit status $rc: $(head -c 300 "$f.err" | tr '\n' ' ')"
    fi
    return 0
}

# make_file NAME MIB: a file of random data made directly in the export
make_file() { head -c $(($2 * MiB)) /dev/urandom > "$EXPORT_DIR/$1"; }

scenario_begin() { SCEN=$1; SCEN_T0=$SECONDS; log "=== $1: $2"; }
scenario_end() {
    local s=$((SECONDS - SCEN_T0))
    log "=== $SCEN done in $s s"
    echo "$SCEN $s" >> "$RES/elapsed.txt"
}

# ---- scenarios -------------------------------------------------------------

# cap TARGET N [DIV]: N, or at most PROXY_CAP / DIV for the proxy over a
# delayed link (DIV 3 for trees: a file costs several calls); a quarter of N
# over the far link (FAR_DELAY)
cap() {
    local lim=$((PROXY_CAP / ${3:-1}))
    if [ -n "$FAR_DELAY" ] && [ "$DELAY" = "$FAR_DELAY" ]; then
        echo $(($2 / 4))
    elif [ "$1" = proxy ] && [ "$DELAY" != 0 ] && [ "$2" -gt "$lim" ]; then
        echo "$lim"
    else
        echo "$2"
    fi
}

# S1: sequential read of an S1_SIZE MiB file, 1 MiB blocks, -j 1 and -j 16,
# cold (fresh nfscached with an empty cache; proxy restarted) then warm.
s1() {
    local t j
    [ -f "$EXPORT_DIR/s1.dat" ] || make_file s1.dat "$S1_SIZE"
    for t in $TARGETS; do
        for j in 1 16; do
            start_target "$t"
            for ph in cold warm; do
                bench "S1.$t.d$DELAY.$ph.j$j" "$t" "$ph" "j$j" -- \
                    -w seqread -b 1m -j "$j" "$(target_url "$t" s1.dat)"
            done
        done
    done
    stop_targets
}

# S2 (W1): random 1 KiB writes then random 1 KiB reads, 1 KiB aligned, on a
# fresh S2_SIZE MiB file per run; nfscached with partial_pages yes and no,
# and with cache.commit = local (the write phase's COMMIT answered from the
# cache's disk).
s2() {
    local t v opt
    for t in $TARGETS; do
        for v in default partial_yes partial_no commit_local; do
            case $t/$v in
                nfscached/partial_yes) opt=(-o cache.partial_pages=yes) ;;
                nfscached/partial_no) opt=(-o cache.partial_pages=no) ;;
                nfscached/commit_local) opt=(-o cache.commit=local) ;;
                nfscached/*|*/partial_*|*/commit_local) continue ;;
                *) opt=() ;;
            esac
            make_file s2.dat "$S2_SIZE"
            start_target "$t" "${opt[@]}"
            bench "S2.$t.d$DELAY.$v.write" "$t" write "$v" -- -w randwrite -b 1k -a 1k \
                -s "${S2_SIZE}m" -n "$(cap "$t" "$S2_WRITES")" -j 16 -S 1 "$(target_url "$t" s2.dat)"
            bench "S2.$t.d$DELAY.$v.read" "$t" read "$v" -- -w randread -b 1k -a 1k \
                -s "${S2_SIZE}m" -n "$(cap "$t" "$S2_READS")" -j 16 -S 2 "$(target_url "$t" s2.dat)"
            stop_targets
        done
    done
}

# S3 (W2): random read/write, 2 KiB blocks, ratio 0.5, -j 16 on an S3_SIZE MiB
# file: cold (fresh target), then warm (after a sequential read of the file).
s3() {
    local t
    for t in $TARGETS; do
        make_file s3.dat "$S3_SIZE"
        start_target "$t"
        bench "S3.$t.d$DELAY.cold" "$t" cold rndrw -- -w randrw -b 2k -a 2k -r 0.5 \
            -s "${S3_SIZE}m" -n "$(cap "$t" "$S3_REQS")" -j 16 -S 3 "$(target_url "$t" s3.dat)"
        bench "S3.$t.d$DELAY.prewarm" "$t" prewarm seqread -- -w seqread -b 1m -j 16 \
            "$(target_url "$t" s3.dat)"
        bench "S3.$t.d$DELAY.warm" "$t" warm rndrw -- -w randrw -b 2k -a 2k -r 0.5 \
            -s "${S3_SIZE}m" -n "$(cap "$t" "$S3_REQS")" -j 16 -S 4 "$(target_url "$t" s3.dat)"
        stop_targets
    done
}

# S4 (W3): sequential write of S4_SIZE MiB, S4_BLOCK blocks; "32 jobs" as 4
# files written at once by 4 nfsbench processes with -j 8 each. Through
# nfscached the time of `nfscachectl flush` afterwards is recorded too.
# Writes are UNSTABLE with one timed COMMIT at the end of each file.
s4() {
    local t i pids part t0 t1
    part=$((S4_SIZE / 4))
    for t in $TARGETS; do
        start_target "$t"
        rm -f "$EXPORT_DIR"/s4.*.dat
        local c0= c1=
        rm -f "$RES/raw/S4.$DELAY.stats0" "$RES/raw/S4.$DELAY.stats1"
        if [ "$t" = nfscached ]; then ctl stats > "$RES/raw/S4.$DELAY.stats0"; c0=$(cpu_ticks); fi
        t0=$(date +%s%N)
        pids=()
        for i in 1 2 3 4; do
            bench "S4.$t.d$DELAY.part$i" "$t" part "4x8" -- -w seqwrite -b "$S4_BLOCK" \
                -s "${part}m" -j 8 -c "$(target_url "$t" "s4.$i.dat")" &
            pids+=($!)
        done
        wait "${pids[@]}"
        t1=$(date +%s%N)
        local flush_ms=null
        if [ "$t" = nfscached ]; then
            local f0 f1
            f0=$(date +%s%N)
            ctl flush > /dev/null
            f1=$(date +%s%N)
            flush_ms=$(((f1 - f0) / 1000000))
            c1=$(cpu_ticks)
            ctl stats > "$RES/raw/S4.$DELAY.stats1"
        fi
        python3 "$REPORT_PY" aggregate "$RESULTS" --id "S4.$t.d$DELAY.all" --scenario S4 \
            --target "$t" --delay "$DELAY" --phase all --variant 4x8 \
            --parts "S4.$t.d$DELAY.part" --wall $(((t1 - t0) / 1000000)) \
            --extra "{\"flush_ms\": $flush_ms}" ${c0:+--cpu0 "$c0"} ${c1:+--cpu1 "$c1"} \
            --stats0 "$RES/raw/S4.$DELAY.stats0" --stats1 "$RES/raw/S4.$DELAY.stats1" \
            --clk-tck "$(getconf CLK_TCK)"
        stop_targets
        rm -f "$EXPORT_DIR"/s4.*.dat
    done
}

# S5: 4 KiB random reads of a cached file through nfscached (warm), -j 1 and
# -j 16: latency percentiles and nfscached CPU time per call. Direct and
# proxy for reference at 0 ms only (S5_REQS_REF calls).
s5() {
    local t j n
    [ -f "$EXPORT_DIR/s5.dat" ] || make_file s5.dat "$S1_SIZE"
    for t in $TARGETS; do
        n=$S5_REQS
        if [ "$t" != nfscached ]; then
            [ "$DELAY" = 0 ] || continue
            n=$S5_REQS_REF
        fi
        start_target "$t"
        bench "S5.$t.d$DELAY.prewarm" "$t" prewarm seqread -- -w seqread -b 1m -j 16 \
            "$(target_url "$t" s5.dat)"
        for j in 1 16; do
            bench "S5.$t.d$DELAY.warm.j$j" "$t" warm "j$j" -- -w randread -b 4k -a 4k \
                -n "$n" -j "$j" -S 5 "$(target_url "$t" s5.dat)"
        done
        stop_targets
    done
}

# age_tree DIR: the mtimes (and atimes) of everything under $EXPORT_DIR/DIR
# set a day back, as those of a tree nobody changed lately: the namespace
# cache then trusts their attributes acregmax/acdirmax seconds (60), where
# a tree made a minute ago would get (now - mtime) / 10, a few seconds
age_tree() {
    python3 - "$EXPORT_DIR/$1" <<'EOF'
import os, sys, time
t = time.time() - 86400
for d, _, files in os.walk(sys.argv[1], topdown=False):
    for f in files:
        os.utime(os.path.join(d, f), (t, t), follow_symlinks=False)
    os.utime(d, (t, t))
EOF
}

# make_tree DIR FILES SIZE LIST: FILES files of SIZE bytes in 100 files per
# directory under $EXPORT_DIR/DIR, their paths (relative to DIR) into LIST;
# aged (age_tree)
make_tree() {
    python3 - "$EXPORT_DIR/$1" "$2" "$3" "$4" <<'EOF'
import os, sys
root, n, size, listfile = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
os.makedirs(root, exist_ok=True)
blob = os.urandom(max(size, 1) + 4096)
with open(listfile, "w") as lf:
    for i in range(n):
        d = "d%04d" % (i // 100)
        if i % 100 == 0:
            os.makedirs(os.path.join(root, d), exist_ok=True)
        rel = "%s/f%06d" % (d, i)
        off = i % 4096
        with open(os.path.join(root, rel), "wb") as f:
            f.write(blob[off:off + size])
        lf.write(rel + "\n")
EOF
    age_tree "$1"
}

# S6 (W4): read a tree of S6_FILES files whole, -j 4, cold then warm.
# With S6_AB=1 nfscached runs it again with cache.metadata=no (variant
# "tree meta=no").
s6() {
    local t ph v opt sfx
    [ -d "$EXPORT_DIR/s6" ] || make_tree s6 "$S6_FILES" "$S6_FILE_SIZE" "$T_TMP/s6.list"
    for t in $TARGETS; do
        for v in on off; do
            case $t/$v in
                nfscached/off) [ "$S6_AB" = 1 ] || continue; opt=(-o cache.metadata=no) sfx=" meta=no" ;;
                */off) continue ;;
                *) opt=() sfx= ;;
            esac
            head -n "$(cap "$t" "$S6_FILES" 3)" "$T_TMP/s6.list" > "$T_TMP/s6.$t.list"
            start_target "$t" "${opt[@]}"
            for ph in cold warm; do
                bench "S6.$t.d$DELAY.$v.$ph" "$t" "$ph" "tree$sfx" -- -w tree -j 4 -b 1m \
                    -l "$T_TMP/s6.$t.list" "$(target_url "$t" s6)"
            done
            stop_targets
        done
    done
}

# make_dirs DIR NDIRS NFILES SIZE: NFILES files of SIZE bytes spread evenly
# over NDIRS directories under $EXPORT_DIR/DIR (d000/f0000...); aged
make_dirs() {
    python3 - "$EXPORT_DIR/$1" "$2" "$3" "$4" <<'EOF'
import os, sys
root, nd, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
blob = os.urandom(size + 4096)
for d in range(nd):
    os.makedirs(os.path.join(root, "d%03d" % d), exist_ok=True)
for i in range(n):
    with open(os.path.join(root, "d%03d" % (i % nd), "f%04d" % i), "wb") as f:
        f.write(blob[i % 4096:i % 4096 + size])
EOF
    age_tree "$1"
}

# S7: a fresh client walking a tree of S7_FILES small files in S7_DIRS
# directories with one call in flight (nfsbench -w walk: READDIRPLUS of each
# directory, then LOOKUP, ACCESS, GETATTR and READ of each file), and
# `nfs-ls -R` of the tree, each cold (a fresh target) then warm (a second
# fresh client). nfscached also with cache.metadata=no (variant "... meta=no").
# PROXY_V4 over a delayed link walks PROXY_CAP / 6 files.
s7() {
    local t v ph opt sfx n
    [ -d "$EXPORT_DIR/s7" ] || make_dirs s7 "$S7_DIRS" "$S7_FILES" "$S7_FILE_SIZE"
    for t in $TARGETS; do
        for v in on off; do
            case $t/$v in
                nfscached/off) opt=(-o cache.metadata=no) sfx=" meta=no" ;;
                */off) continue ;;
                *) opt=() sfx= ;;
            esac
            n=$(cap "$t" "$S7_FILES" 6)
            start_target "$t" "${opt[@]}"
            for ph in cold warm; do
                bench "S7.$t.d$DELAY.$v.walk.$ph" "$t" "$ph" "walk$sfx" -- -w walk -j 1 -b 1m \
                    -n "$n" "$(target_url "$t" s7)"
            done
            start_target "$t" "${opt[@]}"
            for ph in cold warm; do
                bench "S7.$t.d$DELAY.$v.ls.$ph" "$t" "$ph" "ls-R$sfx" -- ls-R "$(target_url "$t" s7)"
            done
            stop_targets
        done
    done
}

# META: memory per namespace cache entry. META_FILES tiny files (100 a
# directory) walked without READs (-N, -j 4) through a fresh nfscached with
# cache.metadata=yes, then =no; bytes per entry = (RSS growth with - RSS
# growth without) / cache.metadata.entries.
meta() {
    local v rss0 rss1 ent st sy= gy=0 gn=0 ey=0
    [ -d "$EXPORT_DIR/meta" ] || make_tree meta "$META_FILES" 64 "$T_TMP/meta.list"
    for v in yes no; do
        bench_nfscached -o cache.metadata=$v
        rss0=$(rss_kb)
        bench "META.nfscached.d$DELAY.$v" nfscached cold "metadata=$v" -- -w walk -N -j 4 \
            "$(target_url nfscached meta)"
        rss1=$(rss_kb)
        ent=$(ctl stats | awk '$1 == "cache.metadata.entries" { print $2 }')
        st=$(ctl status | awk '/meta/ { printf "%s=%s ", $1, $2 }')
        stop_nfscached
        log "  metadata=$v: VmRSS $rss0 -> $rss1 KiB, ${ent:-?} entries ${st}"
        if [ "$v" = yes ]; then gy=$((rss1 - rss0)) ey=${ent:-0} sy=$st; else gn=$((rss1 - rss0)); fi
    done
    python3 "$REPORT_PY" note "$RESULTS" --id "META.summary" --scenario META --delay "$DELAY" \
        --extra "{\"files\": $META_FILES, \"rss_growth_on_kb\": $gy, \"rss_growth_off_kb\": $gn,
                 \"entries\": $ey, \"status_on\": \"$sy\", \"bytes_per_entry\": $(
                     [ "$ey" -gt 0 ] && echo $(( (gy - gn) * 1024 / ey )) || echo null)}"
}

# MEM: memory and start-up with many cached objects, at MEM_FILES and at
# MEM_FILES_LARGE tiny files (64 bytes, 100 a directory; 0 = that size not
# run). The tree is made in the export by one python pass (aged a day); the
# cache is filled through NFS only, by nfsbench -w tree -j 16 reading it
# through nfscached (nothing writes the cache directory but nfscached).
# Per size:
#   fill     a fresh nfscached (cache.metadata = no, the default
#            resident_max) reads the tree cold: VmRSS after it
#   reread   the same daemon reads it again, warm: VmRSS after it (target:
#            <= 96 MiB at 1,000,000 objects)
#   restart  a clean stop (SIGTERM), a start on the same cache: the time from
#            exec to `nfscachectl status` answering (target: <= 1 s at
#            1,000,000), the cache's start-up line, VmRSS; then the tree read
#            again, its objects not resident: throughput, upstream READs
#            (target: 0), VmRSS
#   meta     a clean stop, a start with cache.metadata = yes, the tree read
#            again: VmRSS; bytes per namespace entry = (its VmRSS growth -
#            restart's) / cache.metadata.entries, as META does
# make_mem_tree DIR FILES LIST: that tree under $EXPORT_DIR/DIR, its paths
# (relative to DIR) into LIST; each file's mtime set through its descriptor
# as it is written (no second walk)
make_mem_tree() {
    python3 - "$EXPORT_DIR/$1" "$2" "$3" <<'EOF'
import os, sys, time
root, n, listfile = sys.argv[1], int(sys.argv[2]), sys.argv[3]
size = 64
blob = os.urandom(size + 4096)
t = time.time() - 86400
dirs = []
with open(listfile, "w") as lf:
    for i in range(n):
        if i % 100 == 0:
            d = "d%04d" % (i // 100)
            os.makedirs(os.path.join(root, d), exist_ok=True)
            dirs.append(d)
        rel = "%s/f%07d" % (d, i)
        fd = os.open(os.path.join(root, rel), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, blob[i % 4096:i % 4096 + size])
        os.utime(fd, (t, t))
        os.close(fd)
        lf.write(rel + "\n")
for d in dirs:
    os.utime(os.path.join(root, d), (t, t))
os.utime(root, (t, t))
EOF
}
# stat_of FILE NAME: counter NAME in a saved `stats` output (null when missing)
stat_of() { awk -v n="$2" '$1 == n { print $2; f = 1 } END { if (!f) print "null" }' "$1"; }
# mem_size FILES: the four steps above at FILES files
mem_size() {
    local F=$1 dir=mem$1 list=$T_TMP/mem$1.list id=MEM.$1 t0 t1
    local rss_start rss_fill rss_reread rss_r0 rss_r1 rss_m0 rss_m1 objs resident start_ms line
    local meta_start_ms entries bpe=null lines0 reads=null r0 r1
    # a run reads F files one after another in 16 streams (about 1,500 a
    # second on loopback): room for every file, whatever F is
    local CLIENT_TIMEOUT=$((CLIENT_TIMEOUT + F * 3 / 1000))
    if [ ! -d "$EXPORT_DIR/$dir" ]; then
        t0=$(date +%s%N)
        make_mem_tree "$dir" "$F" "$list"
        t1=$(date +%s%N)
        log "  $F files made in the export in $(((t1 - t0) / 1000000)) ms"
    fi
    # fill, then re-read, the namespace cache off
    bench_nfscached -o cache.metadata=no
    rss_start=$(rss_kb)
    bench "$id.fill" nfscached cold "$F files" -- -w tree -j 16 -b 1m -l "$list" \
        "$(target_url nfscached "$dir")"
    rss_fill=$(rss_kb)
    bench "$id.reread" nfscached warm "$F files" -- -w tree -j 16 -b 1m -l "$list" \
        "$(target_url nfscached "$dir")"
    rss_reread=$(rss_kb)
    ctl stats > "$RES/raw/$id.reread.stats"
    objs=$(stat_of "$RES/raw/$id.reread.stats" cache.objects)
    resident=$(stat_of "$RES/raw/$id.reread.stats" cache.objects.resident)
    log "  $F: VmRSS $rss_start KiB at start, $rss_fill after the fill, $rss_reread after the" \
        "re-read (target at 1,000,000: <= 98304); cache.objects $objs, resident $resident"
    # a clean restart: start-up time, then a re-read of a tree not resident
    stop_nfscached
    lines0=$(wc -l < "$T_TMP/nfscached.log")
    bench_nfscached --keep-cache -o cache.metadata=no
    start_ms=$NFSCACHED_START_MS
    rss_r0=$(rss_kb)
    line=$(tail -n +"$((lines0 + 1))" "$T_TMP/nfscached.log" | grep -m 1 -E 'cache: .*: [0-9]+ objects' |
        sed 's/^[0-9:.]* //')
    ctl stats > "$RES/raw/$id.restart0.stats"
    bench "$id.restart" nfscached restart "$F files" -- -w tree -j 16 -b 1m -l "$list" \
        "$(target_url nfscached "$dir")"
    rss_r1=$(rss_kb)
    ctl stats > "$RES/raw/$id.restart1.stats"
    r0=$(stat_of "$RES/raw/$id.restart0.stats" upstream.calls.READ)
    r1=$(stat_of "$RES/raw/$id.restart1.stats" upstream.calls.READ)
    [[ "$r0$r1" =~ ^[0-9]+$ ]] && reads=$((r1 - r0))
    log "  $F: restart: status answered after $start_ms ms (target at 1,000,000: <= 1000);" \
        "\"$line\"; VmRSS $rss_r0 -> $rss_r1 KiB; upstream READs in the re-read: $reads (target 0)"
    # the namespace cache on
    stop_nfscached
    bench_nfscached --keep-cache -o cache.metadata=yes
    meta_start_ms=$NFSCACHED_START_MS
    rss_m0=$(rss_kb)
    bench "$id.meta" nfscached restart "$F files meta=yes" -- -w tree -j 16 -b 1m -l "$list" \
        "$(target_url nfscached "$dir")"
    rss_m1=$(rss_kb)
    entries=$(ctl stats | awk '$1 == "cache.metadata.entries" { print $2 }')
    stop_nfscached
    [ "${entries:-0}" -gt 0 ] && bpe=$(( ((rss_m1 - rss_m0) - (rss_r1 - rss_r0)) * 1024 / entries ))
    log "  $F: metadata=yes: VmRSS $rss_m0 -> $rss_m1 KiB, ${entries:-?} entries, $bpe bytes per entry"
    python3 "$REPORT_PY" note "$RESULTS" --id "$id.summary" --scenario MEM --delay "$DELAY" \
        --extra "{\"files\": $F, \"filled\": \"through NFS (nfsbench -w tree -j 16)\",
                 \"cache_objects\": $objs, \"cache_objects_resident\": $resident,
                 \"rss_start_kb\": ${rss_start:-null}, \"rss_after_fill_kb\": ${rss_fill:-null},
                 \"rss_after_reread_kb\": ${rss_reread:-null},
                 \"start_to_status_ms\": $start_ms, \"index_log_line\": \"$(echo "$line" | tr -d '"\\')\",
                 \"rss_restart_kb\": ${rss_r0:-null}, \"rss_restart_reread_kb\": ${rss_r1:-null},
                 \"restart_reread_upstream_reads\": $reads,
                 \"meta_start_to_status_ms\": $meta_start_ms,
                 \"rss_meta_start_kb\": ${rss_m0:-null}, \"rss_meta_reread_kb\": ${rss_m1:-null},
                 \"metadata_entries\": ${entries:-null}, \"bytes_per_entry\": $bpe}"
    rm -rf "$T_TMP/cache"     # the next size starts from an empty cache
}
mem() {
    mem_size "$MEM_FILES"
    [ "$MEM_FILES_LARGE" -gt 0 ] && mem_size "$MEM_FILES_LARGE"
    return 0
}

# CP: a warm copy of an S1_SIZE MiB file with nfs-cp (one 1 MiB READ in
# flight), straight from the upstream ganesha and from nfscached (after a
# read that made it warm), both on loopback without the relay; the best of
# CP_RUNS runs each, in ms.
cp_warm() {
    local t i t0 t1 best url
    [ -f "$EXPORT_DIR/s1.dat" ] || make_file s1.dat "$S1_SIZE"
    bench_nfscached
    timeout -k 5 "$CLIENT_TIMEOUT" nfs-cat "$(url "$PORT" "$PORT" s1.dat)" > /dev/null
    local extra="{\"size_mib\": $S1_SIZE, \"runs\": $CP_RUNS"
    for t in direct nfscached; do
        case $t in
            direct) url=$(url "$UP_NFS_PORT" "$UP_MNT_PORT" s1.dat) ;;
            nfscached) url=$(url "$PORT" "$PORT" s1.dat) ;;
        esac
        best=
        for i in $(seq 1 "$CP_RUNS"); do
            rm -f "$T_TMP/cp.out"
            t0=$(date +%s%N)
            timeout -k 5 "$CLIENT_TIMEOUT" nfs-cp "$url" "$T_TMP/cp.out" > /dev/null 2>&1 ||
                log "  CP $t: nfs-cp failed"
            t1=$(date +%s%N)
            t1=$(((t1 - t0) / 1000000))
            [ -z "$best" ] || [ "$t1" -lt "$best" ] && best=$t1
        done
        log "  CP $t: best of $CP_RUNS: $best ms"
        extra="$extra, \"${t}_ms\": $best"
    done
    ctl stats > "$RES/raw/CP.stats"
    extra="$extra, \"upstream_reads_warm\": $(awk '$1 == "upstream.calls.READ" { print $2 }' "$RES/raw/CP.stats")}"
    stop_nfscached
    rm -f "$T_TMP/cp.out"
    python3 "$REPORT_PY" note "$RESULTS" --id "CP.summary" --scenario CP --delay 0 --extra "$extra"
}

# ---- main ------------------------------------------------------------------
# A build with sanitizers measures the sanitizers: benchmark an optimised
# build of the same sources instead (out of tree, in $T_TMP/build).
ASAN=0
if ldd "$NFSCACHED" 2>/dev/null | grep -q libasan; then
    log "nfscached in $top_builddir is an ASan/UBSan build: building an -O2 one in $T_TMP/build"
    mkdir -p "$T_TMP/build"
    # the tracked files as they are in the working tree (a configured source
    # tree cannot host a second, out-of-tree build)
    if (cd "$srcdir" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$T_TMP/build" &&
        (cd "$T_TMP/build" && autoreconf -fi && ./configure CFLAGS="-O2 -g" --disable-e2e-tests \
            --with-systemdsystemunitdir=no && make -j2 nfscached nfscachectl) \
            > "$T_TMP/build.log" 2>&1; then
        NFSCACHED=$T_TMP/build/nfscached
        NFSCACHECTL=$T_TMP/build/nfscachectl
    else
        log "warning: the -O2 build failed (see $T_TMP/build.log): using the ASan build, slower"
        ASAN=1
    fi
fi
start_upstream 2>"$T_TMP/upstream.err" || die "upstream ganesha: $(tr '\n' ' ' <"$T_TMP/upstream.err")"
log "upstream ganesha pid $GANESHA_PID on $UP_NFS_PORT/$UP_MNT_PORT"
cat > "$RES/params.json" <<EOF
{"quick": $QUICK, "loadavg_at_start": "$(cut -d' ' -f1-3 /proc/loadavg)", "nfscached_asan_build": $ASAN, "PROXY_CAP_at_5ms": $PROXY_CAP, "scenarios": "$SCENARIOS", "delays": "$DELAYS", "far_delay": "$FAR_DELAY", "far_scenarios": "$FAR_SCENARIOS", "targets": "$TARGETS",
 "S1_SIZE_MiB": $S1_SIZE, "S2_SIZE_MiB": $S2_SIZE, "S2_WRITES": $S2_WRITES, "S2_READS": $S2_READS,
 "S3_SIZE_MiB": $S3_SIZE, "S3_REQS": $S3_REQS, "S4_SIZE_MiB": $S4_SIZE, "S4_BLOCK": "$S4_BLOCK",
 "S5_REQS": $S5_REQS, "S5_REQS_REF": $S5_REQS_REF, "S6_FILES": $S6_FILES,
 "S6_FILE_SIZE": $S6_FILE_SIZE, "S6_AB": $S6_AB, "MEM_FILES": $MEM_FILES, "MEM_FILES_LARGE": $MEM_FILES_LARGE, "S7_DIRS": $S7_DIRS,
 "S7_FILES": $S7_FILES, "S7_FILE_SIZE": $S7_FILE_SIZE, "META_FILES": $META_FILES}
EOF

for sc in $SCENARIOS; do
    case $sc in
        S1) desc="sequential read ${S1_SIZE} MiB, 1 MiB blocks" ;;
        S2) desc="W1: ${S2_WRITES} random 1 KiB writes then ${S2_READS} 1 KiB reads, ${S2_SIZE} MiB" ;;
        S3) desc="W2: randrw 2 KiB, ratio 0.5, -j 16, ${S3_REQS} calls on ${S3_SIZE} MiB" ;;
        S4) desc="W3: seqwrite ${S4_SIZE} MiB, 4 files x -j 8, $S4_BLOCK blocks" ;;
        S5) desc="cached 4 KiB randread latency and CPU per call" ;;
        S6) desc="W4: tree of $S6_FILES files x $S6_FILE_SIZE B, -j 4" ;;
        S7) desc="fresh client walking $S7_FILES files in $S7_DIRS directories, one call in flight; nfs-ls -R" ;;
        CP) desc="warm nfs-cp of ${S1_SIZE} MiB, straight from ganesha and from nfscached" ;;
        MEM) desc="RSS and start-up time with $MEM_FILES and $MEM_FILES_LARGE cached files" ;;
        META) desc="bytes per namespace cache entry, $META_FILES files walked" ;;
        *) echo "unknown scenario $sc" >&2; continue ;;
    esac
    scenario_begin "$sc" "$desc"
    if [ "$sc" = MEM ] || [ "$sc" = META ]; then
        start_relay 0
        "$(echo "$sc" | tr 'A-Z' 'a-z')"
    elif [ "$sc" = CP ]; then
        start_relay 0
        cp_warm
    else
        dls=$DELAYS
        case " $FAR_SCENARIOS " in *" $sc "*) [ -n "$FAR_DELAY" ] && dls="$dls $FAR_DELAY" ;; esac
        for dl in $dls; do
            start_relay "$dl"
            log "--- $sc at $dl ms"
            if [ -n "$FAR_DELAY" ] && [ "$dl" = "$FAR_DELAY" ]; then
                TARGETS=$(echo " $ALL_TARGETS " | sed 's/ proxy / /') "$(echo "$sc" | tr 'S' 's')"
            else
                TARGETS=$ALL_TARGETS "$(echo "$sc" | tr 'S' 's')"
            fi
        done
    fi
    scenario_end
done

TOTAL=$((SECONDS - T_START))
log "all scenarios done in $TOTAL s; writing the report to $OUT"
mkdir -p "$OUT/bench"
# scenarios not run this time keep their sections of the previous report
PREV=
[ -f "$OUT/bench/results.json" ] && cp "$OUT/bench/results.json" "$T_TMP/previous.json" &&
    PREV=$T_TMP/previous.json
python3 "$REPORT_PY" report "$RESULTS" --params "$RES/params.json" --elapsed "$RES/elapsed.txt" \
    --total "$TOTAL" --srcdir "$srcdir" --out "$OUT" ${PREV:+--merge "$PREV"} || die "report.py failed"
log "wrote $OUT/BENCHMARKS.md, $OUT/bench/results.json and plots"
