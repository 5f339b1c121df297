#!/bin/bash
# 68-meta-evict: the namespace cache bounded by cache.metadata_max = 1000
# with 5,000 names in 5 directories (and 500 names that are not there):
# LOOKUP and GETATTR of every name through nfscached, twice, and a
# READDIRPLUS listing of every directory, answer what the upstream answers
# (status, handle, type, size, fileid, mtime; the names listed) while the
# cache evicts (cache.metadata.evictions > 0); cache.metadata.entries,
# sampled every 50 ms meanwhile, is never above 1000.  Then 100 names
# looked up twice: the second time all hits; after nfscachectl
# invalidate --all, none.
TEST_TIMEOUT=${TEST_TIMEOUT:-180}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the namespace cache of nfscached"
needs_own_upstream

MAX=1000 NDIRS=5 PER=1000
python3 - "$EXPORT_DIR" "$NDIRS" "$PER" <<'PY'
import os, sys
top, ndirs, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for d in range(ndirs):
    p = os.path.join(top, "e%d" % d)
    os.mkdir(p)
    for i in range(per):
        with open(os.path.join(p, "f%04d" % i), "wb") as f:
            f.write(b"y" * ((d * per + i) * 7 % 4999))
PY
for d in $(seq 0 $((NDIRS - 1))); do
    { for i in $(seq 0 $((PER - 1))); do printf 'f%04d\n' "$i"; done
      for i in $(seq 0 99); do printf 'missing%03d\n' "$i"; done; } > "$T_TMP/names.e$d"
done
setup -o cache.metadata=yes -o cache.metadata_max=$MAX

for d in $(seq 0 $((NDIRS - 1))); do
    DIRS[$d]=$(fh_of "e$d")
done
[ "${#DIRS[@]}" = "$NDIRS" ] && [ -n "${DIRS[$((NDIRS - 1))]}" ]
ok $? "the handles of the $NDIRS directories through nfscached" || done_testing

# cache.metadata.entries every 50 ms into entries.samples while the test runs
( while :; do
      ctl stats 2>/dev/null | awk '$1 == "cache.metadata.entries" { print $2 }'
      sleep 0.05
  done ) >> "$T_TMP/entries.samples" 2>/dev/null &
SAMPLER=$!
track "$SAMPLER"

snap s0
for pass in 1 2; do
    for d in $(seq 0 $((NDIRS - 1))); do
        rpc statmany "${DIRS[$d]}" --names-file "$T_TMP/names.e$d" --out "$T_TMP/p$pass.e$d" \
            > "$T_TMP/p$pass.e$d.out" 2>&1
        [ "$pass" = 1 ] && up statmany "${DIRS[$d]}" --names-file "$T_TMP/names.e$d" \
            --out "$T_TMP/direct.e$d" > "$T_TMP/direct.e$d.out" 2>&1
        # a listing of the directory, after the LOOKUPs of the first pass
        [ "$pass" = 1 ] && RPC_LIMIT=120 rpc readdirplus "${DIRS[$d]}" --names-out "$T_TMP/ls.e$d" \
            > "$T_TMP/ls.e$d.out" 2>&1
    done
done
snap s1
kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null

for d in $(seq 0 $((NDIRS - 1))); do
    v() { val "$T_TMP/$1.out" "$2"; }
    is "$(v "direct.e$d" found) $(v "direct.e$d" noent) $(v "direct.e$d" getattr_errors)" "$PER 100 0" \
        "e$d directly: $PER names found, 100 not there"
    for pass in 1 2; do
        is "$(v "p$pass.e$d" found) $(v "p$pass.e$d" noent) $(v "p$pass.e$d" lookup_errors) $(v "p$pass.e$d" getattr_errors)" \
            "$PER 100 0 0" "e$d pass $pass: $PER names found, 100 NFS3ERR_NOENT, no error" ||
            diag "$(tail -n 4 "$T_TMP/p$pass.e$d.out")"
        cmp -s "$T_TMP/p$pass.e$d" "$T_TMP/direct.e$d"
        ok $? "e$d pass $pass: every status, handle, type, size, fileid and mtime is the upstream's" ||
            diag "$(diff "$T_TMP/direct.e$d" "$T_TMP/p$pass.e$d" | head -n 4)"
    done
    is "$(val "$T_TMP/ls.e$d.out" nfs_status) $(val "$T_TMP/ls.e$d.out" entries) $(val "$T_TMP/ls.e$d.out" distinct_names)" \
        "NFS3_OK $((PER + 2)) $((PER + 2))" "e$d: READDIRPLUS lists $PER names, . and .., each once"
    is "$(LC_ALL=C sort "$T_TMP/ls.e$d" | md5sum)" \
        "$({ ls -A "$EXPORT_DIR/e$d"; echo .; echo ..; } | LC_ALL=C sort | md5sum)" "e$d: ... the directory's names"
done

num_ok "$(d s0 s1 cache.metadata.evictions)" -gt 0 \
    "entries were evicted (cache.metadata.evictions +$(d s0 s1 cache.metadata.evictions))"
samples=$(grep -c '^[0-9]' "$T_TMP/entries.samples")
most=$(sort -n "$T_TMP/entries.samples" | tail -n 1)
num_ok "$samples" -ge 10 "cache.metadata.entries sampled $samples times"
num_ok "$most" -le "$MAX" "cache.metadata.entries never above $MAX (at most $most)"
num_ok "$most" -ge $((MAX / 2)) "cache.metadata.entries reached $most: the cache was used up to its bound"
num_ok "$(sv s1 cache.metadata.entries)" -le "$MAX" "cache.metadata.entries at the end: $(sv s1 cache.metadata.entries)"

# the cache still works after all that: 100 names twice, the second time
# every LOOKUP and GETATTR a hit
for i in $(seq 0 99); do printf 'f%04d\n' "$i"; done > "$T_TMP/names.small"
rpc statmany "${DIRS[0]}" --names-file "$T_TMP/names.small" --out "$T_TMP/small1" > "$T_TMP/small1.out" 2>&1
snap s2
rpc statmany "${DIRS[0]}" --names-file "$T_TMP/names.small" --out "$T_TMP/small2" > "$T_TMP/small2.out" 2>&1
snap s3
head -n 100 "$T_TMP/direct.e0" > "$T_TMP/small.direct"
cmp -s "$T_TMP/small1" "$T_TMP/small.direct" && cmp -s "$T_TMP/small2" "$T_TMP/small.direct"
ok $? "100 names twice: the upstream's answers"
is "$(d s2 s3 cache.lookup.hits) $(d s2 s3 cache.attr.hits)" "100 100" \
    "100 names again: every LOOKUP and GETATTR a hit"
is "$(d s2 s3 upstream.calls.LOOKUP) $(d s2 s3 upstream.calls.GETATTR)" "0 0" \
    "100 names again: no upstream LOOKUP or GETATTR"

# invalidate --all empties the cache: the same 100 names go upstream again
snap s4
ctl invalidate --all > "$T_TMP/inv.out" 2>&1
ok $? "nfscachectl invalidate --all" || diag "$(cat "$T_TMP/inv.out")"
snap s5
is "$(sv s5 cache.metadata.entries) $(d s4 s5 cache.metadata.invalidations)" "0 1" \
    "invalidate --all: no entry left, cache.metadata.invalidations +1"
rpc statmany "${DIRS[0]}" --names-file "$T_TMP/names.small" --out "$T_TMP/small3" > "$T_TMP/small3.out" 2>&1
snap s6
cmp -s "$T_TMP/small3" "$T_TMP/small.direct"
ok $? "invalidate --all: the 100 names again: the upstream's answers"
is "$(d s5 s6 upstream.calls.LOOKUP) $(d s5 s6 cache.lookup.hits)" "100 0" \
    "invalidate --all: ... each LOOKUP asked upstream"
done_testing
