# guest-ops.sh: runs in the kernel-client VM (busybox sh -e, cwd = the NFS
# mount). File operations through the kernel client, checked in the guest,
# leaving a known final state in kc/ that the host checks on the upstream's
# disk. "KTEST-STATE name value" lines tell the host what to expect.
ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }
mkdir kc
cd kc

dd if=/dev/urandom of=/tmp/src bs=1M count=20 2>/dev/null
SRC=$(md5sum < /tmp/src | cut -d' ' -f1)
t0=$(ms)
dd if=/tmp/src of=big bs=1M conv=fsync 2>/dev/null
t1=$(ms)
echo 3 > /proc/sys/vm/drop_caches
GOT=$(md5sum < big | cut -d' ' -f1)
t2=$(ms)
echo "KTEST: 20 MiB write+fsync $((t1 - t0)) ms, read back $((t2 - t1)) ms"
[ "$GOT" = "$SRC" ]
echo "KTEST-STATE big.md5 $SRC"
ls -l

echo hello > a.txt
mv a.txt renamed.txt
[ -f renamed.txt ] && [ ! -e a.txt ]
echo more >> renamed.txt
ln -s renamed.txt sym
[ "$(readlink sym)" = renamed.txt ]
[ "$(cat sym)" = "$(printf 'hello\nmore')" ]
ln renamed.txt hard
[ "$(stat -c %h renamed.txt)" = 2 ]
chmod 0640 renamed.txt
[ "$(stat -c %a hard)" = 640 ]

mkdir -p d1/d2
rmdir d1/d2 d1
[ ! -e d1 ]
mkdir keepdir

head -c 1048576 /tmp/src > trunc
truncate -s 12345 trunc
[ "$(stat -c %s trunc)" = 12345 ]
echo "KTEST-STATE trunc.md5 $(head -c 12345 /tmp/src | md5sum | cut -d' ' -f1)"
truncate -s 0 big2 && dd if=/tmp/src of=big2 bs=4096 count=1 seek=100 2>/dev/null
[ "$(stat -c %s big2)" = $((101 * 4096)) ]
rm big2
echo gone > todelete
rm todelete
[ ! -e todelete ]

sync
echo 3 > /proc/sys/vm/drop_caches
[ "$(cat renamed.txt)" = "$(printf 'hello\nmore')" ]
[ "$(md5sum < big | cut -d' ' -f1)" = "$SRC" ]
ls -la
echo "KTEST-STATE names $(ls -a | tr '\n' ' ')"
