# tests/lib/upstream.sh: the NFS upstream of the test rigs, nfs-ganesha 4.3
# with FSAL VFS on loopback, and libnfs URLs (bash).
#
# Definitions only: sourcing this file starts nothing and writes nothing.
# Uses tests/lib/proc.sh. The upstream:
#   T_TMP/ganesha/     its configuration, logs and recovery directory
#   EXPORT_DIR         the directory it exports as /export
#   UP_HOST            the address it binds and is reached at (127.0.0.1)
#   UP_NFS_PORT, UP_MNT_PORT   its NFS and MOUNT ports (picked when empty)
#   GANESHA_PID        set while it runs
#   GANESHA_PROTOCOLS  NFS versions it serves ("3"; "3, 4" adds NFSv4)
#   GANESHA_EXPORTS    EXPORT blocks it serves besides /export (ganesha_export)
: "${UP_HOST:=127.0.0.1}"
: "${GANESHA_PROTOCOLS:=3}"

# url_at HOST NFSPORT MNTPORT [PATH [QUERY]]: a libnfs URL of /export[/PATH].
url_at() {
    echo "nfs://$1/export${4:+/$4}?version=3&nfsport=$2&mountport=$3${5:+&$5}"
}
# url NFSPORT MNTPORT [PATH [QUERY]]: the same on 127.0.0.1
url() { url_at 127.0.0.1 "$@"; }
direct_url() { url_at "$UP_HOST" "$UP_NFS_PORT" "$UP_MNT_PORT" "$@"; }

# wait_serving PID URL SECONDS: until an nfs-ls of URL succeeds while PID
# runs; 1 when PID exits or SECONDS pass first.
wait_serving() {
    local deadline=$((SECONDS + $3))
    while [ "$SECONDS" -lt "$deadline" ] && kill -0 "$1" 2>/dev/null; do
        timeout 5 nfs-ls "$2" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

# pick_ports: sets UP_NFS_PORT and UP_MNT_PORT to two free ports.
pick_ports() { pick_pair UP_NFS_PORT && UP_MNT_PORT=$((UP_NFS_PORT + 1)); }

# ganesha_core DIR ADDR NFS_PORT MNT_PORT [PLUGINS_DIR]: the server blocks of
# a ganesha.conf: NFS (GANESHA_PROTOCOLS) and MOUNT over TCP on ADDR, no NLM,
# no Kerberos, no grace period; recovery state in DIR/recov; FSAL modules
# from PLUGINS_DIR (default: ganesha's own).
ganesha_core() {
    cat <<EOC
NFS_CORE_PARAM {
    Bind_addr = $2;
    NFS_Port = $3;
    MNT_Port = $4;
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
    Protocols = $GANESHA_PROTOCOLS;${5:+
    Plugins_Dir = \"$5\";}
    mount_path_pseudo = true;
}
NFSv4 {
    Graceless = true;
    RecoveryBackend = fs;
    RecoveryRoot = "$1/recov";
}
NFS_KRB5 { Active_krb5 = false; }
EOC
}

# ganesha_export ID PATH PSEUDO [FSID [FSAL]]: an EXPORT block, read-write,
# no root squash, attributes never cached (edits made in PATH are seen at
# once). FSID: a Filesystem_id of its own, e.g. 4242.4242; FSAL: the FSAL
# block (default FSAL VFS).
ganesha_export() {
    local fsal='FSAL { Name = VFS; }'
    [ -n "${5:-}" ] && fsal=$5
    cat <<EOC
EXPORT {
    Export_Id = $1;
    Path = "$2";
    Pseudo = $3;${4:+
    Filesystem_id = $4;}
    Access_Type = RW;
    Squash = no_root_squash;
    SecType = sys;
    Protocols = $GANESHA_PROTOCOLS;
    Transports = TCP;
    Attr_Expiration_Time = 0;
    $fsal
}
EOC
}

# write_ganesha_conf: T_TMP/ganesha/ganesha.conf of the upstream.
write_ganesha_conf() {
    local d=$T_TMP/ganesha
    mkdir -p "$d/recov"
    {
        ganesha_core "$d" "$UP_HOST" "$UP_NFS_PORT" "$UP_MNT_PORT"
        echo 'MDCACHE { Use_Getattr_Directory_Invalidation = true; }'
        ganesha_export 1 "$EXPORT_DIR" /export
        [ -n "${GANESHA_EXPORTS:-}" ] && echo "$GANESHA_EXPORTS"
    } > "$d/ganesha.conf"
}

# ganesha_spawn DIR: runs ganesha.nfsd on DIR/ganesha.conf in the background
# in a session of its own, logs in DIR; its PID is then in $!.
ganesha_spawn() {
    setsid ganesha.nfsd -F -f "$1/ganesha.conf" -L "$1/ganesha.log" -p "$1/ganesha.pid" \
        -N NIV_EVENT </dev/null >>"$1/ganesha.out" 2>&1 &
}

# start_upstream: starts ganesha (on the ports of the previous start, if
# any) and waits until an nfs-ls through it succeeds. 0 when serving; else 1
# with the reason on stderr.
start_upstream() {
    command -v ganesha.nfsd >/dev/null || { echo "ganesha.nfsd not installed" >&2; return 1; }
    ensure_rpcbind || { echo "no rpcbind for ganesha to register with" >&2; return 1; }
    [ -n "${UP_NFS_PORT:-}" ] || pick_ports || { echo "no free ports for ganesha" >&2; return 1; }
    write_ganesha_conf
    ganesha_spawn "$T_TMP/ganesha"
    GANESHA_PID=$!
    disown "$GANESHA_PID"       # no job notice when it is killed on purpose
    # 40 s: a busy machine (two tests writing at once) slows its start down
    wait_serving "$GANESHA_PID" "$(direct_url)" 40 && return 0
    echo "ganesha did not start serving on $UP_HOST:$UP_NFS_PORT within 40 s" >&2
    return 1
}

# stop_upstream [SIGNAL]: SIGTERM (SIGKILL after 5 s), or SIGNAL at once.
stop_upstream() {
    [ -n "${GANESHA_PID:-}" ] || return 0
    [ -n "${1:-}" ] && kill "-$1" "$GANESHA_PID" 2>/dev/null
    stop_pid "$GANESHA_PID" 5
    GANESHA_PID=
}
