#!/bin/bash
# run.sh PORT GUEST_SCRIPT: boots the Linux kernel NFS client in qemu (TCG,
# one CPU), mounts the NFSv3 server listening on the host's 127.0.0.1:PORT,
# runs GUEST_SCRIPT inside the mount with busybox `sh -e` and powers off.
# Exit 0 only when the guest printed the PASS line with this run's random
# nonce; 1 when the run failed, 2 when the VM could not be prepared.
#
# Network: slirp in restrict mode routes nothing; each guest connection to
# 10.0.2.100:PORT is handed to `busybox nc 127.0.0.1 PORT` on the host, so the
# server sees connections from unprivileged ports on 127.0.0.1.
#
# Environment: MNTPORT (default PORT), EXPORT (/export), MNTOPTS (extra mount
# options), VM_TIMEOUT (240 s), KCLIENT_LOG (console log file; default under
# $KCLIENT_WORK/runs), KCLIENT_WORK (/tmp/nfscached-kclient).
# RPCBIND_PORT: guest connections to 10.0.2.100:111 go to 127.0.0.1:RPCBIND_PORT.
# PORT_OPTS=no: the guest mounts without port= and mountport=, so the kernel
# asks rpcbind (RPCBIND_PORT) for the NFS and MOUNT ports.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=${KCLIENT_WORK:-/tmp/nfscached-kclient}
[ $# = 2 ] || { echo "usage: $0 PORT GUEST_SCRIPT" >&2; exit 2; }
PORT=$1 SCRIPT=$2 MNTPORT=${MNTPORT:-$1}
[ -r "$SCRIPT" ] || { echo "run.sh: cannot read $SCRIPT" >&2; exit 2; }
command -v qemu-system-x86_64 >/dev/null || { echo "run.sh: qemu-system-x86_64 is not installed" >&2; exit 2; }
"$HERE/setup.sh" >&2 || { echo "run.sh: setup.sh failed" >&2; exit 2; }

mkdir -p "$W/runs"
RUN=$(mktemp -d "$W/runs/run.XXXXXX")
LOG=${KCLIENT_LOG:-$RUN/console.log}
NONCE=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
cat > "$RUN/ktest.conf" <<CONF
NONCE=$NONCE
SERVER=10.0.2.100
NFSPORT=$PORT
MNTPORT=$MNTPORT
EXPORT='${EXPORT:-/export}'
MNTOPTS='${MNTOPTS:-}'
CONF
cp "$SCRIPT" "$RUN/guest.sh"
FILES="ktest.conf guest.sh"
if [ "${PORT_OPTS:-yes}" = no ]; then
    # this run's /init replaces the base one: the same, minus the port options
    grep -q 'port=\$NFSPORT,mountport=\$MNTPORT,' "$HERE/init" ||
        { echo "run.sh: cannot find the port options in $HERE/init" >&2; exit 2; }
    sed 's/port=\$NFSPORT,mountport=\$MNTPORT,//' "$HERE/init" > "$RUN/init"
    chmod 755 "$RUN/init"
    FILES="$FILES init"
fi
# the kernel unpacks concatenated archives: base, then this run's files
(cd "$RUN" && printf '%s\n' $FILES | cpio -o -H newc --quiet | gzip -1) |
    cat "$W/base.cpio.gz" - > "$RUN/initrd.gz"

FWD="guestfwd=tcp:10.0.2.100:$PORT-cmd:/bin/busybox nc 127.0.0.1 $PORT"
[ "$MNTPORT" != "$PORT" ] && FWD="$FWD,guestfwd=tcp:10.0.2.100:$MNTPORT-cmd:/bin/busybox nc 127.0.0.1 $MNTPORT"
[ -n "${RPCBIND_PORT:-}" ] && FWD="$FWD,guestfwd=tcp:10.0.2.100:111-cmd:/bin/busybox nc 127.0.0.1 $RPCBIND_PORT"
t0=$(date +%s%N)
timeout -k 5 "${VM_TIMEOUT:-240}" qemu-system-x86_64 \
    -nodefaults -machine q35 -accel tcg -cpu max -smp 1 -m 512M \
    -display none -monitor none -serial stdio -no-reboot \
    -kernel "$W/kernel/vmlinuz" -initrd "$RUN/initrd.gz" \
    -append "console=ttyS0 panic=-1 quiet loglevel=3" \
    -netdev "user,id=n0,restrict=on,ipv6=off,$FWD" \
    -device virtio-net-pci,netdev=n0,romfile= \
    </dev/null 2>&1 | tr -d '\r' > "$LOG"
qrc=${PIPESTATUS[0]}
t1=$(date +%s%N)
rm -f "$RUN/initrd.gz" "$RUN/ktest.conf" "$RUN/guest.sh" "$RUN/init"
[ -n "${KCLIENT_LOG:-}" ] && rmdir "$RUN"

echo "run.sh: VM ran $(( (t1 - t0) / 1000000 )) ms, qemu status $qrc, console log $LOG"
[ "$qrc" = 124 ] || [ "$qrc" = 137 ] && echo "run.sh: VM killed after ${VM_TIMEOUT:-240} s"
grep -qx "KTEST-RESULT: PASS rc=0 $NONCE" "$LOG" && exit 0
exit 1
