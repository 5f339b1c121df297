#!/bin/bash
# Configuration errors at start-up: FILE:LINE messages and exit status 2;
# `-t` prints the effective configuration; a bad listen address exits 1.
. "$(dirname "$0")/../lib.sh"

conf=$T_TMP/t.conf

# run_t CONF-TEXT [ARGS...]: nfscached -t on CONF-TEXT; sets RC and OUT.
run_t() {
    printf '%s\n' "$1" > "$conf"
    shift
    OUT=$(timeout 10 "$NFSCACHED" -t -c "$conf" "$@" 2>&1)
    RC=$?
}

run_t '[upstream]
url = nfs://127.0.0.1/export?nfsport=12049
[cache]
readahead = 4M'
is "$RC" 0 "-t accepts a valid file"
grep -qx 'readahead = 4194304' <<<"$OUT"; ok $? "-t prints the effective readahead in bytes"
grep -qx 'max_record = 1114112' <<<"$OUT"; ok $? "-t prints defaults for keys not in the file"

# the default listen address is 127.0.0.1:2049, the default NFS port 2049
run_t '[upstream]
url = nfs://127.0.0.1/export'
is "$RC" 2 "an upstream.url that is nfscached's own listen address exits 2"
is "$OUT" "$conf:2: upstream.url: points at nfscached's own listen address (127.0.0.1:2049)" \
   "and says so: $OUT"

run_t '[upstream]
url = nfs://127.0.0.1/export?nfsport=12049' -o cache.dir=cache
is "$RC" 2 "a relative cache.dir exits 2"
is "$OUT" "-o cache.dir=cache: cache.dir: must be an absolute path" "and says so: $OUT"

run_t '[upstream]
url = nfs://127.0.0.1/export?nfsport=12049

[cache]
page_size = 1000'
is "$RC" 2 "a page size that is not a power of two exits 2"
grep -q "cache.page_size: 1000 is not a power of two" <<<"$OUT"; ok $? "and says why: $OUT"

run_t '[upstream]
url = nfs://127.0.0.1/export?nfsport=12049
[server]
listen = 127.0.0.1:0
colour = blue'
is "$RC" 2 "an unknown key exits 2"
is "$OUT" "$conf:5: unknown key \"colour\" in [server]" "the message is FILE:LINE: message"

run_t '[upstream]
url = nfs://127.0.0.1/export?nfsport=12049
[cache]
bstop = 8%'
is "$RC" 2 "bstop above bcull exits 2"

run_t '[upstream]
url = nfs://127.0.0.1/export?nfsport=12049
[cache]
max_dirty = 12 parsecs'
is "$RC" 2 "a bad size exits 2"
grep -q "^$conf:4: cache.max_dirty: " <<<"$OUT"; ok $? "and says where and which key: $OUT"

run_t '[upstream]
url = nfs://127.0.0.1/export?nfsport=12049
[cache]
brun = 140%'
is "$RC" 2 "a percentage out of range exits 2"
grep -q "^$conf:4: cache.brun: " <<<"$OUT"; ok $? "and says where and which key: $OUT"

run_t '[upstream]
url = nfs://127.0.0.1/export?nfsport=12049
[cache]
write_mode = sometimes'
is "$RC" 2 "an unknown write_mode exits 2"
grep -q "^$conf:4: cache.write_mode: " <<<"$OUT"; ok $? "and says where and which key: $OUT"

run_t '[upstream]
url = nfs://127.0.0.1/export?nfsport=12049' -o server.max_record=12x
is "$RC" 2 "a bad -o value exits 2"
grep -q -- "-o server.max_record=12x: server.max_record: expected a size" <<<"$OUT"; ok $? "and names the override"

OUT=$(timeout 10 "$NFSCACHED" -t -c "$T_TMP/missing.conf" 2>&1); RC=$?
is "$RC" 2 "a missing -c file exits 2"

OUT=$(timeout 10 "$NFSCACHED" --no-such-option 2>&1); RC=$?
is "$RC" 2 "an unknown option exits 2"

# a listen address in use: an OS error, exit 1
python3 -c 'import socket,time,sys
s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1]); sys.stdout.flush(); time.sleep(30)' > "$T_TMP/port" &
HOLDER=$!
for _ in $(seq 50); do [ -s "$T_TMP/port" ] && break; sleep 0.1; done
printf '[upstream]\nurl = nfs://127.0.0.1/export\n[server]\nlisten = 127.0.0.1:%s\n[control]\nsocket = %s\n' \
    "$(cat "$T_TMP/port")" "$T_TMP/ctl.sock" > "$conf"
OUT=$(timeout 10 "$NFSCACHED" -f -c "$conf" 2>&1); RC=$?
kill "$HOLDER" 2>/dev/null; wait "$HOLDER" 2>/dev/null
is "$RC" 1 "a listen address in use exits 1"
grep -q "cannot listen on 127.0.0.1:" <<<"$OUT"; ok $? "and logs the address"

done_testing
