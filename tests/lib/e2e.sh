# tests/lib/e2e.sh: the set-up, prerequisites and clean-up of an end-to-end
# test (bash); tests/lib.sh sources it with the others and sets the state.
#
# Definitions only: sourcing this file runs nothing. Uses T_TMP, T_NAME,
# T_DONE, T_FAILED, T_EXTERNAL, WATCHDOG_PID, RPCBIND_PID and the functions of
# tests/lib/{tap,proc,upstream,daemon}.sh.

# setup [-o SECTION.KEY=VALUE]...: upstream and daemon, or the running daemon
# given in the environment. A missing prerequisite goes to fail_or_skip.
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
needs_own_upstream() {
    if [ "$T_EXTERNAL" = 1 ]; then
        echo "1..0 # SKIP needs its own upstream (NFSCACHED_PORT is set)"
        T_DONE=1
        exit 0
    fi
}

# needs_kclient: the kernel-client rig (tests/kclient: qemu, a kernel and an
# initramfs) is ready, in $KC; else fail (CI) or skip.
needs_kclient() {
    KC=$top_srcdir/tests/kclient
    command -v qemu-system-x86_64 >/dev/null || fail_or_skip "qemu-system-x86_64 is not installed"
    "$KC/setup.sh" > "$T_TMP/setup.log" 2>&1 ||
        fail_or_skip "kernel-client setup failed: $(tail -n 3 "$T_TMP/setup.log" | tr '\n' ' ')"
}

# kc_state KEY: the value of the guest's "KTEST-STATE KEY value" lines in
# the kernel client's console, T_TMP/console.log
kc_state() {
    awk -v k="$1" '$1 == "KTEST-STATE" && $2 == k { sub(/^[^ ]+ [^ ]+ /, ""); print }' \
        "$T_TMP/console.log" 2>/dev/null
}

# t_cleanup: the EXIT trap of a test: stops what it started, by PID; when
# the test failed or stopped early, the last lines of the logs as diag.
t_cleanup() {
    local rc=$?
    # only the test shell cleans up, not a subshell that inherited the trap
    [ "$BASHPID" = "$$" ] || exit "$rc"
    trap - EXIT TERM INT HUP
    [ -n "$WATCHDOG_PID" ] && kill "$WATCHDOG_PID" 2>/dev/null
    stop_tracked
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
