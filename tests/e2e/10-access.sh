#!/bin/bash
# 10-access: who may connect, and as whom calls go upstream.  Each case runs
# its own nfscached in front of the same upstream:
#   server.secure = yes    a client on an unreserved source port is closed
#                          without a reply (conn.refused counts it); one on a
#                          reserved port (< 1024) is served
#   server.allow           a loopback client outside the list is closed; a
#                          listed address is served
#   server.squash          root (uid 0 -> 65534, gid 0 -> 65534), none, all:
#                          the owner of a file CREATEd through the proxy, on disk
#   AUTH_NONE              with server.auth_none = nobody, calls run as
#                          65534:65534 (by default they are refused: 79-limits)
#   upstream.exports       MNT outside the list is MNT3ERR_ACCES and EXPORT
#                          shows only listed exports
TEST_TIMEOUT=${TEST_TIMEOUT:-60}
. "$(dirname "$0")/../lib.sh"
needs_own_upstream
needs_daemon "server options of nfscached"
setup -o server.secure=yes
OPTS="server.secure=yes"
NOBODY=65534

RPC_LIMIT=30 RPC_TIMEOUT=5      # rpc, up: 30 s a run, 5 s for a reply

# restart OPTION...: stop the daemon (it must exit cleanly) and start a new
# one with `-o OPTION` for each OPTION.
restart() {
    local args=() o
    stop_nfscached
    ok $? "nfscached ($OPTS) exits cleanly"
    for o in "$@"; do args+=(-o "$o"); done
    OPTS="$*"
    if ! start_nfscached "${args[@]}" 2>"$T_TMP/start.err"; then
        ok 1 "nfscached starts with $OPTS"
        diag "$(cat "$T_TMP/start.err")"
        done_testing
    fi
}

# probe NAME [RPC OPTION...]: connect, call NULL; sets P_RESULT and P_PORT.
probe() {
    local out=$T_TMP/probe-$1.out
    shift
    rpc "$@" probe > "$out" 2>&1 || diag "$(cat "$out")"
    P_RESULT=$(val "$out" result)
    P_PORT=$(val "$out" src_port)
}

# ---- server.secure = yes -----------------------------------------------
refused0=$(stat_value conn.refused)
probe unreserved
num_ok "$P_PORT" -ge 1024 "secure: the first client's source port ($P_PORT) is unreserved"
is "$P_RESULT" closed "secure: unreserved source port: closed without a reply"
is "$(stat_value conn.refused)" $((refused0 + 1)) "secure: conn.refused rose by 1"
grep -q 'refused .*server.secure' "$T_TMP/nfscached.log"
ok $? "secure: the refusal is logged with its reason"

if [ "$(id -u)" = 0 ]; then
    probe reserved --src-port reserved
    num_ok "$P_PORT" -lt 1024 "secure: the second client's source port ($P_PORT) is reserved"
    is "$P_RESULT" "reply accepted SUCCESS" "secure: reserved source port: NULL answered"
    is "$(stat_value conn.refused)" $((refused0 + 1)) "secure: conn.refused unchanged"
else
    skip "secure: a client on a reserved port is served" "binding a port < 1024 needs root"
fi

# ---- server.allow --------------------------------------------------------
restart server.allow=10.0.0.0/8
refused0=$(stat_value conn.refused)
probe allow-lo
is "$P_RESULT" closed "allow 10.0.0.0/8: a 127.0.0.1 client is closed without a reply"
if [ "$(id -u)" = 0 ]; then
    probe allow-lo-reserved --src-port reserved
    is "$P_RESULT" closed "allow 10.0.0.0/8: also from a reserved port"
    want=$((refused0 + 2))
else
    want=$((refused0 + 1))
fi
is "$(stat_value conn.refused)" "$want" "allow 10.0.0.0/8: conn.refused counts each refusal"
grep -q 'refused .*server.allow' "$T_TMP/nfscached.log"
ok $? "allow 10.0.0.0/8: the refusal is logged with its reason"

restart "server.allow=10.0.0.0/8 127.0.0.2"
probe allow-listed --src-addr 127.0.0.2
is "$P_RESULT" "reply accepted SUCCESS" "allow 10.0.0.0/8 127.0.0.2: a 127.0.0.2 client is served"
probe allow-unlisted --src-addr 127.0.0.1
is "$P_RESULT" closed "allow 10.0.0.0/8 127.0.0.2: a 127.0.0.1 client is closed"
is "$(stat_value conn.refused)" 1 "allow 10.0.0.0/8 127.0.0.2: conn.refused 1"

# ---- server.squash and AUTH_NONE ----------------------------------------
chmod 1777 "$EXPORT_DIR"

# created NAME OWNER [RPC OPTION...]: CREATE NAME in the export root through
# the proxy with the credential the options give; the file must be owned by
# OWNER (uid:gid) on disk.
created() {
    local name=$1 want=$2 out=$T_TMP/create-$1.out
    shift 2
    rpc "$@" create "$ROOT" "$name" > "$out" 2>&1
    is "$(val "$out" nfs_status)" NFS3_OK "$OPTS: CREATE $name ($*)" || diag "$(cat "$out")"
    is "$(stat -c %u:%g "$EXPORT_DIR/$name" 2>&1)" "$want" "$OPTS: $name is owned by $want on disk"
}

restart server.squash=root server.auth_none=nobody
rpc mnt > "$T_TMP/mnt.out" 2>&1
is "$(val "$T_TMP/mnt.out" mount_status)" 0 "MNT /export through the proxy"
ROOT=$(val "$T_TMP/mnt.out" fh)
[ -n "$ROOT" ] || { ok 1 "a root file handle"; diag "$(cat "$T_TMP/mnt.out")"; done_testing; }
created sq-root-0 $NOBODY:$NOBODY --uid 0 --gid 0
created sq-root-1000 1000:1000 --uid 1000 --gid 1000
created sq-root-g0 1000:$NOBODY --uid 1000 --gid 0
created sq-root-none $NOBODY:$NOBODY --auth none

restart server.squash=none server.auth_none=nobody
created sq-none-0 0:0 --uid 0 --gid 0
created sq-none-1000 1000:1000 --uid 1000 --gid 1000
created sq-none-authnone $NOBODY:$NOBODY --auth none

restart server.squash=all
created sq-all-1000 $NOBODY:$NOBODY --uid 1000 --gid 1000
created sq-all-0 $NOBODY:$NOBODY --uid 0 --gid 0
stat_ok nfs3.calls.CREATE -eq 2

# ---- upstream.exports ----------------------------------------------------
up exports > "$T_TMP/exports-up.out" 2>&1
grep -qx 'export\.[0-9]*: /export.*' "$T_TMP/exports-up.out"
ok $? "the upstream itself lists /export in EXPORT" || diag "$(cat "$T_TMP/exports-up.out")"

restart upstream.exports=/other
rpc mnt > "$T_TMP/mnt-other.out" 2>&1
is "$(val "$T_TMP/mnt-other.out" mount_status)" 13 "exports=/other: MNT /export is MNT3ERR_ACCES"
is "$(val "$T_TMP/mnt-other.out" fh)" "" "exports=/other: no file handle"
rpc exports > "$T_TMP/exports-other.out" 2>&1
is "$(val "$T_TMP/exports-other.out" export_count)" 0 "exports=/other: EXPORT lists nothing" ||
    diag "$(cat "$T_TMP/exports-other.out")"
grep -q 'mount: /export refused: not in upstream.exports' "$T_TMP/nfscached.log"
ok $? "exports=/other: the refused MNT is logged"
stat_ok mount3.calls.MNT -eq 1
stat_ok mount3.calls.EXPORT -eq 1

restart upstream.exports=/export
rpc mnt > "$T_TMP/mnt-export.out" 2>&1
is "$(val "$T_TMP/mnt-export.out" mount_status)" 0 "exports=/export: MNT /export works"
is "$(val "$T_TMP/mnt-export.out" fh)" "$ROOT" "exports=/export: the upstream's root handle"
rpc exports > "$T_TMP/exports-export.out" 2>&1
is "$(grep -v '^export_count' "$T_TMP/exports-export.out")" \
   "$(grep -v '^export_count' "$T_TMP/exports-up.out")" \
   "exports=/export: EXPORT lists what the upstream lists"
done_testing
