#!/bin/bash
# 15-rpcbind: server.rpcbind = yes registers NFS 3 and MOUNT 3 on the
# listening port with the local rpcbind and removes them at exit; a second
# instance that cannot register exits 1 and leaves the first one's alone.
# Runs in mount and network namespaces of its own (a private /run, its own
# rpcbind), so the host's rpcbind and the other tests' ganesha are untouched.
TEST_TIMEOUT=${TEST_TIMEOUT:-60}
. "$(dirname "$0")/../lib.sh"
needs_daemon "registration of nfscached with rpcbind"
command -v rpcbind >/dev/null && command -v unshare >/dev/null ||
    fail_or_skip "rpcbind and unshare are needed"

cat > "$T_TMP/inner.sh" <<'INNER'
set -u
D=$1 NFSCACHED=$2 NFSCACHECTL=$3
mount -t tmpfs tmpfs /run
ip link set lo up
rpcbind -f & RB=$!
for _ in $(seq 50); do rpcinfo -p >/dev/null 2>&1 && break; sleep 0.1; done
# the upstream is not needed here: a closed port, never reached
up='upstream.url=nfs://127.0.0.1/export?nfsport=1&mountport=1'
"$NFSCACHED" -f -c /dev/null -o server.listen=127.0.0.1:0 -o server.rpcbind=yes -o "$up" \
    -o control.socket=/run/ctl.sock >"$D/first.log" 2>&1 & N=$!
for _ in $(seq 50); do "$NFSCACHECTL" -s /run/ctl.sock status >"$D/status" 2>/dev/null && break; sleep 0.1; done
rpcinfo -p >"$D/registered" 2>&1
timeout 10 "$NFSCACHED" -f -c /dev/null -o server.listen=127.0.0.1:0 -o server.rpcbind=yes -o "$up" \
    -o control.socket=/run/ctl2.sock >"$D/second.log" 2>&1
echo "$?" >"$D/second.rc"
rpcinfo -p >"$D/after_second" 2>&1
kill -TERM "$N"; wait "$N"; echo "$?" >"$D/first.rc"
rpcinfo -p >"$D/after_exit" 2>&1
kill "$RB"; wait "$RB" 2>/dev/null
INNER
timeout -k 5 40 unshare -m -n bash "$T_TMP/inner.sh" "$T_TMP" "$NFSCACHED" "$NFSCACHECTL"
ok $? "the namespace run finished"

port=$(awk '$1 == "listen" { sub(/.*:/, "", $2); print $2 }' "$T_TMP/status")
num_ok "${port:-0}" -gt 0 "status shows the listening port ($port)"
grep -qE "^ +100003 +3 +tcp +$port +" "$T_TMP/registered"; ok $? "NFS 3 registered on tcp port $port"
grep -qE "^ +100005 +3 +tcp +$port +" "$T_TMP/registered"; ok $? "MOUNT 3 registered on tcp port $port"
is "$(cat "$T_TMP/second.rc")" 1 "a second instance that cannot register exits 1"
grep -q "rpcbind: cannot register NFS 3" "$T_TMP/second.log"; ok $? "and says why"
grep -qE "^ +100003 +3 +tcp +$port +" "$T_TMP/after_second"; ok $? "the first instance stays registered"
is "$(cat "$T_TMP/first.rc")" 0 "the first instance exits 0 on SIGTERM"
! grep -qE "^ +10000[35] " "$T_TMP/after_exit"; ok $? "and leaves nothing registered"
diag "$(cat "$T_TMP/registered")"
done_testing
