#!/bin/bash
# 09-kclient: the Linux kernel NFS client (Debian 12 kernel in qemu) mounts
# the export through nfscached and, in one boot, writes 20 MiB with fsync,
# reads it back after dropping caches, renames, links, symlinks, makes and
# removes directories, truncates, chmods and removes. The host then finds the
# same final state in the upstream's export directory, and tshark decodes the
# session (every procedure used, every call answered) without a malformed
# packet.
TEST_TIMEOUT=${TEST_TIMEOUT:-480}
. "$(dirname "$0")/../lib.sh"
needs_kclient
setup

if command -v tshark >/dev/null; then
    tshark -q -i lo -B 64 -f "tcp port $PORT" -w "$T_TMP/vm.pcapng" </dev/null >/dev/null 2>"$T_TMP/tshark.err" &
    TSHARK_PID=$!
    track "$TSHARK_PID"
    for ((i = 0; i < 100; i++)); do grep -q 'Capturing on' "$T_TMP/tshark.err" && break; sleep 0.1; done
fi

KCLIENT_LOG=$T_TMP/console.log MNTPORT=${PORT_MNT:-$PORT} VM_TIMEOUT=240 \
    "$KC/run.sh" "$PORT" "$KC/guest-ops.sh" > "$T_TMP/run.out" 2>&1
ok $? "guest operations through the proxy pass in the VM" ||
    diag "$(tail -n 5 "$T_TMP/run.out")" "--- console:" "$(grep -v '^\[' "$T_TMP/console.log" | tail -n 30)"
diag "$(grep -h -e '^run.sh: VM ran' -e '^KTEST: 20 MiB' "$T_TMP/run.out" "$T_TMP/console.log")"

K=$EXPORT_DIR/kc
is "$(stat -c %s "$K/big" 2>&1)" 20971520 "host: kc/big has 20 MiB"
is "$(md5 "$K/big")" "$(kc_state big.md5)" "host: kc/big has the bytes the guest wrote"
is "$(cat "$K/renamed.txt" 2>&1)" "$(printf 'hello\nmore')" "host: kc/renamed.txt has the renamed, appended text"
is "$(stat -c %a:%h "$K/renamed.txt" 2>&1)" 640:2 "host: kc/renamed.txt has mode 640 and 2 links"
is "$(stat -c %i "$K/hard" 2>&1)" "$(stat -c %i "$K/renamed.txt" 2>&1)" "host: kc/hard is a hard link of it"
is "$(readlink "$K/sym")" renamed.txt "host: kc/sym is a symlink to renamed.txt"
is "$(stat -c %s "$K/trunc" 2>&1)" 12345 "host: kc/trunc truncated to 12345 bytes"
is "$(md5 "$K/trunc")" "$(kc_state trunc.md5)" "host: kc/trunc keeps its first 12345 bytes"
[ -d "$K/keepdir" ]
ok $? "host: kc/keepdir is a directory"
names=". .. big hard keepdir renamed.txt sym trunc"
is "$(cd "$K" 2>/dev/null && LC_ALL=C ls -a | tr '\n' ' ' | sed 's/ $//')" "$names" \
    "host: kc/ holds exactly $names"
is "$(kc_state names | sed 's/ $//')" "$names" "guest: kc/ listed the same"

for p in WRITE COMMIT RENAME SYMLINK LINK MKDIR RMDIR REMOVE SETATTR READ READDIRPLUS; do
    stat_ok "nfs3.calls.$p" -ge 1
done

if [ -n "${TSHARK_PID:-}" ]; then
    sleep 0.5
    kill -INT "$TSHARK_PID"
    { wait "$TSHARK_PID"; } 2>/dev/null
    rd() { tshark -r "$T_TMP/vm.pcapng" -d "tcp.port==$PORT,rpc" -Y "$1" 2>/dev/null | wc -l; }
    num_ok "$(rd nfs)" -ge 100 "tshark decodes the kernel client's NFS traffic"
    for proc in 2:SETATTR 7:WRITE 8:CREATE 9:MKDIR 10:SYMLINK 12:REMOVE 13:RMDIR 14:RENAME 15:LINK 21:COMMIT; do
        num_ok "$(rd "nfs.procedure_v3 == ${proc%%:*}")" -ge 2 "tshark: ${proc#*:} calls and replies in the VM session"
    done
    types=$(tshark -r "$T_TMP/vm.pcapng" -d "tcp.port==$PORT,rpc" -Y rpc -T fields -e rpc.msgtyp 2>/dev/null | tr ',' '\n')
    is "$(grep -cx 1 <<<"$types")" "$(grep -cx 0 <<<"$types")" "tshark: every call of the VM session has a reply"
    is "$(rd '_ws.malformed || _ws.expert.severity >= "error"')" 0 "no malformed packet in the VM session"
fi
done_testing
