#!/bin/bash
# 65-meta-perms: the namespace cache never widens a permission.  Directory d
# (owner 1000:1000, mode 0750) holds f (0640) and g; TTLs of 2 s
# (cache.acregmin = acregmax = acdirmin = acdirmax = 2).
#   warm       uid 1000 (gid 1000) calls ACCESS on d, LOOKUPs f and a
#              missing name, lists d (READDIRPLUS and READDIR): the second
#              round is answered from the cache
#   ACCESS     uid 1001 (gid 1001, not in group 1000): its first ACCESS of
#              d and of f is forwarded (cache.access.misses +1,
#              upstream.calls.ACCESS +1) and is the upstream's answer to
#              uid 1001, not uid 1000's; its second is its own cached
#              result; uid 1001 with group 1000 among its groups is another
#              credential (forwarded, the group's bits)
#   refused    uid 1001 at once gets NFS3ERR_ACCES on LOOKUP (also of the
#              missing name: no negative answer), READDIR and READDIRPLUS,
#              as directly from the upstream; none of these is a cache hit
#              (cache.lookup.hits, negative_hits, readdir.hits unchanged);
#              uid 1000's next round is still all hits (the entries were
#              fresh meanwhile)
#   widened    `chmod o+x d` in the export: after the TTL uid 1001's LOOKUP
#              of f finds f (READDIR still refused); `chmod o+r`: after the
#              TTL it lists d, as the upstream does; its ACCESS answers
#              follow the upstream's
#   narrowed   `chmod 0055 d` (the owner loses everything): after the TTL
#              uid 1000's LOOKUP, READDIR and READDIRPLUS get NFS3ERR_ACCES,
#              none from the cache; uid 1001 may list d
#   SETATTR    a mode changed through nfscached narrows at once: uid 1001
#              with group 1000 among its groups, its LOOKUP and listing of
#              d (0750) warm, gets NFS3ERR_ACCES at once after root's
#              SETATTR of d to 0700 through nfscached, and uid 1000's ACCESS
#              of f after a SETATTR of f to 0440 is the upstream's new answer
#   read without search  a 0704 directory: uid 1000's READDIRPLUS after
#              root's gives the names without handles, as upstream; root's
#              after uid 1000's gives root the handles
#   squash     (started again with server.squash = root, d 0750 again)
#              after uid 1000 warmed the cache, root's ACCESS of d is
#              forwarded and is uid 65534's answer (no bits); its LOOKUP
#              and READDIRPLUS in d get NFS3ERR_ACCES, as the upstream
#              answers 65534, and are not cache hits
TEST_TIMEOUT=${TEST_TIMEOUT:-90}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the namespace cache of nfscached"
needs_own_upstream
TTL=2
setup -o cache.metadata=yes -o cache.acregmin=$TTL -o cache.acregmax=$TTL \
    -o cache.acdirmin=$TTL -o cache.acdirmax=$TTL

D=$EXPORT_DIR/d
mkdir "$D"
echo "file f" > "$D/f"
echo "file g" > "$D/g"
chmod 0640 "$D/f" "$D/g"
chown -R 1000:1000 "$D"
chmod 0750 "$D"

timeout -k 5 80 python3 - "$top_srcdir/tests" "$PORT" "$UP_NFS_PORT" "$UP_MNT_PORT" \
    "$EXPORT_DIR" "$NFSCACHECTL" "$CTL" "$TTL" > "$T_TMP/perms.out" 2> "$T_TMP/perms.err" <<'PY'
import os, sys, time
sys.path.insert(0, sys.argv[1])
import rpc, nsrpc
port, up_nfs, up_mnt = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
export, ttl = sys.argv[5], int(sys.argv[8])
st = nsrpc.Stats(sys.argv[6], sys.argv[7])
chk = nsrpc.Checks()
delta = nsrpc.delta
R = nsrpc.Client(port)                                  # root, through nfscached
U = nsrpc.Client(port, uid=1000, gid=1000)              # the owner
V = nsrpc.Client(port, uid=1001, gid=1001)              # another user
DU = nsrpc.Client(up_nfs, up_mnt, uid=1000, gid=1000)   # the same, directly
DV = nsrpc.Client(up_nfs, up_mnt, uid=1001, gid=1001)
d_path = os.path.join(export, "d")

root = R.root()
r = R.lookup(root, "d")
chk.is_(r["nfs_status"], "NFS3_OK", "LOOKUP d as root")
d = r.get("fh", "")
f = DU.lookup(d, "f").get("fh", "")
chk.ok(len(f) > 0, "uid 1000 looks f up directly")
BITS = nsrpc.ACCESS3_ALL

def plus(c):
    return c.listing(d, plus=True, dircount=512, maxcount=4096)

def plain(c):
    return c.listing(d, plus=False, maxcount=4096)

def export_names():
    return " ".join(sorted(os.listdir(d_path) + [".", ".."]))

def names(l):
    return " ".join(sorted(l["names"])) if l["status"] == "NFS3_OK" else l["status"]

def owner_round(tag, want_hits):
    """uid 1000: ACCESS of d, LOOKUP f and nof, READDIRPLUS and READDIR
    passes; with want_hits, all from the cache."""
    s0 = st.snap()
    a = U.access(d, BITS)
    lf = U.lookup(d, "f")
    ln = U.lookup(d, "nof")
    p, q = plus(U), plain(U)
    s1 = st.snap()
    chk.is_("%s %s %s %s %s" % (a["nfs_status"], lf["nfs_status"], ln["nfs_status"], p["status"], q["status"]),
            "NFS3_OK NFS3_OK NFS3ERR_NOENT NFS3_OK NFS3_OK",
            "%s: uid 1000: ACCESS d, LOOKUP f, LOOKUP nof, READDIRPLUS, READDIR" % tag)
    chk.is_(lf.get("fh"), f, "%s: uid 1000: f's handle" % tag)
    chk.is_(names(p) + " | " + names(q), export_names() + " | " + export_names(),
            "%s: uid 1000: both listings give the export's names" % tag)
    if want_hits:
        chk.is_("%s %s %s" % (delta(s0, s1, "upstream.calls.LOOKUP"), delta(s0, s1, "upstream.calls.READDIRPLUS"),
                              delta(s0, s1, "upstream.calls.READDIR")),
                "0 0 0", "%s: uid 1000: no LOOKUP, READDIRPLUS or READDIR went upstream" % tag)
        chk.is_("%s %s %s" % (delta(s0, s1, "cache.lookup.hits"), delta(s0, s1, "cache.lookup.negative_hits"),
                              delta(s0, s1, "cache.readdir.hits")),
                "1 1 %d" % (p["pages"] + q["pages"]), "%s: uid 1000: lookup, negative and readdir hits" % tag)
    return a

# ---- warm: uid 1000 --------------------------------------------------------------
t0 = time.monotonic()
owner_round("warm 1", False)
a1000 = owner_round("warm 2", True)

# ---- ACCESS ---------------------------------------------------------------------------
for name, fh in (("d", d), ("f", f)):
    own = U.access(fh, BITS)
    s0 = st.snap()
    r1 = V.access(fh, BITS)
    s1 = st.snap()
    r2 = V.access(fh, BITS)
    s2 = st.snap()
    want = DV.access(fh, BITS)
    chk.is_("%s %s" % (r1["nfs_status"], r1.get("access")), "NFS3_OK " + str(want.get("access")),
            "ACCESS %s: uid 1001's answer is the upstream's to uid 1001 (%s)" % (name, want.get("access")))
    chk.ok(own.get("access") != want.get("access"),
           "ACCESS %s: uid 1000 (%s) and uid 1001 (%s) are granted different bits"
           % (name, own.get("access"), want.get("access")))
    chk.is_("%s %s" % (delta(s0, s1, "cache.access.misses"), delta(s0, s1, "upstream.calls.ACCESS")), "1 1",
            "ACCESS %s: uid 1001's first ACCESS is forwarded" % name)
    chk.is_("%s %s" % (r2["nfs_status"], r2.get("access")), "NFS3_OK " + str(want.get("access")),
            "ACCESS %s: uid 1001's second answer is the same" % name)
    chk.is_("%s %s" % (delta(s1, s2, "cache.access.hits"), delta(s1, s2, "upstream.calls.ACCESS")), "1 0",
            "ACCESS %s: ... its own result, from the cache" % name)
    # another credential of uid 1001, in group 1000: the group's bits
    G = nsrpc.Client(port, uid=1001, gid=1001, gids=(1000,))
    DG = nsrpc.Client(up_nfs, up_mnt, uid=1001, gid=1001, gids=(1000,))
    s0 = st.snap()
    g = G.access(fh, BITS)
    s1 = st.snap()
    gw = DG.access(fh, BITS)
    chk.is_("%s %s" % (g["nfs_status"], g.get("access")), "NFS3_OK " + str(gw.get("access")),
            "ACCESS %s: uid 1001 with group 1000 among its groups: the upstream's answer (%s)"
            % (name, gw.get("access")))
    chk.is_(delta(s0, s1, "upstream.calls.ACCESS"), 1, "ACCESS %s: ... forwarded (another credential)" % name)
    G.close()
    DG.close()

# ---- refused: uid 1001 at once ---------------------------------------------------------
s0 = st.snap()
v = {"LOOKUP f": V.lookup(d, "f")["nfs_status"], "LOOKUP nof": V.lookup(d, "nof")["nfs_status"],
     "READDIRPLUS": plus(V)["status"], "READDIR": plain(V)["status"]}
s1 = st.snap()
w = {"LOOKUP f": DV.lookup(d, "f")["nfs_status"], "LOOKUP nof": DV.lookup(d, "nof")["nfs_status"],
     "READDIRPLUS": plus(DV)["status"], "READDIR": plain(DV)["status"]}
for k in v:
    chk.is_(v[k], "NFS3ERR_ACCES", "refused: uid 1001's %s in d through nfscached: NFS3ERR_ACCES" % k)
    chk.is_(v[k], w[k], "refused: ... as the upstream answers uid 1001")
chk.is_("%s %s %s" % (delta(s0, s1, "cache.lookup.hits"), delta(s0, s1, "cache.lookup.negative_hits"),
                      delta(s0, s1, "cache.readdir.hits")), "0 0 0",
        "refused: no lookup, negative or readdir hit for uid 1001")
chk.diag("refused: upstream LOOKUP +%s, READDIRPLUS +%s, READDIR +%s, ACCESS +%s" % tuple(
    delta(s0, s1, "upstream.calls." + c) for c in ("LOOKUP", "READDIRPLUS", "READDIR", "ACCESS")))
owner_round("warm 3", True)
chk.diag("warm 1 to warm 3 took %.0f ms (TTL %d s)" % ((time.monotonic() - t0) * 1000, ttl))

# ---- widened: o+x, then o+r ---------------------------------------------------------------
os.chmod(d_path, 0o751)
time.sleep(ttl + 1)
r = V.lookup(d, "f")
chk.is_("%s %s" % (r["nfs_status"], r.get("fh")), "NFS3_OK " + f,
        "o+x: after the TTL uid 1001's LOOKUP of f finds f")
chk.is_(V.lookup(d, "nof")["nfs_status"], "NFS3ERR_NOENT", "o+x: ... and nof is NFS3ERR_NOENT")
chk.is_("%s %s" % (plus(V)["status"], plain(V)["status"]),
        "%s %s" % (plus(DV)["status"], plain(DV)["status"]),
        "o+x: uid 1001's READDIRPLUS and READDIR answered as directly (NFS3ERR_ACCES)")
chk.is_(V.access(d, BITS).get("access"), DV.access(d, BITS).get("access"),
        "o+x: uid 1001's ACCESS of d is the upstream's")
os.chmod(d_path, 0o755)
time.sleep(ttl + 1)
p, q = plus(V), plain(V)
chk.is_(names(p), export_names(), "o+r: after the TTL uid 1001's READDIRPLUS lists d")
chk.is_(names(q), export_names(), "o+r: ... and its READDIR")
chk.ok(p["fhs"] == plus(DV)["fhs"], "o+r: ... with the upstream's handles")
chk.is_(V.access(d, BITS).get("access"), DV.access(d, BITS).get("access"),
        "o+r: uid 1001's ACCESS of d is the upstream's")

# ---- narrowed: the owner loses its rights ------------------------------------------------
owner_round("narrow warm 1", False)
owner_round("narrow warm 2", True)
os.chmod(d_path, 0o055)
time.sleep(ttl + 1)
s0 = st.snap()
u = {"LOOKUP f": U.lookup(d, "f")["nfs_status"], "LOOKUP nof": U.lookup(d, "nof")["nfs_status"],
     "READDIRPLUS": plus(U)["status"], "READDIR": plain(U)["status"]}
s1 = st.snap()
for k in u:
    chk.is_(u[k], "NFS3ERR_ACCES", "0055: after the TTL uid 1000's %s in d: NFS3ERR_ACCES" % k)
chk.is_("%s %s %s" % (delta(s0, s1, "cache.lookup.hits"), delta(s0, s1, "cache.lookup.negative_hits"),
                      delta(s0, s1, "cache.readdir.hits")), "0 0 0",
        "0055: none of them from the cache")
chk.is_(DU.lookup(d, "f")["nfs_status"], "NFS3ERR_ACCES", "0055: as the upstream answers uid 1000")
chk.is_(U.access(d, BITS).get("access"), DU.access(d, BITS).get("access"),
        "0055: uid 1000's ACCESS of d is the upstream's")
chk.is_(names(plus(V)), export_names(), "0055: uid 1001 (others r-x) lists d")

# ---- SETATTR of the mode through nfscached -----------------------------------------------
G = nsrpc.Client(port, uid=1001, gid=1001, gids=(1000,))
DG = nsrpc.Client(up_nfs, up_mnt, uid=1001, gid=1001, gids=(1000,))
r = R.setattr(d, mode=0o750)
chk.is_(r["nfs_status"], "NFS3_OK", "SETATTR: root sets d to 0750 through nfscached")
for _ in (1, 2):
    G.access(d)
    s0 = st.snap()
    lg, pg = G.lookup(d, "f"), plus(G)
    s1 = st.snap()
chk.is_("%s %s" % (lg["nfs_status"], pg["status"]), "NFS3_OK NFS3_OK",
        "SETATTR: uid 1001 in group 1000 looks up f and lists d")
chk.is_("%s %s" % (delta(s0, s1, "cache.lookup.hits"), delta(s0, s1, "cache.readdir.hits")), "1 %d" % pg["pages"],
        "SETATTR: ... the second time from the cache")
r = R.setattr(d, mode=0o700)
chk.is_(r["nfs_status"], "NFS3_OK", "SETATTR: root sets d to 0700 through nfscached")
s0 = st.snap()
g = {"LOOKUP f": G.lookup(d, "f")["nfs_status"], "READDIRPLUS": plus(G)["status"], "READDIR": plain(G)["status"]}
s1 = st.snap()
for k in g:
    chk.is_(g[k], "NFS3ERR_ACCES", "SETATTR: at once uid 1001 in group 1000 gets NFS3ERR_ACCES on %s" % k)
chk.is_("%s %s %s" % (delta(s0, s1, "cache.lookup.hits"), delta(s0, s1, "cache.lookup.negative_hits"),
                      delta(s0, s1, "cache.readdir.hits")), "0 0 0", "SETATTR: ... none from the cache")
chk.is_(G.access(d).get("access"), DG.access(d).get("access"),
        "SETATTR: its ACCESS of d is the upstream's new answer (%s)" % DG.access(d).get("access"))
R.setattr(d, mode=0o750)
U.access(f)
before = U.access(f).get("access")
r = R.setattr(f, mode=0o440)
chk.is_(r["nfs_status"], "NFS3_OK", "SETATTR: root sets f to 0440 through nfscached")
after, want = U.access(f).get("access"), DU.access(f).get("access")
chk.ok(before != want, "SETATTR: uid 1000's ACCESS of f differs before (%s) and after (%s)" % (before, want))
chk.is_(after, want, "SETATTR: uid 1000's ACCESS of f at once is the upstream's new answer")
PY
rc=$?
checks "$T_TMP/perms.out"
ok $rc "the calls ran to their end" || diag "$(tail -n 8 "$T_TMP/perms.err")"

# ---- read without search: a directory others may read (o+r) but not search ----------
# the upstream lists its names to uid 1000 without handles or attributes; a
# listing root had cached (with them) must not give them to uid 1000, and a
# listing uid 1000 had cached (without) must not deprive root of them
for x in rx1 rx2; do
    mkdir "$EXPORT_DIR/$x"; echo s > "$EXPORT_DIR/$x/secret"; chmod 0704 "$EXPORT_DIR/$x"
done
RX1=$(fh_of rx1)
RX2=$(fh_of rx2)
rpc readdirplus "$RX1" > "$T_TMP/rx1_root.out"
rpc --uid 1000 --gid 1000 readdirplus "$RX1" > "$T_TMP/rx1_u.out"
up --uid 1000 --gid 1000 readdirplus "$RX1" > "$T_TMP/rx1_up.out"
rv1() { val "$T_TMP/$1.out" "$2"; }
num_ok "$(rv1 rx1_up without_fh)" -ge 1 "read without search: the upstream gives uid 1000 names without handles"
is "$(rv1 rx1_u nfs_status) $(rv1 rx1_u entries) $(rv1 rx1_u without_fh) $(rv1 rx1_u without_attrs)" \
    "$(rv1 rx1_up nfs_status) $(rv1 rx1_up entries) $(rv1 rx1_up without_fh) $(rv1 rx1_up without_attrs)" \
    "read without search: uid 1000's READDIRPLUS after root's gives what the upstream gives it (no root handles)"
rpc --uid 1000 --gid 1000 readdirplus "$RX2" > "$T_TMP/rx2_u.out"
rpc readdirplus "$RX2" > "$T_TMP/rx2_root.out"
up readdirplus "$RX2" > "$T_TMP/rx2_up.out"
is "$(rv1 rx2_root nfs_status) $(rv1 rx2_root entries) $(rv1 rx2_root without_fh)" \
    "$(rv1 rx2_up nfs_status) $(rv1 rx2_up entries) $(rv1 rx2_up without_fh)" \
    "read without search: root's READDIRPLUS after uid 1000's gives root the handles"

# ---- squash: the credential is squashed before the cache is asked ---------------------
stop_nfscached
ok $? "nfscached exits cleanly (before the restart with server.squash = root)"
chmod 0750 "$D"
if start_nfscached -o server.squash=root -o cache.metadata=yes -o cache.acregmin=$TTL \
    -o cache.acregmax=$TTL -o cache.acdirmin=$TTL -o cache.acdirmax=$TTL 2>"$T_TMP/start.err"; then
    timeout -k 5 30 python3 - "$top_srcdir/tests" "$PORT" "$UP_NFS_PORT" "$UP_MNT_PORT" \
        "$NFSCACHECTL" "$CTL" > "$T_TMP/squash.out" 2> "$T_TMP/squash.err" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import rpc, nsrpc
port, up_nfs, up_mnt = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
st = nsrpc.Stats(sys.argv[5], sys.argv[6])
chk = nsrpc.Checks()
delta = nsrpc.delta
U = nsrpc.Client(port, uid=1000, gid=1000)
R = nsrpc.Client(port)                                    # root: squashed to 65534
DN = nsrpc.Client(up_nfs, up_mnt, uid=65534, gid=65534)   # what 65534 gets directly
root = U.root()
d = U.lookup(root, "d").get("fh", "")
for _ in (1, 2):
    U.access(d)
    U.lookup(d, "f")
    U.listing(d)
s0 = st.snap()
a = R.access(d)
s1 = st.snap()
r = {"LOOKUP f": R.lookup(d, "f")["nfs_status"], "READDIRPLUS": R.listing(d)["status"]}
s2 = st.snap()
w = {"LOOKUP f": DN.lookup(d, "f")["nfs_status"], "READDIRPLUS": DN.listing(d)["status"]}
wa = DN.access(d)
chk.is_("%s %s" % (a["nfs_status"], a.get("access")), "NFS3_OK %s" % wa.get("access"),
        "squash: root's ACCESS of d: uid 65534's answer (%s)" % wa.get("access"))
chk.is_("%s %s" % (delta(s0, s1, "cache.access.hits"), delta(s0, s1, "upstream.calls.ACCESS")), "0 1",
        "squash: ... forwarded, not uid 1000's result")
for k in r:
    chk.is_(r[k], "NFS3ERR_ACCES", "squash: root's %s in d through nfscached: NFS3ERR_ACCES" % k)
    chk.is_(r[k], w[k], "squash: ... as the upstream answers uid 65534")
chk.is_(" ".join(str(delta(s1, s2, c)) for c in ("cache.lookup.hits", "cache.lookup.negative_hits",
                                                 "cache.readdir.hits")),
        "0 0 0", "squash: neither root's LOOKUP nor its READDIRPLUS a cache hit")
PY
    rc=$?
    checks "$T_TMP/squash.out"
    ok $rc "squash: the calls ran to their end" || diag "$(tail -n 8 "$T_TMP/squash.err")"
else
    ok 1 "nfscached starts with server.squash = root"
    diag "$(cat "$T_TMP/start.err")"
fi
done_testing
