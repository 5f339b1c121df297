#!/bin/bash
# 25-cache-index: the index across restarts.  A clean stop commits it and the
# next start serves from the cache; a corrupt index never blocks start-up: the
# cache starts empty, the old backing files are removed, and reads are right;
# pages zeroed after a clean stop (whose mark skips the check) are found by
# that start's first read of the index, which starts afresh then.
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the cache index of nfscached"
needs_own_upstream
setup

head -c 3M /dev/urandom > "$EXPORT_DIR/f"
SUM=$(md5 "$EXPORT_DIR/f")
# read_f WHAT: f read through nfscached is right; READS: the upstream READs it took
read_f() {
    local r0
    r0=$(stat_value upstream.calls.READ)
    is "$(nfs_cat "$(proxy_url f)" | md5sum | cut -d' ' -f1)" "$SUM" "$1"
    READS=$(( $(stat_value upstream.calls.READ) - r0 ))
}
objects() { ctl status | awk '$1 == "cache_objects" { print $2 }'; }
read_f "cold read through nfscached"
stop_nfscached
ok $? "clean stop"
num_ok "$(find "$T_TMP/cache/objects" -type f | wc -l)" -eq 1 "one backing file"

start_nfscached 2>"$T_TMP/start.err"
ok $? "restart"
is "$(objects)" 1 "status: the object is back"
read_f "warm read after the restart"
is "$READS" 0 "with no upstream READ"
stop_nfscached

# garbage over the index
dd if=/dev/urandom of="$T_TMP/cache/index.sqlite" bs=4096 count=4 conv=notrunc 2>/dev/null
rm -f "$T_TMP/cache/index.sqlite-wal" "$T_TMP/cache/index.sqlite-shm"
start_nfscached 2>"$T_TMP/start.err"
ok $? "start with a corrupt index"
is "$(ctl status | awk '$1 == "cache" { print $2 }')" caching "the cache is on"
is "$(objects)" 0 "and empty"
grep -q "cache: index in .* was unusable: starting with an empty cache" "$T_TMP/nfscached.log"
ok $? "the log says the index was reset"
for _ in $(seq 50); do [ -z "$(ls -A "$T_TMP"/cache/graveyard 2>/dev/null)" ] && break; sleep 0.1; done
is "$(ls -A "$T_TMP"/cache/graveyard 2>/dev/null)" "" "the old backing files are removed"
is "$(find "$T_TMP/cache/objects" -type f | wc -l)" 0 "none is left among the objects"
read_f "the read is right"
num_ok "$READS" -ge 1 "and came from the upstream"

# pages zeroed after a clean stop: its mark skips the quick_check, so the
# damage is found by the start's first read of the index (the totals), and
# the cache starts afresh then, not at some later start
stop_nfscached
ok $? "clean stop"
python3 - "$T_TMP/cache/index.sqlite" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
size = db.execute("PRAGMA page_size").fetchone()[0]
pages = [r[0] for r in db.execute("SELECT rootpage FROM sqlite_master WHERE tbl_name = 'totals' AND rootpage > 1")]
db.close()
with open(sys.argv[1], "r+b") as f:
    for p in pages:
        f.seek((p - 1) * size)
        f.write(bytes(size))
PY
ok $? "the totals' pages zeroed"
L0=$(wc -l < "$T_TMP/nfscached.log")
start_nfscached 2>"$T_TMP/start.err"
ok $? "start after the damage"
tail -n +"$((L0 + 1))" "$T_TMP/nfscached.log" > "$T_TMP/damage.log"
grep -q "clean stop recorded, quick_check skipped" "$T_TMP/damage.log"
ok $? "the clean stop's mark skipped the quick_check"
grep -q "totals: .*the file is damaged" "$T_TMP/damage.log"
ok $? "the damage is logged"
grep -q "cache: index in .* was unusable: starting with an empty cache" "$T_TMP/damage.log"
ok $? "and the cache starts afresh"
is "$(objects)" 0 "status: no object"
read_f "the read is right"
num_ok "$READS" -ge 1 "and came from the upstream"
read_f "read again"
is "$READS" 0 "from the cache: it works again"
stop_nfscached
start_nfscached 2>"$T_TMP/start.err"
ok $? "a clean restart"
is "$(objects)" 1 "status: the object is in the new index"
read_f "read after it"
is "$READS" 0 "with no upstream READ"
done_testing
