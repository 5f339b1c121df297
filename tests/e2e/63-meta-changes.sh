#!/bin/bash
# 63-meta-changes: changes made through nfscached are seen at once by its
# other clients, although their namespace cache is warm (cache.metadata =
# yes, TTLs of 30-60 s: nothing expires during the test).  Connection B
# warms the cache of the directories involved first (ACCESS, a whole
# READDIRPLUS pass, LOOKUPs of the names, found and missing; a second round
# is answered from the cache: a stale answer would show); connection A then
# makes one change, and B at once:
#   RENAME d1/f -> d2/f2   LOOKUP d1/f NOENT (forgotten by the cache: asked),
#                          d2/f2 the handle f had
#   REMOVE d1/g, RMDIR d1/sub   the name NOENT (from the cache); GETATTR
#                          of the removed file, cached before, is the
#                          upstream's answer (NFS3ERR_STALE)
#   LINK d1/h as d2/hl     GETATTR of h shows nlink 2; d2/hl is h's handle
#   SYMLINK d2/s           LOOKUP finds it (NF3LNK); READLINK gives the
#                          target, the second one from the cache
#                          (cache.readlink.hits, no upstream READLINK)
#   MKNOD d2/p FIFO        LOOKUP and GETATTR give NF3FIFO; a FIFO on disk
#   MKDIR d2/nd, CREATE d1/new   LOOKUP finds them
#   RENAME d1/mv -> d2/mv (a directory)   B's READDIRPLUS of mv, listed
#                          before, gives ".." as d2 (the upstream's entries);
#                          LOOKUP of ".." in mv is d2
#   RENAME d2/f2 over d1/new   d2/f2 NOENT, d1/new is f2; GETATTR of the
#                          file replaced is the upstream's answer
# and after each, B's READDIRPLUS passes of both directories (small pages:
# the listing of d1 takes several) list exactly the names in the export,
# as the upstream lists them, with the upstream's handles.
#   random   300 changes drawn at random (seeded; CREATE, MKDIR, REMOVE,
#            RMDIR, RENAME within and across two directories, also over an
#            existing name, LINK, SYMLINK) through A, the names involved
#            looked up on B just before: after each, B's LOOKUPs of those
#            names and GETATTR of the handles give what the upstream gives
#            (status, handle, type, nlink, size), and every 10 changes B's
#            READDIRPLUS and READDIR passes are the upstream's
#   race     a LOOKUP on B and a REMOVE (or a CREATE) of that name on A
#            reach the frozen upstream together (SIGSTOP, SIGCONT), 20
#            times each: B's LOOKUPs after both replies give what the
#            upstream gives (the LOOKUP's older answer is not kept)
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the namespace cache of nfscached"
needs_own_upstream
setup -o cache.metadata=yes -o cache.acregmin=30 -o cache.acregmax=60 \
    -o cache.acdirmin=30 -o cache.acdirmax=60

mkdir -p "$EXPORT_DIR/d1/sub" "$EXPORT_DIR/d1/mv" "$EXPORT_DIR/d2"
echo in > "$EXPORT_DIR/d1/mv/in"
for n in f g h; do echo "file $n" > "$EXPORT_DIR/d1/$n"; done
for i in $(seq -w 0 39); do echo "$i" > "$EXPORT_DIR/d1/fill$i"; done
echo e > "$EXPORT_DIR/d2/e"

timeout -k 5 100 python3 - "$top_srcdir/tests" "$PORT" "$UP_NFS_PORT" "$UP_MNT_PORT" \
    "$EXPORT_DIR" "$NFSCACHECTL" "$CTL" "$GANESHA_PID" > "$T_TMP/changes.out" 2> "$T_TMP/changes.err" <<'PY'
import os, stat, sys
sys.path.insert(0, sys.argv[1])
import rpc, nsrpc
port, up_nfs, up_mnt = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
export = sys.argv[5]
st = nsrpc.Stats(sys.argv[6], sys.argv[7])
chk = nsrpc.Checks()
A = nsrpc.Client(port)                  # makes the changes
B = nsrpc.Client(port)                  # warms the cache and checks
D = nsrpc.Client(up_nfs, up_mnt)        # the upstream itself
delta = nsrpc.delta

root = B.root()
chk.is_(root, D.root(), "MNT through nfscached gives the upstream's root handle")
dirs = {}
for d in ("d1", "d2"):
    r = B.lookup(root, d)
    chk.is_(r["nfs_status"], "NFS3_OK", "LOOKUP %s on B" % d)
    dirs[d] = r.get("fh", "")
    chk.is_(dirs[d], D.lookup(root, d).get("fh"), "%s: the upstream's handle" % d)
    B.access(dirs[d])
handles = {}                            # "d1/f" -> handle, as B learnt it

def warm(tag, names):
    """B: ACCESS and a READDIRPLUS pass of d1 and d2, LOOKUPs of `names`
    ("d1/f", ...); then the same again, which must be answered from the
    cache."""
    for rnd in (1, 2):
        s0 = st.snap()
        pages = 0
        for d in ("d1", "d2"):
            r = B.access(dirs[d])
            if rnd == 1:
                chk.is_(r["nfs_status"], "NFS3_OK", "%s: warm: ACCESS %s on B" % (tag, d))
            l = B.listing(dirs[d], dircount=512, maxcount=4096)
            pages += l["pages"]
            if rnd == 1:
                chk.is_(l["status"] + l["error"], "NFS3_OK", "%s: warm: READDIRPLUS pass of %s" % (tag, d))
        for n in names:
            d, name = n.split("/")
            r = B.lookup(dirs[d], name)
            if r["nfs_status"] == "NFS3_OK":
                handles[n] = r["fh"]
        s1 = st.snap()
    chk.is_("%s %s" % (delta(s0, s1, "upstream.calls.READDIRPLUS"), delta(s0, s1, "cache.readdir.hits")),
            "0 %d" % pages, "%s: warm: the second READDIRPLUS passes (%d pages) come from the cache" % (tag, pages))
    chk.is_("%s %s" % (delta(s0, s1, "upstream.calls.LOOKUP"),
                       delta(s0, s1, "cache.lookup.hits") + delta(s0, s1, "cache.lookup.negative_hits")),
            "0 %d" % len(names), "%s: warm: the second LOOKUPs of %s come from the cache" % (tag, " ".join(names)))

def export_names(d):
    return " ".join(sorted(os.listdir(os.path.join(export, d)) + [".", ".."]))

def check_dirs(tag):
    """B's READDIRPLUS passes of d1 and d2 list the export's names, as the
    upstream does, with its handles."""
    for d in ("d1", "d2"):
        s0 = st.snap()
        got = B.listing(dirs[d], dircount=512, maxcount=4096)
        s1 = st.snap()
        want = D.listing(dirs[d], dircount=512, maxcount=4096)
        chk.is_(got["status"] + got["error"], "NFS3_OK", "%s: READDIRPLUS pass of %s on B" % (tag, d))
        chk.is_(" ".join(sorted(got["names"])), export_names(d),
                "%s: B lists the names in the export's %s" % (tag, d))
        chk.is_(" ".join(sorted(got["names"])), " ".join(sorted(want["names"])),
                "%s: ... as the upstream lists them" % tag)
        chk.ok(got["fhs"] == want["fhs"], "%s: ... with the upstream's handles" % tag)
        chk.diag("%s: %s listed in %d pages, %s from the cache" % (tag, d, got["pages"],
                                                                   delta(s0, s1, "cache.readdir.hits")))

def lookup_gone(tag, d, name, cached=True):
    """LOOKUP of a name a change took away: NOENT at once, from the cache
    (REMOVE, RMDIR); the old name of a RENAME is forgotten instead (a RENAME
    onto another link of the same file leaves it): NOENT from the upstream."""
    s0 = st.snap()
    r = B.lookup(dirs[d], name)
    s1 = st.snap()
    chk.is_(r["nfs_status"], "NFS3ERR_NOENT", "%s: LOOKUP %s/%s on B: NFS3ERR_NOENT at once" % (tag, d, name))
    chk.is_(D.lookup(dirs[d], name)["nfs_status"], "NFS3ERR_NOENT", "%s: ... as the upstream says" % tag)
    if cached:
        chk.is_("%s %s" % (delta(s0, s1, "upstream.calls.LOOKUP"), delta(s0, s1, "cache.lookup.negative_hits")),
                "0 1", "%s: ... a negative entry of the cache (no upstream LOOKUP)" % tag)
    else:
        chk.is_("%s %s" % (delta(s0, s1, "upstream.calls.LOOKUP"), delta(s0, s1, "cache.lookup.negative_hits")),
                "1 0", "%s: ... forgotten by the cache (one upstream LOOKUP)" % tag)

def lookup_found(tag, d, name, fh, ftype, cached):
    """LOOKUP of a name a change made: the handle `fh`, of type `ftype`;
    from the cache when `cached`."""
    s0 = st.snap()
    r = B.lookup(dirs[d], name)
    s1 = st.snap()
    chk.is_("%s %s" % (r["nfs_status"], r.get("obj.type")), "NFS3_OK " + ftype,
            "%s: LOOKUP %s/%s on B finds it at once (%s)" % (tag, d, name, ftype))
    chk.is_(r.get("fh"), fh, "%s: ... with the handle the change gave" % tag)
    if cached:
        chk.is_("%s %s" % (delta(s0, s1, "upstream.calls.LOOKUP"), delta(s0, s1, "cache.lookup.hits")),
                "0 1", "%s: ... from the cache (the name the change added)" % tag)
    return r

# ---- RENAME d1/f -> d2/f2 ----------------------------------------------------
warm("rename", ["d1/f", "d1/nof", "d2/f2", "d2/e"])
s = st.snap()
chk.num(s.get("cache.metadata.entries", -1), "-gt", 0, "cache.metadata.entries > 0 once warm")
r = A.rename(dirs["d1"], "f", dirs["d2"], "f2")
chk.is_(r["nfs_status"], "NFS3_OK", "rename: RENAME d1/f d2/f2 on A")
chk.ok(os.path.exists(os.path.join(export, "d2/f2")) and not os.path.exists(os.path.join(export, "d1/f")),
       "rename: moved in the export")
lookup_gone("rename", "d1", "f", cached=False)
r = lookup_found("rename", "d2", "f2", handles["d1/f"], "NF3REG", False)
r = B.getattr(handles["d1/f"])
chk.is_("%s %s %s" % (r["nfs_status"], r.get("nlink"), r.get("size")), "NFS3_OK 1 7",
        "rename: GETATTR of the file on B: nlink 1, 7 bytes")
check_dirs("rename")

# ---- REMOVE d1/g ----------------------------------------------------------------
warm("remove", ["d1/g", "d1/h"])
gfh = handles["d1/g"]
B.getattr(gfh)
r = B.getattr(gfh)
chk.is_("%s %s" % (r["nfs_status"], r.get("nlink")), "NFS3_OK 1", "remove: GETATTR of d1/g on B: nlink 1")
r = A.remove(dirs["d1"], "g")
chk.is_(r["nfs_status"], "NFS3_OK", "remove: REMOVE d1/g on A")
chk.ok(not os.path.exists(os.path.join(export, "d1/g")), "remove: gone from the export")
lookup_gone("remove", "d1", "g")
r, w = B.getattr(gfh), D.getattr(gfh)
chk.is_("%s %s" % (r["nfs_status"], r.get("nlink")), "%s %s" % (w["nfs_status"], w.get("nlink")),
        "remove: GETATTR of the removed file on B at once: as the upstream answers (%s)" % w["nfs_status"])
check_dirs("remove")

# ---- RMDIR d1/sub ---------------------------------------------------------------
warm("rmdir", ["d1/sub", "d1/h"])
r = A.rmdir(dirs["d1"], "sub")
chk.is_(r["nfs_status"], "NFS3_OK", "rmdir: RMDIR d1/sub on A")
chk.ok(not os.path.exists(os.path.join(export, "d1/sub")), "rmdir: gone from the export")
lookup_gone("rmdir", "d1", "sub")
check_dirs("rmdir")

# ---- LINK d1/h as d2/hl ----------------------------------------------------------
warm("link", ["d1/h", "d2/hl"])
h = handles["d1/h"]
B.getattr(h)
s0 = st.snap()
r = B.getattr(h)
s1 = st.snap()
chk.is_("%s %s" % (r["nfs_status"], r.get("nlink")), "NFS3_OK 1", "link: GETATTR of d1/h on B: nlink 1")
chk.is_("%s %s" % (delta(s0, s1, "upstream.calls.GETATTR"), delta(s0, s1, "cache.attr.hits")), "0 1",
        "link: ... from the cache")
r = A.link(h, dirs["d2"], "hl")
chk.is_("%s %s" % (r["nfs_status"], r.get("obj.nlink")), "NFS3_OK 2", "link: LINK d1/h d2/hl on A: nlink 2")
chk.is_(os.stat(os.path.join(export, "d1/h")).st_nlink, 2, "link: nlink 2 in the export")
r = B.getattr(h)
chk.is_("%s %s" % (r["nfs_status"], r.get("nlink")), "NFS3_OK 2", "link: GETATTR of d1/h on B: nlink 2 at once")
lookup_found("link", "d2", "hl", h, "NF3REG", True)
check_dirs("link")

# ---- SYMLINK d2/s, READLINK ----------------------------------------------------
TARGET = "../d1/h/not-a-dir/..//x y"
warm("symlink", ["d2/s", "d2/e"])
r = A.symlink(dirs["d2"], "s", TARGET)
chk.is_(r["nfs_status"], "NFS3_OK", "symlink: SYMLINK d2/s on A")
sfh = r.get("fh", "")
chk.is_(os.readlink(os.path.join(export, "d2/s")) if os.path.islink(os.path.join(export, "d2/s")) else "-",
        TARGET, "symlink: a symlink with that target in the export")
lookup_found("symlink", "d2", "s", sfh, "NF3LNK", True)
s0 = st.snap()
r1 = B.readlink(sfh)
s1 = st.snap()
r2 = B.readlink(sfh)
s2 = st.snap()
chk.is_("%s %s" % (r1["nfs_status"], r1.get("target")), "NFS3_OK " + TARGET, "symlink: READLINK on B: the target")
chk.is_("%s %s" % (r2["nfs_status"], r2.get("target")), "NFS3_OK " + TARGET, "symlink: READLINK again: the target")
chk.is_("%s %s" % (delta(s1, s2, "upstream.calls.READLINK"), delta(s1, s2, "cache.readlink.hits")), "0 1",
        "symlink: the second READLINK from the cache (cache.readlink.hits +1, no upstream READLINK)")
chk.diag("symlink: the first READLINK went upstream %s times" % delta(s0, s1, "upstream.calls.READLINK"))
chk.is_(D.readlink(sfh).get("target"), TARGET, "symlink: the upstream's READLINK agrees")
check_dirs("symlink")

# ---- MKNOD d2/p FIFO -----------------------------------------------------------
warm("mknod", ["d2/p", "d2/e"])
r = A.mknod(dirs["d2"], "p", rpc.NF3FIFO, 0o640)
chk.is_("%s %s" % (r["nfs_status"], r.get("obj.type")), "NFS3_OK NF3FIFO", "mknod: MKNOD d2/p FIFO on A")
pfh = r.get("fh", "")
p = os.path.join(export, "d2/p")
chk.ok(os.path.lexists(p) and stat.S_ISFIFO(os.lstat(p).st_mode), "mknod: a FIFO in the export")
lookup_found("mknod", "d2", "p", pfh, "NF3FIFO", True)
r = B.getattr(pfh)
chk.is_("%s %s" % (r["nfs_status"], r.get("type")), "NFS3_OK NF3FIFO", "mknod: GETATTR on B: NF3FIFO")
check_dirs("mknod")

# ---- MKDIR d2/nd, CREATE d1/new -------------------------------------------------
warm("mkdir", ["d2/nd", "d1/new"])
r = A.mkdir(dirs["d2"], "nd")
chk.is_(r["nfs_status"], "NFS3_OK", "mkdir: MKDIR d2/nd on A")
lookup_found("mkdir", "d2", "nd", r.get("fh", ""), "NF3DIR", True)
r = A.create(dirs["d1"], "new")
chk.is_(r["nfs_status"], "NFS3_OK", "create: CREATE d1/new on A")
lookup_found("create", "d1", "new", r.get("fh", ""), "NF3REG", True)
check_dirs("mkdir+create")

# ---- RENAME of a directory: its ".." -------------------------------------------------
warm("rename dir", ["d1/mv", "d2/mv"])
mv = handles["d1/mv"]
B.access(mv)
for _ in (1, 2):
    lm = B.listing(mv)
    dd = B.lookup(mv, "..")
chk.is_("%s %s" % (lm["fhs"].get(".."), dd.get("fh")), "%s %s" % (dirs["d1"], dirs["d1"]),
        "rename dir: mv's \"..\" is d1 before (READDIRPLUS, LOOKUP)")
r = A.rename(dirs["d1"], "mv", dirs["d2"], "mv")
chk.is_(r["nfs_status"], "NFS3_OK", "rename dir: RENAME d1/mv d2/mv on A")
lm, want = B.listing(mv), D.listing(mv)
chk.is_(" ".join("%s=%s" % (n, lm["fhs"].get(n)) for n in sorted(lm["names"])),
        " ".join("%s=%s" % (n, want["fhs"].get(n)) for n in sorted(want["names"])),
        "rename dir: B's READDIRPLUS of mv at once: the upstream's names and handles")
chk.is_(lm["fhs"].get(".."), dirs["d2"], "rename dir: ... \"..\" is d2")
chk.is_(B.lookup(mv, "..").get("fh"), dirs["d2"], "rename dir: B's LOOKUP of \"..\" in mv is d2")
lookup_gone("rename dir", "d1", "mv", cached=False)
lookup_found("rename dir", "d2", "mv", mv, "NF3DIR", False)
check_dirs("rename dir")

# ---- RENAME back over an existing name ---------------------------------------------
warm("rename over", ["d2/f2", "d1/new", "d2/e"])
over = handles["d1/new"]
B.getattr(over)
r = B.getattr(over)
chk.is_("%s %s" % (r["nfs_status"], r.get("nlink")), "NFS3_OK 1", "rename over: GETATTR of d1/new on B: nlink 1")
r = A.rename(dirs["d2"], "f2", dirs["d1"], "new")
chk.is_(r["nfs_status"], "NFS3_OK", "rename over: RENAME d2/f2 d1/new on A (replacing d1/new)")
r, w = B.getattr(over), D.getattr(over)
chk.is_("%s %s" % (r["nfs_status"], r.get("nlink")), "%s %s" % (w["nfs_status"], w.get("nlink")),
        "rename over: GETATTR of the replaced file on B at once: as the upstream answers (%s)" % w["nfs_status"])
lookup_gone("rename over", "d2", "f2", cached=False)
lookup_found("rename over", "d1", "new", handles["d1/f"], "NF3REG", False)
check_dirs("rename over")

# ---- random changes ----------------------------------------------------------------------
import random
seed = int(os.environ.get("META_SEED", "6363"))
rng = random.Random(seed)
chk.diag("random: seed %d (META_SEED)" % seed)
for d in ("r1", "r2"):
    r = A.mkdir(root, d)
    dirs[d] = r.get("fh", "")
    B.access(dirs[d])
NAMES = ["n%d" % i for i in range(8)]
RDIRS = ("r1", "r2")
bad = []
s_start = st.snap()

def view(c, d, name):
    r = c.lookup(dirs[d], name)
    if r["nfs_status"] != "NFS3_OK":
        return r["nfs_status"]
    g = c.getattr(r["fh"])
    return "%s %s %s nlink=%s size=%s" % (r["nfs_status"], r["fh"][-16:], g.get("type"), g.get("nlink"), g.get("size"))

def compare(tag, touched):
    for d, name in touched:
        got, want = view(B, d, name), view(D, d, name)
        if got != want:
            bad.append("%s: %s/%s on B: %s, upstream: %s" % (tag, d, name, got, want))

def compare_lists(tag):
    for d in RDIRS:
        for plus in (True, False):
            got = B.listing(dirs[d], plus=plus, dircount=256, maxcount=2048)
            want = D.listing(dirs[d], plus=plus, dircount=256, maxcount=2048)
            if sorted(got["names"]) != sorted(want["names"]) or got["fhs"] != want["fhs"] or \
                    got["status"] != want["status"]:
                bad.append("%s: %s of %s on B: %s %s, upstream: %s %s" % (
                    tag, "READDIRPLUS" if plus else "READDIR", d, got["status"], sorted(got["names"]),
                    want["status"], sorted(want["names"])))

for i in range(300):
    op = rng.choice(["create", "create", "mkdir", "remove", "remove", "rmdir", "rename", "rename",
                     "link", "symlink"])
    d, name = rng.choice(RDIRS), rng.choice(NAMES)
    d2, name2 = rng.choice(RDIRS), rng.choice(NAMES)
    touched = [(d, name), (d2, name2)]
    for td, tn in touched:
        view(B, td, tn)                      # warm: what B would answer stale
    if op == "create":
        r = A.create(dirs[d], name)
    elif op == "mkdir":
        r = A.mkdir(dirs[d], name)
    elif op == "remove":
        r = A.remove(dirs[d], name)
    elif op == "rmdir":
        r = A.rmdir(dirs[d], name)
    elif op == "rename":
        r = A.rename(dirs[d], name, dirs[d2], name2)
    elif op == "link":
        src = A.lookup(dirs[d], name)
        r = A.link(src["fh"], dirs[d2], name2) if src["nfs_status"] == "NFS3_OK" else src
    else:
        r = A.symlink(dirs[d], name, "t%d" % i)
    tag = "random %d %s %s/%s %s/%s -> %s" % (i, op, d, name, d2, name2, r["nfs_status"])
    compare(tag, touched)
    if i % 10 == 9:
        compare_lists(tag)
    if len(bad) >= 5:
        break
s_end = st.snap()
chk.is_(len(bad), 0, "random: after each change B gives what the upstream gives")
chk.diag(*bad[:5])
chk.num(delta(s_start, s_end, "cache.lookup.hits") + delta(s_start, s_end, "cache.lookup.negative_hits"), "-gt", 0,
        "random: B's LOOKUPs were answered from the cache at times (%s hits, %s negative)"
        % (delta(s_start, s_end, "cache.lookup.hits"), delta(s_start, s_end, "cache.lookup.negative_hits")))

# ---- a LOOKUP racing a REMOVE or a CREATE of the name ---------------------------------------
import signal, time
ganesha = int(sys.argv[8])
r = A.mkdir(root, "race")
rd = bytes.fromhex(r.get("fh", ""))
B.access(rd)
wrong = []
for i in range(40):
    name = "x%d" % i
    remove = i < 20
    if remove:
        A.create(rd, name)
    B.lookup(rd, name)                          # B's cache knows the name (or its absence)
    lc = rpc.Conn("127.0.0.1", port, timeout=20)
    cc = rpc.Conn("127.0.0.1", port, timeout=20)
    lx, lrec = lc.build(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_LOOKUP, rpc.lookup_args(rd, name))
    if remove:
        cx, crec = cc.build(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_REMOVE, rpc.remove_args(rd, name))
    else:
        cx, crec = cc.build(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_CREATE, rpc.create_args(rd, name))
    first, second = ((lc, lrec), (cc, crec)) if i % 2 == 0 else ((cc, crec), (lc, lrec))
    os.kill(ganesha, signal.SIGSTOP)
    try:
        first[0].send_raw(first[1])
        time.sleep(0.002 * (i % 4))
        second[0].send_raw(second[1])
        time.sleep(0.05)
    finally:
        os.kill(ganesha, signal.SIGCONT)
    lr = rpc.nfs_status(lc.recv_reply(lx).body)
    cr = rpc.nfs_status(cc.recv_reply(cx).body)
    lc.close()
    cc.close()
    want = D.lookup(rd, name)
    after = [B.lookup(rd, name) for _ in range(2)]
    got = ["%s %s" % (a["nfs_status"], a.get("fh", "")) for a in after]
    if got != ["%s %s" % (want["nfs_status"], want.get("fh", ""))] * 2:
        wrong.append("%s (%s, %s first): LOOKUP %s, %s %s; after: %s; upstream: %s" % (
            name, "REMOVE" if remove else "CREATE", "LOOKUP" if i % 2 == 0 else "change", lr,
            "REMOVE" if remove else "CREATE", cr, " / ".join(g[:40] for g in got), want["nfs_status"]))
chk.is_(len(wrong), 0, "race: after a LOOKUP racing a REMOVE or CREATE of the name, B's LOOKUPs are the upstream's")
chk.diag(*wrong[:5])
PY
rc=$?
checks "$T_TMP/changes.out"
ok $rc "the calls ran to their end" || diag "$(tail -n 8 "$T_TMP/changes.err")"
stat_ok cache.lookup.hits -gt 0
done_testing
