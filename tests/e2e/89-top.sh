#!/bin/bash
# 89-top: nfscachectl top.  On a terminal (a detached tmux session of fixed
# size on a private tmux server): the screen shows its labels; a file read
# cold shows misses and MB/s fetched, read again (warm) a frame with READ
# hits only, hit ratio 100.0%, MB/s local > 0 and nothing fetched; the
# cold read's frame has the upstream READ round trip p50/p99; `q`
# ends it with status 0, out of the alternate screen, the terminal modes
# as before; a resize redraws to the new size; Ctrl-C ends it as `q` does.  Not on a terminal (`top --once`, piped): one plain-text frame
# without an ESC byte whose rates times the interval are the counters'
# increases over a read made inside the interval.  Stdin /dev/null on the
# terminal: top still refreshes every interval without spinning (its CPU
# time over 3 s from /proc) and SIGTERM ends it at once, status 0, the
# terminal restored.  A socket answering control bytes: status 1, the
# message without them.  The daemon SIGSTOPped: `top --once` exits 2
# after the answer deadline (5 s) with the reason; on the screen `q` ends
# top at once while a request waits, and without `q` top leaves the
# screen after the deadline, says why, status 2.  The daemon stopped
# while top runs: the screen is left, the reason printed, status 2; and
# `top --once` with no daemon: status 2 with a message.
TEST_TIMEOUT=${TEST_TIMEOUT:-240}
. "$(dirname "$0")/../lib.sh"
needs_daemon "nfscachectl top"
needs_own_upstream
command -v tmux >/dev/null || fail_or_skip "tmux is not installed (Debian: tmux)"
setup

MIB=1048576
NAME=top16
SIZE=$((16 * MIB))
head -c "$SIZE" /dev/urandom > "$EXPORT_DIR/$NAME"

TMUX_SOCK=$T_TMP/tmux.sock
tm() { tmux -S "$TMUX_SOCK" "$@"; }

# read_file: the file through nfscached with nfs-cp, checked byte for byte
read_file() {
    rm -f "$T_TMP/copy"
    nfs_cp "$(proxy_url "$NAME")" "$T_TMP/copy" > "$T_TMP/cp.log" 2>&1 &&
        cmp -s "$T_TMP/copy" "$EXPORT_DIR/$NAME"
    ok $? "$1: the file read through nfscached is the export file" ||
        diag "$(tail -n 3 "$T_TMP/cp.log")"
}

# top_in_session NAME TAG [ARG...]: `nfscachectl top ARG...` in a detached
# 100x30 session NAME; the pane's shell records the terminal modes before
# and after in T_TMP/TAG.stty.{before,after}, top's PID in TAG.pid, its
# status in TAG.rc and its stderr in TAG.err, then waits for T_TMP/TAG.done.
# TOP_STDIN (default: the terminal) is top's stdin.
top_in_session() {
    local t=$T_TMP/$2
    tm new-session -d -s "$1" -x 100 -y 30 \
        "stty -g > $t.stty.before;
         sh -c 'echo \$\$ > $t.pid; exec \"\$0\" \"\$@\"' '$NFSCACHECTL' -s '$CTL' top ${*:3} \
             ${TOP_STDIN:+< $TOP_STDIN} 2> $t.err; echo \$? > $t.rc;
         stty -g > $t.stty.after; until [ -e $t.done ]; do sleep 0.1; done"
}

screen() { tm capture-pane -p -t "$1" 2>/dev/null; }
# field FILE LABEL N: word N of the line starting with LABEL
field() { awk -v l="$2" -v n="$3" '$1 == l { print $n; exit }' "$1"; }

# wait_for SECONDS CMD...: until CMD succeeds; its status
wait_for() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.1
    done
}

# frame_where SESSION SECONDS AWK-CONDITION: captures the pane every 0.2 s
# until a frame's READ/s line (fields: 3 hits, 5 partial, 7 misses, 10
# ratio) and MB/s line (3 local, 5 fetched) meet the condition; that frame
# in T_TMP/frame.  Returns 1 when none did in time (the last in T_TMP/frame).
frame_where() {
    local deadline=$((SECONDS + $2))
    while [ "$SECONDS" -lt "$deadline" ]; do
        screen "$1" > "$T_TMP/frame"
        awk '$1 == "READ/s" { h = $3; p = $5; m = $7; r = $10 }
             $1 == "MB/s" { l = $3; f = $5; seen = 1 }
             END { exit !(seen && ('"$3"')) }' "$T_TMP/frame" && return 0
        sleep 0.2
    done
    return 1
}

# ---- on a terminal -----------------------------------------------------------
top_in_session top tty
track "$(tm display-message -p '#{pid}')"
# one server for all sessions: a new session could otherwise reach the
# server as it exits with the session before (tmux "server exited
# unexpectedly")
tm set-option -s exit-empty off
wait_for 10 sh -c "tmux -S '$TMUX_SOCK' capture-pane -p -t top | grep -q '^calls/s'"
ok $? "tty: top draws its screen" || diag "$(screen top)"
screen top > "$T_TMP/first"
for label in calls/s busiest/s READ/s namespace/s MB/s upstream 'rtt ms' '  READ' '  GETATTR' \
    '  WRITE' cache 'q: quit'; do
    grep -q "^$label" "$T_TMP/first"
    ok $? "tty: the screen shows \"$label\""
done
is "$(tm display-message -p -t top '#{alternate_on}')" 1 "tty: top draws on the alternate screen"
is "$(field "$T_TMP/first" upstream 2)" up "tty: the upstream state of status"
is "$(field "$T_TMP/first" cache 2)" caching "tty: the cache state of status"

read_file cold
frame_where top 5 'm > 0 && f > 0'
ok $? "tty: cold read: a frame with READ misses and MB/s fetched > 0" || diag "$(cat "$T_TMP/frame")"
grep -Eq '^busiest/s +READ [0-9.]+' "$T_TMP/frame"
ok $? "tty: cold read: READ is the busiest procedure" || diag "$(grep busiest "$T_TMP/frame")"
cp "$T_TMP/frame" "$T_TMP/cold"
rtt_read=$(field "$T_TMP/cold" READ 2)
[[ "$rtt_read" =~ ^[0-9]+\.[0-9]{3}$ ]] &&
    awk -v a="$rtt_read" -v b="$(field "$T_TMP/cold" READ 3)" 'BEGIN { exit !(a > 0 && b >= a) }'
ok $? "tty: cold read: upstream READ round trip p50 ($rtt_read ms) > 0, p99 >= p50" ||
    diag "$(grep -A 5 '^rtt' "$T_TMP/cold")"
[[ "$(field "$T_TMP/cold" all 2)" =~ ^[0-9]+\.[0-9]{3}$ ]]
ok $? "tty: cold read: a round trip p50 of all procedures"
[[ "$(awk '$1 == "upstream" { print $6 }' "$T_TMP/cold")" =~ ^[0-9]+\.[0-9]{3}$ ]]
ok $? "tty: the upstream's srtt in ms, from status" || diag "$(grep '^upstream' "$T_TMP/cold")"
frame_where top 10 'h + p + m == 0'
ok $? "tty: then a frame without READs" || diag "$(cat "$T_TMP/frame")"

snap w0
read_file warm
snap w1
is "$(d w0 w1 cache.read.misses)" 0 "warm: no READ missed the cache (stats)"
frame_where top 5 'h > 0'
ok $? "tty: warm read: a frame with READ hits" || diag "$(cat "$T_TMP/frame")"
is "$(field "$T_TMP/frame" READ/s 10)" 100.0% "tty: warm read: hit ratio 100.0%"
is "$(field "$T_TMP/frame" READ/s 7)" 0.0 "tty: warm read: no miss"
is "$(field "$T_TMP/frame" MB/s 5)" 0.00 "tty: warm read: nothing fetched"
num_ok "$(field "$T_TMP/frame" MB/s 3 | tr -d .)" -gt 0 "tty: warm read: MB/s local > 0"
num_ok "$(field "$T_TMP/frame" calls/s 2 | tr -d .)" -gt 0 "tty: warm read: calls/s > 0"

tm resize-window -t top -x 72 -y 12
wait_for 5 sh -c "tmux -S '$TMUX_SOCK' capture-pane -p -t top | tail -n 1 | grep -q '^q: quit'"
ok $? "tty: after a resize to 72x12 the screen is drawn to the new size (help on the last line)" ||
    diag "$(screen top)"
is "$(screen top | grep -c '^calls/s')" 1 "tty: resized: the rates are still shown"

tm send-keys -t top q
wait_for 10 test -s "$T_TMP/tty.rc"
is "$(cat "$T_TMP/tty.rc" 2>/dev/null)" 0 "tty: q ends top with status 0"
is "$(tm display-message -p -t top '#{alternate_on}')" 0 "tty: the alternate screen is left"
cmp -s "$T_TMP/tty.stty.before" "$T_TMP/tty.stty.after"
ok $? "tty: the terminal modes are restored" ||
    diag "before $(cat "$T_TMP/tty.stty.before") after $(cat "$T_TMP/tty.stty.after")"
is "$(screen top | grep -c '^calls/s')" 0 "tty: the screen of top is gone"
is "$(wc -c < "$T_TMP/tty.err")" 0 "tty: nothing on stderr"
touch "$T_TMP/tty.done"
wait_for 10 sh -c "! tmux -S '$TMUX_SOCK' has-session -t top 2>/dev/null"
ok $? "tty: the session ends with the pane's shell"

# ---- not on a terminal: --once ---------------------------------------------------
INTERVAL=5
ctl top --once --interval "$INTERVAL" > "$T_TMP/once" 2> "$T_TMP/once.err" &
ONCE_PID=$!
track "$ONCE_PID"
sleep 0.5
t0=$(now_ms)
snap o0
read_file once
snap o1
read_ms=$(( $(now_ms) - t0 ))
wait "$ONCE_PID"
is "$?" 0 "once: top --once exits 0"
diag "once: the read took $read_ms ms, inside the $INTERVAL s interval" "$(sed 's/^/  /' "$T_TMP/once")"
num_ok "$read_ms" -lt $(( (INTERVAL - 1) * 1000 )) "once: the read ended inside the interval"
is "$(grep -c $'\033' "$T_TMP/once")" 0 "once: no ESC byte in the output"
is "$(grep -c 'q: quit' "$T_TMP/once")" 0 "once: no key help"
grep -Eq '^nfscached .* interval 5\.[0-9]{2} s$' "$T_TMP/once"
ok $? "once: the measured interval is shown"
# the rates times the measured interval against the counters' increase
interval=$(awk '$1 == "nfscached" { for (i = 1; i < NF; i++) if ($i == "interval") print $(i + 1) }' "$T_TMP/once")
# close RATE DELTA UNIT STEP: |RATE * interval * UNIT - DELTA| within the
# rounding of the printed rate (half its last digit STEP) and of the printed
# interval (half of 0.01 s)
close() {
    awk -v r="$1" -v d="$2" -v u="$3" -v i="$interval" -v q="$4" \
        'BEGIN { e = r * i * u - d; if (e < 0) e = -e
                 exit !(e <= (q / 2 * i + (r + q / 2) * 0.005) * u + 0.5) }'
}
local_mbs=$(field "$T_TMP/once" MB/s 3)
bytes_local=$(d o0 o1 cache.read.bytes_local)
num_ok "$(tr -d . <<<"$local_mbs")" -gt 0 "once: MB/s local > 0 during the read"
is "$bytes_local" "$SIZE" "once: the read was answered from the cache (stats)"
close "$local_mbs" "$bytes_local" 1000000 0.01
ok $? "once: MB/s local ($local_mbs) x interval ($interval s) is cache.read.bytes_local's increase ($bytes_local)"
hits=$(field "$T_TMP/once" READ/s 3)
close "$hits" "$(d o0 o1 cache.read.hits)" 1 0.1
ok $? "once: READ hits/s ($hits) x interval is cache.read.hits' increase ($(d o0 o1 cache.read.hits))"
# client_calls FROM TO: the increase of all nfs3.calls.* and mount3.calls.*
client_calls() {
    awk 'FNR == NR { a[$1] = $2; next }
         $1 ~ /^(nfs3|mount3)\.calls\./ { s += $2 - a[$1] } END { print s + 0 }' \
        "$T_TMP/$1.stats" "$T_TMP/$2.stats"
}
calls=$(field "$T_TMP/once" calls/s 2)
close "$calls" "$(client_calls o0 o1)" 1 0.1
ok $? "once: calls/s ($calls) x interval is the client calls' increase ($(client_calls o0 o1))"
is "$(field "$T_TMP/once" READ/s 10)" 100.0% "once: hit ratio 100.0%"
is "$(field "$T_TMP/once" MB/s 5)" 0.00 "once: nothing fetched"
is "$(d o0 o1 upstream.calls.READ)" 0 "once: no READ went upstream (stats)"
is "$(field "$T_TMP/once" READ 2)" - "once: so no READ round trip in the interval"
is "$(wc -c < "$T_TMP/once.err")" 0 "once: nothing on stderr"

# ---- Ctrl-C ----------------------------------------------------------------------
top_in_session intr intr
wait_for 10 sh -c "tmux -S '$TMUX_SOCK' capture-pane -p -t intr | grep -q '^calls/s'"
ok $? "intr: top draws its screen"
tm send-keys -t intr C-c
wait_for 10 test -s "$T_TMP/intr.rc"
is "$(cat "$T_TMP/intr.rc" 2>/dev/null)" 0 "intr: Ctrl-C ends top with status 0"
is "$(tm display-message -p -t intr '#{alternate_on}')" 0 "intr: the alternate screen is left"
cmp -s "$T_TMP/intr.stty.before" "$T_TMP/intr.stty.after"
ok $? "intr: the terminal modes are restored"
touch "$T_TMP/intr.done"

# ---- stdin not a terminal -----------------------------------------------------
# cpu_ms PID: the user + system CPU time of PID so far, ms (/proc/PID/stat)
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$1/stat"; }
TOP_STDIN=/dev/null top_in_session null null
wait_for 10 sh -c "tmux -S '$TMUX_SOCK' capture-pane -p -t null | grep -q '^calls/s'"
ok $? "null: stdin /dev/null: top draws its screen" || diag "$(screen null)"
null_pid=$(cat "$T_TMP/null.pid")
cpu0=$(cpu_ms "$null_pid")
sleep 3
cpu1=$(cpu_ms "$null_pid")
num_ok $((cpu1 - cpu0)) -lt 500 "null: top used $((cpu1 - cpu0)) ms of CPU in 3 s: no busy loop"
screen null | grep -Eq '^nfscached .* interval (0\.9|1\.[01])[0-9] s$'
ok $? "null: the screen is redrawn every interval (1 s)" || diag "$(screen null | head -n 1)"
t0=$(now_ms)
kill -TERM "$null_pid"
wait_for 10 test -s "$T_TMP/null.rc"
took=$(( $(now_ms) - t0 ))
is "$(cat "$T_TMP/null.rc" 2>/dev/null)" 0 "null: SIGTERM ends top with status 0"
num_ok "$took" -lt 1000 "null: at once ($took ms; no key can be read)"
is "$(tm display-message -p -t null '#{alternate_on}')" 0 "null: the alternate screen is left"
cmp -s "$T_TMP/null.stty.before" "$T_TMP/null.stty.after"
ok $? "null: the terminal modes are restored"
is "$(wc -c < "$T_TMP/null.err")" 0 "null: nothing on stderr"
touch "$T_TMP/null.done"

# ---- a socket that is not the daemon's -----------------------------------------
FAKE=$T_TMP/fake.sock
python3 - "$FAKE" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(4)
while True:
    c, _ = s.accept()
    c.recv(4096)
    c.sendall(b"\x1b]0;title\x07\x1b[2Jnot\x7fthe daemon\r\x08\n")
    c.close()
PY
track $!
wait_for 10 test -S "$FAKE"
timeout 30 "$NFSCACHECTL" -s "$FAKE" top --once > "$T_TMP/fake.out" 2> "$T_TMP/fake.err"
is "$?" 1 "fake: an answer that is not \"ok\": status 1"
is "$(cat "$T_TMP/fake.err")" "nfscachectl: ?]0;title??[2Jnot?the daemon??" \
    "fake: its first line, control bytes as '?'"
is "$(tr -d '\n' < "$T_TMP/fake.err" | LC_ALL=C tr -d '[:print:]' | wc -c)" 0 \
    "fake: nothing but printable text and the newline on stderr"

# ---- the daemon does not answer ------------------------------------------------
# The daemon is SIGSTOPped (this test's daemon, by PID) and continued after.
kill -STOP "$NFSCACHED_PID"
t0=$(now_ms)
timeout 30 "$NFSCACHECTL" -s "$CTL" top --once > "$T_TMP/hang" 2> "$T_TMP/hang.err"
rc=$?
took=$(( $(now_ms) - t0 ))
kill -CONT "$NFSCACHED_PID"
is "$rc" 2 "hang: top --once exits 2 when the daemon does not answer"
num_ok "$took" -ge 5000 "hang: not before the 5 s deadline ($took ms)"
num_ok "$took" -lt 9000 "hang: but after it, with a margin ($took ms)"
is "$(cat "$T_TMP/hang.err")" "nfscachectl: the daemon did not answer within 5 s" "hang: and says why"
is "$(wc -c < "$T_TMP/hang")" 0 "hang: nothing on stdout"
ctl status > /dev/null
ok $? "hang: the daemon answers again once continued"

top_in_session stopq stopq --interval 0.5
wait_for 10 sh -c "tmux -S '$TMUX_SOCK' capture-pane -p -t stopq | grep -q '^calls/s'"
ok $? "stopq: top draws its screen"
kill -STOP "$NFSCACHED_PID"
sleep 1.5                               # a request is waiting now
is "$(tm display-message -p -t stopq '#{alternate_on}')" 1 "stopq: the screen is still up"
t0=$(now_ms)
tm send-keys -t stopq q
wait_for 10 test -s "$T_TMP/stopq.rc"
took=$(( $(now_ms) - t0 ))
kill -CONT "$NFSCACHED_PID"
is "$(cat "$T_TMP/stopq.rc" 2>/dev/null)" 0 "stopq: q ends top with status 0 while the daemon is stopped"
num_ok "$took" -lt 1000 "stopq: within 1 s of q ($took ms)"
is "$(tm display-message -p -t stopq '#{alternate_on}')" 0 "stopq: the alternate screen is left"
cmp -s "$T_TMP/stopq.stty.before" "$T_TMP/stopq.stty.after"
ok $? "stopq: the terminal modes are restored"
is "$(wc -c < "$T_TMP/stopq.err")" 0 "stopq: nothing on stderr"
touch "$T_TMP/stopq.done"

top_in_session stopdl stopdl --interval 0.5
wait_for 10 sh -c "tmux -S '$TMUX_SOCK' capture-pane -p -t stopdl | grep -q '^calls/s'"
ok $? "stopdl: top draws its screen"
kill -STOP "$NFSCACHED_PID"
t0=$(now_ms)
wait_for 20 test -s "$T_TMP/stopdl.rc"
took=$(( $(now_ms) - t0 ))
kill -CONT "$NFSCACHED_PID"
is "$(cat "$T_TMP/stopdl.rc" 2>/dev/null)" 2 "stopdl: no answer within the deadline: status 2"
# a request sent just before SIGSTOP has its deadline a little earlier
num_ok "$took" -ge 4500 "stopdl: not before the 5 s deadline ($took ms)"
num_ok "$took" -lt 10000 "stopdl: but after it (+ the 0.5 s interval), with a margin ($took ms)"
is "$(cat "$T_TMP/stopdl.err")" "nfscachectl: the daemon did not answer within 5 s" "stopdl: and says why"
is "$(tm display-message -p -t stopdl '#{alternate_on}')" 0 "stopdl: the alternate screen is left"
cmp -s "$T_TMP/stopdl.stty.before" "$T_TMP/stopdl.stty.after"
ok $? "stopdl: the terminal modes are restored"
touch "$T_TMP/stopdl.done"

# ---- the daemon stops --------------------------------------------------------
top_in_session gone gone
wait_for 10 sh -c "tmux -S '$TMUX_SOCK' capture-pane -p -t gone | grep -q '^calls/s'"
ok $? "gone: top draws its screen"
stop_nfscached
ok $? "nfscached exits cleanly on SIGTERM"
no_sanitizer_report "$T_TMP/nfscached.log"
ok $? "no sanitizer report in the daemon log"
wait_for 10 test -s "$T_TMP/gone.rc"
is "$(cat "$T_TMP/gone.rc" 2>/dev/null)" 2 "gone: top exits 2 when the daemon is gone"
grep -q 'cannot connect to .*ctl.sock' "$T_TMP/gone.err"
ok $? "gone: and says why" || diag "$(cat "$T_TMP/gone.err")"
is "$(tm display-message -p -t gone '#{alternate_on}')" 0 "gone: the alternate screen is left"
cmp -s "$T_TMP/gone.stty.before" "$T_TMP/gone.stty.after"
ok $? "gone: the terminal modes are restored"
touch "$T_TMP/gone.done"

ctl top --once > "$T_TMP/none" 2> "$T_TMP/none.err"
is "$?" 2 "no daemon: top --once exits 2"
grep -q 'cannot connect to .*is nfscached running' "$T_TMP/none.err"
ok $? "no daemon: with a message" || diag "$(cat "$T_TMP/none.err")"
is "$(wc -c < "$T_TMP/none")" 0 "no daemon: nothing on stdout"

tm kill-server 2>/dev/null
done_testing
