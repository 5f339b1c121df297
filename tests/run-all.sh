#!/bin/bash
# run-all.sh: builds nfscached from a clean tree and runs the whole suite the
# way CI does: autoreconf, configure --enable-werror --enable-asan (ASan and
# UBSan; ASAN=0 leaves them out), make, then `make check` with
# NFSCACHED_REQUIRE_E2E=1 so an end-to-end test that cannot run fails instead
# of skipping. Starts a private rpcbind for ganesha when none answers and
# stops it (by PID) at the end.
# Then `make distcheck` (the release tarball builds, passes the unit tests,
# installs and uninstalls), counted as one test, and tests/pkg/deb.sh: the
# Debian package built from a copy of the tree, linted, installed, its
# installed binaries tested, and purged again (its TAP results counted).
# Counts the TAP results of every test, prints the logs of the tests that did
# not pass, and ends with the line "N passed, N failed". Exit 1 if any failed.
set -u
cd "$(dirname "$0")/.." || exit 1
RPCBIND_PID=
trap '[ -n "$RPCBIND_PID" ] && kill "$RPCBIND_PID" 2>/dev/null' EXIT

. tests/deps.sh
install_missing $TEST_PKGS || { echo "cannot install the test dependencies"; echo "0 passed, 1 failed"; exit 1; }

step() { echo "=== $*"; "$@"; }
build() {
    step autoreconf -fi &&
    step ./configure --enable-werror $([ "${ASAN:-1}" = 1 ] && echo --enable-asan) &&
    step make clean >/dev/null &&     # objects of an earlier build may have other flags
    step make -j2
}
if ! build; then
    echo "build failed"
    echo "0 passed, 1 failed"
    exit 1
fi

if ! rpcinfo -p >/dev/null 2>&1 && command -v rpcbind >/dev/null; then
    rm -f /run/rpcbind.sock /run/rpcbind.lock
    setsid unshare -n rpcbind -f </dev/null >/dev/null 2>&1 &
    RPCBIND_PID=$!
    for _ in $(seq 1 50); do rpcinfo -p >/dev/null 2>&1 && break; sleep 0.1; done
fi

export NFSCACHED_REQUIRE_E2E=1
find . -name '*.trs' -delete
step make check NFSCACHED_REQUIRE_E2E=1
check_rc=$?

passed=0 failed=0
bad_tests=()
while IFS= read -r trs; do
    p=$(grep -cE '^:test-result: (PASS|XFAIL)' "$trs")
    f=$(grep -cE '^:test-result: (FAIL|XPASS|ERROR|SKIP)' "$trs")
    passed=$((passed + p)) failed=$((failed + f))
    [ "$f" != 0 ] && bad_tests+=("${trs%.trs}")
done < <(find . -name '*.trs' | sort)

for t in "${bad_tests[@]}"; do
    echo "=== $t.log"
    cat "$t.log"
done
# a failure that left no test result (a check program that did not build)
[ "$check_rc" != 0 ] && [ "$failed" = 0 ] && { echo "make check failed (status $check_rc)"; failed=1; }

# the release tarball: complete, builds out of tree without libsystemd, passes
# the unit tests, installs and uninstalls; counted as one test
echo "=== make distcheck (log: distcheck.log)"
if make distcheck > distcheck.log 2>&1; then
    passed=$((passed + 1))
else
    echo "=== distcheck.log (end)"
    tail -n 60 distcheck.log
    echo "make distcheck failed"
    failed=$((failed + 1))
    # a failed distcheck leaves its tree read-only
    for d in nfscached-*/; do
        [ -d "$d" ] && chmod -R u+w "$d" && rm -rf "$d"
    done
fi

# the Debian package (tests/pkg/deb.sh): each TAP result counted; a skipped
# one, a missing plan or a failing exit status counts as a failure
echo "=== tests/pkg/deb.sh (log: pkg.log)"
pkg_t0=$SECONDS
tests/pkg/deb.sh > pkg.log 2>&1
pkg_rc=$?
p=$(grep -E '^ok [0-9]+' pkg.log | grep -vc '# SKIP')
f=$(grep -cE '^not ok [0-9]+|^ok [0-9]+.*# SKIP' pkg.log)
plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' pkg.log | tail -n 1)
if [ "$pkg_rc" != 0 ] || [ "$plan" != "$((p + f))" ]; then
    [ "$f" = 0 ] && f=1
fi
passed=$((passed + p)) failed=$((failed + f))
echo "tests/pkg/deb.sh: $p passed, $f failed, $((SECONDS - pkg_t0)) s ($(grep -m1 '^# package step:' pkg.log | sed 's/^# //'))"
if [ "$f" != 0 ]; then
    echo "=== pkg.log"
    cat pkg.log
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
