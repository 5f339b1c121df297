#!/bin/bash
# 05-drc: the duplicate request cache.  A REMOVE answered NFS3_OK and then
# retransmitted byte for byte with the same XID, on the same connection and
# then on a new one, is answered NFS3_OK again from the first reply (not
# NFS3ERR_NOENT from running it twice): rpc.drc.hits rises by exactly the
# number of retransmissions and the upstream sees one REMOVE.  The same XID
# with other arguments, and the same arguments with another XID, run anew.
. "$(dirname "$0")/../lib.sh"
setup

RPC_LIMIT=30 RPC_TIMEOUT=10
direct=${NFSCACHED_E2E_DIRECT:-0}
XID=0x5eed$(printf '%04x' $((RANDOM % 65536)))
NAME=drc-victim

# counter NAME: a counter of the daemon, or "-" without one
counter() { [ "$direct" = 1 ] && { echo -; return; }; stat_value "$1" || echo "?"; }

rpc mnt > "$T_TMP/mnt.out"
is "$(val "$T_TMP/mnt.out" mount_status)" 0 "MNT /export through the proxy"
FH=$(val "$T_TMP/mnt.out" fh)
[ -n "$FH" ] || fail_or_skip "no root file handle"

rpc create "$FH" "$NAME" > "$T_TMP/create.out"
is "$(val "$T_TMP/create.out" nfs_status)" NFS3_OK "CREATE $NAME (UNCHECKED)"
[ -f "$EXPORT_DIR/$NAME" ]
ok $? "$NAME exists in the export directory"

hits0=$(counter rpc.drc.hits)
up0=$(counter upstream.calls.REMOVE)

# the REMOVE, and the same bytes again at once on the same connection
rpc remove "$FH" "$NAME" --xid "$XID" --repeat 2 --save "$T_TMP/remove.rec" \
    > "$T_TMP/remove.out"
ok $? "REMOVE with xid $XID sent twice on one connection" || diag "$(cat "$T_TMP/remove.out")"
is "$(val "$T_TMP/remove.out" xid)" "$XID" "the reply carries xid $XID"
is "$(val "$T_TMP/remove.out" nfs_status)" NFS3_OK "REMOVE: NFS3_OK"
[ ! -e "$EXPORT_DIR/$NAME" ]
ok $? "$NAME is gone from the export directory"
first_sha=$(val "$T_TMP/remove.out" reply_sha1)
if [ "$direct" = 1 ]; then
    diag "upstream's own answer to the retransmission: $(val "$T_TMP/remove.out" nfs_status.2)"
else
    is "$(val "$T_TMP/remove.out" nfs_status.2)" NFS3_OK \
        "retransmission on the same connection: NFS3_OK again, not NFS3ERR_NOENT"
    is "$(val "$T_TMP/remove.out" xid.2)" "$XID" "retransmission reply carries the same xid"
    is "$(val "$T_TMP/remove.out" reply_sha1.2)" "$first_sha" \
        "retransmission reply is byte for byte the first reply"
    is "$(counter rpc.drc.hits)" "$((hits0 + 1))" "rpc.drc.hits rose by exactly 1"
    is "$(counter upstream.calls.REMOVE)" "$((up0 + 1))" "the upstream saw one REMOVE"
fi

# the same record once more, on a new connection (a reconnecting client)
rpc send "$T_TMP/remove.rec" > "$T_TMP/resend.out"
ok $? "the same REMOVE bytes sent on a new connection" || diag "$(cat "$T_TMP/resend.out")"
if [ "$direct" = 1 ]; then
    diag "upstream's own answer on a new connection: $(val "$T_TMP/resend.out" nfs_status)"
else
    is "$(val "$T_TMP/resend.out" nfs_status)" NFS3_OK \
        "retransmission on a new connection: NFS3_OK again, not NFS3ERR_NOENT"
    is "$(val "$T_TMP/resend.out" reply_sha1)" "$first_sha" \
        "reply on the new connection is byte for byte the first reply"
    is "$(counter rpc.drc.hits)" "$((hits0 + 2))" "rpc.drc.hits rose by exactly 2 in all"
    is "$(counter upstream.calls.REMOVE)" "$((up0 + 1))" "the upstream still saw one REMOVE"
fi

# the same arguments under a new XID are a new call: it runs, and finds nothing
rpc remove "$FH" "$NAME" > "$T_TMP/again.out"
is "$(val "$T_TMP/again.out" nfs_status)" NFS3ERR_NOENT "REMOVE with another xid: NFS3ERR_NOENT"
# the same XID with other arguments is not a retransmission either
rpc remove "$FH" "$NAME-other" --xid "$XID" > "$T_TMP/other.out"
is "$(val "$T_TMP/other.out" nfs_status)" NFS3ERR_NOENT \
    "same xid, other name: runs (NFS3ERR_NOENT), not replayed"
if [ "$direct" != 1 ]; then
    is "$(counter rpc.drc.hits)" "$((hits0 + 2))" "rpc.drc.hits unchanged by new calls"
    is "$(counter upstream.calls.REMOVE)" "$((up0 + 3))" "the upstream saw the two new REMOVEs"
fi
done_testing
