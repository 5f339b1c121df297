# tests/lib/daemon.sh: the nfscached under test, its control socket and its
# counters (bash).
#
# Definitions only: sourcing this file starts nothing and writes nothing.
# Uses tests/lib/proc.sh (and tests/lib/tap.sh for stat_ok). The daemon:
#   NFSCACHED, NFSCACHECTL   the programs
#   T_TMP/nfscached.conf, T_TMP/nfscached.log, T_TMP/cache/   its files
#   CTL                   its control socket
#   NFSCACHED_UPSTREAM_URL  its upstream (default: the one of
#                         tests/lib/upstream.sh, UP_HOST, UP_NFS_PORT, UP_MNT_PORT)
#   NFSCACHED_LOG_LEVEL   its log.level (info)
#   NFSCACHED_METADATA    its cache.metadata (no; see write_nfscached_conf)
#   NFSCACHED_PID         set while it runs; PORT, the port it listens on
#   NFSCACHED_START_MS    how long the last start took to report its port
# Seconds allowed to: one nfscachectl call, the start until the port is
# reported, then until the upstream is up, the stop after SIGTERM.
: "${CTL_TIMEOUT:=10}"
: "${NFSCACHED_START_TIMEOUT:=10}"
: "${NFSCACHED_UP_TIMEOUT:=10}"
: "${NFSCACHED_STOP_TIMEOUT:=10}"

ctl() { timeout "$CTL_TIMEOUT" "$NFSCACHECTL" -s "$CTL" "$@"; }

# proxy_url [PATH [QUERY]]: a libnfs URL of /export[/PATH] through nfscached
proxy_url() { url "$PORT" "${PORT_MNT:-$PORT}" "$@"; }

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

# Counter snapshots: snap NAME saves every counter in T_TMP/NAME.stats (none
# without a daemon, NFSCACHED_E2E_DIRECT); sv NAME COUNTER reads one back;
# d FROM TO COUNTER is how much it rose between two snapshots.
snap() {
    if [ "${NFSCACHED_E2E_DIRECT:-0}" = 1 ]; then
        : > "$T_TMP/$1.stats"
        return 0
    fi
    ctl stats > "$T_TMP/$1.stats" || diag "nfscachectl stats failed"
}
sv() { awk -v n="$2" '$1 == n { print $2; f = 1 } END { if (!f) print "missing" }' "$T_TMP/$1.stats"; }
d() {
    local a b
    a=$(sv "$1" "$3") b=$(sv "$2" "$3")
    if [[ "$a" =~ ^[0-9]+$ && "$b" =~ ^[0-9]+$ ]]; then echo $((b - a)); else echo "?($a,$b)"; fi
}

# cache_state: the state of the cache in `nfscachectl status` (caching,
# culling, stopped)
cache_state() { ctl status | awk '$1 == "cache" { print $2 }'; }

# no_sanitizer_report LOG: LOG holds no ASan, LSan or UBSan report.
no_sanitizer_report() {
    ! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$1"
}

# write_nfscached_conf: T_TMP/nfscached.conf: an ephemeral port on
# 127.0.0.1, clients from any port of 127.0.0.0/8, the cache in T_TMP/cache,
# the namespace cache off unless NFSCACHED_METADATA=yes.
write_nfscached_conf() {
    local up=${NFSCACHED_UPSTREAM_URL:-nfs://$UP_HOST/export?nfsport=$UP_NFS_PORT&mountport=$UP_MNT_PORT}
    cat > "$T_TMP/nfscached.conf" <<EOC
[server]
listen = 127.0.0.1:0
secure = no
allow = 127.0.0.0/8
[upstream]
url = $up
[cache]
dir = $T_TMP/cache
# the pass-through tests see every call upstream; the namespace cache's own
# tests (6x-meta-*) turn it on with -o cache.metadata=yes
metadata = ${NFSCACHED_METADATA:-no}
[control]
socket = $CTL
[log]
level = ${NFSCACHED_LOG_LEVEL:-info}
EOC
}

# start_nfscached [-o SECTION.KEY=VALUE]...: starts the daemon in front of
# the upstream and sets PORT from `nfscachectl status`. 0 when listening
# (after waiting for the upstream to be up, or saying on stderr that it is
# not); 1 with the reason on stderr when no port is reported.
start_nfscached() {
    local deadline t0
    [ -x "$NFSCACHED" ] && [ -x "$NFSCACHECTL" ] ||
        { echo "nfscached is not built in ${top_builddir:-.}" >&2; return 1; }
    write_nfscached_conf
    mkdir -p "$T_TMP/cache"
    t0=$(date +%s%N)
    "$NFSCACHED" -f -c "$T_TMP/nfscached.conf" "$@" </dev/null >>"$T_TMP/nfscached.log" 2>&1 &
    NFSCACHED_PID=$!
    PORT=
    deadline=$((SECONDS + NFSCACHED_START_TIMEOUT))
    while [ -z "$PORT" ] || [ "$PORT" = 0 ]; do
        if [ "$SECONDS" -ge "$deadline" ] || ! kill -0 "$NFSCACHED_PID" 2>/dev/null; then
            PORT=
            echo "nfscached did not report a listening port" >&2
            return 1
        fi
        PORT=$(ctl status 2>/dev/null | awk '$1 == "listen" { sub(/.*:/, "", $2); print $2 }')
        case $PORT in ''|0) sleep 0.01 ;; esac
    done
    NFSCACHED_START_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
    deadline=$((SECONDS + NFSCACHED_UP_TIMEOUT))
    until ctl status 2>/dev/null | grep -qx 'upstream up'; do
        [ "$SECONDS" -lt "$deadline" ] ||
            { echo "nfscached: upstream not up after $NFSCACHED_UP_TIMEOUT s" >&2; break; }
        sleep 0.05
    done
    return 0
}

# stop_nfscached: SIGTERM (SIGKILL after NFSCACHED_STOP_TIMEOUT); returns
# the exit status, said on stderr when not 0.
stop_nfscached() {
    local rc
    [ -n "${NFSCACHED_PID:-}" ] || return 0
    stop_pid "$NFSCACHED_PID" "$NFSCACHED_STOP_TIMEOUT"
    rc=$?
    NFSCACHED_PID=
    [ "$rc" = 0 ] || echo "# nfscached exit status $rc" >&2
    return "$rc"
}
