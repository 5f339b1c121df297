#!/bin/bash
# 03-credentials: the client's AUTH_SYS uid and gid go upstream with each
# call. A file created as 1000:1000 through nfscached is owned by 1000:1000 on
# disk; root-only files and directories are refused to uid 1000 with the
# upstream's own errors, also after root has read them through the proxy
# (a cached copy is not served to a credential the upstream refuses).
. "$(dirname "$0")/../lib.sh"
setup

U1000='uid=1000&gid=1000'
chmod 1777 "$EXPORT_DIR"
echo "root only" > "$EXPORT_DIR/secret"
chmod 0700 "$EXPORT_DIR/secret"
mkdir "$EXPORT_DIR/sdir"
echo "inside" > "$EXPORT_DIR/sdir/f"
chmod 0700 "$EXPORT_DIR/sdir"
echo "group" > "$EXPORT_DIR/grp"
chgrp 1000 "$EXPORT_DIR/grp"
chmod 0640 "$EXPORT_DIR/grp"
echo "new file" > "$T_TMP/new"

nfs_cp "$T_TMP/new" "$(proxy_url new "$U1000")" >/dev/null
ok $? "nfs-cp as 1000:1000 creates a file through the proxy"
is "$(stat -c %u:%g "$EXPORT_DIR/new" 2>&1)" 1000:1000 "the file is owned by 1000:1000 on disk"
is "$(md5 "$EXPORT_DIR/new")" "$(md5 "$T_TMP/new")" "and holds the bytes written"

is "$(nfs_cat "$(proxy_url secret)")" "root only" "root reads the 0700 file through the proxy"

# client cat|ls|cp URL: runs one client call, all its output to stdout.
client() {
    case $1 in
        cat) nfs_cat "$2" ;;
        ls)  nfs_ls "$2" ;;
        cp)  nfs_cp "$T_TMP/new" "$2" ;;
    esac 2>&1
}

# refused cat|ls|cp PATH QUERY DESCRIPTION: the call fails through the proxy
# with permission denied, and with the same message as from the upstream.
refused() {
    local out
    client "$1" "$(proxy_url "$2" "$3")" > "$T_TMP/proxy.out"
    is "$?" 10 "$4: refused through the proxy"
    out=$(grep -m 1 -E 'ACCESS denied|NFS3ERR_ACCES' "$T_TMP/proxy.out")
    ok $? "$4: permission denied ${out:+($out)}" || diag "$(head -n 3 "$T_TMP/proxy.out")"
    [ -n "$UP_NFS_PORT" ] || return 0
    client "$1" "$(direct_url "$2" "$3")" > "$T_TMP/direct.out"
    is "$(sed 's/nfsport=[0-9]*&mountport=[0-9]*//' "$T_TMP/proxy.out")" \
       "$(sed 's/nfsport=[0-9]*&mountport=[0-9]*//' "$T_TMP/direct.out")" \
       "$4: same message as directly from the upstream"
}

refused cat secret "$U1000" "uid 1000 reads a cached 0700 root file"
refused ls sdir "$U1000" "uid 1000 lists a 0700 root directory"
refused cat sdir/f "$U1000" "uid 1000 looks up in a 0700 root directory"
refused cp sdir/g "$U1000" "uid 1000 creates in a 0700 root directory"
[ ! -e "$EXPORT_DIR/sdir/g" ]
ok $? "no file was created in the 0700 directory"

is "$(nfs_cat "$(proxy_url grp 'uid=1001&gid=1000')")" group "gid 1000 reads a 0640 file of group 1000"
refused cat grp 'uid=1001&gid=1001' "gid 1001 reads a 0640 file of group 1000"

stat_ok nfs3.calls.ACCESS -ge 1
stat_ok nfs3.calls.CREATE -ge 1
done_testing
