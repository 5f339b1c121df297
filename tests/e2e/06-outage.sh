#!/bin/bash
# 06-outage: the upstream dies (SIGKILL) in the middle of a 256 MiB nfs-cp
# through nfscached, stays down 5 s and comes back on the same ports with the
# same export. Like a hard mount, the copy waits and then completes with
# identical bytes, in both directions; the daemon counts the reconnection.
# Then, in front of an upstream that is not there, a MOUNT call still
# waiting at SIGTERM is freed by the stop: exit 0, no leak, no retry logged.
. "$(dirname "$0")/../lib.sh"
needs_own_upstream
CLIENT_TIMEOUT=150
setup

SIZE=$((256 << 20))
head -c "$SIZE" /dev/urandom > "$T_TMP/big"
want=$(md5 "$T_TMP/big")

# outage up|down: one copy, with the upstream stopped while it runs.
outage() {
    local dir=$1 src dst watch cp_pid i
    if [ "$dir" = up ]; then
        src=$T_TMP/big dst=$(proxy_url up-big) watch=$EXPORT_DIR/up-big
    else
        cp "$T_TMP/big" "$EXPORT_DIR/down-big"
        src=$(proxy_url down-big) dst=$T_TMP/down-big watch=$T_TMP/down-big
    fi
    timeout -k 5 "$CLIENT_TIMEOUT" nfs-cp "$src" "$dst" > "$T_TMP/cp.out" 2>&1 &
    cp_pid=$!
    track "$cp_pid"
    for ((i = 0; i < 3000; i++)); do
        [ "$(stat -c %s "$watch" 2>/dev/null || echo 0)" -ge $((32 << 20)) ] && break
        kill -0 "$cp_pid" 2>/dev/null || break
        sleep 0.01
    done
    kill -0 "$cp_pid" 2>/dev/null
    ok $? "$dir: the copy is running when the upstream is killed" ||
        diag "$watch has $(stat -c %s "$watch" 2>/dev/null) bytes"
    stop_upstream KILL
    sleep 1
    if [ "${NFSCACHED_E2E_DIRECT:-0}" != 1 ]; then
        ctl status | grep -qxE 'upstream (down|connecting)'
        ok $? "$dir: status shows the upstream down" || diag "$(ctl status 2>&1)"
    fi
    sleep 4
    start_upstream
    ok $? "$dir: upstream restarted on ports $UP_NFS_PORT/$UP_MNT_PORT"
    wait "$cp_pid"
    ok $? "$dir: nfs-cp completes" || diag "$(cat "$T_TMP/cp.out")"
    if [ "$dir" = up ]; then
        is "$(md5 "$EXPORT_DIR/up-big")" "$want" "$dir: the file in the export is identical"
    else
        is "$(md5 "$T_TMP/down-big")" "$want" "$dir: the downloaded file is identical"
    fi
}

outage up
outage down
stat_ok upstream.reconnects -ge 2
stat_ok upstream.errors -ge 1

# A MOUNT call still waiting for an unreachable upstream at SIGTERM: the
# stop answers and frees it (exit 0, no leak report), and nothing is
# retried or logged about the upstream after "main: stopped".
if [ "${NFSCACHED_E2E_DIRECT:-0}" != 1 ] && [ "$T_EXTERNAL" != 1 ]; then
    stop_nfscached; ok $? "nfscached exits cleanly on SIGTERM"
    no_sanitizer_report "$T_TMP/nfscached.log"; ok $? "no sanitizer report in the daemon log"
    mv "$T_TMP/nfscached.log" "$T_TMP/nfscached-outage.log"
    NFSCACHED_UPSTREAM_URL="nfs://127.0.0.1/export?nfsport=1&mountport=1" NFSCACHED_UP_TIMEOUT=1 \
        start_nfscached 2>/dev/null
    ok $? "nfscached in front of an unreachable upstream" || done_testing
    timeout -k 2 10 nfs-ls "$(proxy_url)" > "$T_TMP/ls.out" 2>&1 &
    ls_pid=$!
    for _ in $(seq 50); do
        [ "$(stat_value calls.in_flight)" -ge 1 ] 2>/dev/null && break
        sleep 0.1
    done
    stat_ok calls.in_flight -ge 1
    # the stop waits up to 10 s for calls in flight, the MOUNT 30 s for its upstream
    NFSCACHED_STOP_TIMEOUT=20 stop_nfscached
    ok $? "SIGTERM with a MOUNT call pending upstream: exit status 0"
    wait "$ls_pid" 2>/dev/null
    no_sanitizer_report "$T_TMP/nfscached.log"
    ok $? "no sanitizer report (the pending MOUNT call is freed)" ||
        diag "$(grep -A8 -E 'ERROR: (Address|Leak)Sanitizer' "$T_TMP/nfscached.log" | head -n 12)"
    ! sed -n '/main: stopped/,$p' "$T_TMP/nfscached.log" | grep -q 'upstream:'
    ok $? "nothing about the upstream is logged after \"main: stopped\"" ||
        diag "$(sed -n '/main: stopped/,$p' "$T_TMP/nfscached.log" | head -n 5)"
fi
done_testing
