#!/bin/bash
# 41-service: nfscached as a systemd Type=notify service.  Started as
# systemd starts it (-f, NOTIFY_SOCKET), it sends READY=1 once listening
# with the index open — a NULL call is answered at once, and the upstream
# need not be up — and STATUS= lines with the upstream's state.  SIGHUP:
# RELOADING=1, the new log.level, READY=1.  SIGTERM: STOPPING=1, then every
# dirty byte is written back before the exit (status 0); with the upstream
# stopped the exit still comes, 0, after upstream.timeout_ms, and the dirty
# bytes stay in the index: the next start writes them back.
TEST_TIMEOUT=${TEST_TIMEOUT:-150}
. "$(dirname "$0")/../lib.sh"

# eventually TRIES CMD...: CMD succeeds within TRIES tenths of a second
eventually() {
    local i
    for ((i = 0; i < $1; i++)); do "${@:2}" && return 0; sleep 0.1; done
    "${@:2}"
}
needs_daemon "nfscached as a service"
needs_own_upstream
command -v python3 >/dev/null || fail_or_skip "python3 is not installed"
HAVE_NOTIFY=0
grep -q '^#define HAVE_SYSTEMD 1' "$top_builddir/config.h" 2>/dev/null && HAVE_NOTIFY=1

start_upstream 2>"$T_TMP/setup.err" || fail_or_skip "upstream: $(tr '\n' ' ' <"$T_TMP/setup.err")"

# The service manager's end of NOTIFY_SOCKET: each datagram's fields, one
# "MS FIELD" line each (MS: arrival, milliseconds since the epoch).
NOTIFY=$T_TMP/notify.sock NOTES=$T_TMP/notify.log
: > "$NOTES"
python3 - "$NOTIFY" "$NOTES" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a") as out:
    while True:
        msg = s.recv(4096).decode(errors="replace")
        ms = int(time.time() * 1000)
        for field in msg.split("\n"):
            if field:
                out.write("%d %s\n" % (ms, field))
        out.flush()
PY
track $!
for _ in $(seq 50); do [ -S "$NOTIFY" ] && break; sleep 0.1; done

for ((i = 0; i < 50; i++)); do
    PORT=$((20000 + RANDOM % 12000))
    port_free "$PORT" && break
done
CONF=$T_TMP/nfscached.conf
write_conf() {
    cat > "$CONF" <<EOC
[server]
listen = 127.0.0.1:$PORT
secure = no
allow = 127.0.0.0/8
[upstream]
url = nfs://127.0.0.1/export?nfsport=$UP_NFS_PORT&mountport=$UP_MNT_PORT
timeout_ms = 4000
[cache]
dir = $T_TMP/cache
write_mode = writeback
dirty_expire_ms = 600000
[control]
socket = $CTL
[log]
level = $1
EOC
}

# notes FIELD: how many notifications FIELD (a prefix) so far
notes() { grep -c " $1" "$NOTES"; }
# wait_note FIELD COUNT SECONDS: until there are COUNT of them
wait_note() {
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        [ "$(notes "$1")" -ge "$2" ] && return 0
        sleep 0.1
    done
    return 1
}

# start: as systemd starts it: in the foreground, NOTIFY_SOCKET set
start() {
    mkdir -p "$T_TMP/cache"
    NOTIFY_SOCKET=$NOTIFY "$NFSCACHED" -f -c "$CONF" </dev/null >>"$T_TMP/nfscached.log" 2>&1 &
    NFSCACHED_PID=$!
}

# term SECONDS: SIGTERM, wait at most SECONDS for the exit; sets rc (the
# exit status, or "running") and took_ms
term() {
    local t0 i
    t0=$(now_ms)
    kill -TERM "$NFSCACHED_PID"
    rc=running
    for ((i = 0; i < $1 * 10; i++)); do
        kill -0 "$NFSCACHED_PID" 2>/dev/null || break
        sleep 0.1
    done
    took_ms=$(( $(now_ms) - t0 ))
    if kill -0 "$NFSCACHED_PID" 2>/dev/null; then
        stop_nfscached 2>/dev/null
    else
        wait "$NFSCACHED_PID"
        rc=$?
        NFSCACHED_PID=
    fi
}

# null_ms: a NULL call through nfscached; prints the time it took, ms
null_ms() {
    local t0
    t0=$(now_ms)
    timeout -k 5 10 python3 "$top_srcdir/tests/rpc.py" --port "$PORT" --timeout 5 null \
        > "$T_TMP/null.out" 2>&1 || return 1
    grep -qx "reply: accepted SUCCESS" "$T_TMP/null.out" || return 1
    echo $(( $(now_ms) - t0 ))
}

# ---- start-up: READY=1, STATUS= ----------------------------------------
write_conf info
start
if [ "$HAVE_NOTIFY" = 1 ]; then
    wait_note READY=1 1 15
    ok $? "READY=1 arrives"
else
    until [ -S "$CTL" ] || ! kill -0 "$NFSCACHED_PID" 2>/dev/null; do sleep 0.1; done
    skip "READY=1 arrives" "built without libsystemd"
fi
ms=$(null_ms)
ok $? "once READY=1 has arrived a NULL call is answered"
num_ok "$ms" -lt 3000 "at once (${ms} ms)"
if [ "$HAVE_NOTIFY" = 1 ]; then
    eventually 100 grep -q " STATUS=upstream up; listening on 127.0.0.1:$PORT" "$NOTES"
    ok $? "STATUS= says the upstream is up, and where nfscached listens"
fi

# ---- SIGHUP: RELOADING=1, the new log level, READY=1 -------------------
grep -q ' debug: ' "$T_TMP/nfscached.log"
ok $((! $?)) "no debug line at log.level = info"
write_conf debug
kill -HUP "$NFSCACHED_PID"
for _ in $(seq 50); do
    grep -q "main: configuration reloaded" "$T_TMP/nfscached.log" && break
    sleep 0.1
done
if [ "$HAVE_NOTIFY" = 1 ]; then
    wait_note READY=1 2 5
    ok $? "READY=1 again after the reload"
    num_ok "$(notes RELOADING=1)" -eq 1 "RELOADING=1 before it"
fi
null_ms >/dev/null
grep -q ' debug: ' "$T_TMP/nfscached.log"
ok $? "after SIGHUP with log.level = debug, debug lines are logged"

# ---- SIGTERM with dirty data: written back before the exit -------------
rpc mnt > "$T_TMP/mnt.out"
FH_ROOT=$(val "$T_TMP/mnt.out" fh)
head -c 200000 /dev/urandom > "$T_TMP/a.src"
rpc create "$FH_ROOT" a > "$T_TMP/create.out"
fh=$(val "$T_TMP/create.out" fh)
rpc pwrite "$fh" 0 "$T_TMP/a.src" --stable unstable > "$T_TMP/pwrite.out"
is "$(val "$T_TMP/pwrite.out" nfs_status) $(val "$T_TMP/pwrite.out" committed)" "NFS3_OK UNSTABLE" \
    "an UNSTABLE WRITE is taken"
num_ok "$(stat_value cache.dirty.bytes)" -ge 200000 "and kept dirty (cache.dirty.bytes)"
cmp -s "$T_TMP/a.src" "$EXPORT_DIR/a"
ok $((! $?)) "the export does not hold it yet"
term 30
is "$rc" 0 "SIGTERM with dirty data: exit status 0 (in ${took_ms} ms)"
cmp -s "$T_TMP/a.src" "$EXPORT_DIR/a"
ok $? "every dirty byte reached the export before the exit"
grep -q "main: every dirty byte written back" "$T_TMP/nfscached.log"
ok $? "the log says so"
if [ "$HAVE_NOTIFY" = 1 ]; then
    num_ok "$(notes STOPPING=1)" -eq 1 "STOPPING=1 at SIGTERM"
fi

# ---- the upstream stopped: READY=1 anyway; SIGTERM exits within bound --
kill -STOP "$GANESHA_PID"
ready=$(notes READY=1) down=$(notes "STATUS=upstream down")
start
if [ "$HAVE_NOTIFY" = 1 ]; then
    wait_note READY=1 $((ready + 1)) 15
    ok $? "READY=1 arrives while the upstream does not answer"
    num_ok "$(notes "STATUS=upstream down")" -gt "$down" "and STATUS= says the upstream is down"
fi
kill -CONT "$GANESHA_PID"
until ctl status 2>/dev/null | grep -qx 'upstream up'; do sleep 0.1; done
if [ "$HAVE_NOTIFY" = 1 ]; then
    for ((i = 0; i < 30; i++)); do tail -n 1 "$NOTES" | grep -q " STATUS=upstream up" && break; sleep 0.1; done
    tail -n 1 "$NOTES" | grep -q " STATUS=upstream up"
    ok $? "STATUS= follows when the upstream comes back"
fi

head -c 200000 /dev/urandom > "$T_TMP/b.src"
rpc create "$FH_ROOT" b > "$T_TMP/create.out"
fh=$(val "$T_TMP/create.out" fh)
rpc pwrite "$fh" 0 "$T_TMP/b.src" --stable unstable > "$T_TMP/pwrite.out"
is "$(val "$T_TMP/pwrite.out" committed)" UNSTABLE "a second file written UNSTABLE"
kill -STOP "$GANESHA_PID"
term 30
kill -CONT "$GANESHA_PID"   # at once: stopped, it would not be stopped by the exit trap
is "$rc" 0 "SIGTERM with the upstream stopped: exit status 0"
num_ok "$took_ms" -lt 12000 "within upstream.timeout_ms (4 s) and a margin (${took_ms} ms)"
grep -qE "main: .*: [0-9]+ dirty bytes not written back: kept in the index" "$T_TMP/nfscached.log"
ok $? "the log counts the dirty bytes left"

# restarted while the upstream is still stopped: the index gives them back
kill -STOP "$GANESHA_PID"
start
for ((i = 0; i < 100; i++)); do [ -S "$CTL" ] && stat_value cache.dirty.bytes >/dev/null 2>&1 && break; sleep 0.1; done
num_ok "$(stat_value cache.dirty.bytes)" -ge 200000 "the next start finds the dirty bytes in the index"
kill -CONT "$GANESHA_PID"
eventually 300 cmp -s "$T_TMP/b.src" "$EXPORT_DIR/b"
ok $? "the next start writes them back"
done_testing
