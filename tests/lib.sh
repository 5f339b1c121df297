# tests/lib.sh: shared helpers of the end-to-end tests (bash, TAP output).
#
# Sourced by tests/e2e/NN-*.sh. Gives each test a private temporary directory,
# an nfs-ganesha upstream on free loopback ports exporting $EXPORT_DIR as
# /export, an nfscached in front of it on an ephemeral port, TAP helpers, and
# an exit trap that stops only the processes started here, by PID.
#
# Environment:
#   top_srcdir, top_builddir  set by `make check` (default: this source tree)
#   NFSCACHED_REQUIRE_E2E=1   a missing prerequisite fails the test instead of
#                             skipping it (CI)
#   NFSCACHED_LOG_LEVEL       log.level of the daemon under test (default info)
#   NFSCACHED_KEEP_TMP=1      keep the temporary directory at exit
#   TEST_TIMEOUT              seconds before the whole test is aborted (280)
#   CLIENT_TIMEOUT            seconds allowed to one nfs-* client call (60)
#   NFSCACHED_PORT, NFSCACHED_CTL, NFSCACHED_EXPORT_DIR, UP_NFS_PORT, UP_MNT_PORT
#                             test a daemon that is already running (under gdb,
#                             say): its port, control socket, the upstream's
#                             export directory (use a scratch one) and ports.
#                             Tests that restart the upstream skip; each
#                             test starts with `nfscachectl stats reset`.
#   NFSCACHED_E2E_DIRECT=1    clients talk to the upstream itself, no daemon:
#                             checks the rig (assertions on counters skip)

set -u

: "${top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
NFSCACHED=$top_builddir/nfscached
NFSCACHECTL=$top_builddir/nfscachectl
CLIENT_TIMEOUT=${CLIENT_TIMEOUT:-60}
T_NAME=$(basename "$0" .sh)

T_TMP=$(mktemp -d "/tmp/nfscached-$T_NAME.XXXXXX")
T_N=0              # assertions so far
T_FAILED=0         # failed assertions
T_DONE=0           # done_testing reached
GANESHA_PID= RPCBIND_PID= NFSCACHED_PID= WATCHDOG_PID=
T_BG_PIDS=()       # clients and capture processes of the test itself

if [ -n "${NFSCACHED_PORT:-}" ]; then
    T_EXTERNAL=1
    PORT=$NFSCACHED_PORT
    CTL=${NFSCACHED_CTL:?NFSCACHED_CTL: control socket of the running daemon}
    EXPORT_DIR=${NFSCACHED_EXPORT_DIR:?NFSCACHED_EXPORT_DIR: the upstream export directory}
    UP_NFS_PORT=${UP_NFS_PORT:-} UP_MNT_PORT=${UP_MNT_PORT:-}
else
    T_EXTERNAL=0
    PORT= CTL=$T_TMP/ctl.sock
    EXPORT_DIR=$T_TMP/export
    UP_NFS_PORT= UP_MNT_PORT=
    mkdir -p "$EXPORT_DIR"
fi

# ---- TAP ---------------------------------------------------------------

diag() { printf '%s\n' "$@" | sed 's/^/# /'; }

# ok STATUS DESCRIPTION: passes when STATUS is 0 (`cmd; ok $? "what"`).
ok() {
    T_N=$((T_N + 1))
    if [ "$1" = 0 ]; then
        echo "ok $T_N - $2"
    else
        echo "not ok $T_N - $2"
        T_FAILED=$((T_FAILED + 1))
    fi
    return "$1"
}

# is GOT WANT DESCRIPTION: string equality.
is() {
    [ "$1" = "$2" ] && { ok 0 "$3"; return 0; }
    ok 1 "$3"
    diag "  got:  '$1'" "  want: '$2'"
    return 1
}

# num_ok GOT OP WANT DESCRIPTION: integer comparison, OP is -eq -ge -gt ...
num_ok() {
    if [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" "$2" "$3" ]; then ok 0 "$4"; return 0; fi
    ok 1 "$4"
    diag "  got: '$1', want: $2 $3"
    return 1
}

skip() { T_N=$((T_N + 1)); echo "ok $T_N - $1 # SKIP ${2:-}"; }

# fail_or_skip REASON: a prerequisite is missing. Fails in CI
# (NFSCACHED_REQUIRE_E2E=1), skips the rest of the test otherwise. Exits.
fail_or_skip() {
    if [ "${NFSCACHED_REQUIRE_E2E:-0}" = 1 ]; then
        ok 1 "prerequisite: $1"
    elif [ "$T_N" = 0 ]; then
        echo "1..0 # SKIP $1"
        T_DONE=1
        exit 0
    else
        skip "rest of $T_NAME" "$1"
    fi
    done_testing
}

# done_testing: stops the daemon under test (its exit status is asserted:
# a crash or a sanitizer report fails the test), prints the plan and exits.
done_testing() {
    if [ -n "$NFSCACHED_PID" ]; then
        stop_nfscached
        ok $? "nfscached exits cleanly on SIGTERM"
        ! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$T_TMP/nfscached.log"
        ok $? "no sanitizer report in the daemon log"
    fi
    echo "1..$T_N"
    T_DONE=1
    [ "$T_FAILED" = 0 ]
    exit $?
}

# ---- processes ---------------------------------------------------------

# stop_pid PID SECONDS: SIGTERM, SIGKILL after SECONDS; returns the exit status.
stop_pid() {
    local pid=$1 i
    kill -0 "$pid" 2>/dev/null || { { wait "$pid"; } 2>/dev/null; return $?; }
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < $2 * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    { wait "$pid"; } 2>/dev/null
}

t_cleanup() {
    local rc=$?
    # only the test shell cleans up, not a subshell that inherited the trap
    [ "$BASHPID" = "$$" ] || exit "$rc"
    trap - EXIT TERM INT HUP
    [ -n "$WATCHDOG_PID" ] && kill "$WATCHDOG_PID" 2>/dev/null
    for pid in "${T_BG_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    [ -n "$NFSCACHED_PID" ] && stop_nfscached
    [ -n "$GANESHA_PID" ] && stop_upstream
    [ -n "$RPCBIND_PID" ] && stop_pid "$RPCBIND_PID" 3
    if [ "$T_DONE" = 0 ] || [ "$T_FAILED" != 0 ] || [ "$rc" != 0 ]; then
        [ "$T_DONE" = 0 ] && echo "Bail out! $T_NAME stopped early (status $rc)"
        if [ -s "$T_TMP/nfscached.log" ]; then
            diag "--- last lines of the nfscached log:"
            tail -n 40 "$T_TMP/nfscached.log" | sed 's/^/# /'
        fi
        if [ -s "$T_TMP/ganesha/ganesha.log" ]; then
            diag "--- ganesha log, last warnings and errors:"
            grep -E ':(WARN|MAJ|CRIT|FATAL) :' "$T_TMP/ganesha/ganesha.log" |
                grep -vE 'DBUS|RADOS|krb5|keytab|realm' | tail -n 10 | sed 's/^/# /'
        fi
    fi
    if [ "${NFSCACHED_KEEP_TMP:-0}" = 1 ]; then
        diag "kept $T_TMP"
    else
        rm -rf "$T_TMP"
    fi
    exit "$rc"
}
trap t_cleanup EXIT
trap 'exit 143' TERM INT HUP

# The whole test is bounded: the watchdog sends SIGTERM to the test shell.
# It waits in `read -t` on a FIFO of its own, so it has no child to leave.
mkfifo "$T_TMP/watchdog"
( read -r -t "${TEST_TIMEOUT:-280}" <>"$T_TMP/watchdog"
  echo "# $T_NAME: timed out after ${TEST_TIMEOUT:-280} s" >&2
  kill -TERM $$ ) >/dev/null &
WATCHDOG_PID=$!

# ---- clients -----------------------------------------------------------

# track PID: a background process of the test, stopped at exit if still there.
track() { T_BG_PIDS+=("$1"); }

nfs_ls()  { timeout -k 5 "$CLIENT_TIMEOUT" nfs-ls "$@"; }
nfs_cat() { timeout -k 5 "$CLIENT_TIMEOUT" nfs-cat "$@"; }
nfs_cp()  { timeout -k 5 "$CLIENT_TIMEOUT" nfs-cp "$@"; }

# url PORT MNTPORT [PATH [QUERY]]: a libnfs URL of /export[/PATH].
url() {
    echo "nfs://127.0.0.1/export${3:+/$3}?version=3&nfsport=$1&mountport=$2${4:+&$4}"
}
proxy_url()  { url "$PORT" "${PORT_MNT:-$PORT}" "$@"; }
direct_url() { url "$UP_NFS_PORT" "$UP_MNT_PORT" "$@"; }

md5() { md5sum < "$1" | cut -d' ' -f1; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# ---- upstream: nfs-ganesha 4.3, FSAL VFS ------------------------------

port_free() { [ -z "$(ss -Htan "( sport = :$1 )" 2>/dev/null)" ]; }

# pick_ports: two free loopback ports below the ephemeral range.
pick_ports() {
    local p i
    for ((i = 0; i < 50; i++)); do
        p=$((20000 + RANDOM % 12000))
        if port_free "$p" && port_free $((p + 1)); then
            UP_NFS_PORT=$p UP_MNT_PORT=$((p + 1))
            return 0
        fi
    done
    return 1
}

# Ganesha 4.3 aborts when it cannot register with rpcbind. When none answers,
# run one in an empty network namespace: registration goes through
# /run/rpcbind.sock and nothing listens on port 111.
ensure_rpcbind() {
    local i
    rpcinfo -p >/dev/null 2>&1 && return 0
    command -v rpcbind >/dev/null || return 1
    rm -f /run/rpcbind.sock /run/rpcbind.lock
    setsid unshare -n rpcbind -f </dev/null >"$T_TMP/rpcbind.log" 2>&1 &
    RPCBIND_PID=$!
    for ((i = 0; i < 50; i++)); do
        rpcinfo -p >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

write_ganesha_conf() {
    local d=$T_TMP/ganesha
    mkdir -p "$d/recov"
    cat > "$d/ganesha.conf" <<EOF
NFS_CORE_PARAM {
    Bind_addr = 127.0.0.1;
    NFS_Port = $UP_NFS_PORT;
    MNT_Port = $UP_MNT_PORT;
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
    Protocols = 3;
    mount_path_pseudo = true;
}
NFSv4 {
    Graceless = true;
    RecoveryBackend = fs;
    RecoveryRoot = "$d/recov";
}
NFS_KRB5 { Active_krb5 = false; }
MDCACHE { Use_Getattr_Directory_Invalidation = true; }
EOF
    ganesha_export 1 "$EXPORT_DIR" /export >> "$d/ganesha.conf"
}

# ganesha_export ID PATH PSEUDO [FSID]: an NFSv3 EXPORT block of the upstream
# (FSID: a Filesystem_id of its own, e.g. 4242.4242)
ganesha_export() {
    cat <<EOF
EXPORT {
    Export_Id = $1;
    Path = "$2";
    Pseudo = $3;${4:+
    Filesystem_id = $4;}
    Access_Type = RW;
    Squash = no_root_squash;
    SecType = sys;
    Protocols = 3;
    Transports = TCP;
    Attr_Expiration_Time = 0;
    FSAL { Name = VFS; }
}
EOF
}

# start_upstream: starts ganesha (on the ports of the previous start, if
# any) and waits until an nfs-ls through it succeeds. 0 when serving.
start_upstream() {
    local d=$T_TMP/ganesha
    command -v ganesha.nfsd >/dev/null || { echo "ganesha.nfsd not installed" >&2; return 1; }
    ensure_rpcbind || { echo "no rpcbind for ganesha to register with" >&2; return 1; }
    [ -n "$UP_NFS_PORT" ] || pick_ports || return 1
    write_ganesha_conf
    setsid ganesha.nfsd -F -f "$d/ganesha.conf" -L "$d/ganesha.log" -p "$d/ganesha.pid" \
        -N NIV_EVENT </dev/null >>"$d/ganesha.out" 2>&1 &
    GANESHA_PID=$!
    disown "$GANESHA_PID"       # no job notice when it is killed on purpose
    # 40 s: a busy machine (two tests writing at once) slows its start down
    local deadline=$((SECONDS + 40))
    while [ "$SECONDS" -lt "$deadline" ] && kill -0 "$GANESHA_PID" 2>/dev/null; do
        timeout 3 nfs-ls "$(direct_url)" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "ganesha did not start serving on port $UP_NFS_PORT within 40 s" >&2
    return 1
}

# stop_upstream [SIGNAL]: SIGTERM (SIGKILL after 5 s), or SIGNAL at once.
stop_upstream() {
    [ -n "$GANESHA_PID" ] || return 0
    [ -n "${1:-}" ] && kill "-$1" "$GANESHA_PID" 2>/dev/null
    stop_pid "$GANESHA_PID" 5
    GANESHA_PID=
}

# ---- the daemon under test ---------------------------------------------

ctl() { timeout 10 "$NFSCACHECTL" -s "$CTL" "$@"; }

# stat_value NAME: the value of counter NAME in `nfscachectl stats`.
stat_value() {
    ctl stats | awk -v n="$1" '$1 == n { print $2; f = 1 } END { exit !f }'
}

# stat_ok NAME OP WANT: asserts on a counter of the daemon under test.
stat_ok() {
    if [ "${NFSCACHED_E2E_DIRECT:-0}" = 1 ]; then
        skip "counter $1 $2 $3" "no daemon (NFSCACHED_E2E_DIRECT)"
        return 0
    fi
    num_ok "$(stat_value "$1")" "$2" "$3" "counter $1 $2 $3"
}

# Counter snapshots: snap NAME saves every counter; sv NAME COUNTER reads one
# back; d FROM TO COUNTER is how much it rose between two snapshots.
snap() { ctl stats > "$T_TMP/$1.stats" || diag "nfscachectl stats failed"; }
sv() { awk -v n="$2" '$1 == n { print $2; f = 1 } END { if (!f) print "missing" }' "$T_TMP/$1.stats"; }
d() {
    local a b
    a=$(sv "$1" "$3") b=$(sv "$2" "$3")
    if [[ "$a" =~ ^[0-9]+$ && "$b" =~ ^[0-9]+$ ]]; then echo $((b - a)); else echo "?($a,$b)"; fi
}

# val FILE KEY: the value of a "KEY: value" line in FILE (rpc.py's output)
val() { awk -v k="$2:" '$1 == k { sub(/^[^:]*: ?/, ""); print; exit }' "$1"; }

# rpc ARGS...: tests/rpc.py through nfscached; up ARGS...: to the upstream
rpc() {
    timeout -k 5 60 python3 "$top_srcdir/tests/rpc.py" --port "$PORT" \
        --mount-port "${PORT_MNT:-$PORT}" --timeout 20 "$@"
}
up() {
    timeout -k 5 60 python3 "$top_srcdir/tests/rpc.py" --port "$UP_NFS_PORT" \
        --mount-port "$UP_MNT_PORT" --timeout 20 "$@"
}

# range_md5 FILE OFFSET COUNT: md5 of COUNT bytes of FILE at OFFSET (fewer at EOF)
range_md5() {
    dd if="$1" bs=64k iflag=skip_bytes,count_bytes skip="$2" count="$3" status=none | md5sum |
        cut -d' ' -f1
}

# fh_of NAME: the file handle of NAME in the export root (MNT, LOOKUP through nfscached)
FH_ROOT=
fh_of() {
    if [ -z "$FH_ROOT" ]; then
        rpc mnt > "$T_TMP/mnt.out"
        FH_ROOT=$(val "$T_TMP/mnt.out" fh)
    fi
    rpc lookup "$FH_ROOT" "$1" > "$T_TMP/lookup.out"
    val "$T_TMP/lookup.out" fh
}

# start_nfscached [-o SECTION.KEY=VALUE]...: starts the daemon in front of
# the upstream and sets PORT from `nfscachectl status`. 0 when listening.
start_nfscached() {
    local deadline
    [ -x "$NFSCACHED" ] && [ -x "$NFSCACHECTL" ] || { echo "nfscached is not built in $top_builddir" >&2; return 1; }
    cat > "$T_TMP/nfscached.conf" <<EOF
[server]
listen = 127.0.0.1:0
secure = no
allow = 127.0.0.0/8
[upstream]
url = nfs://127.0.0.1/export?nfsport=$UP_NFS_PORT&mountport=$UP_MNT_PORT
[cache]
dir = $T_TMP/cache
[control]
socket = $CTL
[log]
level = ${NFSCACHED_LOG_LEVEL:-info}
EOF
    mkdir -p "$T_TMP/cache"
    "$NFSCACHED" -f -c "$T_TMP/nfscached.conf" "$@" </dev/null >>"$T_TMP/nfscached.log" 2>&1 &
    NFSCACHED_PID=$!
    PORT=
    deadline=$((SECONDS + 10))
    while [ -z "$PORT" ] || [ "$PORT" = 0 ]; do
        if [ "$SECONDS" -ge "$deadline" ] || ! kill -0 "$NFSCACHED_PID" 2>/dev/null; then
            PORT=
            echo "nfscached did not report a listening port" >&2
            return 1
        fi
        sleep 0.1
        PORT=$(ctl status 2>/dev/null | awk '$1 == "listen" { sub(/.*:/, "", $2); print $2 }')
    done
    deadline=$((SECONDS + 10))
    until ctl status 2>/dev/null | grep -qx 'upstream up'; do
        [ "$SECONDS" -lt "$deadline" ] || { echo "nfscached: upstream not up after 10 s" >&2; break; }
        sleep 0.1
    done
    return 0
}

stop_nfscached() {
    local rc
    [ -n "$NFSCACHED_PID" ] || return 0
    stop_pid "$NFSCACHED_PID" 10
    rc=$?
    NFSCACHED_PID=
    [ "$rc" = 0 ] || echo "# nfscached exit status $rc" >&2
    return "$rc"
}

# setup: upstream and daemon, or the running daemon given in the environment.
# A missing prerequisite goes to fail_or_skip.
setup() {
    local err=$T_TMP/setup.err
    if [ "$T_EXTERNAL" = 1 ]; then
        ctl stats reset >/dev/null || fail_or_skip "no daemon answers on $CTL"
        return 0
    fi
    start_upstream 2>"$err" || fail_or_skip "upstream: $(tr '\n' ' ' <"$err")"
    if [ "${NFSCACHED_E2E_DIRECT:-0}" = 1 ]; then
        PORT=$UP_NFS_PORT PORT_MNT=$UP_MNT_PORT
        return 0
    fi
    start_nfscached "$@" 2>"$err" || fail_or_skip "nfscached: $(tr '\n' ' ' <"$err")"
    [ -s "$err" ] && diag "$(cat "$err")"
    return 0
}

# needs_daemon WHAT: for tests of the daemon itself, which mean nothing
# against the upstream alone (NFSCACHED_E2E_DIRECT).
needs_daemon() {
    if [ "${NFSCACHED_E2E_DIRECT:-0}" = 1 ]; then
        echo "1..0 # SKIP $1 (NFSCACHED_E2E_DIRECT)"
        T_DONE=1
        exit 0
    fi
}

# needs_own_upstream: for tests that stop and restart the upstream.
# needs_kclient: the kernel-client rig (tests/kclient: qemu, a kernel and an
# initramfs) is ready, in $KC; else fail (CI) or skip.
needs_kclient() {
    KC=$top_srcdir/tests/kclient
    command -v qemu-system-x86_64 >/dev/null || fail_or_skip "qemu-system-x86_64 is not installed"
    "$KC/setup.sh" > "$T_TMP/setup.log" 2>&1 ||
        fail_or_skip "kernel-client setup failed: $(tail -n 3 "$T_TMP/setup.log" | tr '\n' ' ')"
}

needs_own_upstream() {
    if [ "$T_EXTERNAL" = 1 ]; then
        echo "1..0 # SKIP needs its own upstream (NFSCACHED_PORT is set)"
        T_DONE=1
        exit 0
    fi
}
