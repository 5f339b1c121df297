#!/bin/bash
# 77-odd-calls: calls a caching proxy is prone to get wrong, each sent to the
# upstream itself and, the same call, through nfscached, in both write modes
# (cache.write_mode = writeback, the default, then writethrough).  Every case
# has two equal files in the export (10,000 bytes, one mtime): u-MODE-CASE
# gets the call straight from the client, p-MODE-CASE (read whole through
# nfscached first, so that the cache holds it) gets it through nfscached.
#   a) zero-length WRITE (UNSTABLE and FILE_SYNC) and READ at 0, 5000, EOF,
#      2^32 and 2^63-1: the upstream's status; size and mtime change as the
#      upstream's do; the upstream answered them (upstream.calls.WRITE and
#      READ rose by their number); nothing written into the cache
#      (cache.write.bytes), nothing dirty (cache.dirty.bytes,
#      cache.unwritten.bytes); the daemon idle afterwards (utime + stime
#      over 2 s)
#   b) WRITEs whose count disagrees with their data (count above and below
#      the data's length, count 0 with data; UNSTABLE and FILE_SYNC): the
#      upstream's status
#   c) offsets near 2^63: WRITE of 1 byte at 2^63-2, of 10 bytes across 2^63
#      and of 1 byte at 2^64-1; READ at 2^63-1, 2^63 and 2^64-1; SETATTR of
#      the size to 2^63-1, 2^63 and 2^64-1; COMMIT at 2^63 (count 0 and 10)
#      and across 2^64 (after a small UNSTABLE write); WRITE of 1 byte at 2^40
#      and a READ around it, SETATTR size 2^40 (which the upstream's file
#      system takes): the upstream's status (and count, eof and data of a
#      READ, count of a WRITE that succeeded),
#      never SERVERFAULT, no call left unanswered (10 s each); idle after
# Then, per mode, after `nfscachectl flush`: every p file is its u file,
# byte for byte; nothing dirty; every backing file sparse (allocated bytes
# at most the file's valid bytes and a page per range); no index value
# wrapped or empty (objects.size >= 0, 0 <= start < end for ranges and
# dirty_ranges), the byte at 2^40 held, and no dirty_ranges row left.  Files
# are compared where either holds data (SEEK_DATA): some are 1 TiB long.
TEST_TIMEOUT=${TEST_TIMEOUT:-150}
. "$(dirname "$0")/../lib.sh"
needs_daemon "nfscached's answers compared with the upstream's"
needs_own_upstream
setup -o cache.dirty_expire_ms=60000

# cases MODE: every case of a) to c), then the checks after a flush, as TAP
cases() {
    timeout -k 5 100 python3 - "$top_srcdir/tests" "$PORT" "$UP_NFS_PORT" "$UP_MNT_PORT" \
        "$NFSCACHECTL" "$CTL" "$NFSCACHED_PID" "$EXPORT_DIR" "$T_TMP/cache" "$1" \
        > "$T_TMP/cases-$1.out" 2>&1 <<'PY'
import os, sqlite3, sys, time, subprocess
sys.path.insert(0, sys.argv[1])
import rpc, nsrpc

(port, up_port, up_mnt, ctlbin, ctlsock, pid, export, cache,
 mode) = (int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6],
          int(sys.argv[7]), sys.argv[8], sys.argv[9], sys.argv[10])
chk = nsrpc.Checks()
st = nsrpc.Stats(ctlbin, ctlsock)
SIZE = 10000
DATA = bytes((i * 7 + 3) & 255 for i in range(SIZE))
MTIME_NS = 1600000000 * 10**9
T63, T64 = 1 << 63, 1 << 64


class Side:
    """One side of the comparison: a client of the upstream or of nfscached,
    made again after a transport failure (a call left unanswered)."""

    def __init__(self, name, port, mount_port=None):
        self.name, self.port, self.mount_port = name, port, mount_port
        self.c = nsrpc.Client(port, mount_port, timeout=10)
        self.root = self.c.root()

    def call(self, proc, args):
        try:
            return self.c.call(proc, args)
        except rpc.RpcError as e:
            self.c.close()
            self.c = nsrpc.Client(self.port, self.mount_port, timeout=10)
            return {"nfs_status": "no answer (%s)" % e, "rpc": "none"}


U = Side("upstream", up_port, up_mnt)
P = Side("nfscached", port)
files = []


def pair(case):
    """Two equal files for `case`: (upstream fh, nfscached fh)."""
    names = ["%s-%s-%s" % (s, mode, case) for s in ("u", "p")]
    for n in names:
        path = os.path.join(export, n)
        with open(path, "wb") as f:
            f.write(DATA)
        os.utime(path, ns=(MTIME_NS, MTIME_NS))
    files.append(names)
    ufh = U.call("LOOKUP", rpc.lookup_args(bytes.fromhex(U.root), names[0]))["fh"]
    pfh = P.call("LOOKUP", rpc.lookup_args(bytes.fromhex(P.root), names[1]))["fh"]
    r = P.call("READ", rpc.read_args(bytes.fromhex(pfh), 0, SIZE))
    if r.get("nfs_status") != "NFS3_OK" or r.get("count") != str(SIZE):
        chk.diag("%s: warming READ of %s: %s" % (mode, names[1], r.get("nfs_status")))
    return bytes.fromhex(ufh), bytes.fromhex(pfh)


def attrs(side, fh):
    r = side.call("GETATTR", rpc.getattr_args(fh))
    return r.get("size"), r.get("mtime")


def same(case, proc, args_of, desc, fhs=None, mtime=True):
    """`proc` with args_of(fh) to both sides: the same status, the same
    size after, mtime changed on both or on neither (unless not `mtime`:
    a COMMIT through nfscached in write-back mode is when the bytes of an
    earlier WRITE reach the upstream)."""
    ufh, pfh = fhs or pair(case)
    ub, pb = attrs(U, ufh), attrs(P, pfh)
    ur = U.call(proc, args_of(ufh))
    t0 = time.monotonic()
    pr = P.call(proc, args_of(pfh))
    ms = int((time.monotonic() - t0) * 1000)
    ua, pa = attrs(U, ufh), attrs(P, pfh)
    want = ur["nfs_status"]
    chk.is_(pr["nfs_status"], want, "%s: %s: the upstream's status" % (mode, desc))
    if want != "NFS3ERR_SERVERFAULT":
        chk.ok(pr["nfs_status"] != "NFS3ERR_SERVERFAULT", "%s: %s: no SERVERFAULT" % (mode, desc))
    chk.is_(pa[0], ua[0], "%s: %s: size after (%s)" % (mode, desc, ua[0]))
    if want == "NFS3_OK" and proc in ("READ", "WRITE"):
        keys = ("count", "eof", "data_hex") if proc == "READ" else ("count",)
        chk.is_(" ".join(str(pr.get(k)) for k in keys), " ".join(str(ur.get(k)) for k in keys),
                "%s: %s: the upstream's %s" % (mode, desc, ", ".join(keys)))
    if mtime:
        chk.is_(pa[1] != pb[1], ua[1] != ub[1],
                "%s: %s: mtime changed as the upstream's" % (mode, desc))
    if ms > 2000:
        chk.diag("%s: %s took %d ms through nfscached" % (mode, desc, ms))
    return ufh, pfh


def idle(desc):
    """utime + stime of the daemon over 2 s: at most 0.2 s (ticks)."""
    def ticks():
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])   # utime, stime (fields 14, 15)
    hz = os.sysconf("SC_CLK_TCK")
    a = ticks()
    time.sleep(2)
    b = ticks()
    chk.num((b - a) * 1000 // hz, "-le", 200, "%s: %s: daemon idle after (CPU ms in 2 s)" % (mode, desc))


def write_args(data, off, stable, count=None):
    return lambda fh: rpc.write_args(fh, off, data, stable=stable, count=count)


STABLE = (("UNSTABLE", rpc.UNSTABLE), ("FILE_SYNC", rpc.FILE_SYNC))

# a) zero-length WRITE and READ
OFFSETS = (("0", 0), ("middle", 5000), ("EOF", SIZE), ("2^32", 1 << 32), ("2^63-1", T63 - 1))
s0 = st.snap()
n = 0
for oname, off in OFFSETS:
    for sname, how in STABLE:
        same("w0-%s-%s" % (sname, oname), "WRITE", write_args(b"", off, how),
             "zero-length %s WRITE at %s" % (sname, oname))
        n += 1
    same("r0-%s" % oname, "READ", lambda fh, off=off: rpc.read_args(fh, off, 0),
         "zero-length READ at %s" % oname)
s1 = st.snap()
chk.is_(nsrpc.delta(s0, s1, "upstream.calls.WRITE"), n,
        "%s: every zero-length WRITE answered by the upstream" % mode)
chk.num(nsrpc.delta(s0, s1, "upstream.calls.READ"), "-ge", len(OFFSETS),
        "%s: every zero-length READ answered by the upstream" % mode)
chk.is_(nsrpc.delta(s0, s1, "cache.write.bytes"), 0, "%s: zero-length WRITEs: no bytes cached" % mode)
chk.is_(s1.get("cache.dirty.bytes"), 0, "%s: zero-length WRITEs: nothing dirty" % mode)
chk.is_(s1.get("cache.unwritten.bytes"), 0, "%s: zero-length WRITEs: nothing unwritten" % mode)
idle("zero-length calls")

# b) count and data disagree
for sname, how in STABLE:
    for cname, count in (("count 100, 10 bytes", 100), ("count 5, 10 bytes", 5),
                         ("count 0, 10 bytes", 0)):
        same("wc-%s-%d" % (sname, count), "WRITE", write_args(b"0123456789", 100, how, count),
             "%s WRITE %s" % (sname, cname))

# c) offsets near 2^63
for sname, how in STABLE:
    same("w1-%s" % sname, "WRITE", write_args(b"x", T63 - 2, how),
         "%s WRITE of 1 byte at 2^63-2" % sname)
    same("w10-%s" % sname, "WRITE", write_args(b"0123456789", T63 - 5, how),
         "%s WRITE of 10 bytes across 2^63" % sname)
    same("w64-%s" % sname, "WRITE", write_args(b"y", T64 - 1, how),
         "%s WRITE of 1 byte at 2^64-1" % sname)
# far, but within what the export's file system holds: the upstream takes
# them, and the cache keeps a byte 1 TiB into a sparse backing file
for sname, how in STABLE:
    fhs = same("w40-%s" % sname, "WRITE", write_args(b"z", 1 << 40, how),
               "%s WRITE of 1 byte at 2^40" % sname)
    same(None, "READ", lambda fh: rpc.read_args(fh, (1 << 40) - 4, 10),
         "READ of 10 bytes at 2^40-4 after it", fhs)
same("s40", "SETATTR", lambda fh: nsrpc.setattr_guarded_args(fh, size=1 << 40), "SETATTR size 2^40")
for oname, off in (("2^63-1", T63 - 1), ("2^63", T63), ("2^64-1", T64 - 1)):
    same("r10-%s" % oname, "READ", lambda fh, off=off: rpc.read_args(fh, off, 10),
         "READ of 10 bytes at %s" % oname)
for sname, size in (("2^63-1", T63 - 1), ("2^63", T63), ("2^64-1", T64 - 1)):
    same("s-%s" % sname, "SETATTR", lambda fh, size=size: nsrpc.setattr_guarded_args(fh, size=size),
         "SETATTR size %s" % sname)
for cname, off, count in (("at 2^63", T63, 0), ("of 10 at 2^63", T63, 10),
                          ("across 2^64", T64 - 5, 10)):
    fhs = pair("c-%d-%d" % (off, count))
    for side, fh in zip((U, P), fhs):
        side.call("WRITE", rpc.write_args(fh, 10, b"abc", stable=rpc.UNSTABLE))
    same(None, "COMMIT", lambda fh, off=off, count=count: rpc.commit_args(fh, off, count),
         "COMMIT %s after an UNSTABLE WRITE" % cname, fhs, mtime=False)
idle("calls near 2^63")

# after a flush: the files, the cache's files, the index
out = subprocess.run([ctlbin, "-s", ctlsock, "flush"], capture_output=True, text=True, timeout=30)
chk.is_(out.returncode, 0, "%s: nfscachectl flush (%s)" % (mode, out.stdout.strip()))
s2 = st.snap()
chk.is_(s2.get("cache.dirty.bytes"), 0, "%s: nothing dirty after the flush" % mode)
def extents(fd, size):
    """The data extents of a sparse file: [(start, end)]."""
    out, pos = [], 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:
            break
        end = os.lseek(fd, start, os.SEEK_HOLE)
        out.append((start, end))
        pos = end
    return out


def same_bytes(a, b):
    """Files a and b hold the same bytes (holes read as zeros): compared
    where either holds data."""
    fa, fb = os.open(a, os.O_RDONLY), os.open(b, os.O_RDONLY)
    try:
        size = os.fstat(fa).st_size
        if os.fstat(fb).st_size != size:
            return False
        for start, end in extents(fa, size) + extents(fb, size):
            for off in range(start, end, 1 << 20):
                n = min(1 << 20, end - off)
                if os.pread(fa, n, off) != os.pread(fb, n, off):
                    return False
        return True
    finally:
        os.close(fa)
        os.close(fb)


differ = [p for u, p in files
          if not same_bytes(os.path.join(export, u), os.path.join(export, p))]
chk.is_(" ".join(differ), "", "%s: every file through nfscached is the one the upstream made" % mode)
fat = []
nobj = 0
for d, _, names in os.walk(os.path.join(cache, "objects")):
    for n in names:
        s = os.stat(os.path.join(d, n))
        nobj += 1
        if s.st_blocks * 512 > 64 * 1024 + SIZE:
            fat.append("%s: %d bytes allocated, size %d" % (n, s.st_blocks * 512, s.st_size))
chk.num(nobj, "-gt", 0, "%s: backing files examined" % mode)
chk.is_("; ".join(fat), "", "%s: every backing file sparse" % mode)
time.sleep(0.5)   # the index is written at the end of a loop iteration
db = sqlite3.connect("file:%s/index.sqlite?mode=ro" % cache, uri=True, timeout=10)
bad = db.execute("SELECT count(*) FROM objects WHERE size < 0 OR mtime_ns < 0").fetchone()[0]
chk.is_(bad, 0, "%s: index: no object size or mtime wrapped" % mode)
for table in ("ranges", "dirty_ranges"):
    rows = db.execute('SELECT object, start, "end" FROM %s WHERE start < 0 OR "end" <= start'
                      % table).fetchall()
    chk.is_(rows, [], "%s: index: no %s row wrapped or empty" % (mode, table))
far = db.execute('SELECT count(*) FROM ranges WHERE start <= ? AND "end" > ?',
                 (1 << 40, 1 << 40)).fetchone()[0]
chk.num(far, "-ge", 1, "%s: index: the byte at 2^40 is held (so the sparse check means it)" % mode)
chk.is_(db.execute("SELECT count(*) FROM dirty_ranges").fetchone()[0], 0,
        "%s: index: no dirty range left" % mode)
db.close()
idle("the flush")
PY
    local rc=$?
    checks "$T_TMP/cases-$1.out"
    ok "$rc" "$1: every case ran (exit status $rc)" ||
        diag "$(grep -v $'\x1f' "$T_TMP/cases-$1.out" | tail -n 5)"
}

cases writeback
stop_nfscached
ok $? "nfscached (writeback) exits cleanly"
no_sanitizer_report "$T_TMP/nfscached.log"
ok $? "no sanitizer report so far"
start_nfscached -o cache.dirty_expire_ms=60000 -o cache.write_mode=writethrough 2>"$T_TMP/start.err" ||
    { ok 1 "nfscached starts in writethrough mode: $(cat "$T_TMP/start.err")"; done_testing; }
cases writethrough
done_testing
