#!/bin/bash
# tests/layers.sh: the layers hold, by include (README "Layout"):
# common/ includes nothing of the others; proto/ and cache/ include nothing
# of daemon/; proto/ includes nothing of cache/; and the cache's unit test
# links no daemon file.  TAP output.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
cd "$top_srcdir" || exit 1
n=0 failed=0

# check DESCRIPTION DIRS PATTERN: no file under DIRS includes PATTERN.
check() {
    local what=$1 dirs=$2 pattern=$3 hits
    n=$((n + 1))
    # shellcheck disable=SC2086
    hits=$(grep -nE "^#[[:space:]]*include[[:space:]]+\"($pattern)" $dirs 2>/dev/null)
    if [ -z "$hits" ]; then
        echo "ok $n - $what"
    else
        echo "not ok $n - $what"
        printf '%s\n' "$hits" | sed 's/^/# /'
        failed=$((failed + 1))
    fi
}

check "common/ includes nothing of proto/, cache/, daemon/" "common/*.[ch]" "proto/|cache/|daemon/"
check "proto/ includes nothing of daemon/" "proto/*.[ch]" "daemon/"
check "proto/ includes nothing of cache/" "proto/*.[ch]" "cache/"
check "cache/ includes nothing of daemon/" "cache/*.[ch]" "daemon/"

n=$((n + 1))
srcs=$(sed -n '/^tests_unit_test_cache_SOURCES/,/^[^[:space:]].*[^\\]$/p' Makefile.am | grep -oE '[a-z_/]+\.c')
if [ -n "$srcs" ] && ! printf '%s\n' "$srcs" | grep -q '^daemon/'; then
    echo "ok $n - tests/unit/test_cache links no daemon file"
else
    echo "not ok $n - tests/unit/test_cache links no daemon file"
    printf '%s\n' "$srcs" | sed 's/^/# /'
    failed=$((failed + 1))
fi
echo "1..$n"
[ "$failed" = 0 ]
