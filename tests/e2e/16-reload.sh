#!/bin/bash
# 16-reload: SIGHUP re-reads the configuration.  Access rules (server.allow,
# server.secure, server.squash), the log level and timeouts change at once;
# keys that need a restart are named in the log; a broken file changes
# nothing and is reported with FILE:LINE.
TEST_TIMEOUT=${TEST_TIMEOUT:-60}
. "$(dirname "$0")/../lib.sh"
needs_daemon "reloading nfscached's configuration"
needs_own_upstream
setup

conf=$T_TMP/nfscached.conf
cp "$conf" "$T_TMP/conf.orig"
nfs_ls "$(proxy_url)" >/dev/null
ok $? "a loopback client is served"

# hup: send SIGHUP and wait for the daemon's verdict in the log
hup() {
    local before
    before=$(grep -c "main: reload" "$T_TMP/nfscached.log")
    kill -HUP "$NFSCACHED_PID"
    for _ in $(seq 50); do
        [ "$(grep -cE "main: (configuration reloaded|reload of)" "$T_TMP/nfscached.log")" -gt "$before" ] && return 0
        sleep 0.1
    done
}

sed -i 's|^allow = .*|allow = 10.0.0.0/8|; s|^listen = .*|listen = 127.0.0.1:1|' "$conf"
hup
refused=$(stat_value conn.refused)
timeout 10 nfs-ls "$(proxy_url)" >/dev/null 2>&1
ok $((! $?)) "after the reload the loopback client is refused (server.allow = 10.0.0.0/8)"
num_ok "$(stat_value conn.refused)" -gt "$refused" "and conn.refused counts it"
grep -q "main: reload: server.allow changed" "$T_TMP/nfscached.log"; ok $? "the log names server.allow"
grep -q "main: reload: server.listen changed: takes effect after a restart" "$T_TMP/nfscached.log"
ok $? "and says server.listen waits for a restart"

sed -i 's|^level = .*|level = loud|' "$conf"
hup
grep -qE "main: reload: .*nfscached.conf:[0-9]+: log.level: expected error \| warning \| info \| debug" \
    "$T_TMP/nfscached.log"; ok $? "a bad value is reported with FILE:LINE"
grep -q "keeping the running configuration" "$T_TMP/nfscached.log"; ok $? "and nothing changes"

cp "$T_TMP/conf.orig" "$conf"
hup
nfs_ls "$(proxy_url)" >/dev/null
ok $? "the original file back: served again"
done_testing
