#!/bin/bash
# 61-meta-negative: names through the namespace cache (cache.metadata = yes,
# acdirmin = acdirmax = acregmin = acregmax = 3 s).
#   negative    LOOKUP of a missing name twice: one upstream LOOKUP, the
#               second answered NFS3ERR_NOENT from the cache
#               (cache.lookup.negative_hits +1)
#   ours        CREATE of that name through nfscached: the next LOOKUP finds
#               it at once, with the handle CREATE gave, without asking the
#               upstream; the same after MKDIR, SYMLINK (READLINK), MKNOD,
#               LINK and RENAME; REMOVE and RMDIR answer NFS3ERR_NOENT at
#               once, the old name of a RENAME NFS3ERR_NOENT from upstream
#   elsewhere   a file created directly in the export (a second client) is
#               not seen while the directory's TTL holds (NFS3ERR_NOENT from
#               the cache right after the creation), and is seen within
#               acdirmax + 1 s of it with its upstream handle; a file
#               removed directly is gone within acdirmax + 1 s likewise
#   race        a LOOKUP of a name racing a CREATE or REMOVE of it through
#               nfscached (the upstream frozen while both are sent): the
#               next LOOKUP answers as the directory now is
#   links       a file with two links: the name the cache does not know
#               removed through nfscached, the other's GETATTR gives nlink 1
#               at once; a RENAME onto another link of the same file leaves
#               both names; the last link of a file removed through
#               nfscached (its name known or not): GETATTR and READ of its
#               handle answer NFS3ERR_STALE at once, as upstream
#   credential  uid 1000 asking LOOKUP (found or not), READDIRPLUS, READDIR
#               and ACCESS of a 0700 directory of root's just after root
#               did (and the answers were cached) gets the upstream's
#               answers to uid 1000, not root's
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the namespace cache of nfscached"
needs_own_upstream

TTL=3
mkdir "$EXPORT_DIR/neg"
setup -o cache.metadata=yes -o cache.acdirmin=$TTL -o cache.acdirmax=$TTL \
    -o cache.acregmin=$TTL -o cache.acregmax=$TTL
DIR=$(fh_of neg)
[ -n "$DIR" ]
ok $? "the directory's handle through nfscached" || done_testing
nv() { val "$T_TMP/$1.out" "$2"; }

# ---- negative -----------------------------------------------------------------------
snap n0
rpc lookup "$DIR" missing > "$T_TMP/l1.out"
snap n1
rpc lookup "$DIR" missing > "$T_TMP/l2.out"
snap n2
is "$(nv l1 nfs_status) $(nv l2 nfs_status)" "NFS3ERR_NOENT NFS3ERR_NOENT" \
    "negative: LOOKUP of a missing name twice: NFS3ERR_NOENT twice"
is "$(d n0 n2 upstream.calls.LOOKUP)" 1 "negative: exactly one upstream LOOKUP"
is "$(d n0 n1 cache.lookup.misses)" 1 "negative: the first LOOKUP a miss"
is "$(d n1 n2 cache.lookup.negative_hits)" 1 "negative: the second one a negative hit (cache.lookup.negative_hits +1)"
is "$(d n1 n2 cache.lookup.hits) $(d n1 n2 cache.lookup.misses)" "0 0" \
    "negative: ... and neither a positive hit nor a miss"

# ---- changes made through nfscached --------------------------------------------------
# step TAG CALL...: a call through nfscached, its output in TAG.out, with
# snapshots TAG.a before and TAG.b after
step() { local t=$1; shift; snap "$t.a"; rpc "$@" > "$T_TMP/$t.out" 2>&1; snap "$t.b"; }
# looked TAG NAME WANT_STATUS [WANT_FH]: a LOOKUP of NAME through nfscached
# answers WANT_STATUS (and WANT_FH) from the cache: no upstream LOOKUP
looked() {
    step "$1" lookup "$DIR" "$2"
    is "$(nv "$1" nfs_status) $(nv "$1" fh)" "$3 ${4:-}" "$1: LOOKUP $2 at once: $3${4:+ with the handle $5 gave}"
    is "$(d "$1.a" "$1.b" upstream.calls.LOOKUP)" 0 "$1: ... from the cache (no upstream LOOKUP)"
}

step create create "$DIR" missing
is "$(nv create nfs_status)" NFS3_OK "ours: CREATE of the missing name through nfscached"
C=$(nv create fh)
looked lookup-created missing NFS3_OK "$C" CREATE
is "$(d lookup-created.a lookup-created.b cache.lookup.hits)" 1 "lookup-created: a hit (cache.lookup.hits +1)"
up lookup "$DIR" missing > "$T_TMP/up.out"
is "$(val "$T_TMP/up.out" fh)" "$C" "ours: the upstream has that handle for the name"
step getattr-created getattr "$C"
is "$(nv getattr-created nfs_status) $(nv getattr-created size) $(nv getattr-created mode)" "NFS3_OK 0 644" \
    "ours: GETATTR of the created file: empty, mode 644"
is "$(d getattr-created.a getattr-created.b upstream.calls.GETATTR)" 0 \
    "ours: ... from CREATE's attributes (no upstream GETATTR)"

step remove remove "$DIR" missing
is "$(nv remove nfs_status)" NFS3_OK "ours: REMOVE of it through nfscached"
looked lookup-removed missing NFS3ERR_NOENT

step mkdir mkdir "$DIR" sub
is "$(nv mkdir nfs_status)" NFS3_OK "ours: MKDIR through nfscached"
looked lookup-mkdir sub NFS3_OK "$(nv mkdir fh)" MKDIR
step rmdir rmdir "$DIR" sub
is "$(nv rmdir nfs_status)" NFS3_OK "ours: RMDIR through nfscached"
looked lookup-rmdir sub NFS3ERR_NOENT

step symlink symlink "$DIR" sym "some/where/else"
is "$(nv symlink nfs_status)" NFS3_OK "ours: SYMLINK through nfscached"
looked lookup-symlink sym NFS3_OK "$(nv symlink fh)" SYMLINK
rpc readlink "$(nv symlink fh)" > "$T_TMP/rl1.out"
step readlink readlink "$(nv symlink fh)"
is "$(nv rl1 nfs_status) $(nv rl1 target) $(nv readlink target)" "NFS3_OK some/where/else some/where/else" \
    "ours: READLINK of it twice: the target"
is "$(d readlink.a readlink.b upstream.calls.READLINK) $(d readlink.a readlink.b cache.readlink.hits)" "0 1" \
    "ours: the second READLINK from the cache (cache.readlink.hits +1)"

step mknod mknod "$DIR" fifo fifo
is "$(nv mknod nfs_status) $(nv mknod obj.type)" "NFS3_OK NF3FIFO" "ours: MKNOD of a fifo through nfscached"
looked lookup-mknod fifo NFS3_OK "$(nv mknod fh)" MKNOD

step create2 create "$DIR" orig
O=$(nv create2 fh)
step link link "$O" "$DIR" hard
is "$(nv create2 nfs_status) $(nv link nfs_status) $(nv link obj.nlink)" "NFS3_OK NFS3_OK 2" \
    "ours: CREATE, then LINK through nfscached (nlink 2)"
looked lookup-link hard NFS3_OK "$O" CREATE
step getattr-linked getattr "$O"
is "$(nv getattr-linked nfs_status) $(nv getattr-linked nlink)" "NFS3_OK 2" \
    "ours: GETATTR after LINK: nlink 2, not the 1 CREATE gave"

step rename rename "$DIR" orig "$DIR" moved
is "$(nv rename nfs_status)" NFS3_OK "ours: RENAME orig -> moved through nfscached"
# (RENAME's reply has no attributes of the file moved, whose ctime changed:
# the LOOKUP of its new name may ask the upstream)
step lookup-renamed lookup "$DIR" moved
is "$(nv lookup-renamed nfs_status) $(nv lookup-renamed fh)" "NFS3_OK $O" \
    "lookup-renamed: LOOKUP moved at once: NFS3_OK with the handle CREATE gave (upstream LOOKUPs: $(d lookup-renamed.a lookup-renamed.b upstream.calls.LOOKUP))"
# the old name is forgotten, not recorded absent (a RENAME onto another link
# of the same file leaves it): one LOOKUP upstream
step lookup-renamed-old lookup "$DIR" orig
is "$(nv lookup-renamed-old nfs_status) $(d lookup-renamed-old.a lookup-renamed-old.b upstream.calls.LOOKUP)" \
    "NFS3ERR_NOENT 1" "lookup-renamed-old: LOOKUP orig after the RENAME: NFS3ERR_NOENT from the upstream"

# ---- a LOOKUP racing a change through nfscached ------------------------------------
# The upstream frozen (SIGSTOP), a LOOKUP of a name not cached is sent,
# then (0 to 5 ms later, on another connection) a CREATE of that name, or
# a REMOVE of it; the upstream resumes.  Whatever the racing LOOKUP
# answers, the LOOKUP after both replies (a third connection) answers as the
# directory now is: found after the CREATE (with its handle), NFS3ERR_NOENT
# after the REMOVE.  (A reply to a call sent before a change of ours
# completed must not undo it.)
mkdir "$EXPORT_DIR/race"
RACE=$(fh_of race)
for i in $(seq 0 19); do echo "$i" > "$EXPORT_DIR/race/old$i"; done
timeout -k 5 90 python3 - "$top_srcdir/tests" "$PORT" "$RACE" "$GANESHA_PID" > "$T_TMP/race.out" 2>&1 <<'PY'
import os, signal, sys, time
sys.path.insert(0, sys.argv[1])
import rpc
port, d, gpid = int(sys.argv[2]), bytes.fromhex(sys.argv[3]), int(sys.argv[4])
conn = lambda: rpc.Conn("127.0.0.1", port, timeout=20)
delays = [0, 0.0005, 0.002, 0.005]
racing = {}
for kind in ("create", "remove"):
    wrong = 0
    for i in range(20):
        name = ("new%d" if kind == "create" else "old%d") % i
        a, b, c = conn(), conn(), conn()
        c.nfs(rpc.NFSPROC3_ACCESS, rpc.access_args(d, 0x1f))     # the grant known
        change = (rpc.NFSPROC3_CREATE, rpc.create_args(d, name)) if kind == "create" else \
                 (rpc.NFSPROC3_REMOVE, rpc.remove_args(d, name))
        lx, lrec = a.build(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_LOOKUP, rpc.lookup_args(d, name))
        cx, crec = b.build(rpc.NFS_PROGRAM, rpc.NFS_V3, *change)
        os.kill(gpid, signal.SIGSTOP)
        try:
            a.send_raw(lrec)
            time.sleep(delays[i % 4])
            b.send_raw(crec)
            time.sleep(0.05)
        finally:
            os.kill(gpid, signal.SIGCONT)
        cr, lr = b.recv_reply(cx), a.recv_reply(lx)
        st = rpc.nfs_status(lr.body)
        racing[kind + " " + st] = racing.get(kind + " " + st, 0) + 1
        made = rpc.decode_create(cr.body) if kind == "create" else rpc.decode_status(cr.body)
        rep, st = c.nfs(rpc.NFSPROC3_LOOKUP, rpc.lookup_args(d, name))
        got = rpc.decode_lookup(rep.body)
        if kind == "create":
            good = made["nfs_status"] == "NFS3_OK" and got.get("fh") == made.get("fh")
        else:
            good = made["nfs_status"] == "NFS3_OK" and st == "NFS3ERR_NOENT"
        if not good:
            wrong += 1
            print("%s.wrong.%s: %s %s, then LOOKUP %s" % (kind, name, kind.upper(), made["nfs_status"], st))
        for x in (a, b, c):
            x.close()
    print("%s.wrong: %d" % (kind, wrong))
print("racing_lookups: %s" % ", ".join("%s: %d" % kv for kv in sorted(racing.items())))
PY
rcv() { val "$T_TMP/race.out" "$1"; }
is "$(rcv create.wrong)" 0 "race: after a CREATE racing a LOOKUP of its name, the name is found with its handle (20 times)" ||
    diag "$(grep wrong "$T_TMP/race.out" | head -n 3)" "$(tail -n 3 "$T_TMP/race.out")"
is "$(rcv remove.wrong)" 0 "race: after a REMOVE racing a LOOKUP of its name, NFS3ERR_NOENT (20 times)" ||
    diag "$(grep wrong "$T_TMP/race.out" | head -n 3)"
diag "racing LOOKUPs answered: $(rcv racing_lookups)"

# ---- another credential ---------------------------------------------------------------
# priv (0700, root's) holds secret: uid 0 lists it and looks up secret and
# a missing name through nfscached (all cached), then at once uid 1000 asks
# the same through nfscached and directly: the same answers (no name, no
# listing, no NFS3ERR_NOENT leaks from uid 0's), and uid 0's again
mkdir -m 0700 "$EXPORT_DIR/priv"
echo secret > "$EXPORT_DIR/priv/secret"
PRIV=$(fh_of priv)
timeout -k 5 60 python3 - "$top_srcdir/tests" "$PORT" "$UP_NFS_PORT" "$PRIV" > "$T_TMP/cred.out" 2>&1 <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import rpc
port, up, priv = int(sys.argv[2]), int(sys.argv[3]), bytes.fromhex(sys.argv[4])
calls = [("lookup", rpc.NFSPROC3_LOOKUP, rpc.lookup_args(priv, "secret")),
         ("negative", rpc.NFSPROC3_LOOKUP, rpc.lookup_args(priv, "nothere")),
         ("readdirplus", rpc.NFSPROC3_READDIRPLUS, rpc.readdirplus_args(priv)),
         ("readdir", rpc.NFSPROC3_READDIR, rpc.readdir_args(priv)),
         ("access", rpc.NFSPROC3_ACCESS, rpc.access_args(priv, 0x1f))]

def answers(port, uid):
    c = rpc.Conn("127.0.0.1", port, timeout=20, uid=uid, gid=uid)
    out = []
    for name, proc, a in calls:
        rep, st = c.nfs(proc, a)
        v = st
        if proc == rpc.NFSPROC3_ACCESS and st == "NFS3_OK":
            v += " " + rpc.decode_result(rpc._res_access, rep.body)["access"]
        if proc == rpc.NFSPROC3_LOOKUP and st == "NFS3_OK":
            v += " " + rpc.decode_lookup(rep.body)["fh"]
        out.append((name, v))
    c.close()
    return out

for tag, p, uid in (("root1", port, 0), ("root2", port, 0), ("user", port, 1000),
                    ("user_direct", up, 1000), ("root_direct", up, 0), ("root3", port, 0)):
    for name, v in answers(p, uid):
        print("%s.%s: %s" % (tag, name, v))
PY
cv() { val "$T_TMP/cred.out" "$1"; }
for k in lookup negative readdirplus readdir access; do
    is "$(cv "root2.$k")" "$(cv "root_direct.$k")" "credential: uid 0's $k of priv: the upstream's answer ($(cv "root2.$k"))" ||
        diag "$(tail -n 5 "$T_TMP/cred.out")"
    is "$(cv "user.$k")" "$(cv "user_direct.$k")" \
        "credential: uid 1000's $k in priv right after uid 0's: the upstream's answer to uid 1000 ($(cv "user_direct.$k"))"
    is "$(cv "root3.$k")" "$(cv "root_direct.$k")" "credential: and uid 0's again"
done

# ---- changes made elsewhere ---------------------------------------------------------
# seen PORT DIRFH NAME PATH ACTION: LOOKUP NAME (its answer confirms the
# directory's attributes: its TTL starts), LOOKUP NAME again (from the
# cache: nfscached learns the caller's grant on the directory now, while
# the directory is unchanged, if it did not know it), then ACTION (create or remove)
# PATH directly, LOOKUP at once, then every 0.1 s until the answer is not
# the first one's (10 s at most): the times are from the ACTION; polls
# counts the LOOKUPs after the one at once.
seen() {
    timeout -k 5 60 python3 - "$top_srcdir/tests" "$@" <<'PY'
import os, sys, time
sys.path.insert(0, sys.argv[1])
import rpc
port, dirfh, name, path, action = int(sys.argv[2]), bytes.fromhex(sys.argv[3]), *sys.argv[4:7]
c = rpc.Conn("127.0.0.1", port, timeout=20)

def lookup():
    rep, st = c.nfs(rpc.NFSPROC3_LOOKUP, rpc.lookup_args(dirfh, name))
    return rpc.decode_lookup(rep.body) if rep.ok() else {"nfs_status": rep.summary()}

before = lookup()
t_before = time.monotonic()
again = lookup()
if action == "create":
    with open(path, "wb") as f:
        f.write(b"made elsewhere\n")
else:
    os.unlink(path)
t0 = time.monotonic()
at_once = lookup()
t_at_once = time.monotonic() - t0
polls, last = 0, at_once
while last["nfs_status"] == before["nfs_status"] and time.monotonic() - t0 < 10:
    time.sleep(0.1)
    last = lookup()
    polls += 1
print("before: %s" % before["nfs_status"])
print("before_fh: %s" % before.get("fh", "-"))
print("again: %s" % again["nfs_status"])
print("again_fh: %s" % again.get("fh", "-"))
print("action_after_ms: %d" % ((t0 - t_before) * 1000))
print("at_once: %s" % at_once["nfs_status"])
print("at_once_fh: %s" % at_once.get("fh", "-"))
print("at_once_ms: %d" % (t_at_once * 1000))
print("changed: %s" % last["nfs_status"])
print("changed_fh: %s" % last.get("fh", "-"))
print("changed_ms: %d" % ((time.monotonic() - t0) * 1000))
print("polls: %d" % polls)
PY
}

snap e0
seen "$PORT" "$DIR" late "$EXPORT_DIR/neg/late" create > "$T_TMP/late.out" 2>&1
snap e1
lv() { val "$T_TMP/late.out" "$1"; }
is "$(lv before) $(lv again)" "NFS3ERR_NOENT NFS3ERR_NOENT" \
    "elsewhere: LOOKUP of a name not there yet, twice: NFS3ERR_NOENT" || diag "$(cat "$T_TMP/late.out")"
is "$(lv at_once)" NFS3ERR_NOENT \
    "elsewhere: right after its creation in the export ($(lv at_once_ms) ms), still NFS3ERR_NOENT while the TTL holds"
is "$(lv changed)" NFS3_OK "elsewhere: then found (after $(lv changed_ms) ms, $(lv polls) polls)"
num_ok "$(lv changed_ms)" -le $(((TTL + 1) * 1000)) \
    "elsewhere: found within acdirmax + 1 s of the creation ($(lv changed_ms) ms)"
num_ok "$(lv changed_ms)" -ge $(((TTL - 1) * 1000 - $(lv action_after_ms))) \
    "elsewhere: not before the TTL could have run out ($(lv changed_ms) ms)"
up lookup "$DIR" late > "$T_TMP/up.out"
is "$(lv changed_fh)" "$(val "$T_TMP/up.out" fh)" "elsewhere: with the upstream's handle"
is "$(d e0 e1 cache.lookup.negative_hits)" "$(($(lv polls) + 1))" \
    "elsewhere: the second LOOKUP before and each NFS3ERR_NOENT after the creation a negative hit ($(($(lv polls) + 1)))"
is "$(d e0 e1 upstream.calls.LOOKUP)" 2 "elsewhere: two upstream LOOKUPs: before the creation, and once the TTL ran out"

sleep $((TTL + 1))      # the name's attributes and the directory's both past their TTL
snap g0
seen "$PORT" "$DIR" late "$EXPORT_DIR/neg/late" remove > "$T_TMP/gone.out" 2>&1
snap g1
gv() { val "$T_TMP/gone.out" "$1"; }
is "$(gv before) $(gv before_fh) $(gv again) $(gv again_fh)" "NFS3_OK $(lv changed_fh) NFS3_OK $(lv changed_fh)" \
    "elsewhere: LOOKUP of the file, twice: found" || diag "$(cat "$T_TMP/gone.out")"
is "$(gv at_once) $(gv at_once_fh)" "NFS3_OK $(lv changed_fh)" \
    "elsewhere: right after its removal in the export ($(gv at_once_ms) ms), still found while the TTL holds"
is "$(gv changed)" NFS3ERR_NOENT "elsewhere: then NFS3ERR_NOENT (after $(gv changed_ms) ms)"
num_ok "$(gv changed_ms)" -le $(((TTL + 1) * 1000)) \
    "elsewhere: gone within acdirmax + 1 s of the removal ($(gv changed_ms) ms)"
num_ok "$(d g0 g1 cache.lookup.hits)" -ge 1 "elsewhere: the LOOKUPs while the TTL held were hits"

# ---- links: a name the cache does not know removed through nfscached ----------------
# in a directory of its own, where nothing else was looked up (two LOOKUPs
# would have the listing read, and hy known)
mkdir "$EXPORT_DIR/links"
echo linked > "$EXPORT_DIR/links/hx"
ln "$EXPORT_DIR/links/hx" "$EXPORT_DIR/links/hy"
LDIR=$(fh_of links)
rpc lookup "$LDIR" hx > "$T_TMP/hx.out"
HX=$(nv hx fh)
rpc getattr "$HX" > "$T_TMP/hx1.out"
is "$(nv hx1 nfs_status) $(nv hx1 nlink)" "NFS3_OK 2" "links: a file with two links: nlink 2"
snap k0
rpc remove "$LDIR" hy > "$T_TMP/hy.out"
rpc getattr "$HX" > "$T_TMP/hx2.out"
snap k1
up getattr "$HX" > "$T_TMP/hxu.out"
is "$(nv hy nfs_status) $(nv hx2 nlink) $(nv hx2 ctime)" "NFS3_OK 1 $(nv hxu ctime)" \
    "links: REMOVE through nfscached of the other name, never looked up: GETATTR at once gives nlink 1 and the new ctime"
is "$(d k0 k1 upstream.calls.GETATTR)" 1 \
    "links: that GETATTR went upstream (a file known to have two links is no longer trusted)"

# a RENAME onto another link of the same file changes nothing (POSIX)
rpc rename "$LDIR" hx "$LDIR" hx > /dev/null   # a no-op too
ln "$EXPORT_DIR/links/hx" "$EXPORT_DIR/links/hz"
rpc lookup "$LDIR" hz > "$T_TMP/hz.out"
rpc rename "$LDIR" hx "$LDIR" hz > "$T_TMP/rn.out"
rpc lookup "$LDIR" hx > "$T_TMP/hx3.out"
up lookup "$LDIR" hx > "$T_TMP/hxu3.out"
is "$(nv rn nfs_status) $(nv hx3 nfs_status) $(nv hx3 fh)" \
    "NFS3_OK $(nv hxu3 nfs_status) $(nv hxu3 fh)" \
    "links: RENAME of hx onto hz, a link of the same file: hx is still there, as upstream"

# the last link of a file removed through nfscached: its handle is stale at once
echo gone > "$EXPORT_DIR/links/solo"
rpc lookup "$LDIR" solo > "$T_TMP/solo.out"
SOLO=$(nv solo fh)
rpc read "$SOLO" 0 100 > "$T_TMP/solo_r1.out"
rpc getattr "$SOLO" > "$T_TMP/solo_g1.out"
is "$(nv solo_r1 nfs_status) $(nv solo_g1 nfs_status)" "NFS3_OK NFS3_OK" "gone: a file read and its attributes cached"
rpc remove "$LDIR" solo > "$T_TMP/solo_rm.out"
rpc getattr "$SOLO" > "$T_TMP/solo_g2.out"
rpc read "$SOLO" 0 100 > "$T_TMP/solo_r2.out"
up getattr "$SOLO" > "$T_TMP/solo_gu.out"
is "$(nv solo_rm nfs_status) $(nv solo_g2 nfs_status) $(nv solo_r2 nfs_status)" \
    "NFS3_OK $(nv solo_gu nfs_status) $(nv solo_gu nfs_status)" \
    "gone: REMOVE of its last link through nfscached: GETATTR and READ of its handle answer as upstream ($(nv solo_gu nfs_status)) at once"

# a name never looked up removed through nfscached: the same
echo gone > "$EXPORT_DIR/links/solo2"
up lookup "$LDIR" solo2 > "$T_TMP/solo2.out"
SOLO2=$(nv solo2 fh)
rpc getattr "$SOLO2" > "$T_TMP/solo2_g1.out"
rpc remove "$LDIR" solo2 > "$T_TMP/solo2_rm.out"
rpc getattr "$SOLO2" > "$T_TMP/solo2_g2.out"
is "$(nv solo2_g1 nfs_status) $(nv solo2_rm nfs_status) $(nv solo2_g2 nfs_status)" \
    "NFS3_OK NFS3_OK $(nv solo_gu nfs_status)" \
    "gone: the same for a name nfscached never looked up (its handle known only by GETATTR)"
done_testing
