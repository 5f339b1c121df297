#!/bin/bash
# 13-jukebox: hard-mount behaviour with a deadline.  With upstream.timeout_ms
# = 2000, a GETATTR the upstream does not answer (frozen with SIGSTOP, or gone
# and refusing connections) is answered NFS3ERR_JUKEBOX after about 2 s —
# never NFS3ERR_IO — and the daemon serves again as soon as the upstream is
# back.  A NULL, which has no NFS status to carry JUKEBOX, gets SYSTEM_ERR.
TEST_TIMEOUT=${TEST_TIMEOUT:-90}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the daemon's upstream deadline"
needs_own_upstream
setup -o upstream.timeout_ms=2000

# call WHAT [ROOT_FH_HEX]: one call through the daemon (mnt, getattr, null);
# prints "status: X", "elapsed_ms: N" and for mnt "root: HEX" (read with rv
# from r.out).
call() {
    timeout -k 5 30 python3 - "$top_srcdir/tests" "$PORT" "$@" <<'PY'
import sys, time
sys.path.insert(0, sys.argv[1])
import rpc
c = rpc.Conn("127.0.0.1", int(sys.argv[2]), timeout=20)
what = sys.argv[3]
t0 = time.monotonic()
if what == "mnt":
    st, root = c.mnt("/export")
    status = "MNT3_OK" if st == 0 else str(st)
    print("root:", root.hex() if root else "-")
elif what == "null":
    rep = c.null()
    status = rep.accept_stat or rep.summary().replace(" ", "_")
else:
    rep, status = c.nfs(rpc.NFSPROC3_GETATTR, rpc.getattr_args(bytes.fromhex(sys.argv[4])))
    status = status or rep.summary().replace(" ", "_")
print("status:", status)
print("elapsed_ms:", int((time.monotonic() - t0) * 1000))
PY
}

call mnt > "$T_TMP/r.out"
ROOT=$(rv root)
is "$(rv status)" MNT3_OK "MNT through the daemon"
call getattr "$ROOT" > "$T_TMP/r.out"
is "$(rv status)" NFS3_OK "GETATTR while the upstream is up"

# 1. the upstream frozen: connection open, no answers
kill -STOP "$GANESHA_PID"
call getattr "$ROOT" > "$T_TMP/r.out"
is "$(rv status)" NFS3ERR_JUKEBOX "GETATTR to a frozen upstream: NFS3ERR_JUKEBOX"
num_ok "$(rv elapsed_ms)" -ge 1900 "not before upstream.timeout_ms ($(rv elapsed_ms) ms)"
num_ok "$(rv elapsed_ms)" -le 4000 "nor long after it"
call null > "$T_TMP/r.out"
is "$(rv status)" "SYSTEM_ERR" "NULL to a frozen upstream: SYSTEM_ERR after the deadline"
kill -CONT "$GANESHA_PID"
call getattr "$ROOT" > "$T_TMP/r.out"
is "$(rv status)" NFS3_OK "GETATTR once the upstream runs again"

# 2. the upstream gone: connections refused
stop_upstream KILL
call getattr "$ROOT" > "$T_TMP/r.out"
is "$(rv status)" NFS3ERR_JUKEBOX "GETATTR with the upstream down: NFS3ERR_JUKEBOX"
num_ok "$(rv elapsed_ms)" -ge 1900 "after upstream.timeout_ms ($(rv elapsed_ms) ms)"
is "$(ctl status | awk '$1 == "upstream" { print $2 }')" down "status shows the upstream down"
start_upstream 2>"$T_TMP/start.err"
ok $? "upstream restarted on the same ports"
for _ in $(seq 50); do ctl status | grep -qx 'upstream up' && break; sleep 0.1; done
call getattr "$ROOT" > "$T_TMP/r.out"
is "$(rv status)" NFS3_OK "GETATTR after the restart, with the same file handle"
stat_ok upstream.timeouts -ge 3
stat_ok upstream.reconnects -ge 1
done_testing
