#!/bin/bash
# 70-upstream-conns: upstream.connections.  With 4 connections to the
# upstream through a relay (tests/xid-relay.py: a delay each way, a rate
# limit, the XID of every call recorded per connection), in the middle of a cold 64 MiB nfs-cp
# one connection is reset with a call on it, then another one with the relay
# refusing connections for 1.5 s (the calls of each go to the other
# connections, each mounts again): the copy completes with identical bytes,
# the reconnections are counted, `nfscachectl status` shows the 4
# connections with calls on more than one, no XID was used by two different
# calls, and the calls of both reset connections sent again kept their XID.  With 1 connection a round trip works and
# the connection's calls are the upstream.calls.* counters.  0 and 17 are
# configuration errors (FILE:LINE).
TEST_TIMEOUT=${TEST_TIMEOUT:-240}
. "$(dirname "$0")/../lib.sh"
needs_daemon "upstream connections"
needs_own_upstream
command -v python3 >/dev/null || fail_or_skip "python3 is not installed"
CLIENT_TIMEOUT=120
RELAY=$top_srcdir/tests/xid-relay.py
# 20 ms each way, and 12 MiB/s from the upstream in all: the copy
# lasts seconds however many READs nfscached keeps in flight
RELAY_DELAY_MS=${RELAY_DELAY_MS:-20}
RELAY_RATE_MIB_S=${RELAY_RATE_MIB_S:-12}

# Configuration errors first: they need nothing running.
conf=$T_TMP/t.conf
for n in 0 17; do
    printf '[upstream]\nurl = nfs://127.0.0.1/export?nfsport=12049\nconnections = %s\n' "$n" > "$conf"
    out=$(timeout 10 "$NFSCACHED" -t -c "$conf" 2>&1)
    is "$?" 2 "upstream.connections = $n exits 2"
    grep -q "^$conf:3: upstream.connections: " <<<"$out"
    ok $? "and says FILE:LINE: key: $out"
done

start_upstream 2>"$T_TMP/setup.err" || fail_or_skip "upstream: $(tr '\n' ' ' <"$T_TMP/setup.err")"
pick_pair RELAY_PORT || fail_or_skip "no free port for the relay"
python3 "$RELAY" relay "$RELAY_PORT" "$UP_HOST:$UP_NFS_PORT" "$RELAY_DELAY_MS" "$RELAY_RATE_MIB_S" \
    "$T_TMP/relay.log" "$T_TMP/relay.sock" </dev/null >"$T_TMP/relay.out" 2>&1 &
RELAY_PID=$!
track "$RELAY_PID"
relay() { timeout 10 python3 "$RELAY" ctl "$T_TMP/relay.sock" "$@"; }
for _ in $(seq 100); do [ -S "$T_TMP/relay.sock" ] && break; sleep 0.05; done
ok "$(test -S "$T_TMP/relay.sock"; echo $?)" "the relay runs (pid $RELAY_PID, port $RELAY_PORT)"

# conn_field K FIELD: the value after FIELD on status line upstream_connK
# (FIELD "state": the state)
conn_field() {
    ctl status | awk -v k="upstream_conn$1" -v f="$2" '
        $1 == k { if (f == "state") print $2; else for (i = 3; i < NF; i += 2) if ($i == f) print $(i + 1) }'
}
all_up() { [ "$(ctl status | grep -cE '^upstream_conn[0-9]+ up ')" = "$1" ]; }

NFSCACHED_UPSTREAM_URL="nfs://127.0.0.1/export?nfsport=$RELAY_PORT&mountport=$UP_MNT_PORT" \
    start_nfscached -o upstream.connections=4 2>"$T_TMP/start.err"
ok $? "nfscached with 4 connections through the relay" || { diag "$(cat "$T_TMP/start.err")"; done_testing; }
for _ in $(seq 100); do all_up 4 && break; sleep 0.1; done
ctl status > "$T_TMP/status0"
is "$(awk '$1 == "upstream_connections" { print $2 }' "$T_TMP/status0")" 4 "status: upstream_connections 4"
is "$(grep -cE '^upstream_conn[0-3] up calls [0-9]+ in_flight [0-9]+ reconnects 0 errors 0$' "$T_TMP/status0")" 4 \
    "status: upstream_conn0..3 up, nothing failed yet" || diag "$(cat "$T_TMP/status0")"
is "$(relay conns | grep -c ' open 1$')" 4 "the relay carries 4 connections" || diag "$(relay conns)"

SIZE=$((64 << 20))
head -c "$SIZE" /dev/urandom > "$EXPORT_DIR/big"
want=$(md5 "$EXPORT_DIR/big")
snap before
nfs_cp "$(proxy_url big)" "$T_TMP/big" > "$T_TMP/cp.out" 2>&1 &
cp_pid=$!
track "$cp_pid"
# reset_at MIB [HOLD_MS]: once MIB MiB are copied, the relay resets its
# busiest open connection at its next call (and refuses connections HOLD_MS).
reset_at() {
    local i got victim
    for ((i = 0; i < 3000; i++)); do
        [ "$(stat -c %s "$T_TMP/big" 2>/dev/null || echo 0)" -ge $(($1 << 20)) ] && break
        kill -0 "$cp_pid" 2>/dev/null || break
        sleep 0.01
    done
    victim=$(relay conns | awk '$5 == 1 && $3 > max { max = $3; v = $1 } END { print v }')
    got=$(stat -c %s "$T_TMP/big" 2>/dev/null || echo 0)
    kill -0 "$cp_pid" 2>/dev/null
    ok $? "the copy is running when a connection is reset ($got bytes copied)"
    is "$(relay reset "$victim" ${2:+"$2"})" ok "the relay resets its connection $victim${2:+, refusing new ones for $2 ms}"
}
reset_at 8
reset_at 24 1500
wait "$cp_pid"
ok $? "nfs-cp completes" || diag "$(cat "$T_TMP/cp.out")"
is "$(md5 "$T_TMP/big")" "$want" "the copied file is identical"
# the refused connection may mount again only after the copy
for _ in $(seq 100); do all_up 4 && break; sleep 0.1; done
ctl status > "$T_TMP/status1"
snap after
num_ok "$(d before after upstream.reconnects)" -ge 2 "upstream.reconnects counts both reset connections"
num_ok "$(d before after cache.read.bytes_upstream)" -ge "$SIZE" "the copy was cold: every byte fetched upstream"
is "$(grep -cE '^upstream_conn[0-3] up calls [0-9]+ in_flight 0 reconnects [0-9]+ errors [0-9]+$' "$T_TMP/status1")" 4 \
    "status: the 4 connections are up again, nothing in flight" || diag "$(cat "$T_TMP/status1")"
busy=$(awk '$1 ~ /^upstream_conn/ && $4 > 0' "$T_TMP/status1" | wc -l)
num_ok "$busy" -ge 2 "calls were spread over more than one connection" || diag "$(cat "$T_TMP/status1")"
rc_sum=$(awk '$1 ~ /^upstream_conn/ { s += $8 } END { print s + 0 }' "$T_TMP/status1")
is "$rc_sum" "$(sv after upstream.reconnects)" "the connections' reconnects add up to upstream.reconnects"
err_sum=$(awk '$1 ~ /^upstream_conn/ { s += $10 } END { print s + 0 }' "$T_TMP/status1")
is "$err_sum" "$(sv after upstream.errors)" "the connections' errors add up to upstream.errors"
grep -qE "upstream: [^ ]+ conn [0-3]: reconnected" "$T_TMP/nfscached.log"
ok $? "the log names the connection that reconnected"
grep -qE "upstream: [^ ]+ conn [0-3]: connection failed" "$T_TMP/nfscached.log"
ok $? "the log names the connection that failed while connections were refused"

# XIDs: one call each; the lines of a call sent again (its own XID) are alike.
calls=$(grep -c '^call ' "$T_TMP/relay.log")
num_ok "$calls" -ge 64 "the relay saw the calls ($calls)"
reused=$(awk '$1 == "call" { if (($3 in sig) && sig[$3] != $4) n++; sig[$3] = $4 } END { print n + 0 }' \
    "$T_TMP/relay.log")
is "$reused" 0 "no XID was used by two different calls"
# calls first sent on the first and on the second reset connection, sent
# again on another relay connection
awk '$1 == "reset" { rst[++n] = $2 }
     $1 == "call" {
         f = first[$3]
         if (f == "") first[$3] = $2
         else if (f != $2 && n >= 1 && f == rst[1]) first_again++
         else if (f != $2 && n >= 2 && f == rst[2]) second_again++
     }
     END { print first_again + 0, second_again + 0 }' "$T_TMP/relay.log" > "$T_TMP/resent"
read -r again moved < "$T_TMP/resent"
num_ok "$again" -ge 1 "a call in flight on the first reset connection was sent again with its XID"
num_ok "$moved" -ge 1 "a call of the refused connection went to another connection with its XID"
stop_nfscached
ok $? "nfscached stops cleanly"
no_sanitizer_report "$T_TMP/nfscached.log"; ok $? "no sanitizer report in the daemon log"

# One connection, straight to the upstream.
mv "$T_TMP/nfscached.log" "$T_TMP/nfscached-4.log"
start_nfscached -o upstream.connections=1 2>"$T_TMP/start.err"
ok $? "nfscached with 1 connection" || { diag "$(cat "$T_TMP/start.err")"; done_testing; }
head -c $((3 << 20)) /dev/urandom > "$T_TMP/small"
nfs_cp "$T_TMP/small" "$(proxy_url small)" >/dev/null
ok $? "upload through 1 connection"
is "$(md5 "$EXPORT_DIR/small")" "$(md5 "$T_TMP/small")" "the uploaded file is identical"
nfs_cp "$(proxy_url small)" "$T_TMP/small.back" >/dev/null
ok $? "download through 1 connection"
is "$(md5 "$T_TMP/small.back")" "$(md5 "$T_TMP/small")" "the downloaded file is identical"
ctl status > "$T_TMP/status2"
is "$(awk '$1 == "upstream_connections" { print $2 }' "$T_TMP/status2")" 1 "status: upstream_connections 1"
is "$(grep -c '^upstream_conn[0-9]' "$T_TMP/status2")" 1 "status: one connection line"
nfs3=$(ctl stats | awk '$1 ~ /^upstream\.calls\./ && $1 !~ /\.(MNT|UMNT|UMNTALL|EXPORT|DUMP|MOUNT_NULL)$/ { s += $2 } END { print s + 0 }')
is "$(conn_field 0 calls)" "$nfs3" "upstream_conn0 sent every NFSv3 call ($nfs3)" || diag "$(cat "$T_TMP/status2")"
num_ok "$nfs3" -ge 6 "and there were calls"
done_testing
