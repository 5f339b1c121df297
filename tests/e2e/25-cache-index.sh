#!/bin/bash
# 25-cache-index: the index across restarts.  A clean stop commits it and the
# next start serves from the cache; a corrupt index never blocks start-up: the
# cache starts empty, the old backing files are removed, and reads are right.
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the cache index of nfscached"
needs_own_upstream
setup

head -c 3M /dev/urandom > "$EXPORT_DIR/f"
SUM=$(md5 "$EXPORT_DIR/f")
is "$(nfs_cat "$(proxy_url f)" | md5sum | cut -d' ' -f1)" "$SUM" "cold read through nfscached"
stop_nfscached
ok $? "clean stop"
num_ok "$(find "$T_TMP/cache/objects" -type f | wc -l)" -eq 1 "one backing file"

start_nfscached 2>"$T_TMP/start.err"
ok $? "restart"
is "$(ctl status | awk '$1 == "cache_objects" { print $2 }')" 1 "status: the object is back"
reads=$(stat_value upstream.calls.READ)
is "$(nfs_cat "$(proxy_url f)" | md5sum | cut -d' ' -f1)" "$SUM" "warm read after the restart"
is "$(stat_value upstream.calls.READ)" "$reads" "with no upstream READ"
stop_nfscached

# garbage over the index
dd if=/dev/urandom of="$T_TMP/cache/index.sqlite" bs=4096 count=4 conv=notrunc 2>/dev/null
rm -f "$T_TMP/cache/index.sqlite-wal" "$T_TMP/cache/index.sqlite-shm"
start_nfscached 2>"$T_TMP/start.err"
ok $? "start with a corrupt index"
is "$(ctl status | awk '$1 == "cache" { print $2 }')" caching "the cache is on"
is "$(ctl status | awk '$1 == "cache_objects" { print $2 }')" 0 "and empty"
grep -q "cache: index in .* was unusable: starting with an empty cache" "$T_TMP/nfscached.log"
ok $? "the log says the index was reset"
for _ in $(seq 50); do [ -z "$(ls -A "$T_TMP"/cache/graveyard 2>/dev/null)" ] && break; sleep 0.1; done
is "$(ls -A "$T_TMP"/cache/graveyard 2>/dev/null)" "" "the old backing files are removed"
is "$(find "$T_TMP/cache/objects" -type f | wc -l)" 0 "none is left among the objects"
reads=$(stat_value upstream.calls.READ)
is "$(nfs_cat "$(proxy_url f)" | md5sum | cut -d' ' -f1)" "$SUM" "the read is right"
num_ok "$(( $(stat_value upstream.calls.READ) - reads ))" -ge 1 "and came from the upstream"
done_testing
