#!/bin/bash
# 67-meta-two: two nfscached instances, A and B, in front of one upstream,
# both with the namespace cache on and TTLs of 2 s (cache.acregmin =
# acregmax = acdirmin = acdirmax = 2): a change made through A is seen
# through B once B's TTL has passed (the actimeo promise between proxies).
#   grow       f read through B (data and attributes cached: the second READ
#              and GETATTR are hits); A writes past its end (FILE_SYNC);
#              after TTL + 1 s B's GETATTR gives the new size and its READ
#              the new bytes (before the TTL B may still give the old ones)
#   overwrite  f2 read through B; A overwrites it in place, same size
#              (UNSTABLE + COMMIT); after TTL + 1 s B's READ gives the new
#              bytes
#   create     B's LOOKUP of a missing name is a negative hit; A creates it:
#              within acdirmax + 1 s B's LOOKUP finds it (A's handle) and
#              B's READDIRPLUS lists it
#   remove     A removes it: within acdirmax + 1 s B's LOOKUP is
#              NFS3ERR_NOENT and its listing is the export's
TEST_TIMEOUT=${TEST_TIMEOUT:-90}
. "$(dirname "$0")/../lib.sh"
needs_daemon "the namespace cache of nfscached"
needs_own_upstream
TTL=2
OPTS=(-o cache.metadata=yes -o "cache.acregmin=$TTL" -o "cache.acregmax=$TTL"
      -o "cache.acdirmin=$TTL" -o "cache.acdirmax=$TTL")
setup "${OPTS[@]}"

# the second daemon: its own configuration, cache directory, log and
# control socket in T_TMP/b; PORT and NFSCACHED_PID stay A's
PORT_A=$PORT CTL_A=$CTL PID_A=$NFSCACHED_PID
B_DIR=$T_TMP/b
CTL_B=$B_DIR/ctl.sock
mkdir -p "$B_DIR"
if ! T_TMP=$B_DIR CTL=$CTL_B start_nfscached "${OPTS[@]}" 2>"$T_TMP/start-b.err"; then
    PORT=$PORT_A NFSCACHED_PID=$PID_A
    ok 1 "a second nfscached starts"
    diag "$(cat "$T_TMP/start-b.err")"
    done_testing
fi
PORT_B=$PORT PID_B=$NFSCACHED_PID
track "$PID_B"
PORT=$PORT_A NFSCACHED_PID=$PID_A
[ "$PORT_A" != "$PORT_B" ]
ok $? "two nfscached instances listen (ports $PORT_A and $PORT_B)"

head -c 8192 /dev/urandom > "$EXPORT_DIR/f"
head -c 20000 /dev/urandom > "$EXPORT_DIR/f2"

timeout -k 5 70 python3 - "$top_srcdir/tests" "$PORT_A" "$PORT_B" "$UP_NFS_PORT" "$UP_MNT_PORT" \
    "$EXPORT_DIR" "$NFSCACHECTL" "$CTL_A" "$CTL_B" "$TTL" > "$T_TMP/two.out" 2> "$T_TMP/two.err" <<'PY'
import hashlib, os, sys, time
sys.path.insert(0, sys.argv[1])
import rpc, nsrpc
port_a, port_b, up_nfs, up_mnt = (int(v) for v in sys.argv[2:6])
export, ttl = sys.argv[6], int(sys.argv[10])
sa, sb = nsrpc.Stats(sys.argv[7], sys.argv[8]), nsrpc.Stats(sys.argv[7], sys.argv[9])
chk = nsrpc.Checks()
delta = nsrpc.delta
A, B = nsrpc.Client(port_a), nsrpc.Client(port_b)
D = nsrpc.Client(up_nfs, up_mnt)

def disk(name):
    with open(os.path.join(export, name), "rb") as fp:
        return fp.read()

def md5(b):
    return hashlib.md5(b).hexdigest()

def read_all(c, fh):
    r = c.read(fh, 0, 65536)
    if r["nfs_status"] != "NFS3_OK":
        return r["nfs_status"], b"", None
    return r["nfs_status"], bytes.fromhex(r["data_hex"]), r.get("obj.size")

root = A.root()
chk.is_(B.root(), root, "A and B give the same root handle")

# ---- grow: a WRITE past the end through A ------------------------------------------
f = B.lookup(root, "f").get("fh", "")
chk.is_(A.lookup(root, "f").get("fh"), f, "grow: A and B give f the same handle")
old = disk("f")
st1, data, size = read_all(B, f)
chk.is_("%s %s %s" % (st1, md5(data), size), "NFS3_OK %s 8192" % md5(old), "grow: B reads f: 8192 bytes")
B.getattr(f)
s0 = sb.snap()
st2, data, _ = read_all(B, f)
g = B.getattr(f)
s1 = sb.snap()
chk.is_("%s %s %s" % (st2, md5(data), g.get("size")), "NFS3_OK %s 8192" % md5(old), "grow: and again")
chk.is_("%s %s %s" % (delta(s0, s1, "upstream.calls.READ"), delta(s0, s1, "cache.read.hits"),
                      delta(s0, s1, "cache.attr.hits")), "0 1 1",
        "grow: B answers the second READ and GETATTR from its cache")
new = os.urandom(8192)
w = A.write(f, 4096, new, stable=rpc.FILE_SYNC)
chk.is_("%s %s %s" % (w["nfs_status"], w.get("count"), w.get("committed")), "NFS3_OK 8192 FILE_SYNC",
        "grow: A writes 8192 bytes at 4096 (FILE_SYNC)")
want = old[:4096] + new
chk.is_(md5(disk("f")), md5(want), "grow: the export file holds them (12288 bytes)")
t_write = time.monotonic()
st3, data, size = read_all(B, f)
chk.diag("grow: B's READ right after the WRITE: %s, %d bytes, %s" % (
    st3, len(data), "new" if data == want else "old" if data == old else "other"))
time.sleep(max(0.0, ttl + 1 - (time.monotonic() - t_write)))
g = B.getattr(f)
chk.is_("%s %s" % (g["nfs_status"], g.get("size")), "NFS3_OK 12288",
        "grow: after TTL + 1 s B's GETATTR gives the new size")
st4, data, size = read_all(B, f)
chk.is_("%s %d %s" % (st4, len(data), size), "NFS3_OK 12288 12288", "grow: B's READ gives 12288 bytes")
chk.is_(md5(data), md5(want), "grow: ... the bytes A wrote")

# ---- overwrite in place: UNSTABLE + COMMIT through A -------------------------------------
f2 = B.lookup(root, "f2").get("fh", "")
old = disk("f2")
read_all(B, f2)
s0 = sb.snap()
st1, data, size = read_all(B, f2)
s1 = sb.snap()
chk.is_("%s %s %s" % (st1, md5(data), size), "NFS3_OK %s 20000" % md5(old), "overwrite: B reads f2")
chk.is_("%s %s" % (delta(s0, s1, "upstream.calls.READ"), delta(s0, s1, "cache.read.hits")), "0 1",
        "overwrite: ... from its cache the second time")
new = os.urandom(20000)
w = A.write(f2, 0, new, stable=rpc.UNSTABLE)
cm = A.commit(f2)
chk.is_("%s %s" % (w["nfs_status"], cm["nfs_status"]), "NFS3_OK NFS3_OK",
        "overwrite: A writes 20000 bytes at 0 (UNSTABLE) and COMMITs")
chk.is_(md5(disk("f2")), md5(new), "overwrite: the export file holds them")
t_write = time.monotonic()
time.sleep(max(0.0, ttl + 1 - (time.monotonic() - t_write)))
st2, data, size = read_all(B, f2)
chk.is_("%s %s %s" % (st2, md5(data), size), "NFS3_OK %s 20000" % md5(new),
        "overwrite: after TTL + 1 s B's READ gives the new bytes")

# ---- create: a name made through A ---------------------------------------------------------
def b_listed():
    l = B.listing(root, dircount=512, maxcount=4096)
    return l["status"] + l["error"], l["names"], l["fhs"]

b_listed()
B.lookup(root, "newf")
s0 = sb.snap()
r = B.lookup(root, "newf")
s1 = sb.snap()
chk.is_(r["nfs_status"], "NFS3ERR_NOENT", "create: B's LOOKUP of newf: NFS3ERR_NOENT")
chk.is_("%s %s" % (delta(s0, s1, "upstream.calls.LOOKUP"), delta(s0, s1, "cache.lookup.negative_hits")), "0 1",
        "create: ... a negative entry of B's cache")
c = A.create(root, "newf")
chk.is_(c["nfs_status"], "NFS3_OK", "create: A creates newf")
nfh = c.get("fh", "")
t0 = time.monotonic()
found = listed = None
while time.monotonic() - t0 < ttl + 1.5:
    if found is None and B.lookup(root, "newf").get("fh") == nfh:
        found = time.monotonic() - t0
    if listed is None:
        stt, names, fhs = b_listed()
        if "newf" in names and fhs.get("newf") == nfh:
            listed = time.monotonic() - t0
    if found is not None and listed is not None:
        break
    time.sleep(0.1)
chk.ok(found is not None and found <= ttl + 1, "create: B's LOOKUP finds newf (A's handle) within acdirmax + 1 s (%s)"
       % ("%.1f s" % found if found is not None else "never"))
chk.ok(listed is not None and listed <= ttl + 1, "create: B's READDIRPLUS lists it within acdirmax + 1 s (%s)"
       % ("%.1f s" % listed if listed is not None else "never"))
stt, names, fhs = b_listed()
chk.is_(" ".join(sorted(names)), " ".join(sorted(os.listdir(export) + [".", ".."])),
        "create: B lists the export's names")

# ---- remove: the name taken away through A -------------------------------------------------
B.lookup(root, "newf")
r = A.remove(root, "newf")
chk.is_(r["nfs_status"], "NFS3_OK", "remove: A removes newf")
t0 = time.monotonic()
gone = None
while time.monotonic() - t0 < ttl + 1.5:
    stt, names, fhs = b_listed()
    if B.lookup(root, "newf")["nfs_status"] == "NFS3ERR_NOENT" and "newf" not in names:
        gone = time.monotonic() - t0
        break
    time.sleep(0.1)
chk.ok(gone is not None and gone <= ttl + 1, "remove: B's LOOKUP is NFS3ERR_NOENT and its listing lacks newf "
       "within acdirmax + 1 s (%s)" % ("%.1f s" % gone if gone is not None else "never"))
stt, names, fhs = b_listed()
chk.is_(" ".join(sorted(names)), " ".join(sorted(os.listdir(export) + [".", ".."])),
        "remove: B lists the export's names")
PY
rc=$?
checks "$T_TMP/two.out"
ok $rc "the calls ran to their end" || diag "$(tail -n 8 "$T_TMP/two.err")"

stop_pid "$PID_B" "$NFSCACHED_STOP_TIMEOUT"
ok $? "the second nfscached exits cleanly on SIGTERM" || diag "$(tail -n 20 "$B_DIR/nfscached.log")"
no_sanitizer_report "$B_DIR/nfscached.log"
ok $? "no sanitizer report in the second daemon's log" || diag "$(tail -n 20 "$B_DIR/nfscached.log")"
done_testing
