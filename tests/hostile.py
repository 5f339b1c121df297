#!/usr/bin/env python3
"""hostile.py - a bounded, seeded burst of hostile input against an NFSv3
server (nfscached), with valid calls checked between the bursts, for
tests/e2e/76-hostile.sh.

    hostile.py --port P --up-port U --up-mount-port M --ctl SOCK
               --nfscachectl BIN --export-dir DIR [--seed S]
               [--conns N] [--idle-conns N] [--idle-bytes B]
               [--max-record B] [--partial-max B] [--null-bound-ms MS]
               [--scale N] [--bursts KIND,...]

The export (DIR as /export) holds check.bin (the file the valid calls
write and read) and hz/ (what the hostile calls act on: files v0..v3, a
subdirectory d, a symlink l); hostile.py creates the rest.  The bursts, in
order, each followed by a check round:

  nul      names with an embedded NUL in every call that takes a filename3,
           MNT and UMNT paths, a SYMLINK target
  creds    bad credentials: unknown flavors, AUTH_SYS bodies over 400
           bytes, machine names over 255, more than 16 gids, trailing
           bytes, bad verifiers, AUTH_NONE on every kind of call
  huge     lengths of 2^31-1, 2^32-1 and just over the limit (names and
           MOUNT paths 1024, symlink data 8192, file handles 64, WRITE
           data wtmax, credentials and verifiers 400, machine names 255,
           gids 16) in every opaque, string and array field of the
           arguments and credential; WRITEs of 512 bytes whose count says
           up to 0xfffffff0: answered, no upstream connection lost, the
           daemon's peak RSS up by less than 32 MiB
  flip     1 to 4 bit flips in the header or arguments (never the record
           mark) of valid calls of every NFSv3 and MOUNTv3 procedure
  markflip 1 to 3 bit flips anywhere in such records, marks included
  trunc    the same calls cut short, each sent as a whole record
  readmax  READ with count 0x7fffffff, 0xffffffff and near them
  frags    fragments over server.max_record (one connection each), valid
           calls in 1-byte fragments and after 1000 empty fragments, a
           256 KiB WRITE in 4-byte fragments while another connection calls
           NULL
  split    valid calls written 1 to 7 bytes at a time
  midclose records cut off by a close or a reset, a 1 MiB WRITE among them
  conns    --conns connections at once, each with a valid GETATTR, a
           garbage record and a bad credential
  mounts   1024 MOUNT EXPORT calls pipelined on 8 connections, while
           another connection calls NULL and nfscachectl reads the counters
  idle     --idle-conns connections each leaving --idle-bytes of a record
           unfinished (their total over --partial-max): the daemon closes
           some (conn.partial_closed), keeps serving, and its RSS (--pid)
           rises by less than --idle-rss-max-mb

A check round, on connections of its own, through nfscached and straight to
the upstream: NULL answered within --null-bound-ms; a WRITE (FILE_SYNC) of
random bytes into check.bin then a READ of them (md5 of the bytes); LOOKUP
of check.bin and GETATTR of it answered as the upstream answers them.

--scale N multiplies the flip, markflip and trunc bursts (longer local
runs); --bursts runs only the kinds named.

The hostile calls use only the handles of hz/ and its entries, chosen to
differ from those of the export root and check.bin in more bits than a
flip changes, and names of their own.

Output: assertions as nsrpc.Checks lines (`checks FILE` in the test makes
them TAP), and the figures as `key: value` lines: seed, sent.KIND (records
or connections of each kind), replies.KIND.OUTCOME, rss_kb.* (VmRSS and
VmHWM of the daemon when --pid is given), counter deltas.

Only the Python standard library, rpc.py and nsrpc.py are used.
"""

import argparse
import hashlib
import os
import random
import select
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rpc      # noqa: E402
import nsrpc    # noqa: E402

HOST = "127.0.0.1"
NULL_XID_BASE = 0x7e000000     # the xid of the NULL that ends a pipelined burst


def figure(key, value):
    print("%s: %s" % (key, value), flush=True)


# ---- a pipelined burst on many connections ---------------------------------

class Pipe:
    """One connection of a burst: bytes to send, the replies read."""

    def __init__(self, port, data, end_xid=None, want=0):
        self.sock = rpc.connect(HOST, port, 10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self.out = memoryview(data)
        self.buf = b""
        self.replies = []       # rpc.Reply, or the string "unparsable"
        self.closed = False     # by the peer (EOF or reset)
        self.end_xid = end_xid  # the NULL that ends what this connection sends
        self.ended = False      # its reply came
        self.want = want        # replies to wait for besides the NULL's

    def done(self):
        return self.closed or (self.ended and len(self.replies) >= self.want)

    def on_readable(self):
        try:
            data = self.sock.recv(1 << 20)
        except (ConnectionResetError, BrokenPipeError):
            data = b""
        except BlockingIOError:
            return
        if not data:
            self.closed = True
            return
        self.buf += data
        while len(self.buf) >= 4:
            mark = struct.unpack_from(">I", self.buf)[0]
            n = mark & 0x7fffffff
            if len(self.buf) < 4 + n:
                break
            rec, self.buf = self.buf[4:4 + n], self.buf[4 + n:]
            try:
                rep = rpc.Reply(rec)
            except rpc.RpcError:
                self.replies.append("unparsable")
                continue
            if rep.xid == self.end_xid and rep.ok() and not rep.body:
                self.ended = True
            else:
                self.replies.append(rep)

    def on_writable(self):
        try:
            n = self.sock.send(self.out[:1 << 16])
        except (ConnectionResetError, BrokenPipeError):
            self.closed = True
            return
        except BlockingIOError:
            return
        self.out = self.out[n:]

    def close(self):
        self.sock.close()


def pump(pipes, quiet_s=1.5, limit_s=30.0, settle_s=0.0):
    """Send what each pipe holds while reading replies, until every pipe is
    done (its end NULL and `want` other replies answered, or closed), or
    nothing arrived for quiet_s seconds, or limit_s passed; then go on
    reading until nothing arrived for settle_s seconds (replies of calls
    sent upstream may come after the NULL's)."""
    t_end = time.monotonic() + limit_s
    last = time.monotonic()
    settling = False
    while True:
        live = [p for p in pipes if not p.done()]
        if not live and not settling:
            if settle_s <= 0:
                return
            settling, quiet_s = True, settle_s
            last = time.monotonic()
        if settling:
            live = [p for p in pipes if not p.closed]
        now = time.monotonic()
        if not live or now > t_end or now - last > quiet_s:
            return
        # poll, not select: a burst may hold more than FD_SETSIZE sockets
        po = select.poll()
        by = {}
        for p in live:
            by[p.sock.fileno()] = p
            po.register(p.sock, select.POLLIN | (select.POLLOUT if len(p.out) else 0))
        for fd, ev in po.poll(100):
            if ev & select.POLLOUT:
                by[fd].on_writable()
            if ev & (select.POLLIN | select.POLLHUP | select.POLLERR):
                by[fd].on_readable()
                last = time.monotonic()


def outcome(rep):
    """The kind of a reply: SUCCESS, GARBAGE_ARGS, AUTH_BADCRED, ..."""
    if isinstance(rep, str):
        return rep
    if rep.reply_stat == "MSG_ACCEPTED":
        return rep.accept_stat
    return rep.auth_stat or rep.reject_stat


def tally(pipes):
    t = {}
    for p in pipes:
        for rep in p.replies:
            k = outcome(rep)
            t[k] = t.get(k, 0) + 1
        if p.closed:
            t["closed"] = t.get("closed", 0) + 1
    return t


def print_tally(kind, t):
    for k in sorted(t):
        figure("replies.%s.%s" % (kind, k), t[k])


# ---- the test ---------------------------------------------------------------

class Hostile:
    def __init__(self, a):
        self.a = a
        self.rnd = random.Random(a.seed)
        self.chk = nsrpc.Checks()
        self.stats = nsrpc.Stats(a.nfscachectl, a.ctl)
        self.P = nsrpc.Client(a.port, timeout=20)               # through nfscached
        self.U = nsrpc.Client(a.up_port, a.up_mount_port, timeout=20)   # the upstream
        self.xid = self.rnd.randrange(1 << 24, 1 << 30)
        self.rounds = 0
        self.round_fail = {"null": [], "rw": [], "lookup": [], "getattr": []}
        self.null_ms = []
        self.rss = {}
        self.rconn = None

    def next_xid(self):
        self.xid += 1
        return self.xid

    # -- set-up --

    def handles(self):
        P = self.P
        self.root = bytes.fromhex(P.root())
        r = P.lookup(self.root, "check.bin")
        self.check = bytes.fromhex(r["fh"])
        with open(os.path.join(self.a.export_dir, "check.bin"), "rb") as f:
            self.model = bytearray(f.read())
        fi = P.call("FSINFO", rpc.fh3(self.check))
        self.rtmax, self.wtmax = int(fi["rtmax"]), int(fi["wtmax"])
        figure("rtmax", self.rtmax)
        protect = [self.root, self.check]
        # hz0..hz7: the one farthest from the protected handles is hz
        self.hz = self.farthest("hz", [self.root], protect)
        self.vs = [self.lookup(self.hz, "v%d" % i) for i in range(4)]
        far = sorted(self.vs, key=lambda fh: -min(bitdist(fh, p) for p in protect))
        self.v = far[0]
        self.d = self.lookup(self.hz, "d")
        self.link = self.lookup(self.hz, "l")
        dmin = min(bitdist(h, p) for h in (self.hz, self.v, self.d, self.link) for p in protect)
        self.chk.num(dmin, "-gt", 4, "the handles the hostile calls use differ from the "
                     "root's and check.bin's in more bits than a flip changes")
        figure("fh_min_bit_distance", dmin)

    def lookup(self, dirfh, name):
        r = self.P.lookup(dirfh, name)
        if r["nfs_status"] != "NFS3_OK":
            raise rpc.RpcError("LOOKUP %s: %s" % (name, r["nfs_status"]))
        return bytes.fromhex(r["fh"])

    def farthest(self, prefix, dirs, protect):
        best, best_d = None, -1
        for i in range(8):
            try:
                fh = self.lookup(dirs[0], "%s%d" % (prefix, i))
            except rpc.RpcError:
                continue
            dist = min(bitdist(fh, p) for p in protect)
            if dist > best_d:
                best, best_d, self.hz_name = fh, dist, "%s%d" % (prefix, i)
        return best

    # -- counters and memory --

    def snap(self):
        return self.stats.snap()

    def rss_now(self):
        """The daemon's VmRSS in KiB (None without --pid)."""
        if not self.a.pid:
            return None
        with open("/proc/%d/status" % self.a.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return None

    def hwm_now(self):
        """The daemon's VmHWM (peak RSS) in KiB (None without --pid)."""
        if not self.a.pid:
            return None
        with open("/proc/%d/status" % self.a.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return None

    def rss_sample(self, tag):
        if not self.a.pid:
            return
        try:
            with open("/proc/%d/status" % self.a.pid) as f:
                for line in f:
                    k, _, v = line.partition(":")
                    if k in ("VmRSS", "VmHWM"):
                        self.rss["%s.%s" % (k, tag)] = int(v.split()[0])
        except OSError:
            pass

    # -- a check round --

    def check_round(self, tag):
        self.rounds += 1
        P, U, chk = self.P, self.U, self.chk
        # NULL on a fresh connection, within the bound
        t0 = time.monotonic()
        try:
            c = rpc.Conn(HOST, self.a.port, timeout=self.a.null_bound_ms / 1000.0)
            ok = c.null().ok()
            c.close()
        except rpc.RpcError as e:
            ok = False
            self.round_fail["null"].append("%s: %s" % (tag, e))
        ms = (time.monotonic() - t0) * 1000
        self.null_ms.append(ms)
        if not ok or ms > self.a.null_bound_ms:
            self.round_fail["null"].append("%s: ok %s in %.0f ms" % (tag, ok, ms))
        # WRITE then READ of random bytes at a random place of check.bin
        n = self.rnd.choice((1, 511, 4096, 65536, 131072))
        off = self.rnd.randrange(0, len(self.model) - n + 1)
        data = self.rnd.randbytes(n)
        w = P.write(self.check, off, data, stable=rpc.FILE_SYNC)
        if w.get("nfs_status") == "NFS3_OK" and w.get("count") == str(n):
            self.model[off:off + n] = data
        r = self.read(self.check, off, n)
        got = r.get("data", b"")
        if (w.get("nfs_status"), w.get("count"), r.get("nfs_status"), md5(got)) != \
                ("NFS3_OK", str(n), "NFS3_OK", md5(data)):
            self.round_fail["rw"].append("%s: WRITE %d at %d: %s %s; READ %s, md5 %s want %s" % (
                tag, n, off, w.get("nfs_status"), w.get("count"), r.get("nfs_status"),
                md5(got), md5(data)))
        # LOOKUP and GETATTR: the upstream's answers
        lp, lu = P.lookup(self.root, "check.bin"), U.lookup(self.root, "check.bin")
        if (lp.get("nfs_status"), lp.get("fh")) != (lu.get("nfs_status"), lu.get("fh")) or \
                lp.get("fh") != self.check.hex():
            self.round_fail["lookup"].append("%s: %s %s, upstream %s %s" % (
                tag, lp.get("nfs_status"), lp.get("fh"), lu.get("nfs_status"), lu.get("fh")))
        gp, gu = P.getattr(self.check), U.getattr(self.check)
        if gp.get("body_masked") != gu.get("body_masked") or gp.get("nfs_status") != "NFS3_OK":
            self.round_fail["getattr"].append(
                "%s: %s size %s mtime %s, upstream %s size %s mtime %s" % (
                tag, gp.get("nfs_status"), gp.get("size"), gp.get("mtime"),
                gu.get("nfs_status"), gu.get("size"), gu.get("mtime")))

    def finish_rounds(self):
        chk = self.chk
        desc = {"null": "NULL answered within %d ms" % self.a.null_bound_ms,
                "rw": "WRITE then READ of check.bin: the bytes written (md5)",
                "lookup": "LOOKUP of check.bin: the upstream's handle",
                "getattr": "GETATTR of check.bin: the upstream's attributes (atime, ctime masked)"}
        for k in ("null", "rw", "lookup", "getattr"):
            chk.is_(len(self.round_fail[k]), 0,
                    "after each of %d bursts: %s" % (self.rounds, desc[k]))
            chk.diag(*self.round_fail[k][:5])
        figure("check_rounds", self.rounds)
        figure("null_ms_max", "%.0f" % max(self.null_ms))

    # -- helpers for building calls --

    def call(self, prog, proc, args=b"", xid=None, **hdr):
        """(xid, payload) of a call, AUTH_SYS uid 0 unless hdr says otherwise."""
        xid = self.next_xid() if xid is None else xid
        vers = rpc.NFS_V3 if prog == rpc.NFS_PROGRAM else rpc.MOUNT_V3
        return xid, rpc.call_header(xid, prog, vers, proc, **hdr) + args

    def valid_calls(self):
        """(name, prog, proc, args) of a valid call of every NFSv3 and
        MOUNTv3 procedure, on hz/ and its entries only."""
        r = self.rnd
        tok = "%06x" % r.randrange(1 << 24)
        hz, v, d, lnk = self.hz, self.v, self.d, self.link
        N, M = rpc.NFS_PROGRAM, rpc.MOUNT_PROGRAM
        return [
            ("NULL", N, 0, b""),
            ("GETATTR", N, 1, rpc.getattr_args(v)),
            ("SETATTR", N, 2, rpc.setattr_args(v, mode=0o644)),
            ("LOOKUP", N, 3, rpc.lookup_args(hz, "v1")),
            ("ACCESS", N, 4, rpc.access_args(v, 0x3f)),
            ("READLINK", N, 5, rpc.readlink_args(lnk)),
            ("READ", N, 6, rpc.read_args(v, 0, 4096)),
            ("WRITE", N, 7, rpc.write_args(v, 512, r.randbytes(512), stable=rpc.UNSTABLE)),
            ("CREATE", N, 8, rpc.create_args(hz, "c" + tok)),
            ("MKDIR", N, 9, rpc.mkdir_args(hz, "m" + tok)),
            ("SYMLINK", N, 10, rpc.symlink_args(hz, "s" + tok, "target-" + tok)),
            ("MKNOD", N, 11, rpc.mknod_args(hz, "n" + tok, rpc.NF3FIFO)),
            ("REMOVE", N, 12, rpc.remove_args(hz, "c" + tok)),
            ("RMDIR", N, 13, rpc.rmdir_args(hz, "m" + tok)),
            ("RENAME", N, 14, rpc.rename_args(hz, "s" + tok, d, "t" + tok)),
            ("LINK", N, 15, rpc.link_args(v, d, "k" + tok)),
            ("READDIR", N, 16, rpc.readdir_args(hz, count=4096)),
            ("READDIRPLUS", N, 17, rpc.readdirplus_args(hz, dircount=4096, maxcount=8192)),
            ("FSSTAT", N, 18, rpc.fh3(v)),
            ("FSINFO", N, 19, rpc.fh3(v)),
            ("PATHCONF", N, 20, rpc.fh3(v)),
            ("COMMIT", N, 21, rpc.commit_args(v)),
            ("MOUNT_NULL", M, 0, b""),
            ("MNT", M, 1, rpc.dirpath_args("/export")),
            ("DUMP", M, 2, b""),
            ("UMNT", M, 3, rpc.dirpath_args("/export")),
            ("UMNTALL", M, 4, b""),
            ("EXPORT", M, 5, b""),
        ]

    def end_null(self, i):
        xid = NULL_XID_BASE + i
        return xid, rpc.record(self.call(rpc.NFS_PROGRAM, 0, xid=xid)[1])

    def pipes(self, per_conn, want=None, **kw):
        """One Pipe per list of records, each list followed by a NULL;
        want(i): the replies to wait for on connection i besides the NULL's."""
        out = []
        for i, recs in enumerate(per_conn):
            xid, end = self.end_null(i)
            out.append(Pipe(self.a.port, b"".join(recs) + end, xid, want(i) if want else 0))
        pump(out, **kw)
        return out

    def close_all(self, pipes):
        for p in pipes:
            p.close()

    def expect_cases(self, kind, cases, conns=2):
        """cases: (desc, xid, payload or record, want) with want a set of
        outcomes; sent pipelined over `conns` connections; every reply must
        be one of its case's wants and every connection must answer its
        closing NULL.  Returns (pipes, replies by xid)."""
        per = [[] for _ in range(conns)]
        for i, (_, _, rec, _) in enumerate(cases):
            per[i % conns].append(rec)
        pipes = self.pipes(per, want=lambda i: len(per[i]))
        got = {}
        for p in pipes:
            for rep in p.replies:
                if not isinstance(rep, str):
                    got.setdefault(rep.xid, []).append(outcome(rep))
        wrong = []
        for desc, xid, _, want in cases:
            o = got.get(xid, ["none"])
            if len(o) != 1 or o[0] not in want:
                wrong.append("%s: %s, want %s" % (desc, "/".join(o), "|".join(sorted(want))))
        self.chk.is_(len(wrong), 0,
                     "%s: each of %d calls gets the reply it must" % (kind, len(cases)))
        self.chk.diag(*wrong[:8])
        self.chk.is_(sum(p.ended for p in pipes), conns,
                     "%s: each of its %d connections answers a NULL afterwards" % (kind, conns))
        figure("sent.%s" % kind, len(cases))
        print_tally(kind, tally(pipes))
        self.close_all(pipes)
        return got

    # -- the bursts --

    def burst_nul(self):
        hz, v, d = self.hz, self.v, self.d
        tok = "zq%04x" % self.rnd.randrange(1 << 16)
        N, M = rpc.NFS_PROGRAM, rpc.MOUNT_PROGRAM
        G, INVAL = {"GARBAGE_ARGS"}, {"SUCCESS:NFS3ERR_INVAL"}
        specs = [
            ("LOOKUP v0\\0JUNK", N, 3, rpc.lookup_args(hz, b"v0\0JUNK"), G),
            ("LOOKUP v0\\0", N, 3, rpc.lookup_args(hz, b"v0\0"), G),
            ("LOOKUP \\0", N, 3, rpc.lookup_args(hz, b"\0"), G),
            ("LOOKUP \\0\\0\\0\\0", N, 3, rpc.lookup_args(hz, b"\0\0\0\0"), G),
            ("CREATE", N, 8, rpc.create_args(hz, tok.encode() + b"c\0x"), G),
            ("MKDIR", N, 9, rpc.mkdir_args(hz, tok.encode() + b"m\0x"), G),
            ("SYMLINK name", N, 10, rpc.symlink_args(hz, tok.encode() + b"s\0x", "t"), G),
            ("MKNOD", N, 11, rpc.mknod_args(hz, tok.encode() + b"n\0x", rpc.NF3FIFO), G),
            ("REMOVE v1\\0x", N, 12, rpc.remove_args(hz, b"v1\0x"), G),
            ("RMDIR d\\0x", N, 13, rpc.rmdir_args(hz, b"d\0x"), G),
            ("RENAME from v2\\0x", N, 14, rpc.rename_args(hz, b"v2\0x", hz, tok + "r"), G),
            ("RENAME to", N, 14, rpc.rename_args(hz, b"v2", hz, tok.encode() + b"r\0x"), G),
            ("LINK", N, 15, rpc.link_args(v, hz, tok.encode() + b"k\0x"), G),
            ("MNT /export\\0junk", M, 1, rpc.Packer().opaque(b"/export\0junk").bytes(), G),
            ("UMNT /export\\0junk", M, 3, rpc.Packer().opaque(b"/export\0junk").bytes(), G),
            ("SYMLINK target a\\0b", N, 10, rpc.symlink_args(hz, tok + "t", b"a\0b"), INVAL),
        ]
        cases = []
        for desc, prog, proc, args, want in specs:
            xid, payload = self.call(prog, proc, args)
            cases.append((desc, xid, rpc.record(payload), want))
        s0 = self.snap()
        # the NFS status of a SYMLINK answered SUCCESS counts as its outcome
        got = self.expect_cases_nul(cases)
        s1 = self.snap()
        names = ("LOOKUP", "CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME",
                 "LINK", "MNT", "UMNT")
        sent_up = {n: nsrpc.delta(s0, s1, "upstream.calls." + n) for n in names}
        self.chk.is_(" ".join("%s=%s" % kv for kv in sorted(sent_up.items()) if kv[1] != 0), "",
                     "nul: nothing with a NUL in a name or path went upstream (upstream.calls.*)")
        want_g = sum(1 for c in cases if c[3] == G)
        self.chk.is_(nsrpc.delta(s0, s1, "rpc.garbage_args"), want_g,
                     "nul: rpc.garbage_args rose by the %d calls refused" % want_g)
        hzdir = os.path.join(self.a.export_dir, self.hz_name)
        left = [os.path.relpath(os.path.join(dp, n), hzdir) for dp, dirs, files in os.walk(hzdir)
                for n in dirs + files if n.startswith(tok)]
        self.chk.is_(" ".join(left), "", "nul: no name made of the part before the NUL exists")
        self.chk.is_(" ".join(n for n in ("v1", "v2", "d") if not os.path.lexists(
            os.path.join(hzdir, n))), "", "nul: v1, v2 and d (named before a NUL) still exist")
        return got

    def expect_cases_nul(self, cases):
        """expect_cases, with the NFS status of a SUCCESS reply appended."""
        per = [[c[2] for c in cases]]
        pipes = self.pipes(per, want=lambda i: len(per[i]))
        got, wrong = {}, []
        for rep in pipes[0].replies:
            if isinstance(rep, str):
                continue
            o = outcome(rep)
            if o == "SUCCESS" and rep.body:
                o += ":" + rpc.nfs_status(rep.body)
            got.setdefault(rep.xid, []).append(o)
        for desc, xid, _, want in cases:
            o = got.get(xid, ["none"])
            if len(o) != 1 or o[0] not in want:
                wrong.append("%s: %s, want %s" % (desc, "/".join(o), "|".join(sorted(want))))
        self.chk.is_(len(wrong), 0, "nul: each of %d calls with a NUL gets the reply it must"
                     % len(cases))
        self.chk.diag(*wrong[:16])
        self.chk.is_(int(pipes[0].ended), 1, "nul: the connection answers a NULL afterwards")
        figure("sent.nul", len(cases))
        print_tally("nul", tally(pipes))
        self.close_all(pipes)
        return got

    def burst_creds(self):
        N, M = rpc.NFS_PROGRAM, rpc.MOUNT_PROGRAM
        ga = rpc.getattr_args(self.v)
        sysb = rpc.auth_sys_body
        BAD, VERF = {"AUTH_BADCRED"}, {"AUTH_BADVERF"}
        OK, WEAK = {"SUCCESS"}, {"AUTH_TOOWEAK"}
        A_SYS, A_NONE = rpc.AUTH_SYS, rpc.AUTH_NONE
        over = sysb(0, 0, [], "m" * 255) + b"\0" * 16     # 400 < length
        none = dict(cred_flavor=A_NONE)
        specs = [
            ("flavor AUTH_DH", N, 1, ga, dict(cred_flavor=3, cred_body=b"\x11" * 32), BAD),
            ("flavor RPCSEC_GSS", N, 1, ga, dict(cred_flavor=6, cred_body=b"\x22" * 24), BAD),
            ("flavor AUTH_SHORT", N, 1, ga, dict(cred_flavor=2, cred_body=b"\x33" * 8), BAD),
            ("flavor 0xffffffff", N, 1, ga, dict(cred_flavor=0xffffffff, cred_body=b""), BAD),
            ("AUTH_SYS body %d bytes" % len(over), N, 1, ga,
             dict(cred_flavor=A_SYS, cred_body=over), BAD),
            ("AUTH_SYS body 4000 bytes", N, 1, ga,
             dict(cred_flavor=A_SYS, cred_body=sysb() + b"\0" * 3960), BAD),
            ("AUTH_SYS machinename 256 bytes", N, 1, ga,
             dict(cred_flavor=A_SYS, cred_body=sysb(0, 0, [], "m" * 256)), BAD),
            ("AUTH_SYS machinename with a NUL", N, 1, ga,
             dict(cred_flavor=A_SYS, cred_body=sysb(0, 0, [], b"host\0junk")), BAD),
            ("AUTH_SYS 17 gids", N, 1, ga,
             dict(cred_flavor=A_SYS, cred_body=sysb(0, 0, list(range(17)))), BAD),
            ("AUTH_SYS 90 gids", N, 1, ga,
             dict(cred_flavor=A_SYS, cred_body=sysb(0, 0, list(range(90)))), BAD),
            ("AUTH_SYS 16 gids (the limit)", N, 1, ga,
             dict(cred_flavor=A_SYS, cred_body=sysb(0, 0, list(range(16)))), OK),
            ("AUTH_SYS 4 trailing bytes", N, 1, ga,
             dict(cred_flavor=A_SYS, cred_body=sysb() + b"\0" * 4), BAD),
            ("AUTH_SYS cut in the gids", N, 1, ga,
             dict(cred_flavor=A_SYS, cred_body=sysb(0, 0, [1, 2, 3])[:-4]), BAD),
            ("AUTH_SYS empty", N, 1, ga, dict(cred_flavor=A_SYS, cred_body=b""), BAD),
            ("verifier AUTH_SYS", N, 1, ga, dict(verf_flavor=A_SYS, verf_body=sysb()), VERF),
            ("verifier 401 bytes", N, 1, ga, dict(verf_body=b"\0" * 404), VERF),
            ("AUTH_NONE NULL", N, 0, b"", dict(cred_flavor=A_NONE), OK),
            ("AUTH_NONE GETATTR", N, 1, ga, dict(cred_flavor=A_NONE), WEAK),
            ("AUTH_NONE LOOKUP", N, 3, rpc.lookup_args(self.hz, "v0"), none, WEAK),
            ("AUTH_NONE READ", N, 6, rpc.read_args(self.v, 0, 4096), none, WEAK),
            ("AUTH_NONE WRITE", N, 7, rpc.write_args(self.v, 0, b"n" * 64), none, WEAK),
            ("AUTH_NONE FSINFO", N, 19, rpc.fh3(self.v), dict(cred_flavor=A_NONE), WEAK),
            ("AUTH_NONE MOUNT NULL", M, 0, b"", dict(cred_flavor=A_NONE), OK),
            ("AUTH_NONE EXPORT", M, 5, b"", dict(cred_flavor=A_NONE), OK),
            ("AUTH_NONE DUMP", M, 2, b"", dict(cred_flavor=A_NONE), OK),
            ("AUTH_NONE MNT", M, 1, rpc.dirpath_args("/export"), dict(cred_flavor=A_NONE), WEAK),
            ("AUTH_NONE UMNT", M, 3, rpc.dirpath_args("/export"), dict(cred_flavor=A_NONE), WEAK),
        ]
        cases = []
        for desc, prog, proc, args, hdr, want in specs:
            xid, payload = self.call(prog, proc, args, **hdr)
            cases.append((desc, xid, rpc.record(payload), want))
        s0 = self.snap()
        got = self.expect_cases("creds", cases)
        s1 = self.snap()
        denied = sum(1 for o in got.values() for k in o if k.startswith("AUTH_"))
        self.chk.is_(nsrpc.delta(s0, s1, "rpc.rejected"), denied,
                     "creds: rpc.rejected rose by the %d calls refused" % denied)

    def burst_huge(self):
        N, M = rpc.NFS_PROGRAM, rpc.MOUNT_PROGRAM
        hz, v = self.hz, self.v
        Pk = rpc.Packer
        G, BAD, VERF = {"GARBAGE_ARGS"}, {"AUTH_BADCRED"}, {"AUTH_BADVERF"}
        tail = b"\0" * 64
        specs = []
        for n in (0x7fffffff, 0xffffffff, 0xfffffffc, 65):
            specs += [
                ("GETATTR fh length %#x" % n, N, 1, Pk().opaque(v, n).bytes() + tail, {}, G),
                ("LOOKUP dir fh length %#x" % n, N, 3,
                 Pk().opaque(hz, n).opaque(b"v0").bytes(), {}, G),
                ("LINK fh length %#x" % n, N, 15,
                 Pk().opaque(v, n).raw(rpc.diropargs3(hz, "x")).bytes(), {}, G),
            ]
        for n in (0x7fffffff, 0xffffffff, 0xfffffffc, 1025):
            nm = b"n" * min(n, 1025)
            specs += [
                ("LOOKUP name length %#x" % n, N, 3, Pk().opaque(hz).opaque(nm, n).bytes(), {}, G),
                ("CREATE name length %#x" % n, N, 8,
                 Pk().opaque(hz).opaque(nm, n).u32(0).raw(rpc.sattr3(0o644)).bytes(), {}, G),
                ("RENAME to-name length %#x" % n, N, 14,
                 rpc.diropargs3(hz, "v3") + Pk().opaque(hz).opaque(nm, n).bytes(), {}, G),
                ("MNT path length %#x" % n, M, 1, Pk().opaque(b"/" * len(nm), n).bytes(), {}, G),
                ("UMNT path length %#x" % n, M, 3, Pk().opaque(b"/" * len(nm), n).bytes(), {}, G),
            ]
        # symlink data: up to 8192 bytes pass (servers take 4096; longer
        # ones are theirs to refuse)
        for n in (0x7fffffff, 0xffffffff, 0xfffffffc, 8193):
            specs.append(("SYMLINK target length %#x" % n, N, 10,
                          rpc.diropargs3(hz, "zz") + rpc.sattr3() +
                          Pk().opaque(b"t" * min(n, 8193), n).bytes(), {}, G))
        for n in (0x7fffffff, 0xffffffff, self.wtmax + 4):
            specs += [
                ("WRITE data length %#x" % n, N, 7,
                 rpc.write_args(v, 0, b"w" * 100, count=n, declared=n), {}, G),
            ]
        for n in (0x7fffffff, 0xffffffff, 401):
            specs += [
                ("credential length %#x" % n, N, 1, b"",
                 dict(cred_flavor=rpc.AUTH_SYS, cred_body=Pk().u32(0).bytes() + b"\0" * 40, ), BAD),
                ("machinename length %#x" % n, N, 1, rpc.getattr_args(v),
                 dict(cred_body=Pk().u32(0).opaque(b"m" * 16, n).u32(0).u32(0).u32(0).bytes()),
                 BAD),
                ("gids count %#x" % n, N, 1, rpc.getattr_args(v),
                 dict(cred_body=Pk().u32(0).opaque(b"m").u32(0).u32(0).u32(n).bytes()), BAD),
                ("verifier length %#x" % n, N, 1, b"", dict(verf_body=b""), VERF),
            ]
        cases = []
        for desc, prog, proc, args, hdr, want in specs:
            xid, payload = self.call(prog, proc, args, **hdr)
            if desc.startswith("credential length"):
                # the credential's own length word lies
                n = int(desc.split()[-1], 16)
                payload = payload[:28] + struct.pack(">I", n) + payload[32:]
            if desc.startswith("verifier length"):
                n = int(desc.split()[-1], 16)
                vpos = len(payload) - 4      # empty verifier body: its length is last
                payload = payload[:vpos] + struct.pack(">I", n) + b"\0" * 8
            cases.append((desc, xid, rpc.record(payload), want))
        s0 = self.snap()
        got = self.expect_cases("huge", cases)
        s1 = self.snap()
        garbage = sum(1 for o in got.values() for k in o if k == "GARBAGE_ARGS")
        self.chk.is_(nsrpc.delta(s0, s1, "rpc.garbage_args"), garbage,
                     "huge: rpc.garbage_args rose by the %d GARBAGE_ARGS replies" % garbage)
        self.write_counts()

    def write_counts(self):
        """WRITEs of 512 bytes whose count says far more: answered (the
        upstream's judgement or GARBAGE_ARGS), and nothing the size of the
        count is allocated for them (the daemon's peak RSS, --pid)."""
        hwm0 = self.hwm_now()
        s0 = self.snap()
        c = rpc.Conn(HOST, self.a.port, timeout=30)
        wrong = []
        for count in (0xfffffff0, 0x80000000, 0x7fffffff, self.wtmax + 1):
            for stable in (rpc.UNSTABLE, rpc.FILE_SYNC):
                try:
                    rep = c.call(rpc.NFS_PROGRAM, rpc.NFS_V3, rpc.NFSPROC3_WRITE,
                                 rpc.write_args(self.v, 0, b"c" * 512, stable=stable, count=count))
                    if not rep.ok() and rep.summary() != "accepted GARBAGE_ARGS":
                        wrong.append("count %#x: %s" % (count, rep.summary()))
                except rpc.RpcError as e:
                    wrong.append("count %#x: %s" % (count, e))
        c.close()
        hwm1 = self.hwm_now()
        s1 = self.snap()
        self.chk.is_(nsrpc.delta(s0, s1, "upstream.reconnects"), 0,
                     "huge: no upstream connection is lost over them (upstream.reconnects)")
        self.chk.is_(len(wrong), 0, "huge: WRITEs of 512 bytes with count 0xfffffff0, 0x80000000, "
                     "0x7fffffff and wtmax+1 are answered")
        self.chk.diag(*wrong)
        if hwm0 is not None and hwm1 is not None:
            self.chk.num((hwm1 - hwm0) // 1024, "-lt", 32,
                         "huge: the daemon's peak RSS rose by less than 32 MiB for them "
                         "(%d -> %d KiB)" % (hwm0, hwm1))
            figure("huge.write_count_hwm_kb", "%d -> %d" % (hwm0, hwm1))

    def burst_flip(self, variants=40, conns=4):
        variants *= self.a.scale
        recs = []
        flips = 0
        for _ in range(variants):
            for name, prog, proc, args in self.valid_calls():
                _, payload = self.call(prog, proc, args)
                b = bytearray(payload)
                for _ in range(self.rnd.randint(1, 4)):
                    i = self.rnd.randrange(len(b))
                    b[i] ^= 1 << self.rnd.randrange(8)
                    flips += 1
                recs.append(rpc.record(bytes(b)))
        self.rnd.shuffle(recs)
        per = [recs[i::conns] for i in range(conns)]
        s0 = self.snap()
        pipes = self.pipes(per, quiet_s=2.0, settle_s=0.5)
        s1 = self.snap()
        t = tally(pipes)
        self.chk.is_(sum(p.ended for p in pipes), conns,
                     "flip: each of its %d connections answers a NULL after its flipped calls"
                     % conns)
        self.chk.is_(t.get("unparsable", 0), 0, "flip: every reply is a well-formed RPC reply")
        g = t.get("GARBAGE_ARGS", 0)
        self.chk.num(nsrpc.delta(s0, s1, "rpc.garbage_args"), "-ge", g,
                     "flip: rpc.garbage_args rose by at least the %d GARBAGE_ARGS replies" % g)
        figure("sent.flip", len(recs))
        figure("flip.bits", flips)
        print_tally("flip", t)
        self.close_all(pipes)

    def burst_markflip(self, conns=16, per_conn=12):
        """Flips anywhere in the stream, record marks included: a connection
        may lose its framing (and be closed for an oversized record, or wait
        for bytes that never come); the others and the daemon carry on."""
        calls = self.valid_calls()
        per = []
        n = 0
        conns *= self.a.scale
        for _ in range(conns):
            recs = []
            for _ in range(per_conn):
                _, prog, proc, args = self.rnd.choice(calls)
                b = bytearray(rpc.record(self.call(prog, proc, args)[1]))
                for _ in range(self.rnd.randint(1, 3)):
                    i = self.rnd.randrange(len(b))
                    b[i] ^= 1 << self.rnd.randrange(8)
                recs.append(bytes(b))
                n += 1
            per.append(recs)
        s0 = self.snap()
        pipes = self.pipes(per, quiet_s=1.0, settle_s=0.3)
        s1 = self.snap()
        t = tally(pipes)
        self.chk.is_(t.get("unparsable", 0), 0, "markflip: every reply is a well-formed RPC reply")
        self.chk.num(nsrpc.delta(s0, s1, "rpc.oversized"), "-le", conns,
                     "markflip: rpc.oversized rose by at most one per connection")
        figure("sent.markflip", n)
        figure("markflip.conns_answering_null", sum(p.ended for p in pipes))
        figure("markflip.conns_closed", sum(p.closed for p in pipes))
        print_tally("markflip", t)
        self.close_all(pipes)

    def burst_trunc(self, variants=10, conns=2):
        variants *= self.a.scale
        cases_g, others = [], []
        recs = []
        for _ in range(variants):
            for name, prog, proc, args in self.valid_calls():
                xid, payload = self.call(prog, proc, args)
                hlen = len(payload) - len(args)
                k = self.rnd.randrange(0, len(payload))
                if args and k < hlen and self.rnd.random() < 0.5:
                    k = self.rnd.randrange(hlen, len(payload))
                rec = rpc.record(payload[:k])
                recs.append(rec)
                if args and hlen <= k <= len(payload) - 4:
                    cases_g.append(("%s cut at %d of %d" % (name, k, len(payload)), xid))
                elif k >= hlen:
                    pass     # a cut in the last XDR unit: maybe only its padding
                else:
                    others.append(("%s cut at %d of %d (header %d)"
                                   % (name, k, len(payload), hlen), xid))
        per = [recs[i::conns] for i in range(conns)]
        s0 = self.snap()
        pipes = self.pipes(per)
        s1 = self.snap()
        got = {}
        for p in pipes:
            for rep in p.replies:
                if not isinstance(rep, str):
                    got.setdefault(rep.xid, []).append(outcome(rep))
        wrong = ["%s: %s" % (d, "/".join(got.get(x, ["none"]))) for d, x in cases_g
                 if got.get(x) != ["GARBAGE_ARGS"]]
        self.chk.is_(len(wrong), 0, "trunc: each of %d calls cut inside its arguments: GARBAGE_ARGS"
                     % len(cases_g))
        self.chk.diag(*wrong[:8])
        wrong = ["%s: %s" % (d, "/".join(got.get(x, []))) for d, x in others
                 if [o for o in got.get(x, []) if o not in (
                     "GARBAGE_ARGS", "AUTH_BADCRED", "AUTH_BADVERF")]]
        self.chk.is_(len(wrong), 0, "trunc: each of %d calls cut in the header: no reply, "
                     "GARBAGE_ARGS or a credential error" % len(others))
        self.chk.diag(*wrong[:8])
        self.chk.is_(sum(p.ended for p in pipes), conns,
                     "trunc: each of its %d connections answers a NULL afterwards" % conns)
        t = tally(pipes)
        self.chk.is_(nsrpc.delta(s0, s1, "rpc.garbage_args"), t.get("GARBAGE_ARGS", 0),
                     "trunc: rpc.garbage_args rose by the %d GARBAGE_ARGS replies"
                     % t.get("GARBAGE_ARGS", 0))
        figure("sent.trunc", len(recs))
        print_tally("trunc", t)
        self.close_all(pipes)

    def burst_readmax(self):
        counts = (0x7fffffff, 0xffffffff, 0xfffffe00, 0xfffffdff, 0x80000000)
        offs = (0, len(self.model) - 100)
        cases = []
        for count in counts:
            for off in offs:
                xid, payload = self.call(rpc.NFS_PROGRAM, rpc.NFSPROC3_READ,
                                         rpc.read_args(self.check, off, count))
                cases.append((count, off, xid, rpc.record(payload)))
        c = rpc.Conn(HOST, self.a.port, timeout=30)
        c.send_raw(b"".join(x[3] for x in cases))
        # another connection is answered meanwhile
        time.sleep(0.1)
        t0 = time.monotonic()
        try:
            b = rpc.Conn(HOST, self.a.port, timeout=self.a.null_bound_ms / 1000.0)
            other = b.null().ok()
            b.close()
        except rpc.RpcError:
            other = False
        other_ms = (time.monotonic() - t0) * 1000
        wrong = []
        by = {}
        try:
            for _ in cases:
                rep = c.recv_reply(timeout=30)
                by[rep.xid] = rep
        except rpc.RpcError as e:
            wrong.append("receiving: %s" % e)
        c.close()
        for count, off, xid, _ in cases:
            rep = by.get(xid)
            if rep is None:
                wrong.append("READ %#x at %d: no reply" % (count, off))
                continue
            if not rep.ok():
                wrong.append("READ %#x at %d: %s" % (count, off, rep.summary()))
                continue
            r = read_res(rep.body)
            data = r.get("data", b"")
            # a short read is legal: at least one byte, at most rtmax, the file's
            want = bytes(self.model[off:off + min(len(data), self.rtmax)])
            if r["nfs_status"] != "NFS3_OK" or not data or len(data) > self.rtmax or \
                    r.get("count") != str(len(data)) or md5(data) != md5(want) or \
                    r["eof"] != ("true" if off + len(data) >= len(self.model) else "false"):
                wrong.append("READ %#x at %d: %s count %s eof %s, %d bytes md5 %s, "
                             "want %d bytes md5 %s"
                             % (count, off, r["nfs_status"], r.get("count"), r.get("eof"),
                                len(data), md5(data), len(want), md5(want)))
        self.chk.is_(len(wrong), 0, "readmax: each READ of count 0x7fffffff..0xffffffff: NFS3_OK "
                     "with 1 to rtmax (%d) bytes, the file's, and the right eof" % self.rtmax)
        figure("readmax.bytes", " ".join(
            str(len(read_res(by[x].body).get("data", b"")))
            for _, _, x, _ in cases if x in by and by[x].ok()))
        self.chk.diag(*wrong[:8])
        self.chk.ok(other and other_ms <= self.a.null_bound_ms,
                    "readmax: another connection's NULL is answered meanwhile (%.0f ms)" % other_ms)
        figure("sent.readmax", len(cases))
        figure("readmax.other_null_ms", "%.0f" % other_ms)

    def burst_frags(self):
        mr = self.a.max_record
        giant = [
            ("last fragment of 2^31-1 bytes", struct.pack(">I", 0xffffffff) + b"\0" * 1000),
            ("non-last fragment of 2^31-1 bytes", struct.pack(">I", 0x7fffffff) + b"\0" * 1000),
            ("last fragment of max_record+1 bytes", struct.pack(">I", 0x80000000 | (mr + 1)) +
             b"\0" * 65536),
            ("fragments of max_record/2 and max_record/2+1 bytes",
             struct.pack(">I", mr // 2) + b"\0" * (mr // 2) +
             struct.pack(">I", 0x80000000 | (mr // 2 + 1)) + b"\0" * 4096),
            ("4097 fragments of 272 bytes", (struct.pack(">I", 272) + b"\0" * 272) * 4097),
        ]
        s0 = self.snap()
        socks = []
        for _, data in giant:
            s = rpc.connect(HOST, self.a.port, 10)
            socks.append(s)
            try:
                s.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                pass
        closed = []
        t_end = time.monotonic() + 10
        for (desc, _), s in zip(giant, socks):
            ok = False
            while time.monotonic() < t_end:
                if not readable(s, max(0, t_end - time.monotonic())):
                    break
                try:
                    if not s.recv(65536):
                        ok = True
                        break
                except ConnectionResetError:
                    ok = True
                    break
            closed.append(ok)
            if not ok:
                self.chk.diag("frags: %s: the connection stayed open" % desc)
            s.close()
        s1 = self.snap()
        figure("frags.giant_ms", "%.0f" % ((time.monotonic() - t_end + 10) * 1000))
        self.chk.is_(sum(closed), len(giant),
                     "frags: each of %d connections sending a record over server.max_record "
                     "is closed"
                     % len(giant))
        self.chk.is_(nsrpc.delta(s0, s1, "rpc.oversized"), len(giant),
                     "frags: rpc.oversized rose by %d" % len(giant))
        # valid calls in 1-byte fragments, and after 1000 empty fragments
        good = []
        ref = self.P.getattr(self.check)
        for how in ("1-byte fragments", "1000 empty fragments first"):
            for name, args in (("GETATTR", rpc.getattr_args(self.check)),
                               ("READ", rpc.read_args(self.check, 4096, 3000))):
                proc = rpc.PROCS[name][1]
                xid, payload = self.call(rpc.NFS_PROGRAM, proc, args)
                if how.startswith("1-byte"):
                    rec = fragments(payload, 1)
                else:
                    rec = struct.pack(">I", 0) * 1000 + rpc.record(payload)
                good.append(("%s in %s" % (name, how), name, xid, rec))
        c = rpc.Conn(HOST, self.a.port, timeout=20)
        c.send_raw(b"".join(g[3] for g in good))
        by, wrong = {}, []
        try:
            for _ in good:
                rep = c.recv_reply(timeout=20)
                by[rep.xid] = rep
        except rpc.RpcError as e:
            wrong.append("receiving: %s" % e)
        c.close()
        for desc, name, xid, _ in good:
            rep = by.get(xid)
            if rep is None or not rep.ok():
                wrong.append("%s: %s" % (desc, rep.summary() if rep else "no reply"))
                continue
            if name == "GETATTR" and rpc.decode_result(
                    rpc.PROCS[name][4], rep.body)["body_masked"] != ref["body_masked"]:
                wrong.append("%s: attributes differ" % desc)
            r = read_res(rep.body) if name == "READ" else {}
            if name == "READ" and r.get("data") != bytes(self.model[4096:7096]):
                wrong.append("%s: %s, data differ" % (desc, r["nfs_status"]))
        self.chk.is_(len(wrong), 0, "frags: GETATTR and READ in 1-byte fragments and after 1000 "
                     "empty fragments: the right reply and bytes")
        self.chk.diag(*wrong)
        self.small_fragments()
        figure("sent.frags", len(giant) + len(good) + 1)

    def small_fragments(self, size=256 << 10, frag=4):
        """A WRITE of `size` bytes in `frag`-byte fragments (twice its size
        on the wire): answered, and another connection is served while its
        fragments arrive (the record is put together in linear time)."""
        _, payload = self.call(rpc.NFS_PROGRAM, rpc.NFSPROC3_WRITE,
                               rpc.write_args(self.v, 0, self.rnd.randbytes(size),
                                              stable=rpc.UNSTABLE))
        xid = struct.unpack_from(">I", payload)[0]
        stream = fragments(payload, frag)
        c = rpc.Conn(HOST, self.a.port, timeout=120)
        t0 = time.monotonic()
        sender = threading.Thread(target=c.send_raw, args=(stream,), daemon=True)
        sender.start()
        time.sleep(0.05)
        t1 = time.monotonic()
        try:
            b = rpc.Conn(HOST, self.a.port, timeout=60)
            other = b.null().ok()
            b.close()
        except rpc.RpcError:
            other = False
        other_ms = (time.monotonic() - t1) * 1000
        try:
            rep = c.recv_reply(xid, timeout=120)
            r = rpc.decode_write(rep.body) if rep.ok() else {"nfs_status": rep.summary()}
        except rpc.RpcError as e:
            r = {"nfs_status": str(e)}
        write_ms = (time.monotonic() - t0) * 1000
        sender.join(5)
        c.close()
        self.chk.is_("%s %s" % (r.get("nfs_status"), r.get("count")), "NFS3_OK %d" % size,
                     "frags: a %d KiB WRITE in %d-byte fragments (%d bytes on the wire) is "
                     "answered (%.0f ms)" % (size >> 10, frag, len(stream), write_ms))
        self.chk.ok(other and other_ms <= self.a.null_bound_ms,
                    "frags: another connection's NULL is answered while those fragments arrive "
                    "(%.0f ms)" % other_ms)
        figure("frags.small_write_ms", "%.0f" % write_ms)
        figure("frags.small_other_null_ms", "%.0f" % other_ms)

    def burst_split(self, calls=6):
        c = rpc.Conn(HOST, self.a.port, timeout=20)
        pieces = 0
        sent = []
        for i in range(calls):
            off = self.rnd.randrange(0, len(self.model) - 8192)
            xid, payload = self.call(rpc.NFS_PROGRAM, rpc.NFSPROC3_READ,
                                     rpc.read_args(self.check, off, 8192))
            rec = rpc.record(payload, fragments=1 + i % 3)
            pos = 0
            while pos < len(rec):
                n = self.rnd.randint(1, 7)
                c.send_raw(rec[pos:pos + n])
                pos += n
                pieces += 1
                if pieces % 16 == 0:
                    time.sleep(0.001)
            sent.append((xid, off))
        wrong = []
        for xid, off in sent:
            try:
                rep = c.recv_reply(xid=None, timeout=20)
            except rpc.RpcError as e:
                wrong.append("READ at %d: %s" % (off, e))
                break
            want = [o for x, o in sent if x == rep.xid]
            r = read_res(rep.body) if rep.ok() else {}
            if not want or r.get("data") != bytes(self.model[want[0]:want[0] + 8192]):
                wrong.append("READ xid %#x: %s %s" % (rep.xid, rep.summary(), r.get("nfs_status")))
        c.close()
        self.chk.is_(len(wrong), 0, "split: %d READs written 1 to 7 bytes at a time (%d writes): "
                     "the file's bytes" % (calls, pieces))
        self.chk.diag(*wrong)
        figure("sent.split", calls)
        figure("split.writes", pieces)

    def burst_midclose(self, n=40):
        calls = self.valid_calls()
        sent = 0
        for i in range(n):
            name, prog, proc, args = calls[i % len(calls)]
            _, payload = self.call(prog, proc, args)
            rec = rpc.record(payload)
            k = self.rnd.randrange(1, len(rec))
            s = rpc.connect(HOST, self.a.port, 10)
            s.sendall(rec[:k])
            if i % 2:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
            sent += 1
        # a 1 MiB WRITE of check.bin cut off: nothing of it may land
        for frac in (0.3, 0.999):
            data = self.rnd.randbytes(1 << 20)
            _, payload = self.call(rpc.NFS_PROGRAM, rpc.NFSPROC3_WRITE,
                                   rpc.write_args(self.check, 0, data, stable=rpc.FILE_SYNC))
            rec = rpc.record(payload, fragments=4)
            s = rpc.connect(HOST, self.a.port, 10)
            s.sendall(rec[:int(len(rec) * frac)])
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
            sent += 1
        time.sleep(0.2)
        r = self.read_all(self.check)
        self.chk.is_(md5(r), md5(self.model), "midclose: check.bin is unchanged by the WRITEs "
                     "cut off (its bytes read whole)")
        figure("sent.midclose", sent)

    def read(self, fh, offset, count):
        """READ through nfscached on the checks' connection: read_res()."""
        if self.rconn is None:
            self.rconn = rpc.Conn(HOST, self.a.port, timeout=20)
        rep, _ = self.rconn.nfs(rpc.NFSPROC3_READ, rpc.read_args(fh, offset, count))
        return read_res(rep.body) if rep.ok() else {"nfs_status": rep.summary()}

    def read_all(self, fh):
        out = bytearray()
        while True:
            r = self.read(fh, len(out), 1 << 20)
            if r["nfs_status"] != "NFS3_OK":
                raise rpc.RpcError("READ at %d: %s" % (len(out), r["nfs_status"]))
            out += r["data"]
            if r["eof"] == "true" or not r["data"]:
                return bytes(out)

    def burst_conns(self):
        n = self.a.conns
        s0 = self.snap()
        per, wants = [], []
        for i in range(n):
            xid, payload = self.call(rpc.NFS_PROGRAM, rpc.NFSPROC3_GETATTR,
                                     rpc.getattr_args(self.check))
            junk = rpc.record(self.rnd.randbytes(self.rnd.randint(1, 96)))
            _, bad = self.call(rpc.NFS_PROGRAM, rpc.NFSPROC3_GETATTR, rpc.getattr_args(self.check),
                               cred_flavor=9, cred_body=b"\0" * 8)
            per.append([rpc.record(payload), junk, rpc.record(bad)])
            wants.append(xid)
        pipes = self.pipes(per, want=lambda i: 2, quiet_s=3.0)
        ref = self.P.getattr(self.check)["body_masked"]
        good = 0
        for p, xid in zip(pipes, wants):
            for rep in p.replies:
                if not isinstance(rep, str) and rep.xid == xid and rep.ok() and \
                        rpc.decode_result(rpc.PROCS["GETATTR"][4], rep.body)["body_masked"] == ref:
                    good += 1
        s1 = self.snap()
        self.chk.is_(good, n, "conns: %d connections at once: each one's GETATTR is answered "
                     "with the upstream's attributes" % n)
        self.chk.is_(sum(p.ended for p in pipes), n, "conns: each one answers its NULL")
        self.chk.is_(nsrpc.delta(s0, s1, "conn.accepted"), n, "conns: conn.accepted rose by %d" % n)
        open_during = s1.get("conn.open")
        self.close_all(pipes)
        t_end = time.monotonic() + 5
        while time.monotonic() < t_end and self.snap().get("conn.open") != s0.get("conn.open"):
            time.sleep(0.05)
        self.chk.is_(self.snap().get("conn.open"), s0.get("conn.open"),
                     "conns: conn.open is back to %s once they close" % s0.get("conn.open"))
        figure("sent.conns", n)
        figure("conns.open_during", open_during)
        print_tally("conns", tally(pipes))

    def burst_mounts(self, conns=8, per_conn=128):
        """MOUNT calls pipelined on a few connections, all in flight at
        once: answered, and meanwhile another client's NULL and the control
        socket are."""
        pipes, xids = [], set()
        for i in range(conns):
            recs = []
            for _ in range(per_conn):
                xid, payload = self.call(rpc.MOUNT_PROGRAM, rpc.MOUNTPROC3_EXPORT)
                recs.append(rpc.record(payload))
                xids.add(xid)
            pipes.append(Pipe(self.a.port, b"".join(recs), want=per_conn))
            pipes[-1].ended = True       # no NULL at the end: done with its replies
        box = {}
        pumper = threading.Thread(target=lambda: pump(pipes, quiet_s=60, limit_s=90), daemon=True)
        pumper.start()
        time.sleep(0.3)
        t0 = time.monotonic()
        try:
            b = rpc.Conn(HOST, self.a.port, timeout=60)
            box["null"] = b.null().ok()
            b.close()
        except rpc.RpcError:
            box["null"] = False
        null_ms = (time.monotonic() - t0) * 1000
        t0 = time.monotonic()
        try:
            self.snap()
            ctl_ok = True
        except Exception:        # nfscachectl failed or timed out
            ctl_ok = False
        ctl_ms = (time.monotonic() - t0) * 1000
        pumper.join(100)
        good = sum(1 for p in pipes for rep in p.replies
                   if not isinstance(rep, str) and rep.xid in xids and rep.ok())
        self.chk.is_(good, len(xids), "mounts: each of %d MOUNT EXPORT calls in flight at once "
                     "(%d connections) is answered" % (len(xids), conns))
        self.chk.ok(box["null"] and null_ms <= self.a.null_bound_ms,
                    "mounts: another connection's NULL is answered meanwhile (%.0f ms)" % null_ms)
        self.chk.ok(ctl_ok and ctl_ms <= self.a.null_bound_ms,
                    "mounts: nfscachectl stats answers meanwhile (%.0f ms)" % ctl_ms)
        figure("sent.mounts", len(xids))
        figure("mounts.other_null_ms", "%.0f" % null_ms)
        figure("mounts.ctl_ms", "%.0f" % ctl_ms)
        print_tally("mounts", tally(pipes))
        self.close_all(pipes)

    def burst_idle(self):
        n, each = self.a.idle_conns, self.a.idle_bytes
        s0 = self.snap()
        rss0 = self.rss_now()
        socks = []
        # a 1 MiB WRITE, cut `each` bytes in
        _, payload = self.call(rpc.NFS_PROGRAM, rpc.NFSPROC3_WRITE,
                               rpc.write_args(self.v, 0, b"\x5a" * (1 << 20), stable=rpc.UNSTABLE))
        part = rpc.record(payload)[:each]
        for i in range(n):
            s = rpc.connect(HOST, self.a.port, 10)
            try:
                s.sendall(part)
            except OSError as e:      # closed already, or not read for 10 s
                self.chk.diag("idle: connection %d: %s" % (i, e))
            socks.append(s)
        time.sleep(0.5)
        self.rss_sample("idle")
        rss1 = self.rss_now()
        # every complete call is still served
        t0 = time.monotonic()
        try:
            c = rpc.Conn(HOST, self.a.port, timeout=self.a.null_bound_ms / 1000.0)
            null_ok = c.null().ok()
            rep, st = c.nfs(rpc.NFSPROC3_GETATTR, rpc.getattr_args(self.check))
            c.close()
        except rpc.RpcError:
            null_ok, st = False, None
        ms = (time.monotonic() - t0) * 1000
        closed = 0
        for s in socks:
            if readable(s, 0):
                try:
                    closed += not s.recv(1)
                except ConnectionResetError:
                    closed += 1
        s1 = self.snap()
        self.chk.ok(null_ok and st == "NFS3_OK" and ms <= self.a.null_bound_ms,
                    "idle: with %d half-sent records (%d bytes each) held, NULL and GETATTR are "
                    "answered (%.0f ms)" % (n, each, ms))
        self.chk.num(closed, "-gt", 0, "idle: some connections holding partial records are closed "
                     "(%d of %d, partial_max %d)" % (closed, n, self.a.partial_max))
        self.chk.num((n - closed) * each, "-le", self.a.partial_max,
                     "idle: the partial records left open fit server.partial_max")
        self.chk.is_(nsrpc.delta(s0, s1, "conn.partial_closed"), closed,
                     "idle: conn.partial_closed rose by the %d connections closed" % closed)
        if rss0 is not None and rss1 is not None:
            self.chk.num(max(0, rss1 - rss0) // 1024, "-lt", self.a.idle_rss_max_mb,
                         "idle: the daemon's RSS rose by less than %d MiB while %d MiB of partial "
                         "records were sent (%d -> %d KiB)" % (
                             self.a.idle_rss_max_mb, n * each >> 20, rss0, rss1))
            figure("idle.rss_kb", "%d -> %d" % (rss0, rss1))
        for s in socks:
            s.close()
        figure("sent.idle", n)
        figure("idle.closed", closed)
        figure("idle.null_ms", "%.0f" % ms)

    def final(self):
        self.rss_sample("end")
        data = self.read_all(self.check)
        self.chk.is_(md5(data), md5(self.model), "check.bin read whole through nfscached: "
                     "every WRITE of the checks, nothing else")
        with open(os.path.join(self.a.export_dir, "check.bin"), "rb") as f:
            disk = f.read()
        self.chk.is_(md5(disk), md5(self.model),
                     "check.bin in the upstream's export: the same bytes")
        for k in sorted(self.rss):
            figure("rss_kb.%s" % k, self.rss[k])

    def run(self):
        figure("seed", self.a.seed)
        t0 = time.monotonic()
        self.handles()
        self.rss_sample("start")
        s_start = self.snap()
        bursts = [("nul", self.burst_nul), ("creds", self.burst_creds), ("huge", self.burst_huge),
                  ("flip", self.burst_flip), ("markflip", self.burst_markflip),
                  ("trunc", self.burst_trunc),
                  ("readmax", self.burst_readmax), ("frags", self.burst_frags),
                  ("split", self.burst_split), ("midclose", self.burst_midclose),
                  ("conns", self.burst_conns), ("mounts", self.burst_mounts),
                  ("idle", self.burst_idle)]
        if self.a.bursts:
            bursts = [b for b in bursts if b[0] in self.a.bursts.split(",")]
        for name, fn in bursts:
            tb = time.monotonic()
            try:
                fn()
            except (rpc.RpcError, OSError) as e:
                self.chk.ok(False, "%s: the burst ran to its end (%s)" % (name, e))
            self.rss_sample(name)
            figure("ms.%s" % name, "%.0f" % ((time.monotonic() - tb) * 1000))
            try:
                self.check_round(name)
            except (rpc.RpcError, OSError) as e:
                self.round_fail["null"].append("%s: check round failed: %s" % (name, e))
        self.finish_rounds()
        self.final()
        s_end = self.snap()
        for k in ("rpc.garbage_args", "rpc.rejected", "rpc.oversized", "conn.accepted",
                  "conn.partial_closed", "rpc.drc.hits", "rpc.drc.drops"):
            figure("delta.%s" % k, nsrpc.delta(s_start, s_end, k))
        figure("ms.total", "%.0f" % ((time.monotonic() - t0) * 1000))
        return 0


def fragments(payload, size):
    """`payload` record marked in fragments of `size` bytes (the last one
    shorter when it must be)."""
    out = []
    for i in range(0, len(payload), size):
        last = rpc.LAST_FRAGMENT if i + size >= len(payload) else 0
        out.append(struct.pack(">I", len(payload[i:i + size]) | last) + payload[i:i + size])
    return b"".join(out)


def read_res(body):
    """READ3res: nfs_status, and count, eof ("true"/"false"), data (bytes)
    when NFS3_OK."""
    u = rpc.Unpacker(body)
    out = {"nfs_status": rpc.NFS3_STATUS.get(u.u32(), "?")}
    rpc.skip_post_op_attr(u)
    if out["nfs_status"] == "NFS3_OK":
        out["count"] = str(u.u32())
        out["eof"] = "true" if u.u32() else "false"
        out["data"] = u.opaque()
    return out


def readable(sock, timeout_s):
    po = select.poll()
    po.register(sock, select.POLLIN)
    return bool(po.poll(int(timeout_s * 1000)))


def bitdist(a, b):
    if len(a) != len(b):
        return 8 * max(len(a), len(b))
    return sum(bin(x ^ y).count("1") for x, y in zip(a, b))


def md5(b):
    return hashlib.md5(b).hexdigest()


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--up-port", type=int, required=True)
    p.add_argument("--up-mount-port", type=int, required=True)
    p.add_argument("--ctl", required=True)
    p.add_argument("--nfscachectl", required=True)
    p.add_argument("--export-dir", required=True)
    p.add_argument("--pid", type=int, default=0)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--conns", type=int, default=200)
    p.add_argument("--idle-conns", type=int, default=48)
    p.add_argument("--idle-bytes", type=int, default=256 << 10)
    p.add_argument("--max-record", type=int, default=1088 << 10)
    p.add_argument("--partial-max", type=int, default=4 << 20)
    p.add_argument("--null-bound-ms", type=int, default=5000)
    p.add_argument("--idle-rss-max-mb", type=int, default=64)
    p.add_argument("--bursts", default="",
                   help="only these bursts (comma-separated names, in their order)")
    p.add_argument("--scale", type=int, default=1,
                   help="multiply the flip, markflip and trunc bursts (longer runs)")
    a = p.parse_args(argv)
    if a.seed is None:
        a.seed = random.randrange(1 << 32)
    return Hostile(a).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
