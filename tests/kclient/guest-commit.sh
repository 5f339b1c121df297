# guest-commit.sh: runs in the kernel-client VM (busybox sh -e, cwd = the
# NFS mount), against nfscached with cache.commit = local.  Creates
# commit.bin with 4 MiB written by dd conv=fsync, twice (several UNSTABLE
# WRITEs and a COMMIT; the second open asks ACCESS: the file's attributes
# and the writer's ACCESS get cached),
# says "ready" and waits while the host stops the upstream, then writes
# 200 MiB of a pattern the host can make too (`yes` of one line) over it
# with `dd conv=fsync,notrunc` (no SETATTR of the size, which would need
# the upstream).  "KTEST-STATE name value" lines tell the host the times
# and dd's status; the script fails when dd fails.
ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }
# the host reads the console through a pipe that buffers a few KiB: padding
# pushes the lines before it through at once
pad() { i=0; while [ $i -lt 256 ]; do echo "KTEST-PAD $i ......................................................."; i=$((i + 1)); done; }

dd if=/dev/zero of=commit.bin bs=1M count=4 conv=fsync 2>/dev/null
# opened again: the kernel asks ACCESS of an existing file (nfscached keeps
# the answer), which it did not for the file it created
dd if=/dev/zero of=commit.bin bs=1M count=4 conv=fsync,notrunc 2>/dev/null
echo "KTEST-STATE ready 1"
pad
sleep 12
echo "KTEST-STATE dd.start $(ms)"
t0=$(ms)
rc=0
yes "nfscached local commit: the bytes of a COMMIT answered from the cache's disk" |
    head -c 209715200 | dd of=commit.bin bs=1M conv=fsync,notrunc 2>/tmp/dd.err || rc=$?
t1=$(ms)
echo "KTEST-STATE dd.rc $rc"
echo "KTEST-STATE write.ms $((t1 - t0))"
pad
[ "$rc" = 0 ] || { cat /tmp/dd.err; exit 1; }
