#!/bin/bash
# tests/fuzz/run.sh: runs the libFuzzer targets of tests/fuzz/ (built by
# `make fuzz`, or by `make check` when configure found clang) on their seed
# corpora, each for FUZZ_TIME seconds, FUZZ_JOBS targets at a time. TAP:
# one result per target, with the executions it made; a crash, a leak, a
# sanitizer report or a broken invariant fails it (the input is saved).
#
#   tests/fuzz/run.sh [TARGET...]        (default: every target)
#
# Environment: FUZZ_TIME (seconds per target, default 30), FUZZ_JOBS
# (default 2: tests/run-all.sh runs one test at a time, on 2 cores),
# FUZZ_MAX_LEN (bytes of an input, default 4096), top_srcdir, top_builddir
# (set by `make check` and `make fuzz`).
# Under the build directory's tests/fuzz/out/: seeds/TARGET (written anew
# by seeds.py each run), corpus/TARGET (what the fuzzer found, kept from
# run to run), logs/TARGET.log, and crash-*/leak-*/timeout-* inputs.
# A target that was not built fails when NFSCACHED_REQUIRE_E2E=1 (CI) and
# is skipped otherwise.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
FUZZ_TIME=${FUZZ_TIME:-30}
FUZZ_JOBS=${FUZZ_JOBS:-2}
FUZZ_MAX_LEN=${FUZZ_MAX_LEN:-4096}
ALL_TARGETS="fuzz_record fuzz_call fuzz_args fuzz_drc fuzz_ctl"
targets=${*:-$ALL_TARGETS}
out=$top_builddir/tests/fuzz/out
bindir=$top_builddir/tests/fuzz

mkdir -p "$out/logs" "$out/results" || exit 1
rm -rf "$out/seeds" "$out/results"/*
seeds_ok=1
python3 "$top_srcdir/tests/fuzz/seeds.py" "$out/seeds" >"$out/logs/seeds.log" 2>&1 || seeds_ok=0

# run_one TARGET: fuzz it; its TAP line (without number) goes to results/TARGET.
run_one() {
    local t=$1 bin=$bindir/$1 log=$out/logs/$1.log res=$out/results/$1 rc execs
    if [ ! -x "$bin" ]; then
        if [ "${NFSCACHED_REQUIRE_E2E:-0}" = 1 ]; then
            echo "not ok - $t: not built (configure found no clang linking -fsanitize=fuzzer; Debian: clang libclang-rt-dev, or ./configure FUZZ_CC=...)" >"$res"
        else
            echo "ok - $t # SKIP not built (no clang with libFuzzer)" >"$res"
        fi
        return
    fi
    if [ "$seeds_ok" != 1 ]; then
        { echo "not ok - $t: seeds.py failed"; sed 's/^/# /' "$out/logs/seeds.log"; } >"$res"
        return
    fi
    mkdir -p "$out/corpus/$t"
    # the time limit is libFuzzer's; timeout(1) only catches a hang of the
    # fuzzer itself
    timeout -k 10 $((FUZZ_TIME + 120)) "$bin" -max_total_time="$FUZZ_TIME" -timeout=20 \
        -max_len="$FUZZ_MAX_LEN" -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$out/" "$out/corpus/$t" "$out/seeds/$t" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    if [ "$rc" = 0 ] && [ -n "$execs" ] && [ "$execs" -gt 0 ]; then
        echo "ok - $t: $execs executions in $FUZZ_TIME s, corpus $(find "$out/corpus/$t" -type f | wc -l) inputs" >"$res"
    else
        {
            echo "not ok - $t: exit status $rc after ${execs:-?} executions (log: $log)"
            grep -E 'invariant broken|ERROR:|SUMMARY:|Test unit written to' "$log" | head -n 10 | sed 's/^/# /'
            tail -n 40 "$log" | sed 's/^/#   /'
        } >"$res"
    fi
}

running=0
for t in $targets; do
    case " $ALL_TARGETS " in
        *" $t "*) ;;
        *) echo "not ok - $t: no such target (targets: $ALL_TARGETS)" >"$out/results/$t"; continue ;;
    esac
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$FUZZ_JOBS" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait

n=0 failed=0
for t in $targets; do
    n=$((n + 1))
    line=$(head -n 1 "$out/results/$t")
    echo "${line/ok - /ok $n - }"
    tail -n +2 "$out/results/$t"
    case $line in "not ok"*) failed=$((failed + 1)) ;; esac
done
echo "1..$n"
[ "$failed" = 0 ]
