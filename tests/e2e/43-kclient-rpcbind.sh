#!/bin/bash
# 43-kclient-rpcbind: with an rpcbind of its own, the Linux kernel client (in
# qemu) mounts with no port= or mountport= option: it asks rpcbind for the
# MOUNT and NFS ports and finds nfscached's (server.rpcbind = yes), whose
# counters then show the MNT and the READs, and the guest reads the right
# bytes. rpcbind, nfscached and qemu run in network and mount namespaces of
# their own (a private /run): ganesha, left in the host's, registers with the
# host's rpcbind and cannot take the registrations over. nfscached reaches
# ganesha over a veth pair (10.213.0.1 host side, 10.213.0.2 inside).
TEST_TIMEOUT=${TEST_TIMEOUT:-150}
. "$(dirname "$0")/../lib.sh"
needs_daemon "registration of nfscached with rpcbind"
needs_own_upstream
for tool in unshare ip rpcbind rpcinfo; do
    command -v "$tool" >/dev/null || fail_or_skip "$tool is not installed"
done
needs_kclient
command -v ganesha.nfsd >/dev/null || fail_or_skip "ganesha.nfsd is not installed"

HOST_IP=10.213.0.1 NS_IP=10.213.0.2
VH=nc43h$$ VN=nc43n$$
VH=${VH:0:15} VN=${VN:0:15}
head -c 1048576 /dev/urandom > "$EXPORT_DIR/rb.bin"

cat > "$T_TMP/inner.sh" <<'INNER'
# in the test's namespaces: rpcbind, nfscached (server.rpcbind = yes), the VM
set -u
D=$1 top_srcdir=$2 NFSCACHED=$3 NFSCACHECTL=$4 KC=$5 VN=$6 NS_IP=$7
. "$top_srcdir/tests/lib/proc.sh"
. "$top_srcdir/tests/lib/daemon.sh"
T_TMP=$D CTL=$D/ctl.sock
mount -t tmpfs tmpfs /run
ip link set lo up
rpcbind -f & RB=$!
for _ in $(seq 50); do rpcinfo -p >/dev/null 2>&1 && break; sleep 0.1; done
echo ready > "$D/ns.ready"
# the host moves the veth end in here and starts the upstream
for _ in $(seq 600); do [ -f "$D/go" ] && break; sleep 0.1; done
[ -f "$D/go" ] || { kill "$RB"; exit 1; }
ip addr add "$NS_IP/30" dev "$VN" && ip link set "$VN" up
. "$D/go"        # UP_HOST, UP_NFS_PORT, UP_MNT_PORT
start_nfscached -o server.rpcbind=yes
ctl status > "$D/status" 2>&1
rpcinfo -p > "$D/registered" 2>&1
port=$(awk '$1 == "listen" { sub(/.*:/, "", $2); print $2 }' "$D/status")
if [ -n "$port" ]; then
    KCLIENT_LOG=$D/console.log RPCBIND_PORT=111 PORT_OPTS=no VM_TIMEOUT=100 \
        "$KC/run.sh" "$port" "$KC/guest-rpcbind.sh" > "$D/run.out" 2>&1
    echo "$?" > "$D/run.rc"
fi
ctl stats > "$D/after.stats" 2>&1
stop_nfscached; echo "$?" > "$D/nfscached.rc"
rpcinfo -p > "$D/after_exit" 2>&1
kill "$RB"; wait "$RB" 2>/dev/null
INNER

unshare -m -n bash "$T_TMP/inner.sh" "$T_TMP" "$top_srcdir" "$NFSCACHED" "$NFSCACHECTL" \
    "$KC" "$VN" "$NS_IP" </dev/null 2>"$T_TMP/inner.err" &
IN_PID=$!
track "$IN_PID"
for ((i = 0; i < 100; i++)); do [ -f "$T_TMP/ns.ready" ] && break; sleep 0.1; done
[ -f "$T_TMP/ns.ready" ] ||
    fail_or_skip "no rpcbind in the test's namespace: $(tail -n 3 "$T_TMP/inner.err" | tr '\n' ' ')"
# the pair goes away with the namespace, when the inner script ends
if ! { ip link add "$VH" type veth peer name "$VN" netns "$IN_PID" &&
       ip addr add "$HOST_IP/30" dev "$VH" && ip link set "$VH" up; } 2>"$T_TMP/veth.err"; then
    ip link del "$VH" 2>/dev/null
    fail_or_skip "veth pair: $(tr '\n' ' ' <"$T_TMP/veth.err")"
fi

# the upstream, bound to the host end of the pair
UP_HOST=$HOST_IP
start_upstream 2>"$T_TMP/upstream.err" || fail_or_skip "upstream: $(tr '\n' ' ' <"$T_TMP/upstream.err")"
printf 'UP_HOST=%s UP_NFS_PORT=%s UP_MNT_PORT=%s\n' "$UP_HOST" "$UP_NFS_PORT" "$UP_MNT_PORT" > "$T_TMP/go"

wait "$IN_PID"
ok $? "the namespace run finished"
[ -s "$T_TMP/inner.err" ] && diag "$(tail -n 5 "$T_TMP/inner.err")"

port=$(awk '$1 == "listen" { sub(/.*:/, "", $2); print $2 }' "$T_TMP/status")
num_ok "${port:-0}" -gt 0 "nfscached listens in the namespace (port $port)"
grep -qx 'upstream up' "$T_TMP/status"; ok $? "nfscached reaches the upstream over the veth pair"
grep -qE "^ +100003 +3 +tcp +$port +" "$T_TMP/registered"; ok $? "NFS 3 registered with the namespace's rpcbind"
grep -qE "^ +100005 +3 +tcp +$port +" "$T_TMP/registered"; ok $? "MOUNT 3 registered with the namespace's rpcbind"

is "$(cat "$T_TMP/run.rc" 2>/dev/null)" 0 "the VM mounts through rpcbind and reads the file" ||
    diag "$(tail -n 5 "$T_TMP/run.out" 2>/dev/null)" "--- console:" \
        "$(grep -v '^\[' "$T_TMP/console.log" 2>/dev/null | tail -n 30)"
mnt=$(grep '^KTEST: mount -t nfs' "$T_TMP/console.log" 2>/dev/null)
diag "$mnt" "$(kc_state mount)" "$(grep -h '^run.sh: VM ran' "$T_TMP/run.out" 2>/dev/null)"
[ -n "$mnt" ] && ! grep -qE '[ ,](mount)?port=' <<<"$mnt"
ok $? "the guest mounted with neither port= nor mountport="
is "$(kc_state rb.md5)" "$(md5 "$EXPORT_DIR/rb.bin")" "the guest read the bytes of rb.bin"

num_ok "$(sv after mount3.calls.MNT)" -ge 1 "nfscached counted the guest's MNT"
num_ok "$(sv after nfs3.calls.READ)" -ge 1 "nfscached counted the guest's READs"
is "$(cat "$T_TMP/nfscached.rc" 2>/dev/null)" 0 "nfscached exits 0 on SIGTERM"
! grep -qE '^ +10000[35] ' "$T_TMP/after_exit"; ok $? "and leaves nothing registered"
no_sanitizer_report "$T_TMP/nfscached.log"
ok $? "no sanitizer report in the daemon log"
done_testing
