# tests/lib/proc.sh: processes and ports of the test rigs (bash).
#
# Definitions only: sourcing this file starts nothing. Processes are stopped
# by PID, never by name. State kept in the caller's variables:
#   T_BG_PIDS    background processes of the script, stopped at exit (track)
#   USED_PORTS   ports pick_pair has handed out (" P P+1 ..."), never twice
#   RPCBIND_PID  the rpcbind ensure_rpcbind started, if it started one
#   T_TMP        the run's private directory (rpcbind.log goes there)

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

# track PID: a background process of the script, stopped at exit if still there.
track() { T_BG_PIDS+=("$1"); }

# stop_tracked: SIGTERM to every tracked process still there.
stop_tracked() {
    local pid
    for pid in ${T_BG_PIDS[@]+"${T_BG_PIDS[@]}"}; do kill -TERM "$pid" 2>/dev/null; done
}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

port_free() { [ -z "$(ss -Htan "( sport = :$1 )" 2>/dev/null)" ]; }

# pick_pair VAR: sets VAR to P, where P and P+1 are free loopback ports below
# the ephemeral range and not handed out before (USED_PORTS). 1 when none found.
pick_pair() {
    local p i
    for ((i = 0; i < 200; i++)); do
        p=$((20000 + RANDOM % 12000))
        case " ${USED_PORTS:-} " in *" $p "*|*" $((p + 1)) "*) continue ;; esac
        if port_free "$p" && port_free $((p + 1)); then
            USED_PORTS="${USED_PORTS:-} $p $((p + 1))"
            printf -v "$1" '%s' "$p"
            return 0
        fi
    done
    return 1
}

# ensure_rpcbind: an rpcbind answers. Ganesha 4.3 aborts when it cannot
# register with one. When none answers, runs one in an empty network
# namespace (RPCBIND_PID): registration goes through /run/rpcbind.sock and
# nothing listens on port 111.
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
