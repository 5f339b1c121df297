#!/bin/bash
# 14-procedures: transparency, procedure by procedure.  Every NFSv3 procedure
# (RFC 1813, all 22) and every MOUNTv3 procedure (6) goes through the proxy
# with rpc.py `proc`, each with a successful outcome; its result fields and
# its effect in the export directory (names, file type, mode, link count,
# bytes) are checked, and nfs3.calls.* / mount3.calls.* and upstream.calls.*
# rise by exactly the calls sent.  The read-only procedures (GETATTR, LOOKUP,
# ACCESS, READLINK, READ, READDIR, READDIRPLUS, FSSTAT, FSINFO, PATHCONF, MNT,
# EXPORT) are first sent to the upstream itself: the proxy's result body is
# the upstream's byte for byte, but for attribute atime and ctime and the
# FSINFO transfer sizes, which the proxy clamps to 1 MiB (default
# server.max_record).  A LOOKUP of a missing name is NFS3ERR_NOENT with the
# upstream's body.
TEST_TIMEOUT=${TEST_TIMEOUT:-180}
. "$(dirname "$0")/../lib.sh"
setup

RPC_LIMIT=30 RPC_TIMEOUT=10
direct=${NFSCACHED_E2E_DIRECT:-0}
MIB=1048576
WD=procs.$$                      # working directory in the export root
TEXT="transparent bytes, $$"
declare -A SENT=()               # procedure -> calls sent through the proxy

pv() { val "$T_TMP/p.out" "$1"; }
dv() { val "$T_TMP/d.out" "$1"; }

# prx PROC ARG...: PROC through the proxy (counted in SENT); output in p.out
prx() {
    SENT[$1]=$((${SENT[$1]:-0} + 1))
    rpc proc "$@" >"$T_TMP/p.out" ||
        diag "proxy $*: $(cat "$T_TMP/p.out")"
}

# upd PROC ARG...: the same call to the upstream itself; output in d.out
upd() {
    up proc "$@" >"$T_TMP/d.out" ||
        diag "upstream $*: $(cat "$T_TMP/d.out")"
}
have_upstream() { [ -n "$UP_NFS_PORT" ] && [ -n "$UP_MNT_PORT" ]; }

# fields FILE: the decoded result fields of FILE, for a diff
fields() { grep -vE '^(xid|reply_sha1|body|body_masked):' "$1"; }

# same_body WHAT: the proxy's reply (p.out) is accepted like the upstream's
# (d.out) and has its result body, masked fields aside.
same_body() {
    local other=$T_TMP/d.out
    if [ "$(pv reply)" = "$(val "$other" reply)" ] &&
        [ -n "$(pv reply)" ] && [ "$(pv body_masked)" = "$(val "$other" body_masked)" ]; then
        ok 0 "$1: the proxy's result is the upstream's, byte for byte"
        return 0
    fi
    ok 1 "$1: the proxy's result is the upstream's, byte for byte"
    diag "proxy body:    $(pv body)" "upstream body: $(val "$other" body)" \
        "--- upstream / +++ proxy, decoded:"
    diff -u <(fields "$other") <(fields "$T_TMP/p.out") | sed 1,2d | head -n 40 |
        while IFS= read -r l; do diag "$l"; done
    return 1
}

# label PROC ARG...: the call in words, file handles as FH
label() {
    local a out=$1
    for a in "${@:2}"; do
        [[ "$a" =~ ^[0-9a-f]{16,}$ ]] && a=FH
        out+=" $a"
    done
    echo "$out"
}

# both PROC ARG...: the call to the upstream, then through the proxy, and
# their results compared (without an upstream to ask: the proxy only)
both() {
    if have_upstream; then
        upd "$@"
        prx "$@"
        same_body "$(label "$@")"
    else
        prx "$@"
        skip "$(label "$@"): compared with the upstream's result" "no upstream ports"
    fi
}

# disk_names DIR: the names in DIR on disk with . and .., sorted
disk_names() { { echo .; echo ..; ls -A "$1"; } | LC_ALL=C sort | tr '\n' ' '; }
# reply_names: the `names` of p.out, sorted
reply_names() { pv names | tr ' ' '\n' | LC_ALL=C sort | tr '\n' ' '; }

if [ "$direct" != 1 ]; then
    ctl stats >"$T_TMP/before.stats" || fail_or_skip "no stats from the daemon"
fi

# ---- MOUNTv3: NULL, EXPORT, MNT, DUMP --------------------------------------

prx MOUNT_NULL
is "$(pv reply)|$(pv body)" "accepted SUCCESS|" "MOUNT NULL: accepted, empty result"
prx NULL
is "$(pv reply)|$(pv body)" "accepted SUCCESS|" "NFS NULL: accepted, empty result"

both EXPORT
is "$(pv export.1.dir)" /export "EXPORT lists /export"

both MNT /export
is "$(pv mount_status)" MNT3_OK "MNT /export: MNT3_OK"
ROOT=$(pv fh)
[ -n "$ROOT" ] || fail_or_skip "no root file handle"

prx DUMP
is "$(pv reply)" "accepted SUCCESS" "DUMP: accepted"
[[ "$(pv mounts)" =~ ^[0-9]+$ ]]
ok $? "DUMP: a mount list ($(pv mounts) entries)"

# ---- making things: MKDIR, CREATE, WRITE (UNSTABLE), COMMIT ----------------

prx MKDIR "$ROOT" "$WD" 755
is "$(pv nfs_status) $(pv obj.type)" "NFS3_OK NF3DIR" "MKDIR $WD: NFS3_OK, a directory"
DIR=$(pv fh)
is "$(stat -c '%F %a' "$EXPORT_DIR/$WD" 2>&1)" "directory 755" "$WD on disk: directory, mode 755"

prx CREATE "$DIR" file 644
is "$(pv nfs_status) $(pv obj.type)" "NFS3_OK NF3REG" "CREATE file: NFS3_OK, a regular file"
FILE=$(pv fh)
is "$(stat -c '%F %a' "$EXPORT_DIR/$WD/file" 2>&1)" "regular empty file 644" \
    "file on disk: regular, empty, mode 644"

prx WRITE "$FILE" 0 "$TEXT" unstable
is "$(pv nfs_status) $(pv count)" "NFS3_OK ${#TEXT}" "WRITE UNSTABLE of ${#TEXT} bytes: NFS3_OK"
WVERF=$(pv verf)
prx COMMIT "$FILE" 0 0
is "$(pv nfs_status)" NFS3_OK "COMMIT after the UNSTABLE WRITE: NFS3_OK"
is "$(pv verf)" "$WVERF" "COMMIT carries the WRITE's verifier"
is "$(cat "$EXPORT_DIR/$WD/file")" "$TEXT" "the bytes are in the file on disk"

# ---- reading: READ, GETATTR, SETATTR, ACCESS -------------------------------

both READ "$FILE" 0 4096
is "$(pv nfs_status) $(pv count) $(pv eof)" "NFS3_OK ${#TEXT} true" "READ: NFS3_OK, all bytes, eof"
is "$(pv data)" "$TEXT" "READ returns the bytes written"

both GETATTR "$FILE"
is "$(pv nfs_status) $(pv type) $(pv size) $(pv nlink)" "NFS3_OK NF3REG ${#TEXT} 1" \
    "GETATTR: a regular file of ${#TEXT} bytes, one link"

prx SETATTR "$FILE" 600
is "$(pv nfs_status) $(pv obj.mode)" "NFS3_OK 600" "SETATTR mode 0600: NFS3_OK, mode 600 after"
is "$(stat -c %a "$EXPORT_DIR/$WD/file")" 600 "file on disk: mode 600"

both ACCESS "$FILE" 0x3f
is "$(pv nfs_status)" NFS3_OK "ACCESS of all rights: NFS3_OK"
acc=$(pv access)
[[ "$acc" =~ ^0x[0-9a-f]+$ ]] && [ $((acc & 0xd)) = 13 ]
ok $? "ACCESS grants READ, MODIFY and EXTEND to root (${acc:-none})"

# ---- names: SYMLINK, READLINK, MKNOD, LINK, RENAME, MKDIR ------------------

prx SYMLINK "$DIR" link file
is "$(pv nfs_status) $(pv obj.type)" "NFS3_OK NF3LNK" "SYMLINK link -> file: NFS3_OK"
LINKFH=$(pv fh)
is "$(stat -c %F "$EXPORT_DIR/$WD/link" 2>&1) $(readlink "$EXPORT_DIR/$WD/link")" \
    "symbolic link file" "link on disk: a symbolic link to file"
both READLINK "$LINKFH"
is "$(pv nfs_status) $(pv target)" "NFS3_OK file" "READLINK returns the target, file"

prx MKNOD "$DIR" fifo fifo 644
is "$(pv nfs_status) $(pv obj.type)" "NFS3_OK NF3FIFO" "MKNOD fifo: NFS3_OK, a FIFO"
is "$(stat -c '%F %a' "$EXPORT_DIR/$WD/fifo" 2>&1)" "fifo 644" "fifo on disk: a FIFO, mode 644"

prx LINK "$FILE" "$DIR" hard
is "$(pv nfs_status) $(pv obj.nlink)" "NFS3_OK 2" "LINK hard -> file: NFS3_OK, two links"
is "$(stat -c %h "$EXPORT_DIR/$WD/file") $(stat -c %i "$EXPORT_DIR/$WD/hard" 2>&1)" \
    "2 $(stat -c %i "$EXPORT_DIR/$WD/file")" "on disk: file has two links, hard is the same inode"

prx RENAME "$DIR" hard "$DIR" renamed
is "$(pv nfs_status)" NFS3_OK "RENAME hard -> renamed: NFS3_OK"
[ ! -e "$EXPORT_DIR/$WD/hard" ] &&
    [ "$(stat -c %i "$EXPORT_DIR/$WD/renamed")" = "$(stat -c %i "$EXPORT_DIR/$WD/file")" ]
ok $? "on disk: hard is gone, renamed is file's inode"

prx MKDIR "$DIR" sub 700
is "$(pv nfs_status) $(pv obj.mode)" "NFS3_OK 700" "MKDIR sub: NFS3_OK, mode 700"
is "$(stat -c '%F %a' "$EXPORT_DIR/$WD/sub" 2>&1)" "directory 700" "sub on disk: directory, mode 700"

# ---- looking: LOOKUP, READDIR, READDIRPLUS ---------------------------------

both LOOKUP "$DIR" file
is "$(pv nfs_status) $(pv fh)" "NFS3_OK $FILE" "LOOKUP file: NFS3_OK, the handle CREATE gave"
both LOOKUP "$DIR" missing
is "$(pv nfs_status)" NFS3ERR_NOENT "LOOKUP of a missing name: NFS3ERR_NOENT"

want_names=$(disk_names "$EXPORT_DIR/$WD")
diag "names on disk: $want_names"
both READDIR "$DIR" 8192
is "$(pv nfs_status) $(pv eof)" "NFS3_OK true" "READDIR: NFS3_OK, whole directory"
is "$(reply_names)" "$want_names" "READDIR returns the names on disk"

both READDIRPLUS "$DIR" 8192 32768
is "$(pv nfs_status) $(pv eof)" "NFS3_OK true" "READDIRPLUS: NFS3_OK, whole directory"
is "$(reply_names)" "$want_names" "READDIRPLUS returns the names on disk"
types=
n=$(pv entries)
for ((i = 1; i <= ${n:-0}; i++)); do
    case $(pv "entry.$i.name") in
    file) types+=" file=$(pv "entry.$i.type"):$([ "$(pv "entry.$i.fh")" = "$FILE" ] && echo fh)" ;;
    fifo | link | sub) types+=" $(pv "entry.$i.name")=$(pv "entry.$i.type")" ;;
    esac
done
is "$(tr ' ' '\n' <<<"$types" | LC_ALL=C sort | tr '\n' ' ')" \
    " fifo=NF3FIFO file=NF3REG:fh link=NF3LNK sub=NF3DIR " \
    "READDIRPLUS: each entry's type, and file's handle"

# ---- the file system: FSSTAT, FSINFO, PATHCONF -----------------------------

# Free space changes with any write on the file system: the proxy's reply
# must equal the upstream's just before or just after it.
if have_upstream; then
    # other tests write to the same file system at the same time: a few tries
    for attempt in $(seq 1 20); do
        upd FSSTAT "$ROOT"
        cp "$T_TMP/d.out" "$T_TMP/d0.out"
        prx FSSTAT "$ROOT"
        upd FSSTAT "$ROOT"
        [ "$(pv body_masked)" = "$(val "$T_TMP/d0.out" body_masked)" ] && cp "$T_TMP/d0.out" "$T_TMP/d.out"
        [ "$(pv body_masked)" = "$(dv body_masked)" ] && break
    done
    [ "$attempt" = 1 ] || diag "FSSTAT: $attempt attempts"
    same_body "FSSTAT"
else
    prx FSSTAT "$ROOT"
fi
is "$(pv nfs_status)" NFS3_OK "FSSTAT: NFS3_OK"
num_ok "$(pv tbytes)" -gt 0 "FSSTAT: total bytes $(pv tbytes)"

if have_upstream; then
    upd FSINFO "$ROOT"
    prx FSINFO "$ROOT"
    same_body "FSINFO (but rtmax, rtpref, wtmax, wtpref, dtpref)"
    if [ "$direct" != 1 ]; then
        for f in rtmax rtpref wtmax wtpref dtpref; do
            num_ok "$(pv $f)" -le $MIB "FSINFO $f $(pv $f) <= 1 MiB"
            up=$(dv $f)
            is "$(pv $f)" "$((up < MIB ? up : MIB))" "FSINFO $f: the upstream's $up, clamped to 1 MiB"
        done
    fi
else
    prx FSINFO "$ROOT"
fi
is "$(pv nfs_status)" NFS3_OK "FSINFO: NFS3_OK"

both PATHCONF "$ROOT"
is "$(pv nfs_status)" NFS3_OK "PATHCONF: NFS3_OK"
num_ok "$(pv name_max)" -ge 255 "PATHCONF: name_max $(pv name_max)"

# ---- removing: REMOVE, RMDIR -------------------------------------------

prx REMOVE "$DIR" fifo
is "$(pv nfs_status)" NFS3_OK "REMOVE fifo: NFS3_OK"
[ ! -e "$EXPORT_DIR/$WD/fifo" ]
ok $? "fifo is gone from the disk"
prx RMDIR "$DIR" sub
is "$(pv nfs_status)" NFS3_OK "RMDIR sub: NFS3_OK"
[ ! -e "$EXPORT_DIR/$WD/sub" ]
ok $? "sub is gone from the disk"
is "$(disk_names "$EXPORT_DIR/$WD")" ". .. file link renamed " "left on disk: file link renamed"

# ---- MOUNTv3: UMNT, UMNTALL --------------------------------------------

prx UMNT /export
is "$(pv reply)|$(pv body)" "accepted SUCCESS|" "UMNT /export: accepted, empty result"
prx UMNTALL
is "$(pv reply)|$(pv body)" "accepted SUCCESS|" "UMNTALL: accepted, empty result"

# ---- counters: exactly the calls sent, received and forwarded --------------

if [ "$direct" != 1 ]; then
    snap after
    # delta COUNTER: how much it rose since the first snapshot
    delta() { d before after "$1"; }
    for p in NULL GETATTR SETATTR LOOKUP ACCESS READLINK READ WRITE CREATE MKDIR SYMLINK \
        MKNOD REMOVE RMDIR RENAME LINK READDIR READDIRPLUS FSSTAT FSINFO PATHCONF COMMIT; do
        is "$(delta "nfs3.calls.$p")" "${SENT[$p]:-0}" "nfs3.calls.$p rose by ${SENT[$p]:-0}"
        want=${SENT[$p]:-0}
        # the READ reads bytes the WRITE through the proxy put in the cache:
        # answered locally, after one ACCESS asked for that credential
        [ "$p" = READ ] && want=0
        [ "$p" = ACCESS ] && want=$((want + 1))
        is "$(delta "upstream.calls.$p")" "$want" "upstream.calls.$p rose by $want"
    done
    is "$(( $(delta cache.read.hits) + $(delta cache.read.partial_hits) ))" "${SENT[READ]:-0}" \
        "the READ was answered from the cache"
    for p in NULL MNT DUMP UMNT UMNTALL EXPORT; do
        up=$p
        [ "$p" = NULL ] && up=MOUNT_NULL
        is "$(delta "mount3.calls.$p")" "${SENT[$up]:-0}" "mount3.calls.$p rose by ${SENT[$up]:-0}"
        is "$(delta "upstream.calls.$up")" "${SENT[$up]:-0}" \
            "upstream.calls.$up rose by ${SENT[$up]:-0}"
    done
fi
done_testing
