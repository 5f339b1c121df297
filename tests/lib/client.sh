# tests/lib/client.sh: the clients of the end-to-end tests (bash):
# libnfs-utils under timeout, tests/rpc.py through nfscached or to the
# upstream, and readers of their "KEY: value" output.
#
# Definitions only: sourcing this file runs nothing. Uses PORT (PORT_MNT,
# when MOUNT is elsewhere), UP_NFS_PORT, UP_MNT_PORT, top_srcdir, T_TMP;
# cat_md5 uses proxy_url (tests/lib/daemon.sh). Seconds allowed to one nfs-*
# call, one rpc.py run, and to rpc.py for one reply:
: "${CLIENT_TIMEOUT:=60}"
: "${RPC_LIMIT:=60}"
: "${RPC_TIMEOUT:=20}"

nfs_ls()  { timeout -k 5 "$CLIENT_TIMEOUT" nfs-ls "$@"; }
nfs_cat() { timeout -k 5 "$CLIENT_TIMEOUT" nfs-cat "$@"; }
nfs_cp()  { timeout -k 5 "$CLIENT_TIMEOUT" nfs-cp "$@"; }

md5() { md5sum < "$1" | cut -d' ' -f1; }

# range_md5 FILE OFFSET COUNT: md5 of COUNT bytes of FILE at OFFSET (fewer at EOF)
range_md5() {
    dd if="$1" bs=64k iflag=skip_bytes,count_bytes skip="$2" count="$3" status=none | md5sum |
        cut -d' ' -f1
}

# cat_md5 NAME: md5 of /export/NAME read whole through nfscached (nfs-cat)
cat_md5() { nfs_cat "$(proxy_url "$1")" | md5sum | cut -d' ' -f1; }

# rpc ARGS...: tests/rpc.py through nfscached; up ARGS...: to the upstream
# (RPC_LIMIT, RPC_TIMEOUT may be set for one call: `RPC_LIMIT=200 rpc ...`)
rpc() {
    timeout -k 5 "$RPC_LIMIT" python3 "$top_srcdir/tests/rpc.py" --port "$PORT" \
        --mount-port "${PORT_MNT:-$PORT}" --timeout "$RPC_TIMEOUT" "$@"
}
up() {
    timeout -k 5 "$RPC_LIMIT" python3 "$top_srcdir/tests/rpc.py" --port "$UP_NFS_PORT" \
        --mount-port "$UP_MNT_PORT" --timeout "$RPC_TIMEOUT" "$@"
}

# val FILE KEY: the value of a "KEY: value" line in FILE (rpc.py's output)
val() { awk -v k="$2:" '$1 == k { sub(/^[^:]*: ?/, ""); print; exit }' "$1"; }
# rv KEY: the value of KEY in the last call's output, T_TMP/r.out
rv() { val "$T_TMP/r.out" "$1"; }

# fh_of NAME: the file handle of NAME in the export root (MNT once, into
# FH_ROOT, then LOOKUP, through nfscached)
fh_of() {
    if [ -z "${FH_ROOT:-}" ]; then
        rpc mnt > "$T_TMP/mnt.out"
        FH_ROOT=$(val "$T_TMP/mnt.out" fh)
    fi
    rpc lookup "$FH_ROOT" "$1" > "$T_TMP/lookup.out"
    val "$T_TMP/lookup.out" fh
}

# rread TAG FH OFFSET COUNT [RPC OPTION...]: READ through nfscached; output
# in r.out and TAG.out, the data in TAG.data
rread() {
    rpc "${@:5}" read "$2" "$3" "$4" --out "$T_TMP/$1.data" > "$T_TMP/r.out" 2>&1 ||
        diag "READ $3 $4: $(tail -n 2 "$T_TMP/r.out")"
    cp "$T_TMP/r.out" "$T_TMP/$1.out"
}

# checks FILE: the assertions of an inline python script (tests/nsrpc.py
# Checks) as TAP: lines "CHECK is DESC GOT WANT", "CHECK num DESC GOT OP
# WANT", "CHECK ok DESC STATUS" and "DIAG TEXT", fields separated by \x1f;
# other lines are ignored.  1 when any of them failed.
checks() {
    local tag kind desc a b c rc=0
    while IFS=$'\x1f' read -r tag kind desc a b c; do
        case $tag in
            CHECK)
                case $kind in
                    is)  is "$a" "$b" "$desc" || rc=1 ;;
                    num) num_ok "$a" "$b" "$c" "$desc" || rc=1 ;;
                    ok)  ok "$a" "$desc" || rc=1 ;;
                esac ;;
            DIAG) diag "$kind" ;;
        esac
    done < "$1"
    return "$rc"
}
