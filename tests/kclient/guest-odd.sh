# guest-odd.sh: runs in the kernel-client VM (busybox sh -e, cwd = the NFS
# mount), against nfscached with its namespace cache and write-back on.
# Special files and renames; the host checks the same things on the
# upstream afterwards (tests/e2e/78-kclient-odd.sh).  The host made before
# the boot: silly (256 KiB), dir1/y (64 KiB, old bytes, read through
# nfscached), dir2/x (64 KiB, new bytes) and sp/sl_4095 (a symlink with a
# 4095-byte target).  Each result is a "KTEST-STATE name value" line; the
# script fails only when a command it needs fails.
st() { k=$1; shift; echo "KTEST-STATE $k $*"; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
sum() { md5sum | cut -d' ' -f1; }
# the 1000-byte target: ten components of one digit each
LONG=$(awk 'BEGIN { for (i = 0; i < 10; i++) { s = s (i ? "/" : ""); for (j = 0; j < (i ? 99 : 100); j++) s = s i } print s }')

# ---- special files ---------------------------------------------------------
mkfifo sp/fifo
mknod sp/chr c 1 3
mknod sp/blk b 7 0
ln -s ../dir1/y sp/sl
ln -s "$LONG" sp/sl_long
# longer than a MOUNT path (1024): the kernel takes up to 4095 bytes
ln -s "$LONG$LONG$LONG" sp/sl_3000 2>/tmp/ln.err || st ln.sl_3000 "$(cat /tmp/ln.err)"
# a UNIX socket: busybox syslogd binds the path /dev/log points to
rm -f /dev/log
ln -s /mnt/sp/sock /dev/log
syslogd -n -O /tmp/syslog &
pid=$!
i=0
while [ ! -S sp/sock ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
kill $pid
wait $pid || true
rm -f /dev/log
drop   # what follows comes through nfscached again, not the kernel's caches
for f in fifo chr blk sock sl sl_long sl_3000 sl_4095; do
    st "type.$f" "$(stat -c %F sp/$f 2>&1)"
done
st dev.chr "$(stat -c %t:%T sp/chr)"
st dev.blk "$(stat -c %t:%T sp/blk)"
st target.sl "$(readlink sp/sl)"
for f in sl_long sl_3000 sl_4095; do
    st "target.$f" "$(readlink sp/$f | tr -d '\n' | sum) $(readlink sp/$f | tr -d '\n' | wc -c)"
done
st ls.sp "$(ls sp | tr '\n' ' ')"

# ---- mkdir a; cd a; mv ../a ../b; mkdir inner -----------------------------
mkdir a
cd a
mv ../a ../b
mkdir inner
echo here > inner/f
cd ..
st ab.now "$(ls -d a b b/inner 2>/dev/null | tr '\n' ' ')"
drop
st ab.dropped "$(ls -d a b b/inner 2>/dev/null | tr '\n' ' ') $(cat b/inner/f)"

# ---- an open file removed: silly rename ------------------------------------
exec 3< silly
rm silly
st silly.gone "$(ls silly 2>/dev/null | wc -l)"
st silly.renamed "$(ls -a | grep -c '^\.nfs' || true)"
drop
st silly.md5 "$(sum <&3)"
exec 3<&-
# the kernel removes the .nfs name once the last user is gone
i=0
while [ "$(ls -a | grep -c '^\.nfs' || true)" != 0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
st silly.left "$(ls -a | grep -c '^\.nfs' || true)"
drop
st silly.left.dropped "$(ls -a | grep -c '^\.nfs' || true)"

# ... and one written through a descriptor after its removal
exec 4> sillyw
echo first >&4
exec 5< sillyw
rm sillyw
echo second >&4
drop   # the bytes go to nfscached (WRITE, COMMIT), the next READs come from it
st sillyw.md5 "$(sum <&5)"
exec 4>&- 5<&-
i=0
while [ "$(ls -a | grep -c '^\.nfs' || true)" != 0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
st sillyw.left "$(ls -a | grep -c '^\.nfs' || true)"

# ---- mv dir2/x dir1/y over a cached dir1/y ---------------------------------
st y.before "$(sum < dir1/y)"
mv dir2/x dir1/y
st y.after "$(sum < dir1/y)"
drop
st y.dropped "$(sum < dir1/y)"
st ls.dirs "$(ls dir1 dir2 | tr '\n' ' ')"

# ---- hard links ------------------------------------------------------------
echo one > h1
ln h1 h2
echo two >> h2
st link.now "$(cat h1 | sum) $(cat h2 | sum) $(stat -c %h h1) $(stat -c %h h2)"
drop
st link.dropped "$(cat h1 | sum) $(cat h2 | sum) $(stat -c %h h1) $(stat -c %h h2)"
echo three >> h1
st link.again "$(cat h2 | sum) $(stat -c %s h2)"
drop
st link.again.dropped "$(cat h2 | sum) $(stat -c %s h2) $(stat -c %h h2)"
ln h1 h3
rm h2
drop
st link.rm "$(stat -c %h h1) $(stat -c %h h3) $(cat h3 | sum)"
sync
