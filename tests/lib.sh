# tests/lib.sh: the start of every end-to-end test (bash, TAP output).
#
# Sourced by tests/e2e/NN-*.sh. Defines the helpers of tests/lib/*.sh (TAP,
# processes, clients, the nfs-ganesha upstream, the daemon under test, set-up
# and clean-up) and gives the test its state: a private temporary directory
# T_TMP, an export directory, an exit trap that stops only the processes
# started here, by PID, and a watchdog bounding the whole test. setup (in
# tests/lib/e2e.sh) then starts the upstream on free loopback ports exporting
# $EXPORT_DIR as /export and nfscached in front of it on an ephemeral port.
#
# Environment:
#   top_srcdir, top_builddir  set by `make check` (default: this source tree)
#   NFSCACHED_REQUIRE_E2E=1   a missing prerequisite fails the test instead of
#                             skipping it (CI)
#   NFSCACHED_LOG_LEVEL       log.level of the daemon under test (default info)
#   NFSCACHED_KEEP_TMP=1      keep the temporary directory at exit
#   TEST_TIMEOUT              seconds before the whole test is aborted (280)
#   CLIENT_TIMEOUT            seconds allowed to one nfs-* client call (60)
#   NFSCACHED_PORT, NFSCACHED_CTL, NFSCACHED_EXPORT_DIR, UP_NFS_PORT, UP_MNT_PORT
#                             test a daemon that is already running (under gdb,
#                             say): its port, control socket, the upstream's
#                             export directory (use a scratch one) and ports.
#                             Tests that restart the upstream skip; each
#                             test starts with `nfscachectl stats reset`.
#   NFSCACHED_E2E_DIRECT=1    clients talk to the upstream itself, no daemon:
#                             checks the rig (assertions on counters skip)

set -u

: "${top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
for t_lib in tap proc client upstream daemon e2e; do
    . "$(dirname "${BASH_SOURCE[0]}")/lib/$t_lib.sh"
done
unset t_lib
NFSCACHED=$top_builddir/nfscached
NFSCACHECTL=$top_builddir/nfscachectl
T_NAME=$(basename "$0" .sh)

T_TMP=$(mktemp -d "/tmp/nfscached-$T_NAME.XXXXXX")
T_N=0              # assertions so far
T_FAILED=0         # failed assertions
T_DONE=0           # done_testing reached
GANESHA_PID= RPCBIND_PID= NFSCACHED_PID= WATCHDOG_PID=
T_BG_PIDS=()       # clients and capture processes of the test itself
USED_PORTS=        # ports picked so far
FH_ROOT=           # the root file handle fh_of looks names up in

if [ -n "${NFSCACHED_PORT:-}" ]; then
    T_EXTERNAL=1
    PORT=$NFSCACHED_PORT
    CTL=${NFSCACHED_CTL:?NFSCACHED_CTL: control socket of the running daemon}
    EXPORT_DIR=${NFSCACHED_EXPORT_DIR:?NFSCACHED_EXPORT_DIR: the upstream export directory}
    UP_NFS_PORT=${UP_NFS_PORT:-} UP_MNT_PORT=${UP_MNT_PORT:-}
else
    T_EXTERNAL=0
    PORT= CTL=$T_TMP/ctl.sock
    EXPORT_DIR=$T_TMP/export
    UP_NFS_PORT= UP_MNT_PORT=
    mkdir -p "$EXPORT_DIR"
fi

trap t_cleanup EXIT
trap 'exit 143' TERM INT HUP

# The whole test is bounded: the watchdog sends SIGTERM to the test shell.
# It waits in `read -t` on a FIFO of its own, so it has no child to leave.
mkfifo "$T_TMP/watchdog"
( read -r -t "${TEST_TIMEOUT:-280}" <>"$T_TMP/watchdog"
  echo "# $T_NAME: timed out after ${TEST_TIMEOUT:-280} s" >&2
  kill -TERM $$ ) >/dev/null &
WATCHDOG_PID=$!
