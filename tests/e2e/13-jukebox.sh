#!/bin/bash
# 13-jukebox: hard-mount behaviour with a deadline.  With upstream.timeout_ms
# = 2000, a GETATTR the upstream does not answer (frozen with SIGSTOP, or gone
# and refusing connections) is answered NFS3ERR_JUKEBOX after about 2 s —
# never NFS3ERR_IO — and the daemon serves again as soon as the upstream is
# back.  A NULL, which has no NFS status to carry JUKEBOX, gets SYSTEM_ERR
# while the namespace cache is off (cache.metadata = no: NULL is forwarded).
# With cache.metadata = yes nfscached answers NULL itself: NFS NULL and
# MOUNT NULL to a frozen upstream are answered at once (< 500 ms), and no
# NULL goes upstream.
TEST_TIMEOUT=${TEST_TIMEOUT:-90}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the daemon's upstream deadline"
needs_own_upstream
setup -o upstream.timeout_ms=2000 -o cache.metadata=no

# call WHAT [ROOT_FH_HEX]: one call through the daemon (mnt, getattr, null,
# mntnull: MOUNT NULL);
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
elif what == "mntnull":
    rep = c.call(rpc.MOUNT_PROGRAM, rpc.MOUNT_V3, rpc.MOUNTPROC3_NULL)
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

# 3. cache.metadata = yes: NULL answered by nfscached, even with the
# upstream frozen
stop_nfscached
ok $? "nfscached (cache.metadata = no) exits cleanly"
if ! start_nfscached -o upstream.timeout_ms=2000 -o cache.metadata=yes 2>"$T_TMP/start.err"; then
    ok 1 "nfscached starts with cache.metadata = yes"
    diag "$(cat "$T_TMP/start.err")"
    done_testing
fi
call getattr "$ROOT" > "$T_TMP/r.out"
is "$(rv status)" NFS3_OK "metadata: GETATTR while the upstream is up"
snap n0
kill -STOP "$GANESHA_PID"
call null > "$T_TMP/null.out"
call mntnull > "$T_TMP/mntnull.out"
kill -CONT "$GANESHA_PID"
snap n1
is "$(val "$T_TMP/null.out" status)" SUCCESS "metadata: NFS NULL with the upstream frozen: SUCCESS"
num_ok "$(val "$T_TMP/null.out" elapsed_ms)" -lt 500 \
    "metadata: ... at once ($(val "$T_TMP/null.out" elapsed_ms) ms)"
is "$(val "$T_TMP/mntnull.out" status)" SUCCESS "metadata: MOUNT NULL with the upstream frozen: SUCCESS"
num_ok "$(val "$T_TMP/mntnull.out" elapsed_ms)" -lt 500 \
    "metadata: ... at once ($(val "$T_TMP/mntnull.out" elapsed_ms) ms)"
is "$(d n0 n1 upstream.calls.NULL) $(d n0 n1 upstream.calls.MOUNT_NULL)" "0 0" \
    "metadata: no NULL went upstream"
is "$(d n0 n1 nfs3.calls.NULL) $(d n0 n1 mount3.calls.NULL)" "1 1" "metadata: both NULLs counted as received"
call getattr "$ROOT" > "$T_TMP/r.out"
is "$(rv status)" NFS3_OK "metadata: GETATTR once the upstream runs again"
done_testing
