#!/bin/bash
# 52-cull-orphans: the start-up reconciliation of the index with the backing
# files.  A cache populated through nfscached, the daemon stopped, then
# planted: a backing file no index row names, an index row with a range but
# no backing file, one real object's backing file deleted (its row becomes an
# orphan) and an entry in the graveyard.  After the restart: the orphan file,
# both orphan rows and the graveyard entry are gone, the log line counts them
# (1 file, 2 rows, 1 graveyard entry), the other files are still served from
# the cache (no upstream READ) and the one whose backing file was deleted is
# read right, from the upstream.
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the start-up reconciliation of nfscached's cache"
needs_own_upstream
setup

CACHE=$T_TMP/cache
IDX=$CACHE/index.sqlite
KIB=1024

# sql QUERY [ARG...]: the rows of QUERY on the index, one a line, columns
# separated by spaces (blobs in hex)
sql() {
    python3 - "$IDX" "$@" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
for row in db.execute(sys.argv[2], sys.argv[3:]):
    print(" ".join(v.hex() if isinstance(v, bytes) else str(v) for v in row))
db.commit()
db.close()
EOF
}
obj_path() { printf '%s/objects/%02x/%016x' "$CACHE" $(($1 & 255)) "$1"; }

# four files of distinct sizes (the index rows are told apart by their size)
for i in 1 2 3 4; do
    head -c $((i * 100 * KIB)) /dev/urandom > "$EXPORT_DIR/f$i"
done
for i in 1 2 3 4; do
    is "$(cat_md5 f$i)" "$(md5 "$EXPORT_DIR/f$i")" "f$i read through nfscached"
done
stop_nfscached
ok $? "clean stop"

rows=$(sql "SELECT count(*) FROM objects o WHERE EXISTS (SELECT 1 FROM ranges r WHERE r.object = o.id)")
is "$rows" 4 "the index has four objects with ranges"
id_of() { sql "SELECT id FROM objects WHERE size = ?" "$1"; }
ID1=$(id_of $((100 * KIB))) ID2=$(id_of $((200 * KIB)))
ID3=$(id_of $((300 * KIB))) ID4=$(id_of $((400 * KIB)))
diag "object ids: f1 $ID1, f2 $ID2, f3 $ID3, f4 $ID4"
for id in "$ID1" "$ID2" "$ID3" "$ID4"; do
    [[ "$id" =~ ^[0-9]+$ ]] && [ -f "$(obj_path "$id")" ] || { ok 1 "object $id has its backing file"; done_testing; }
done
ok 0 "each of them has its backing file"
MAXID=$(sql "SELECT max(id) FROM objects")
VOLUME=$(sql "SELECT DISTINCT volume FROM objects")
diag "volume $VOLUME, highest id $MAXID"

# an orphan index row with a range: a high unused id (it also raises the
# highest id known at start, so the orphan file below is not "created since")
ROW_ID=$((MAXID + 100)) FILE_ID=$((MAXID + 50))
sql "INSERT INTO objects (id, volume, fh, size, mtime_ns, ctime_ns, fileid, last_access, wopen,
                          wb_uid, wb_gid, wb_gids)
     SELECT ?, volume, randomblob(28), 8192, mtime_ns, ctime_ns, 987654321, last_access, 0,
            wb_uid, wb_gid, wb_gids FROM objects WHERE id = ?" "$ROW_ID" "$ID1"
sql "INSERT INTO ranges (object, start, \"end\") VALUES (?, 0, 8192)" "$ROW_ID"
is "$(sql "SELECT count(*) FROM objects WHERE id = ?" "$ROW_ID")" 1 "planted: an index row ($ROW_ID) without a backing file"
# an orphan backing file
head -c 8192 /dev/urandom > "$(obj_path "$FILE_ID")"
ok $? "planted: an orphan backing file $(obj_path "$FILE_ID" | sed "s|^$CACHE/||")"
# a real object loses its backing file
rm -f "$(obj_path "$ID2")"
ok $? "planted: f2's backing file deleted"
# the graveyard
mkdir -p "$CACHE/graveyard"
head -c 4096 /dev/urandom > "$CACHE/graveyard/0000000000abcdef"
ok $? "planted: a graveyard entry"

start_nfscached 2>"$T_TMP/start.err"
ok $? "restart" || diag "$(cat "$T_TMP/start.err")"
line=
for _ in $(seq 100); do
    line=$(grep "cache: reconciled with" "$T_TMP/nfscached.log" | tail -n 1)
    [ -n "$line" ] && break
    sleep 0.1
done
diag "log: $line"
[[ "$line" == *"cache: reconciled with $CACHE: 1 orphan backing files and 2 index rows without a file removed, 1 graveyard entries deleted"* ]]
ok $? "the log line counts 1 orphan file, 2 orphan rows, 1 graveyard entry"

[ ! -e "$(obj_path "$FILE_ID")" ]
ok $? "the orphan backing file is gone"
is "$(ls -A "$CACHE/graveyard")" "" "the graveyard is empty"
# the rows go with the next batch commit: queried while running (WAL reader)
for _ in $(seq 50); do
    left=$(sql "SELECT count(*) FROM objects WHERE id IN (?, ?)" "$ROW_ID" "$ID2")
    [ "$left" = 0 ] && break
    sleep 0.1
done
is "$left" 0 "the planted row and f2's row are gone from the index"
is "$(sql "SELECT count(*) FROM ranges WHERE object IN (?, ?)" "$ROW_ID" "$ID2")" 0 "and their ranges"
is "$(sql "SELECT count(*) FROM objects WHERE id IN (?, ?, ?)" "$ID1" "$ID3" "$ID4")" 3 \
    "the rows of f1, f3 and f4 are kept"
for id in "$ID1" "$ID3" "$ID4"; do
    [ -f "$(obj_path "$id")" ] || { diag "missing: $(obj_path "$id")"; false; }
done
ok $? "and their backing files"
is "$(ctl status | awk '$1 == "cache_objects" { print $2 }')" 3 "status: three objects"

snap r0
for i in 1 3 4; do
    is "$(cat_md5 f$i)" "$(md5 "$EXPORT_DIR/f$i")" "f$i read right after the restart"
done
snap r1
is "$(d r0 r1 upstream.calls.READ)" 0 "f1, f3 and f4 are served from the cache: no upstream READ"
num_ok "$(d r0 r1 cache.read.hits)" -ge 3 "cache.read.hits rose (+$(d r0 r1 cache.read.hits))"
is "$(cat_md5 f2)" "$(md5 "$EXPORT_DIR/f2")" "f2 (its backing file deleted) is read right"
snap r2
num_ok "$(d r1 r2 upstream.calls.READ)" -ge 1 "f2 came from the upstream (+$(d r1 r2 upstream.calls.READ) READs)"
done_testing
