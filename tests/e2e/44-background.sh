#!/bin/bash
# 44-background: nfscached started without -f detaches (daemon(3)) and its
# cache works in the detached process: a file read twice is served the
# second time from the cache, SIGTERM ends the process within seconds (the
# index's batches complete), and a restart in the foreground on the same
# cache directory finds the object in the index.
TEST_TIMEOUT=${TEST_TIMEOUT:-90}
. "$(dirname "$0")/../lib.sh"
needs_daemon "nfscached in the background"
needs_own_upstream
[ -x "$NFSCACHED" ] && [ -x "$NFSCACHECTL" ] || fail_or_skip "nfscached is not built"
start_upstream 2>"$T_TMP/setup.err" || fail_or_skip "upstream: $(tr '\n' ' ' <"$T_TMP/setup.err")"

NAME=background-file
head -c 256k /dev/urandom > "$EXPORT_DIR/$NAME"
write_nfscached_conf
mkdir -p "$T_TMP/cache"

# A detached daemon's stderr is /dev/null: sanitizer reports go to files.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$T_TMP/bg-sanitizer" \
UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$T_TMP/bg-sanitizer" \
    timeout 20 "$NFSCACHED" -c "$T_TMP/nfscached.conf" </dev/null >>"$T_TMP/nfscached.log" 2>&1
ok $? "nfscached without -f: the starting process exits 0" || done_testing

BG_PID= PORT=
for _ in $(seq 100); do
    ctl status > "$T_TMP/status.out" 2>/dev/null &&
        BG_PID=$(awk '$1 == "pid" { print $2 }' "$T_TMP/status.out") &&
        PORT=$(awk '$1 == "listen" { sub(/.*:/, "", $2); print $2 }' "$T_TMP/status.out")
    [ -n "$BG_PID" ] && [ -n "$PORT" ] && [ "$PORT" != 0 ] && break
    sleep 0.1
done
[ -n "$BG_PID" ] && kill -0 "$BG_PID" 2>/dev/null
ok $? "the detached daemon runs and reports its pid ($BG_PID)" || done_testing
track "$BG_PID"
for _ in $(seq 100); do ctl status 2>/dev/null | grep -qx 'upstream up' && break; sleep 0.1; done

snap s0
for pass in 1 2; do
    nfs_cat "$(proxy_url "$NAME")" > "$T_TMP/read$pass" 2>"$T_TMP/read$pass.err"
    cmp -s "$T_TMP/read$pass" "$EXPORT_DIR/$NAME"
    ok $? "read $pass through the detached daemon is the file" ||
        diag "$(head -n 3 "$T_TMP/read$pass.err")"
    snap "s$pass"
done
num_ok "$(d s1 s2 cache.read.hits)" -gt 0 "the second read was served from the cache"
is "$(d s1 s2 cache.read.misses)" 0 "the second read missed nothing"
is "$(sv s2 cache.objects)" 1 "cache.objects is 1"

t0=$(now_ms)
kill -TERM "$BG_PID"
for _ in $(seq 100); do kill -0 "$BG_PID" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$BG_PID" 2>/dev/null
ok $? "SIGTERM ends the detached daemon within 10 s ($(( $(now_ms) - t0 )) ms)" ||
    { kill -KILL "$BG_PID" 2>/dev/null; done_testing; }
! cat "$T_TMP"/bg-sanitizer* 2>/dev/null | grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:'
ok $? "no sanitizer report from the detached daemon" || diag "$(cat "$T_TMP"/bg-sanitizer* | head -n 20)"

# The same cache in the foreground: the index held the object.
start_nfscached 2>"$T_TMP/restart.err"
ok $? "restart in the foreground on the same cache" || diag "$(cat "$T_TMP/restart.err")"
is "$(ctl status | awk '$1 == "cache_objects" { print $2 }')" 1 "the index held the object (cache_objects 1)"
for _ in $(seq 50); do grep -q 'cache: reconciled' "$T_TMP/nfscached.log" && break; sleep 0.1; done
grep -q 'reconciled with .*: 0 orphan backing files and 0 index rows' "$T_TMP/nfscached.log"
ok $? "no orphan backing file or fileless row was removed at the restart" ||
    diag "$(grep 'cache:' "$T_TMP/nfscached.log" | tail -n 3)"
snap s3
nfs_cat "$(proxy_url "$NAME")" > "$T_TMP/read3" 2>/dev/null
snap s4
is "$(d s3 s4 cache.read.misses)" 0 "after the restart the read is a hit"
done_testing
