#!/bin/bash
# 24-cache-trust: what the cache must never do.  Give cached bytes to a
# credential the upstream refuses after a chmod through nfscached; serve a
# hole punched in a backing file while the daemon runs as zeros; answer a
# READ differently from the upstream where the cache has no say (a 0-byte
# READ at EOF, offsets beyond what a file can hold); make an object of a
# handle that is not a file.
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the cache of nfscached"
setup -o cache.acregmax=60

rpc mnt > "$T_TMP/mnt.out"
ROOT=$(val "$T_TMP/mnt.out" fh)
FH_ROOT=$ROOT       # fh_of looks names up in it

# ---- a chmod through nfscached takes back what the upstream granted ----------
F=$EXPORT_DIR/shared
head -c 8192 /dev/urandom > "$F"
chown 1000:1000 "$F"
chmod 0644 "$F"
FH=$(fh_of shared)
rpc --uid 2000 --gid 2000 read "$FH" 0 8192 > "$T_TMP/r1"
is "$(val "$T_TMP/r1" nfs_status)" NFS3_OK "uid 2000 reads the 0644 file (it is cached)"
rpc --uid 1000 --gid 1000 proc SETATTR "$FH" 0600 > "$T_TMP/sa"
is "$(val "$T_TMP/sa" nfs_status)" NFS3_OK "uid 1000 makes it 0600 through nfscached"
local0=$(stat_value cache.read.bytes_local)
rpc --uid 2000 --gid 2000 read "$FH" 0 8192 > "$T_TMP/r2"
up --uid 2000 --gid 2000 read "$FH" 0 8192 > "$T_TMP/r2up"
is "$(val "$T_TMP/r2" nfs_status)" "$(val "$T_TMP/r2up" nfs_status)" \
    "uid 2000 then gets what the upstream gives it ($(val "$T_TMP/r2up" nfs_status))"
is "$(( $(stat_value cache.read.bytes_local) - local0 ))" 0 "and not one cached byte"

# ---- a hole punched while the daemon runs ---------------------------------------
G=$EXPORT_DIR/punched
head -c 65536 /dev/urandom > "$G"
GFH=$(fh_of punched)
rpc read "$GFH" 0 65536 > /dev/null
rpc read "$GFH" 0 65536 > /dev/null    # now a hit
for _ in $(seq 30); do [ -n "$(find "$T_TMP/cache/objects" -type f -size +32k)" ] && break; sleep 0.1; done
B=$(find "$T_TMP/cache/objects" -type f -size +32k | head -n 1)
ok $([ -n "$B" ]; echo $?) "the backing file of the 64 KiB file exists"
fallocate -p -o 4096 -l 8192 "$B"
rpc read "$GFH" 0 16384 --out "$T_TMP/punched.data" > "$T_TMP/r3"
is "$(md5 "$T_TMP/punched.data")" "$(head -c 16384 "$G" | md5sum | cut -d' ' -f1)" \
    "a READ over the punched hole returns the file's bytes, not zeros"
num_ok "$(stat_value cache.invalidations)" -ge 1 "and the object's data was dropped"

# ---- answers the cache leaves to the upstream -------------------------------------
H=$EXPORT_DIR/eight
head -c 8192 /dev/urandom > "$H"
HFH=$(fh_of eight)
rpc read "$HFH" 0 8192 > /dev/null
for args in "8192 0" "9223372036854775808 4096" "18446744073709551606 100"; do
    rpc proc READ "$HFH" $args > "$T_TMP/p"
    up proc READ "$HFH" $args > "$T_TMP/u"
    is "$(val "$T_TMP/p" nfs_status) $(val "$T_TMP/p" count) $(val "$T_TMP/p" eof)" \
       "$(val "$T_TMP/u" nfs_status) $(val "$T_TMP/u" count) $(val "$T_TMP/u" eof)" \
       "READ $args: the upstream's answer"
done

# ---- handles that are not files make no objects ---------------------------------------
objs0=$(stat_value cache.objects)
for i in 1 2 3 4 5; do
    rpc proc READ "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" 0 4096 > "$T_TMP/b"
done
is "$(val "$T_TMP/b" nfs_status)" "$(up proc READ 00 0 4096 > "$T_TMP/bu"; val "$T_TMP/bu" nfs_status)" \
    "a bogus handle gets the upstream's error"
rpc proc READ "$ROOT" 0 4096 > "$T_TMP/d"
is "$(stat_value cache.objects)" "$objs0" "neither bogus handles nor the root directory became objects"
done_testing
