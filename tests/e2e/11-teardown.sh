#!/bin/bash
# 11-teardown: client connections that go away while their calls are in
# flight.  20 connections each pipeline 50 calls (GETATTR, READ of a 1 MiB
# file, LOOKUP) and are reset (SO_LINGER 0) before any reply is read; then
# connections that stop inside a record: half a record mark, half a call, and
# a 1 MiB WRITE sent in small pieces with pauses, closed (FIN, then RST) half
# way.  After each: the daemon runs, a fresh client is served (NULL, GETATTR,
# nfs-cat of the file byte for byte), the unfinished WRITE changed nothing, and
# once the calls have drained the gauges calls.in_flight and conn.open are 0.
# The exit and sanitizer checks of done_testing cover the freed state.
TEST_TIMEOUT=${TEST_TIMEOUT:-60}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the daemon's connection teardown"
setup

NAME=teardown-big
head -c 1M /dev/urandom > "$T_TMP/$NAME"
cp "$T_TMP/$NAME" "$EXPORT_DIR/$NAME"
SUM=$(md5 "$T_TMP/$NAME")

RPC_LIMIT=20 RPC_TIMEOUT=10     # rpc: 20 s a run (40 for the long ones), 10 s for a reply
# calls_received: NFS GETATTR + READ + LOOKUP calls the daemon has received
calls_received() {
    echo $(( $(stat_value nfs3.calls.GETATTR) + $(stat_value nfs3.calls.READ) +
             $(stat_value nfs3.calls.LOOKUP) ))
}

rpc mnt > "$T_TMP/mnt.out"
ROOT=$(val "$T_TMP/mnt.out" fh)
[ -n "$ROOT" ] || { ok 1 "MNT /export through the proxy"; diag "$(cat "$T_TMP/mnt.out")"; done_testing; }
rpc lookup "$ROOT" "$NAME" > "$T_TMP/lookup.out"
FH=$(val "$T_TMP/lookup.out" fh)
[ -n "$FH" ] || { ok 1 "LOOKUP $NAME"; diag "$(cat "$T_TMP/lookup.out")"; done_testing; }

# served WHEN: the daemon runs and a fresh client gets NULL, GETATTR and the
# whole file; then the gauges drain to 0 (up to 10 s).
served() {
    local i
    if [ -n "$NFSCACHED_PID" ]; then
        kill -0 "$NFSCACHED_PID" 2>/dev/null
        ok $? "$1: nfscached is running" || done_testing
    fi
    rpc null > "$T_TMP/null.out" 2>&1
    is "$(val "$T_TMP/null.out" reply)" "accepted SUCCESS" "$1: a new client's NULL is answered"
    rpc getattr "$FH" > "$T_TMP/getattr.out" 2>&1
    is "$(val "$T_TMP/getattr.out" nfs_status):$(val "$T_TMP/getattr.out" size)" \
       "NFS3_OK:1048576" "$1: GETATTR $NAME: NFS3_OK, 1 MiB"
    nfs_cat "$(proxy_url "$NAME")" > "$T_TMP/cat.out" 2>"$T_TMP/cat.err"
    is "$(md5 "$T_TMP/cat.out")" "$SUM" "$1: nfs-cat $NAME is byte for byte the file" ||
        diag "$(head -n 3 "$T_TMP/cat.err")"
    is "$(md5 "$EXPORT_DIR/$NAME")" "$SUM" "$1: the file in the export is unchanged"
    for ((i = 0; i < 100; i++)); do
        [ "$(stat_value calls.in_flight)" = 0 ] && [ "$(stat_value conn.open)" = 0 ] && break
        sleep 0.1
    done
    is "$(stat_value calls.in_flight)" 0 "$1: gauge calls.in_flight drains to 0"
    is "$(stat_value conn.open)" 0 "$1: gauge conn.open drains to 0"
}

# ---- 20 connections x 50 calls, reset with the replies unread ------------
# Replies already flowing: half the connections are reset as soon as their
# first reply bytes arrive, the other half at once.
calls0=$(calls_received)
accepted0=$(stat_value conn.accepted)
t0=$(now_ms)
RPC_LIMIT=40 rpc teardown "$NAME" --conns 20 --calls 50 > "$T_TMP/teardown.out" 2>&1
ok $? "20 connections of 50 pipelined calls each, reset unread" || diag "$(cat "$T_TMP/teardown.out")"
diag "$(( $(now_ms) - t0 )) ms; then calls.in_flight $(stat_value calls.in_flight), conn.open $(stat_value conn.open)"
is "$(val "$T_TMP/teardown.out" calls_sent)" 1000 "1000 calls sent"
is "$(val "$T_TMP/teardown.out" reset_while_replying)" 10 \
   "10 connections reset once their replies had begun"
num_ok "$(stat_value conn.accepted)" -ge $((accepted0 + 20)) "conn.accepted counts the 20"
# (rpc.py's own LOOKUP and GETATTR of the file come on top)
got=$(( $(calls_received) - calls0 ))
num_ok "$got" -ge 500 "the daemon received the calls before the resets ($got)"
served "after the resets"

# Replies not started: the upstream is stopped (SIGSTOP) while the calls go
# out, so every call is waiting upstream when its connection is reset; the
# replies come back after the connections are gone.
# A file nfscached has not seen: none of its READs can be answered from the
# cache while the upstream is stopped.
if [ -n "$GANESHA_PID" ]; then
    cp "$T_TMP/$NAME" "$EXPORT_DIR/$NAME.cold"
    rpc lookup "$ROOT" "$NAME.cold" > "$T_TMP/lookup-cold.out" 2>&1
    FH_COLD=$(val "$T_TMP/lookup-cold.out" fh)
    calls0=$(calls_received)
    kill -STOP "$GANESHA_PID"
    RPC_LIMIT=40 rpc teardown "$NAME.cold" --conns 20 --calls 50 --hold 1 --root "$ROOT" --fh "$FH_COLD" \
        > "$T_TMP/teardown-held.out" 2>&1
    ok $? "upstream stopped: 20 x 50 calls, every connection reset 1 s later" ||
        diag "$(cat "$T_TMP/teardown-held.out")"
    sleep 0.2
    is "$(stat_value calls.in_flight)" 1000 "upstream stopped: the 1000 calls are in flight"
    is "$(stat_value conn.open)" 0 "upstream stopped: conn.open 0, the connections are gone"
    is "$(( $(calls_received) - calls0 ))" 1000 "upstream stopped: all 1000 calls were received"
    kill -CONT "$GANESHA_PID"
    served "after the resets with calls waiting upstream"
else
    skip "resets with every call waiting upstream" "needs its own upstream (NFSCACHED_PORT is set)"
fi

# ---- connections that stop inside a record -------------------------------
for how in close reset; do
    flag=
    [ "$how" = reset ] && flag=--reset
    writes0=$(stat_value nfs3.calls.WRITE)
    RPC_LIMIT=40 rpc partial "$NAME" $flag > "$T_TMP/partial-$how.out" 2>&1
    ok $? "partial records, ended by $how" || diag "$(cat "$T_TMP/partial-$how.out")"
    out=$T_TMP/partial-$how.out
    for c in half_mark half_record slow_write; do
        is "$(val "$out" $c.early_reply)" none "$how: $c: no reply to an unfinished record"
        is "$(val "$out" $c.bystander_null)" ok "$how: $c: another client's NULL answered after it"
    done
    num_ok "$(val "$out" slow_write.record_bytes)" -gt 1048576 "$how: the WRITE record is over 1 MiB"
    sent=$(val "$out" slow_write.sent_bytes)
    num_ok "$sent" -lt "$(val "$out" slow_write.record_bytes)" \
        "$how: $sent bytes of it sent, in $(val "$out" slow_write.pieces) pieces"
    num_ok "$(val "$out" slow_write.bystander_ok)" -ge 5 \
        "$how: another client's NULLs answered while the WRITE trickled in"
    is "$(val "$out" slow_write.bystander_failed)" 0 "$how: none of those NULLs failed"
    is "$(stat_value nfs3.calls.WRITE)" "$writes0" "$how: the unfinished WRITE never became a call"
    served "after partial records ended by $how"
done

if [ -n "$NFSCACHED_PID" ]; then
    ! grep -E ' (error|warning): ' "$T_TMP/nfscached.log" > "$T_TMP/complaints"
    ok $? "no error or warning in the daemon log for clients that went away" ||
        diag "$(head -n 5 "$T_TMP/complaints")"
fi
done_testing
