#!/bin/bash
# 02-directory: a directory of 2000 entries made directly in the export
# (names up to 200 bytes, names with spaces, hard links, subdirectories)
# lists through nfscached exactly as `ls -a` lists it on the upstream's disk,
# and exactly as nfs-ls lists it directly from the upstream.
. "$(dirname "$0")/../lib.sh"
setup

long=$(printf 'L%.0s' $(seq 1 196))          # 196 bytes: names of 200
(
    cd "$EXPORT_DIR" || exit 1
    for i in $(seq -w 0 1799); do echo "$i" > "f$i"; done
    for i in $(seq -w 0 99); do echo "$i" > "${long}$i"; done
    for i in $(seq -w 0 49); do ln "f00$i" "hard$i"; done
    for i in $(seq -w 0 29); do mkdir "d$i"; done
    for i in $(seq -w 0 19); do echo "$i" > "with space $i"; done
)
n=$(ls -A "$EXPORT_DIR" | wc -l)
is "$n" 2000 "2000 entries made in the export directory"

# nfs-ls prints "MODE NLINK UID GID SIZE NAME" per entry and hides . and ..
names() { sed -E 's/^[-a-z]?[-rwx]{9} +-?[0-9]+ +-?[0-9]+ +-?[0-9]+ +-?[0-9]+ //' "$1" | LC_ALL=C sort; }

nfs_ls "$(proxy_url)" > "$T_TMP/proxy.ls"
ok $? "nfs-ls of the export through the proxy"
ls -a1 --quoting-style=literal "$EXPORT_DIR" | grep -vx -e . -e .. | LC_ALL=C sort > "$T_TMP/disk.names"
names "$T_TMP/proxy.ls" > "$T_TMP/proxy.names"
cmp -s "$T_TMP/disk.names" "$T_TMP/proxy.names"
ok $? "names listed through the proxy are the names on disk" ||
    diag "$(diff "$T_TMP/disk.names" "$T_TMP/proxy.names" | head -n 10)"
is "$(grep -cE "^.{10} +2 .* hard00$" "$T_TMP/proxy.ls")" 1 "a hard link shows 2 links"
is "$(grep -c "^d.* d00$" "$T_TMP/proxy.ls")" 1 "a subdirectory shows as a directory"
is "$(grep -c " ${long}42$" "$T_TMP/proxy.ls")" 1 "a 200-byte name is listed whole"

if [ -n "$UP_NFS_PORT" ]; then
    nfs_ls "$(direct_url)" | LC_ALL=C sort > "$T_TMP/direct.sorted"
    LC_ALL=C sort "$T_TMP/proxy.ls" | cmp -s - "$T_TMP/direct.sorted"
    ok $? "entries and attributes through the proxy are those of the upstream" ||
        diag "$(LC_ALL=C sort "$T_TMP/proxy.ls" | diff - "$T_TMP/direct.sorted" | head -n 10)"
fi

stat_ok nfs3.calls.READDIRPLUS -ge 1
stat_ok upstream.calls.READDIRPLUS -ge 1
done_testing
