#!/bin/bash
# 07-tshark: a client session through nfscached (mount, list, upload,
# download, refused calls, calls that fail) captured on the proxy's port and
# decoded by tshark: NFS and MOUNT are decoded, every call gets its reply,
# and no packet is malformed or carries an error-level expert note.
# (libnfs-utils has no mkdir or rm: 09-kclient captures the kernel client's
# MKDIR, RMDIR, REMOVE, RENAME, LINK, SYMLINK, SETATTR and COMMIT the same way.)
. "$(dirname "$0")/../lib.sh"
command -v tshark >/dev/null || fail_or_skip "tshark is not installed"
setup

PORTS=$PORT
[ -n "${PORT_MNT:-}" ] && [ "$PORT_MNT" != "$PORT" ] && PORTS="$PORT $PORT_MNT"
FILTER= DECODE=()
for p in $PORTS; do
    FILTER="${FILTER:+$FILTER or }tcp port $p"
    DECODE+=(-d "tcp.port==$p,rpc")
done
CAP=$T_TMP/session.pcapng

# count FILTER: packets that match the display filter
count() { tshark -r "$CAP" "${DECODE[@]}" -Y "$1" 2>/dev/null | wc -l; }

# capture N: capture a client session into $CAP (attempt N).  A capture
# that misses a segment (dumpcap falling behind on a busy machine) cannot
# pair calls with replies: the session is captured once more.
capture() {
    rm -f "$CAP" "$EXPORT_DIR/up"
    tshark -q -i lo -B 64 -f "$FILTER" -w "$CAP" </dev/null >/dev/null 2>"$T_TMP/tshark.err" &
    TSHARK_PID=$!
    track "$TSHARK_PID"
    for ((i = 0; i < 100; i++)); do
        grep -q 'Capturing on' "$T_TMP/tshark.err" && break
        sleep 0.1
    done
    grep -q 'Capturing on' "$T_TMP/tshark.err"
    ok $? "tshark captures on lo ($FILTER), attempt $1" || fail_or_skip "tshark: $(cat "$T_TMP/tshark.err")"
    sleep 0.3

    head -c $((3 << 20)) /dev/urandom > "$T_TMP/up"
    echo "some text" > "$EXPORT_DIR/down"
    echo "root only" > "$EXPORT_DIR/secret"
    chmod 0600 "$EXPORT_DIR/secret"
    nfs_ls "$(proxy_url)" >/dev/null
    ok $? "session: nfs-ls"
    nfs_cp "$T_TMP/up" "$(proxy_url up)" >/dev/null
    ok $? "session: nfs-cp upload"
    nfs_cp "$(proxy_url up)" "$T_TMP/up.back" >/dev/null && cmp -s "$T_TMP/up" "$T_TMP/up.back"
    ok $? "session: nfs-cp download"
    is "$(nfs_cat "$(proxy_url down)")" "some text" "session: nfs-cat"
    nfs_cp "$T_TMP/up" "$(proxy_url up)" >/dev/null 2>&1
    is $? 10 "session: nfs-cp onto an existing file fails (NFS3ERR_EXIST)"
    nfs_cat "$(proxy_url secret 'uid=1000&gid=1000')" >/dev/null 2>&1
    is $? 10 "session: nfs-cat of a 0600 root file as uid 1000 fails"
    nfs_ls "$(proxy_url missing)" >/dev/null 2>&1
    rc=$?
    [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ]
    ok $? "session: nfs-ls of a missing directory fails (status $rc)"

    sleep 0.5
    kill -INT "$TSHARK_PID"
    { wait "$TSHARK_PID"; } 2>/dev/null
}
capture 1
lost=$(count 'tcp.analysis.lost_segment || tcp.analysis.ack_lost_segment')
if [ "$lost" != 0 ]; then
    diag "the capture missed $lost segment(s): capturing the session again"
    capture 2
fi


num_ok "$(count mount)" -ge 2 "MOUNT packets decoded"
num_ok "$(count nfs)" -ge 20 "NFS packets decoded"
for proc in 3:LOOKUP 6:READ 7:WRITE 8:CREATE 17:READDIRPLUS 19:FSINFO; do
    num_ok "$(count "nfs.procedure_v3 == ${proc%%:*}")" -ge 2 "${proc#*:} calls and replies decoded"
done
types=$(tshark -r "$CAP" "${DECODE[@]}" -Y rpc -T fields -e rpc.msgtyp 2>/dev/null | tr ',' '\n')
calls=$(grep -cx 0 <<<"$types") replies=$(grep -cx 1 <<<"$types")
is "$replies" "$calls" "every RPC call ($calls) has a reply"
bad=$(count '_ws.malformed || _ws.expert.severity >= "error"')
is "$bad" 0 "no malformed packet, no error-level expert info" ||
    diag "$(tshark -r "$CAP" "${DECODE[@]}" -Y '_ws.malformed || _ws.expert.severity >= "error"' 2>/dev/null | head -n 10)"
lost=$(count 'tcp.analysis.lost_segment || tcp.analysis.ack_lost_segment')
is "$lost" 0 "the capture lost no segment"
if [ "$T_FAILED" != 0 ]; then
    cp "$CAP" /tmp/nfscached-07-tshark.pcapng && diag "capture kept: /tmp/nfscached-07-tshark.pcapng"
fi
done_testing
