# guest-cache.sh: runs in the kernel-client VM (busybox sh -e, cwd = the NFS
# mount, mounted with lookupcache=positive so that a file the host creates is
# seen at the next lookup). Reads kcache.bin twice with the page cache dropped
# in between, and hands over to the host between the two reads: creates
# kcache.cold-done after the first read and waits for the host to create
# kcache.go before dropping caches and reading again. The reads are the only
# READs of the session. "KTEST-STATE name value" lines tell the host what the
# guest read.
ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }
F=kcache.bin

t0=$(ms)
COLD=$(md5sum < "$F" | cut -d' ' -f1)
t1=$(ms)
echo "KTEST-STATE cold.md5 $COLD"
echo "KTEST-STATE cold.ms $((t1 - t0))"
: > kcache.cold-done

i=0
until [ -e kcache.go ]; do
    i=$((i + 1))
    [ $i -le 1200 ] || { echo "KTEST: the host did not create kcache.go within 240 s"; exit 1; }
    usleep 200000
done

sync
echo 3 > /proc/sys/vm/drop_caches
t2=$(ms)
WARM=$(md5sum < "$F" | cut -d' ' -f1)
t3=$(ms)
echo "KTEST-STATE warm.md5 $WARM"
echo "KTEST-STATE warm.ms $((t3 - t2))"
