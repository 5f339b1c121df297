#!/bin/bash
# 51-cull-full: a full cache file system falls back to pass-through, never
# to an error.  The cache dir is a 32 MiB tmpfs.
#   a) ENOSPC    bstop = 0% (only a real ENOSPC stops storing), bcull 1%,
#                brun 2%, write-back (dirty_expire_ms 60000): the backing
#                files on a tmpfs of their own (objects/ and graveyard/ are
#                symbolic links into it, so that the statvfs of the cache dir
#                does not see it fill and every backing write is tried: a
#                filler the daemon's statvfs saw would stop storing before
#                any write, and whether it saw it yet is a race); the tmpfs
#                filled to 100% from outside, then fresh export files read
#                through nfscached (md5 right), new files copied in with
#                nfs-cp (the export holds them), UNSTABLE WRITEs (rpc.py
#                pwrite, writefile in 4 KiB WRITEs) answered OK and in the
#                export after COMMIT / `nfscachectl flush`; cache.nospace > 0
#   b) bstop     default thresholds (bstop 3%) on a fresh tmpfs, a filler
#                leaving 512 KiB free: `status` says `cache stopped`, reads
#                are right and come from the upstream every time (upstream
#                READs rise, cache.bytes does not grow); the filler removed:
#                `cache caching` (or culling) again within a few seconds, and
#                a file read twice is served from the cache the second time
TEST_TIMEOUT=${TEST_TIMEOUT:-200}
. "$(dirname "$0")/../lib.sh"
needs_daemon "nfscached on a full cache file system"
needs_own_upstream

CACHE=$T_TMP/cache
KIB=1024
MIB=$((1024 * 1024))

# The tmpfs file systems are unmounted once nfscached has stopped, before
# lib.sh's cleanup removes $T_TMP.
MOUNTS=()
cull_cleanup() {
    local rc=$? m
    if [ "$BASHPID" = "$$" ]; then
        [ -n "$NFSCACHED_PID" ] && stop_nfscached
        for m in "${MOUNTS[@]}"; do
            mountpoint -q "$m" && { umount "$m" 2>/dev/null || umount -l "$m"; }
        done
        MOUNTS=()
    fi
    (exit "$rc")
    t_cleanup
}
trap cull_cleanup EXIT

# tmpfs DIR: a fresh 32 MiB tmpfs on DIR
tmpfs() {
    mkdir -p "$1"
    mount -t tmpfs -o size=32m,mode=0700 nfscached-test "$1" || return 1
    MOUNTS+=("$1")
}
SMALL=$T_TMP/small
tmpfs "$SMALL" || fail_or_skip "cannot mount a tmpfs on $SMALL (needs root)"
mkdir -p "$SMALL/objects" "$SMALL/graveyard" "$CACHE"
ln -s "$SMALL/objects" "$CACHE/objects"
ln -s "$SMALL/graveyard" "$CACHE/graveyard"

# avail [DIR]: bytes free on the file system of DIR (the small tmpfs)
avail() { df -B1 --output=avail "${1:-$SMALL}" | tail -n 1 | tr -d ' '; }
# fill: the small tmpfs to its last byte (appending to the filler)
fill() {
    dd if=/dev/zero of="$SMALL/filler" bs=1M oflag=append conv=notrunc status=none 2>/dev/null
    dd if=/dev/zero of="$SMALL/filler" bs=4k oflag=append conv=notrunc status=none 2>/dev/null
    return 0
}
# wait_state WANT... : up to 10 s for `cache` in status to be one of WANT
wait_state() {
    local s i
    for ((i = 0; i < 100; i++)); do
        s=$(cache_state)
        for w in "$@"; do [ "$s" = "$w" ] && return 0; done
        sleep 0.1
    done
    return 1
}

# ---- a) ENOSPC ------------------------------------------------------------
setup -o cache.bstop=0% -o cache.bcull=1% -o cache.brun=2% \
      -o cache.write_mode=writeback -o cache.dirty_expire_ms=60000
rpc mnt > "$T_TMP/mnt.out"
ROOT=$(val "$T_TMP/mnt.out" fh)
[ -n "$ROOT" ] || { ok 1 "MNT of /export"; done_testing; }

for i in 1 2 3 4 5; do head -c $((2 * MIB)) /dev/urandom > "$EXPORT_DIR/a$i"; done
fill
is "$(avail)" 0 "ENOSPC: the backing files' tmpfs is full"
snap a0
for i in 1 2 3 4 5; do
    is "$(cat_md5 a$i)" "$(md5 "$EXPORT_DIR/a$i")" "ENOSPC: a$i (2 MiB) read right through nfscached"
    fill    # what culling freed meanwhile is taken again
done
snap a1
diag "ENOSPC: reads: upstream READ +$(d a0 a1 upstream.calls.READ), nospace +$(d a0 a1 cache.nospace)," \
     "culled +$(d a0 a1 cache.culled.objects), cache.bytes $(sv a1 cache.bytes), backing.write.calls +$(d a0 a1 backing.write.calls)"
num_ok "$(d a0 a1 cache.nospace)" -gt 0 "ENOSPC: cache.nospace counts the failed backing writes"
num_ok "$(d a0 a1 upstream.calls.READ)" -ge 5 "ENOSPC: the reads went upstream"

# nfs-cp of new files through nfscached
for i in 1 2 3; do
    head -c $((MIB + i * 4321)) /dev/urandom > "$T_TMP/cp$i"
    fill
    nfs_cp "$T_TMP/cp$i" "$(proxy_url cp$i)" > "$T_TMP/cp.out" 2>&1
    ok $? "ENOSPC: nfs-cp of a new file cp$i through nfscached" || diag "$(tail -n 3 "$T_TMP/cp.out")"
    cmp -s "$T_TMP/cp$i" "$EXPORT_DIR/cp$i"
    ok $? "ENOSPC: the export holds cp$i"
done

# UNSTABLE WRITEs in write-back mode, COMMIT
head -c $((256 * KIB)) /dev/urandom > "$T_TMP/wb1"
rpc create "$ROOT" wb1 > "$T_TMP/r.out" 2>&1
FH=$(val "$T_TMP/r.out" fh)
is "$(val "$T_TMP/r.out" nfs_status)" NFS3_OK "write-back: CREATE wb1 through nfscached"
rpc proc ACCESS "$FH" 0x3f > /dev/null 2>&1
fill
snap w0
rpc pwrite "$FH" 0 "$T_TMP/wb1" --stable unstable > "$T_TMP/w.out" 2>&1
is "$(val "$T_TMP/w.out" nfs_status) $(val "$T_TMP/w.out" count)" "NFS3_OK $((256 * KIB))" \
    "write-back: an UNSTABLE WRITE of 256 KiB while full is answered OK" || diag "$(tail -n 2 "$T_TMP/w.out")"
diag "write-back: committed $(val "$T_TMP/w.out" committed)"
rpc commit "$FH" > "$T_TMP/c.out" 2>&1
is "$(val "$T_TMP/c.out" nfs_status)" NFS3_OK "write-back: COMMIT is NFS3_OK"
[ "$(val "$T_TMP/w.out" committed)" != UNSTABLE ] || [ "$(val "$T_TMP/c.out" verf)" = "$(val "$T_TMP/w.out" verf)" ]
ok $? "write-back: an UNSTABLE answer's verifier is the COMMIT's (no resend needed)"
cmp -s "$T_TMP/wb1" "$EXPORT_DIR/wb1"
ok $? "write-back: after COMMIT the export holds wb1"

# UNSTABLE WRITEs, then `nfscachectl flush` (no COMMIT)
head -c $((128 * KIB)) /dev/urandom > "$T_TMP/wb2"
rpc create "$ROOT" wb2 > "$T_TMP/r.out" 2>&1
FH=$(val "$T_TMP/r.out" fh)
rpc proc ACCESS "$FH" 0x3f > /dev/null 2>&1
fill
rpc pwrite "$FH" 0 "$T_TMP/wb2" --stable unstable > "$T_TMP/w.out" 2>&1
is "$(val "$T_TMP/w.out" nfs_status) $(val "$T_TMP/w.out" count)" "NFS3_OK $((128 * KIB))" \
    "flush: an UNSTABLE WRITE of 128 KiB while full is answered OK"
ctl flush > "$T_TMP/flush.out" 2>&1
ok $? "flush: nfscachectl flush succeeds" || diag "$(cat "$T_TMP/flush.out")"
cmp -s "$T_TMP/wb2" "$EXPORT_DIR/wb2"
ok $? "flush: after the flush the export holds wb2"

# many small UNSTABLE WRITEs and COMMIT as a client does
head -c $((2 * MIB)) /dev/urandom > "$T_TMP/wb3"
: > "$EXPORT_DIR/wb3"
FH=$(fh_of wb3)
rpc proc ACCESS "$FH" 0x3f > /dev/null 2>&1
fill
rpc writefile "$FH" "$T_TMP/wb3" --chunk 4096 --depth 16 > "$T_TMP/wf.out" 2>&1
wf() { val "$T_TMP/wf.out" "$1"; }
is "$(wf write_errors) $(wf commit_status) $(wf unmatched)" "0 NFS3_OK 0" \
    "writefile: 512 UNSTABLE WRITEs of 4 KiB while full, COMMIT OK" || diag "$(cat "$T_TMP/wf.out")"
diag "writefile: rounds $(wf rounds), verfs $(wf verfs)"
cmp -s "$T_TMP/wb3" "$EXPORT_DIR/wb3"
ok $? "writefile: the export holds wb3"
snap w1
diag "write-back: nospace +$(d w0 w1 cache.nospace), upstream WRITE +$(d w0 w1 upstream.calls.WRITE)," \
     "cache.write.bytes +$(d w0 w1 cache.write.bytes), writeback.bytes +$(d w0 w1 cache.writeback.bytes), dirty $(sv w1 cache.dirty.bytes)"
num_ok "$(d w0 w1 cache.nospace)" -gt 0 "write-back: the backing writes of the WRITEs met ENOSPC (cache.nospace +$(d w0 w1 cache.nospace))"
num_ok "$(d a0 w1 cache.writeback.errors)" -eq 0 "no write-back error"
is "$(sv w1 cache.dirty.bytes)" 0 "nothing left dirty"
num_ok "$(sv w1 cache.nospace)" -gt 0 "cache.nospace > 0 ($(sv w1 cache.nospace))"
stop_nfscached
ok $? "ENOSPC: nfscached exits cleanly"
! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$T_TMP/nfscached.log"
ok $? "ENOSPC: no sanitizer report in the daemon log"

# ---- b) below bstop ----------------------------------------------------------
# the whole cache dir on a fresh tmpfs, which the daemon's statvfs sees
rm -rf "$CACHE"
tmpfs "$CACHE"
ok $? "bstop: the cache dir on a fresh 32 MiB tmpfs"
start_nfscached -o cache.bstop=3% -o cache.bcull=7% -o cache.brun=10% 2>"$T_TMP/start.err"
ok $? "bstop: nfscached started with bstop 3%, bcull 7%, brun 10%" || diag "$(cat "$T_TMP/start.err")"
wait_state caching
is "$(cache_state)" caching "bstop: status says \`cache caching\` at first"
for i in 1 2 3; do head -c $((MIB + i * 777)) /dev/urandom > "$EXPORT_DIR/b$i"; done
head -c $((MIB / 2)) /dev/urandom > "$EXPORT_DIR/b4"
left=$(( $(avail "$CACHE") - 512 * KIB ))
head -c "$left" /dev/zero > "$CACHE/filler"
diag "bstop: filler of $left bytes, $(avail "$CACHE") bytes free of $(df -B1 --output=size "$CACHE" | tail -n 1 | tr -d ' ')"
wait_state stopped
is "$(cache_state)" stopped "bstop: status says \`cache stopped\` within a few seconds"
ctl status | grep -E '^cache' | sed 's/^/# /'
snap b0
for i in 1 2 3; do
    is "$(cat_md5 b$i)" "$(md5 "$EXPORT_DIR/b$i")" "bstop: b$i read right"
done
snap b1
is "$(cat_md5 b1)" "$(md5 "$EXPORT_DIR/b1")" "bstop: b1 read again right"
snap b2
diag "bstop: upstream READ +$(d b0 b1 upstream.calls.READ) then +$(d b1 b2 upstream.calls.READ);" \
     "cache.bytes $(sv b0 cache.bytes) -> $(sv b2 cache.bytes); nospace +$(d b0 b2 cache.nospace)"
num_ok "$(d b0 b1 upstream.calls.READ)" -ge 3 "bstop: the reads went upstream"
num_ok "$(d b1 b2 upstream.calls.READ)" -ge 1 "bstop: b1 again: from the upstream again (not cached)"
num_ok "$(sv b2 cache.bytes)" -le "$(sv b0 cache.bytes)" "bstop: cache.bytes did not grow"
is "$(cache_state)" stopped "bstop: still stopped"

rm -f "$CACHE/filler"
t0=$(now_ms)
wait_state caching culling
ok $? "bstop: the filler removed: status says caching (or culling) again ($(cache_state), $(( $(now_ms) - t0 )) ms)"
snap c0
is "$(cat_md5 b4)" "$(md5 "$EXPORT_DIR/b4")" "bstop: b4 read right"
snap c1
is "$(cat_md5 b4)" "$(md5 "$EXPORT_DIR/b4")" "bstop: b4 read again right"
snap c2
diag "caching again: upstream READ +$(d c0 c1 upstream.calls.READ) then +$(d c1 c2 upstream.calls.READ);" \
     "cache.bytes $(sv c0 cache.bytes) -> $(sv c2 cache.bytes)"
num_ok "$(sv c1 cache.bytes)" -gt "$(sv c0 cache.bytes)" "caching again: cache.bytes grew with b4"
is "$(d c1 c2 upstream.calls.READ)" 0 "caching again: the second read of b4 is served from the cache"
num_ok "$(d c1 c2 cache.read.hits)" -ge 1 "caching again: and counts as cache hits"
done_testing
