#!/bin/bash
# 31-writeback-crash: write-back across kill -9.  20 rounds of: 1 MiB of
# UNSTABLE WRITEs (64 KiB each) through nfscached, kill -9, restart on the
# same port and cache directory, COMMIT.  The restarted daemon must answer
# with a verifier other than the one the writes got (a daemon start never
# reuses a verifier), so the client resends; after the resend and a COMMIT
# that matches, the export holds the source exactly.  The 20 write
# verifiers are all distinct; no byte is lost.  Data a COMMIT acknowledged
# survives a kill -9 that follows it.  Crash recovery without any client:
# dirty ranges the index recorded before the kill are written back by the
# next start, unless the file was changed in the export meanwhile: then
# they are discarded (the direct change stays) and the log says so.
TEST_TIMEOUT=${TEST_TIMEOUT:-170}
. "$(dirname "$0")/../lib.sh"
needs_daemon "write-back in nfscached"
needs_own_upstream
command -v python3 >/dev/null || fail_or_skip "python3 is not installed"

# dirty data stays local until a COMMIT (or a crash recovery) writes it back
DAEMON_OPTS=(-o cache.write_mode=writeback -o cache.dirty_expire_ms=600000)
setup "${DAEMON_OPTS[@]}"

SIZE=1048576
CHUNK=65536

# The client: one python process (its start-up is slow on a loaded host)
# reading commands on stdin, a new connection to PORT for each, printing
# key: value lines and "end".  write: UNSTABLE WRITEs of every chunk;
# writefile: the same, COMMIT, and a client's resend of every chunk whose
# write verifier differs from the COMMIT's, until they match; resend: that
# for chunks written earlier with a given verifier.
cat > "$T_TMP/wb.py" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import rpc

port = int(sys.argv[2])


def write(c, fh, off, data):
    rep, st = c.nfs(rpc.NFSPROC3_WRITE, rpc.write_args(fh, off, data, stable=rpc.UNSTABLE))
    if not rep.ok():
        raise rpc.RpcError("WRITE: " + rep.summary())
    return rpc.decode_result(rpc._res_write, rep.body)


def commit(c, fh):
    rep, st = c.nfs(rpc.NFSPROC3_COMMIT, rpc.commit_args(fh))
    if not rep.ok():
        raise rpc.RpcError("COMMIT: " + rep.summary())
    r = rpc.decode_result(rpc._res_commit, rep.body)
    return r["nfs_status"], r.get("verf", "-")


def write_all(c, fh, src, chunk, which=None):
    """WRITE the chunks of src (those at offsets `which`, or all): their
    verifiers (None: answered FILE_SYNC or DATA_SYNC, which a server may do,
    so no COMMIT needed), and the failures."""
    verfs, bad = {}, []
    for off in range(0, len(src), chunk):
        if which is not None and off not in which:
            continue
        r = write(c, fh, off, src[off:off + chunk])
        if r["nfs_status"] != "NFS3_OK":
            bad.append("%d:%s" % (off, r["nfs_status"]))
        elif r["committed"] != "UNSTABLE":
            verfs[off] = None
        else:
            verfs[off] = r["verf"]
    return verfs, bad


def stable(verfs):
    return " ".join(str(o) for o, v in sorted(verfs.items()) if v is None) or "none"


def run(c, cmd, args):
    if cmd == "mnt":                # mnt
        st, fh = c.mnt("/export")
        print("mount_status: %d" % st)
        print("fh: %s" % (fh.hex() if fh else "-"))
        return
    fh = bytes.fromhex(args[0])
    if cmd == "create":             # create DIRFH NAME
        rep, st = c.nfs(rpc.NFSPROC3_CREATE, rpc.create_args(fh, args[1]))
        r = rpc.decode_create(rep.body)
        print("nfs_status: %s" % r["nfs_status"])
        print("fh: %s" % r.get("fh", "-"))
    elif cmd == "read":             # read FH OFFSET COUNT
        rep, st = c.nfs(rpc.NFSPROC3_READ, rpc.read_args(fh, int(args[1]), int(args[2])))
        for k, v in rpc.decode_read(rep.body).items():
            print("%s: %s" % (k, v))
    elif cmd == "commit":           # commit FH
        st, v = commit(c, fh)
        print("nfs_status: %s" % st)
        print("verf: %s" % v)
    elif cmd == "write":            # write FH SRC CHUNK
        src = open(args[1], "rb").read()
        verfs, bad = write_all(c, fh, src, int(args[2]))
        print("write_errors: %s" % (" ".join(bad) or "none"))
        print("stable: %s" % stable(verfs))
        print("verf: %s" % (" ".join(sorted(set(v for v in verfs.values() if v))) or "-"))
    elif cmd in ("writefile", "resend"):
        # writefile FH SRC CHUNK: write every chunk, then COMMIT;
        # resend FH SRC CHUNK VERF: every chunk was written with VERF, COMMIT.
        # Chunks whose verifier differs from the COMMIT's are written again.
        src = open(args[1], "rb").read()
        chunk = int(args[2])
        if cmd == "writefile":
            verfs, bad = write_all(c, fh, src, chunk)
        else:
            verfs, bad = dict((o, args[3]) for o in range(0, len(src), chunk)), []
        seen = set(v for v in verfs.values() if v)
        rounds = resends = 0
        stable_at = []
        while True:
            rounds += 1
            st, cv = commit(c, fh)
            seen.add(cv)
            stale = set(o for o, v in verfs.items() if v and v != cv)
            if st != "NFS3_OK" or not stale or rounds == 5:
                break
            resends += len(stale)
            more, b = write_all(c, fh, src, chunk, stale)
            stable_at += [o for o, v in more.items() if v is None]
            bad += b
            verfs.update(more)
            seen.update(v for v in more.values() if v)
        print("write_errors: %s" % (" ".join(bad) or "none"))
        print("stable: %s" % stable(verfs))
        print("resent_stable: %d" % len(stable_at))
        print("rounds: %d" % rounds)
        print("resends: %d" % resends)
        print("verfs: %s" % " ".join(sorted(seen)))
        print("commit_status: %s" % st)
        print("commit_verf: %s" % cv)
        print("stale: %d" % len(stale))


for line in sys.stdin:
    w = line.split()
    try:
        c = rpc.Conn("127.0.0.1", port, timeout=30)
        try:
            run(c, w[0], w[1:])
        finally:
            c.close()
    except (rpc.RpcError, OSError, IndexError, KeyError, ValueError) as e:
        print("error: %s" % e)
    print("end", flush=True)
EOF
coproc WB { exec python3 "$T_TMP/wb.py" "$top_srcdir/tests" "$PORT"; }
track "$WB_PID"
WB_IN=${WB[1]} WB_OUT=${WB[0]}
# wb CMD ARGS...: one command of the client; its output on stdout
wb() {
    local line
    kill -0 "$WB_PID" 2>/dev/null || { echo "error: the client exited"; return 1; }
    echo "$*" >&"$WB_IN"
    while IFS= read -r -t 60 line <&"$WB_OUT"; do
        [ "$line" = end ] && return 0
        printf '%s\n' "$line"
    done
    echo "error: no answer from the client"
    return 1
}

# crash: kill -9 the daemon. restart [-o ...]: start it again on the same
# port and cache directory.
crash() {
    kill -KILL "$NFSCACHED_PID"
    { wait "$NFSCACHED_PID"; } 2>/dev/null
    NFSCACHED_PID=
}
restart() {
    local port=$PORT
    start_nfscached "${DAEMON_OPTS[@]}" -o "server.listen=127.0.0.1:$port" "$@" 2>>"$T_TMP/start.err" &&
        [ "$PORT" = "$port" ]
}
crash_restart() { crash; restart "$@"; }

# lost FILE SRC: bytes of SRC that FILE does not hold (differing or missing)
lost() {
    local diff missing
    diff=$(cmp -l "$1" "$2" 2>/dev/null | wc -l)
    missing=$(( $(stat -c %s "$2") - $(stat -c %s "$1" 2>/dev/null || echo 0) ))
    [ "$missing" -lt 0 ] && missing=0
    echo $((diff + missing))
}

# create NAME: CREATE in the export root through nfscached; sets fh
create() {
    wb create "$FH_ROOT" "$1" > "$T_TMP/create.out"
    [ "$(val "$T_TMP/create.out" nfs_status)" = NFS3_OK ] || diag "CREATE $1: $(cat "$T_TMP/create.out")"
    fh=$(val "$T_TMP/create.out" fh)
}

wb mnt > "$T_TMP/mnt.out"
FH_ROOT=$(val "$T_TMP/mnt.out" fh)
[ -n "$FH_ROOT" ] || { ok 1 "MNT through nfscached"; done_testing; }

# ---- 20 rounds: UNSTABLE writes, kill -9, restart, COMMIT, resend --------
F_WRITE= F_LOCAL= F_RESTART= F_VERF= F_RESEND= F_CMP=
WVERFS=() LOST=0 RESENT=0 RESENT_STABLE=0
t0=$SECONDS
for r in $(seq 1 20); do
    head -c "$SIZE" /dev/urandom > "$T_TMP/src"
    create "wr$r"
    wb write "$fh" "$T_TMP/src" "$CHUNK" > "$T_TMP/w.out"
    wverf=$(val "$T_TMP/w.out" verf)
    if [ "$(val "$T_TMP/w.out" write_errors)" != none ] || [ "$(val "$T_TMP/w.out" stable)" != none ] ||
        ! [[ "$wverf" =~ ^[0-9a-f]{16}$ ]]; then
        F_WRITE+=" $r"
        diag "round $r: writes: $(tr '\n' ' ' < "$T_TMP/w.out")"
    fi
    WVERFS+=("$wverf")
    # the writes were taken locally: nothing reached the export yet
    [ "$(stat -c %s "$EXPORT_DIR/wr$r")" = 0 ] || F_LOCAL+=" $r"
    # every fourth round waits for the index to record the dirty ranges,
    # which the restarted daemon then writes back on its own meanwhile
    [ $((r % 4)) = 0 ] && sleep 1.3
    if ! crash_restart; then
        F_RESTART+=" $r"
        diag "round $r: restart on port $PORT failed: $(tail -n 3 "$T_TMP/start.err" | tr '\n' ' ')"
        break
    fi
    wb commit "$fh" > "$T_TMP/c.out"
    cst=$(val "$T_TMP/c.out" nfs_status) cverf=$(val "$T_TMP/c.out" verf)
    if [ "$cst" != NFS3_OK ] || [ "$cverf" = "$wverf" ]; then
        F_VERF+=" $r"
        diag "round $r: COMMIT after the restart: $cst, verifier $cverf (the writes got $wverf)"
    fi
    # the client resends what it wrote with the old verifier, and COMMITs
    wb resend "$fh" "$T_TMP/src" "$CHUNK" "$wverf" > "$T_TMP/wf.out"
    n=$(val "$T_TMP/wf.out" resends)
    [[ "$n" =~ ^[0-9]+$ ]] && RESENT=$((RESENT + n))
    m=$(val "$T_TMP/wf.out" resent_stable)
    [[ "$m" =~ ^[0-9]+$ ]] && RESENT_STABLE=$((RESENT_STABLE + m))
    if [ "$(val "$T_TMP/wf.out" commit_status)" != NFS3_OK ] || [ "$n" != 16 ] ||
        [ "$(val "$T_TMP/wf.out" stale)" != 0 ] ||
        [ "$(val "$T_TMP/wf.out" write_errors)" != none ]; then
        F_RESEND+=" $r"
        diag "round $r: resend and COMMIT: $(tr '\n' ' ' < "$T_TMP/wf.out")"
    fi
    n=$(lost "$EXPORT_DIR/wr$r" "$T_TMP/src")
    LOST=$((LOST + n))
    [ "$n" = 0 ] || { F_CMP+=" $r"; diag "round $r: the export misses $n bytes of the source"; }
done
diag "20 rounds in $((SECONDS - t0)) s; the client resent $RESENT chunks of 64 KiB after verifier changes," \
     "$RESENT_STABLE of them answered FILE_SYNC (written through)"
is "$F_WRITE" "" "every round: 16 UNSTABLE WRITEs answered NFS3_OK, UNSTABLE, one verifier"
is "$F_LOCAL" "" "every round: before the kill the export holds none of the data (write-back)"
is "$F_RESTART" "" "every round: nfscached restarts on the same port after kill -9"
is "$F_VERF" "" "every round: COMMIT after the restart answers NFS3_OK with another verifier than the writes'"
is "$F_RESEND" "" "every round: the client resends its 16 chunks, COMMIT answers NFS3_OK with the resends' verifier"
is "$F_CMP" "" "every round: the export file equals the source (cmp)"
is "$LOST" 0 "0 bytes lost over 20 rounds"
is "$(printf '%s\n' "${WVERFS[@]}" | grep -E '^[0-9a-f]{16}$' | sort -u | wc -l)" 20 \
    "the 20 daemon starts gave 20 distinct write verifiers"
[ -n "$F_RESTART" ] && done_testing

# ---- a kill -9 after COMMIT answered OK ----------------------------------
head -c "$SIZE" /dev/urandom > "$T_TMP/src"
create acked
wb writefile "$fh" "$T_TMP/src" "$CHUNK" > "$T_TMP/wf.out"
is "$(val "$T_TMP/wf.out" commit_status):$(val "$T_TMP/wf.out" resends)" NFS3_OK:0 \
    "acknowledged: UNSTABLE writes and a COMMIT with the writes' verifier"
crash
cmp -s "$EXPORT_DIR/acked" "$T_TMP/src"
ok $? "acknowledged: after kill -9 the export already holds the committed data"
restart
ok $? "restart"

# ---- crash recovery: recorded dirty data written back on start -----------
head -c "$SIZE" /dev/urandom > "$T_TMP/src.rec"
create rec
wb write "$fh" "$T_TMP/src.rec" "$CHUNK" > "$T_TMP/w.out"
is "$(val "$T_TMP/w.out" write_errors)" none "recovery: UNSTABLE writes"
stat_ok cache.dirty.bytes -ge "$SIZE"
sleep 2.5       # the index records the dirty ranges (batched every second)
is "$(stat -c %s "$EXPORT_DIR/rec")" 0 "recovery: the data is dirty in the cache only"
crash_restart
ok $? "recovery: restart after kill -9, no client resend"
for ((i = 0; i < 100; i++)); do
    cmp -s "$EXPORT_DIR/rec" "$T_TMP/src.rec" && break
    sleep 0.1
done
cmp -s "$EXPORT_DIR/rec" "$T_TMP/src.rec"
ok $? "recovery: the daemon wrote the recorded dirty data back on start (export equals the writes, $((i / 10)) s)" ||
    diag "export: $(stat -c %s "$EXPORT_DIR/rec") bytes, $(lost "$EXPORT_DIR/rec" "$T_TMP/src.rec") missing"
is "$(stat_value nfs3.calls.WRITE):$(stat_value nfs3.calls.COMMIT)" 0:0 "recovery: with no WRITE or COMMIT from a client"
stat_ok cache.writeback.bytes -ge "$SIZE"
diag "recovery: upstream.calls.WRITE $(stat_value upstream.calls.WRITE), upstream.calls.COMMIT $(stat_value upstream.calls.COMMIT)"

# ---- crash recovery: the file changed in the export meanwhile ------------
head -c "$SIZE" /dev/urandom > "$T_TMP/src.chg"
create chg
wb write "$fh" "$T_TMP/src.chg" "$CHUNK" > "$T_TMP/w.out"
is "$(val "$T_TMP/w.out" write_errors)" none "changed: UNSTABLE writes"
sleep 2.5
crash
head -c 4096 /dev/urandom > "$T_TMP/direct"
cat "$T_TMP/direct" > "$EXPORT_DIR/chg"     # a change made in the export directly
WANT=$(md5 "$T_TMP/direct")
log0=$(wc -l < "$T_TMP/nfscached.log")
restart
ok $? "changed: restart after the export file was changed directly"
for ((i = 0; i < 100; i++)); do
    tail -n +$((log0 + 1)) "$T_TMP/nfscached.log" | grep -q "dirty bytes discarded" && break
    sleep 0.1
done
sleep 1         # a write-back, were there one, would be under way by now
tail -n +$((log0 + 1)) "$T_TMP/nfscached.log" > "$T_TMP/log.chg"
is "$(md5 "$EXPORT_DIR/chg")" "$WANT" "changed: the export keeps the direct change (the recorded dirty data is discarded)"
grep -q "changed upstream while nfscached was stopped: $SIZE dirty bytes discarded" "$T_TMP/log.chg"
ok $? "changed: the log says the $SIZE dirty bytes were discarded" ||
    diag "log since the restart:" "$(tail -n 10 "$T_TMP/log.chg")"
wb read "$fh" 0 "$SIZE" > "$T_TMP/r.out"
is "$(val "$T_TMP/r.out" md5):$(val "$T_TMP/r.out" count)" "$WANT:4096" "changed: a READ through nfscached returns the direct change"
stat_ok cache.dirty.bytes -eq 0
done_testing
