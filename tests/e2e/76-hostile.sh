#!/bin/bash
# 76-hostile: a bounded, seeded burst of hostile input (tests/hostile.py)
# against nfscached in front of ganesha: names with an embedded NUL, bad
# credentials (a machine name with a NUL among them) and AUTH_NONE, huge
# lengths in every opaque, string and array field (WRITEs of 512 bytes whose
# count says up to 0xfffffff0 among them: answered, no upstream connection
# lost, no memory the size of the count), bit flips (record marks
# spared, then not) and truncations of valid calls of every NFSv3 and
# MOUNTv3 procedure (about 32,000 records), READs of count 0x7fffffff and
# 0xffffffff, fragments over server.max_record, of 1 byte and of 4 bytes
# (a 256 KiB WRITE), records written a few bytes at a time, records cut off
# by a close, 200 connections at once, 1024 MOUNT calls pipelined on 8
# connections, and 128 connections each leaving 960 KiB of a record
# unfinished (120 MiB, over server.partial_max = 4 MiB).  Other clients'
# NULLs are answered within 5 s while the big READs, the small fragments
# and the MOUNT calls are at work.
# Each kind gets the replies it must, and the counters rose by what the
# client saw (rpc.garbage_args, rpc.rejected, rpc.oversized, conn.accepted,
# conn.partial_closed); names with a NUL never reach the upstream.  After
# each burst a NULL is answered within 5 s, a WRITE then READ of check.bin
# gives back the bytes written, and LOOKUP and GETATTR of it are the
# upstream's.  At the end the daemon still runs, its RSS rose by less than
# 64 MiB over the idle connections and peaked under HOSTILE_RSS_MAX_MB
# (160 MiB, ASan included: its quarantine of freed memory is held to 16 MiB
# here so that RSS shows what the daemon keeps), check.bin holds exactly the
# checks' WRITEs, and the daemon exits cleanly with no sanitizer report.
# HOSTILE_SEED replays a run (the seed is printed).
TEST_TIMEOUT=${TEST_TIMEOUT:-180}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the daemon under hostile input"
needs_own_upstream
command -v python3 >/dev/null || fail_or_skip "python3 is not installed"

PARTIAL_MAX=$((4 << 20))
RSS_MAX_MB=${HOSTILE_RSS_MAX_MB:-160}
SEED=${HOSTILE_SEED:-$(( (RANDOM << 15) | RANDOM ))}
diag "seed $SEED (HOSTILE_SEED=$SEED replays this run)"

head -c $((2 << 20)) /dev/urandom > "$EXPORT_DIR/check.bin"
for i in $(seq 0 7); do
    mkdir -p "$EXPORT_DIR/hz$i/d"
    for v in 0 1 2 3; do head -c 65536 /dev/urandom > "$EXPORT_DIR/hz$i/v$v"; done
    ln -s v0 "$EXPORT_DIR/hz$i/l"
done

ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16" \
    setup -o server.partial_max="$PARTIAL_MAX"

t0=$(now_ms)
timeout -k 5 120 python3 "$top_srcdir/tests/hostile.py" --port "$PORT" \
    --up-port "$UP_NFS_PORT" --up-mount-port "$UP_MNT_PORT" --ctl "$CTL" \
    --nfscachectl "$NFSCACHECTL" --export-dir "$EXPORT_DIR" --pid "$NFSCACHED_PID" \
    --seed "$SEED" --scale 20 --conns 200 --idle-conns 128 --idle-bytes $((960 << 10)) \
    --partial-max "$PARTIAL_MAX" --null-bound-ms 5000 --idle-rss-max-mb 64 \
    > "$T_TMP/hostile.out" 2> "$T_TMP/hostile.err"
rc=$?
diag "hostile.py: $(( $(now_ms) - t0 )) ms"
checks "$T_TMP/hostile.out"
is "$rc" 0 "hostile.py ran to its end" || diag "$(tail -n 15 "$T_TMP/hostile.err")"
# the figures: calls sent per kind, replies, RSS, counters
diag "$(grep -vE $'^(CHECK|DIAG)\x1f' "$T_TMP/hostile.out")"

kill -0 "$NFSCACHED_PID" 2>/dev/null
ok $? "nfscached is still running"
is "$(ctl status | awk '$1 == "upstream" { print $2 }')" up "nfscachectl status answers: upstream up"
hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$NFSCACHED_PID/status")
diag "nfscached RSS: peak $((hwm / 1024)) MiB, now $(( $(awk '$1 == "VmRSS:" { print $2 }' \
    "/proc/$NFSCACHED_PID/status") / 1024 )) MiB"
num_ok "$((hwm / 1024))" -lt "$RSS_MAX_MB" "nfscached's peak RSS is under $RSS_MAX_MB MiB"
stat_ok calls.in_flight -eq 0
done_testing
