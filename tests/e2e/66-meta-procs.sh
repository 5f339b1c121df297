#!/bin/bash
# 66-meta-procs: the other procedures the namespace cache answers
# (cache.metadata = yes, TTLs of 30-60 s).
#   guarded SETATTR  a GETATTR answered from the cache (cache.attr.hits +1,
#                    no upstream GETATTR) carries the upstream's ctime to
#                    the nanosecond: a SETATTR guarded with it succeeds, as
#                    directly; guarded with a ctime one second (or one
#                    nanosecond) off it is NFS3ERR_NOT_SYNC, as directly, and
#                    changes nothing; after a SETATTR the cached attributes
#                    are the new ones at once
#   FSSTAT, FSINFO, PATHCONF   twice each: the second FSINFO and PATHCONF
#                    are not forwarded, with the same values, those of the
#                    upstream (FSINFO transfer sizes aside, which nfscached
#                    may lower); FSSTAT gives the upstream's total bytes
#   MOUNT            MNT twice (the root's attributes fresh): the second not
#                    forwarded, the same root handle, the upstream's;
#                    EXPORT twice: the second not forwarded, the same list,
#                    the upstream's
#   NULL             NFS NULL and MOUNT NULL answered without an upstream
#                    call (upstream.calls.NULL, MOUNT_NULL unchanged)
#   dirty            a file written UNSTABLE through nfscached (its data
#                    dirty there): GETATTR, LOOKUP and READDIRPLUS answered
#                    from the cache on another connection give its local
#                    size at once; after COMMIT the upstream's; after a
#                    FILE_SYNC WRITE the upstream's new size and times
#   race             a GETATTR (attributes not cached) and a SETATTR of the
#                    mode of the same file on two connections reach the
#                    frozen upstream together (SIGSTOP, then SIGCONT), 20
#                    files: the cache then answers the mode the SETATTR set,
#                    never the GETATTR's older one
#   one GETATTR      10 GETATTRs of one cold file on 10 connections reach
#                    nfscached while the upstream is frozen: one goes
#                    upstream, all 10 get its attributes; again with another
#                    file, 5 of the connections reset before the upstream
#                    runs again: the other 5 are answered
#   invalidate       `nfscachectl invalidate --all` empties the namespace
#                    cache (cache.metadata.entries 0, invalidations +1):
#                    the next GETATTR, LOOKUP and FSINFO are forwarded
#   reload           EXPORT answered from the cache, then upstream.exports =
#                    /other set by SIGHUP: EXPORT lists nothing and MNT
#                    /export is MNT3ERR_ACCES at once, as without the cache
#                    (10-access); unset again: /export is listed again
#   ac* = 0          (a daemon started again with every TTL 0) GETATTR,
#                    LOOKUP (found and missing), ACCESS, READLINK, READDIR,
#                    READDIRPLUS, FSSTAT, FSINFO, PATHCONF, MNT and EXPORT
#                    sent twice are forwarded twice, nothing is a hit; NULL
#                    too (all ac* 0 forwards every call)
#   metadata_max     (started again with cache.metadata_max = 20) a
#                    directory of 60 files listed and looked up: the gauge
#                    cache.metadata.entries never exceeds 20, entries are
#                    evicted (cache.metadata.evictions), every answer is the
#                    upstream's
#   metadata = no    (started again so) the same, and NULL is forwarded too
TEST_TIMEOUT=${TEST_TIMEOUT:-90}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the namespace cache of nfscached"
needs_own_upstream
setup -o cache.metadata=yes -o cache.acregmin=30 -o cache.acregmax=60 \
    -o cache.acdirmin=30 -o cache.acdirmax=60

echo "guarded" > "$EXPORT_DIR/g"
chmod 0644 "$EXPORT_DIR/g"
for i in $(seq 0 19); do echo "$i" > "$EXPORT_DIR/race$i"; chmod 0644 "$EXPORT_DIR/race$i"; done
mkdir "$EXPORT_DIR/wd"
# in a directory no call through nfscached looks into (a directory looked up
# name by name gets its listing read, which would warm them)
mkdir "$EXPORT_DIR/cold"
echo one > "$EXPORT_DIR/cold/one1"
echo one > "$EXPORT_DIR/cold/one2"
head -c 100 /dev/urandom > "$EXPORT_DIR/wd/w"

timeout -k 5 60 python3 - "$top_srcdir/tests" "$PORT" "$UP_NFS_PORT" "$UP_MNT_PORT" \
    "$EXPORT_DIR" "$NFSCACHECTL" "$CTL" "$GANESHA_PID" > "$T_TMP/procs.out" 2> "$T_TMP/procs.err" <<'PY'
import os, stat, subprocess, sys
sys.path.insert(0, sys.argv[1])
import rpc, nsrpc
port, up_nfs, up_mnt = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
export = sys.argv[5]
st = nsrpc.Stats(sys.argv[6], sys.argv[7])
chk = nsrpc.Checks()
delta = nsrpc.delta
A = nsrpc.Client(port)
B = nsrpc.Client(port)
D = nsrpc.Client(up_nfs, up_mnt)
g_path = os.path.join(export, "g")

root = A.root()
g = A.lookup(root, "g").get("fh", "")
chk.ok(len(g) > 0, "LOOKUP g through nfscached")

def mode():
    return "%o" % stat.S_IMODE(os.stat(g_path).st_mode)

# ---- guarded SETATTR ------------------------------------------------------------
A.getattr(g)
s0 = st.snap()
r = B.getattr(g)
s1 = st.snap()
chk.is_(r["nfs_status"], "NFS3_OK", "GETATTR g on another connection")
chk.is_("%s %s" % (delta(s0, s1, "cache.attr.hits"), delta(s0, s1, "upstream.calls.GETATTR")), "1 0",
        "... answered from the cache")
ctime = r.get("ctime", "0.0")
dr = D.getattr(g)
chk.is_(ctime, dr.get("ctime"), "the cached ctime is the upstream's, to the nanosecond")
chk.is_("%s %s %s %s" % (r.get("mtime"), r.get("size"), r.get("fileid"), r.get("mode")),
        "%s %s %s %s" % (dr.get("mtime"), dr.get("size"), dr.get("fileid"), dr.get("mode")),
        "the cached mtime, size, fileid and mode are the upstream's")
sec, nsec = nsrpc.nfstime(ctime)
r = B.setattr(g, mode=0o600, guard=(sec - 1, nsec))
chk.is_(r["nfs_status"], "NFS3ERR_NOT_SYNC", "SETATTR guarded with the ctime one second older: NFS3ERR_NOT_SYNC")
chk.is_(D.setattr(g, mode=0o600, guard=(sec - 1, nsec))["nfs_status"], "NFS3ERR_NOT_SYNC",
        "... as directly")
nsec1 = nsec + 1 if nsec < 999999999 else nsec - 1
r = B.setattr(g, mode=0o600, guard=(sec, nsec1))
d = D.setattr(g, mode=0o600, guard=(sec, nsec1))
chk.is_(r["nfs_status"], d["nfs_status"], "SETATTR guarded with the ctime one nanosecond off: as directly (%s)"
        % d["nfs_status"])
chk.is_(mode(), "644", "the refused SETATTRs changed nothing")
r = B.setattr(g, mode=0o600, guard=(sec, nsec))
chk.is_(r["nfs_status"], "NFS3_OK", "SETATTR guarded with the cached ctime: NFS3_OK")
chk.is_(mode(), "600", "... the mode is 0600 on disk")
r = A.getattr(g)
dr = D.getattr(g)
chk.is_("%s %s %s" % (r["nfs_status"], r.get("mode"), r.get("ctime")), "NFS3_OK 600 %s" % dr.get("ctime"),
        "GETATTR on the other connection at once: mode 600 and the new ctime, the upstream's")
sec2, nsec2 = nsrpc.nfstime(r.get("ctime", "0.0"))
r = A.setattr(g, mode=0o640, guard=(sec, nsec))
chk.is_(r["nfs_status"], "NFS3ERR_NOT_SYNC", "SETATTR guarded with the ctime before the change: NFS3ERR_NOT_SYNC")
r = A.setattr(g, mode=0o640, guard=(sec2, nsec2))
chk.is_(r["nfs_status"], "NFS3_OK", "SETATTR guarded with the new cached ctime: NFS3_OK")
chk.is_(mode(), "640", "... the mode is 0640 on disk")

# ---- FSSTAT, FSINFO, PATHCONF ----------------------------------------------------
FSINFO_KEEP = ("rtmult", "wtmult", "maxfilesize", "time_delta", "properties")
FSINFO_ALL = ("rtmax", "rtpref", "rtmult", "wtmax", "wtpref", "wtmult", "dtpref") + FSINFO_KEEP[2:]
PATHCONF_ALL = ("linkmax", "name_max", "no_trunc", "chown_restricted", "case_insensitive", "case_preserving")
for proc, fields, direct_fields in (("FSINFO", FSINFO_ALL, FSINFO_KEEP), ("PATHCONF", PATHCONF_ALL, PATHCONF_ALL)):
    call = getattr(A, proc.lower())
    s0 = st.snap()
    r1 = call(root)
    s1 = st.snap()
    r2 = getattr(B, proc.lower())(root)
    s2 = st.snap()
    want = getattr(D, proc.lower())(root)
    chk.is_("%s %s" % (r1["nfs_status"], r2["nfs_status"]), "NFS3_OK NFS3_OK", "%s twice: NFS3_OK" % proc)
    chk.is_(delta(s1, s2, "upstream.calls." + proc), 0, "%s: the second is not forwarded" % proc)
    chk.diag("%s: the first went upstream %s times" % (proc, delta(s0, s1, "upstream.calls." + proc)))
    chk.is_(" ".join("%s=%s" % (k, r2.get(k)) for k in fields), " ".join("%s=%s" % (k, r1.get(k)) for k in fields),
            "%s: the second has the first's values" % proc)
    chk.is_(" ".join("%s=%s" % (k, r1.get(k)) for k in direct_fields),
            " ".join("%s=%s" % (k, want.get(k)) for k in direct_fields), "%s: the upstream's values" % proc)
    chk.is_(r2.get("obj.attributes"), "true", "%s: the second carries the root's attributes" % proc)
    chk.is_(r2.get("obj.fileid"), want.get("obj.fileid"), "%s: ... the root's" % proc)
fa, fd = A.fsinfo(root), D.fsinfo(root)
for k in ("rtmax", "rtpref", "wtmax", "wtpref", "dtpref"):
    chk.num(int(fa.get(k, -1)), "-le", int(fd.get(k, -1)), "FSINFO %s (%s) no more than the upstream's" % (k, fa.get(k)))
s0 = st.snap()
r1 = A.fsstat(root)
r2 = B.fsstat(root)
s1 = st.snap()
want = D.fsstat(root)
chk.is_("%s %s" % (r1["nfs_status"], r2["nfs_status"]), "NFS3_OK NFS3_OK", "FSSTAT twice: NFS3_OK")
chk.is_("%s %s" % (r1.get("tbytes"), r2.get("tbytes")), "%s %s" % (want.get("tbytes"), want.get("tbytes")),
        "FSSTAT: the upstream's total bytes")
chk.diag("FSSTAT: %s of the two went upstream" % delta(s0, s1, "upstream.calls.FSSTAT"))

# ---- MOUNT MNT and EXPORT -------------------------------------------------------
r1 = A.mnt()
chk.is_("%s %s" % (r1["mount_status"], r1.get("fh")), "MNT3_OK " + root, "MNT: the root handle")
r = A.getattr(root)
chk.is_(r["nfs_status"], "NFS3_OK", "GETATTR of the root")
s0 = st.snap()
r2 = B.mnt()
s1 = st.snap()
want = D.mnt()
chk.is_("%s %s" % (r2["mount_status"], r2.get("fh")), "MNT3_OK " + root, "MNT again: the same root handle")
chk.is_(r2.get("auth_flavors"), r1.get("auth_flavors"), "MNT again: the same auth flavors")
chk.is_("%s %s" % (want.get("fh"), want.get("auth_flavors")), "%s %s" % (root, r2.get("auth_flavors")),
        "MNT: the upstream's handle and flavors")
chk.is_("%s %s" % (delta(s0, s1, "upstream.calls.MNT"), delta(s0, s1, "mount3.calls.MNT")), "0 1",
        "MNT again: not forwarded")
e1 = A.exports()
s0 = st.snap()
e2 = B.exports()
s1 = st.snap()
want = D.exports()
def exports(e):
    n = int(e.get("exports", 0))
    return " ".join("%s[%s]" % (e.get("export.%d.dir" % i), e.get("export.%d.groups" % i)) for i in range(1, n + 1))
chk.is_(e1.get("rpc"), "SUCCESS", "EXPORT answered")
chk.is_(exports(e2), exports(e1), "EXPORT again: the same list (%s)" % exports(e1))
chk.is_(exports(e1), exports(want), "EXPORT: the upstream's list")
chk.is_("%s %s" % (delta(s0, s1, "upstream.calls.EXPORT"), delta(s0, s1, "mount3.calls.EXPORT")), "0 1",
        "EXPORT again: not forwarded")

# ---- NULL -------------------------------------------------------------------------
s0 = st.snap()
res = [A.null()["rpc"], B.mount_null()["rpc"], B.null()["rpc"], A.mount_null()["rpc"]]
s1 = st.snap()
chk.is_(" ".join(res), "SUCCESS SUCCESS SUCCESS SUCCESS", "NFS NULL and MOUNT NULL, twice each: SUCCESS")
chk.is_("%s %s" % (delta(s0, s1, "upstream.calls.NULL"), delta(s0, s1, "upstream.calls.MOUNT_NULL")), "0 0",
        "NULLs: none went upstream")
chk.is_("%s %s" % (delta(s0, s1, "nfs3.calls.NULL"), delta(s0, s1, "mount3.calls.NULL")), "2 2",
        "NULLs: counted as received")

# ---- dirty data: the local size ---------------------------------------------------------
wd = A.lookup(root, "wd").get("fh", "")
w = A.lookup(wd, "w").get("fh", "")
B.access(wd)

def listed_size(c):
    """w's size in the entries of a READDIRPLUS of wd (one page)."""
    p = c.readdir_page(wd)
    n = int(p.get("entries", 0))
    return " ".join(str(p.get("entry.%d.size" % i)) for i in range(1, n + 1)
                    if p.get("entry.%d.name" % i) == "w") + ("" if p.get("eof") == "true" else " (no eof)")

for _ in (1, 2):
    s0 = st.snap()
    ga, lk, ls = B.getattr(w), B.lookup(wd, "w"), listed_size(B)
    s1 = st.snap()
chk.is_("%s %s %s" % (ga.get("size"), lk.get("obj.size"), ls), "100 100 100",
        "dirty: GETATTR, LOOKUP, READDIRPLUS of w on B: 100 bytes")
chk.is_(" ".join(str(delta(s0, s1, c)) for c in ("cache.attr.hits", "cache.lookup.hits", "cache.readdir.hits")),
        "1 1 1", "dirty: ... the second time from the cache")
data = os.urandom(5000)
r = A.write(w, 0, data, stable=rpc.UNSTABLE)
chk.is_("%s %s" % (r["nfs_status"], r.get("committed")), "NFS3_OK UNSTABLE", "dirty: A writes 5000 bytes UNSTABLE")
ga, lk, ls = B.getattr(w), B.lookup(wd, "w"), listed_size(B)
chk.is_("%s %s %s" % (ga.get("size"), lk.get("obj.size"), ls), "5000 5000 5000",
        "dirty: at once B's GETATTR, LOOKUP and READDIRPLUS entry give the local size 5000")
chk.is_(ga.get("mtime"), A.getattr(w).get("mtime"), "dirty: ... and the same mtime as A's GETATTR")
c = A.commit(w)
chk.is_(c["nfs_status"], "NFS3_OK", "dirty: A commits")
chk.is_("%s %s" % (B.getattr(w).get("size"), os.path.getsize(os.path.join(export, "wd/w"))), "5000 5000",
        "dirty: after COMMIT B's GETATTR and the export agree: 5000")
r = A.write(w, 5000, os.urandom(2000), stable=rpc.FILE_SYNC)
chk.is_("%s %s" % (r["nfs_status"], r.get("committed")), "NFS3_OK FILE_SYNC", "dirty: A writes 2000 bytes at 5000 (FILE_SYNC)")
ga, dg = B.getattr(w), D.getattr(w)
chk.is_("%s %s %s" % (ga.get("size"), ga.get("mtime"), ga.get("ctime")),
        "7000 %s %s" % (dg.get("mtime"), dg.get("ctime")),
        "dirty: at once B's GETATTR gives size 7000 and the upstream's mtime and ctime")
chk.is_(listed_size(B), "7000", "dirty: ... and its READDIRPLUS entry the size 7000")

# ---- a GETATTR racing a SETATTR ------------------------------------------------------
import signal, time
ganesha = int(sys.argv[8])
wrong = []
for i in range(20):
    fh = bytes.fromhex(A.lookup(root, "race%d" % i).get("fh", ""))
    gc = rpc.Conn("127.0.0.1", port, timeout=20)
    sc = rpc.Conn("127.0.0.1", port, timeout=20)
    gx, grec = gc.build(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_GETATTR, rpc.getattr_args(fh))
    sx, srec = sc.build(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_SETATTR, rpc.setattr_args(fh, mode=0o600))
    first, second = ((gc, grec), (sc, srec)) if i % 2 == 0 else ((sc, srec), (gc, grec))
    os.kill(ganesha, signal.SIGSTOP)
    try:
        first[0].send_raw(first[1])
        time.sleep(0.002 * (i % 4))
        second[0].send_raw(second[1])
        time.sleep(0.05)
    finally:
        os.kill(ganesha, signal.SIGCONT)
    gr = rpc.decode_result(rpc._res_getattr, gc.recv_reply(gx).body)
    sr = rpc.decode_result(rpc._res_wcc, sc.recv_reply(sx).body)
    gc.close()
    sc.close()
    after = [B.getattr(fh).get("mode") for _ in range(3)]
    if sr["nfs_status"] != "NFS3_OK" or after != ["600"] * 3:
        wrong.append("race%d (%s first): GETATTR %s mode %s, SETATTR %s; after: %s" % (
            i, "GETATTR" if i % 2 == 0 else "SETATTR", gr["nfs_status"], gr.get("mode"),
            sr["nfs_status"], " ".join(str(m) for m in after)))
chk.is_(len(wrong), 0, "race: after a GETATTR racing a SETATTR of the mode, GETATTRs give the mode set (20 files)")
chk.diag(*wrong[:5])

# ---- one GETATTR per file in flight ---------------------------------------------------
cold = bytes.fromhex(D.lookup(root, "cold").get("fh", ""))
for name, resets in (("one1", 0), ("one2", 5)):
    fh = bytes.fromhex(D.lookup(cold, name).get("fh", ""))    # nfscached knows nothing of it
    conns = [rpc.Conn("127.0.0.1", port, timeout=20) for _ in range(10)]
    xids = []
    s0 = st.snap()
    os.kill(ganesha, signal.SIGSTOP)
    try:
        for c in conns:
            x, rec = c.build(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_GETATTR, rpc.getattr_args(fh))
            c.send_raw(rec)
            xids.append(x)
        time.sleep(0.2)
        for c in conns[:resets]:
            c.reset()
        time.sleep(0.1)
    finally:
        os.kill(ganesha, signal.SIGCONT)
    got = []
    for c, x in list(zip(conns, xids))[resets:]:
        r = rpc.decode_result(rpc._res_getattr, c.recv_reply(x).body)
        got.append("%s %s %s" % (r["nfs_status"], r.get("fileid"), r.get("mtime")))
        c.close()
    s1 = st.snap()
    want = D.getattr(fh)
    chk.is_(" | ".join(got), " | ".join(["NFS3_OK %s %s" % (want.get("fileid"), want.get("mtime"))] * (10 - resets)),
            "one GETATTR: %d GETATTRs of %s (%d connections reset) answered with its attributes"
            % (10 - resets, name, resets))
    if resets == 0:
        chk.is_(delta(s0, s1, "upstream.calls.GETATTR"), 1, "one GETATTR: one went upstream for the 10")
    else:
        chk.diag("one GETATTR: %s went upstream with 5 of the callers gone" % delta(s0, s1, "upstream.calls.GETATTR"))

# ---- nfscachectl invalidate --all ----------------------------------------------------
A.getattr(g)
A.lookup(root, "g")
A.fsinfo(root)
s0 = st.snap()
chk.num(s0.get("cache.metadata.entries", -1), "-gt", 0, "invalidate: entries before (%s)"
        % s0.get("cache.metadata.entries"))
inv = subprocess.run(st.argv + ["invalidate", "--all"], capture_output=True, text=True, timeout=30)
chk.is_(inv.returncode, 0, "invalidate: nfscachectl invalidate --all")
s1 = st.snap()
chk.is_("%s %s" % (s1.get("cache.metadata.entries"), delta(s0, s1, "cache.metadata.invalidations")), "0 1",
        "invalidate: cache.metadata.entries 0, cache.metadata.invalidations +1")
r = (A.getattr(g)["nfs_status"], A.lookup(root, "g")["nfs_status"], A.fsinfo(root)["nfs_status"])
s2 = st.snap()
chk.is_(" ".join(r), "NFS3_OK NFS3_OK NFS3_OK", "invalidate: GETATTR, LOOKUP, FSINFO")
chk.is_(" ".join(str(delta(s1, s2, "upstream.calls." + p)) for p in ("GETATTR", "LOOKUP", "FSINFO")), "1 1 1",
        "invalidate: ... each forwarded")
PY
rc=$?
checks "$T_TMP/procs.out"
ok $rc "the calls ran to their end" || diag "$(tail -n 8 "$T_TMP/procs.err")"
stat_ok upstream.calls.NULL -eq 0
stat_ok upstream.calls.MOUNT_NULL -eq 0

# ---- a reload changing upstream.exports ------------------------------------------------
# hup: SIGHUP, then wait for the daemon's verdict in its log
hup() {
    local before
    before=$(grep -cE "main: (configuration reloaded|reload of)" "$T_TMP/nfscached.log")
    kill -HUP "$NFSCACHED_PID"
    for _ in $(seq 50); do
        [ "$(grep -cE "main: (configuration reloaded|reload of)" "$T_TMP/nfscached.log")" -gt "$before" ] && return 0
        sleep 0.1
    done
    return 1
}
rpc exports > "$T_TMP/e1.out"
snap x0
rpc exports > "$T_TMP/e2.out"
snap x1
is "$(val "$T_TMP/e2.out" export_count) $(d x0 x1 upstream.calls.EXPORT)" "1 0" \
    "reload: EXPORT lists /export, from the cache"
cp "$T_TMP/nfscached.conf" "$T_TMP/nfscached.conf.orig"
sed -i 's|^\[upstream\]$|[upstream]\nexports = /other|' "$T_TMP/nfscached.conf"
hup
ok $? "reload: SIGHUP with upstream.exports = /other in the file" || diag "$(tail -n 3 "$T_TMP/nfscached.log")"
rpc exports > "$T_TMP/e3.out"
is "$(val "$T_TMP/e3.out" export_count)" 0 "reload: EXPORT then lists nothing" ||
    diag "$(grep '^export' "$T_TMP/e3.out")"
rpc mnt > "$T_TMP/m3.out"
is "$(val "$T_TMP/m3.out" mount_status)" 13 "reload: MNT /export is MNT3ERR_ACCES"
cp "$T_TMP/nfscached.conf.orig" "$T_TMP/nfscached.conf"
hup
ok $? "reload: SIGHUP without upstream.exports"
rpc exports > "$T_TMP/e4.out"
is "$(val "$T_TMP/e4.out" export_count)" 1 "reload: EXPORT lists /export again"
rpc mnt > "$T_TMP/m4.out"
is "$(val "$T_TMP/m4.out" mount_status)" 0 "reload: MNT /export works again"

# ---- nothing cached: every TTL 0, then the namespace cache off ------------------------
mkdir "$EXPORT_DIR/dd"
echo x > "$EXPORT_DIR/dd/x"
ln -s dd/x "$EXPORT_DIR/sl"

# forwarded WHAT NULL_FORWARDED: each procedure twice through the daemon,
# every call forwarded
forwarded() {
    timeout -k 5 60 python3 - "$top_srcdir/tests" "$PORT" "$NFSCACHECTL" "$CTL" "$1" "$2" \
        > "$T_TMP/fwd-$1.out" 2> "$T_TMP/fwd-$1.err" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import rpc, nsrpc
port, what, null_fwd = int(sys.argv[2]), sys.argv[5], sys.argv[6] == "yes"
st = nsrpc.Stats(sys.argv[3], sys.argv[4])
chk = nsrpc.Checks()
delta = nsrpc.delta
A, B = nsrpc.Client(port), nsrpc.Client(port)
root = A.root()
dd = A.lookup(root, "dd").get("fh", "")
sl = A.lookup(root, "sl").get("fh", "")
x = A.lookup(dd, "x").get("fh", "")
A.getattr(x)
calls = [
    ("GETATTR", "GETATTR", lambda c: c.getattr(x), "NFS3_OK"),
    ("LOOKUP", "LOOKUP", lambda c: c.lookup(dd, "x"), "NFS3_OK"),
    ("LOOKUP of a missing name", "LOOKUP", lambda c: c.lookup(dd, "nothing"), "NFS3ERR_NOENT"),
    ("ACCESS", "ACCESS", lambda c: c.access(dd), "NFS3_OK"),
    ("READLINK", "READLINK", lambda c: c.readlink(sl), "NFS3_OK"),
    ("READDIRPLUS", "READDIRPLUS", lambda c: {"nfs_status": c.listing(dd)["status"]}, "NFS3_OK"),
    ("READDIR", "READDIR", lambda c: {"nfs_status": c.listing(dd, plus=False)["status"]}, "NFS3_OK"),
    ("FSSTAT", "FSSTAT", lambda c: c.fsstat(root), "NFS3_OK"),
    ("FSINFO", "FSINFO", lambda c: c.fsinfo(root), "NFS3_OK"),
    ("PATHCONF", "PATHCONF", lambda c: c.pathconf(root), "NFS3_OK"),
    ("MNT", "MNT", lambda c: {"nfs_status": c.mnt()["mount_status"]}, "MNT3_OK"),
    ("EXPORT", "EXPORT", lambda c: {"nfs_status": c.exports()["rpc"]}, "SUCCESS"),
    ("NFS NULL", "NULL", lambda c: {"nfs_status": c.null()["rpc"]}, "SUCCESS"),
    ("MOUNT NULL", "MOUNT_NULL", lambda c: {"nfs_status": c.mount_null()["rpc"]}, "SUCCESS"),
]
HITS = ("cache.attr.hits", "cache.lookup.hits", "cache.lookup.negative_hits", "cache.readdir.hits",
        "cache.access.hits", "cache.readlink.hits")
for desc, counter, fn, want in calls:
    s0 = st.snap()
    r1, r2 = fn(A), fn(B)
    s1 = st.snap()
    chk.is_("%s %s" % (r1["nfs_status"], r2["nfs_status"]), "%s %s" % (want, want), "%s: %s twice" % (what, desc))
    n = 0 if counter.endswith("NULL") and not null_fwd else 2
    chk.is_(delta(s0, s1, "upstream.calls." + counter), n, "%s: %s: %d went upstream" % (what, desc, n))
    chk.is_(" ".join(str(delta(s0, s1, h)) for h in HITS), " ".join("0" for h in HITS),
            "%s: %s: no cache hit" % (what, desc))
PY
    local rc=$?
    checks "$T_TMP/fwd-$1.out"
    ok $rc "$1: the calls ran to their end" || diag "$(tail -n 8 "$T_TMP/fwd-$1.err")"
}

stop_nfscached
ok $? "nfscached exits cleanly (before the restart with every TTL 0)"
if start_nfscached -o cache.metadata=yes -o cache.acregmin=0 -o cache.acregmax=0 \
    -o cache.acdirmin=0 -o cache.acdirmax=0 2>"$T_TMP/start.err"; then
    forwarded "ac*=0" yes
else
    ok 1 "nfscached starts with every TTL 0"
    diag "$(cat "$T_TMP/start.err")"
fi
stop_nfscached
ok $? "nfscached exits cleanly (before the restart with cache.metadata_max = 20)"
mkdir "$EXPORT_DIR/many"
for i in $(seq -w 1 60); do echo "$i" > "$EXPORT_DIR/many/m$i"; done
if start_nfscached -o cache.metadata=yes -o cache.metadata_max=20 -o cache.acregmin=30 \
    -o cache.acregmax=60 -o cache.acdirmin=30 -o cache.acdirmax=60 2>"$T_TMP/start.err"; then
    timeout -k 5 60 python3 - "$top_srcdir/tests" "$PORT" "$UP_NFS_PORT" "$UP_MNT_PORT" \
        "$EXPORT_DIR" "$NFSCACHECTL" "$CTL" > "$T_TMP/max.out" 2> "$T_TMP/max.err" <<'PY'
import os, sys
sys.path.insert(0, sys.argv[1])
import rpc, nsrpc
port, up_nfs, up_mnt, export = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
st = nsrpc.Stats(sys.argv[6], sys.argv[7])
chk = nsrpc.Checks()
A, D = nsrpc.Client(port), nsrpc.Client(up_nfs, up_mnt)
root = A.root()
many = A.lookup(root, "many").get("fh", "")
A.access(many)
most = 0
want = D.listing(many, dircount=512, maxcount=4096)
wrong = []
for rnd in range(3):
    l = A.listing(many, dircount=512, maxcount=4096)
    most = max(most, st.snap().get("cache.metadata.entries", 10**9))
    if sorted(l["names"]) != sorted(want["names"]) or l["fhs"] != want["fhs"]:
        wrong.append("listing %d" % rnd)
    for i in range(1, 61):
        name = "m%02d" % i
        r = A.lookup(many, name)
        if r.get("fh") != want["fhs"].get(name):
            wrong.append("%s: %s" % (name, r["nfs_status"]))
        if i % 10 == 0:
            most = max(most, st.snap().get("cache.metadata.entries", 10**9))
s = st.snap()
chk.is_(" ".join(wrong) or "none", "none", "metadata_max: listings and LOOKUPs give the upstream's names and handles")
chk.is_(" ".join(sorted(want["names"])), " ".join(sorted(os.listdir(os.path.join(export, "many")) + [".", ".."])),
        "metadata_max: (the upstream lists the export's names)")
chk.num(most, "-le", 20, "metadata_max: cache.metadata.entries never above 20 (at most %d)" % most)
chk.num(s.get("cache.metadata.evictions", -1), "-gt", 0,
        "metadata_max: entries were evicted (%s)" % s.get("cache.metadata.evictions"))
PY
    rc=$?
    checks "$T_TMP/max.out"
    ok $rc "metadata_max: the calls ran to their end" || diag "$(tail -n 8 "$T_TMP/max.err")"
else
    ok 1 "nfscached starts with cache.metadata_max = 20"
    diag "$(cat "$T_TMP/start.err")"
fi
stop_nfscached
ok $? "nfscached exits cleanly (before the restart with cache.metadata = no)"
if start_nfscached -o cache.metadata=no -o cache.acregmin=30 -o cache.acregmax=60 \
    -o cache.acdirmin=30 -o cache.acdirmax=60 2>"$T_TMP/start.err"; then
    forwarded "metadata=no" yes
else
    ok 1 "nfscached starts with cache.metadata = no"
    diag "$(cat "$T_TMP/start.err")"
fi
done_testing
