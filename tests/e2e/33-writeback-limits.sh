#!/bin/bash
# 33-writeback-limits: write-back when the upstream refuses, grows or stops
# (raw calls through tests/rpc.py; cache.dirty_expire_ms = 60000 so that
# only COMMIT and flush write back).
#   refused     uid 1000 writes UNSTABLE to its own file; the file is given
#               to root in the export before the write-back: COMMIT gets
#               NFS3ERR_ACCES, cache.writeback.errors counts it, and every
#               later COMMIT carries a verifier other than the WRITE's (a
#               client resends what it had not committed; never an OK with
#               the verifier of the lost bytes); the export file is unchanged
#   grown       100 bytes written UNSTABLE at 0 of an empty file, then another
#               writer puts 10000 bytes in the export file: GETATTR through
#               nfscached says 10000 (the larger size holds while dirty, as in
#               Linux nfs_update_inode), a READ returns our 100 bytes then
#               theirs, and after a flush the export file is exactly that
#   no room     cache.max_dirty = 1M, upstream.timeout_ms = 2000, the upstream
#               stopped (SIGSTOP) and 1 MiB dirty: a WRITE that finds no room is answered
#               NFS3ERR_JUKEBOX after about timeout_ms (never an error, never
#               silence); once the upstream runs again the same WRITE is
#               taken and COMMIT puts every byte in the export
TEST_TIMEOUT=${TEST_TIMEOUT:-180}
. "$(dirname "$0")/../lib.sh"
needs_daemon "write-back in nfscached"
needs_own_upstream
setup -o cache.dirty_expire_ms=60000

KIB=1024
rpc mnt > "$T_TMP/mnt.out"
ROOT=$(val "$T_TMP/mnt.out" fh)
[ -n "$ROOT" ] || { ok 1 "MNT of /export"; done_testing; }

# ---- refused -----------------------------------------------------------------
F=$EXPORT_DIR/refused
printf 'xxxxxxxxxx' > "$F"
chown 1000:1000 "$F"
chmod 0644 "$F"
cp "$F" "$T_TMP/refused.orig"
FH=$(fh_of refused)
head -c $((4 * KIB)) /dev/urandom > "$T_TMP/a.w"
rpc --uid 1000 --gid 1000 pwrite "$FH" 0 "$T_TMP/a.w" --stable unstable > "$T_TMP/w.out" 2>&1
WVERF=$(val "$T_TMP/w.out" verf)
is "$(val "$T_TMP/w.out" nfs_status) $(val "$T_TMP/w.out" committed)" "NFS3_OK UNSTABLE" \
    "refused: uid 1000's UNSTABLE WRITE is taken"
chown 0:0 "$F"
snap a0
rpc --uid 1000 --gid 1000 commit "$FH" > "$T_TMP/r.out" 2>&1
snap a1
is "$(rv nfs_status)" NFS3ERR_ACCES "refused: COMMIT gets the upstream's refusal"
is "$(d a0 a1 cache.writeback.errors)" 1 "refused: cache.writeback.errors +1"
rpc --uid 1000 --gid 1000 commit "$FH" > "$T_TMP/r.out" 2>&1
if [ "$(rv nfs_status)" = NFS3_OK ]; then
    [ "$(rv verf)" != "$WVERF" ]
    ok $? "refused: a second COMMIT is OK only with another verifier ($(rv verf), WRITE $WVERF)"
else
    ok 0 "refused: a second COMMIT is an error too ($(rv nfs_status))"
fi
rpc commit "$FH" > "$T_TMP/r.out" 2>&1
[ "$(rv nfs_status) $(rv verf)" != "NFS3_OK $WVERF" ]
ok $? "refused: a COMMIT of another credential is not OK with the lost bytes' verifier"
cmp -s "$F" "$T_TMP/refused.orig"
ok $? "refused: the export file is unchanged"
is "$(sv a1 cache.dirty.bytes)" 0 "refused: nothing dirty is left"

# ---- grown ---------------------------------------------------------------------
F=$EXPORT_DIR/grown
: > "$F"
FH=$(fh_of grown)
head -c 100 /dev/urandom > "$T_TMP/g.ours"
head -c 10000 /dev/urandom > "$T_TMP/g.theirs"
rpc pwrite "$FH" 0 "$T_TMP/g.ours" --stable unstable > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status) $(rv committed)" "NFS3_OK UNSTABLE" "grown: 100 bytes UNSTABLE at 0"
cp "$T_TMP/g.theirs" "$F"
{ head -c 100 "$T_TMP/g.ours"; tail -c +101 "$T_TMP/g.theirs"; } > "$T_TMP/g.want"
rpc getattr "$FH" > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status) $(rv size)" "NFS3_OK 10000" \
    "grown: GETATTR through nfscached: the larger upstream size"
rpc read "$FH" 0 20000 --out "$T_TMP/g.read" > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status) $(rv count) $(rv eof) $(md5 "$T_TMP/g.read")" \
    "NFS3_OK 10000 true $(md5 "$T_TMP/g.want")" "grown: READ: our 100 bytes, then theirs"
ctl flush > "$T_TMP/flush.out" 2>&1
ok $? "grown: flush" || diag "$(cat "$T_TMP/flush.out")"
cmp -s "$F" "$T_TMP/g.want"
ok $? "grown: the export file is our 100 bytes and their 9900"

# ---- no room ---------------------------------------------------------------------
stop_nfscached
start_nfscached -o cache.dirty_expire_ms=60000 -o cache.max_dirty=1M \
    -o upstream.timeout_ms=2000 2>"$T_TMP/start.err"
ok $? "no room: nfscached restarted with cache.max_dirty = 1M" || diag "$(cat "$T_TMP/start.err")"
F=$EXPORT_DIR/full
: > "$F"
FH=$(fh_of full)
head -c $((4 * KIB)) /dev/urandom > "$T_TMP/n0"
head -c $((1024 * KIB)) /dev/urandom > "$T_TMP/n1"
head -c $((64 * KIB)) /dev/urandom > "$T_TMP/n2"
# known, its writer's ACCESS cached, nothing dirty: then the upstream stops
rpc pwrite "$FH" 0 "$T_TMP/n0" --stable unstable > "$T_TMP/r.out" 2>&1
rpc commit "$FH" > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status)" NFS3_OK "no room: 4 KiB written and committed"
kill -STOP "$GANESHA_PID"
rpc pwrite "$FH" $((4 * KIB)) "$T_TMP/n1" --stable unstable > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status) $(rv committed)" "NFS3_OK UNSTABLE" \
    "no room: with the upstream stopped, 1 MiB UNSTABLE fills cache.max_dirty"
t0=$(now_ms)
rpc --timeout 30 pwrite "$FH" $((1028 * KIB)) "$T_TMP/n2" --stable unstable > "$T_TMP/r.out" 2>&1
t1=$(now_ms)
kill -CONT "$GANESHA_PID"
is "$(rv nfs_status)" NFS3ERR_JUKEBOX "no room: the next WRITE is answered NFS3ERR_JUKEBOX"
diag "no room: answered after $((t1 - t0)) ms (upstream.timeout_ms 2000)"
num_ok $((t1 - t0)) -ge 1500 "no room: it waited for room first"
# the client retries; now the upstream takes the older bytes and makes room
st=
for i in $(seq 1 20); do
    rpc --timeout 30 pwrite "$FH" $((1028 * KIB)) "$T_TMP/n2" --stable unstable > "$T_TMP/r.out" 2>&1
    st=$(rv nfs_status)
    [ "$st" = NFS3_OK ] && break
    sleep 0.5
done
is "$st" NFS3_OK "no room: the retried WRITE is taken once the upstream runs"
rpc commit "$FH" > "$T_TMP/r.out" 2>&1
is "$(rv nfs_status)" NFS3_OK "no room: COMMIT"
cat "$T_TMP/n0" "$T_TMP/n1" "$T_TMP/n2" > "$T_TMP/n.want"
cmp -s "$F" "$T_TMP/n.want"
ok $? "no room: the export file holds every byte"

done_testing
