#!/bin/bash
# 60-meta-walk: a client's walk of a tree (tests/rpc.py walk: ACCESS and
# READDIRPLUS of every directory, LOOKUP, ACCESS, GETATTR and READ of every
# file) through nfscached with the namespace cache on, twice, each on a
# fresh connection; the tree (20 directories of 25 small files, made
# directly in the export) is old enough that every TTL is acXmax.
#   walk 1   what the READDIRPLUS replies brought is not asked again: no
#            upstream LOOKUP, no upstream GETATTR; ACCESS, READ and
#            READDIRPLUS go upstream once per call (the client's own, no
#            more); nothing else does
#   walk 2   nothing at all goes upstream (every upstream.calls.* counter
#            stays); every GETATTR, LOOKUP, ACCESS and READDIRPLUS is a hit,
#            no miss
#   changes  CREATE, WRITE, REMOVE, RENAME, SETATTR, MKDIR, SYMLINK through
#            nfscached: a walk right after sees the tree as the upstream
#            has it
#   both     the same summary (names, contents, type, mode, size, mtime,
#            fileid; handles) as a walk made directly against the upstream;
#            the READDIRPLUS, LOOKUP and GETATTR attributes of every entry
#            agree, and so do its READDIRPLUS and LOOKUP handles
TEST_TIMEOUT=${TEST_TIMEOUT:-180}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the namespace cache of nfscached"
needs_own_upstream

NDIRS=20 NFILES=25
# the tree: tree/dNN (10) and tree/dNN/sNN (10), 25 files in each; sizes
# 1..4000 bytes; every time an hour ago (TTL = acXmax)
python3 - "$EXPORT_DIR/tree" <<'PY'
import os, random, sys, time
top = sys.argv[1]
rnd = random.Random(60)
os.mkdir(top)
dirs = []
for i in range(10):
    d = os.path.join(top, "d%02d" % i)
    os.mkdir(d)
    s = os.path.join(d, "s%02d" % i)
    os.mkdir(s)
    dirs += [d, s]
for d in dirs:
    for j in range(25):
        with open(os.path.join(d, "file-%02d.txt" % j), "wb") as f:
            f.write(rnd.randbytes(rnd.randrange(1, 4001)))
old = time.time() - 3600
for d, subs, files in os.walk(top, topdown=False):
    for n in files:
        os.utime(os.path.join(d, n), (old, old))
    os.utime(d, (old, old))
PY
NENT=$((NDIRS * NFILES))
setup -o cache.metadata=yes -o cache.acregmin=120 -o cache.acregmax=120 \
    -o cache.acdirmin=120 -o cache.acdirmax=120

FH=$(fh_of tree)
[ -n "$FH" ]
ok $? "the tree's handle through nfscached" || done_testing

# walk TAG [RPC OPTION...] (rpc) / walk_up TAG (up): the summary in TAG.out
walk() { local t=$1; shift; RPC_LIMIT=120 rpc "$@" walk "$FH" > "$T_TMP/$t.out" 2>&1; }
wv() { val "$T_TMP/$1.out" "$2"; }

# the summary of a walk must be complete and consistent
walk_sane() {
    is "$(wv "$1" files) $(wv "$1" dirs) $(wv "$1" symlinks) $(wv "$1" others)" "$NENT $NDIRS 0 0" \
        "$1: $NENT files and $NDIRS directories walked" || diag "$(tail -n 30 "$T_TMP/$1.out")"
    is "$(wv "$1" errors)" 0 "$1: no error ($(wv "$1" first_error))"
    is "$(wv "$1" attr_mismatches) $(wv "$1" fh_mismatches)" "0 0" \
        "$1: READDIRPLUS, LOOKUP and GETATTR agree on each entry's attributes and handle"
    is "$(wv "$1" without_attrs) $(wv "$1" without_fh)" "0 0" \
        "$1: every READDIRPLUS entry carries attributes and a handle"
    is "$(wv "$1" bytes)" "$(find "$EXPORT_DIR/tree" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')" \
        "$1: every byte of every file read"
}

# ---- direct ----------------------------------------------------------------------
if [ "$T_EXTERNAL" = 0 ]; then
    RPC_LIMIT=120 up walk "$FH" > "$T_TMP/direct.out" 2>&1
    walk_sane direct
fi

# ---- walk 1 ----------------------------------------------------------------------
snap w0
walk walk1
snap w1
walk_sane walk1
is "$(wv walk1 md5) $(wv walk1 fh_md5)" "$(wv direct md5) $(wv direct fh_md5)" \
    "walk 1: the same tree as directly: names, contents, attributes, handles"
c_access=$(wv walk1 calls.ACCESS) c_rdp=$(wv walk1 calls.READDIRPLUS) c_read=$(wv walk1 calls.READ)
is "$c_access $c_read $(wv walk1 calls.LOOKUP) $(wv walk1 calls.GETATTR)" \
    "$((NDIRS + 1 + NENT)) $NENT $((NDIRS + NENT)) $NENT" \
    "walk 1: the client's calls: ACCESS per directory and file, one READ per file, LOOKUP per entry, GETATTR per file"
is "$(d w0 w1 upstream.calls.LOOKUP)" 0 \
    "walk 1: no upstream LOOKUP (every name came with the READDIRPLUS replies)"
is "$(d w0 w1 upstream.calls.GETATTR)" 0 \
    "walk 1: no upstream GETATTR (every attribute came with the READDIRPLUS replies)"
is "$(d w0 w1 upstream.calls.READDIRPLUS)" "$c_rdp" \
    "walk 1: each READDIRPLUS page went upstream once ($c_rdp)"
is "$(d w0 w1 upstream.calls.ACCESS)" "$c_access" \
    "walk 1: each ACCESS went upstream once, none of nfscached's own ($c_access)"
is "$(d w0 w1 upstream.calls.READ)" "$c_read" "walk 1: one upstream READ per file ($c_read)"
others=$(awk '$1 ~ /^upstream\.calls\./ { print $1 }' "$T_TMP/w1.stats" |
    grep -vxE 'upstream\.calls\.(LOOKUP|GETATTR|READDIRPLUS|ACCESS|READ)' |
    while read -r k; do n=$(d w0 w1 "$k"); [ "$n" = 0 ] || echo "$k+$n"; done)
is "$others" "" "walk 1: no other upstream call"
is "$(d w0 w1 cache.lookup.hits)" "$((NDIRS + NENT))" \
    "walk 1: every LOOKUP a hit (cache.lookup.hits +$((NDIRS + NENT)))"
is "$(d w0 w1 cache.attr.hits)" "$NENT" "walk 1: every GETATTR a hit (cache.attr.hits +$NENT)"
is "$(d w0 w1 cache.lookup.misses) $(d w0 w1 cache.attr.misses)" "0 0" \
    "walk 1: no LOOKUP or GETATTR miss"
num_ok "$(sv w1 cache.metadata.entries)" -ge $((2 * (NENT + NDIRS) + 1)) \
    "walk 1: cache.metadata.entries holds the tree, a node and a name per entry ($(sv w1 cache.metadata.entries) >= $((2 * (NENT + NDIRS) + 1)))"

# ---- walk 2 ----------------------------------------------------------------------
walk walk2
snap w2
walk_sane walk2
is "$(wv walk2 md5) $(wv walk2 fh_md5)" "$(wv walk1 md5) $(wv walk1 fh_md5)" \
    "walk 2: the same summary as walk 1"
is "$(wv walk2 calls)" "$(wv walk1 calls)" "walk 2: the same calls as walk 1 ($(wv walk2 calls))"
grown=$(awk '$1 ~ /^upstream\.calls\./ { print $1 }' "$T_TMP/w2.stats" |
    while read -r k; do n=$(d w1 w2 "$k"); [ "$n" = 0 ] || echo "$k+$n"; done)
is "$grown" "" "walk 2: no upstream call at all (every upstream.calls.* counter unchanged)"
num_ok "$(grep -c '^upstream\.calls\.' "$T_TMP/w2.stats")" -ge 22 "walk 2: ... of the $(grep -c '^upstream\.calls\.' "$T_TMP/w2.stats") upstream.calls.* counters"
is "$(d w1 w2 cache.attr.hits)" "$(wv walk2 calls.GETATTR)" \
    "walk 2: every GETATTR a hit (cache.attr.hits +$(d w1 w2 cache.attr.hits))"
num_ok "$(d w1 w2 cache.attr.hits)" -ge "$NENT" "walk 2: cache.attr.hits >= $NENT"
is "$(d w1 w2 cache.lookup.hits)" "$(wv walk2 calls.LOOKUP)" \
    "walk 2: every LOOKUP a hit (cache.lookup.hits +$(d w1 w2 cache.lookup.hits))"
is "$(d w1 w2 cache.access.hits)" "$(wv walk2 calls.ACCESS)" \
    "walk 2: every ACCESS a hit (cache.access.hits +$(d w1 w2 cache.access.hits))"
is "$(d w1 w2 cache.readdir.hits)" "$(wv walk2 calls.READDIRPLUS)" \
    "walk 2: every READDIRPLUS a hit (cache.readdir.hits +$(d w1 w2 cache.readdir.hits))"
is "$(d w1 w2 cache.attr.misses) $(d w1 w2 cache.lookup.misses) $(d w1 w2 cache.access.misses) $(d w1 w2 cache.readdir.misses) $(d w1 w2 cache.lookup.negative_hits)" \
    "0 0 0 0 0" "walk 2: no miss (attr, lookup, access, readdir), no negative hit"
is "$(d w1 w2 cache.read.hits)" "$NENT" "walk 2: every READ from the data cache"
is "$(d w1 w2 nfs3.calls.GETATTR) $(d w1 w2 nfs3.calls.LOOKUP) $(d w1 w2 nfs3.calls.READDIRPLUS)" \
    "$(wv walk2 calls.GETATTR) $(wv walk2 calls.LOOKUP) $(wv walk2 calls.READDIRPLUS)" \
    "walk 2: nfscached counted the client's calls (nfs3.calls.*)"
is "$(d w1 w2 cache.metadata.evictions)" 0 "walk 2: nothing evicted"
diag "walk times: direct $(wv direct ms) ms, walk 1 $(wv walk1 ms) ms, walk 2 $(wv walk2 ms) ms"

# ---- another credential is not answered from uid 0's results --------------------
snap u0
walk walk3 --uid 1000 --gid 1000
snap u1
is "$(wv walk3 md5) $(wv walk3 errors)" "$(wv walk1 md5) 0" "uid 1000: the same tree"
is "$(d u0 u1 upstream.calls.ACCESS)" "$(wv walk3 calls.ACCESS)" \
    "uid 1000: every ACCESS of its own went upstream ($(wv walk3 calls.ACCESS)), none answered from uid 0's"
is "$(d u0 u1 upstream.calls.READDIRPLUS) $(d u0 u1 upstream.calls.LOOKUP) $(d u0 u1 upstream.calls.GETATTR)" \
    "0 0 0" "uid 1000: listings, names and attributes from the cache once ACCESS granted them"
# ---- changes through nfscached are seen at once ----------------------------------
# CREATE and WRITE, REMOVE, RENAME to another directory, SETATTR, MKDIR and
# SYMLINK through nfscached, then at once a walk through nfscached: the
# tree as the upstream now has it
dfh() { rpc lookup "$FH" "$1" > "$T_TMP/dfh.out"; val "$T_TMP/dfh.out" fh; }
D0=$(dfh d00) D1=$(dfh d01) D2=$(dfh d02) D3=$(dfh d03) D4=$(dfh d04)
rpc create "$D0" new.txt > "$T_TMP/c.out"
rpc write "$(val "$T_TMP/c.out" fh)" 0 "written through nfscached" > "$T_TMP/w.out"
rpc remove "$D1" file-00.txt > "$T_TMP/rm.out"
rpc rename "$D2" file-01.txt "$D3" renamed.txt > "$T_TMP/mv.out"
rpc lookup "$D4" file-02.txt > "$T_TMP/l.out"
rpc setattr "$(val "$T_TMP/l.out" fh)" --mode 600 > "$T_TMP/sa.out"
rpc mkdir "$D4" newdir > "$T_TMP/md.out"
rpc symlink "$D4" link.txt file-03.txt > "$T_TMP/sl.out"
is "$(for f in c w rm mv sa md sl; do val "$T_TMP/$f.out" nfs_status; done | sort -u | tr '\n' ' ')" "NFS3_OK " \
    "changes: CREATE, WRITE, REMOVE, RENAME, SETATTR, MKDIR, SYMLINK through nfscached"
walk walk4
if [ "$T_EXTERNAL" = 0 ]; then
    RPC_LIMIT=120 up walk "$FH" > "$T_TMP/direct2.out" 2>&1
fi
is "$(wv walk4 errors) $(wv walk4 files) $(wv walk4 dirs) $(wv walk4 symlinks)" "0 $NENT $((NDIRS + 1)) 1" \
    "changes: the walk right after sees $NENT files, $((NDIRS + 1)) directories, 1 symlink"
is "$(wv walk4 md5) $(wv walk4 fh_md5)" "$(wv direct2 md5) $(wv direct2 fh_md5)" \
    "changes: ... the tree the upstream has now (names, contents, attributes, handles)"
is "$(wv walk4 attr_mismatches) $(wv walk4 fh_mismatches)" "0 0" \
    "changes: READDIRPLUS, LOOKUP and GETATTR agree on each entry"
done_testing
