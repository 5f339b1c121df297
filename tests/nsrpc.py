"""nsrpc.py - helpers of the namespace cache tests (tests/e2e/6x-meta-*.sh),
on top of rpc.py: one connection per credential that decodes every result
by procedure name, whole directory listings (READDIR, READDIRPLUS, page by
page with the cookies and verifier the server gives), a guarded SETATTR,
the daemon's counters, and assertions a test script turns into TAP.

Used from inline python in the shell tests:

    import rpc, nsrpc
    A = nsrpc.Client(port)                 # through nfscached, uid 0
    U = nsrpc.Client(up_port, up_mount_port, uid=1000, gid=1000)
    st = nsrpc.Stats(nfscachectl, ctl_socket)
    chk = nsrpc.Checks()
    s0 = st.snap(); r = A.lookup(root, "name"); s1 = st.snap()
    chk.is_(r["nfs_status"], "NFS3_OK", "LOOKUP name")
    chk.is_(nsrpc.delta(s0, s1, "upstream.calls.LOOKUP"), 0, "... from the cache")

Checks prints one line per assertion, fields separated by \\x1f:
    CHECK is DESC GOT WANT        CHECK num DESC GOT OP WANT (OP -eq -ge ...)
    CHECK ok DESC STATUS          DIAG TEXT
which `checks FILE` (tests/lib/client.sh) reads back as is/num_ok/ok/diag.

Only the Python standard library and rpc.py are used.
"""

import subprocess
import sys

import rpc

SEP = "\x1f"

ACCESS3_READ, ACCESS3_LOOKUP, ACCESS3_MODIFY = 0x01, 0x02, 0x04
ACCESS3_EXTEND, ACCESS3_DELETE, ACCESS3_EXECUTE = 0x08, 0x10, 0x20
ACCESS3_ALL = 0x3f


def _b(fh):
    """A file handle as bytes (hex strings are what the decoders give)."""
    if isinstance(fh, str):
        return bytes.fromhex(fh)
    return bytes(fh)


def _h(fh):
    return fh if isinstance(fh, str) else bytes(fh).hex()


class Client:
    """Calls of one credential (AUTH_SYS uid, gid, gids) on one NFS
    connection, and MOUNT calls on a second one to `mount_port` (the same
    port through nfscached; the upstream has its own)."""

    def __init__(self, port, mount_port=None, uid=0, gid=0, gids=(), host="127.0.0.1",
                 timeout=20.0):
        self.host, self.port = host, port
        self.mount_port = mount_port or port
        self.uid, self.gid, self.gids = uid, gid, tuple(gids)
        self.timeout = timeout
        self._nfs = None
        self._mount = None

    def _conn(self, prog):
        if prog == rpc.NFS_PROGRAM:
            if self._nfs is None:
                self._nfs = rpc.Conn(self.host, self.port, timeout=self.timeout,
                                     uid=self.uid, gid=self.gid)
            return self._nfs
        if self._mount is None:
            self._mount = rpc.Conn(self.host, self.mount_port, timeout=self.timeout,
                                   uid=self.uid, gid=self.gid)
        return self._mount

    def close(self):
        for c in (self._nfs, self._mount):
            if c is not None:
                c.close()
        self._nfs = self._mount = None

    def call(self, name, args=b""):
        """Procedure `name` of rpc.PROCS with encoded `args`: its decoded
        result fields (rpc.decode_result), and `rpc` (the accept status, or
        the reply's summary when not accepted with SUCCESS).  A reply that
        is not SUCCESS has nfs_status/mount_status set to that summary."""
        prog, proc, _spec, _enc, dec = rpc.PROCS[name]
        vers = rpc.NFS_V3 if prog == rpc.NFS_PROGRAM else rpc.MOUNT_V3
        rep = self._conn(prog).call(prog, vers, proc, args, gids=self.gids)
        if not rep.ok():
            s = rep.summary()
            return {"rpc": s, "nfs_status": s, "mount_status": s}
        out = rpc.decode_result(dec, rep.body)
        out["rpc"] = "SUCCESS"
        return out

    # -- shorthands; FH arguments are bytes or hex --

    def mnt(self, path="/export"):
        return self.call("MNT", rpc.dirpath_args(path))

    def root(self, path="/export"):
        r = self.mnt(path)
        if r.get("mount_status") != "MNT3_OK":
            raise rpc.RpcError("MNT %s: %s" % (path, r.get("mount_status")))
        return r["fh"]

    def exports(self):
        return self.call("EXPORT")

    def null(self):
        return self.call("NULL")

    def mount_null(self):
        return self.call("MOUNT_NULL")

    def getattr(self, fh):
        return self.call("GETATTR", rpc.getattr_args(_b(fh)))

    def lookup(self, dirfh, name):
        return self.call("LOOKUP", rpc.lookup_args(_b(dirfh), name))

    def access(self, fh, mask=ACCESS3_ALL):
        return self.call("ACCESS", rpc.access_args(_b(fh), mask))

    def readlink(self, fh):
        return self.call("READLINK", rpc.readlink_args(_b(fh)))

    def create(self, dirfh, name, mode=0o644):
        return self.call("CREATE", rpc.create_args(_b(dirfh), name, mode))

    def mkdir(self, dirfh, name, mode=0o755):
        return self.call("MKDIR", rpc.mkdir_args(_b(dirfh), name, mode))

    def symlink(self, dirfh, name, target):
        return self.call("SYMLINK", rpc.symlink_args(_b(dirfh), name, target))

    def mknod(self, dirfh, name, ftype, mode=0o644):
        return self.call("MKNOD", rpc.mknod_args(_b(dirfh), name, ftype, mode))

    def remove(self, dirfh, name):
        return self.call("REMOVE", rpc.remove_args(_b(dirfh), name))

    def rmdir(self, dirfh, name):
        return self.call("RMDIR", rpc.rmdir_args(_b(dirfh), name))

    def rename(self, fromdir, fromname, todir, toname):
        return self.call("RENAME", rpc.rename_args(_b(fromdir), fromname, _b(todir), toname))

    def link(self, fh, dirfh, name):
        return self.call("LINK", rpc.link_args(_b(fh), _b(dirfh), name))

    def read(self, fh, offset, count):
        return self.call("READ", rpc.read_args(_b(fh), offset, count))

    def write(self, fh, offset, data, stable=rpc.FILE_SYNC):
        return self.call("WRITE", rpc.write_args(_b(fh), offset, data, stable=stable))

    def commit(self, fh, offset=0, count=0):
        return self.call("COMMIT", rpc.commit_args(_b(fh), offset, count))

    def setattr(self, fh, mode=None, size=None, guard=None):
        """SETATTR of the mode and/or size; `guard` (seconds, nanoseconds):
        the sattrguard3 obj_ctime check."""
        return self.call("SETATTR", setattr_guarded_args(_b(fh), mode=mode, size=size,
                                                         guard=guard))

    def fsstat(self, fh):
        return self.call("FSSTAT", rpc.fh3(_b(fh)))

    def fsinfo(self, fh):
        return self.call("FSINFO", rpc.fh3(_b(fh)))

    def pathconf(self, fh):
        return self.call("PATHCONF", rpc.fh3(_b(fh)))

    def readdir_page(self, fh, cookie=0, verf=b"\0" * 8, plus=True, dircount=4096,
                     maxcount=32768):
        if plus:
            return self.call("READDIRPLUS", rpc.readdirplus_args(_b(fh), cookie, verf,
                                                                 dircount, maxcount))
        return self.call("READDIR", rpc.readdir_args(_b(fh), cookie, verf, maxcount))

    def listing(self, fh, plus=True, dircount=4096, maxcount=32768, max_pages=1000):
        """A whole READDIR(PLUS) pass from cookie 0, page by page: a dict
        with status (the first status not NFS3_OK, or NFS3_OK), names (in
        the order given), fhs (name -> handle hex, READDIRPLUS entries that
        carry one), fileids (name -> fileid), types (name -> type, entries
        with attributes), pages, and error (a broken pass: no progress)."""
        cookie, verf = 0, b"\0" * 8
        out = {"status": "NFS3_OK", "names": [], "fhs": {}, "fileids": {}, "types": {},
               "pages": 0, "error": ""}
        while out["pages"] < max_pages:
            r = self.readdir_page(fh, cookie, verf, plus, dircount, maxcount)
            out["pages"] += 1
            if r.get("nfs_status") != "NFS3_OK":
                out["status"] = r.get("nfs_status")
                return out
            n = int(r["entries"])
            for i in range(1, n + 1):
                k = "entry.%d." % i
                name = r[k + "name"]
                out["names"].append(name)
                out["fileids"][name] = r[k + "fileid"]
                cookie = r[k + "cookie"]
                if k + "fh" in r:
                    out["fhs"][name] = r[k + "fh"]
                if k + "type" in r:
                    out["types"][name] = r[k + "type"]
            verf = bytes.fromhex(r["cookieverf"])
            if r["eof"] == "true":
                return out
            if n == 0:
                out["error"] = "a page with no entries and no eof"
                return out
        out["error"] = "no eof after %d pages" % max_pages
        return out


def setattr_guarded_args(fh, mode=None, uid=None, gid=None, size=None, guard=None):
    """SETATTR3args: sattr3 of the fields given, and the guard: None (no
    check) or (seconds, nanoseconds) of the ctime the object must have."""
    p = rpc.Packer().opaque(_b(fh)).raw(rpc.sattr3(mode, uid, gid, size))
    p.boolean(guard is not None)
    if guard is not None:
        p.u32(guard[0]).u32(guard[1])
    return p.bytes()


def nfstime(s):
    """'SECONDS.NANOSECONDS' (as the decoders print an nfstime3) as a pair."""
    sec, nsec = s.split(".")
    return int(sec), int(nsec)


def sorted_names(names, dots=True):
    """The names sorted; without . and .. when dots is False."""
    return sorted(n for n in names if dots or n not in (".", ".."))


class Stats:
    """The counters of a running nfscached, through nfscachectl."""

    def __init__(self, nfscachectl, socket, timeout=10):
        self.argv = [nfscachectl, "-s", socket]
        self.timeout = timeout

    def snap(self):
        out = subprocess.run(self.argv + ["stats"], capture_output=True, text=True,
                             timeout=self.timeout)
        if out.returncode != 0:
            raise RuntimeError("nfscachectl stats: %s" % out.stderr.strip())
        vals = {}
        for line in out.stdout.splitlines():
            f = line.split()
            if len(f) >= 2 and f[1].lstrip("-").isdigit():
                vals[f[0]] = int(f[1])
        return vals


def delta(a, b, name):
    """How much counter `name` rose from snapshot a to b ("missing" when
    either snapshot lacks it)."""
    if name not in a or name not in b:
        return "missing %s" % name
    return b[name] - a[name]


def _clean(v):
    return str(v).replace(SEP, " ").replace("\n", "\\n").replace("\r", "\\r")


class Checks:
    """Assertions made in python, printed for the test shell (see above)."""

    def __init__(self, out=None):
        self.out = out or sys.stdout
        self.failed = 0

    def _emit(self, *fields):
        print(SEP.join(_clean(f) for f in fields), file=self.out, flush=True)

    def is_(self, got, want, desc):
        self._emit("CHECK", "is", desc, got, want)
        self.failed += str(got) != str(want)
        return str(got) == str(want)

    def num(self, got, op, want, desc):
        self._emit("CHECK", "num", desc, got, op, want)
        ops = {"-eq": lambda a, b: a == b, "-ne": lambda a, b: a != b,
               "-ge": lambda a, b: a >= b, "-gt": lambda a, b: a > b,
               "-le": lambda a, b: a <= b, "-lt": lambda a, b: a < b}
        good = isinstance(got, int) and got >= 0 and ops[op](got, want)
        self.failed += not good
        return good

    def ok(self, cond, desc):
        self._emit("CHECK", "ok", desc, 0 if cond else 1)
        self.failed += not cond
        return bool(cond)

    def diag(self, *lines):
        for line in lines:
            self._emit("DIAG", line)
