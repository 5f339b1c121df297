#!/bin/bash
# 78-kclient-odd: special files and renames through the Linux kernel NFS
# client (Debian 12 kernel in qemu) mounted through nfscached with its
# namespace cache (TTLs of 600 s: a stale name or attribute would show)
# and write-back on (tests/kclient/guest-odd.sh), each result checked in
# the guest (after dropping its caches: answered by nfscached again) and
# on the upstream (the export directory, or the same call sent to it):
#   special files   mkfifo, mknod c 1 3, mknod b 7 0, a UNIX socket (bound
#                   by busybox syslogd), symlinks with targets of 9, 1000
#                   and 3000 bytes made in the guest, one of 4095 bytes made
#                   upstream: type, major:minor and target in the guest are
#                   the export's; GETATTR through nfscached is the
#                   upstream's; READ and WRITE (UNSTABLE and FILE_SYNC), and
#                   COMMIT, of each get the upstream's status, and no cache
#                   object, backing file or dirty byte is made
#   mkdir a; cd a; mv ../a ../b; mkdir inner   b/inner on the upstream,
#                   no a; the guest sees the same
#   silly rename    silly (read through nfscached before: cached) opened,
#                   removed: its bytes still read right through the
#                   descriptor; a file written through its descriptor after
#                   its removal reads back right; after the close no .nfs*
#                   name in the guest nor upstream, and READs of the removed
#                   file's handle through nfscached, in it and at its end,
#                   get the upstream's answer (NFS3ERR_STALE), never bytes
#                   or an EOF from the cache
#   mv dir2/x dir1/y   over dir1/y, cached in nfscached and in the guest:
#                   the guest reads the new bytes (before and after
#                   dropping its caches), so does a second client (nfs-cat
#                   through nfscached); the old handle gets the upstream's
#                   answer
#   hard links      appended data under both names, nlink (stat -c %h) 2,
#                   in the guest and upstream; after a rm of one name 2
#                   again (h1, h3)
#   rename over dirty data   a second client (rpc.py) renames over a file
#                   holding 8 KiB written UNSTABLE (dirty in nfscached):
#                   its dirty bytes go with its last link (no failed
#                   write-back, `nfscachectl flush` succeeds); over a file
#                   with a second link they stay and are written back
TEST_TIMEOUT=${TEST_TIMEOUT:-200}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the namespace cache and write-back of nfscached"
needs_kclient
TTL=600
setup -o cache.metadata=yes -o cache.write_mode=writeback -o cache.dirty_expire_ms=60000 \
    -o cache.acregmin=$TTL \
    -o cache.acregmax=$TTL -o cache.acdirmin=$TTL -o cache.acdirmax=$TTL
export LC_ALL=C

# ---- before the boot: the files the guest uses --------------------------------
mkdir -p "$EXPORT_DIR/dir1" "$EXPORT_DIR/dir2" "$EXPORT_DIR/sp"
# a target as long as Linux takes (PATH_MAX - 1), made on the upstream
TARGET_4095=$(head -c 4095 /dev/zero | tr '\0' t)
ln -s "$TARGET_4095" "$EXPORT_DIR/sp/sl_4095"
head -c 262144 /dev/urandom > "$EXPORT_DIR/silly"
head -c 65536 /dev/urandom > "$EXPORT_DIR/dir1/y"
head -c 65536 /dev/urandom > "$EXPORT_DIR/dir2/x"
SILLY_MD5=$(md5 "$EXPORT_DIR/silly")
OLD_Y=$(md5 "$EXPORT_DIR/dir1/y")
NEW_Y=$(md5 "$EXPORT_DIR/dir2/x")
FH_SILLY=$(fh_of silly)
FH_DIR1=$(fh_of dir1)
rpc lookup "$FH_DIR1" y > "$T_TMP/y.out"
FH_Y=$(val "$T_TMP/y.out" fh)
# both cached in nfscached (a second READ of each is a hit)
for f in "$FH_SILLY 262144" "$FH_Y 65536"; do
    set -- $f
    rread warm "$1" 0 "$2"
    rread warm2 "$1" 0 "$2"
done
snap s0
num_ok "$(sv s0 cache.read.hits)" -ge 2 "silly and dir1/y are cached (a second READ of each is a hit)"

# ---- the guest -------------------------------------------------------------------
KCLIENT_LOG=$T_TMP/console.log MNTPORT=${PORT_MNT:-$PORT} VM_TIMEOUT=150 \
    "$KC/run.sh" "$PORT" "$KC/guest-odd.sh" > "$T_TMP/run.out" 2>&1
ok $? "the VM run passes" ||
    diag "$(tail -n 5 "$T_TMP/run.out")" "--- console:" "$(grep -v '^\[' "$T_TMP/console.log" | tail -n 30)"
diag "$(grep -h '^run.sh: VM ran' "$T_TMP/run.out")"
snap s1

# ---- special files ------------------------------------------------------------------
SP=$EXPORT_DIR/sp
for f in fifo chr blk sock sl sl_long sl_3000 sl_4095; do
    want=$(busybox stat -c %F "$SP/$f" 2>&1)
    is "$(kc_state "type.$f")" "$want" "special files: sp/$f is a $want in the guest and upstream"
done
is "$(busybox stat -c %F "$SP/fifo")/$(busybox stat -c %F "$SP/chr")/$(busybox stat -c %F "$SP/blk")/$(busybox stat -c %F "$SP/sock")" \
    "fifo/character special file/block special file/socket" "special files: the upstream made a fifo, devices and a socket"
is "$(kc_state dev.chr) $(kc_state dev.blk)" "1:3 7:0" "special files: major:minor 1:3 and 7:0 in the guest"
is "$(busybox stat -c %t:%T "$SP/chr") $(busybox stat -c %t:%T "$SP/blk")" "1:3 7:0" \
    "special files: major:minor 1:3 and 7:0 upstream"
is "$(kc_state target.sl)" "$(readlink "$SP/sl")" "special files: the symlink's target in the guest is the upstream's"
is "$(readlink "$SP/sl")" "../dir1/y" "special files: the symlink's target upstream is ../dir1/y"
is "$(kc_state ln.sl_3000)" "" "special files: ln -s of a 3000-byte target succeeds in the guest"
for f in sl_long:1000 sl_3000:3000 sl_4095:4095; do
    t=$(readlink "$SP/${f%:*}")
    is "${#t}" "${f#*:}" "special files: the target of sp/${f%:*} upstream has ${f#*:} bytes"
    is "$(kc_state "target.${f%:*}")" "$(printf %s "$t" | md5sum | cut -d' ' -f1) ${f#*:}" \
        "special files: the ${f#*:}-byte target of sp/${f%:*} in the guest is the upstream's (md5, length)"
done

FH_SP=$(fh_of sp)
objs() { find "$T_TMP/cache/objects" -type f 2>/dev/null | wc -l; }
snap s2
OBJ_FILES=$(objs)
for f in fifo chr blk sock sl sl_long; do
    rpc lookup "$FH_SP" "$f" > "$T_TMP/l.out"
    fh=$(val "$T_TMP/l.out" fh)
    rpc proc GETATTR "$fh" > "$T_TMP/ga.p"
    up proc GETATTR "$fh" > "$T_TMP/ga.u"
    want="$(val "$T_TMP/ga.u" type) $(val "$T_TMP/ga.u" rdev) $(val "$T_TMP/ga.u" size)"
    [ "$want" != "  " ] || want="(the upstream did not answer: $(tail -n 1 "$T_TMP/ga.u"))"
    is "$(val "$T_TMP/ga.p" type) $(val "$T_TMP/ga.p" rdev) $(val "$T_TMP/ga.p" size)" "$want" \
        "special files: GETATTR of sp/$f through nfscached is the upstream's (type, rdev, size: $want)"
    calls=("READ $fh 0 4096" "READ $fh 4096 100" "WRITE $fh 0 hello unstable" "WRITE $fh 0 hello file_sync")
    # (ganesha opens a FIFO to COMMIT it and waits for a writer: no answer)
    [ "$f" != fifo ] && calls+=("COMMIT $fh 0 0")
    for call in "${calls[@]}"; do
        rpc proc $call > "$T_TMP/c.p" 2>&1
        up proc $call > "$T_TMP/c.u" 2>&1
        set -- $call
        want=$(val "$T_TMP/c.u" nfs_status)
        [ -n "$want" ] || want="(the upstream did not answer: $(tail -n 1 "$T_TMP/c.u"))"
        is "$(val "$T_TMP/c.p" nfs_status)" "$want" \
            "special files: $1 $3 $4 ${5:-} of sp/$f through nfscached: the upstream's status ($want)"
    done
done
snap s3
is "$(sv s3 cache.objects)" "$(sv s2 cache.objects)" "special files: no cache object made by their READs and WRITEs"
is "$(objs)" "$OBJ_FILES" "special files: no backing file made ($OBJ_FILES under objects/)"
is "$(sv s3 cache.dirty.bytes)" 0 "special files: no dirty byte taken for them"
is "$(kc_state ls.sp)" "blk chr fifo sl sl_3000 sl_4095 sl_long sock " "special files: the guest lists the eight names"

# ---- mkdir a; cd a; mv ../a ../b; mkdir inner ------------------------------------
[ -d "$EXPORT_DIR/b/inner" ] && [ ! -e "$EXPORT_DIR/a" ]
ok $? "mv ../a ../b from inside a, then mkdir inner: b/inner upstream, no a"
is "$(cat "$EXPORT_DIR/b/inner/f" 2>&1)" here "the file made in inner is upstream in b/inner"
is "$(kc_state ab.now)" "b b/inner " "the guest sees b and b/inner, no a"
is "$(kc_state ab.dropped)" "b b/inner  here" "the guest, caches dropped: b, b/inner and its file, no a"

# ---- silly rename -----------------------------------------------------------------
is "$(kc_state silly.gone)" 0 "silly rename: silly is gone from the guest's view after rm"
is "$(kc_state silly.renamed)" 1 "silly rename: one .nfs* name while the file is open"
is "$(kc_state silly.md5)" "$SILLY_MD5" "silly rename: the open descriptor reads the file's bytes (md5)"
is "$(kc_state silly.left) $(kc_state silly.left.dropped)" "0 0" "silly rename: no .nfs* name in the guest after the close"
is "$(cd "$EXPORT_DIR" && ls -a | grep -c '^\.nfs')" 0 "silly rename: no .nfs* name upstream after the close"
# read_same WHAT FH OFFSET: READ of 4 KiB at OFFSET through nfscached
# gets the upstream's answer (status, and the data's md5)
read_same() {
    RPC_TIMEOUT=5 rpc read "$2" "$3" 4096 > "$T_TMP/rs.p" 2>&1
    RPC_TIMEOUT=5 up read "$2" "$3" 4096 > "$T_TMP/rs.u" 2>&1
    local want
    want="$(val "$T_TMP/rs.u" nfs_status) $(val "$T_TMP/rs.u" md5)"
    [ "$want" != " " ] || want="(the upstream did not answer: $(tail -n 1 "$T_TMP/rs.u"))"
    is "$(val "$T_TMP/rs.p" nfs_status) $(val "$T_TMP/rs.p" md5)" "$want" \
        "$1: READ at $3 of its handle through nfscached is the upstream's answer ($(val "$T_TMP/rs.u" nfs_status))"
}
read_same "silly rename: the removed file" "$FH_SILLY" 0
read_same "silly rename: the removed file" "$FH_SILLY" 262144

is "$(kc_state sillyw.md5)" "$(printf 'first\nsecond\n' | md5sum | cut -d' ' -f1)" \
    "silly rename: a file written through its descriptor after its removal reads back right"
is "$(kc_state sillyw.left)" 0 "silly rename: ... and leaves no .nfs* name in the guest after the close"

# ---- mv dir2/x dir1/y over a cached dir1/y ---------------------------------------
is "$(kc_state y.before)" "$OLD_Y" "rename over: the guest read dir1/y (the old bytes) first"
is "$(kc_state y.after)" "$NEW_Y" "rename over: after mv dir2/x dir1/y the guest reads the new bytes"
is "$(kc_state y.dropped)" "$NEW_Y" "rename over: ... and again with its caches dropped"
is "$(md5 "$EXPORT_DIR/dir1/y")" "$NEW_Y" "rename over: dir1/y upstream has the new bytes"
is "$(cat_md5 dir1/y)" "$NEW_Y" "rename over: a second client (nfs-cat through nfscached) reads the new bytes"
is "$(kc_state ls.dirs)" "dir1: y  dir2: " "rename over: the guest lists y in dir1 and nothing in dir2"
read_same "rename over: the replaced dir1/y" "$FH_Y" 0
read_same "rename over: the replaced dir1/y" "$FH_Y" 65536

# ---- hard links -------------------------------------------------------------------
M2=$(printf 'one\ntwo\n' | md5sum | cut -d' ' -f1)
M3=$(printf 'one\ntwo\nthree\n' | md5sum | cut -d' ' -f1)
is "$(kc_state link.now)" "$M2 $M2 2 2" "hard links: data appended under h2 read under both names, nlink 2"
is "$(kc_state link.dropped)" "$M2 $M2 2 2" "hard links: ... and with the guest's caches dropped"
is "$(kc_state link.again)" "$M3 14" "hard links: data appended under h1 read under h2"
is "$(kc_state link.again.dropped)" "$M3 14 2" "hard links: ... and with the guest's caches dropped (size 14, nlink 2)"
is "$(kc_state link.rm)" "2 2 $M3" "hard links: ln h1 h3, rm h2: nlink 2 under h1 and h3"
is "$(md5 "$EXPORT_DIR/h1") $(stat -c %h "$EXPORT_DIR/h1") $([ -e "$EXPORT_DIR/h2" ] && echo h2)" "$M3 2 " \
    "hard links: upstream h1 has the bytes and nlink 2, no h2"
is "$(cat_md5 h3)" "$M3" "hard links: a second client reads h3 through nfscached"
FH_H1=$(fh_of h1)
rpc getattr "$FH_H1" > "$T_TMP/h.p"
up getattr "$FH_H1" > "$T_TMP/h.u"
is "$(val "$T_TMP/h.p" nlink) $(val "$T_TMP/h.p" size)" "$(val "$T_TMP/h.u" nlink) $(val "$T_TMP/h.u" size)" \
    "hard links: GETATTR of h1 through nfscached is the upstream's (nlink, size)"
is "$(val "$T_TMP/h.u" nlink) $(val "$T_TMP/h.u" size)" "2 14" "hard links: ... nlink 2, 14 bytes"

# ---- a second client renames over files holding data not written back ------------
# z (8 KiB written UNSTABLE: dirty in nfscached) is replaced by w: z's last
# link goes, so do its dirty bytes, as on a REMOVE; k (dirty too, a second
# link k2) replaced by v keeps them: they are written back under k2
FH_DIR2=$(fh_of dir2)
head -c 8192 /dev/urandom > "$T_TMP/z.data"
head -c 8192 /dev/urandom > "$T_TMP/k.data"
mk() {   # mk DIRFH NAME: CREATE through nfscached, prints the handle
    rpc create "$1" "$2" > "$T_TMP/mk.out"
    val "$T_TMP/mk.out" fh
}
FH_Z=$(mk "$FH_DIR1" z) FH_W=$(mk "$FH_DIR2" w) FH_K=$(mk "$FH_DIR1" k) FH_V=$(mk "$FH_DIR2" v)
rpc write "$FH_W" 0 new > /dev/null
rpc write "$FH_V" 0 vee > /dev/null
rpc pwrite "$FH_Z" 0 "$T_TMP/z.data" --stable unstable > "$T_TMP/zw.out"
rpc pwrite "$FH_K" 0 "$T_TMP/k.data" --stable unstable > "$T_TMP/kw.out"
rpc link "$FH_K" "$FH_DIR2" k2 > "$T_TMP/kl.out"
snap s5
is "$(val "$T_TMP/zw.out" committed) $(val "$T_TMP/kw.out" committed) $(val "$T_TMP/kl.out" nfs_status) $(sv s5 cache.dirty.bytes)" \
    "UNSTABLE UNSTABLE NFS3_OK 16384" "rename over dirty: z and k written UNSTABLE, taken as 16 KiB of dirty data; k linked as dir2/k2"
rpc rename "$FH_DIR2" w "$FH_DIR1" z > "$T_TMP/rz.out"
rpc rename "$FH_DIR2" v "$FH_DIR1" k > "$T_TMP/rk.out"
snap s6
is "$(val "$T_TMP/rz.out" nfs_status) $(val "$T_TMP/rk.out" nfs_status)" "NFS3_OK NFS3_OK" \
    "rename over dirty: RENAME dir2/w over dir1/z and dir2/v over dir1/k"
is "$(sv s6 cache.dirty.bytes)" 8192 "rename over dirty: z's 8 KiB of dirty data dropped with its last link, k's kept"
ctl flush > "$T_TMP/flush.out" 2>&1
ok $? "rename over dirty: nfscachectl flush succeeds" || diag "$(cat "$T_TMP/flush.out")"
snap s7
is "$(d s6 s7 cache.writeback.errors) $(sv s7 cache.dirty.bytes)" "0 0" \
    "rename over dirty: no failed write-back, nothing dirty left"
is "$(md5 "$EXPORT_DIR/dir2/k2")" "$(md5 "$T_TMP/k.data")" "rename over dirty: k's bytes written back, under k2"
is "$(cat "$EXPORT_DIR/dir1/z") $(cat "$EXPORT_DIR/dir1/k")" "new vee" "rename over dirty: z and k upstream are w and v"
is "$(cat_md5 dir1/z)" "$(printf new | md5sum | cut -d' ' -f1)" "rename over dirty: dir1/z read through nfscached is w's"
read_same "rename over dirty: the replaced z" "$FH_Z" 0

diag "guest run, calls from the kernel: $(awk 'NR == FNR { a[$1] = $2; next }
    $1 ~ /^nfs3\.calls\./ && $2 - a[$1] > 0 { printf "%s %d ", substr($1, 12), $2 - a[$1] }' \
    "$T_TMP/s0.stats" "$T_TMP/s1.stats")"
diag "guest run, upstream calls: $(awk 'NR == FNR { a[$1] = $2; next }
    $1 ~ /^upstream\.calls\./ && $2 - a[$1] > 0 { printf "%s %d ", substr($1, 16), $2 - a[$1] }' \
    "$T_TMP/s0.stats" "$T_TMP/s1.stats")"
done_testing
