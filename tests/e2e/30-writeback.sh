#!/bin/bash
# 30-writeback: UNSTABLE writes kept in the cache and written upstream later
# (cache.dirty_expire_ms = 60000: only COMMIT, `nfscachectl flush` and
# SETATTR write back during the test).
#   a) W1        a 16 MiB file made in the export; 10,000 UNSTABLE WRITEs of
#                1 KiB at random 1 KiB-aligned offsets, 16 in flight, then
#                5,000 READs of 1 KiB compared with a model of the file
#                (rpc.py w1): no error, one write verifier, no mismatch;
#                READs of written blocks are local (hits + partial hits >=
#                their number) and upstream READs <= the READs of unwritten
#                blocks in a page no such READ fetched before (pages are
#                fetched whole); before COMMIT bytes are dirty and the
#                export file is still the old one; COMMIT
#                answers OK with the WRITE verifier, the export file is the
#                model, nothing is dirty, no write-back error, and upstream
#                WRITEs <= the runs of adjacent written blocks (+ 16): the
#                blocks are separated by bytes never read, which a WRITE
#                must not carry, so that is as few as can be.  write_ms
#                through nfscached and against the upstream itself as diag
#   b) flush     a 16 KiB file read through nfscached, UNSTABLE WRITEs at 0
#                and 4096: not upstream before `flush`, there after; COMMIT:
#                three equal verifiers
#   c) copy      nfs-cp of 50 MiB through nfscached (WRITEs of wtmax, COMMIT
#                at close): the export file is identical, upstream WRITEs <=
#                the client's, which are not resent; an 8 MiB file in 4 KiB
#                UNSTABLE WRITEs (rpc.py writefile): far fewer upstream WRITEs
#                than the client's 2048
#   d) no widening  10 bytes written at 10 of a file whose first 10 bytes
#                only the export holds (a file only looked up, and one
#                CREATEd through nfscached): after flush the file is the 20
#                bytes; 10 bytes written at 100 of a 4 KiB file read through
#                nfscached while another writer puts bytes at 300 directly
#                in the export: after flush both
#   f) rename    CREATE a.tmp, 64 KiB UNSTABLE, RENAME a.tmp -> a, SETATTR
#                mode 0600 (written back first), COMMIT: `a` is the source,
#                mode 0600, no a.tmp
#   g) no write permission  uid 1000 WRITEs UNSTABLE to a 0644 root file
#                root has read through nfscached: NFS3ERR_ACCES (or PERM),
#                nothing accepted into the cache, the export file unchanged,
#                root READs the original bytes
#   h) REMOVE   256 KiB UNSTABLE to a file CREATEd through nfscached, then
#                REMOVE through nfscached: its dirty bytes are dropped, nothing
#                is written back for it, no write-back error
#   e) deleted under a dirty write  1 MiB UNSTABLE to a file CREATEd through
#                nfscached, the file removed in the export and the upstream
#                restarted (it no longer holds the file open), COMMIT through
#                nfscached: an error or a new verifier, never OK with the
#                WRITE's verifier; a failed write-back counts in
#                cache.writeback.errors; a later flush returns
# Assertions that only write-back can satisfy are skipped with
# NFSCACHED_E2E_DIRECT=1 and with NFSCACHED_WRITE_MODE=writethrough (which
# runs the daemon with cache.write_mode = writethrough).
TEST_TIMEOUT=${TEST_TIMEOUT:-200}
. "$(dirname "$0")/../lib.sh"

KIB=1024
MIB=$((1024 * 1024))
if [ "${NFSCACHED_E2E_DIRECT:-0}" = 1 ]; then
    MODE=direct
else
    MODE=${NFSCACHED_WRITE_MODE:-writeback}
fi
case "$MODE" in
    direct|writeback|writethrough) ;;
    *) echo "1..0 # SKIP NFSCACHED_WRITE_MODE=$MODE: writeback or writethrough"; T_DONE=1; exit 0 ;;
esac
if [ "$MODE" = direct ]; then
    setup
else
    setup -o cache.dirty_expire_ms=60000 -o cache.write_mode="$MODE"
fi
diag "mode: $MODE"
rpc mnt > "$T_TMP/mnt.out"
ROOT=$(val "$T_TMP/mnt.out" fh)
[ -n "$ROOT" ] || { ok 1 "MNT of /export"; done_testing; }

# wb_ok STATUS DESCRIPTION: an assertion only write-back satisfies
wb_ok() {
    if [ "$MODE" != writeback ]; then skip "$2" "write-back only ($MODE)"; return 0; fi
    ok "$1" "$2"
}
# wb_num GOT OP WANT DESCRIPTION / cnt_num ...: num_ok in write-back mode /
# whenever a daemon runs
wb_num() {
    if [ "$MODE" != writeback ]; then skip "$4" "write-back only ($MODE)"; return 0; fi
    num_ok "$@"
}
cnt_num() {
    if [ "$MODE" = direct ]; then skip "$4" "no daemon"; return 0; fi
    num_ok "$@"
}
# flush: `nfscachectl flush` (nothing to do without a daemon)
flush() {
    [ "$MODE" = direct ] && return 0
    ctl flush > "$T_TMP/flush.out" 2>&1
}
# cdiag LINE...: diag lines about counters (none without a daemon)
cdiag() { [ "$MODE" = direct ] || diag "$@"; }
# plus A B: A + B when both are numbers
plus() { if [[ "$1" =~ ^[0-9]+$ && "$2" =~ ^[0-9]+$ ]]; then echo $(($1 + $2)); else echo "?"; fi; }
# access FH: ACCESS of all the bits, as a client opening a file does
access() { rpc proc ACCESS "$1" 0x3f > "$T_TMP/access.out" 2>&1; }
# same A B: cmp's status
same() { cmp -s "$1" "$2"; }

# ---- a) W1 -------------------------------------------------------------------
W1_WRITES=10000 W1_READS=5000 W1_SIZE=$((16 * MIB))
F=$EXPORT_DIR/w1
head -c "$W1_SIZE" /dev/urandom > "$F"
cp "$F" "$T_TMP/w1.init"
cp "$F" "$EXPORT_DIR/w1up"
FH=$(fh_of w1)
[ -n "$FH" ] || { ok 1 "W1: LOOKUP of w1"; done_testing; }
access "$FH"
snap a0
rpc w1 "$FH" --size "$W1_SIZE" --writes "$W1_WRITES" --reads "$W1_READS" --block 1024 \
    --seed 1 --depth 16 --model "$T_TMP/w1.init" --model-out "$T_TMP/w1.model" \
    --no-commit > "$T_TMP/w1.out" 2>&1
ok $? "W1: $W1_WRITES WRITEs and $W1_READS READs through nfscached ran" ||
    diag "$(tail -n 5 "$T_TMP/w1.out")"
snap a1
w() { val "$T_TMP/w1.out" "$1"; }
diag "W1: write_ms $(w write_ms) read_ms $(w read_ms) written_reads $(w written_reads) cold_reads $(w cold_reads) cold_page_reads $(w cold_page_reads)"
cdiag "W1: upstream READ +$(d a0 a1 upstream.calls.READ) ($(d a0 a1 cache.read.bytes_upstream) bytes)" \
     "W1: hits +$(d a0 a1 cache.read.hits) partial_hits +$(d a0 a1 cache.read.partial_hits) misses +$(d a0 a1 cache.read.misses) invalidations +$(d a0 a1 cache.invalidations)" \
     "W1: dirty $(sv a1 cache.dirty.bytes) write.bytes +$(d a0 a1 cache.write.bytes)" \
     "W1: upstream WRITE +$(d a0 a1 upstream.calls.WRITE) before COMMIT"
is "$(w writes) $(w write_errors)" "$W1_WRITES 0" "W1: no WRITE failed" ||
    diag "first: $(w first_write_error)"
is "$(w write_verfs)" 1 "W1: one write verifier in all WRITE replies"
is "$(w reads) $(w read_errors) $(w mismatches)" "$W1_READS 0 0" "W1: every READ returns the model's bytes" ||
    diag "first error: $(w first_read_error), first mismatch: $(w first_mismatch)"
cnt_num "$(d a0 a1 cache.write.bytes)" -eq $((W1_WRITES * 1024)) \
    "W1: cache.write.bytes rose by the bytes written"
cnt_num "$(d a0 a1 upstream.calls.READ)" -le "$(w cold_page_reads)" \
    "W1: upstream READs <= READs of unwritten blocks in pages not fetched before ($(w cold_page_reads))"
cnt_num "$(plus "$(d a0 a1 cache.read.hits)" "$(d a0 a1 cache.read.partial_hits)")" -ge "$(w written_reads)" \
    "W1: hits + partial hits >= READs of written blocks ($(w written_reads))"
wb_num "$(sv a1 cache.dirty.bytes)" -gt 0 "W1: before COMMIT, cache.dirty.bytes > 0"
! same "$F" "$T_TMP/w1.model"
wb_ok $? "W1: before COMMIT, the export file is not yet the model"

rpc commit "$FH" > "$T_TMP/r.out" 2>&1
snap a2
is "$(rv nfs_status)" NFS3_OK "W1: COMMIT is NFS3_OK" || diag "$(tail -n 3 "$T_TMP/r.out")"
is "$(rv verf)" "$(w verf)" "W1: COMMIT's verifier is the WRITEs'"
same "$F" "$T_TMP/w1.model"
ok $? "W1: after COMMIT, the export file is the model" ||
    diag "differing bytes: $(cmp -l "$F" "$T_TMP/w1.model" | wc -l)"
cdiag "W1: COMMIT: upstream WRITE +$(d a1 a2 upstream.calls.WRITE) COMMIT +$(d a1 a2 upstream.calls.COMMIT)" \
     "W1: writeback.bytes +$(d a0 a2 cache.writeback.bytes) errors +$(d a0 a2 cache.writeback.errors)" \
     "W1: dirty after COMMIT $(sv a2 cache.dirty.bytes)"
wb_num "$(sv a2 cache.dirty.bytes)" -eq 0 "W1: after COMMIT, cache.dirty.bytes == 0"
wb_num "$(d a0 a2 cache.writeback.bytes)" -ge "$(sv a1 cache.dirty.bytes)" \
    "W1: cache.writeback.bytes >= the bytes dirty before COMMIT"
wb_num "$(d a0 a2 cache.writeback.errors)" -eq 0 "W1: no write-back error"
# $(w written_runs) runs of adjacent written blocks, separated by bytes
# never read: as many WRITEs at least without writing bytes not held
cdiag "W1: upstream WRITE +$(d a0 a2 upstream.calls.WRITE) in all, $(w written_runs) runs of adjacent blocks written"
wb_num "$(d a0 a2 upstream.calls.WRITE)" -le $(( $(w written_runs) + 16 )) \
    "W1: upstream WRITEs <= runs of adjacent blocks written + 16 (adjacent ones coalesced)"
wb_num "$(d a0 a2 upstream.calls.WRITE)" -lt $((W1_WRITES / 2)) \
    "W1: upstream WRITEs < $((W1_WRITES / 2)) for $W1_WRITES client WRITEs"
if [ "$MODE" != direct ] && [ -n "$UP_NFS_PORT" ]; then
    FHU=$(fh_of w1up)
    up w1 "$FHU" --size "$W1_SIZE" --writes "$W1_WRITES" --reads "$W1_READS" --block 1024 \
        --seed 1 --depth 16 --model "$T_TMP/w1.init" > "$T_TMP/w1up.out" 2>&1
    diag "W1: write_ms through nfscached $(w write_ms), against the upstream" \
         "$(val "$T_TMP/w1up.out" write_ms) (read_ms $(w read_ms) and $(val "$T_TMP/w1up.out" read_ms);" \
         "upstream mismatches $(val "$T_TMP/w1up.out" mismatches), commit $(val "$T_TMP/w1up.out" commit_status))"
fi
rm -f "$EXPORT_DIR/w1up"

# ---- b) flush ------------------------------------------------------------------
F=$EXPORT_DIR/flush
head -c $((16 * KIB)) /dev/urandom > "$F"
cp "$F" "$T_TMP/b.want"
head -c 4096 /dev/urandom > "$T_TMP/b0"
head -c 4096 /dev/urandom > "$T_TMP/b1"
dd if="$T_TMP/b0" of="$T_TMP/b.want" conv=notrunc status=none
dd if="$T_TMP/b1" of="$T_TMP/b.want" bs=4096 seek=1 conv=notrunc status=none
FH=$(fh_of flush)
rpc read "$FH" 0 $((16 * KIB)) > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status) $(rv md5)" "NFS3_OK $(md5 "$F")" "flush: the 16 KiB file read through nfscached"
rpc pwrite "$FH" 0 "$T_TMP/b0" --stable unstable > "$T_TMP/b0.out" 2>&1
rpc pwrite "$FH" 4096 "$T_TMP/b1" --stable unstable > "$T_TMP/b1.out" 2>&1
is "$(val "$T_TMP/b0.out" nfs_status) $(val "$T_TMP/b0.out" count) $(val "$T_TMP/b1.out" nfs_status) $(val "$T_TMP/b1.out" count)" \
    "NFS3_OK 4096 NFS3_OK 4096" "flush: UNSTABLE WRITEs of 4096 at 0 and 4096" ||
    diag "$(tail -n 1 "$T_TMP/b0.out")" "$(tail -n 1 "$T_TMP/b1.out")"
diag "flush: committed $(val "$T_TMP/b0.out" committed) $(val "$T_TMP/b1.out" committed)"
! same "$F" "$T_TMP/b.want"
wb_ok $? "flush: not in the export file before the flush"
snap b0
flush
ok $? "flush: nfscachectl flush succeeds" || diag "$(cat "$T_TMP/flush.out")"
snap b1
same "$F" "$T_TMP/b.want"
ok $? "flush: after the flush the export file holds both WRITEs"
wb_num "$(sv b1 cache.dirty.bytes)" -eq 0 "flush: cache.dirty.bytes == 0 after the flush"
wb_num "$(d b0 b1 upstream.calls.WRITE)" -ge 1 "flush: the flush sent WRITEs upstream"
cdiag "flush: upstream WRITE +$(d b0 b1 upstream.calls.WRITE), writeback.bytes +$(d b0 b1 cache.writeback.bytes)"
rpc commit "$FH" > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status)" NFS3_OK "flush: COMMIT is NFS3_OK"
is "$(val "$T_TMP/b0.out" verf) $(val "$T_TMP/b1.out" verf)" "$(rv verf) $(rv verf)" \
    "flush: both WRITE verifiers equal the COMMIT's"
same "$F" "$T_TMP/b.want"
ok $? "flush: after COMMIT the export file holds both WRITEs"

# ---- c) copy -------------------------------------------------------------------
head -c $((50 * MIB)) /dev/urandom > "$T_TMP/c.src"
snap c0
t0=$(now_ms)
nfs_cp "$T_TMP/c.src" "$(proxy_url copy50)" > "$T_TMP/c.out" 2>&1
ok $? "copy: nfs-cp of 50 MiB through nfscached" || diag "$(tail -n 3 "$T_TMP/c.out")"
c_ms=$(( $(now_ms) - t0 ))
snap c1
same "$EXPORT_DIR/copy50" "$T_TMP/c.src"
ok $? "copy: the export file is identical"
rpc proc FSINFO "$ROOT" > "$T_TMP/fsinfo.out" 2>&1
WTMAX=$(val "$T_TMP/fsinfo.out" wtmax)
client_w=$(d c0 c1 nfs3.calls.WRITE) up_w=$(d c0 c1 upstream.calls.WRITE)
cdiag "copy: $c_ms ms; client WRITE +$client_w COMMIT +$(d c0 c1 nfs3.calls.COMMIT); upstream WRITE +$up_w" \
     "copy: COMMIT +$(d c0 c1 upstream.calls.COMMIT); wtmax $WTMAX; dirty $(sv c1 cache.dirty.bytes)"
cnt_num "$up_w" -le "$client_w" "copy: upstream WRITEs <= the client's WRITEs ($client_w)"
if [[ "$WTMAX" =~ ^[0-9]+$ ]] && [ "$WTMAX" -gt 0 ]; then
    cnt_num "$client_w" -le $(( (50 * MIB / WTMAX) * 11 / 10 + 4 )) \
        "copy: no resent WRITEs ($client_w client WRITEs of at most $WTMAX bytes)"
else
    ok 1 "copy: FSINFO wtmax through nfscached" ; diag "$(tail -n 3 "$T_TMP/fsinfo.out")"
fi
wb_num "$(sv c1 cache.dirty.bytes)" -eq 0 "copy: nothing dirty after nfs-cp's COMMIT"
rm -f "$T_TMP/c.src" "$EXPORT_DIR/copy50"

# 8 MiB in 4 KiB WRITEs (a client with a small wsize)
head -c $((8 * MIB)) /dev/urandom > "$T_TMP/c8.src"
: > "$EXPORT_DIR/copy8"
FH=$(fh_of copy8)
access "$FH"
snap c2
rpc writefile "$FH" "$T_TMP/c8.src" --chunk 4096 --depth 16 > "$T_TMP/c8.out" 2>&1
snap c3
c8() { val "$T_TMP/c8.out" "$1"; }
is "$(c8 write_errors) $(c8 commit_status) $(c8 rounds) $(c8 unmatched)" "0 NFS3_OK 1 0" \
    "copy4k: 2048 WRITEs of 4 KiB, COMMIT OK in one round" || diag "$(cat "$T_TMP/c8.out")"
same "$EXPORT_DIR/copy8" "$T_TMP/c8.src"
ok $? "copy4k: the export file is identical"
cdiag "copy4k: client WRITE +$(d c2 c3 nfs3.calls.WRITE), upstream WRITE +$(d c2 c3 upstream.calls.WRITE), verfs $(c8 verfs)"
wb_num "$(d c2 c3 upstream.calls.WRITE)" -le 128 "copy4k: upstream WRITEs <= 128 for 2048 client WRITEs"

# ---- d) no widening ---------------------------------------------------------------
# narrow TAG: UNSTABLE WRITE of 10 bytes at 10 through nfscached (no READ
# before) to the file TAG whose first 10 bytes only the export holds; the
# export file before and after a flush
narrow() {
    local f=$EXPORT_DIR/$1 fh=$2
    printf 'ABCDEFGHIJ' > "$T_TMP/d10"
    rpc pwrite "$fh" 10 "$T_TMP/d10" --stable unstable > "$T_TMP/r.out" 2>&1
    is "$(rv nfs_status) $(rv count) $(rv obj.size)" "NFS3_OK 10 20" \
        "no widening ($1): UNSTABLE WRITE of 10 bytes at 10, no READ before" ||
        diag "$(tail -n 1 "$T_TMP/r.out")"
    diag "no widening ($1): committed $(rv committed)"
    [ "$(cat "$f")" = 0123456789 ]
    wb_ok $? "no widening ($1): the export file has only its 10 bytes before the flush"
    flush
    ok $? "no widening ($1): flush" || diag "$(cat "$T_TMP/flush.out")"
    is "$(stat -c %s "$f"):$(cat "$f")" "20:0123456789ABCDEFGHIJ" \
        "no widening ($1): after the flush, the export file is both parts, 20 bytes"
}
# a file nfscached has only looked up
printf '0123456789' > "$EXPORT_DIR/narrow"
FH=$(fh_of narrow)
access "$FH"
narrow narrow "$FH"
# a file CREATEd through nfscached (known to the cache, empty), then given
# its first 10 bytes by another writer
rpc create "$ROOT" narrow-new > "$T_TMP/r.out" 2>&1
FH=$(rv fh)
is "$(rv nfs_status)" NFS3_OK "no widening (narrow-new): CREATE through nfscached" ||
    diag "$(tail -n 1 "$T_TMP/r.out")"
printf '0123456789' > "$EXPORT_DIR/narrow-new"
access "$FH"
narrow narrow-new "$FH"

# a 4 KiB file read through nfscached (its page valid in the cache), 10
# bytes written at 100 through nfscached, 10 bytes put at 300 directly in
# the export meanwhile: a write-back of more than the dirty bytes would
# bring the old bytes at 300 back
F=$EXPORT_DIR/narrow4k
head -c 4096 /dev/urandom > "$F"
cp "$F" "$T_TMP/d.want"
head -c 10 /dev/urandom > "$T_TMP/d100"
head -c 10 /dev/urandom > "$T_TMP/d300"
dd if="$T_TMP/d100" of="$T_TMP/d.want" bs=1 seek=100 conv=notrunc status=none
dd if="$T_TMP/d300" of="$T_TMP/d.want" bs=1 seek=300 conv=notrunc status=none
FH=$(fh_of narrow4k)
rpc read "$FH" 0 4096 > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status) $(rv md5)" "NFS3_OK $(md5 "$F")" "no widening (4k): the 4 KiB file read through nfscached"
rpc pwrite "$FH" 100 "$T_TMP/d100" --stable unstable > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status) $(rv count)" "NFS3_OK 10" "no widening (4k): UNSTABLE WRITE of 10 bytes at 100" ||
    diag "$(tail -n 1 "$T_TMP/r.out")"
diag "no widening (4k): committed $(rv committed)"
[ "$(range_md5 "$F" 100 10)" != "$(md5 "$T_TMP/d100")" ]
wb_ok $? "no widening (4k): not in the export file before the flush"
dd if="$T_TMP/d300" of="$F" bs=1 seek=300 conv=notrunc status=none
flush
ok $? "no widening (4k): flush after another writer's bytes at 300" || diag "$(cat "$T_TMP/flush.out")"
same "$F" "$T_TMP/d.want"
ok $? "no widening (4k): the export file has the bytes at 100 and the other writer's at 300" ||
    diag "at 100: $(range_md5 "$F" 100 10) want $(md5 "$T_TMP/d100")" \
         "at 300: $(range_md5 "$F" 300 10) want $(md5 "$T_TMP/d300")"

# ---- f) rename --------------------------------------------------------------------
rm -f "$EXPORT_DIR/a" "$EXPORT_DIR/a.tmp"
head -c $((64 * KIB)) /dev/urandom > "$T_TMP/f.src"
rpc create "$ROOT" a.tmp > "$T_TMP/r.out" 2>&1
FHA=$(rv fh)
is "$(rv nfs_status)" NFS3_OK "rename: CREATE a.tmp through nfscached" || diag "$(tail -n 1 "$T_TMP/r.out")"
access "$FHA"
rpc pwrite "$FHA" 0 "$T_TMP/f.src" --stable unstable > "$T_TMP/f.w.out" 2>&1
is "$(val "$T_TMP/f.w.out" nfs_status) $(val "$T_TMP/f.w.out" count)" "NFS3_OK 65536" \
    "rename: UNSTABLE WRITE of 64 KiB to a.tmp" || diag "$(tail -n 1 "$T_TMP/f.w.out")"
rpc proc RENAME "$ROOT" a.tmp "$ROOT" a > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status)" NFS3_OK "rename: RENAME a.tmp -> a"
snap f0
rpc setattr "$FHA" --mode 600 > "$T_TMP/r.out" 2>&1
snap f1
is "$(rv nfs_status) $(rv obj.mode)" "NFS3_OK 600" "rename: SETATTR mode 0600"
same "$EXPORT_DIR/a" "$T_TMP/f.src"
ok $? "rename: after SETATTR (written back first) \`a\` holds the bytes"
cdiag "rename: SETATTR: upstream WRITE +$(d f0 f1 upstream.calls.WRITE), dirty $(sv f1 cache.dirty.bytes)"
rpc commit "$FHA" > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status) $(rv verf)" "NFS3_OK $(val "$T_TMP/f.w.out" verf)" \
    "rename: COMMIT on the handle: OK with the WRITE's verifier"
same "$EXPORT_DIR/a" "$T_TMP/f.src"
ok $? "rename: \`a\` is the source"
[ ! -e "$EXPORT_DIR/a.tmp" ]
ok $? "rename: a.tmp is gone"
is "$(stat -c %a "$EXPORT_DIR/a")" 600 "rename: \`a\` has mode 0600"

# ---- g) no write permission --------------------------------------------------------
F=$EXPORT_DIR/rootfile
head -c 8192 /dev/urandom > "$F"
chown 0:0 "$F"
chmod 0644 "$F"
cp "$F" "$T_TMP/g.orig"
head -c 4096 /dev/urandom > "$T_TMP/g.w"
FH=$(fh_of rootfile)
rpc read "$FH" 0 8192 > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status) $(rv md5)" "NFS3_OK $(md5 "$F")" "no permission: root reads the 0644 file through nfscached"
snap g0
rpc --uid 1000 --gid 1000 pwrite "$FH" 0 "$T_TMP/g.w" --stable unstable > "$T_TMP/r.out" 2>&1
snap g1
case "$(rv nfs_status)" in
    NFS3ERR_ACCES|NFS3ERR_PERM) ok 0 "no permission: uid 1000's UNSTABLE WRITE gets $(rv nfs_status)" ;;
    *) ok 1 "no permission: uid 1000's UNSTABLE WRITE gets NFS3ERR_ACCES or NFS3ERR_PERM"
       diag "got: $(rv nfs_status) $(rv count) $(rv error)" ;;
esac
cnt_num "$(d g0 g1 cache.write.bytes)" -eq 0 "no permission: no byte accepted into the cache"
flush
same "$F" "$T_TMP/g.orig"
ok $? "no permission: the export file is unchanged (after a flush)"
rpc read "$FH" 0 8192 > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status) $(rv md5)" "NFS3_OK $(md5 "$T_TMP/g.orig")" \
    "no permission: root READs the original bytes through nfscached"

# ---- h) REMOVE through nfscached drops the dirty data -------------------------------
head -c $((256 * KIB)) /dev/urandom > "$T_TMP/h.src"
rpc create "$ROOT" gone > "$T_TMP/r.out" 2>&1
FHG=$(rv fh)
rpc pwrite "$FHG" 0 "$T_TMP/h.src" --stable unstable > "$T_TMP/h.w.out" 2>&1
is "$(val "$T_TMP/h.w.out" nfs_status) $(val "$T_TMP/h.w.out" count)" "NFS3_OK 262144" \
    "remove: UNSTABLE WRITE of 256 KiB to a new file"
snap h0
rpc remove "$ROOT" gone > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status)" NFS3_OK "remove: REMOVE through nfscached"
snap h1
wb_num "$(sv h0 cache.dirty.bytes)" -ge $((256 * KIB)) "remove: the 256 KiB were dirty before"
cnt_num "$(sv h1 cache.dirty.bytes)" -eq 0 "remove: REMOVE of the last link dropped them"
flush
snap h2
cnt_num "$(d h0 h2 upstream.calls.WRITE)" -eq 0 "remove: nothing written back for the removed file"
cnt_num "$(d h0 h2 cache.writeback.errors)" -eq 0 "remove: and no write-back error counted"
[ ! -e "$EXPORT_DIR/gone" ]
ok $? "remove: the file is gone from the export"

# ---- e) deleted under a dirty write ------------------------------------------------
# (CREATEd through nfscached, so that its first WRITE can be taken locally)
F=$EXPORT_DIR/doomed
head -c "$MIB" /dev/urandom > "$T_TMP/e.src"
rpc create "$ROOT" doomed > "$T_TMP/r.out" 2>&1
FH=$(rv fh)
is "$(rv nfs_status)" NFS3_OK "deleted: CREATE through nfscached" || diag "$(tail -n 1 "$T_TMP/r.out")"
access "$FH"
snap e00
rpc pwrite "$FH" 0 "$T_TMP/e.src" --stable unstable > "$T_TMP/e.w.out" 2>&1
is "$(val "$T_TMP/e.w.out" nfs_status) $(val "$T_TMP/e.w.out" count)" "NFS3_OK $MIB" \
    "deleted: UNSTABLE WRITE of 1 MiB" || diag "$(tail -n 1 "$T_TMP/e.w.out")"
snap e0
wb_num "$(d e00 e0 cache.dirty.bytes)" -ge "$MIB" "deleted: the MiB is dirty in the cache"
[ "$(stat -c %s "$F")" = 0 ]
wb_ok $? "deleted: and not in the export file"
rm -f "$F"
# nfs-ganesha keeps the file it created open: a WRITE through that handle
# still lands in the unlinked file.  A restarted upstream opens the handle
# afresh and finds it stale, as a server that does not keep files open does.
RESTARTED=0
if [ "$T_EXTERNAL" = 0 ]; then
    stop_upstream
    start_upstream 2>"$T_TMP/restart.err"
    ok $? "deleted: the upstream restarted (so that the file is no longer open there)" ||
        diag "$(cat "$T_TMP/restart.err")"
    RESTARTED=1
fi
t0=$(now_ms)
rpc commit "$FH" > "$T_TMP/r.out" 2>&1
rc=$?
e_ms=$(( $(now_ms) - t0 ))
snap e1
ok "$rc" "deleted: COMMIT through nfscached is answered ($e_ms ms)" || diag "$(tail -n 2 "$T_TMP/r.out")"
diag "deleted: COMMIT $(rv nfs_status) verf $(rv verf), WRITE verf $(val "$T_TMP/e.w.out" verf)"
cdiag "deleted: upstream WRITE +$(d e0 e1 upstream.calls.WRITE), writeback.errors +$(d e0 e1 cache.writeback.errors)"
if [ "$RESTARTED" = 1 ]; then
    [ "$(rv nfs_status)" != NFS3_OK ] || [ "$(rv verf)" != "$(val "$T_TMP/e.w.out" verf)" ]
    wb_ok $? "deleted: COMMIT is not OK with the WRITE's verifier"
else
    skip "deleted: COMMIT is not OK with the WRITE's verifier" "upstream not restarted (NFSCACHED_PORT)"
fi
if [ "$(rv nfs_status)" != NFS3_OK ]; then
    wb_num "$(d e0 e1 cache.writeback.errors)" -ge 1 "deleted: cache.writeback.errors rose"
fi
if [ "$MODE" != direct ]; then
    flush
    rc=$?
    [ "$rc" != 124 ]
    ok $? "deleted: a later flush returns (status $rc)" || diag "$(cat "$T_TMP/flush.out")"
    diag "deleted: dirty after the flush: $(stat_value cache.dirty.bytes)"
fi
done_testing
