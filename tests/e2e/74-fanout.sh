#!/bin/bash
# 74-fanout: nfscached in front of another nfscached (a second tier, the
# fan-out layout): clients -> outer nfscached -> inner nfscached -> ganesha.
# Both tiers write back (commit = upstream), the outer with the namespace
# cache on; acregmin = acregmax = 1 at both.
#   a) round trip  a 16 MiB file copied in through the outer tier (nfs-cp:
#                  WRITEs and a COMMIT at close): when the copy returns the
#                  export holds it (the COMMIT went through both tiers);
#                  read back through the outer tier it is the source
#   b) warm read   the file read twice through the outer tier: the second
#                  read costs the inner tier no READ at all (and the origin
#                  none), the first costs the origin no READ either (the
#                  inner tier kept what was written through it)
#   c) verifiers   3,000 scattered 1 KiB UNSTABLE WRITEs to the outer tier
#                  (no COMMIT: its write-back runs on `flush`); while the
#                  outer tier writes them back, the inner tier is killed
#                  (kill -9) and restarted on its port and cache: its new
#                  write verifier makes the outer tier send the bytes again
#                  (logged); the outer tier's COMMIT then answers OK with
#                  the verifier of the WRITEs, and the export holds the
#                  model exactly
#   d) coherency   a file changed in the export directly is seen through
#                  both tiers within their TTLs (two hops of acregmax)
TEST_TIMEOUT=${TEST_TIMEOUT:-240}
. "$(dirname "$0")/../lib.sh"
needs_daemon "two tiers of nfscached"
needs_own_upstream
command -v python3 >/dev/null || fail_or_skip "python3 is not installed"

MIB=$((1024 * 1024))
TIER_OPTS=(-o cache.write_mode=writeback -o cache.dirty_expire_ms=600000
           -o cache.acregmin=1 -o cache.acregmax=1 -o cache.acdirmin=1 -o cache.acdirmax=1)
# the inner tier listens on a fixed port: it is restarted on it in c)
pick_pair INNER_PORT || fail_or_skip "no free port pair"
setup "${TIER_OPTS[@]}" -o server.listen=127.0.0.1:$INNER_PORT
INNER_CTL=$CTL

# ---- the outer tier ----------------------------------------------------------
OUTER_CTL=$T_TMP/outer.sock
OUTER_DIR=$T_TMP/outer
mkdir -p "$OUTER_DIR/cache"
cat > "$OUTER_DIR/nfscached.conf" <<EOC
[server]
listen = 127.0.0.1:0
secure = no
allow = 127.0.0.0/8
[upstream]
url = nfs://127.0.0.1/export?nfsport=$INNER_PORT&mountport=$INNER_PORT
[cache]
dir = $OUTER_DIR/cache
metadata = yes
[control]
socket = $OUTER_CTL
[log]
level = info
EOC
"$NFSCACHED" -f -c "$OUTER_DIR/nfscached.conf" "${TIER_OPTS[@]}" </dev/null \
    >>"$OUTER_DIR/nfscached.log" 2>&1 &
OUTER_PID=$!
track "$OUTER_PID"
octl() { timeout "$CTL_TIMEOUT" "$NFSCACHECTL" -s "$OUTER_CTL" "$@"; }
ictl() { timeout "$CTL_TIMEOUT" "$NFSCACHECTL" -s "$INNER_CTL" "$@"; }
OUTER_PORT=
for _ in $(seq 1 600); do
    OUTER_PORT=$(octl status 2>/dev/null | awk '$1 == "listen" { sub(/.*:/, "", $2); print $2 }')
    case $OUTER_PORT in ''|0) sleep 0.05 ;; *) octl status | grep -qx 'upstream up' && break ;; esac
done
octl status 2>/dev/null | grep -qx 'upstream up'
ok $? "the outer tier is up in front of the inner one" ||
    { diag "$(tail -n 5 "$OUTER_DIR/nfscached.log")"; done_testing; }
case $OUTER_PORT in ''|0) done_testing ;; esac
# every client of this test goes through the outer tier
PORT=$OUTER_PORT
outer_url() { url "$OUTER_PORT" "$OUTER_PORT" "$@"; }

# counters of one tier: osnap/isnap TAG, then sv TAG NAME / d A B NAME
osnap() { octl stats > "$T_TMP/$1.stats"; }
isnap() { ictl stats > "$T_TMP/$1.stats"; }

# ---- a) round trip -----------------------------------------------------------
head -c $((16 * MIB)) /dev/urandom > "$T_TMP/big.src"
nfs_cp "$T_TMP/big.src" "$(outer_url big)" > "$T_TMP/cp.out" 2>&1
ok $? "a) nfs-cp of 16 MiB into the outer tier" || diag "$(tail -n 3 "$T_TMP/cp.out")"
is "$(md5 "$EXPORT_DIR/big" 2>/dev/null)" "$(md5 "$T_TMP/big.src")" \
    "a) when the copy returns (its COMMIT answered) the export holds the file"
isnap b0
osnap ob0
is "$(nfs_cat "$(outer_url big)" | md5sum | cut -d' ' -f1)" "$(md5 "$T_TMP/big.src")" \
    "a) read back through the outer tier, the file is the source"
isnap b1
osnap ob1

# ---- b) warm read ------------------------------------------------------------
is "$(d b0 b1 upstream.calls.READ)" 0 \
    "b) the first read through the outer tier sends the origin no READ (the inner tier kept the written bytes)"
is "$(nfs_cat "$(outer_url big)" | md5sum | cut -d' ' -f1)" "$(md5 "$T_TMP/big.src")" \
    "b) the second read through the outer tier is the source"
isnap b2
osnap ob2
is "$(d b1 b2 nfs3.calls.READ)" 0 "b) the second read sends the inner tier no READ"
is "$(d b1 b2 upstream.calls.READ)" 0 "b) ... and the origin none"
num_ok "$(d ob1 ob2 cache.read.bytes_local)" -ge $((16 * MIB)) \
    "b) the outer tier answered the 16 MiB itself"

# ---- c) verifiers ------------------------------------------------------------
head -c $((16 * MIB)) /dev/urandom > "$EXPORT_DIR/w1"
cp "$EXPORT_DIR/w1" "$T_TMP/w1.init"
FH=$(fh_of w1)
[ -n "$FH" ] || { ok 0 "c) LOOKUP of w1 through the outer tier"; done_testing; }
rpc proc ACCESS "$FH" 0x3f > "$T_TMP/access.out" 2>&1
RPC_LIMIT=200 rpc w1 "$FH" --size $((16 * MIB)) --writes 3000 --reads 0 --block 1024 \
    --seed 7 --depth 16 --model "$T_TMP/w1.init" --model-out "$T_TMP/w1.model" \
    --no-commit > "$T_TMP/w1.out" 2>&1
w() { val "$T_TMP/w1.out" "$1"; }
is "$(w writes) $(w write_errors)" "3000 0" "c) 3,000 UNSTABLE WRITEs taken by the outer tier" ||
    diag "$(tail -n 5 "$T_TMP/w1.out")"
isnap c0
octl flush > "$T_TMP/flush.out" 2>&1 &
FLUSH_PID=$!
track "$FLUSH_PID"
# kill the inner tier once it has taken some of the outer tier's WRITEs
killed=0
for _ in $(seq 1 400); do
    n=$(ictl stats 2>/dev/null | awk '$1 == "nfs3.calls.WRITE" { print $2 }')
    if [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -gt "$(sv c0 nfs3.calls.WRITE)" ]; then
        kill -9 "$NFSCACHED_PID" && killed=1
        break
    fi
    sleep 0.01
done
is "$killed" 1 "c) the inner tier was killed while the outer tier wrote back"
wait "$NFSCACHED_PID" 2>/dev/null
NFSCACHED_PID=
start_nfscached "${TIER_OPTS[@]}" -o server.listen=127.0.0.1:$INNER_PORT 2>"$T_TMP/restart.err" ||
    diag "$(cat "$T_TMP/restart.err")"
PORT=$OUTER_PORT
wait "$FLUSH_PID"
ok $? "c) the outer tier's flush completed against the restarted inner tier" ||
    diag "$(cat "$T_TMP/flush.out")"
grep -q "verifier changed: writing again" "$OUTER_DIR/nfscached.log"
ok $? "c) the outer tier saw the inner tier's new verifier and wrote the bytes again"
rpc commit "$FH" > "$T_TMP/commit.out" 2>&1
is "$(val "$T_TMP/commit.out" nfs_status)" NFS3_OK "c) COMMIT through the outer tier: OK"
is "$(val "$T_TMP/commit.out" verf)" "$(w verf)" "c) ... with the verifier its WRITEs got"
ictl flush > /dev/null 2>&1
cmp -s "$EXPORT_DIR/w1" "$T_TMP/w1.model"
ok $? "c) the export holds every byte written through both tiers"

# ---- d) coherency ------------------------------------------------------------
printf 'first version\n' > "$EXPORT_DIR/co"
is "$(nfs_cat "$(outer_url co)")" "first version" "d) a small file read through both tiers"
sleep 1.1
printf 'other version\n' > "$EXPORT_DIR/co"
touch -d '+1 minute' "$EXPORT_DIR/co"
sleep 2.5
is "$(nfs_cat "$(outer_url co)")" "other version" \
    "d) changed in the export, it is seen through both tiers within their TTLs"

no_sanitizer_report "$OUTER_DIR/nfscached.log"
ok $? "no sanitizer report from the outer tier"
stop_pid "$OUTER_PID" 60
is $? 0 "the outer tier stops cleanly"
done_testing
