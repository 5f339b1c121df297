#!/bin/bash
# 22-cache-coherency: the read cache never answers with bytes the file no
# longer holds (cache.acregmax = 1; edits made directly in the export
# directory play a second client).
#   append      a 5000-byte file read to EOF and cached; 3000 bytes appended
#               in the export; after acregmax a READ of 3100 bytes at 4900
#               returns the old 100 and the new 3000 (no zeros);
#               cache.invalidations counts it
#   same size   a file rewritten in place with the same size twice within one
#               second, 50 ms or more apart, read through nfscached in
#               between: after acregmax the READ returns the new bytes
#               (mtime differs in nanoseconds only)
#   truncate    a cached 3 MiB file cut to 1000 bytes by SETATTR through
#               nfscached, then written at 2,000,000 (or grown back by a
#               SETATTR of the size): bytes 1000..4095 and at 1,000,000 read
#               as zeros through nfscached, as on disk
#   race        WRITEs through nfscached racing cold READs of the same range
#               on another connection (READ or WRITE first, 0-2 ms apart,
#               FILE_SYNC or UNSTABLE; for half of them the upstream is
#               frozen with SIGSTOP while both are sent, so that they reach
#               it together): every later READ returns the bytes written, at
#               once and after acregmax
#   permission  a 0600 file of uid 1000 read (and cached) as uid 1000; uid
#               2000 gets NFS3ERR_ACCES, as from the upstream, and no bytes
#   backing     a backing file deleted (or emptied) behind the daemon's back,
#               while it runs and across a restart: the next READ is right
TEST_TIMEOUT=${TEST_TIMEOUT:-240}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the read cache of nfscached"
needs_own_upstream
setup -o cache.acregmax=1

MIB=1048576
CACHE_DIR=$T_TMP/cache

zeros_md5() { head -c "$1" /dev/zero | md5sum | cut -d' ' -f1; }

# ---- append ------------------------------------------------------------------
F=$EXPORT_DIR/append
head -c 5000 /dev/urandom > "$F"
FH=$(fh_of append)
rread a1 "$FH" 0 8192
is "$(rv nfs_status) $(rv count) $(rv eof)" "NFS3_OK 5000 true" "append: the 5000-byte file read to EOF"
is "$(md5 "$T_TMP/a1.data")" "$(md5 "$F")" "append: its bytes"
snap a1
rread a2 "$FH" 4900 100
snap a2
is "$(d a1 a2 upstream.calls.READ) $(md5 "$T_TMP/a2.data")" "0 $(range_md5 "$F" 4900 100)" \
    "append: its last 100 bytes are answered from the cache"
head -c 3000 /dev/urandom >> "$F"
sleep 1.5
rread a3 "$FH" 4900 3100
snap a3
is "$(rv nfs_status) $(rv count) $(rv eof)" "NFS3_OK 3100 true" \
    "append: READ 3100 at 4900 after acregmax: 3100 bytes, eof"
is "$(md5 "$T_TMP/a3.data")" "$(range_md5 "$F" 4900 3100)" \
    "append: the old 100 bytes, then the 3000 appended" ||
    diag "zero bytes in the reply: $(rv zero_bytes), in the file's range: $(dd if="$F" bs=1 skip=4900 status=none | tr -cd '\0' | wc -c)"
num_ok "$(d a2 a3 cache.invalidations)" -ge 1 "append: cache.invalidations rose"
num_ok "$(sv a3 cache.invalidations)" -gt 0 "append: cache.invalidations > 0"

# ---- same size, same second ------------------------------------------------------
F=$EXPORT_DIR/samesize
head -c 6000 /dev/urandom > "$F"
FH=$(fh_of samesize)
snap s0
# Rewrites the file in place (same size) twice within one second, 50 ms or
# more apart, with a READ through nfscached in between; then, after acregmax,
# READs again.
timeout -k 5 60 python3 - "$top_srcdir/tests" "$PORT" "$FH" "$F" > "$T_TMP/same.out" 2>&1 <<'PY'
import hashlib, os, sys, time
sys.path.insert(0, sys.argv[1])
import rpc
port, fh, path = int(sys.argv[2]), bytes.fromhex(sys.argv[3]), sys.argv[4]
c = rpc.Conn("127.0.0.1", port, timeout=20)

def read():
    rep, st = c.nfs(rpc.NFSPROC3_READ, rpc.read_args(fh, 0, 8192))
    return rpc.decode_read(rep.body) if rep.ok() else {"nfs_status": rep.summary()}

def rewrite(data):
    with open(path, "r+b") as f:
        f.write(data)
    return time.monotonic(), os.stat(path).st_mtime_ns

for attempt in range(1, 6):
    a, b = os.urandom(6000), os.urandom(6000)
    time.sleep(1.02 - time.time() % 1)          # just after a second starts
    t_a, m_a = rewrite(a)
    r1 = read()
    time.sleep(max(0.0, 0.05 - (time.monotonic() - t_a)))
    t_b, m_b = rewrite(b)
    if m_a // 10**9 == m_b // 10**9 and t_b - t_a >= 0.05:
        break
print("attempts:", attempt)
print("same_second:", "yes" if m_a // 10**9 == m_b // 10**9 else "no")
print("mtimes: %d.%09d %d.%09d" % (m_a // 10**9, m_a % 10**9, m_b // 10**9, m_b % 10**9))
print("apart_ms:", int((t_b - t_a) * 1000))
print("between.status:", r1.get("nfs_status"))
print("between.is_first:", "yes" if r1.get("md5") == hashlib.md5(a).hexdigest() else "no")
time.sleep(1.5)
r2 = read()
print("after.status:", r2.get("nfs_status"), r2.get("count"))
print("after.is_second:", "yes" if r2.get("md5") == hashlib.md5(b).hexdigest() else "no")
print("after.is_first:", "yes" if r2.get("md5") == hashlib.md5(a).hexdigest() else "no")
PY
snap s1
sq() { val "$T_TMP/same.out" "$1"; }
is "$(sq same_second)" yes "same size: both rewrites within one second ($(sq mtimes), $(sq apart_ms) ms apart)" ||
    diag "$(cat "$T_TMP/same.out")"
is "$(sq between.status) $(sq between.is_first)" "NFS3_OK yes" \
    "same size: the READ in between returns the first rewrite"
is "$(sq after.status)" "NFS3_OK 6000" "same size: the READ after acregmax returns 6000 bytes"
is "$(sq after.is_second)" yes "same size: ... the second rewrite's bytes" ||
    diag "stale first rewrite returned: $(sq after.is_first)"
num_ok "$(d s0 s1 cache.invalidations)" -ge 1 "same size: cache.invalidations rose"

# ---- truncate through nfscached, then write far past the end --------------------
F=$EXPORT_DIR/trunc
head -c $((3 * MIB)) /dev/urandom > "$F"
cp "$F" "$T_TMP/trunc.orig"
FH=$(fh_of trunc)
nfs_cat "$(proxy_url trunc)" > "$T_TMP/trunc.cat"
is "$(md5 "$T_TMP/trunc.cat")" "$(md5 "$F")" "truncate: the 3 MiB file read through nfscached"
snap t0
rread t0 "$FH" 1000000 4096
snap t1
is "$(d t0 t1 upstream.calls.READ) $(md5 "$T_TMP/t0.data")" "0 $(range_md5 "$F" 1000000 4096)" \
    "truncate: bytes at 1,000,000 are cached"
rpc truncate "$FH" 1000 > "$T_TMP/r.out"
is "$(rv nfs_status) $(rv obj.size)" "NFS3_OK 1000" "truncate: SETATTR size 1000 through nfscached"
head -c 4096 /dev/urandom > "$T_TMP/w4k"
rpc pwrite "$FH" 2000000 "$T_TMP/w4k" > "$T_TMP/r.out"
is "$(rv nfs_status) $(rv count) $(rv obj.size)" "NFS3_OK 4096 2004096" \
    "truncate: WRITE of 4096 bytes at 2,000,000 through nfscached"
is "$(stat -c %s "$F")" 2004096 "truncate: the file on disk has 2004096 bytes"
is "$(range_md5 "$F" 1000 3096)|$(range_md5 "$F" 1000000 4096)" "$(zeros_md5 3096)|$(zeros_md5 4096)" \
    "truncate: on disk, 1000..4095 and 1,000,000.. are zeros"
is "$(range_md5 "$F" 0 1000)" "$(range_md5 "$T_TMP/trunc.orig" 0 1000)" \
    "truncate: on disk, the first 1000 bytes are kept"
rread t1 "$FH" 1000 3096
is "$(rv nfs_status) $(rv count) $(rv zero_bytes)" "NFS3_OK 3096 3096" \
    "truncate: READ 1000..4095 through nfscached: zeros"
rread t2 "$FH" 1000000 4096
is "$(rv nfs_status) $(rv count) $(rv zero_bytes)" "NFS3_OK 4096 4096" \
    "truncate: READ 4096 at 1,000,000 through nfscached: zeros"
rread t3 "$FH" 0 1000
is "$(md5 "$T_TMP/t3.data")" "$(range_md5 "$T_TMP/trunc.orig" 0 1000)" \
    "truncate: READ 0..999 through nfscached: the bytes kept"
rread t4 "$FH" 2000000 8192
is "$(rv count) $(rv eof) $(md5 "$T_TMP/t4.data")" "4096 true $(md5 "$T_TMP/w4k")" \
    "truncate: READ at 2,000,000 through nfscached: the bytes written, eof"
sleep 1.2
rread t5 "$FH" 0 8192
is "$(rv count) $(md5 "$T_TMP/t5.data")" "8192 $(range_md5 "$F" 0 8192)" \
    "truncate: after acregmax, READ 0..8191 is the file's bytes"

# the same, the file grown again by a SETATTR of the size (whose wcc data
# tell nfscached the change was its own: nothing else drops the cached data)
F=$EXPORT_DIR/trunc2
head -c $((3 * MIB)) /dev/urandom > "$F"
cp "$F" "$T_TMP/trunc2.orig"
FH=$(fh_of trunc2)
nfs_cat "$(proxy_url trunc2)" > "$T_TMP/trunc.cat"
is "$(md5 "$T_TMP/trunc.cat")" "$(md5 "$F")" "truncate+extend: the 3 MiB file read through nfscached"
rpc truncate "$FH" 1000 > "$T_TMP/r.out"
is "$(rv nfs_status) $(rv obj.size)" "NFS3_OK 1000" "truncate+extend: SETATTR size 1000 through nfscached"
rpc truncate "$FH" 2004096 > "$T_TMP/r.out"
is "$(rv nfs_status) $(rv obj.size)" "NFS3_OK 2004096" "truncate+extend: SETATTR size 2004096 through nfscached"
is "$(range_md5 "$F" 1000 3096)|$(range_md5 "$F" 1000000 4096)" "$(zeros_md5 3096)|$(zeros_md5 4096)" \
    "truncate+extend: on disk, 1000..4095 and 1,000,000.. are zeros"
rread u1 "$FH" 1000 3096
is "$(rv nfs_status) $(rv count) $(rv zero_bytes)" "NFS3_OK 3096 3096" \
    "truncate+extend: READ 1000..4095 through nfscached: zeros"
rread u2 "$FH" 1000000 4096
is "$(rv nfs_status) $(rv count) $(rv zero_bytes)" "NFS3_OK 4096 4096" \
    "truncate+extend: READ 4096 at 1,000,000 through nfscached: zeros"
rread u3 "$FH" 0 1000
is "$(md5 "$T_TMP/u3.data")" "$(range_md5 "$T_TMP/trunc2.orig" 0 1000)" \
    "truncate+extend: READ 0..999 through nfscached: the bytes kept"

# ---- a WRITE racing a cold READ of the same range ---------------------------------
RACE_N=24
for i in $(seq 0 $((RACE_N - 1))); do head -c $((2 * MIB)) /dev/urandom > "$EXPORT_DIR/race$i"; done
# Each file: a READ of its last page through nfscached (the object is
# known, its attributes fresh, nothing before that page fetched), then, on two more connections, a READ of the
# cold MiB at 512 KiB and a WRITE of 64 KiB inside it (at 768 KiB): READ
# first or WRITE first, none to 2 ms apart, FILE_SYNC or UNSTABLE, the
# upstream frozen meanwhile for the second half of the files.  Then
# READs of the written range through nfscached, at once and after acregmax,
# must return the bytes written.
timeout -k 5 120 python3 - "$top_srcdir/tests" "$PORT" "$EXPORT_DIR" "$RACE_N" "$GANESHA_PID" \
    "$NFSCACHECTL" "$CTL" > "$T_TMP/race.out" 2>&1 <<'PY'
import hashlib, os, signal, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
import rpc
port, export, n, upstream_pid = int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
R_OFF, R_LEN = 512 << 10, 1 << 20
W_OFF, W_LEN = 768 << 10, 64 << 10
conn = lambda: rpc.Conn("127.0.0.1", port, timeout=20)
c = conn()
st, root = c.mnt("/export")
fhs, written = [], []
for i in range(n):
    rep, st = c.nfs(rpc.NFSPROC3_LOOKUP, rpc.lookup_args(root, "race%d" % i))
    fhs.append(bytes.fromhex(rpc.decode_lookup(rep.body)["fh"]))

def read(cn, fh, off, count):
    rep, st = cn.nfs(rpc.NFSPROC3_READ, rpc.read_args(fh, off, count))
    return rpc.decode_read(rep.body) if rep.ok() else {"nfs_status": rep.summary()}

def check(i, when):
    r = read(c, fhs[i], W_OFF, W_LEN)
    good = r.get("md5") == hashlib.md5(written[i]).hexdigest()
    print("race%d.%s: %s" % (i, when, "written" if good else "WRONG %s" % r.get("nfs_status")))

delays = [0, 0, 0.0002, 0.0005, 0.001, 0.002]
for i in range(n):
    data = os.urandom(W_LEN)
    written.append(data)
    stable = rpc.FILE_SYNC if (i // 2) % 2 == 0 else rpc.UNSTABLE
    rc, wc = conn(), conn()
    rx, rrec = rc.build(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_READ,
                        rpc.read_args(fhs[i], R_OFF, R_LEN))
    wx, wrec = wc.build(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_WRITE,
                        rpc.write_args(fhs[i], W_OFF, data, stable=stable))
    first, second = ((rc, rrec), (wc, wrec)) if i % 2 == 0 else ((wc, wrec), (rc, rrec))
    with open(os.path.join(export, "race%d" % i), "rb") as f:
        f.seek(W_OFF)
        old = f.read(W_LEN)
    p = read(c, fhs[i], (2 << 20) - 4096, 4096)
    frozen = i >= n // 2          # both calls reach the upstream together
    if frozen:
        os.kill(upstream_pid, signal.SIGSTOP)
    try:
        first[0].send_raw(first[1])
        time.sleep(delays[(i // 4) % len(delays)])
        second[0].send_raw(second[1])
        if frozen:
            time.sleep(0.05)
    finally:
        if frozen:
            os.kill(upstream_pid, signal.SIGCONT)
    rep = wc.recv_reply(wx)
    w = rpc.decode_write(rep.body) if rep.ok() else {"nfs_status": rep.summary()}
    rep = rc.recv_reply(rx)
    r = rpc.decode_read(rep.body) if rep.ok() else {"nfs_status": rep.summary()}
    saw = "-"
    if r.get("nfs_status") == "NFS3_OK":
        got = bytes.fromhex(rpc.decode_result(rpc._res_read, rep.body)["data_hex"])
        got = got[W_OFF - R_OFF:W_OFF - R_OFF + W_LEN]
        saw = "new" if got == data else "old" if got == old else "mixed"
    print("race%d.case: %s, %s, %.1f ms apart" % (i, "read first" if i % 2 == 0 else "write first",
          rpc.STABLE_HOW[stable], delays[(i // 4) % len(delays)] * 1000))
    print("race%d.prime: %s %s" % (i, p["nfs_status"], p.get("count")))
    print("race%d.write: %s %s" % (i, w["nfs_status"], w.get("count")))
    print("race%d.read: %s %s" % (i, r["nfs_status"], r.get("count")))
    print("race%d.read_saw: %s" % (i, saw))
    rc.close()
    wc.close()
    check(i, "after")
time.sleep(1.2)
# UNSTABLE WRITEs may still be dirty in nfscached (write-back): on disk after a flush
subprocess.run([sys.argv[6], "-s", sys.argv[7], "flush"], check=True, timeout=60)
for i in range(n):
    check(i, "later")
    with open(os.path.join(export, "race%d" % i), "rb") as f:
        f.seek(W_OFF)
        print("race%d.disk: %s" % (i, "written" if f.read(W_LEN) == written[i] else "WRONG"))
PY
ok $? "race: the racing calls ran" || diag "$(tail -n 5 "$T_TMP/race.out")"
rc_count() { grep -cE "^race[0-9]+\.$1: $2\$" "$T_TMP/race.out"; }
is "$(rc_count prime 'NFS3_OK 4096')" "$RACE_N" "race: all $RACE_N last-page READs NFS3_OK"
is "$(rc_count write 'NFS3_OK 65536')" "$RACE_N" "race: all $RACE_N WRITEs NFS3_OK"
is "$(rc_count read 'NFS3_OK 1048576')" "$RACE_N" "race: all $RACE_N racing READs NFS3_OK"
is "$(rc_count disk written)" "$RACE_N" "race: the export files hold the bytes written"
is "$(rc_count after written)" "$RACE_N" "race: READs right after return the bytes written" ||
    diag "$(grep -E '\.(case|after): ' "$T_TMP/race.out" | grep -B1 WRONG | head -n 8)"
is "$(rc_count later written)" "$RACE_N" "race: READs after acregmax return the bytes written" ||
    diag "$(grep -E '\.(case|later): ' "$T_TMP/race.out" | grep -B1 WRONG | head -n 8)"

# ---- permission --------------------------------------------------------------------
F=$EXPORT_DIR/private
head -c 8192 /dev/urandom > "$F"
chown 1000:1000 "$F"
chmod 0600 "$F"
FH=$(fh_of private)
snap q0
rread q1 "$FH" 0 8192 --uid 1000 --gid 1000
is "$(rv nfs_status) $(rv count) $(md5 "$T_TMP/q1.data")" "NFS3_OK 8192 $(md5 "$F")" \
    "permission: uid 1000 reads its 0600 file through nfscached"
rread q2 "$FH" 0 8192 --uid 1000 --gid 1000
snap q2
is "$(rv nfs_status) $(md5 "$T_TMP/q2.data")" "NFS3_OK $(md5 "$F")" "permission: uid 1000 reads it again"
num_ok "$(d q0 q2 cache.read.hits)" -ge 1 "permission: the file is cached (a hit for uid 1000)"
rread q3 "$FH" 0 8192 --uid 2000 --gid 2000
snap q3
is "$(rv nfs_status)" NFS3ERR_ACCES "permission: uid 2000 gets NFS3ERR_ACCES through nfscached"
is "$(d q2 q3 cache.read.bytes_local)" 0 "permission: no cached byte went to uid 2000"
if [ -n "$UP_NFS_PORT" ]; then
    up --uid 2000 --gid 2000 read "$FH" 0 8192 > "$T_TMP/up.out"
    is "$(val "$T_TMP/up.out" nfs_status)" NFS3ERR_ACCES "permission: as the upstream answers uid 2000"
fi

# ---- backing files lost behind the daemon's back -------------------------------------
# backing_of FILE: the backing file holding FILE's bytes at their offsets
backing_of() {
    local f size
    size=$(stat -c %s "$1")
    find "$CACHE_DIR/objects" -type f 2>/dev/null | grep -E '/objects/[0-9a-f]{2}/[0-9a-f]{16}$' |
        while read -r f; do
            [ "$(stat -c %s "$f")" -ge "$size" ] && cmp -s -n "$size" "$f" "$1" && echo "$f"
        done
}
for b in gone emptied restart; do head -c $((192 * 1024)) /dev/urandom > "$EXPORT_DIR/bk-$b"; done
for b in gone emptied restart; do
    nfs_cat "$(proxy_url "bk-$b")" > "$T_TMP/bk.cat"
    is "$(md5 "$T_TMP/bk.cat")" "$(md5 "$EXPORT_DIR/bk-$b")" "backing: bk-$b read through nfscached"
done
BF_GONE=$(backing_of "$EXPORT_DIR/bk-gone")
BF_EMPTIED=$(backing_of "$EXPORT_DIR/bk-emptied")
BF_RESTART=$(backing_of "$EXPORT_DIR/bk-restart")
[ -n "$BF_GONE" ] && [ -n "$BF_EMPTIED" ] && [ -n "$BF_RESTART" ]
ok $? "backing: each file has its backing file in $CACHE_DIR/objects"

FH=$(fh_of bk-gone)
rm -f "$BF_GONE"
rread g1 "$FH" 0 $((192 * 1024))
is "$(rv nfs_status) $(md5 "$T_TMP/g1.data")" "NFS3_OK $(md5 "$EXPORT_DIR/bk-gone")" \
    "backing: deleted while running: the next READ is right"
rread g2 "$FH" 0 $((192 * 1024))
is "$(rv nfs_status) $(md5 "$T_TMP/g2.data")" "NFS3_OK $(md5 "$EXPORT_DIR/bk-gone")" \
    "backing: deleted while running: and the one after"

FH=$(fh_of bk-emptied)
: > "$BF_EMPTIED"
snap e0
rread e1 "$FH" 0 $((192 * 1024))
snap e1
is "$(rv nfs_status) $(md5 "$T_TMP/e1.data")" "NFS3_OK $(md5 "$EXPORT_DIR/bk-emptied")" \
    "backing: emptied while running: the next READ is right"
num_ok "$(d e0 e1 upstream.calls.READ)" -ge 1 "backing: emptied: the bytes came from the upstream again"
rread e2 "$FH" 0 $((192 * 1024))
is "$(rv nfs_status) $(md5 "$T_TMP/e2.data")" "NFS3_OK $(md5 "$EXPORT_DIR/bk-emptied")" \
    "backing: emptied while running: and the one after"

FH=$(fh_of bk-restart)
stop_nfscached
ok $? "nfscached exits cleanly on SIGTERM (before the restart)"
rm -f "$BF_RESTART"
if ! start_nfscached -o cache.acregmax=1 2>"$T_TMP/start.err"; then
    ok 1 "nfscached starts again on the same cache directory"
    diag "$(cat "$T_TMP/start.err")"
    done_testing
fi
snap r0
rread r1 "$FH" 0 $((192 * 1024))
snap r1
is "$(rv nfs_status) $(md5 "$T_TMP/r1.data")" "NFS3_OK $(md5 "$EXPORT_DIR/bk-restart")" \
    "backing: deleted while stopped: the first READ after the restart is right"
num_ok "$(d r0 r1 upstream.calls.READ)" -ge 1 "backing: deleted while stopped: the bytes came from the upstream"
rread r2 "$FH" 0 $((192 * 1024))
is "$(rv nfs_status) $(md5 "$T_TMP/r2.data")" "NFS3_OK $(md5 "$EXPORT_DIR/bk-restart")" \
    "backing: deleted while stopped: and the one after"
done_testing
