#!/bin/bash
# 69-kclient-meta: the namespace cache seen by the Linux kernel NFS client
# (Debian 12 kernel in qemu). The host makes a tree in the export (10
# directories of 20 files and a symlink). A first VM mounts through
# nfscached and runs `ls -lnR`, a tar of every file and `find` on it
# (tests/kclient/guest-meta.sh); a second VM, a new client with empty
# caches, does the same. Both see exactly the tree the host sees in the
# export directory (the same busybox commands run there). The second VM's
# walk reaches nfscached (its READDIR(PLUS), LOOKUP and READ calls are
# counted) and is answered from the cache: no LOOKUP, GETATTR, READDIRPLUS,
# READDIR, READ or ACCESS goes upstream, nor any call of its mount (MNT,
# FSINFO, PATHCONF, NULL). The TTLs are 600 s (the files are
# new: with the defaults their attributes would be trusted 3 s), as a
# production proxy mounted with actimeo=600 would have them.
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the namespace cache of nfscached"
needs_kclient
setup -o cache.metadata=yes -o cache.acregmin=600 -o cache.acregmax=600 \
    -o cache.acdirmin=600 -o cache.acdirmax=600

# the tree, made on the host in the export
for i in $(seq -w 0 9); do
    mkdir -p "$EXPORT_DIR/tree/d$i"
    for j in $(seq -w 0 19); do
        head -c $((100 + 10#$i * 997 + 10#$j * 131)) /dev/urandom > "$EXPORT_DIR/tree/d$i/f$j"
    done
done
ln -s d03/f07 "$EXPORT_DIR/tree/link"

# what the guests must see: the same busybox commands on the export itself
export LC_ALL=C
(cd "$EXPORT_DIR" && busybox ls -lnR tree) > "$T_TMP/ls.want"
WANT_LS=$(md5 "$T_TMP/ls.want")
WANT_TAR=$(cd "$EXPORT_DIR" && busybox tar cf - $(find tree ! -type d | sort) | md5sum | cut -d' ' -f1)
WANT_FIND=$(cd "$EXPORT_DIR" && find tree | sort | md5sum | cut -d' ' -f1)

# state KEY LOG: the value of the guest's "KTEST-STATE KEY value" line
state() {
    awk -v k="$1" '$1 == "KTEST-STATE" && $2 == k { sub(/^[^ ]+ [^ ]+ /, ""); print }' "$2" 2>/dev/null
}

# boot N: a VM walks the tree; its console in T_TMP/consoleN.log
boot() {
    local log=$T_TMP/console$1.log
    KCLIENT_LOG=$log MNTPORT=${PORT_MNT:-$PORT} VM_TIMEOUT=120 \
        "$KC/run.sh" "$PORT" "$KC/guest-meta.sh" > "$T_TMP/run$1.out" 2>&1
    ok $? "VM $1: ls -lnR, tar and find of the tree through nfscached pass" ||
        diag "$(tail -n 5 "$T_TMP/run$1.out")" "--- console:" "$(grep -v '^\[' "$log" | tail -n 30)"
    diag "VM $1: $(grep -h '^run.sh: VM ran' "$T_TMP/run$1.out"); ls, tar, find: $(state ms "$log") ms"
    awk '$1 == "KTEST-LS" { sub(/^KTEST-LS ?/, ""); print }' "$log" > "$T_TMP/ls.got$1"
    is "$(state ls.md5 "$log")" "$WANT_LS" "VM $1: ls -lnR is the host's" ||
        diag "$(diff "$T_TMP/ls.want" "$T_TMP/ls.got$1" | head -n 20)"
    is "$(state tar.md5 "$log")" "$WANT_TAR" "VM $1: the tar of every file and symlink is the host's (md5)"
    is "$(state find.md5 "$log")" "$WANT_FIND" "VM $1: find lists the host's names (md5)"
}

snap s0
boot 1
snap s1
boot 2
snap s2

diag "first VM, upstream calls: $(awk 'NR == FNR { a[$1] = $2; next }
    $1 ~ /^upstream\.calls\./ && $2 - a[$1] > 0 { printf "%s %d ", substr($1, 16), $2 - a[$1] }' \
    "$T_TMP/s0.stats" "$T_TMP/s1.stats")"
num_ok "$(d s0 s1 upstream.calls.READ)" -gt 0 "first VM: the files were read from the upstream"

# the second VM reached nfscached...
num_ok $(($(d s1 s2 nfs3.calls.READDIRPLUS) + $(d s1 s2 nfs3.calls.READDIR))) -gt 0 \
    "second VM: the kernel listed directories (READDIR/READDIRPLUS to nfscached)"
num_ok "$(d s1 s2 nfs3.calls.LOOKUP)" -gt 0 "second VM: the kernel sent LOOKUPs"
num_ok "$(d s1 s2 nfs3.calls.READ)" -gt 0 "second VM: the kernel sent READs"
# ...and nothing of its walk went upstream
for p in LOOKUP GETATTR READDIRPLUS READDIR READ ACCESS; do
    is "$(d s1 s2 upstream.calls.$p)" 0 "second VM: no upstream $p ($(d s1 s2 nfs3.calls.$p) from the kernel)"
done
# the mount's own calls (MNT, FSINFO, PATHCONF, NULL) are answered locally too
up2=$(awk 'NR == FNR { a[$1] = $2; next } $1 ~ /^upstream\.calls\./ { n += $2 - a[$1] } END { print n + 0 }' \
    "$T_TMP/s1.stats" "$T_TMP/s2.stats")
is "$up2" 0 "second VM: no upstream call at all, its mount included"
diag "second VM, calls from the kernel: $(awk 'NR == FNR { a[$1] = $2; next }
    $1 ~ /^(nfs3|mount3)\.calls\./ && $2 - a[$1] > 0 { printf "%s %d ", $1, $2 - a[$1] }' \
    "$T_TMP/s1.stats" "$T_TMP/s2.stats")"
diag "second VM, upstream calls: $(awk 'NR == FNR { a[$1] = $2; next }
    $1 ~ /^upstream\.calls\./ && $2 - a[$1] > 0 { printf "%s %d ", substr($1, 16), $2 - a[$1]; n++ }
    END { if (!n) print "none" }' "$T_TMP/s1.stats" "$T_TMP/s2.stats")"
diag "second VM, namespace cache: $(awk 'NR == FNR { a[$1] = $2; next }
    $1 ~ /^cache\.(attr|lookup|readdir|access|readlink|metadata)\./ && $2 - a[$1] != 0 { printf "%s %d ", $1, $2 - a[$1] }' \
    "$T_TMP/s1.stats" "$T_TMP/s2.stats")"
diag "cache.metadata.entries $(sv s2 cache.metadata.entries)"
done_testing
