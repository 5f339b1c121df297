#!/bin/bash
# 83-restart-lazy: a start does not load the cache.  N tiny files (aged a
# day) read through nfscached (rpc.py readmany), a clean stop (SIGTERM), a
# start on the same cache directory: the cache's one start-up line says the
# index holds N objects and N * SIZE bytes and that 0 were loaded at start
# (only objects with dirty data are, and a clean stop leaves none);
# `nfscachectl status` answers with the upstream up while
# cache.objects.resident is at most 10 and cache.objects is N (the gauges
# come from the index, not from objects in memory).  Reading all N again is
# right (md5 of every file in name order) and sends no READ upstream: every
# object is trusted after one revalidation (GETATTRs allowed, counted as a
# diagnostic), each found in the index on demand (cache.index.lookups rises
# by at least N).
TEST_TIMEOUT=${TEST_TIMEOUT:-240}
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib/sample.sh"
needs_daemon "the start of nfscached with a full cache"
needs_own_upstream

N=${RESTART_LAZY_FILES:-20000}
SIZE=64
DIR=$EXPORT_DIR/many

WANT_MD5=$(make_files "$DIR" "$N" "$SIZE")
[ -n "$WANT_MD5" ]
ok $? "$N files of $SIZE bytes made in the export"

setup
is "$(index_lines 1)" "0 0 0" "first start: one start-up line, an empty index, 0 loaded at start"
DIRFH=$(fh_of many)
[ -n "$DIRFH" ] || { ok 1 "LOOKUP of many"; done_testing; }

snap p0
readall read
snap p1
is "$(d p0 p1 upstream.calls.READ)" "$N" "read: one upstream READ per file"
is "$(sv p1 cache.objects) $(sv p1 cache.bytes)" "$N $((N * SIZE))" \
    "read: cache.objects = $N, cache.bytes = $((N * SIZE))"

stop_nfscached
ok $? "clean stop (SIGTERM)"
is "$(index_query "$INDEX_RANGED")" "$N" "the index holds all $N objects with their range"

# ---- the restart -----------------------------------------------------------
from=$(( $(log_lines) + 1 ))
start_nfscached 2>"$T_TMP/start.err"
ok $? "restart on the same cache directory (port reported after $NFSCACHED_START_MS ms)" ||
    { diag "$(cat "$T_TMP/start.err")"; done_testing; }
snap s0
is "$(ctl status | awk '$1 == "upstream" { print $2 }')" up "restart: status answers, upstream up"
index_lines "$from" > "$T_TMP/start.lines"
is "$(wc -l < "$T_TMP/start.lines")" 1 "restart: exactly one start-up line of the cache" ||
    diag "$(grep 'cache: ' "$T_TMP/nfscached.log" | tail -n 5)"
is "$(head -n 1 "$T_TMP/start.lines")" "$N $((N * SIZE)) 0" \
    "restart: \"$N objects, $((N * SIZE)) bytes in the index; 0 loaded at start\""
num_ok "$(sv s0 cache.objects.resident)" -le 10 "restart: cache.objects.resident <= 10 right after the start"
is "$(sv s0 cache.objects) $(sv s0 cache.bytes)" "$N $((N * SIZE))" \
    "restart: cache.objects = $N and cache.bytes = $((N * SIZE)), from the index"
is "$(sv s0 cache.index.lookups)" 0 "restart: no object looked up yet"

readall reread
snap s1
is "$(d s0 s1 upstream.calls.READ)" 0 "re-read: no upstream READ (all $N objects trusted)"
num_ok "$(d s0 s1 cache.index.lookups)" -ge "$N" "re-read: each object found in the index (cache.index.lookups +$(d s0 s1 cache.index.lookups))"
is "$(sv s1 cache.objects) $(sv s1 cache.bytes)" "$N $((N * SIZE))" \
    "re-read: cache.objects = $N, cache.bytes = $((N * SIZE))"
diag "re-read: $(val "$T_TMP/reread.out" lookup_ms) ms of LOOKUPs, $(val "$T_TMP/reread.out" read_ms) ms of READs;" \
     "upstream GETATTR +$(d s0 s1 upstream.calls.GETATTR), LOOKUP +$(d s0 s1 upstream.calls.LOOKUP);" \
     "cache.objects.resident $(sv s1 cache.objects.resident)"
done_testing
