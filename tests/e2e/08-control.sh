#!/bin/bash
# 08-control: nfscachectl. `status` reports the listening address the daemon
# logged and the upstream state; `stats` has the counters named in the design
# with values that follow the traffic; `stats --json` is one flat JSON object
# with the same names and values; `stats --prometheus` and `stats reset`
# work; a missing control socket is a clear error.
. "$(dirname "$0")/../lib.sh"
[ "${NFSCACHED_E2E_DIRECT:-0}" = 1 ] && fail_or_skip "tests the daemon's control socket"
setup

ctl status > "$T_TMP/status"
ok $? "nfscachectl status"
listen=$(awk '$1 == "listen" { print $2 }' "$T_TMP/status")
is "$listen" "127.0.0.1:$PORT" "status: listen address"
[ "$T_EXTERNAL" = 1 ] || { grep -qF "127.0.0.1:$PORT" "$T_TMP/nfscached.log"
    ok $? "the log names the same listening address"; }
grep -qx 'upstream up' "$T_TMP/status"
ok $? "status: upstream up"
for key in version 'uptime(_s)?'; do
    grep -qE "^$key [0-9]" "$T_TMP/status"
    ok $? "status: ${key%%(*}"
done

echo data > "$EXPORT_DIR/file"
nfs_ls "$(proxy_url)" >/dev/null && nfs_cat "$(proxy_url file)" >/dev/null
ok $? "traffic: nfs-ls and nfs-cat through the proxy"

ctl stats > "$T_TMP/text.stats"
ok $? "nfscachectl stats"
bad=$(grep -vE '^([A-Za-z0-9_.]+(\{le="(\+Inf|[0-9.]+)"\})? -?[0-9]+(\.[0-9]+)?|#.*|)$' "$T_TMP/text.stats")
is "$bad" "" "stats: every line is 'name value' (a histogram bucket 'name{le=\"BOUND\"} value')"
NFS3="NULL GETATTR SETATTR LOOKUP ACCESS READLINK READ WRITE CREATE MKDIR SYMLINK
      MKNOD REMOVE RMDIR RENAME LINK READDIR READDIRPLUS FSSTAT FSINFO PATHCONF COMMIT"
names=(upstream.errors upstream.reconnects rpc.drc.hits)
for p in $NFS3; do names+=("nfs3.calls.$p" "upstream.calls.$p"); done
for p in NULL MNT DUMP UMNT UMNTALL EXPORT; do names+=("mount3.calls.$p"); done
# the cache's counters come in groups: the read cache, write-back, culling
if grep -q '^cache\.' "$T_TMP/text.stats"; then
    names+=(cache.read.hits cache.read.partial_hits cache.read.misses
        cache.read.bytes_local cache.read.bytes_upstream cache.write.bytes
        cache.objects cache.bytes cache.invalidations cache.nospace
        backing.write.calls backing.write.bytes backing.read.calls)
fi
if grep -q '^cache\.\(dirty\|writeback\)\.' "$T_TMP/text.stats"; then
    names+=(cache.writeback.bytes cache.writeback.errors cache.dirty.bytes)
fi
if grep -q '^cache\.culled\.' "$T_TMP/text.stats"; then
    names+=(cache.culled.objects cache.culled.bytes)
fi
missing=$(for n in "${names[@]}"; do grep -q "^$n " "$T_TMP/text.stats" || echo "$n"; done)
is "$(echo $missing)" "" "stats: all ${#names[@]} counters of the design are reported"
is "$(sv text mount3.calls.MNT)" 2 "stats: mount3.calls.MNT counts the two mounts"
num_ok "$(sv text nfs3.calls.READDIRPLUS)" -ge 1 "stats: nfs3.calls.READDIRPLUS counts the listing"
num_ok "$(sv text nfs3.calls.READ)" -ge 1 "stats: nfs3.calls.READ counts the nfs-cat"
num_ok "$(sv text upstream.calls.READDIRPLUS)" -ge 1 "stats: upstream.calls.READDIRPLUS went upstream"
is "$(sv text nfs3.calls.MKNOD)" 0 "stats: nfs3.calls.MKNOD is 0"

ctl stats --json > "$T_TMP/stats.json"
ok $? "nfscachectl stats --json"
python3 -m json.tool "$T_TMP/stats.json" >/dev/null
ok $? "stats --json is valid JSON"
python3 - "$T_TMP/stats.json" "$T_TMP/text.stats" > "$T_TMP/json.diff" 2>&1 <<'PY'
import json, re, sys
obj = json.load(open(sys.argv[1]))
assert isinstance(obj, dict), "not an object"
obj = {k: v for k, v in obj.items() if not k.startswith("exports.")}   # `stats exports`
flat = [k for k, v in obj.items() if isinstance(v, (dict, list))]
assert not flat, "not flat: %s" % flat
text = dict(l.split(None, 1) for l in open(sys.argv[2]) if l.strip() and not l.startswith("#"))
# a histogram bucket NAME{le="BOUND"} is the member NAME.le.BOUND
text = {re.sub(r'\{le="([^"]+)"\}$', r'.le.\1', k): v for k, v in text.items()}
if set(obj) != set(text):
    sys.exit("only in json: %s; only in text: %s" % (sorted(set(obj) - set(text)), sorted(set(text) - set(obj))))
for k in text:
    if k.startswith(("nfs3.", "mount3.", "upstream.calls.", "upstream.rtt.")) and float(text[k]) != obj[k]:
        sys.exit("%s: text %s, json %s" % (k, text[k].strip(), obj[k]))
PY
ok $? "stats --json has the names and values of stats" || diag "$(cat "$T_TMP/json.diff")"

ctl stats --prometheus > "$T_TMP/stats.prom"
ok $? "nfscachectl stats --prometheus"
grep -qE '^nfscached_upstream_reconnects_total [0-9]+$' "$T_TMP/stats.prom"
ok $? "prometheus: nfscached_upstream_reconnects_total"

ctl stats reset >/dev/null
ok $? "nfscachectl stats reset"
is "$(stat_value nfs3.calls.READDIRPLUS)" 0 "stats reset zeroes nfs3.calls.READDIRPLUS"

timeout 10 "$NFSCACHECTL" -s "$T_TMP/no-such.sock" status > "$T_TMP/nosock.out" 2>&1
rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ]
ok $? "nfscachectl against a missing socket exits nonzero (status $rc)"
grep -qiE "no-such\.sock|No such file" "$T_TMP/nosock.out"
ok $? "and says why: $(head -n 1 "$T_TMP/nosock.out")"
ctl no-such-command > "$T_TMP/badcmd.out" 2>&1
rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ]
ok $? "an unknown command exits nonzero (status $rc)"
done_testing
