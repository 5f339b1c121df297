# guest-writeback.sh: runs in the kernel-client VM (busybox sh -e, cwd = the
# NFS mount). Copies the host's random source file wb.src (made in the
# export) to /tmp, then writes it back through the mount as wb.bin with
# `dd conv=fsync` (UNSTABLE WRITEs, then a COMMIT), drops the page cache and
# reads wb.bin again. "KTEST-STATE name value" lines tell the host the md5
# sums and times; the script fails when the read-back differs from /tmp.
ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }

cp wb.src /tmp/src
SRC=$(md5sum < /tmp/src | cut -d' ' -f1)
echo "KTEST-STATE src.md5 $SRC"
t0=$(ms)
dd if=/tmp/src of=wb.bin bs=1M conv=fsync 2>/dev/null
t1=$(ms)
echo "KTEST-STATE write.ms $((t1 - t0))"
echo 3 > /proc/sys/vm/drop_caches
GOT=$(md5sum < wb.bin | cut -d' ' -f1)
t2=$(ms)
echo "KTEST-STATE got.md5 $GOT"
echo "KTEST-STATE read.ms $((t2 - t1))"
[ "$GOT" = "$SRC" ]
