# guest-meta.sh: runs in the kernel-client VM (busybox sh -e, cwd = the NFS
# mount). Walks the tree the host made in the export: `ls -lnR`, a tar of
# every non-directory in sorted order, and the sorted `find` list, each
# summed with md5sum. The host computes the same with the same busybox on
# the export directory itself. "KTEST-STATE name value" lines tell the host
# the sums and times; "KTEST-LS line" lines the listing itself.
ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }
# tar writes the owner's name: the one the host's /etc/passwd gives uid 0
mkdir -p /etc
echo 'root:x:0:0:root:/root:/bin/sh' > /etc/passwd
echo 'root:x:0:' > /etc/group

t0=$(ms)
ls -lnR tree > /tmp/ls.out
t1=$(ms)
TAR=$(tar cf - $(find tree ! -type d | sort) | md5sum | cut -d' ' -f1)
t2=$(ms)
FIND=$(find tree | sort | md5sum | cut -d' ' -f1)
t3=$(ms)
sed 's/^/KTEST-LS /' /tmp/ls.out
echo "KTEST-STATE ls.md5 $(md5sum < /tmp/ls.out | cut -d' ' -f1)"
echo "KTEST-STATE tar.md5 $TAR"
echo "KTEST-STATE find.md5 $FIND"
echo "KTEST-STATE ms $((t1 - t0)) $((t2 - t1)) $((t3 - t2))"
