#!/bin/bash
# 64-meta-listing: a directory of 3,000 entries with long names (100 to 200
# bytes) listed through nfscached with the namespace cache on (acdir* and
# acreg* = 10 s).
#   pass 1    READDIRPLUS dircount 1024, maxcount 4096, every page: every
#             reply body (the READDIRPLUS3res) at most 4096 bytes, every
#             name once, the names the upstream lists
#   pass 2    the same from the cache: no upstream READDIRPLUS, each call a
#             cache.readdir.hits; the same entries (names, fileids, the
#             upstream's cookies, handles, attributes) as pass 1
#   readdir   READDIR count 4096 from the same listing: replies <= 4096
#             bytes, every name once, no upstream READDIR
#   small     READDIRPLUS from the cache with a maxcount one entry fits in:
#             at most that many bytes, at least one entry; one no entry
#             fits in: NFS3ERR_TOOSMALL
#   changed   after files are removed and created directly in the export
#             and the TTL ran out: a listing continued from the cookie and
#             verifier of the end of page 2 answers what the upstream
#             answers to the same call (status, and the names in order); a
#             listing from cookie 0 lists what the directory holds now
TEST_TIMEOUT=${TEST_TIMEOUT:-180}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the namespace cache of nfscached"
needs_own_upstream

N=3000 TTL=10
python3 - "$EXPORT_DIR/big" "$N" <<'PY'
import os, random, string, sys
d, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(64)
os.mkdir(d)
for i in range(n):
    k = rnd.randrange(100, 201)
    name = "%04d-" % i + "".join(rnd.choice(string.ascii_letters + string.digits + "._-")
                                   for _ in range(k - 5))
    with open(os.path.join(d, name), "wb") as f:
        f.write(b"x" * (i % 300))
PY
setup -o cache.metadata=yes -o cache.acregmin=$TTL -o cache.acregmax=$TTL \
    -o cache.acdirmin=$TTL -o cache.acdirmax=$TTL
DIR=$(fh_of big)
[ -n "$DIR" ]
ok $? "the directory's handle through nfscached" || done_testing

LIST="--dircount 1024 --maxcount 4096"
lv() { val "$T_TMP/$1.out" "$2"; }
# what the directory holds: its names, and . and ..
want_names() { { ls -A "$EXPORT_DIR/big"; echo .; echo ..; } | LC_ALL=C sort; }
sorted() { LC_ALL=C sort "$T_TMP/$1.names"; }
# listing_ok TAG MAX: the listing is complete, every reply <= MAX bytes,
# every name once, the directory's names
listing_ok() {
    is "$(lv "$1" nfs_status) $(lv "$1" eof)" "NFS3_OK true" "$1: listed to eof ($(lv "$1" pages) pages)" ||
        diag "$(grep -v '^name:' "$T_TMP/$1.out" | tail -n 5)"
    num_ok "$(lv "$1" max_reply)" -le "$2" "$1: every reply at most $2 bytes (largest $(lv "$1" max_reply))"
    is "$(lv "$1" entries)" "$((N + 2))" "$1: $((N + 2)) entries ($N names, . and ..)"
    is "$(lv "$1" distinct_names)" "$(lv "$1" entries)" "$1: every name once"
    is "$(sorted "$1" | md5sum)" "$(want_names | md5sum)" "$1: the names the directory holds" ||
        diag "$(diff <(sorted "$1") <(want_names) | head -n 4)"
}

# ---- direct ---------------------------------------------------------------------------
RPC_LIMIT=120 up readdirplus "$DIR" $LIST --names-out "$T_TMP/direct.names" \
    --entries-out "$T_TMP/direct.entries" > "$T_TMP/direct.out"
diag "directly: $(lv direct pages) pages, largest reply $(lv direct max_reply) bytes"
is "$(lv direct nfs_status) $(lv direct entries)" "NFS3_OK $((N + 2))" "direct: the upstream lists the directory"

# ---- pass 1 ---------------------------------------------------------------------------
snap p0
RPC_LIMIT=120 rpc readdirplus "$DIR" $LIST --names-out "$T_TMP/pass1.names" \
    --entries-out "$T_TMP/pass1.entries" > "$T_TMP/pass1.out"
snap p1
listing_ok pass1 4096
is "$(lv pass1 without_attrs) $(lv pass1 without_fh)" "0 0" "pass1: every entry with attributes and a handle"
is "$(LC_ALL=C sort "$T_TMP/pass1.entries" | md5sum)" "$(LC_ALL=C sort "$T_TMP/direct.entries" | md5sum)" \
    "pass1: the upstream's entries: names, fileids, cookies, handles, attributes" ||
    diag "$(diff <(LC_ALL=C sort "$T_TMP/direct.entries") <(LC_ALL=C sort "$T_TMP/pass1.entries") | head -n 4 | cut -c1-300)"
diag "pass 1: $(d p0 p1 upstream.calls.READDIRPLUS) upstream READDIRPLUS for $(lv pass1 pages) pages"

# ---- pass 2 ---------------------------------------------------------------------------
RPC_LIMIT=120 rpc readdirplus "$DIR" $LIST --names-out "$T_TMP/pass2.names" \
    --entries-out "$T_TMP/pass2.entries" > "$T_TMP/pass2.out"
snap p2
listing_ok pass2 4096
is "$(d p1 p2 upstream.calls.READDIRPLUS)" 0 "pass2: no upstream READDIRPLUS"
num_ok "$(d p1 p2 cache.readdir.hits)" -gt 0 "pass2: cache.readdir.hits > 0"
is "$(d p1 p2 cache.readdir.hits) $(d p1 p2 cache.readdir.misses)" "$(lv pass2 pages) 0" \
    "pass2: each of its $(lv pass2 pages) calls a hit, none a miss"
is "$(lv pass2 without_attrs) $(lv pass2 without_fh)" "0 0" "pass2: every entry with attributes and a handle"
is "$(LC_ALL=C sort "$T_TMP/pass2.entries" | md5sum)" "$(LC_ALL=C sort "$T_TMP/pass1.entries" | md5sum)" \
    "pass2: the entries of pass 1: names, fileids, the upstream's cookies, handles, attributes" ||
    diag "$(diff <(LC_ALL=C sort "$T_TMP/pass1.entries") <(LC_ALL=C sort "$T_TMP/pass2.entries") | head -n 4 | cut -c1-300)"
is "$(md5sum < "$T_TMP/pass2.names")" "$(md5sum < "$T_TMP/pass1.names")" "pass2: in the same order"
diag "pass 2: $(lv pass2 pages) pages (pass 1: $(lv pass1 pages))"

# ---- READDIR ---------------------------------------------------------------------------
RPC_LIMIT=120 rpc readdir "$DIR" --count 4096 --names-out "$T_TMP/rd.names" \
    --entries-out "$T_TMP/rd.entries" > "$T_TMP/rd.out"
snap p3
listing_ok rd 4096
is "$(d p2 p3 upstream.calls.READDIR)" 0 "rd: no upstream READDIR (answered from the READDIRPLUS listing)"
is "$(d p2 p3 cache.readdir.hits)" "$(lv rd pages)" "rd: each of its $(lv rd pages) calls a hit"
is "$(awk '{ print $1, $2, $3 }' "$T_TMP/rd.entries" | LC_ALL=C sort | md5sum)" \
    "$(awk '{ print $1, $2, $3 }' "$T_TMP/pass1.entries" | LC_ALL=C sort | md5sum)" \
    "rd: the names, fileids and cookies of the READDIRPLUS listing"

# ---- small maxcount ---------------------------------------------------------------------
rpc readdirplus "$DIR" --dircount 1024 --maxcount 800 --pages 1 > "$T_TMP/s1.out"
rpc readdirplus "$DIR" --dircount 1024 --maxcount 200 --pages 1 > "$T_TMP/s2.out"
snap p4
is "$(lv s1 nfs_status)" NFS3_OK "small: maxcount 800 (one entry fits): NFS3_OK"
num_ok "$(lv s1 entries)" -ge 1 "small: ... with at least one entry ($(lv s1 entries))"
num_ok "$(lv s1 max_reply)" -le 800 "small: ... in at most 800 bytes ($(lv s1 max_reply))"
is "$(lv s2 nfs_status)" NFS3ERR_TOOSMALL "small: maxcount 200 (no entry fits): NFS3ERR_TOOSMALL"
is "$(d p3 p4 upstream.calls.READDIRPLUS)" 0 "small: both from the cache"
up readdirplus "$DIR" --dircount 1024 --maxcount 200 --pages 1 > "$T_TMP/s2d.out"
diag "maxcount 200 directly: $(lv s2d nfs_status)$(lv s2d error), $(lv s2d entries) entries, eof $(lv s2d eof)"

# ---- a cookie the listing does not have: the upstream's answer -------------------------
rpc readdirplus "$DIR" $LIST --cookie 1234567 --verf "$(lv pass1 cookieverf)" --pages 1 > "$T_TMP/bad.out"
snap p5
up readdirplus "$DIR" $LIST --cookie 1234567 --verf "$(lv pass1 cookieverf)" --pages 1 > "$T_TMP/badd.out"
is "$(lv bad nfs_status) $(lv bad names_md5)" "$(lv badd nfs_status) $(lv badd names_md5)" \
    "bad cookie: the upstream's answer ($(lv badd nfs_status))"

# ---- changed elsewhere ------------------------------------------------------------------
C=$(lv pass1 page.2 | sed -n 's/.*last_cookie=\([0-9]*\).*/\1/p')
V=$(lv pass1 page.2 | sed -n 's/.*verf=\([0-9a-f]*\).*/\1/p')
[ -n "$C" ] && [ -n "$V" ]
ok $? "changed: the cookie ($C) and verifier ($V) at the end of page 2"
# remove every 7th file, create 50 more
ls "$EXPORT_DIR/big" | awk 'NR % 7 == 3' | while read -r f; do rm -f "$EXPORT_DIR/big/$f"; done
for i in $(seq 1 50); do
    : > "$EXPORT_DIR/big/new-$i-$(printf '%0120d' "$i")"
done
sleep $((TTL + 1))
snap c0
RPC_LIMIT=120 rpc readdirplus "$DIR" $LIST --cookie "$C" --verf "$V" \
    --names-out "$T_TMP/cont.names" > "$T_TMP/cont.out"
snap c1
RPC_LIMIT=120 up readdirplus "$DIR" $LIST --cookie "$C" --verf "$V" \
    --names-out "$T_TMP/contd.names" > "$T_TMP/contd.out"
diag "continued from cookie $C: through nfscached $(lv cont nfs_status), $(lv cont entries) entries;" \
     "directly $(lv contd nfs_status), $(lv contd entries) entries"
is "$(lv cont nfs_status)" "$(lv contd nfs_status)" "changed: the continued listing's status is the upstream's"
if [ "$(lv contd nfs_status)" = NFS3_OK ]; then
    is "$(md5sum < "$T_TMP/cont.names")" "$(md5sum < "$T_TMP/contd.names")" \
        "changed: ... and its names, in order, are the upstream's ($(lv cont entries) and $(lv contd entries))" ||
        diag "$(diff "$T_TMP/cont.names" "$T_TMP/contd.names" | head -n 4 | cut -c1-200)"
fi
num_ok "$(d c0 c1 upstream.calls.READDIRPLUS)" -ge 1 "changed: the continued listing asked the upstream"
RPC_LIMIT=120 rpc readdirplus "$DIR" $LIST --names-out "$T_TMP/after.names" > "$T_TMP/after.out"
N=$(ls -A "$EXPORT_DIR/big" | wc -l)
listing_ok after 4096
done_testing
