#!/bin/bash
# 72-commit-local: cache.commit = local — a COMMIT is answered once the
# dirty bytes are on the cache's disk and in the index, and write-back
# goes on in the background (raw calls through tests/rpc.py).
#   a) outage    a file created through nfscached, 4 KiB written, committed
#                and flushed (its attributes and the writer's ACCESS
#                cached); the upstream stopped; 1 MiB of UNSTABLE WRITEs
#                and a COMMIT: NFS3_OK with the WRITEs' verifier;
#                cache.unwritten.bytes is the 1 MiB, cache.unwritten.
#                oldest_s grows while the upstream is down, and status says
#                so; the upstream started again, `nfscachectl flush`: the
#                export file is the bytes (md5), the unwritten gauges are 0
#   c) refused   uid 1000 writes 4 KiB UNSTABLE to its own file and
#                COMMITs (OK); the export file is given to root, `flush`:
#                the refusal is logged and counted in cache.writeback.
#                errors, the bytes stay dirty and unwritten (gauge and
#                status), a later COMMIT is still NFS3_OK with the same
#                verifier; the file given back, `flush` writes them
#   b) kill -9   20 rounds of UNSTABLE WRITEs of fresh ranges and COMMITs
#                (a client that records exactly the ranges a COMMIT
#                acknowledged with the verifier its WRITEs got), nfscached
#                killed with SIGKILL in the middle and restarted on the same
#                cache directory; at each restart, before anything else:
#                cache.unwritten.bytes = cache.dirty.bytes (every recovered
#                dirty byte counts) and no fewer than the acknowledged bytes
#                the export lacks; after the last restart and a flush, 0
#                acknowledged bytes lost and the gauges 0
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
. "$(dirname "$0")/../lib.sh"
needs_daemon "local commit in nfscached"
needs_own_upstream
command -v python3 >/dev/null || fail_or_skip "python3 is not installed"

# attributes and ACCESS results stay trusted for the whole test, so that
# nothing a WRITE or COMMIT needs waits for the upstream
DAEMON_OPTS=(-o cache.write_mode=writeback -o cache.commit=local -o cache.dirty_expire_ms=1000
             -o upstream.timeout_ms=3000 -o cache.acregmin=3600 -o cache.acregmax=3600
             -o cache.acdirmin=3600 -o cache.acdirmax=3600)
setup "${DAEMON_OPTS[@]}"

st_of() { ctl status | awk -v k="$1" '$1 == k { print $2 }'; }
# flush_ok: `nfscachectl flush` until it succeeds (a pass that began while
# the upstream was away ends in a timeout first), at most 10 tries
flush_ok() {
    local i
    for ((i = 0; i < 10; i++)); do
        ctl flush > "$T_TMP/flush.out" 2>&1 && return 0
        sleep 1
    done
    diag "flush: $(cat "$T_TMP/flush.out")"
    return 1
}

rpc mnt > "$T_TMP/mnt.out"
FH_ROOT=$(val "$T_TMP/mnt.out" fh)
[ -n "$FH_ROOT" ] || { ok 1 "MNT of /export"; done_testing; }
is "$(st_of commit)" local "status: commit local"

# ---- a) the upstream stopped ---------------------------------------------
rpc create "$FH_ROOT" a.bin > "$T_TMP/r.out" 2>&1
FH=$(rv fh)
head -c 4096 /dev/urandom > "$T_TMP/a.head"
rpc pwrite "$FH" 0 "$T_TMP/a.head" --stable unstable > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status) $(rv committed)" "NFS3_OK UNSTABLE" "outage: 4 KiB UNSTABLE through nfscached, the upstream up"
rpc commit "$FH" > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status)" NFS3_OK "outage: COMMIT"
flush_ok
ok $? "outage: flush"
is "$(stat_value cache.unwritten.bytes) $(stat_value cache.unwritten.oldest_s)" "0 0" \
    "outage: nothing unwritten after the flush"

stop_upstream
ok $? "outage: the upstream is stopped"
head -c $((1 << 20)) /dev/urandom > "$T_TMP/a.body"
cat "$T_TMP/a.head" "$T_TMP/a.body" > "$T_TMP/a.want"
snap a0
t0=$(now_ms)
rpc writefile "$FH" "$T_TMP/a.body" --offset 4096 --chunk 65536 --rounds 1 > "$T_TMP/r.out" 2>&1
ms=$(( $(now_ms) - t0 ))
is "$(rv write_errors) $(rv commit_status) $(rv unmatched)" "0 NFS3_OK 0" \
    "outage: 16 UNSTABLE WRITEs of 64 KiB and a COMMIT: NFS3_OK, the WRITEs' verifier ($ms ms)" ||
    diag "$(cat "$T_TMP/r.out")"
is "$(rv verfs)" "$(rv commit_verf)" "outage: one verifier, the COMMIT's"
snap a1
is "$(d a0 a1 upstream.calls.COMMIT)" 0 "outage: no COMMIT went upstream (none could be answered)"
is "$(sv a1 cache.unwritten.bytes)" $((1 << 20)) "outage: cache.unwritten.bytes is the 1 MiB committed"
sleep 3
o1=$(stat_value cache.unwritten.oldest_s)
num_ok "$o1" -ge 2 "outage: cache.unwritten.oldest_s grows while the upstream is down ($o1 s)"
is "$(st_of unwritten_bytes)" $((1 << 20)) "outage: status: unwritten_bytes"
num_ok "$(st_of unwritten_oldest_s)" -ge "$o1" "outage: status: unwritten_oldest_s"
is "$(stat -c %s "$EXPORT_DIR/a.bin")" 4096 "outage: the export holds only the first 4 KiB"
start_upstream
ok $? "outage: the upstream is started again"
flush_ok
ok $? "outage: flush"
is "$(md5 "$EXPORT_DIR/a.bin")" "$(md5 "$T_TMP/a.want")" "outage: the export file holds the bytes (md5)"
snap a2
is "$(sv a2 cache.unwritten.bytes) $(sv a2 cache.unwritten.oldest_s) $(sv a2 cache.dirty.bytes)" "0 0 0" \
    "outage: unwritten and dirty gauges 0 after the flush"
num_ok "$(d a1 a2 cache.writeback.bytes)" -ge $((1 << 20)) "outage: cache.writeback.bytes counts the 1 MiB"

# ---- c) a write-back refused for good --------------------------------------
F=$EXPORT_DIR/c.bin
printf 'cccccccccc' > "$F"
chown 1000:1000 "$F"
chmod 0644 "$F"
cp "$F" "$T_TMP/c.orig"
FH=$(fh_of c.bin)
head -c 4096 /dev/urandom > "$T_TMP/c.w"
rpc --uid 1000 --gid 1000 pwrite "$FH" 0 "$T_TMP/c.w" --stable unstable > "$T_TMP/r.out" 2>&1
WVERF=$(rv verf)
is "$(rv nfs_status) $(rv committed)" "NFS3_OK UNSTABLE" "refused: uid 1000's UNSTABLE WRITE is taken"
rpc --uid 1000 --gid 1000 commit "$FH" > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status) $(rv verf)" "NFS3_OK $WVERF" "refused: COMMIT: NFS3_OK with the WRITE's verifier"
is "$(stat_value cache.unwritten.bytes)" 4096 "refused: cache.unwritten.bytes 4096"
chown 0:0 "$F"
snap c0
log0=$(wc -l < "$T_TMP/nfscached.log")
ctl flush > "$T_TMP/flush.out" 2>&1
rc=$?
[ "$rc" != 0 ] && grep -q "NFS status 13" "$T_TMP/flush.out"
ok $? "refused: flush reports the refusal (NFS3ERR_ACCES)" || diag "flush: $rc $(cat "$T_TMP/flush.out")"
snap c1
num_ok "$(d c0 c1 cache.writeback.errors)" -ge 1 "refused: counted in cache.writeback.errors"
is "$(sv c1 cache.unwritten.bytes) $(sv c1 cache.dirty.bytes)" "4096 4096" \
    "refused: the bytes stay dirty and unwritten"
is "$(st_of unwritten_bytes)" 4096 "refused: status: unwritten_bytes 4096"
tail -n +$((log0 + 1)) "$T_TMP/nfscached.log" | grep -q "the upstream refused the data.*committed locally kept"
ok $? "refused: the log says the refused bytes are kept" ||
    diag "$(tail -n +$((log0 + 1)) "$T_TMP/nfscached.log" | tail -n 5)"
cmp -s "$F" "$T_TMP/c.orig"
ok $? "refused: the export file is unchanged"
rpc --uid 1000 --gid 1000 commit "$FH" > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status) $(rv verf)" "NFS3_OK $WVERF" \
    "refused: a later COMMIT is NFS3_OK with the same verifier (not reported)"
sleep 1.5   # past the first backoff: tried again, still refused, still kept
is "$(stat_value cache.unwritten.bytes)" 4096 "refused: still unwritten after a retry"
chown 1000:1000 "$F"
flush_ok
ok $? "refused: the file given back: flush"
is "$(md5 "$F")" "$(md5 "$T_TMP/c.w")" "refused: the export file holds the bytes"
is "$(stat_value cache.unwritten.bytes) $(stat_value cache.dirty.bytes)" "0 0" \
    "refused: nothing unwritten or dirty"

# ---- b) kill -9 during UNSTABLE WRITEs and COMMITs -------------------------
# ack.py PORT FH MODEL ACKS STATE: UNSTABLE WRITEs of fresh ranges (random
# lengths and gaps) and a COMMIT after every few, until the connection
# breaks; the bytes of every range also go to MODEL at the same offset, and
# ACKS gets "offset length" for each range a COMMIT acknowledged (NFS3_OK,
# the verifier its WRITE got).  STATE keeps the next offset between runs.
cat > "$T_TMP/ack.py" <<'EOF'
import os, random, sys
sys.path.insert(0, sys.argv[1])
import rpc

port, fh = int(sys.argv[2]), bytes.fromhex(sys.argv[3])
model, acks, state = sys.argv[4], sys.argv[5], sys.argv[6]
pos = int(open(state).read()) if os.path.exists(state) else 0
rng = random.Random()
writes = acked = commits = 0
fd = os.open(model, os.O_RDWR | os.O_CREAT, 0o644)
try:
    c = rpc.Conn("127.0.0.1", port, timeout=20)
    while True:
        pending = []
        for _ in range(rng.randint(1, 16)):
            off = pos + rng.randint(0, 8192)
            data = os.urandom(rng.randint(512, 65536))
            pos = off + len(data)
            os.pwrite(fd, data, off)
            with open(state, "w") as f:
                f.write(str(pos))
            rep, st = c.nfs(rpc.NFSPROC3_WRITE, rpc.write_args(fh, off, data, stable=rpc.UNSTABLE))
            r = rpc.decode_result(rpc._res_write, rep.body) if rep.ok() else {}
            writes += 1
            if r.get("nfs_status") == "NFS3_OK" and r.get("committed") == "UNSTABLE":
                pending.append((off, len(data), r["verf"]))
        rep, st = c.nfs(rpc.NFSPROC3_COMMIT, rpc.commit_args(fh))
        r = rpc.decode_result(rpc._res_commit, rep.body) if rep.ok() else {}
        if r.get("nfs_status") == "NFS3_OK":
            commits += 1
            with open(acks, "a") as f:
                for off, n, v in pending:
                    if v == r["verf"]:
                        f.write("%d %d\n" % (off, n))
                        acked += 1
except (rpc.RpcError, OSError, KeyError, ValueError):
    pass
print("writes: %d" % writes)
print("commits: %d" % commits)
print("acked: %d" % acked)
EOF
# missing EXPORT_FILE MODEL ACKS: acknowledged bytes the export file lacks
cat > "$T_TMP/missing.py" <<'EOF'
import sys
exp = open(sys.argv[1], "rb").read()
model = open(sys.argv[2], "rb").read()
missing = total = ranges = 0
for line in open(sys.argv[3]):
    off, n = map(int, line.split())
    ranges += 1
    total += n
    want, got = model[off:off + n], exp[off:off + n]
    if got != want:
        missing += sum(1 for i in range(n) if i >= len(got) or got[i] != want[i])
print("ranges: %d" % ranges)
print("acked_bytes: %d" % total)
print("missing: %d" % missing)
EOF

crash() {
    kill -KILL "$NFSCACHED_PID"
    { wait "$NFSCACHED_PID"; } 2>/dev/null
    NFSCACHED_PID=
}
restart() {
    local port=$PORT
    start_nfscached "${DAEMON_OPTS[@]}" -o "server.listen=127.0.0.1:$port" 2>>"$T_TMP/start.err" &&
        [ "$PORT" = "$port" ]
}

rpc create "$FH_ROOT" k.bin > "$T_TMP/r.out" 2>&1
FH=$(rv fh)
rpc pwrite "$FH" 0 "$T_TMP/a.head" --stable unstable > "$T_TMP/r.out" 2>&1   # ACCESS cached
: > "$T_TMP/k.acks"
echo 65536 > "$T_TMP/k.state"   # past the bytes written above, never acknowledged
F_RESTART= F_GAUGE= F_MISSING= COMMITS=0 WRITES=0
for r in $(seq 1 20); do
    python3 "$T_TMP/ack.py" "$top_srcdir/tests" "$PORT" "$FH" "$T_TMP/k.model" "$T_TMP/k.acks" \
        "$T_TMP/k.state" > "$T_TMP/ack.out" 2>&1 &
    cpid=$!
    track "$cpid"
    ms=$((RANDOM % 900 + 600))
    sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
    crash
    wait "$cpid"
    n=$(val "$T_TMP/ack.out" commits); [[ "$n" =~ ^[0-9]+$ ]] && COMMITS=$((COMMITS + n))
    n=$(val "$T_TMP/ack.out" writes); [[ "$n" =~ ^[0-9]+$ ]] && WRITES=$((WRITES + n))
    if ! restart; then
        F_RESTART+=" $r"
        diag "round $r: restart on port $PORT failed: $(tail -n 3 "$T_TMP/start.err" | tr '\n' ' ')"
        break
    fi
    # gauges first: a write-back after them only lowers what the export lacks
    snap "k$r"
    python3 "$T_TMP/missing.py" "$EXPORT_DIR/k.bin" "$T_TMP/k.model" "$T_TMP/k.acks" > "$T_TMP/m.out"
    u=$(sv "k$r" cache.unwritten.bytes) dirty=$(sv "k$r" cache.dirty.bytes) m=$(val "$T_TMP/m.out" missing)
    o=$(sv "k$r" cache.unwritten.oldest_s)
    if [ "$u" != "$dirty" ] || ! [ "$m" -le "$u" ] 2>/dev/null || { [ "$u" = 0 ] && [ "$o" != 0 ]; } ||
        ! [ "$o" -le 2 ] 2>/dev/null; then
        F_GAUGE+=" $r"
        diag "round $r: unwritten $u (oldest $o s), dirty $dirty, acknowledged bytes the export lacks $m"
    fi
done
diag "20 rounds: $WRITES WRITEs, $COMMITS COMMITs answered OK; $(tr '\n' ' ' < "$T_TMP/m.out")"
is "$F_RESTART" "" "kill -9: every round nfscached restarts on the same port"
is "$F_GAUGE" "" "kill -9: at each restart unwritten = dirty >= acknowledged bytes not in the export"
num_ok "$COMMITS" -ge 20 "kill -9: COMMITs were acknowledged ($COMMITS)"
flush_ok
ok $? "kill -9: flush after the last restart"
python3 "$T_TMP/missing.py" "$EXPORT_DIR/k.bin" "$T_TMP/k.model" "$T_TMP/k.acks" > "$T_TMP/m.out"
num_ok "$(val "$T_TMP/m.out" ranges)" -ge 20 "kill -9: acknowledged ranges recorded ($(val "$T_TMP/m.out" ranges))"
is "$(val "$T_TMP/m.out" missing)" 0 \
    "kill -9: 0 of $(val "$T_TMP/m.out" acked_bytes) acknowledged bytes lost (export compared with the client's record)"
is "$(stat_value cache.unwritten.bytes) $(stat_value cache.unwritten.oldest_s)" "0 0" \
    "kill -9: unwritten gauges 0 after the flush"
done_testing
