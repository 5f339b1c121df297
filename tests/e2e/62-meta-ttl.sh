#!/bin/bash
# 62-meta-ttl: attributes through the namespace cache keep their TTL, no
# longer; all ac* = 0 caches nothing; cache.metadata = no turns it off.
#   ttl       acregmin = acregmax = 2 (acdir* 2): a file's mode and size
#             changed directly in the export: GETATTR through nfscached
#             still shows the old ones right after the change (from the
#             cache), and the new ones within the TTL + 1 s of the GETATTR
#             that confirmed the old ones; a SETATTR through nfscached is
#             seen at once; cached attributes are the upstream's to the
#             nanosecond
#   fs        FSINFO, PATHCONF, FSSTAT, MNT (the root's attributes fresh)
#             and EXPORT twice: at most one upstream call each, the
#             upstream's answers; NULL answered by nfscached; FSSTAT asked
#             again after acregmin
#   clamp     restarted with acregmin = 1, acregmax = 4: a change made
#             directly is seen after about 1 s for a file just written, 2 s
#             for one written 20 s before, 4 s for one written an hour
#             before (clamp((now - mtime) / 10, acregmin, acregmax))
#   zero      restarted with acregmin = acregmax = acdirmin = acdirmax = 0:
#             every GETATTR, LOOKUP (found or not), ACCESS, READDIRPLUS,
#             READDIR and NULL is forwarded: each upstream.calls.* counter grows by
#             exactly the calls of its kind made, no cache.*.hits
#   off       restarted with cache.metadata = no (ac* = 60): every call
#             (NULL too) forwarded, no hits, no entries
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the namespace cache of nfscached"
needs_own_upstream

TTL=2
mkdir "$EXPORT_DIR/d"
head -c 1000 /dev/urandom > "$EXPORT_DIR/d/f"
chmod 0644 "$EXPORT_DIR/d/f"
for i in 1 2 3; do echo "$i" > "$EXPORT_DIR/d/other$i"; done
setup -o cache.metadata=yes -o cache.acregmin=$TTL -o cache.acregmax=$TTL \
    -o cache.acdirmin=$TTL -o cache.acdirmax=$TTL
rpc mnt > "$T_TMP/root-mnt.out"
ROOT=$(val "$T_TMP/root-mnt.out" fh)
DIR=$(fh_of d)
rpc lookup "$DIR" f > "$T_TMP/r.out"
FH=$(rv fh)
[ -n "$DIR" ] && [ -n "$FH" ]
ok $? "the handles of d and d/f through nfscached" || done_testing

# ---- ttl ----------------------------------------------------------------------------
# after the TTL, GETATTR (confirms the attributes: the TTL starts), chmod 600 and a size
# of 3000 directly, GETATTR at once, then every 0.1 s until the mode or the
# size differs (8 s at most); times from the first GETATTR
timeout -k 5 60 python3 - "$top_srcdir/tests" "$PORT" "$FH" "$EXPORT_DIR/d/f" "$TTL" > "$T_TMP/ttl.out" 2>&1 <<'PY'
import os, sys, time
sys.path.insert(0, sys.argv[1])
import rpc
port, fh, path = int(sys.argv[2]), bytes.fromhex(sys.argv[3]), sys.argv[4]
c = rpc.Conn("127.0.0.1", port, timeout=20)

def getattr_():
    rep, st = c.nfs(rpc.NFSPROC3_GETATTR, rpc.getattr_args(fh))
    d = rpc.decode_getattr(rep.body) if rep.ok() else {"nfs_status": rep.summary()}
    return "%s %s %s" % (d["nfs_status"], d.get("mode"), d.get("size"))

time.sleep(float(sys.argv[5]) + 0.3)     # what the LOOKUP brought is past its TTL
first = getattr_()
t0 = time.monotonic()
os.chmod(path, 0o600)
os.truncate(path, 3000)
t_change = time.monotonic() - t0
at_once = getattr_()
t_at_once = time.monotonic() - t0
last, polls = at_once, 0
while last == first and time.monotonic() - t0 < 8:
    time.sleep(0.1)
    last = getattr_()
    polls += 1
print("first: %s" % first)
print("change_ms: %d" % (t_change * 1000))
print("at_once: %s" % at_once)
print("at_once_ms: %d" % (t_at_once * 1000))
print("changed: %s" % last)
print("changed_ms: %d" % ((time.monotonic() - t0) * 1000))
print("polls: %d" % polls)
PY
tv() { val "$T_TMP/ttl.out" "$1"; }
is "$(tv first)" "NFS3_OK 644 1000" "ttl: GETATTR through nfscached: mode 644, 1000 bytes" ||
    diag "$(cat "$T_TMP/ttl.out")"
is "$(tv at_once)" "NFS3_OK 644 1000" \
    "ttl: right after the change made directly ($(tv at_once_ms) ms), the old mode and size (within the TTL)"
is "$(tv changed)" "NFS3_OK 600 3000" "ttl: then the new mode and size (after $(tv changed_ms) ms)"
num_ok "$(tv changed_ms)" -le $(((TTL + 1) * 1000)) "ttl: within TTL + 1 s ($(tv changed_ms) ms)"
num_ok "$(tv changed_ms)" -ge $(((TTL - 1) * 1000)) "ttl: not long before the TTL ran out ($(tv changed_ms) ms)"

snap s0
rpc setattr "$FH" --mode 640 > "$T_TMP/r.out"
is "$(rv nfs_status) $(rv obj.mode)" "NFS3_OK 640" "ttl: SETATTR of mode 640 through nfscached"
rpc getattr "$FH" > "$T_TMP/g.out"
snap s1
is "$(val "$T_TMP/g.out" mode) $(val "$T_TMP/g.out" size)" "640 3000" "ttl: GETATTR at once: mode 640"
is "$(d s0 s1 upstream.calls.GETATTR) $(d s0 s1 cache.attr.hits)" "0 1" \
    "ttl: ... from SETATTR's attributes (no upstream GETATTR, cache.attr.hits +1)"
up getattr "$FH" > "$T_TMP/u.out"
for k in mode size nlink uid gid fileid mtime ctime; do
    printf '%s=%s ' "$k" "$(val "$T_TMP/g.out" "$k")"
done > "$T_TMP/g.attrs"
for k in mode size nlink uid gid fileid mtime ctime; do
    printf '%s=%s ' "$k" "$(val "$T_TMP/u.out" "$k")"
done > "$T_TMP/u.attrs"
is "$(cat "$T_TMP/g.attrs")" "$(cat "$T_TMP/u.attrs")" \
    "ttl: the cached attributes are the upstream's, times to the nanosecond"

# ---- per file system, MOUNT, NULL ---------------------------------------------------
# FSINFO and PATHCONF (valid acdirmax), FSSTAT (valid acregmin), MNT and
# EXPORT twice each, NULL: at most one upstream call of each kind, the
# same answers as the upstream's; NULL never goes upstream
sleep $((TTL + 1))
fsv() { val "$T_TMP/$1.out" "$2"; }
snap f0
for k in fsinfo pathconf fsstat; do
    rpc "$k" "$DIR" > "$T_TMP/$k.1.out"
    rpc "$k" "$DIR" > "$T_TMP/$k.2.out"
done
# MNT is answered while the root's attributes are fresh: a GETATTR first
rpc getattr "$ROOT" > "$T_TMP/root.out"
rpc mnt > "$T_TMP/mnt.1.out"
rpc mnt > "$T_TMP/mnt.2.out"
rpc exports > "$T_TMP/exports.1.out"
rpc exports > "$T_TMP/exports.2.out"
rpc null > "$T_TMP/null.out"
snap f1
# fields KIND TAG: the fields of an FSINFO or PATHCONF answer a proxy does
# not change (not the object's attributes, which come when they are fresh)
fields() {
    local k
    case $1 in
        fsinfo) set -- "$2" rtmult wtmult maxfilesize time_delta properties ;;
        pathconf) set -- "$2" linkmax name_max no_trunc chown_restricted case_insensitive case_preserving ;;
    esac
    for k in "${@:2}"; do printf '%s=%s ' "$k" "$(fsv "$1" "$k")"; done
}
for k in fsinfo pathconf; do
    up "$k" "$DIR" > "$T_TMP/$k.up.out"
    is "$(fsv "$k.1" nfs_status) $(fsv "$k.2" nfs_status)" "NFS3_OK NFS3_OK" "fs: ${k^^} twice: NFS3_OK"
    is "$(fields "$k" "$k.1")|$(fields "$k" "$k.2")" "$(fields "$k" "$k.up")|$(fields "$k" "$k.up")" \
        "fs: ${k^^}: the upstream's answer both times ($(fields "$k" "$k.up"))"
done
is "$(fsv fsstat.1 nfs_status) $(fsv fsstat.2 nfs_status)" "NFS3_OK NFS3_OK" "fs: FSSTAT twice: NFS3_OK"
is "$(fsv mnt.1 mount_status) $(fsv mnt.2 mount_status) $(fsv mnt.2 fh)" "0 0 $(fsv mnt.1 fh)" \
    "fs: MNT twice: the same root handle"
is "$(fsv exports.2 export_count) $(fsv exports.2 export.1)" "$(fsv exports.1 export_count) $(fsv exports.1 export.1)" \
    "fs: EXPORT twice: the same list"
is "$(fsv null reply)" "accepted SUCCESS" "fs: NULL answered"
for k in FSINFO PATHCONF FSSTAT MNT EXPORT; do
    num_ok "$(d f0 f1 "upstream.calls.$k")" -le 1 "fs: at most one upstream $k for two calls ($(d f0 f1 "upstream.calls.$k"))"
done
is "$(d f0 f1 upstream.calls.NULL)" 0 "fs: NULL answered by nfscached itself (no upstream NULL)"
sleep $((TTL + 1))
snap f2
rpc fsstat "$DIR" > "$T_TMP/fsstat.3.out"
snap f3
is "$(fsv fsstat.3 nfs_status) $(d f2 f3 upstream.calls.FSSTAT)" "NFS3_OK 1" \
    "fs: FSSTAT after acregmin: asked upstream again"

# ---- clamp --------------------------------------------------------------------------
# acregmin = 1, acregmax = 4: the TTL is clamp((now - mtime) / 10, 1, 4):
# about 1 s for a file just written, 2 s for one written 20 s ago, 4 s for
# one written an hour ago.  Each is changed directly (chmod) right after a
# GETATTR through nfscached confirmed its attributes; polled every 50 ms.
stop_nfscached
ok $? "nfscached exits cleanly on SIGTERM (before the restart)"
if ! start_nfscached -o cache.metadata=yes -o cache.acregmin=1 -o cache.acregmax=4 \
        -o cache.acdirmin=1 -o cache.acdirmax=4 2>"$T_TMP/start.err"; then
    ok 1 "nfscached starts again with acregmin = 1, acregmax = 4"
    diag "$(cat "$T_TMP/start.err")"
    done_testing
fi
ok 0 "nfscached starts again with acregmin = 1, acregmax = 4"
for f in new mid old; do echo "$f" > "$EXPORT_DIR/d/$f"; chmod 644 "$EXPORT_DIR/d/$f"; done
touch -d '20 seconds ago' "$EXPORT_DIR/d/mid"
touch -d '1 hour ago' "$EXPORT_DIR/d/old"
CF=()
for f in new mid old; do
    rpc lookup "$DIR" "$f" > "$T_TMP/r.out"
    CF+=("$(rv fh)")
done
timeout -k 5 60 python3 - "$top_srcdir/tests" "$PORT" "$EXPORT_DIR/d" "${CF[@]}" > "$T_TMP/clamp.out" 2>&1 <<'PY'
import os, sys, time
sys.path.insert(0, sys.argv[1])
import rpc
port, d = int(sys.argv[2]), sys.argv[3]
files = dict(zip(("new", "mid", "old"), (bytes.fromhex(h) for h in sys.argv[4:7])))
c = rpc.Conn("127.0.0.1", port, timeout=20)

def mode(fh):
    rep, st = c.nfs(rpc.NFSPROC3_GETATTR, rpc.getattr_args(fh))
    return rpc.decode_getattr(rep.body).get("mode") if rep.ok() else rep.summary()

time.sleep(4.3)             # what the LOOKUPs brought is past its TTL
t0, first, seen = {}, {}, {}
for name, fh in files.items():
    first[name] = mode(fh)          # forwarded: confirms the attributes now
    t0[name] = time.monotonic()
    os.chmod(os.path.join(d, name), 0o600)
while len(seen) < len(files) and time.monotonic() - min(t0.values()) < 8:
    for name, fh in files.items():
        if name not in seen and mode(fh) == "600":
            seen[name] = time.monotonic() - t0[name]
    time.sleep(0.05)
for name in files:
    print("%s.first: %s" % (name, first[name]))
    print("%s.ms: %d" % (name, seen[name] * 1000 if name in seen else -1))
PY
clv() { val "$T_TMP/clamp.out" "$1"; }
is "$(clv new.first) $(clv mid.first) $(clv old.first)" "644 644 644" "clamp: the three files' modes through nfscached" ||
    diag "$(cat "$T_TMP/clamp.out")"
for f in "new 800 1800" "mid 1900 3600" "old 3400 5000"; do
    set -- $f
    num_ok "$(clv "$1.ms")" -ge "$2" "clamp: the chmod of $1 not seen for ${2} ms at least ($(clv "$1.ms") ms)"
    num_ok "$(clv "$1.ms")" -le "$3" "clamp: ... and seen within $3 ms"
done

# ---- zero ---------------------------------------------------------------------------
stop_nfscached
ok $? "nfscached exits cleanly on SIGTERM (before the restart)"
if ! start_nfscached -o cache.metadata=yes -o cache.acregmin=0 -o cache.acregmax=0 \
        -o cache.acdirmin=0 -o cache.acdirmax=0 2>"$T_TMP/start.err"; then
    ok 1 "nfscached starts again with all ac* = 0"
    diag "$(cat "$T_TMP/start.err")"
    done_testing
fi
ok 0 "nfscached starts again with all ac* = 0"

N=6
snap z0
# each call N times on one connection (a fresh XID each): GETATTR of f and
# of d, LOOKUP of f and of a missing name, ACCESS of f and of d, READDIRPLUS
# and READDIR of d (one page), NULL; then the same on a second connection
timeout -k 5 60 python3 - "$top_srcdir/tests" "$PORT" "$DIR" "$FH" "$N" > "$T_TMP/zero.out" 2>&1 <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import rpc
port, d, f, n = int(sys.argv[2]), bytes.fromhex(sys.argv[3]), bytes.fromhex(sys.argv[4]), int(sys.argv[5])
calls = [("GETATTR", rpc.NFSPROC3_GETATTR, rpc.getattr_args(f), "NFS3_OK"),
         ("GETATTR", rpc.NFSPROC3_GETATTR, rpc.getattr_args(d), "NFS3_OK"),
         ("LOOKUP", rpc.NFSPROC3_LOOKUP, rpc.lookup_args(d, "f"), "NFS3_OK"),
         ("LOOKUP", rpc.NFSPROC3_LOOKUP, rpc.lookup_args(d, "nothere"), "NFS3ERR_NOENT"),
         ("ACCESS", rpc.NFSPROC3_ACCESS, rpc.access_args(f, 0x3f), "NFS3_OK"),
         ("ACCESS", rpc.NFSPROC3_ACCESS, rpc.access_args(d, 0x1f), "NFS3_OK"),
         ("READDIRPLUS", rpc.NFSPROC3_READDIRPLUS, rpc.readdirplus_args(d), "NFS3_OK"),
         ("READDIR", rpc.NFSPROC3_READDIR, rpc.readdir_args(d), "NFS3_OK"),
         ("NULL", rpc.NFSPROC3_NULL, b"", None)]
made, wrong = {}, []
for conn in range(2):
    c = rpc.Conn("127.0.0.1", port, timeout=20)
    for i in range(n):
        for name, proc, a, want in calls:
            rep, st = c.nfs(proc, a)
            made[name] = made.get(name, 0) + 1
            if st != want:
                wrong.append("%s: %s" % (name, st or rep.summary()))
    c.close()
for k, v in sorted(made.items()):
    print("made.%s: %d" % (k, v))
print("made: %d" % sum(made.values()))
print("wrong: %d" % len(wrong))
if wrong:
    print("first_wrong: %s" % wrong[0])
PY
snap z1
zv() { val "$T_TMP/zero.out" "$1"; }
is "$(zv wrong)" 0 "zero: every call answered as expected ($(zv first_wrong))" || diag "$(cat "$T_TMP/zero.out")"
for p in GETATTR LOOKUP ACCESS READDIRPLUS READDIR NULL; do
    is "$(d z0 z1 "upstream.calls.$p")" "$(zv "made.$p")" \
        "zero: every $p forwarded (upstream.calls.$p +$(zv "made.$p"), the calls made)"
done
total=0
for k in $(awk '$1 ~ /^upstream\.calls\./ { print $1 }' "$T_TMP/z1.stats"); do
    total=$((total + $(d z0 z1 "$k")))
done
is "$total" "$(zv made)" "zero: no other call went upstream (the upstream.calls.* grew by $total in all)" ||
    diag "upstream calls: $(for k in $(awk '$1 ~ /^upstream\.calls\./ { print $1 }' "$T_TMP/z1.stats"); do
        n=$(d z0 z1 "$k"); [ "$n" = 0 ] || printf '%s +%s, ' "${k#upstream.calls.}" "$n"; done)" \
        "calls made: $(grep '^made\.' "$T_TMP/zero.out" | tr '\n' ' ')"
is "$(d z0 z1 cache.attr.hits) $(d z0 z1 cache.lookup.hits) $(d z0 z1 cache.lookup.negative_hits) $(d z0 z1 cache.access.hits) $(d z0 z1 cache.readdir.hits) $(d z0 z1 cache.readlink.hits)" \
    "0 0 0 0 0 0" "zero: no cache.*.hits (attr, lookup, negative, access, readdir, readlink)"
is "$(d z0 z1 cache.attr.misses) $(d z0 z1 cache.lookup.misses) $(d z0 z1 cache.access.misses) $(d z0 z1 cache.readdir.misses)" \
    "$((2 * 2 * N)) $((2 * 2 * N)) $((2 * 2 * N)) $((2 * 2 * N))" "zero: every one of them a miss"

# ---- off ----------------------------------------------------------------------------
stop_nfscached
ok $? "nfscached exits cleanly on SIGTERM (before the second restart)"
if ! start_nfscached -o cache.metadata=no -o cache.acregmin=60 -o cache.acregmax=60 \
        -o cache.acdirmin=60 -o cache.acdirmax=60 2>"$T_TMP/start.err"; then
    ok 1 "nfscached starts again with cache.metadata = no"
    diag "$(cat "$T_TMP/start.err")"
    done_testing
fi
ok 0 "nfscached starts again with cache.metadata = no (ac* = 60)"
# the calls of `zero` again, twice: nothing from the namespace cache
snap o0
timeout -k 5 60 python3 - "$top_srcdir/tests" "$PORT" "$DIR" "$FH" "$N" > "$T_TMP/off.out" 2>&1 <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import rpc
port, d, f, n = int(sys.argv[2]), bytes.fromhex(sys.argv[3]), bytes.fromhex(sys.argv[4]), int(sys.argv[5])
calls = [("GETATTR", rpc.NFSPROC3_GETATTR, rpc.getattr_args(f)),
         ("LOOKUP", rpc.NFSPROC3_LOOKUP, rpc.lookup_args(d, "f")),
         ("LOOKUP", rpc.NFSPROC3_LOOKUP, rpc.lookup_args(d, "nothere")),
         ("ACCESS", rpc.NFSPROC3_ACCESS, rpc.access_args(d, 0x1f)),
         ("READDIRPLUS", rpc.NFSPROC3_READDIRPLUS, rpc.readdirplus_args(d)),
         ("READDIR", rpc.NFSPROC3_READDIR, rpc.readdir_args(d)),
         ("FSINFO", rpc.NFSPROC3_FSINFO, rpc.fh3(d)),
         ("PATHCONF", rpc.NFSPROC3_PATHCONF, rpc.fh3(d)),
         ("NULL", rpc.NFSPROC3_NULL, b"")]
made = {}
c = rpc.Conn("127.0.0.1", port, timeout=20)
for i in range(n):
    for name, proc, a in calls:
        rep, st = c.nfs(proc, a)
        made[name] = made.get(name, 0) + 1
c.close()
for k, v in sorted(made.items()):
    print("made.%s: %d" % (k, v))
PY
snap o1
ov() { val "$T_TMP/off.out" "$1"; }
for p in GETATTR LOOKUP ACCESS READDIRPLUS READDIR FSINFO PATHCONF NULL; do
    is "$(d o0 o1 "upstream.calls.$p")" "$(ov "made.$p")" "off: every $p forwarded (+$(ov "made.$p"))"
done
is "$(d o0 o1 cache.attr.hits) $(d o0 o1 cache.lookup.hits) $(d o0 o1 cache.lookup.negative_hits) $(d o0 o1 cache.access.hits) $(d o0 o1 cache.readdir.hits)" \
    "0 0 0 0 0" "off: no cache.*.hits"
is "$(sv o1 cache.metadata.entries)" 0 "off: cache.metadata.entries 0"
done_testing
