# tests/lib/tap.sh: TAP output of a test script (bash).
#
# Definitions only: sourcing this file runs nothing. The functions count in
# T_N (assertions so far), T_FAILED (failed ones) and T_DONE (1 once the plan
# is printed), which the sourcing script sets to 0 first; fail_or_skip names
# the test by T_NAME. done_testing stops the daemon under test when one runs
# (NFSCACHED_PID; stop_nfscached and no_sanitizer_report, tests/lib/daemon.sh).

diag() { printf '%s\n' "$@" | sed 's/^/# /'; }

# ok STATUS DESCRIPTION: passes when STATUS is 0 (`cmd; ok $? "what"`).
ok() {
    T_N=$((T_N + 1))
    if [ "$1" = 0 ]; then
        echo "ok $T_N - $2"
    else
        echo "not ok $T_N - $2"
        T_FAILED=$((T_FAILED + 1))
    fi
    return "$1"
}

# is GOT WANT DESCRIPTION: string equality.
is() {
    [ "$1" = "$2" ] && { ok 0 "$3"; return 0; }
    ok 1 "$3"
    diag "  got:  '$1'" "  want: '$2'"
    return 1
}

# num_ok GOT OP WANT DESCRIPTION: integer comparison, OP is -eq -ge -gt ...
num_ok() {
    if [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" "$2" "$3" ]; then ok 0 "$4"; return 0; fi
    ok 1 "$4"
    diag "  got: '$1', want: $2 $3"
    return 1
}

# skip DESCRIPTION [REASON]: an assertion not made, counted as passed.
skip() { T_N=$((T_N + 1)); echo "ok $T_N - $1 # SKIP ${2:-}"; }

# fail_or_skip REASON: a prerequisite is missing. Fails in CI
# (NFSCACHED_REQUIRE_E2E=1), skips the rest of the test otherwise. Exits.
fail_or_skip() {
    if [ "${NFSCACHED_REQUIRE_E2E:-0}" = 1 ]; then
        ok 1 "prerequisite: $1"
    elif [ "$T_N" = 0 ]; then
        echo "1..0 # SKIP $1"
        T_DONE=1
        exit 0
    else
        skip "rest of $T_NAME" "$1"
    fi
    done_testing
}

# done_testing: stops the daemon under test (its exit status is asserted:
# a crash or a sanitizer report fails the test), prints the plan and exits.
done_testing() {
    if [ -n "${NFSCACHED_PID:-}" ]; then
        stop_nfscached
        ok $? "nfscached exits cleanly on SIGTERM"
        no_sanitizer_report "$T_TMP/nfscached.log"
        ok $? "no sanitizer report in the daemon log"
    fi
    echo "1..$T_N"
    T_DONE=1
    [ "$T_FAILED" = 0 ]
    exit $?
}
