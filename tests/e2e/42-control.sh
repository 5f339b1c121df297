#!/bin/bash
# 42-control: the control commands of running nfscached as a service.
#   a) `stats --json` is valid JSON holding every counter of the design;
#      `stats --prometheus` is well-formed (HELP and TYPE per family, legal
#      names, counters end in _total, the series of a histogram)
#   b) `stats exports`: reads through /export and through a second export,
#      /export2 (its own upstream file system id), each counted under its own
#      export, and the per-export counters add up to the totals
#   c) `invalidate /export/FILE`: the next READ of it goes upstream, another
#      file stays a hit; with dirty data the bytes are written back first and
#      nothing stays dirty; `invalidate --all`; errors for a missing file, a
#      directory, a path under no export
#   d) the socket is mode 0660; a user neither root nor in the socket's
#      group may run status and stats but is refused stats reset, flush and
#      invalidate; one with the socket's group as a supplementary group is not
. "$(dirname "$0")/../lib.sh"
needs_daemon "tests the daemon's control socket"

# a second export with a file system id of its own (ganesha Filesystem_id)
EXPORT2=
if [ "$T_EXTERNAL" = 0 ]; then
    EXPORT2=/export2
    EXPORT2_DIR=$T_TMP/export2
    mkdir -p "$EXPORT2_DIR"
    GANESHA_EXPORTS=$(ganesha_export 2 "$EXPORT2_DIR" /export2 4242.4242)
fi
setup -o cache.dirty_expire_ms=60000
url2() { echo "nfs://127.0.0.1/export2/$1?version=3&nfsport=$PORT&mountport=$PORT"; }

# ---- a) JSON and Prometheus -------------------------------------------

# prom_check FILE: the text exposition format, as Prometheus reads it
prom_check() {
python3 - "$1" > "$T_TMP/prom.err" 2>&1 <<'PY'
import re, sys
name_re = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*$')
sample_re = re.compile(r'^([^{ ]+)(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*")*\})? (-?[0-9]+(?:\.[0-9]+)?)$')
help, typ, errs, samples = {}, {}, [], 0
for i, l in enumerate(open(sys.argv[1]), 1):
    l = l.rstrip("\n")
    if l.startswith("# HELP "):
        n = l.split(" ", 3)[2]
        if n in help: errs.append("%d: second HELP for %s" % (i, n))
        help[n] = 1
    elif l.startswith("# TYPE "):
        _, _, n, t = l.split(" ", 3)
        if n in typ: errs.append("%d: second TYPE for %s" % (i, n))
        typ[n] = t
        if t not in ("counter", "gauge", "histogram"): errs.append("%d: type %s" % (i, t))
    elif l:
        m = sample_re.match(l)
        if not m: errs.append("%d: not a sample: %r" % (i, l)); continue
        n = m.group(1); samples += 1
        if not name_re.match(n): errs.append("%d: bad name %s" % (i, n))
        # a histogram's series: FAMILY_bucket (with le), FAMILY_sum, FAMILY_count
        f = re.sub(r'_(bucket|sum|count)$', '', n)
        if n not in typ and typ.get(f) == "histogram":
            if n.endswith("_bucket") and 'le="' not in (m.group(2) or ""):
                errs.append("%d: %s without le" % (i, n))
            n = f
        if n not in help or n not in typ: errs.append("%d: %s without HELP and TYPE before it" % (i, n))
        elif typ[n] == "counter" and not n.endswith("_total"): errs.append("%d: counter %s without _total" % (i, n))
if samples < 50: errs.append("only %d samples" % samples)
if errs: sys.exit("\n".join(errs[:10]))
PY
}

ctl stats --json > "$T_TMP/stats.json"
ok $? "nfscachectl stats --json"
python3 -m json.tool "$T_TMP/stats.json" >/dev/null
ok $? "stats --json parses (python3 -m json.tool)"
names="upstream.errors upstream.reconnects rpc.drc.hits
    cache.read.hits cache.read.partial_hits cache.read.misses
    cache.read.bytes_local cache.read.bytes_upstream
    cache.write.bytes cache.writeback.bytes cache.writeback.errors cache.dirty.bytes
    cache.objects cache.bytes cache.invalidations
    cache.culled.objects cache.culled.bytes cache.nospace
    backing.write.calls backing.write.bytes backing.read.calls"
for p in NULL GETATTR SETATTR LOOKUP ACCESS READLINK READ WRITE CREATE MKDIR SYMLINK \
         MKNOD REMOVE RMDIR RENAME LINK READDIR READDIRPLUS FSSTAT FSINFO PATHCONF COMMIT; do
    names="$names nfs3.calls.$p upstream.calls.$p"
done
for p in NULL MNT DUMP UMNT UMNTALL EXPORT; do names="$names mount3.calls.$p"; done
missing=$(python3 - "$T_TMP/stats.json" $names <<'PY'
import json, sys
obj = json.load(open(sys.argv[1]))
print(" ".join(n for n in sys.argv[2:] if not isinstance(obj.get(n), int)))
PY
)
is "$(echo $missing)" "" "stats --json: the counters of the design, as numbers"

ctl stats --prometheus > "$T_TMP/stats.prom"
ok $? "nfscachectl stats --prometheus"
prom_check "$T_TMP/stats.prom"
ok $? "stats --prometheus: HELP and TYPE per family, legal names, counters end in _total" ||
    diag "$(cat "$T_TMP/prom.err")"
grep -qE '^nfscached_cache_read_hits_total [0-9]+$' "$T_TMP/stats.prom"
ok $? "prometheus: nfscached_cache_read_hits_total"

# ---- b) stats exports ---------------------------------------------------

head -c 20000 /dev/urandom > "$EXPORT_DIR/f1"
head -c 20000 /dev/urandom > "$EXPORT_DIR/f2"
[ -n "$EXPORT2" ] && head -c 30000 /dev/urandom > "$EXPORT2_DIR/g1"
ctl stats reset >/dev/null
# pex FILE EXPORT NAME: a per-export counter from a `stats exports` answer
pex() { awk -v k="$3{export=\"$2\"}" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }' "$1"; }
for i in 1 2; do nfs_cat "$(proxy_url f1)" > "$T_TMP/f1.$i" || break; done
cmp -s "$T_TMP/f1.2" "$EXPORT_DIR/f1"
ok $? "f1 read twice through /export"
ctl stats exports > "$T_TMP/ex1"
ok $? "nfscachectl stats exports"
bad=$(grep -vE '^[a-z_.]+\{export="[^"]*"\} [0-9]+$' "$T_TMP/ex1")
is "$bad" "" "stats exports: every line is name{export=\"PATH\"} value"
num_ok "$(pex "$T_TMP/ex1" /export cache.read.misses)" -ge 1 "/export: the first read missed"
num_ok "$(pex "$T_TMP/ex1" /export cache.read.hits)" -ge 1 "/export: the second read hit"
num_ok "$(pex "$T_TMP/ex1" /export cache.read.bytes_upstream)" -ge 20000 "/export: 20000 bytes fetched"
num_ok "$(pex "$T_TMP/ex1" /export cache.read.bytes_local)" -ge 20000 "/export: 20000 bytes answered locally"
if [ -n "$EXPORT2" ]; then
    grep -q 'export="/export2"' "$T_TMP/ex1"
    ok $? "stats exports lists /export2 (mounted by nfscached to learn its file system)"
    is "$(pex "$T_TMP/ex1" /export2 cache.read.misses)/$(pex "$T_TMP/ex1" /export2 cache.read.hits)" \
        0/0 "/export2: no reads counted yet"
    for i in 1 2; do nfs_cat "$(url2 g1)" > "$T_TMP/g1.$i" || break; done
    cmp -s "$T_TMP/g1.2" "$EXPORT2_DIR/g1"
    ok $? "g1 read twice through /export2"
    ctl stats exports > "$T_TMP/ex2"
    num_ok "$(pex "$T_TMP/ex2" /export2 cache.read.misses)" -ge 1 "/export2: the first read missed"
    num_ok "$(pex "$T_TMP/ex2" /export2 cache.read.hits)" -ge 1 "/export2: the second read hit"
    num_ok "$(pex "$T_TMP/ex2" /export2 cache.read.bytes_local)" -ge 30000 "/export2: 30000 bytes answered locally"
    is "$(pex "$T_TMP/ex2" /export cache.read.bytes_local)" "$(pex "$T_TMP/ex1" /export cache.read.bytes_local)" \
        "/export: unchanged by the reads through /export2"
else
    skip "second export" "an external daemon's upstream has one export"
fi
snap sum
ctl stats exports > "$T_TMP/ex3"
sums=$(for n in hits partial_hits misses bytes_local bytes_upstream; do
    a=$(awk -v n="cache.read.$n" 'index($1, n "{") == 1 { s += $2 } END { print s + 0 }' "$T_TMP/ex3")
    [ "$a" = "$(sv sum "cache.read.$n")" ] || echo "$n: exports $a, total $(sv sum "cache.read.$n")"
done)
is "$sums" "" "stats exports: the per-export counters add up to the totals"
ctl stats exports --json | python3 -c '
import json, sys
o = json.load(sys.stdin)
assert o["exports./export.cache.read.hits"] >= 1' 2>"$T_TMP/exjson.err"
ok $? "stats exports --json: flat keys exports./export.cache.read.hits" || diag "$(cat "$T_TMP/exjson.err")"
ctl stats --json | python3 -c '
import json, sys
o = json.load(sys.stdin)
assert "exports./export.cache.read.misses" in o and "cache.read.misses" in o' 2>"$T_TMP/exjson.err"
ok $? "stats --json holds the per-export keys too" || diag "$(cat "$T_TMP/exjson.err")"
ctl stats --prometheus > "$T_TMP/stats2.prom"
grep -qE '^nfscached_export_cache_read_hits_total\{export="/export"\} [0-9]+$' "$T_TMP/stats2.prom"
ok $? "stats --prometheus: nfscached_export_cache_read_hits_total{export=\"/export\"}"
prom_check "$T_TMP/stats2.prom"
ok $? "stats --prometheus with per-export samples: still well-formed" || diag "$(cat "$T_TMP/prom.err")"

# ---- c) invalidate ------------------------------------------------------

nfs_cat "$(proxy_url f2)" > /dev/null && nfs_cat "$(proxy_url f2)" > /dev/null
snap i0
ctl invalidate /export/f1 > "$T_TMP/inv.out" 2>&1
ok $? "invalidate /export/f1" || diag "$(cat "$T_TMP/inv.out")"
snap i1
is "$(d i0 i1 cache.invalidations)" 1 "cache.invalidations +1"
nfs_cat "$(proxy_url f1)" > "$T_TMP/f1.3" && cmp -s "$T_TMP/f1.3" "$EXPORT_DIR/f1"
ok $? "f1 read again, right bytes"
snap i2
is "$(d i1 i2 upstream.calls.READ)" 1 "the next READ of f1 goes upstream (upstream READ +1)"
is "$(d i1 i2 cache.read.misses)" 1 "and is a miss"
nfs_cat "$(proxy_url f2)" > /dev/null
snap i3
is "$(d i2 i3 upstream.calls.READ)" 0 "f2 is still served from the cache (upstream READ +0)"
num_ok "$(d i2 i3 cache.read.hits)" -ge 1 "f2 read is a hit"

# dirty data: written back first, never dropped
printf 'base-content-of-f3\n' > "$EXPORT_DIR/f3"
FH3=$(fh_of f3)
printf 'DIRTY' > "$T_TMP/dirty"
rpc pwrite "$FH3" 0 "$T_TMP/dirty" --stable unstable > "$T_TMP/pw.out" 2>&1
ok $? "UNSTABLE WRITE of 5 bytes to f3" || diag "$(cat "$T_TMP/pw.out")"
num_ok "$(stat_value cache.dirty.bytes)" -ge 5 "f3 holds dirty bytes"
grep -q DIRTY "$EXPORT_DIR/f3"
is $? 1 "the export does not have them yet"
snap w0
ctl invalidate /export/f3 > "$T_TMP/inv3.out" 2>&1
ok $? "invalidate /export/f3" || diag "$(cat "$T_TMP/inv3.out")"
snap w1
is "$(head -c 18 "$EXPORT_DIR/f3")" "DIRTYcontent-of-f3" "the dirty bytes were written back first"
is "$(sv w1 cache.dirty.bytes)" 0 "nothing stays dirty"
num_ok "$(d w0 w1 upstream.calls.WRITE)" -ge 1 "upstream WRITE +$(d w0 w1 upstream.calls.WRITE)"

nfs_cat "$(proxy_url f2)" > /dev/null
snap a0
ctl invalidate --all > "$T_TMP/all.out" 2>&1
ok $? "invalidate --all: $(head -n 1 "$T_TMP/all.out")"
nfs_cat "$(proxy_url f2)" > "$T_TMP/f2.out" && cmp -s "$T_TMP/f2.out" "$EXPORT_DIR/f2"
ok $? "f2 read after invalidate --all, right bytes"
snap a1
is "$(d a0 a1 upstream.calls.READ)" 1 "f2 goes upstream again (upstream READ +1)"
[ -n "$EXPORT2" ] && { nfs_cat "$(url2 g1)" > /dev/null; snap a2
    is "$(d a1 a2 upstream.calls.READ)" 1 "so does g1 of /export2"; }

ctl invalidate /export/no-such-file > "$T_TMP/e1" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q "no such file" "$T_TMP/e1"
ok $? "invalidate of a missing file: exit $rc, $(cat "$T_TMP/e1")"
mkdir -p "$EXPORT_DIR/dir"
ctl invalidate /export/dir > "$T_TMP/e2" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q "not a regular file" "$T_TMP/e2"
ok $? "invalidate of a directory: exit $rc, $(cat "$T_TMP/e2")"
ctl invalidate /elsewhere/f1 > "$T_TMP/e3" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q "no such file" "$T_TMP/e3"
ok $? "invalidate under no export: exit $rc, $(cat "$T_TMP/e3")"
ctl invalidate > "$T_TMP/e4" 2>&1
is $? 1 "invalidate without a path: $(cat "$T_TMP/e4")"

# ---- d) permissions -----------------------------------------------------

if [ "$T_EXTERNAL" = 1 ] || ! command -v setpriv >/dev/null || [ "$(id -u)" != 0 ]; then
    skip "permissions" "needs root, setpriv and a daemon of this test"
else
    is "$(stat -c %a "$CTL")" 660 "the control socket is mode 0660"
    # let anybody connect, to see the daemon's own check
    chmod 0666 "$CTL" && chmod 0711 "$T_TMP"
    as() { timeout 10 setpriv --reuid=1000 --regid=1000 "$@"; }
    as --clear-groups "$NFSCACHECTL" -s "$CTL" status > "$T_TMP/u.status" 2>&1
    ok $? "uid 1000 may run status"
    as --clear-groups "$NFSCACHECTL" -s "$CTL" stats > "$T_TMP/u.stats" 2>&1 &&
        grep -q '^cache.read.hits ' "$T_TMP/u.stats"
    ok $? "uid 1000 may run stats"
    as --clear-groups "$NFSCACHECTL" -s "$CTL" stats exports > /dev/null 2>&1
    ok $? "uid 1000 may run stats exports"
    for cmd in "stats reset" flush "invalidate /export/f2" "invalidate --all"; do
        as --clear-groups "$NFSCACHECTL" -s "$CTL" $cmd > "$T_TMP/u.out" 2>&1
        rc=$?
        [ "$rc" = 1 ] && grep -q "permission denied" "$T_TMP/u.out"
        ok $? "uid 1000 is refused $cmd: $(cat "$T_TMP/u.out")"
    done
    as --groups="$(stat -c %g "$CTL")" "$NFSCACHECTL" -s "$CTL" flush > "$T_TMP/g.out" 2>&1
    ok $? "uid 1000 with the socket's group as a supplementary group may flush" ||
        diag "$(cat "$T_TMP/g.out")"
fi
done_testing
