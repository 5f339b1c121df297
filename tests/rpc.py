#!/usr/bin/env python3
"""rpc.py - a small ONC RPC (RFC 5531) client over TCP, for tests.

Record marking (optionally split into several fragments), call headers with
AUTH_SYS, AUTH_NONE or any raw flavor, raw byte sending, reply parsing, and
XDR for the arguments and results of every NFSv3 and MOUNTv3 procedure
(RFC 1813), with helpers for MOUNT MNT and EXPORT, NFS NULL, GETATTR, LOOKUP,
READ, CREATE (UNCHECKED), REMOVE, WRITE, SETATTR and COMMIT, and pipelined
workloads (several calls in flight on one connection); directory listings
paged through (READDIR, READDIRPLUS), many LOOKUPs and GETATTRs, and a
client's walk of a tree for comparing what a cache answers with what the
server does.

Used as a library (import rpc) and from the shell tests through its command
line, which prints `key: value` lines:

  rpc.py [--host H] --port P [--mount-port M] [--export PATH] [--timeout S]
         [--uid N] [--gid N] [--auth sys|none] [--fragments N]
         [--src-addr A] [--src-port N|reserved] COMMAND [ARGS]

  null                         NFS NULL
  mnt                          MOUNT MNT of --export: mount_status, fh
  exports                      MOUNT EXPORT: export_count, export.N lines
  probe                        connect, call NULL: src_port, and result
                               `reply <summary>`, `closed` or `silent`
  getattr FH                   nfs_status, type, size, mode, nlink, uid, gid,
                               fileid, atime, mtime, ctime (sec.nsec)
  lookup FH NAME               nfs_status, fh
  create FH NAME               CREATE UNCHECKED mode 0644: nfs_status, fh
  remove FH NAME               nfs_status
  write FH OFFSET TEXT         FILE_SYNC write: nfs_status, count
  pwrite FH OFFSET FILE        write of the bytes of FILE (--stable HOW,
                               default file_sync): nfs_status, obj.size,
                               count, committed (UNSTABLE, DATA_SYNC or
                               FILE_SYNC), verf (the write verifier, hex)
  commit FH [OFFSET COUNT]     COMMIT (default 0 0): nfs_status, obj.size
                               (when the reply has attributes), verf
  read FH OFFSET COUNT         READ: nfs_status, count, eof, md5 (of the
                               data), zero_bytes, obj.size; --out FILE
                               writes the data to FILE
  truncate FH SIZE             SETATTR of the size only: nfs_status,
                               obj.size, obj.mode
  setattr FH [--mode OCTAL] [--size N]
                               SETATTR of those: nfs_status, obj.size,
                               obj.mode
  w1 FH [--size N] [--writes N] [--reads N] [--block B] [--seed S]
     [--depth D] [--model FILE] [--model-out FILE] [--stable HOW]
     [--no-commit]             the W1 workload on one connection, D calls in
                               flight: a model of the file (its bytes read
                               by READs of 64 KiB, or the content of
                               --model), N WRITEs (default UNSTABLE) of B
                               random bytes at random B-aligned offsets
                               below --size (default: the model's length),
                               never two in flight to one block; N READs of
                               one block at random, each compared with the
                               model; COMMIT 0 0 (not with --no-commit).
                               Prints writes, write_errors, written_blocks
                               (distinct blocks written), written_runs
                               (runs of adjacent blocks written: the fewest
                               WRITEs that write them all without other
                               bytes), write_verfs (distinct verifiers of
                               the WRITE replies), verf (the first),
                               write_ms, reads,
                               read_errors, mismatches (READs whose bytes
                               differ from the model), read_ms,
                               written_reads (READs of a block written),
                               cold_reads (READs of a block neither written
                               nor read before, by an answered READ or the
                               model's READs: what a cache fetches at most),
                               cold_page_reads (READs of a block not written
                               in a --page sized page no such READ was
                               answered in before: what a cache that
                               fetches whole pages fetches at most),
                               commit_status, commit_verf;
                               first_write_error, first_read_error,
                               first_mismatch when there are some.
                               --model-out FILE gets the final model.  On
                               a transport failure: what it has so far,
                               error_phase, error_answered, error
  writefile FH FILE [--offset N] [--chunk N] [--depth D] [--stable HOW]
            [--rounds N] [--no-commit]
                               FILE's bytes at --offset in WRITEs of --chunk
                               bytes (default 65536, UNSTABLE), D (8) in
                               flight, then COMMIT 0 0; the chunks whose
                               WRITE verifier differs from the COMMIT's (and
                               not FILE_SYNC) are sent again and COMMIT
                               again, as a client does, in at most --rounds
                               (5) rounds.  Prints rounds, writes (WRITEs
                               sent), resends, write_errors, verfs (distinct
                               verifiers of the WRITE replies, hex,
                               comma-separated), verf (the first),
                               commit_status, commit_verf, unmatched (chunks
                               whose verifier still differs); stops at the
                               first round with a failed WRITE.  On a
                               transport failure as w1
  readmany DIRFH [--prefix P] [--digits N] [--first I] [--count N]
           [--read-size B] [--depth D]
                               LOOKUP of the names P<I..I+N-1> (the number
                               zero padded to --digits) in DIRFH, then one
                               READ of B (65536) bytes at 0 of each, D (32)
                               calls in flight: files, lookup_errors,
                               read_errors (also a READ without eof), reads,
                               bytes, md5 (of the data of all files in name
                               order), lookup_ms, read_ms; first_lookup_error,
                               first_read_error when there are some
  getattrloop FH [--seconds S] [--stop-file PATH]
                               GETATTR of FH back to back, one in flight,
                               for S (10) seconds or until PATH exists:
                               count, errors, max_ms, p99_ms, p50_ms,
                               mean_ms, over_100ms (latencies of the calls),
                               slow (start time and latency of the first 20
                               calls of at least --slow-ms, 50)
  access FH MASK               ACCESS (MASK a number): nfs_status, access
                               (the bits granted), obj. attributes
  readlink FH                  nfs_status, target
  mkdir FH NAME [--mode M]     MKDIR (mode 755): nfs_status, fh, obj., dir.
  symlink FH NAME TARGET       SYMLINK: nfs_status, fh, obj., dir.
  mknod FH NAME TYPE [--mode M]
                               MKNOD of a fifo, sock, chr or blk (device
                               0,0; mode 644): nfs_status, fh, obj., dir.
  rename FH NAME TODIRFH TONAME
                               nfs_status, fromdir., todir. wcc data
  link FH DIRFH NAME           nfs_status, obj., dir.
  rmdir FH NAME                nfs_status, obj. wcc data
  fsstat FH, fsinfo FH, pathconf FH
                               every result field
                               (these print every field as `proc` does)
  readdir FH [--count N] [--cookie C --verf HEX] [--pages N]
  readdirplus FH [--dircount N] [--maxcount N] [--cookie C --verf HEX]
              [--pages N]      the listing from cookie C (0), page after
                               page until eof, an error or N pages:
                               nfs_status (of the last reply), pages,
                               entries, distinct_names, max_reply (the
                               largest reply body, the READDIR3res or
                               READDIRPLUS3res, in bytes), eof, cookieverf,
                               without_attrs, without_fh (READDIRPLUS
                               entries), page.N (entries, bytes, last
                               cookie, verifier), names_md5 (of the sorted
                               names), then every name as `name:` lines;
                               --names-out FILE, --entries-out FILE
  statmany DIRFH [NAME...] [--names-file F] [--depth D] [--out FILE]
                               LOOKUP of each name, then GETATTR of each
                               handle found, D (32) in flight: names,
                               found, noent, lookup_errors, getattr_errors,
                               md5 (of the lines --out gets: name, status,
                               fh, GETATTR status, type size fileid mtime)
  walk FH [--dircount N --maxcount N] [--read-size B] [--dir-mask M]
          [--file-mask M]      a client's walk of the tree under directory
                               FH on a fresh connection: ACCESS and
                               READDIRPLUS (every page) of each directory;
                               per entry LOOKUP; per regular file ACCESS
                               (READ), GETATTR, READs of all of it; per
                               symlink READLINK; subdirectories (ACCESS,
                               READDIRPLUS) after the files.  Prints files,
                               dirs, symlinks, others, bytes, md5 (paths,
                               type, mode, size, mtime, fileid, content md5
                               or target), fh_md5 (paths and handles),
                               pages, max_reply, entries, attr_mismatches,
                               fh_mismatches, without_attrs, without_fh,
                               errors, first_error, calls, calls.PROC, ms:
                               two walks of one tree compare by md5
  proc NAME [ARG...]           any NFSv3 or MOUNTv3 procedure by name, with
                               the arguments `procs` lists (FH hex, MODE
                               octal, MASK a number, STABLE unstable,
                               data_sync or file_sync, TYPE reg, dir, blk,
                               chr, lnk, sock or fifo; MOUNT procedures go to
                               --mount-port, MOUNT NULL is MOUNT_NULL): every
                               result field (nfs_status or mount_status,
                               attributes as obj./dir. keys, READDIR entries
                               as entry.N. keys and `names`; names, paths
                               and READ data with bytes other than printable
                               ASCII as \\xNN), then `body`, the
                               result in hex, and `body_masked`, the same with
                               the atime and ctime of every fattr3 and the
                               FSINFO rtmax, rtpref, wtmax, wtpref and dtpref
                               zeroed: what two correct replies to one call,
                               one of them through a proxy, have in common
  procs                        list the procedures of `proc`
  send FILE                    send the record saved in FILE (record mark
                               included) and print its reply
  badinput [CASE...]           send malformed input on one connection per
                               case while a second connection, opened first,
                               keeps calling NULL and GETATTR (see BAD_CASES)
  teardown NAME                open --conns connections, pipeline --calls
                               GETATTR/READ/LOOKUP calls of file NAME (in the
                               export root) on each, reset each one (SO_LINGER
                               0) without reading the replies (--hold S: all
                               S seconds after sending; --root and --fh skip
                               the MNT and LOOKUP): counts
  partial NAME                 connections that stop inside a record and
                               close: half a record mark, half a GETATTR, and
                               a 1 MiB WRITE of NAME sent in --piece byte
                               pieces --pause-ms apart, closed (or reset,
                               --reset) after --fraction of it, while another
                               connection keeps calling NULL

  --src-port binds the client socket to that source port (`reserved`: the
  first free one from 1023 down, which needs root), --src-addr to that
  source address.  --auth none sends AUTH_NONE credentials.

  For null/getattr/lookup/create/remove/write/pwrite/read/truncate/
  setattr/commit/access/readlink/mkdir/symlink/mknod/rename/link/rmdir/
  fsstat/fsinfo/pathconf/proc:
  --xid X fixes the XID,
  --repeat N sends the identical record N times on the same connection
  (keys of the Nth reply get a ".N" suffix from the second on), --save FILE
  writes the record as sent.  FH is hex.  Exit status 0 when every reply
  arrived (whatever its status), 1 on a transport failure, 2 on usage errors.

Only the Python standard library is used.
"""

import argparse
import errno
import hashlib
import random
import select
import socket
import struct
import sys
import time

# ---- constants (RFC 5531, RFC 1813) ----------------------------------------

CALL, REPLY = 0, 1
MSG_ACCEPTED, MSG_DENIED = 0, 1
ACCEPT_STAT = {0: "SUCCESS", 1: "PROG_UNAVAIL", 2: "PROG_MISMATCH",
               3: "PROC_UNAVAIL", 4: "GARBAGE_ARGS", 5: "SYSTEM_ERR"}
REJECT_STAT = {0: "RPC_MISMATCH", 1: "AUTH_ERROR"}
AUTH_STAT = {0: "AUTH_OK", 1: "AUTH_BADCRED", 2: "AUTH_REJECTEDCRED",
             3: "AUTH_BADVERF", 4: "AUTH_REJECTEDVERF", 5: "AUTH_TOOWEAK",
             6: "AUTH_INVALIDRESP", 7: "AUTH_FAILED"}
AUTH_NONE, AUTH_SYS, AUTH_DH = 0, 1, 3
LAST_FRAGMENT = 0x80000000

NFS_PROGRAM, NFS_V3 = 100003, 3
MOUNT_PROGRAM, MOUNT_V3 = 100005, 3
NFSPROC3_NULL, NFSPROC3_GETATTR, NFSPROC3_LOOKUP, NFSPROC3_READ = 0, 1, 3, 6
NFSPROC3_WRITE, NFSPROC3_CREATE, NFSPROC3_REMOVE = 7, 8, 12
MOUNTPROC3_MNT, MOUNTPROC3_EXPORT = 1, 5
NFSPROC3_SETATTR, NFSPROC3_ACCESS, NFSPROC3_READLINK = 2, 4, 5
NFSPROC3_MKDIR, NFSPROC3_SYMLINK, NFSPROC3_MKNOD = 9, 10, 11
NFSPROC3_RMDIR, NFSPROC3_RENAME, NFSPROC3_LINK = 13, 14, 15
NFSPROC3_READDIR, NFSPROC3_READDIRPLUS = 16, 17
NFSPROC3_FSSTAT, NFSPROC3_FSINFO, NFSPROC3_PATHCONF, NFSPROC3_COMMIT = 18, 19, 20, 21
MOUNTPROC3_NULL, MOUNTPROC3_DUMP, MOUNTPROC3_UMNT, MOUNTPROC3_UMNTALL = 0, 2, 3, 4
UNSTABLE, DATA_SYNC, FILE_SYNC = 0, 1, 2
UNCHECKED, GUARDED, EXCLUSIVE = 0, 1, 2
NF3REG, NF3DIR, NF3BLK, NF3CHR, NF3LNK, NF3SOCK, NF3FIFO = 1, 2, 3, 4, 5, 6, 7
FTYPE3 = {NF3REG: "NF3REG", NF3DIR: "NF3DIR", NF3BLK: "NF3BLK", NF3CHR: "NF3CHR",
          NF3LNK: "NF3LNK", NF3SOCK: "NF3SOCK", NF3FIFO: "NF3FIFO"}
STABLE_HOW = {UNSTABLE: "UNSTABLE", DATA_SYNC: "DATA_SYNC", FILE_SYNC: "FILE_SYNC"}
MOUNT3_STATUS = {
    0: "MNT3_OK", 1: "MNT3ERR_PERM", 2: "MNT3ERR_NOENT", 5: "MNT3ERR_IO",
    13: "MNT3ERR_ACCES", 20: "MNT3ERR_NOTDIR", 22: "MNT3ERR_INVAL",
    63: "MNT3ERR_NAMETOOLONG", 10004: "MNT3ERR_NOTSUPP", 10006: "MNT3ERR_SERVERFAULT",
}

NFS3_STATUS = {
    0: "NFS3_OK", 1: "NFS3ERR_PERM", 2: "NFS3ERR_NOENT", 5: "NFS3ERR_IO",
    6: "NFS3ERR_NXIO", 13: "NFS3ERR_ACCES", 17: "NFS3ERR_EXIST",
    18: "NFS3ERR_XDEV", 19: "NFS3ERR_NODEV", 20: "NFS3ERR_NOTDIR",
    21: "NFS3ERR_ISDIR", 22: "NFS3ERR_INVAL", 27: "NFS3ERR_FBIG",
    28: "NFS3ERR_NOSPC", 30: "NFS3ERR_ROFS", 31: "NFS3ERR_MLINK",
    63: "NFS3ERR_NAMETOOLONG", 66: "NFS3ERR_NOTEMPTY", 69: "NFS3ERR_DQUOT",
    70: "NFS3ERR_STALE", 71: "NFS3ERR_REMOTE", 10001: "NFS3ERR_BADHANDLE",
    10002: "NFS3ERR_NOT_SYNC", 10003: "NFS3ERR_BAD_COOKIE",
    10004: "NFS3ERR_NOTSUPP", 10005: "NFS3ERR_TOOSMALL",
    10006: "NFS3ERR_SERVERFAULT", 10007: "NFS3ERR_BADTYPE",
    10008: "NFS3ERR_JUKEBOX",
}


class RpcError(Exception):
    """A transport failure or an unexpected reply."""


class Closed(RpcError):
    """The peer closed (or reset) the connection."""


class Timeout(RpcError):
    """No (whole) reply within the time allowed."""


# ---- XDR (RFC 4506) ---------------------------------------------------------

class Packer:
    def __init__(self):
        self.parts = []

    def u32(self, v):
        self.parts.append(struct.pack(">I", v & 0xffffffff))
        return self

    def u64(self, v):
        self.parts.append(struct.pack(">Q", v))
        return self

    def boolean(self, b):
        return self.u32(1 if b else 0)

    def fixed(self, data):
        """Bytes padded to a multiple of 4, no length."""
        self.parts.append(bytes(data) + b"\0" * (-len(data) % 4))
        return self

    def opaque(self, data, declared=None):
        """opaque<>/string<>: length (`declared` if given, to lie), bytes."""
        self.u32(len(data) if declared is None else declared)
        return self.fixed(data)

    def raw(self, data):
        self.parts.append(bytes(data))
        return self

    def bytes(self):
        return b"".join(self.parts)


class Unpacker:
    def __init__(self, data, pos=0):
        self.data = data
        self.pos = pos

    def need(self, n):
        if self.pos + n > len(self.data):
            raise RpcError("reply truncated at byte %d (need %d more of %d)"
                           % (self.pos, n, len(self.data)))

    def u32(self):
        self.need(4)
        v = struct.unpack_from(">I", self.data, self.pos)[0]
        self.pos += 4
        return v

    def u64(self):
        self.need(8)
        v = struct.unpack_from(">Q", self.data, self.pos)[0]
        self.pos += 8
        return v

    def fixed(self, n):
        self.need(n + (-n % 4))
        v = self.data[self.pos:self.pos + n]
        self.pos += n + (-n % 4)
        return v

    def opaque(self, maxlen=None):
        n = self.u32()
        if maxlen is not None and n > maxlen:
            raise RpcError("opaque of %d bytes exceeds %d" % (n, maxlen))
        return self.fixed(n)

    def remaining(self):
        return len(self.data) - self.pos


# ---- record marking (RFC 5531 section 11) -----------------------------------

def record(payload, fragments=1, align=4):
    """The record marking of `payload`, split into `fragments` fragments of
    near-equal size whose lengths are multiples of `align` bytes (the last
    one may be shorter; never an empty fragment but for an empty payload).  RFC 5531 allows any split; nfs-ganesha 4.3
    mishandles fragments that do not end on a 4-byte boundary, hence the
    default."""
    step = -(-len(payload) // max(1, fragments))
    step = max(align, -(-step // align) * align)
    fragments = max(1, -(-len(payload) // step))
    out = []
    pos = 0
    for i in range(fragments):
        last = i == fragments - 1
        chunk = payload[pos:] if last else payload[pos:pos + step]
        pos += len(chunk)
        out.append(struct.pack(">I", len(chunk) | (LAST_FRAGMENT if last else 0)))
        out.append(chunk)
    return b"".join(out)


# ---- call headers -----------------------------------------------------------

def auth_sys_body(uid=0, gid=0, gids=(), machinename="rpc.py", stamp=0):
    p = Packer().u32(stamp)
    name = machinename.encode() if isinstance(machinename, str) else machinename
    p.opaque(name).u32(uid).u32(gid).u32(len(gids))
    for g in gids:
        p.u32(g)
    return p.bytes()


def call_header(xid, prog, vers, proc, cred_flavor=AUTH_SYS, cred_body=None,
                verf_flavor=AUTH_NONE, verf_body=b"", rpcvers=2, msg_type=CALL,
                uid=0, gid=0, gids=()):
    """The call header; `cred_body` defaults to an AUTH_SYS body built from
    uid/gid/gids for AUTH_SYS, and empty otherwise."""
    if cred_body is None:
        cred_body = auth_sys_body(uid, gid, gids) if cred_flavor == AUTH_SYS else b""
    p = Packer().u32(xid).u32(msg_type).u32(rpcvers).u32(prog).u32(vers).u32(proc)
    p.u32(cred_flavor).opaque(cred_body)
    p.u32(verf_flavor).opaque(verf_body)
    return p.bytes()


# ---- replies ----------------------------------------------------------------

class Reply:
    """A parsed reply.  Fields: xid, msg_type, reply_stat ("MSG_ACCEPTED" or
    "MSG_DENIED"), accept_stat, reject_stat, auth_stat (names), low/high
    (mismatch info), body (results, for accepted SUCCESS), raw (the record)."""

    def __init__(self, rec):
        self.raw = rec
        self.accept_stat = self.reject_stat = self.auth_stat = None
        self.low = self.high = None
        self.body = b""
        u = Unpacker(rec)
        self.xid = u.u32()
        self.msg_type = u.u32()
        if self.msg_type != REPLY:
            raise RpcError("message type %d is not REPLY" % self.msg_type)
        stat = u.u32()
        if stat == MSG_ACCEPTED:
            self.reply_stat = "MSG_ACCEPTED"
            u.u32()              # verifier flavor
            u.opaque(400)        # verifier body
            a = u.u32()
            self.accept_stat = ACCEPT_STAT.get(a, str(a))
            if a == 2:
                self.low, self.high = u.u32(), u.u32()
            self.body = rec[u.pos:]
        elif stat == MSG_DENIED:
            self.reply_stat = "MSG_DENIED"
            r = u.u32()
            self.reject_stat = REJECT_STAT.get(r, str(r))
            if r == 0:
                self.low, self.high = u.u32(), u.u32()
            elif r == 1:
                a = u.u32()
                self.auth_stat = AUTH_STAT.get(a, str(a))
        else:
            raise RpcError("reply_stat %d" % stat)

    def ok(self):
        return self.reply_stat == "MSG_ACCEPTED" and self.accept_stat == "SUCCESS"

    def summary(self):
        """One line: `accepted SUCCESS`, `accepted PROG_MISMATCH 3-3`,
        `denied RPC_MISMATCH 2-2`, `denied AUTH_ERROR AUTH_BADCRED`."""
        if self.reply_stat == "MSG_ACCEPTED":
            s = "accepted " + self.accept_stat
        else:
            s = "denied " + self.reject_stat
            if self.auth_stat:
                s += " " + self.auth_stat
        if self.low is not None:
            s += " %d-%d" % (self.low, self.high)
        return s

    def sha1(self):
        return hashlib.sha1(self.raw).hexdigest()


# ---- the connection ---------------------------------------------------------

RESERVED = "reserved"


def connect(host, port, timeout, src_addr=None, src_port=None):
    """A connected TCP socket, bound to `src_addr`/`src_port` when given;
    src_port RESERVED takes the first port from 1023 down that binds."""
    if src_port == RESERVED:
        last = None
        for p in range(1023, 511, -1):
            try:
                return connect(host, port, timeout, src_addr, p)
            except RpcError as e:
                last = e
                if not isinstance(e.__cause__, OSError) or \
                        e.__cause__.errno not in (errno.EADDRINUSE, errno.EADDRNOTAVAIL):
                    raise
        raise RpcError("no reserved source port free: %s" % last)
    src = None
    if src_addr or src_port:
        src = (src_addr or "", src_port or 0)
    try:
        return socket.create_connection((host, port), timeout=timeout, source_address=src)
    except OSError as e:
        raise RpcError("connect to %s:%d from %s: %s" % (host, port, src, e)) from e


class Conn:
    """One TCP connection.  Every wait is bounded by `timeout` seconds.
    Calls carry AUTH_SYS uid/gid, or AUTH_NONE with flavor=AUTH_NONE."""

    def __init__(self, host, port, timeout=10.0, fragments=1, uid=0, gid=0,
                 flavor=AUTH_SYS, src_addr=None, src_port=None):
        self.timeout = timeout
        self.fragments = fragments
        self.uid, self.gid = uid, gid
        self.flavor = flavor
        self.xid = random.randrange(1, 1 << 31)
        self.buf = b""
        self.sock = connect(host, port, timeout, src_addr, src_port)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def close(self):
        self.sock.close()

    def reset(self):
        """Close with SO_LINGER 0: the peer gets an RST, queued data is lost."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def src_port(self):
        return self.sock.getsockname()[1]

    def next_xid(self):
        self.xid = (self.xid + 1) & 0xffffffff
        return self.xid

    def send_raw(self, data):
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError) as e:
            raise Closed("send: %s" % e) from e
        except socket.timeout as e:
            raise Timeout("send blocked for %.1f s" % self.timeout) from e

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise Timeout("no reply within %.1f s" % self.timeout)
        r, _, _ = select.select([self.sock], [], [], left)
        if not r:
            raise Timeout("no reply within %.1f s" % self.timeout)
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError as e:
            raise Closed("connection reset") from e
        if not data:
            raise Closed("connection closed by the peer")
        self.buf += data

    def recv_record(self, timeout=None):
        """The next whole record (fragments joined).  Raises Closed, Timeout."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        parts = []
        while True:
            while len(self.buf) < 4:
                self._fill(deadline)
            mark = struct.unpack_from(">I", self.buf)[0]
            n = mark & ~LAST_FRAGMENT
            if n > 64 << 20:
                raise RpcError("reply fragment of %d bytes" % n)
            while len(self.buf) < 4 + n:
                self._fill(deadline)
            parts.append(self.buf[4:4 + n])
            self.buf = self.buf[4 + n:]
            if mark & LAST_FRAGMENT:
                return b"".join(parts)

    def recv_reply(self, xid=None, timeout=None):
        rep = Reply(self.recv_record(timeout))
        if xid is not None and rep.xid != xid:
            raise RpcError("reply xid %#x, expected %#x" % (rep.xid, xid))
        return rep

    def build(self, prog, vers, proc, args=b"", xid=None, **hdr):
        """(xid, record bytes) of a call, record marked."""
        if xid is None:
            xid = self.next_xid()
        hdr.setdefault("uid", self.uid)
        hdr.setdefault("gid", self.gid)
        hdr.setdefault("cred_flavor", self.flavor)
        payload = call_header(xid, prog, vers, proc, **hdr) + args
        return xid, record(payload, self.fragments)

    def call(self, prog, vers, proc, args=b"", xid=None, timeout=None, **hdr):
        xid, rec = self.build(prog, vers, proc, args, xid, **hdr)
        self.send_raw(rec)
        return self.recv_reply(xid, timeout)

    # -- MOUNTv3 and NFSv3 --

    def mnt(self, path):
        """MOUNT MNT: (mountstat3, root fh or None)."""
        rep = self.call(MOUNT_PROGRAM, MOUNT_V3, MOUNTPROC3_MNT,
                        Packer().opaque(path.encode()).bytes())
        if not rep.ok():
            raise RpcError("MNT: " + rep.summary())
        u = Unpacker(rep.body)
        st = u.u32()
        return st, (u.opaque(64) if st == 0 else None)

    def exports(self):
        """MOUNT EXPORT: the list of (directory, [groups])."""
        rep = self.call(MOUNT_PROGRAM, MOUNT_V3, MOUNTPROC3_EXPORT)
        if not rep.ok():
            raise RpcError("EXPORT: " + rep.summary())
        u = Unpacker(rep.body)
        out = []
        while u.u32():
            d = u.opaque(1024).decode(errors="replace")
            groups = []
            while u.u32():
                groups.append(u.opaque(255).decode(errors="replace"))
            out.append((d, groups))
        return out

    def nfs(self, proc, args=b"", **kw):
        """An NFSv3 call; returns (Reply, NFS status name or None)."""
        rep = self.call(NFS_PROGRAM, NFS_V3, proc, args, **kw)
        st = None
        if rep.ok() and proc != NFSPROC3_NULL:
            st = nfs_status(rep.body)
        return rep, st

    def null(self, **kw):
        return self.call(NFS_PROGRAM, NFS_V3, NFSPROC3_NULL, b"", **kw)


def nfs_status(body):
    v = Unpacker(body).u32()
    return NFS3_STATUS.get(v, str(v))


# argument encoders

def fh3(fh, declared=None):
    return Packer().opaque(fh, declared).bytes()


def diropargs3(dirfh, name):
    n = name.encode() if isinstance(name, str) else name
    return Packer().opaque(dirfh).opaque(n).bytes()


def getattr_args(fh):
    return fh3(fh)


def lookup_args(dirfh, name):
    return diropargs3(dirfh, name)


def remove_args(dirfh, name):
    return diropargs3(dirfh, name)


def create_args(dirfh, name, mode=0o644):
    """CREATE UNCHECKED with only the mode set."""
    p = Packer().raw(diropargs3(dirfh, name)).u32(UNCHECKED)
    p.boolean(True).u32(mode)       # mode
    p.boolean(False)                # uid
    p.boolean(False)                # gid
    p.boolean(False)                # size
    p.u32(0).u32(0)                 # atime, mtime: DONT_CHANGE
    return p.bytes()


def read_args(fh, offset, count):
    return Packer().opaque(fh).u64(offset).u32(count).bytes()


def write_args(fh, offset, data, stable=FILE_SYNC, count=None, declared=None):
    """WRITE3args; `count` and `declared` (the data length on the wire) may
    lie about len(data)."""
    p = Packer().opaque(fh).u64(offset)
    p.u32(len(data) if count is None else count).u32(stable)
    p.opaque(data, declared)
    return p.bytes()


# result decoders (just what the tests print)

def skip_post_op_attr(u):
    if u.u32():
        u.fixed(84)


def skip_wcc_data(u):
    if u.u32():
        u.fixed(24)
    skip_post_op_attr(u)


def unpack_fattr3(u):
    """A fattr3 as a dict: type, mode, nlink, uid, gid, size, used, rdev
    (major, minor), fsid, fileid, atime, mtime, ctime ((seconds,
    nanoseconds) pairs)."""
    a = {}
    for k in ("type", "mode", "nlink", "uid", "gid"):
        a[k] = u.u32()
    a["size"], a["used"] = u.u64(), u.u64()
    a["rdev"] = (u.u32(), u.u32())
    a["fsid"], a["fileid"] = u.u64(), u.u64()
    for k in ("atime", "mtime", "ctime"):
        a[k] = (u.u32(), u.u32())
    return a


def unpack_post_op_attr(u):
    """A post_op_attr: its fattr3 dict, or None."""
    return unpack_fattr3(u) if u.u32() else None


def nfstime(t):
    """An nfstime3 pair as seconds.nanoseconds."""
    return "%d.%09d" % t


def decode_getattr(body):
    """GETATTR3res: status, type (a number), mode (octal), size, nlink, uid,
    gid, fileid and atime, mtime, ctime (seconds.nanoseconds)."""
    u = Unpacker(body)
    out = {"nfs_status": NFS3_STATUS.get(u.u32(), "?")}
    if out["nfs_status"] == "NFS3_OK":
        a = unpack_fattr3(u)
        out.update(type=a["type"], mode="%o" % a["mode"], size=a["size"], nlink=a["nlink"],
                   uid=a["uid"], gid=a["gid"], fileid=a["fileid"], atime=nfstime(a["atime"]),
                   mtime=nfstime(a["mtime"]), ctime=nfstime(a["ctime"]))
    return out


def decode_lookup(body):
    u = Unpacker(body)
    out = {"nfs_status": NFS3_STATUS.get(u.u32(), "?")}
    if out["nfs_status"] == "NFS3_OK":
        out["fh"] = u.opaque(64).hex()
    return out


def decode_create(body):
    u = Unpacker(body)
    out = {"nfs_status": NFS3_STATUS.get(u.u32(), "?")}
    if out["nfs_status"] == "NFS3_OK" and u.u32():
        out["fh"] = u.opaque(64).hex()
    return out


def decode_write(body):
    u = Unpacker(body)
    out = {"nfs_status": NFS3_STATUS.get(u.u32(), "?")}
    if out["nfs_status"] == "NFS3_OK":
        skip_wcc_data(u)
        out["count"] = u.u32()
        out["committed"] = u.u32()
    return out


def decode_status(body):
    return {"nfs_status": nfs_status(body)}


def post_op_size(u, out, key="obj.size"):
    """A post_op_attr: its size as `key` when attributes follow."""
    if u.u32():
        attrs = u.fixed(84)
        out[key] = struct.unpack_from(">Q", attrs, 20)[0]


def _wcc_result(body):
    """The start of a result with wcc_data (WRITE3res, COMMIT3res): its
    status and the size after; the unpacker is left at the resok fields."""
    u = Unpacker(body)
    out = {"nfs_status": NFS3_STATUS.get(u.u32(), "?")}
    if u.u32():
        u.fixed(24)
    post_op_size(u, out)
    return u, out


def decode_pwrite(body):
    """WRITE3res: status, count, committed, verifier, the size after."""
    u, out = _wcc_result(body)
    if out["nfs_status"] == "NFS3_OK":
        out["count"] = u.u32()
        v = u.u32()
        out["committed"] = STABLE_HOW.get(v, str(v))
        out["verf"] = u.fixed(8).hex()
    return out


def decode_commit(body):
    """COMMIT3res: status, verifier, the size after."""
    u, out = _wcc_result(body)
    if out["nfs_status"] == "NFS3_OK":
        out["verf"] = u.fixed(8).hex()
    return out


def decode_read(body, out_file=None):
    """READ3res: status, count, eof, md5 and zero bytes of the data, the
    size in the attributes; the data to `out_file` when given."""
    u = Unpacker(body)
    out = {"nfs_status": NFS3_STATUS.get(u.u32(), "?")}
    post_op_size(u, out)
    if out["nfs_status"] == "NFS3_OK":
        out["count"] = u.u32()
        out["eof"] = "true" if u.u32() else "false"
        data = u.opaque()
        out["data_len"] = len(data)
        out["md5"] = hashlib.md5(data).hexdigest()
        out["zero_bytes"] = data.count(0)
        if out_file:
            with open(out_file, "wb") as f:
                f.write(data)
    return out


def decode_setattr(body):
    """SETATTR3res: status, the size and mode after."""
    u = Unpacker(body)
    out = {"nfs_status": NFS3_STATUS.get(u.u32(), "?")}
    if u.u32():
        u.fixed(24)
    if u.u32():
        attrs = u.fixed(84)
        out["obj.size"] = struct.unpack_from(">Q", attrs, 20)[0]
        out["obj.mode"] = "%o" % struct.unpack_from(">I", attrs, 4)[0]
    return out


# ---- every NFSv3 and MOUNTv3 procedure (RFC 1813) ---------------------------

# argument encoders

def sattr3(mode=None, uid=None, gid=None, size=None):
    """sattr3 setting the fields given; atime and mtime DONT_CHANGE."""
    p = Packer()
    for v in (mode, uid, gid):
        p.boolean(v is not None)
        if v is not None:
            p.u32(v)
    p.boolean(size is not None)
    if size is not None:
        p.u64(size)
    p.u32(0).u32(0)
    return p.bytes()


def setattr_args(fh, mode=None, uid=None, gid=None, size=None):
    """SETATTR3args without a ctime guard."""
    return Packer().opaque(fh).raw(sattr3(mode, uid, gid, size)).boolean(False).bytes()


def access_args(fh, mask):
    return Packer().opaque(fh).u32(mask).bytes()


def readlink_args(fh):
    return fh3(fh)


def mkdir_args(dirfh, name, mode=0o755):
    return diropargs3(dirfh, name) + sattr3(mode)


def symlink_args(dirfh, name, target, mode=None):
    t = target.encode() if isinstance(target, str) else target
    return diropargs3(dirfh, name) + sattr3(mode) + Packer().opaque(t).bytes()


def mknod_args(dirfh, name, ftype, mode=0o644, spec=(0, 0)):
    """MKNOD3args: a device (NF3CHR, NF3BLK) gets sattr3 and spec (major,
    minor), a NF3SOCK or NF3FIFO sattr3 only, any other type nothing."""
    p = Packer().raw(diropargs3(dirfh, name)).u32(ftype)
    if ftype in (NF3CHR, NF3BLK):
        p.raw(sattr3(mode)).u32(spec[0]).u32(spec[1])
    elif ftype in (NF3SOCK, NF3FIFO):
        p.raw(sattr3(mode))
    return p.bytes()


def rmdir_args(dirfh, name):
    return diropargs3(dirfh, name)


def rename_args(fromdir, fromname, todir, toname):
    return diropargs3(fromdir, fromname) + diropargs3(todir, toname)


def link_args(fh, dirfh, name):
    return fh3(fh) + diropargs3(dirfh, name)


def readdir_args(fh, cookie=0, verf=b"\0" * 8, count=4096):
    return Packer().opaque(fh).u64(cookie).fixed(verf).u32(count).bytes()


def readdirplus_args(fh, cookie=0, verf=b"\0" * 8, dircount=4096, maxcount=16384):
    return Packer().opaque(fh).u64(cookie).fixed(verf).u32(dircount).u32(maxcount).bytes()


def commit_args(fh, offset=0, count=0):
    return Packer().opaque(fh).u64(offset).u32(count).bytes()


def dirpath_args(path):
    return Packer().opaque(path.encode()).bytes()


# result decoders: every field, by name

FATTR3_ATIME, FATTR3_CTIME = 60, 76     # offsets of nfstime3 fields in fattr3


def printable(data):
    """Bytes as one line of text: printable ASCII as is, others as \\xNN."""
    return "".join(chr(b) if 32 <= b < 127 and b != 0x5c else "\\x%02x" % b for b in data)


class ResultDecoder:
    """Decodes one result body into `out` (key -> printable value, in reply
    order) and notes in `masked` the (offset, length) spans that two correct
    replies to the same call may differ in: the atime and ctime of every
    fattr3, and what a caller adds with mask()."""

    def __init__(self, body):
        self.u = Unpacker(body)
        self.body = body
        self.out = {}
        self.masked = []

    def put(self, key, value):
        self.out[key] = value

    def mask(self, offset, length):
        self.masked.append((offset, length))

    def status(self, key="nfs_status", names=NFS3_STATUS):
        v = self.u.u32()
        self.put(key, names.get(v, str(v)))
        return v == 0

    def u32(self, key, fmt="%d"):
        v = self.u.u32()
        self.put(key, fmt % v)
        return v

    def u64(self, key):
        v = self.u.u64()
        self.put(key, v)
        return v

    def boolean(self, key):
        v = self.u.u32()
        self.put(key, "true" if v else "false")
        return v

    def nfstime3(self, key):
        self.put(key, "%d.%09d" % (self.u.u32(), self.u.u32()))

    def verf(self, key):
        self.put(key, self.u.fixed(8).hex())

    def string(self, key, maxlen=None):
        v = printable(self.u.opaque(maxlen))
        self.put(key, v)
        return v

    def fh(self, key):
        self.put(key, self.u.opaque(64).hex())

    def fattr3(self, prefix=""):
        start = self.u.pos
        t = self.u.u32()
        self.put(prefix + "type", FTYPE3.get(t, str(t)))
        self.u32(prefix + "mode", "%o")
        for k in ("nlink", "uid", "gid"):
            self.u32(prefix + k)
        self.u64(prefix + "size")
        self.u64(prefix + "used")
        self.put(prefix + "rdev", "%d,%d" % (self.u.u32(), self.u.u32()))
        self.u64(prefix + "fsid")
        self.u64(prefix + "fileid")
        for k in ("atime", "mtime", "ctime"):
            self.nfstime3(prefix + k)
        self.mask(start + FATTR3_ATIME, 8)
        self.mask(start + FATTR3_CTIME, 8)

    def post_op_attr(self, prefix):
        if self.boolean(prefix + "attributes"):
            self.fattr3(prefix)

    def post_op_fh3(self, key):
        if self.u.u32():
            self.fh(key)

    def wcc_data(self, prefix):
        if self.boolean(prefix + "before"):
            self.u64(prefix + "before.size")
            self.nfstime3(prefix + "before.mtime")
            self.nfstime3(prefix + "before.ctime")
        self.post_op_attr(prefix)

    def dirlist(self, plus):
        names = []
        n = 0
        while self.u.u32():
            n += 1
            k = "entry.%d." % n
            self.u64(k + "fileid")
            names.append(self.string(k + "name", 255))
            self.u64(k + "cookie")
            if plus:
                self.post_op_attr(k)
                self.post_op_fh3(k + "fh")
        self.put("entries", n)
        self.put("names", " ".join(names))
        self.boolean("eof")

    def result(self):
        """The fields, with `body` (hex) and `body_masked` (hex, the masked
        spans zeroed) at the end."""
        if self.u.remaining():
            raise RpcError("%d bytes after the result" % self.u.remaining())
        masked = bytearray(self.body)
        for off, n in self.masked:
            masked[off:off + n] = b"\0" * n
        self.put("body", self.body.hex())
        self.put("body_masked", bytes(masked).hex())
        return self.out


def _res_void(d):
    pass


def _res_getattr(d):
    if d.status():
        d.fattr3()


def _res_wcc(d):
    """SETATTR, REMOVE, RMDIR: status and the wcc_data of the object."""
    d.status()
    d.wcc_data("obj.")


def _res_lookup(d):
    if d.status():
        d.fh("fh")
        d.post_op_attr("obj.")
    d.post_op_attr("dir.")


def _res_access(d):
    ok = d.status()
    d.post_op_attr("obj.")
    if ok:
        d.u32("access", "%#x")


def _res_readlink(d):
    ok = d.status()
    d.post_op_attr("obj.")
    if ok:
        d.string("target")


def _res_read(d):
    ok = d.status()
    d.post_op_attr("obj.")
    if ok:
        d.u32("count")
        d.boolean("eof")
        data = d.u.opaque()
        d.put("data", printable(data))
        d.put("data_hex", data.hex())


def _res_write(d):
    ok = d.status()
    d.wcc_data("obj.")
    if ok:
        d.u32("count")
        v = d.u.u32()
        d.put("committed", STABLE_HOW.get(v, str(v)))
        d.verf("verf")


def _res_create(d):
    """CREATE, MKDIR, SYMLINK, MKNOD."""
    if d.status():
        d.post_op_fh3("fh")
        d.post_op_attr("obj.")
    d.wcc_data("dir.")


def _res_rename(d):
    d.status()
    d.wcc_data("fromdir.")
    d.wcc_data("todir.")


def _res_link(d):
    d.status()
    d.post_op_attr("obj.")
    d.wcc_data("dir.")


def _res_readdir(d, plus=False):
    ok = d.status()
    d.post_op_attr("dir.")
    if ok:
        d.verf("cookieverf")
        d.dirlist(plus)


def _res_fsstat(d):
    ok = d.status()
    d.post_op_attr("obj.")
    if ok:
        for k in ("tbytes", "fbytes", "abytes", "tfiles", "ffiles", "afiles"):
            d.u64(k)
        d.u32("invarsec")


# the FSINFO fields a proxy may lower to its own transfer limit
FSINFO_CLAMPED = ("rtmax", "rtpref", "wtmax", "wtpref", "dtpref")


def _res_fsinfo(d):
    ok = d.status()
    d.post_op_attr("obj.")
    if ok:
        for k in ("rtmax", "rtpref", "rtmult", "wtmax", "wtpref", "wtmult", "dtpref"):
            if k in FSINFO_CLAMPED:
                d.mask(d.u.pos, 4)
            d.u32(k)
        d.u64("maxfilesize")
        d.nfstime3("time_delta")
        d.u32("properties", "%#x")


def _res_pathconf(d):
    ok = d.status()
    d.post_op_attr("obj.")
    if ok:
        d.u32("linkmax")
        d.u32("name_max")
        for k in ("no_trunc", "chown_restricted", "case_insensitive", "case_preserving"):
            d.boolean(k)


def _res_commit(d):
    ok = d.status()
    d.wcc_data("obj.")
    if ok:
        d.verf("verf")


def _res_mnt(d):
    if d.status("mount_status", MOUNT3_STATUS):
        d.fh("fh")
        n = d.u.u32()
        d.put("auth_flavors", " ".join(str(d.u.u32()) for _ in range(n)))


def _res_dump(d):
    n = 0
    while d.u.u32():
        n += 1
        d.string("mount.%d.hostname" % n, 255)
        d.string("mount.%d.directory" % n, 1024)
    d.put("mounts", n)


def _res_export(d):
    n = 0
    while d.u.u32():
        n += 1
        d.string("export.%d.dir" % n, 1024)
        groups = []
        while d.u.u32():
            groups.append(printable(d.u.opaque(255)))
        d.put("export.%d.groups" % n, " ".join(groups))
    d.put("exports", n)


def decode_result(decoder, body):
    """Run one of the _res_* decoders over `body`: the fields, body and
    body_masked (see ResultDecoder)."""
    d = ResultDecoder(body)
    decoder(d)
    return d.result()


def _hexfh(s):
    return bytes.fromhex(s)


def _stable(s):
    return {v.lower(): k for k, v in STABLE_HOW.items()}[s.lower()]


def _ftype(s):
    return {v[3:].lower(): k for k, v in FTYPE3.items()}[s.lower()]


def _octal(s):
    return int(s, 8)


def _number(s):
    return int(s, 0)


# name -> (program, procedure, [(argument, parser)], encoder, result
# decoder).  The encoder takes the parsed arguments in order.  The names of
# the MOUNT procedures are those of the upstream.calls.* counters.
PROCS = {
    "NULL": (NFS_PROGRAM, NFSPROC3_NULL, [], lambda: b"", _res_void),
    "GETATTR": (NFS_PROGRAM, NFSPROC3_GETATTR, [("FH", _hexfh)], getattr_args, _res_getattr),
    "SETATTR": (NFS_PROGRAM, NFSPROC3_SETATTR, [("FH", _hexfh), ("MODE", _octal)],
                lambda fh, mode: setattr_args(fh, mode=mode), _res_wcc),
    "LOOKUP": (NFS_PROGRAM, NFSPROC3_LOOKUP, [("DIRFH", _hexfh), ("NAME", str)],
               lookup_args, _res_lookup),
    "ACCESS": (NFS_PROGRAM, NFSPROC3_ACCESS, [("FH", _hexfh), ("MASK", _number)],
               access_args, _res_access),
    "READLINK": (NFS_PROGRAM, NFSPROC3_READLINK, [("FH", _hexfh)], readlink_args,
                 _res_readlink),
    "READ": (NFS_PROGRAM, NFSPROC3_READ, [("FH", _hexfh), ("OFFSET", int), ("COUNT", int)],
             read_args, _res_read),
    "WRITE": (NFS_PROGRAM, NFSPROC3_WRITE,
              [("FH", _hexfh), ("OFFSET", int), ("TEXT", str.encode), ("STABLE", _stable)],
              lambda fh, off, data, how: write_args(fh, off, data, stable=how), _res_write),
    "CREATE": (NFS_PROGRAM, NFSPROC3_CREATE,
               [("DIRFH", _hexfh), ("NAME", str), ("MODE", _octal)], create_args, _res_create),
    "MKDIR": (NFS_PROGRAM, NFSPROC3_MKDIR, [("DIRFH", _hexfh), ("NAME", str), ("MODE", _octal)],
              mkdir_args, _res_create),
    "SYMLINK": (NFS_PROGRAM, NFSPROC3_SYMLINK,
                [("DIRFH", _hexfh), ("NAME", str), ("TARGET", str)], symlink_args, _res_create),
    "MKNOD": (NFS_PROGRAM, NFSPROC3_MKNOD,
              [("DIRFH", _hexfh), ("NAME", str), ("TYPE", _ftype), ("MODE", _octal)],
              mknod_args, _res_create),
    "REMOVE": (NFS_PROGRAM, NFSPROC3_REMOVE, [("DIRFH", _hexfh), ("NAME", str)],
               remove_args, _res_wcc),
    "RMDIR": (NFS_PROGRAM, NFSPROC3_RMDIR, [("DIRFH", _hexfh), ("NAME", str)],
              rmdir_args, _res_wcc),
    "RENAME": (NFS_PROGRAM, NFSPROC3_RENAME,
               [("FROMDIRFH", _hexfh), ("FROMNAME", str), ("TODIRFH", _hexfh), ("TONAME", str)],
               rename_args, _res_rename),
    "LINK": (NFS_PROGRAM, NFSPROC3_LINK, [("FH", _hexfh), ("DIRFH", _hexfh), ("NAME", str)],
             link_args, _res_link),
    "READDIR": (NFS_PROGRAM, NFSPROC3_READDIR, [("FH", _hexfh), ("COUNT", int)],
                lambda fh, count: readdir_args(fh, count=count), _res_readdir),
    "READDIRPLUS": (NFS_PROGRAM, NFSPROC3_READDIRPLUS,
                    [("FH", _hexfh), ("DIRCOUNT", int), ("MAXCOUNT", int)],
                    lambda fh, dc, mc: readdirplus_args(fh, dircount=dc, maxcount=mc),
                    lambda d: _res_readdir(d, plus=True)),
    "FSSTAT": (NFS_PROGRAM, NFSPROC3_FSSTAT, [("FH", _hexfh)], fh3, _res_fsstat),
    "FSINFO": (NFS_PROGRAM, NFSPROC3_FSINFO, [("FH", _hexfh)], fh3, _res_fsinfo),
    "PATHCONF": (NFS_PROGRAM, NFSPROC3_PATHCONF, [("FH", _hexfh)], fh3, _res_pathconf),
    "COMMIT": (NFS_PROGRAM, NFSPROC3_COMMIT, [("FH", _hexfh), ("OFFSET", int), ("COUNT", int)],
               commit_args, _res_commit),
    "MOUNT_NULL": (MOUNT_PROGRAM, MOUNTPROC3_NULL, [], lambda: b"", _res_void),
    "MNT": (MOUNT_PROGRAM, MOUNTPROC3_MNT, [("PATH", str)], dirpath_args, _res_mnt),
    "DUMP": (MOUNT_PROGRAM, MOUNTPROC3_DUMP, [], lambda: b"", _res_dump),
    "UMNT": (MOUNT_PROGRAM, MOUNTPROC3_UMNT, [("PATH", str)], dirpath_args, _res_void),
    "UMNTALL": (MOUNT_PROGRAM, MOUNTPROC3_UMNTALL, [], lambda: b"", _res_void),
    "EXPORT": (MOUNT_PROGRAM, MOUNTPROC3_EXPORT, [], lambda: b"", _res_export),
}


# ---- malformed input --------------------------------------------------------

def _hdr(xid, prog=NFS_PROGRAM, vers=NFS_V3, proc=NFSPROC3_NULL, **kw):
    return call_header(xid, prog, vers, proc, **kw)


def _bad_garbage_unframed(ctx, xid):
    # "GET " read as a record mark: a 1.1 GB non-last fragment
    return b"GET / HTTP/1.1\r\nHost: nfs\r\n\r\n", False


def _bad_garbage_record(ctx, xid):
    rnd = random.Random(5531)
    body = struct.pack(">II", xid, 0x41414141) + bytes(rnd.randrange(256) for _ in range(56))
    return record(body), False


def _bad_short_record(ctx, xid):
    return record(b"\x01\x02\x03"), False


def _bad_frag_2g(ctx, xid):
    return struct.pack(">I", 0xffffffff) + _hdr(xid), False


def _bad_frag_2g_nonlast(ctx, xid):
    return struct.pack(">I", 0x7fffffff) + _hdr(xid), False


def _bad_truncated_header(ctx, xid):
    return record(_hdr(xid, proc=NFSPROC3_GETATTR)[:24]), True


def _bad_truncated_cred(ctx, xid):
    return record(_hdr(xid, proc=NFSPROC3_GETATTR)[:36]), True


def _bad_prog_unavail(ctx, xid):
    return record(_hdr(xid, prog=100099, vers=1)), True


def _bad_nfs_v4(ctx, xid):
    return record(_hdr(xid, vers=4)), True


def _bad_nfs_v2(ctx, xid):
    return record(_hdr(xid, vers=2)), True


def _bad_mount_v1(ctx, xid):
    return record(_hdr(xid, prog=MOUNT_PROGRAM, vers=1)), True


def _bad_proc_99(ctx, xid):
    return record(_hdr(xid, proc=99) + fh3(ctx["fh"])), True


def _bad_mount_proc_99(ctx, xid):
    return record(_hdr(xid, prog=MOUNT_PROGRAM, vers=MOUNT_V3, proc=99)), True


def _bad_rpcvers_3(ctx, xid):
    return record(_hdr(xid, rpcvers=3)), True


def _bad_auth_dh(ctx, xid):
    # authdh_fullname: netname, conversation key, window, verifier fields
    cred = Packer().u32(0).opaque(b"unix.0@example").fixed(b"\x11" * 8).u32(60).bytes()
    return record(_hdr(xid, proc=NFSPROC3_GETATTR, cred_flavor=AUTH_DH, cred_body=cred,
                       verf_flavor=AUTH_DH, verf_body=b"\x22" * 12) + fh3(ctx["fh"])), True


def _bad_write_overlong(ctx, xid):
    args = write_args(ctx["fh"], 0, b"x" * 100, count=4096, declared=4096)
    return record(_hdr(xid, proc=NFSPROC3_WRITE) + args), True


def _bad_write_2g(ctx, xid):
    args = write_args(ctx["fh"], 0, b"x" * 100, count=0x7fffffff, declared=0x7fffffff)
    return record(_hdr(xid, proc=NFSPROC3_WRITE) + args), True


def _bad_lookup_name_300(ctx, xid):
    return record(_hdr(xid, proc=NFSPROC3_LOOKUP) + lookup_args(ctx["fh"], "n" * 300)), True


def _bad_lookup_name_1100(ctx, xid):
    return record(_hdr(xid, proc=NFSPROC3_LOOKUP) + lookup_args(ctx["fh"], "n" * 1100)), True


def _bad_lookup_name_wrap(ctx, xid):
    args = Packer().opaque(ctx["fh"]).opaque(b"abcd", declared=0xfffffffc).bytes()
    return record(_hdr(xid, proc=NFSPROC3_LOOKUP) + args), True


def _bad_lookup_fh_65(ctx, xid):
    fh = (ctx["fh"] + b"\0" * 65)[:65]
    return record(_hdr(xid, proc=NFSPROC3_LOOKUP) + lookup_args(fh, "x")), True


def _good_fragmented(ctx, xid):
    # a valid GETATTR in 5 fragments, the first one empty: a positive control
    payload = _hdr(xid, proc=NFSPROC3_GETATTR) + fh3(ctx["fh"])
    return struct.pack(">I", 0) + record(payload, 4), True


def _good_fragmented_unaligned(ctx, xid):
    # the same in fragments of 7 bytes (RFC 5531 allows any fragment length)
    payload = _hdr(xid, proc=NFSPROC3_GETATTR) + fh3(ctx["fh"])
    return record(payload, -(-len(payload) // 7), align=7), True


# name -> (builder, description).  The builder returns (bytes to send,
# whether the xid of the case can be answered).
BAD_CASES = {
    "garbage_unframed": (_bad_garbage_unframed, "HTTP request bytes"),
    "garbage_record": (_bad_garbage_record, "a record of garbage (msg type 0x41414141)"),
    "short_record": (_bad_short_record, "a 3-byte record"),
    "frag_2g": (_bad_frag_2g, "last fragment of 2^31-1 bytes"),
    "frag_2g_nonlast": (_bad_frag_2g_nonlast, "non-last fragment of 2^31-1 bytes"),
    "truncated_header": (_bad_truncated_header, "call cut after the procedure number"),
    "truncated_cred": (_bad_truncated_cred, "call cut inside the AUTH_SYS credential"),
    "prog_unavail": (_bad_prog_unavail, "program 100099"),
    "nfs_v4": (_bad_nfs_v4, "NFS version 4"),
    "nfs_v2": (_bad_nfs_v2, "NFS version 2"),
    "mount_v1": (_bad_mount_v1, "MOUNT version 1"),
    "proc_99": (_bad_proc_99, "NFSv3 procedure 99"),
    "mount_proc_99": (_bad_mount_proc_99, "MOUNTv3 procedure 99"),
    "rpcvers_3": (_bad_rpcvers_3, "RPC version 3"),
    "auth_dh": (_bad_auth_dh, "AUTH_DH credential"),
    "write_overlong": (_bad_write_overlong, "WRITE declaring 4096 data bytes, 100 sent"),
    "write_2g": (_bad_write_2g, "WRITE declaring 2^31-1 data bytes, 100 sent"),
    "lookup_name_300": (_bad_lookup_name_300, "LOOKUP of a 300-byte name (the upstream's NAMETOOLONG)"),
    "lookup_name_1100": (_bad_lookup_name_1100, "LOOKUP of a 1100-byte name"),
    "lookup_name_wrap": (_bad_lookup_name_wrap, "LOOKUP name length 0xfffffffc"),
    "lookup_fh_65": (_bad_lookup_fh_65, "LOOKUP in a 65-byte file handle"),
    "fragmented": (_good_fragmented, "valid GETATTR in 5 fragments (control)"),
    "fragmented_unaligned": (_good_fragmented_unaligned,
                             "valid GETATTR in 7-byte fragments (control)"),
}


def run_bad_case(args, name, bystander, fh, out):
    """One case: a fresh connection gets the bad bytes; its outcome is
    `reply <summary>`, `closed` or `silent`; then the bystander calls NULL and
    GETATTR, and a connection that replied is asked for NULL once more."""
    builder, _ = BAD_CASES[name]
    xid = random.randrange(1, 1 << 31)
    data, answerable = builder({"fh": fh}, xid)
    result, same_null = "", "n/a"
    try:
        c = Conn(args.host, args.port, args.timeout, uid=args.uid, gid=args.gid)
    except RpcError as e:
        out.append(("%s.result" % name, "connect failed: %s" % e))
        c = None
    if c:
        try:
            c.send_raw(data)
            # a case with no answerable xid is given less time to stay silent
            rep = c.recv_reply(timeout=args.timeout if answerable else args.silent_wait)
            result = rep.summary()
            if rep.xid != xid:
                result += " xid-mismatch"
        except Closed:
            result = "closed"
        except Timeout:
            result = "silent"
        except RpcError as e:
            result = "bad-reply %s" % e
        if result.startswith(("accepted", "denied")):
            try:
                same_null = "ok" if c.null(timeout=args.timeout).ok() else "failed"
            except Closed:
                same_null = "closed"
            except Timeout:
                same_null = "silent"
            except RpcError as e:
                same_null = "error %s" % e
        c.close()
        out.append(("%s.result" % name, result))
    out.append(("%s.same_conn_null" % name, same_null))
    try:
        r = bystander.null(timeout=args.timeout)
        out.append(("%s.bystander_null" % name, "ok" if r.ok() else r.summary()))
    except RpcError as e:
        out.append(("%s.bystander_null" % name, "error %s" % e))
    try:
        rep, st = bystander.nfs(NFSPROC3_GETATTR, getattr_args(fh), timeout=args.timeout)
        out.append(("%s.bystander_getattr" % name, st if rep.ok() else rep.summary()))
    except RpcError as e:
        out.append(("%s.bystander_getattr" % name, "error %s" % e))


def cmd_badinput(args):
    names = args.cases or list(BAD_CASES)
    for n in names:
        if n not in BAD_CASES:
            print("unknown case %s; cases: %s" % (n, " ".join(BAD_CASES)), file=sys.stderr)
            return 2
    mc = Conn(args.host, args.mount_port, args.timeout, uid=args.uid, gid=args.gid)
    st, fh = mc.mnt(args.export)
    mc.close()
    if st != 0:
        print("mount_status: %d" % st)
        return 1
    print("fh: %s" % fh.hex())
    bystander = Conn(args.host, args.port, args.timeout, args.fragments, args.uid, args.gid)
    for n in names:
        out = []
        run_bad_case(args, n, bystander, fh, out)
        for k, v in out:
            print("%s: %s" % (k, v))
        sys.stdout.flush()
    bystander.close()
    return 0


# ---- connections that end in the middle of things ---------------------------

def client(args, port, fragments=None):
    """A Conn to `port` with the credential and source of the command line."""
    return Conn(args.host, port, args.timeout,
                args.fragments if fragments is None else fragments,
                args.uid, args.gid, AUTH_NONE if args.auth == "none" else AUTH_SYS,
                args.src_addr, args.src_port)


def mount_and_lookup(args, name):
    """(root fh, fh of `name` in the root, its size) through the proxy."""
    c = client(args, args.mount_port)
    st, root = c.mnt(args.export)
    c.close()
    if st != 0:
        raise RpcError("MNT %s: status %d" % (args.export, st))
    c = client(args, args.port)
    rep, st = c.nfs(NFSPROC3_LOOKUP, lookup_args(root, name))
    if st != "NFS3_OK":
        raise RpcError("LOOKUP %s: %s" % (name, st or rep.summary()))
    fh = bytes.fromhex(decode_lookup(rep.body)["fh"])
    rep, st = c.nfs(NFSPROC3_GETATTR, getattr_args(fh))
    c.close()
    if st != "NFS3_OK":
        raise RpcError("GETATTR %s: %s" % (name, st or rep.summary()))
    return root, fh, decode_getattr(rep.body)["size"]


def pipelined_calls(c, root, fh, name, size, n):
    """n call records back to back: GETATTR, READ and LOOKUP in turn; the
    READs ask for 1 MiB from offset 0 or 64 KiB at a random page."""
    recs = []
    for i in range(n):
        if i % 3 == 0:
            proc, a = NFSPROC3_GETATTR, getattr_args(fh)
        elif i % 3 == 1:
            if i % 2:
                off, count = 0, 1 << 20
            else:
                off, count = random.randrange(max(1, size >> 12)) << 12, 64 << 10
            proc, a = NFSPROC3_READ, read_args(fh, off, count)
        else:
            proc, a = NFSPROC3_LOOKUP, lookup_args(root, name)
        recs.append(c.build(NFS_PROGRAM, NFS_V3, proc, a)[1])
    return b"".join(recs)


def cmd_teardown(args):
    """Every connection gets its calls, then an RST before any reply is
    read: with --hold, all of them that many seconds later; otherwise odd
    ones at once and even ones once their first reply bytes are there (so
    that the rest of their calls are still being worked on)."""
    if args.root and args.fh:
        root, fh, size = bytes.fromhex(args.root), bytes.fromhex(args.fh), args.size
    else:
        root, fh, size = mount_and_lookup(args, args.name)
    conns = [client(args, args.port) for _ in range(args.conns)]
    for c in conns:
        c.send_raw(pipelined_calls(c, root, fh, args.name, size, args.calls))
    replying = 0
    if args.hold > 0:
        time.sleep(args.hold)
    for i, c in enumerate(conns):
        if i % 2 == 0 and args.hold <= 0:
            r, _, _ = select.select([c.sock], [], [], args.timeout)
            replying += bool(r)
        c.reset()
    print("conns: %d" % len(conns))
    print("calls_sent: %d" % (len(conns) * args.calls))
    print("reset_while_replying: %d" % replying)
    return 0


def bystander_null(c):
    try:
        rep = c.null()
        return "ok" if rep.ok() else rep.summary()
    except RpcError as e:
        return "error %s" % e


def end_conn(c, reset):
    """Whether a reply came before the end (`reply` or `none`), then close."""
    r, _, _ = select.select([c.sock], [], [], 0.2)
    if reset:
        c.reset()
    else:
        c.close()
    return "reply" if r else "none"


def cmd_partial(args):
    _, fh, _ = mount_and_lookup(args, args.name)
    watch = client(args, args.port)
    out = []

    c = client(args, args.port)
    c.send_raw(struct.pack(">I", LAST_FRAGMENT | 200)[:2])
    out.append(("half_mark.early_reply", end_conn(c, args.reset)))
    out.append(("half_mark.bystander_null", bystander_null(watch)))

    c = client(args, args.port)
    rec = c.build(NFS_PROGRAM, NFS_V3, NFSPROC3_GETATTR, getattr_args(fh))[1]
    c.send_raw(rec[:len(rec) // 2])
    out.append(("half_record.early_reply", end_conn(c, args.reset)))
    out.append(("half_record.bystander_null", bystander_null(watch)))

    # a 1 MiB WRITE (UNSTABLE, bytes unlike the file's) that never ends
    c = client(args, args.port)
    data = bytes((i * 7 + 1) & 0xff for i in range(256)) * 4096
    rec = c.build(NFS_PROGRAM, NFS_V3, NFSPROC3_WRITE,
                  write_args(fh, 0, data, stable=UNSTABLE))[1]
    stop = int(len(rec) * args.fraction)
    pos = pieces = nulls_ok = nulls_failed = 0
    while pos < stop:
        piece = rec[pos:min(pos + args.piece, stop)]
        c.send_raw(piece)
        pos += len(piece)
        pieces += 1
        if pieces % 50 == 0:
            if bystander_null(watch) == "ok":
                nulls_ok += 1
            else:
                nulls_failed += 1
        time.sleep(args.pause_ms / 1000.0)
    out.append(("slow_write.record_bytes", len(rec)))
    out.append(("slow_write.sent_bytes", pos))
    out.append(("slow_write.pieces", pieces))
    out.append(("slow_write.bystander_ok", nulls_ok))
    out.append(("slow_write.bystander_failed", nulls_failed))
    out.append(("slow_write.early_reply", end_conn(c, args.reset)))
    out.append(("slow_write.bystander_null", bystander_null(watch)))
    watch.close()
    for k, v in out:
        print("%s: %s" % (k, v))
    return 0


def cmd_probe(args):
    c = client(args, args.port)
    print("src_port: %d" % c.src_port())
    try:
        result = "reply " + c.null().summary()
    except Closed:
        result = "closed"
    except Timeout:
        result = "silent"
    c.close()
    print("result: %s" % result)
    return 0


def cmd_exports(args):
    c = client(args, args.mount_port)
    ex = c.exports()
    c.close()
    print("export_count: %d" % len(ex))
    for i, (d, groups) in enumerate(ex, 1):
        print("export.%d: %s%s" % (i, d, " " + ",".join(groups) if groups else ""))
    return 0


# ---- pipelined workloads: W1 and whole-file writes ---------------------------

PROC_NAMES = {proc: name for name, (prog, proc, _, _, _) in PROCS.items()
              if prog == NFS_PROGRAM}


def write3res(body):
    """WRITE3res: (status name, count, committed, verifier); the last three
    None unless NFS3_OK."""
    u = Unpacker(body)
    v = u.u32()
    st = NFS3_STATUS.get(v, str(v))
    skip_wcc_data(u)
    if v != 0:
        return st, None, None, None
    return st, u.u32(), u.u32(), u.fixed(8)


def read3res(body):
    """READ3res: (status name, data, eof); data None unless NFS3_OK."""
    u = Unpacker(body)
    v = u.u32()
    st = NFS3_STATUS.get(v, str(v))
    skip_post_op_attr(u)
    if v != 0:
        return st, None, None
    count, eof = u.u32(), u.u32()
    data = u.opaque()
    if len(data) != count:
        raise RpcError("READ reply: count %d, %d data bytes" % (count, len(data)))
    return st, data, bool(eof)


def commit3res(body):
    """COMMIT3res: (status name, verifier or None)."""
    u = Unpacker(body)
    v = u.u32()
    skip_wcc_data(u)
    return NFS3_STATUS.get(v, str(v)), (u.fixed(8) if v == 0 else None)


class Pipeline:
    """NFSv3 calls on one connection with up to `depth` of them in flight.
    Replies may come in any order; each goes to on_reply(tag, Reply).  A
    reply that is not an accepted SUCCESS, or whose xid no call in flight
    has, raises RpcError; so does a wait longer than the connection's
    timeout."""

    def __init__(self, conn, depth, on_reply):
        self.c = conn
        self.depth = max(1, depth)
        self.on_reply = on_reply
        self.inflight = {}          # xid -> (procedure, tag)

    def send(self, proc, args, tag):
        while len(self.inflight) >= self.depth:
            self.wait_one()
        xid, rec = self.c.build(NFS_PROGRAM, NFS_V3, proc, args)
        self.inflight[xid] = (proc, tag)
        self.c.send_raw(rec)

    def wait_one(self):
        try:
            rep = self.c.recv_reply()
        except Timeout as e:
            raise Timeout("%s, %d calls in flight" % (e, len(self.inflight))) from e
        if rep.xid not in self.inflight:
            raise RpcError("reply with xid %#x, which no call in flight has" % rep.xid)
        proc, tag = self.inflight.pop(rep.xid)
        if not rep.ok():
            raise RpcError("%s (xid %#x): %s" % (PROC_NAMES.get(proc, proc), rep.xid,
                                                 rep.summary()))
        self.on_reply(tag, rep)

    def drain(self):
        while self.inflight:
            self.wait_one()


def getattr_size(c, fh):
    rep, st = c.nfs(NFSPROC3_GETATTR, getattr_args(fh))
    if st != "NFS3_OK":
        raise RpcError("GETATTR: %s" % (st or rep.summary()))
    return decode_getattr(rep.body)["size"]


def read_whole(c, fh, depth, chunk=65536):
    """The file's bytes, by READs of `chunk` bytes, `depth` in flight."""
    size = getattr_size(c, fh)
    parts = {}

    def on_reply(off, rep):
        st, data, eof = read3res(rep.body)
        if st != "NFS3_OK":
            raise RpcError("READ at %d: %s" % (off, st))
        want = min(chunk, size - off)
        if len(data) != want:
            raise RpcError("READ at %d: %d bytes, %d expected (file of %d bytes)"
                           % (off, len(data), want, size))
        parts[off] = data

    p = Pipeline(c, depth, on_reply)
    for off in range(0, size, chunk):
        p.send(NFSPROC3_READ, read_args(fh, off, min(chunk, size - off)), off)
    p.drain()
    return b"".join(parts[off] for off in sorted(parts))


def commit(c, fh, offset=0, count=0):
    """COMMIT: (status name, verifier or None)."""
    rep, st = c.nfs(NFSPROC3_COMMIT, commit_args(fh, offset, count))
    if st is None:
        raise RpcError("COMMIT: " + rep.summary())
    return commit3res(rep.body)


def partial_report(fn):
    """A workload command fn(args, out) that fills `out` as it goes: on a
    transport failure what it has so far is printed, then error_phase,
    error_answered (calls answered in that phase) and error."""
    def run(args):
        out = {"_phase": "start", "_answered": 0}
        try:
            return fn(args, out)
        except RpcError as e:
            print_out(out)
            print("error_phase: %s" % out["_phase"])
            print("error_answered: %d" % out["_answered"])
            print("error: %s" % e)
            return 1
    return run


def print_out(out):
    for k, v in out.items():
        if not k.startswith("_"):
            print("%s: %s" % (k, v))


def phase(out, name):
    out["_phase"], out["_answered"] = name, 0


def _report_errors(out, kind, st):
    """KIND_errors and first_KIND_error of a pipelined phase."""
    out[kind + "_errors"] = st["errors"]
    if st["first_error"]:
        out["first_%s_error" % kind] = st["first_error"]


@partial_report
def cmd_w1(args, out):
    """Random block-aligned WRITEs, then random block-aligned READs checked
    against a model of the file, then COMMIT."""
    fh = bytes.fromhex(args.fh)
    c = client(args, args.port)
    phase(out, "model")
    if args.model:
        with open(args.model, "rb") as f:
            model = bytearray(f.read())
        known = False
    else:
        model = bytearray(read_whole(c, fh, args.depth))
        known = True
    size = args.size if args.size is not None else len(model)
    nblocks = size // args.block
    if nblocks < 1 or args.block < 1:
        print("w1: no whole block of %d bytes in %d bytes" % (args.block, size), file=sys.stderr)
        return 2
    rnd = random.Random(args.seed)
    how = _stable(args.stable)

    # writes; never two in flight to the same block, so that the model's
    # order is the server's
    w = {"errors": 0, "first_error": None, "verfs": [], "short": 0}
    busy = set()

    def on_write(b, rep):
        busy.discard(b)
        out["_answered"] += 1
        st, count, _, verf = write3res(rep.body)
        if st != "NFS3_OK":
            w["errors"] += 1
            w["first_error"] = w["first_error"] or "%s at %d" % (st, b * args.block)
            return
        if count != args.block:
            w["errors"] += 1
            w["short"] += 1
            w["first_error"] = w["first_error"] or "count %d at %d" % (count, b * args.block)
        if verf not in w["verfs"]:
            w["verfs"].append(verf)

    written = set()
    phase(out, "writes")
    p = Pipeline(c, args.depth, on_write)
    t0 = time.monotonic()
    for _ in range(args.writes):
        b = rnd.randrange(nblocks)
        while b in busy:
            p.wait_one()
        data = rnd.randbytes(args.block)
        off = b * args.block
        if off + len(data) > len(model):
            model.extend(b"\0" * (off + len(data) - len(model)))
        model[off:off + len(data)] = data
        written.add(b)
        busy.add(b)
        p.send(NFSPROC3_WRITE, write_args(fh, off, data, stable=how), b)
    p.drain()
    write_ms = (time.monotonic() - t0) * 1000
    out["writes"] = args.writes
    _report_errors(out, "write", w)
    out["written_blocks"] = len(written)
    out["written_runs"] = sum(1 for b in written if b - 1 not in written)
    out["write_verfs"] = len(w["verfs"])
    out["verf"] = w["verfs"][0].hex() if w["verfs"] else "none"
    out["write_ms"] = "%.0f" % write_ms

    # reads, each compared with the model
    r = {"errors": 0, "first_error": None, "mismatches": 0, "first_mismatch": None}

    def on_read(tag, rep):
        off, want, was_written = tag
        out["_answered"] += 1
        st, data, _ = read3res(rep.body)
        if st != "NFS3_OK":
            r["errors"] += 1
            r["first_error"] = r["first_error"] or "%s at %d" % (st, off)
            return
        if not was_written:     # a cache fetched it (bytes written are there)
            read_blocks.add(off // args.block)
            read_pages.add(off // args.page)
        if data != want:
            r["mismatches"] += 1
            if r["first_mismatch"] is None:
                n = next((i for i in range(min(len(data), len(want))) if data[i] != want[i]),
                         min(len(data), len(want)))
                r["first_mismatch"] = "at %d (+%d): %d bytes, %d expected" % (
                    off, n, len(data), len(want))

    # blocks and pages of blocks not written whose READ was answered (before
    # a READ is sent)
    read_blocks, read_pages = set(), set()
    cold = cold_pages = written_reads = 0
    phase(out, "reads")
    p = Pipeline(c, args.depth, on_read)
    t0 = time.monotonic()
    for _ in range(args.reads):
        b = rnd.randrange(nblocks)
        off = b * args.block
        was_written = b in written
        if was_written:
            written_reads += 1
        elif not known:
            cold += b not in read_blocks
            cold_pages += off // args.page not in read_pages
        p.send(NFSPROC3_READ, read_args(fh, off, args.block),
               (off, bytes(model[off:off + args.block]), was_written))
    p.drain()
    read_ms = (time.monotonic() - t0) * 1000
    out["reads"] = args.reads
    _report_errors(out, "read", r)
    out["mismatches"] = r["mismatches"]
    if r["first_mismatch"]:
        out["first_mismatch"] = r["first_mismatch"]
    out["read_ms"] = "%.0f" % read_ms
    out["written_reads"] = written_reads
    out["cold_reads"] = cold
    out["cold_page_reads"] = cold_pages

    if args.model_out:
        with open(args.model_out, "wb") as f:
            f.write(model)
    if not args.no_commit:
        phase(out, "commit")
        st, verf = commit(c, fh)
        out["commit_status"] = st
        out["commit_verf"] = verf.hex() if verf else "none"
    c.close()
    print_out(out)
    return 0


@partial_report
def cmd_writefile(args, out):
    """FILE's bytes in WRITEs of --chunk bytes, then COMMIT; the chunks whose
    WRITE verifier differs from the COMMIT's are sent again, and COMMIT
    again, for at most --rounds rounds."""
    fh = bytes.fromhex(args.fh)
    with open(args.file, "rb") as f:
        data = f.read()
    if args.chunk < 1:
        print("writefile: --chunk must be positive", file=sys.stderr)
        return 2
    how = _stable(args.stable)
    chunks = list(range(0, len(data), args.chunk))
    c = client(args, args.port)
    seen = []               # distinct verifiers, in the order seen
    state = {}              # chunk offset -> (committed, verifier) of its last WRITE
    errors = []

    def on_write(off, rep):
        out["_answered"] += 1
        st, count, committed, verf = write3res(rep.body)
        want = min(args.chunk, len(data) - off)
        if st != "NFS3_OK" or count != want:
            errors.append("%s at %d" % (st if st != "NFS3_OK" else "count %d of %d" % (count, want),
                                        args.offset + off))
            return
        state[off] = (committed, verf)
        if verf not in seen:
            seen.append(verf)

    todo, rounds, resends, sent = chunks, 0, 0, 0
    commit_status, commit_verf = "not sent", None
    while todo and rounds < max(1, args.rounds) or rounds == 0:
        rounds += 1
        out["rounds"] = rounds
        if rounds > 1:
            resends += len(todo)
        phase(out, "writes, round %d" % rounds)
        p = Pipeline(c, args.depth, on_write)
        for off in todo:
            p.send(NFSPROC3_WRITE, write_args(fh, args.offset + off,
                                              data[off:off + args.chunk], stable=how), off)
            sent += 1
        p.drain()
        if errors or args.no_commit:
            break
        phase(out, "commit, round %d" % rounds)
        commit_status, commit_verf = commit(c, fh)
        if commit_status != "NFS3_OK":
            break
        todo = [off for off in chunks
                if state[off][0] != FILE_SYNC and state[off][1] != commit_verf]
    c.close()
    out["rounds"] = rounds
    out["writes"] = sent
    out["resends"] = resends
    out["write_errors"] = len(errors)
    if errors:
        out["first_write_error"] = errors[0]
    out["verfs"] = ",".join(v.hex() for v in seen) or "none"
    out["verf"] = seen[0].hex() if seen else "none"
    out["commit_status"] = commit_status
    out["commit_verf"] = commit_verf.hex() if commit_verf else "none"
    out["unmatched"] = len(todo) if commit_status == "NFS3_OK" else "n/a"
    print_out(out)
    return 0


@partial_report
def cmd_readmany(args, out):
    """LOOKUP --count names PREFIX%0Nd (from --first) in the directory FH,
    then one READ of --read-size bytes from offset 0 of each, --depth calls
    in flight on one connection."""
    dirfh = bytes.fromhex(args.fh)
    names = [args.prefix + "%0*d" % (args.digits, i)
             for i in range(args.first, args.first + args.count)]
    c = client(args, args.port)
    fhs = {}
    errs = {"lookup": [], "read": []}

    def on_lookup(name, rep):
        out["_answered"] += 1
        d = decode_lookup(rep.body)
        if d["nfs_status"] != "NFS3_OK":
            errs["lookup"].append("%s: %s" % (name, d["nfs_status"]))
            return
        fhs[name] = bytes.fromhex(d["fh"])

    phase(out, "lookups")
    t0 = time.monotonic()
    p = Pipeline(c, args.depth, on_lookup)
    for name in names:
        p.send(NFSPROC3_LOOKUP, lookup_args(dirfh, name), name)
    p.drain()
    out["lookup_ms"] = "%.0f" % ((time.monotonic() - t0) * 1000)
    datas = {}

    def on_read(name, rep):
        out["_answered"] += 1
        st, data, eof = read3res(rep.body)
        if st != "NFS3_OK":
            errs["read"].append("%s: %s" % (name, st))
            return
        if not eof:
            errs["read"].append("%s: no eof after %d bytes" % (name, len(data)))
        datas[name] = data

    phase(out, "reads")
    t0 = time.monotonic()
    p = Pipeline(c, args.depth, on_read)
    for name in names:
        if name in fhs:
            p.send(NFSPROC3_READ, read_args(fhs[name], 0, args.read_size), name)
    p.drain()
    out["read_ms"] = "%.0f" % ((time.monotonic() - t0) * 1000)
    c.close()
    h = hashlib.md5()
    for name in names:
        h.update(datas.get(name, b""))
    out["files"] = len(names)
    out["lookup_errors"] = len(errs["lookup"])
    out["read_errors"] = len(errs["read"])
    out["reads"] = len(datas)
    out["bytes"] = sum(len(d) for d in datas.values())
    out["md5"] = h.hexdigest()
    for k in ("lookup", "read"):
        if errs[k]:
            out["first_%s_error" % k] = errs[k][0]
    print_out(out)
    return 0


@partial_report
def cmd_getattrloop(args, out):
    """GETATTR of FH back to back (one in flight) for --seconds, or until
    --stop-file exists: count, errors and latencies in ms."""
    import os
    fh = bytes.fromhex(args.fh)
    c = client(args, args.port)
    lat, errors, first, slow = [], 0, None, []
    phase(out, "getattrs")
    t_end = time.monotonic() + args.seconds
    last_check = 0.0
    while True:
        now = time.monotonic()
        if now >= t_end:
            break
        if args.stop_file and now - last_check >= 0.05:
            last_check = now
            if os.path.exists(args.stop_file):
                break
        wall, t0 = time.time(), time.monotonic()
        rep, st = c.nfs(NFSPROC3_GETATTR, getattr_args(fh))
        ms = (time.monotonic() - t0) * 1000
        lat.append(ms)
        if ms >= args.slow_ms and len(slow) < 20:
            slow.append("%s.%03d+%.0fms" % (time.strftime("%H:%M:%S", time.localtime(wall)),
                                            int(wall * 1000) % 1000, ms))
        out["_answered"] += 1
        if st != "NFS3_OK":
            errors += 1
            first = first or (st or rep.summary())
    c.close()
    lat.sort()
    n = len(lat)
    out["count"] = n
    out["errors"] = errors
    if first:
        out["first_error"] = first
    if n:
        out["max_ms"] = "%.1f" % lat[-1]
        out["p99_ms"] = "%.1f" % lat[min(n - 1, int(n * 0.99))]
        out["p50_ms"] = "%.1f" % lat[n // 2]
        out["mean_ms"] = "%.2f" % (sum(lat) / n)
        out["over_100ms"] = sum(1 for v in lat if v >= 100)
    out["slow"] = " ".join(slow) or "none"
    print_out(out)
    return 0


# ---- the namespace: listings, many LOOKUPs, tree walks -----------------------

ACCESS3_READ, ACCESS3_LOOKUP, ACCESS3_MODIFY = 0x1, 0x2, 0x4
ACCESS3_EXTEND, ACCESS3_DELETE, ACCESS3_EXECUTE = 0x8, 0x10, 0x20


class Listing:
    """What paging through a directory with READDIR or READDIRPLUS gave:
    status (of the last reply: NFS3_OK when the listing ended at eof or at
    --pages), pages (NFS3_OK replies), entries (dicts: fileid, name (bytes),
    cookie and, for READDIRPLUS, attrs and fh, each possibly None), eof,
    verf (the cookie verifier of the last page), max_reply (the largest
    reply body, the READDIR3res or READDIRPLUS3res, in bytes), page_info
    ((entries, body bytes, last cookie, verifier) per page), dir_attrs (of
    the last reply), error (a malformed listing, or None)."""

    def __init__(self):
        self.status, self.pages, self.entries, self.eof = None, 0, [], False
        self.verf, self.max_reply, self.page_info = None, 0, []
        self.dir_attrs, self.error = None, None


def parse_readdir(body, plus):
    """READDIR3res or READDIRPLUS3res: (status name, dir attrs, verifier,
    entries, eof); the last three None unless NFS3_OK.  Bytes after the
    result raise RpcError."""
    u = Unpacker(body)
    v = u.u32()
    st = NFS3_STATUS.get(v, str(v))
    dattrs = unpack_post_op_attr(u)
    if v != 0:
        return st, dattrs, None, None, None
    verf = u.fixed(8)
    entries = []
    while u.u32():
        e = {"fileid": u.u64(), "name": u.opaque(255), "cookie": u.u64(),
             "attrs": None, "fh": None}
        if plus:
            e["attrs"] = unpack_post_op_attr(u)
            if u.u32():
                e["fh"] = u.opaque(64)
        entries.append(e)
    eof = bool(u.u32())
    if u.remaining():
        raise RpcError("%d bytes after the READDIR%s result" % (u.remaining(), "PLUS" if plus else ""))
    return st, dattrs, verf, entries, eof


def list_dir(c, fh, plus, cookie=0, verf=b"\0" * 8, count=4096, dircount=8192,
             maxcount=32768, max_pages=None, calls=None):
    """Page through directory `fh` from `cookie` (with `verf`) with READDIR
    (`count`) or READDIRPLUS (`dircount`, `maxcount`) until eof, an error
    status, or `max_pages` pages: a Listing.  `calls` (a dict) counts the
    calls by procedure name."""
    L = Listing()
    proc = NFSPROC3_READDIRPLUS if plus else NFSPROC3_READDIR
    while True:
        a = (readdirplus_args(fh, cookie, verf, dircount, maxcount) if plus
             else readdir_args(fh, cookie, verf, count))
        rep, st = c.nfs(proc, a)
        if calls is not None:
            name = PROC_NAMES[proc]
            calls[name] = calls.get(name, 0) + 1
        if not rep.ok():
            raise RpcError("READDIR%s: %s" % ("PLUS" if plus else "", rep.summary()))
        L.max_reply = max(L.max_reply, len(rep.body))
        st, L.dir_attrs, pverf, entries, eof = parse_readdir(rep.body, plus)
        L.status = st
        if st != "NFS3_OK":
            break
        L.pages += 1
        L.entries.extend(entries)
        L.verf = pverf
        L.page_info.append((len(entries), len(rep.body),
                            entries[-1]["cookie"] if entries else None, pverf))
        if eof:
            L.eof = True
            break
        if not entries:
            L.error = "page %d: no entry and no eof" % L.pages
            break
        cookie, verf = entries[-1]["cookie"], pverf
        if max_pages is not None and L.pages >= max_pages:
            break
    return L


def cmd_listing(args):
    """readdir / readdirplus FH: the whole listing (from --cookie), paged."""
    plus = args.cmd == "readdirplus"
    c = client(args, args.port)
    verf = bytes.fromhex(args.verf) if args.verf else b"\0" * 8
    if len(verf) != 8:
        print("--verf: 8 bytes in hex", file=sys.stderr)
        return 2
    L = list_dir(c, bytes.fromhex(args.fh), plus, args.cookie, verf, count=args.count,
                 dircount=args.dircount, maxcount=args.maxcount, max_pages=args.pages)
    c.close()
    names = [e["name"] for e in L.entries]
    print("nfs_status: %s" % L.status)
    print("pages: %d" % L.pages)
    print("entries: %d" % len(names))
    print("distinct_names: %d" % len(set(names)))
    print("max_reply: %d" % L.max_reply)
    print("eof: %s" % ("true" if L.eof else "false"))
    if L.error:
        print("listing_error: %s" % L.error)
    print("cookieverf: %s" % (L.verf.hex() if L.verf is not None else "none"))
    if L.dir_attrs:
        print("dir.mtime: %s" % nfstime(L.dir_attrs["mtime"]))
    if plus:
        print("without_attrs: %d" % sum(1 for e in L.entries if e["attrs"] is None))
        print("without_fh: %d" % sum(1 for e in L.entries if e["fh"] is None))
    for i, (n, nbytes, last, pverf) in enumerate(L.page_info, 1):
        print("page.%d: entries=%d bytes=%d last_cookie=%s verf=%s"
              % (i, n, nbytes, last if last is not None else "none", pverf.hex()))
    srt = sorted(names)
    print("names_md5: %s" % hashlib.md5(b"\n".join(srt)).hexdigest())
    if args.names_out:
        with open(args.names_out, "wb") as f:
            for n in names:
                f.write(n + b"\n")
    if args.entries_out:
        with open(args.entries_out, "w") as f:
            for e in L.entries:
                a = e["attrs"]
                f.write("%s %d %d %s %s\n" % (
                    printable(e["name"]), e["fileid"], e["cookie"],
                    e["fh"].hex() if e["fh"] is not None else "-",
                    "%d,%o,%d,%s,%d" % (a["type"], a["mode"], a["size"], nfstime(a["mtime"]),
                                        a["fileid"]) if a else "-"))
    for n in names:
        print("name: %s" % printable(n))
    return 0


@partial_report
def cmd_statmany(args, out):
    """LOOKUP of names in DIRFH, then GETATTR of each handle found, --depth
    calls in flight: one line per name (name, status, handle, type, size,
    fileid, mtime) in --out, and counts."""
    dirfh = bytes.fromhex(args.fh)
    names = list(args.names)
    if args.names_file:
        with open(args.names_file) as f:
            names += [ln.rstrip("\n") for ln in f if ln.rstrip("\n")]
    c = client(args, args.port)
    res = {n: {"lookup": None, "fh": None, "getattr": None, "attrs": None} for n in names}

    def on_lookup(name, rep):
        out["_answered"] += 1
        u = Unpacker(rep.body)
        v = u.u32()
        res[name]["lookup"] = NFS3_STATUS.get(v, str(v))
        if v == 0:
            res[name]["fh"] = u.opaque(64)

    def on_getattr(name, rep):
        out["_answered"] += 1
        u = Unpacker(rep.body)
        v = u.u32()
        res[name]["getattr"] = NFS3_STATUS.get(v, str(v))
        if v == 0:
            res[name]["attrs"] = unpack_fattr3(u)

    phase(out, "lookups")
    t0 = time.monotonic()
    p = Pipeline(c, args.depth, on_lookup)
    for n in names:
        p.send(NFSPROC3_LOOKUP, lookup_args(dirfh, n), n)
    p.drain()
    phase(out, "getattrs")
    p = Pipeline(c, args.depth, on_getattr)
    for n in names:
        if res[n]["fh"] is not None:
            p.send(NFSPROC3_GETATTR, getattr_args(res[n]["fh"]), n)
    p.drain()
    out["ms"] = "%.0f" % ((time.monotonic() - t0) * 1000)
    c.close()
    lines = []
    for n in names:
        r, a = res[n], res[n]["attrs"]
        lines.append("%s %s %s %s %s" % (
            n, r["lookup"], r["fh"].hex() if r["fh"] is not None else "-", r["getattr"] or "-",
            "%d %d %d %s" % (a["type"], a["size"], a["fileid"], nfstime(a["mtime"])) if a else "-"))
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    out["names"] = len(names)
    out["found"] = sum(1 for n in names if res[n]["lookup"] == "NFS3_OK")
    out["noent"] = sum(1 for n in names if res[n]["lookup"] == "NFS3ERR_NOENT")
    out["lookup_errors"] = sum(1 for n in names if res[n]["lookup"] not in ("NFS3_OK", "NFS3ERR_NOENT"))
    out["getattr_errors"] = sum(1 for n in names if res[n]["fh"] is not None and
                                res[n]["getattr"] != "NFS3_OK")
    out["md5"] = hashlib.md5("\n".join(lines).encode()).hexdigest()
    print_out(out)
    return 0


def _sel_attrs(a):
    """The attributes two walks compare: type, mode, size, mtime, fileid."""
    if a is None:
        return None
    return (a["type"], a["mode"], a["size"], a["mtime"], a["fileid"])


@partial_report
def cmd_walk(args, out):
    """A client's walk of the tree under the directory FH on one fresh
    connection: ACCESS and READDIRPLUS (every page) of each directory, then
    for each entry in name order a LOOKUP; a regular file gets ACCESS
    (--file-mask), GETATTR and READs of the whole file; a symbolic link
    READLINK; a directory ACCESS (--dir-mask) and, after the files, its own
    walk.  Prints files, dirs, symlinks, others, bytes, md5 (of every path
    with its type, mode, size, mtime, fileid and its content's md5 or link
    target, in path order), fh_md5 (of every path with its handle), pages,
    max_reply (the largest READDIRPLUS3res, bytes), entries, calls.PROC
    (calls made), attr_mismatches (an entry's READDIRPLUS, LOOKUP and
    GETATTR attributes disagree on the compared ones), fh_mismatches (the
    READDIRPLUS handle is not the LOOKUP's), without_attrs, without_fh
    (READDIRPLUS entries), errors and first_error, ms."""
    root = bytes.fromhex(args.fh)
    c = client(args, args.port)
    calls = {}
    recs = {}       # path -> summary line
    fhs = {}        # path -> handle
    cnt = {"files": 0, "dirs": 0, "symlinks": 0, "others": 0, "bytes": 0, "pages": 0,
           "entries": 0, "max_reply": 0, "attr_mismatches": 0, "fh_mismatches": 0,
           "without_attrs": 0, "without_fh": 0, "errors": 0}
    first = []

    def error(msg):
        cnt["errors"] += 1
        if not first:
            first.append(msg)

    def call(proc, a):
        name = PROC_NAMES[proc]
        calls[name] = calls.get(name, 0) + 1
        out["_answered"] += 1
        rep, st = c.nfs(proc, a)
        if not rep.ok():
            raise RpcError("%s: %s" % (name, rep.summary()))
        return rep, st

    def access(fh, mask, path):
        rep, st = call(NFSPROC3_ACCESS, access_args(fh, mask))
        u = Unpacker(rep.body)
        u.u32()
        unpack_post_op_attr(u)
        if st != "NFS3_OK":
            error("ACCESS %s: %s" % (path or "/", st))
            return 0
        granted = u.u32()
        if granted & ~mask:
            error("ACCESS %s: granted %#x of %#x asked" % (path or "/", granted, mask))
        return granted

    def read_all(fh, path, size):
        h, off, n = hashlib.md5(), 0, 0
        while True:
            rep, st = call(NFSPROC3_READ, read_args(fh, off, args.read_size))
            st, data, eof = read3res(rep.body)
            if st != "NFS3_OK":
                error("READ %s at %d: %s" % (path, off, st))
                return None, n
            h.update(data)
            off += len(data)
            n += len(data)
            if eof:
                break
            if not data:
                error("READ %s at %d: no data and no eof" % (path, off))
                return None, n
        if n != size:
            error("READ %s: %d bytes, GETATTR says %d" % (path, n, size))
        return h.hexdigest(), n

    def record(path, a, content, fh):
        recs[path] = "%s\0%s\0%s\0%s" % (path, _sel_attrs(a), content, "")
        fhs[path] = fh

    def walk_dir(fh, path):
        L = list_dir(c, fh, True, dircount=args.dircount, maxcount=args.maxcount, calls=calls)
        cnt["pages"] += L.pages
        cnt["max_reply"] = max(cnt["max_reply"], L.max_reply)
        if L.status != "NFS3_OK" or L.error or not L.eof:
            error("READDIRPLUS %s: %s%s" % (path or "/", L.status, " " + L.error if L.error else ""))
            return
        seen = set()
        subdirs = []
        for e in sorted(L.entries, key=lambda e: e["name"]):
            name = e["name"]
            if name in (b".", b".."):
                continue
            p = path + "/" + printable(name)
            if name in seen:
                error("READDIRPLUS %s: %s twice" % (path or "/", p))
                continue
            seen.add(name)
            cnt["entries"] += 1
            cnt["without_attrs"] += e["attrs"] is None
            cnt["without_fh"] += e["fh"] is None
            rep, st = call(NFSPROC3_LOOKUP, lookup_args(fh, name))
            if st != "NFS3_OK":
                error("LOOKUP %s: %s" % (p, st))
                continue
            u = Unpacker(rep.body)
            u.u32()
            cfh = u.opaque(64)
            la = unpack_post_op_attr(u)
            if e["fh"] is not None and e["fh"] != cfh:
                cnt["fh_mismatches"] += 1
            known = [x for x in (e["attrs"], la) if x is not None]
            if e["attrs"] is not None and e["attrs"]["fileid"] != e["fileid"]:
                cnt["attr_mismatches"] += 1
            a = la or e["attrs"]
            if a is None:
                rep, st = call(NFSPROC3_GETATTR, getattr_args(cfh))
                if st != "NFS3_OK":
                    error("GETATTR %s: %s" % (p, st))
                    continue
                u = Unpacker(rep.body)
                u.u32()
                a = unpack_fattr3(u)
            if a["type"] == NF3REG:
                cnt["files"] += 1
                access(cfh, args.file_mask, p)
                rep, st = call(NFSPROC3_GETATTR, getattr_args(cfh))
                if st != "NFS3_OK":
                    error("GETATTR %s: %s" % (p, st))
                    continue
                u = Unpacker(rep.body)
                u.u32()
                a = unpack_fattr3(u)
                known.append(a)
                digest, n = read_all(cfh, p, a["size"])
                cnt["bytes"] += n
                record(p, a, digest, cfh)
            elif a["type"] == NF3DIR:
                cnt["dirs"] += 1
                record(p, a, "", cfh)
                subdirs.append((cfh, p))
            elif a["type"] == NF3LNK:
                cnt["symlinks"] += 1
                rep, st = call(NFSPROC3_READLINK, readlink_args(cfh))
                target = None
                if st == "NFS3_OK":
                    u = Unpacker(rep.body)
                    u.u32()
                    unpack_post_op_attr(u)
                    target = printable(u.opaque(4096))
                else:
                    error("READLINK %s: %s" % (p, st))
                record(p, a, target, cfh)
            else:
                cnt["others"] += 1
                record(p, a, "", cfh)
            if len({_sel_attrs(x) for x in known}) > 1:
                cnt["attr_mismatches"] += 1
        for sfh, sp in subdirs:
            access(sfh, args.dir_mask, sp)
            walk_dir(sfh, sp)

    t0 = time.monotonic()
    phase(out, "walk")
    access(root, args.dir_mask, "")
    walk_dir(root, "")
    c.close()
    h, hf = hashlib.md5(), hashlib.md5()
    for path in sorted(recs):
        h.update(recs[path].encode() + b"\n")
        hf.update(path.encode() + b"\0" + fhs[path] + b"\n")
    for k in ("files", "dirs", "symlinks", "others", "bytes"):
        out[k] = cnt[k]
    out["md5"] = h.hexdigest()
    out["fh_md5"] = hf.hexdigest()
    for k in ("pages", "max_reply", "entries", "attr_mismatches", "fh_mismatches",
              "without_attrs", "without_fh", "errors"):
        out[k] = cnt[k]
    if first:
        out["first_error"] = first[0]
    out["calls"] = sum(calls.values())
    for k in sorted(calls):
        out["calls." + k] = calls[k]
    out["ms"] = "%.0f" % ((time.monotonic() - t0) * 1000)
    print_out(out)
    return 0


# ---- command line -----------------------------------------------------------

def print_reply(rep, fields, suffix=""):
    print("xid%s: %#010x" % (suffix, rep.xid))
    print("reply%s: %s" % (suffix, rep.summary()))
    print("reply_sha1%s: %s" % (suffix, rep.sha1()))
    for k, v in fields.items():
        print("%s%s: %s" % (k, suffix, v))


def cmd_call(args):
    """null/getattr/lookup/create/remove/write, with --xid/--repeat/--save."""
    fh = bytes.fromhex(args.fh) if getattr(args, "fh", None) else b""
    if args.cmd == "null":
        proc, a, dec = NFSPROC3_NULL, b"", lambda b: {}
    elif args.cmd == "getattr":
        proc, a, dec = NFSPROC3_GETATTR, getattr_args(fh), decode_getattr
    elif args.cmd == "lookup":
        proc, a, dec = NFSPROC3_LOOKUP, lookup_args(fh, args.name), decode_lookup
    elif args.cmd == "create":
        proc, a, dec = NFSPROC3_CREATE, create_args(fh, args.name), decode_create
    elif args.cmd == "remove":
        proc, a, dec = NFSPROC3_REMOVE, remove_args(fh, args.name), decode_status
    elif args.cmd == "write":
        proc = NFSPROC3_WRITE
        a = write_args(fh, args.offset, args.text.encode())
        dec = decode_write
    elif args.cmd == "pwrite":
        with open(args.file, "rb") as f:
            data = f.read()
        proc = NFSPROC3_WRITE
        a = write_args(fh, args.offset, data, stable=_stable(args.stable))
        dec = decode_pwrite
    elif args.cmd == "read":
        proc, a = NFSPROC3_READ, read_args(fh, args.offset, args.count)
        dec = lambda body: decode_read(body, args.out)
    elif args.cmd == "truncate":
        proc, a, dec = NFSPROC3_SETATTR, setattr_args(fh, size=args.size), decode_setattr
    elif args.cmd == "setattr":
        proc, dec = NFSPROC3_SETATTR, decode_setattr
        a = setattr_args(fh, mode=args.mode, size=args.size)
    elif args.cmd == "commit":
        proc, a, dec = NFSPROC3_COMMIT, commit_args(fh, args.offset, args.count), decode_commit
    elif args.cmd in NS_CMDS:
        proc, build, res = NS_CMDS[args.cmd]
        a = build(fh, args)
        dec = lambda body: decode_result(res, body)
    c = client(args, args.port)
    xid, rec = c.build(NFS_PROGRAM, NFS_V3, proc, a, xid=args.xid)
    if args.save:
        with open(args.save, "wb") as f:
            f.write(rec)
    return send_and_print(c, rec, xid, args.repeat, dec)


# command -> (procedure, arguments from (FH, parsed command line), result
# decoder): every result field printed, as `proc` does
NS_CMDS = {
    "access": (NFSPROC3_ACCESS, lambda fh, a: access_args(fh, _number(a.mask)), _res_access),
    "readlink": (NFSPROC3_READLINK, lambda fh, a: readlink_args(fh), _res_readlink),
    "mkdir": (NFSPROC3_MKDIR, lambda fh, a: mkdir_args(fh, a.name, a.mode), _res_create),
    "symlink": (NFSPROC3_SYMLINK, lambda fh, a: symlink_args(fh, a.name, a.target), _res_create),
    "mknod": (NFSPROC3_MKNOD, lambda fh, a: mknod_args(fh, a.name, _ftype(a.type), a.mode),
              _res_create),
    "rename": (NFSPROC3_RENAME,
               lambda fh, a: rename_args(fh, a.name, bytes.fromhex(a.todir), a.toname),
               _res_rename),
    "link": (NFSPROC3_LINK, lambda fh, a: link_args(fh, bytes.fromhex(a.dir), a.name), _res_link),
    "rmdir": (NFSPROC3_RMDIR, lambda fh, a: rmdir_args(fh, a.name), _res_wcc),
    "fsstat": (NFSPROC3_FSSTAT, lambda fh, a: fh3(fh), _res_fsstat),
    "fsinfo": (NFSPROC3_FSINFO, lambda fh, a: fh3(fh), _res_fsinfo),
    "pathconf": (NFSPROC3_PATHCONF, lambda fh, a: fh3(fh), _res_pathconf),
}


def send_and_print(c, rec, xid, repeat, dec):
    for i in range(1, repeat + 1):
        suffix = "" if i == 1 else ".%d" % i
        try:
            c.send_raw(rec)
            rep = c.recv_reply(xid)
        except RpcError as e:
            print("error%s: %s" % (suffix, e))
            return 1
        fields = dec(rep.body) if rep.ok() else {}
        print_reply(rep, fields, suffix)
    c.close()
    return 0


def cmd_send(args):
    with open(args.file, "rb") as f:
        rec = f.read()
    payload = rec[4:] if len(rec) >= 8 else b""
    xid = struct.unpack_from(">I", payload)[0] if payload else None
    proc = struct.unpack_from(">I", payload, 20)[0] if len(payload) >= 24 else None
    dec = {NFSPROC3_GETATTR: decode_getattr, NFSPROC3_LOOKUP: decode_lookup,
           NFSPROC3_CREATE: decode_create, NFSPROC3_WRITE: decode_write,
           NFSPROC3_REMOVE: decode_status}.get(proc, lambda b: {})
    c = client(args, args.port, fragments=1)
    return send_and_print(c, rec, xid, args.repeat, dec)


def cmd_proc(args):
    """proc NAME ARGS: one call of any procedure in PROCS, every result field
    printed, with --xid/--repeat/--save."""
    name = args.name.upper()
    if name not in PROCS:
        print("unknown procedure %s; procedures: %s" % (args.name, " ".join(PROCS)),
              file=sys.stderr)
        return 2
    prog, proc, spec, enc, dec = PROCS[name]
    usage = "usage: proc %s %s" % (name, " ".join(a for a, _ in spec))
    if len(args.args) != len(spec):
        print(usage, file=sys.stderr)
        return 2
    try:
        vals = [parse(v) for (_, parse), v in zip(spec, args.args)]
    except (ValueError, KeyError) as e:
        print("%s (%s)" % (usage, e), file=sys.stderr)
        return 2
    if prog == NFS_PROGRAM:
        c, vers = client(args, args.port), NFS_V3
    else:
        c, vers = client(args, args.mount_port), MOUNT_V3
    xid, rec = c.build(prog, vers, proc, enc(*vals), xid=args.xid)
    if args.save:
        with open(args.save, "wb") as f:
            f.write(rec)
    return send_and_print(c, rec, xid, args.repeat, lambda body: decode_result(dec, body))


def cmd_mnt(args):
    c = client(args, args.mount_port)
    st, fh = c.mnt(args.export)
    c.close()
    print("mount_status: %d" % st)
    if fh is not None:
        print("fh: %s" % fh.hex())
    return 0


def parse_args(argv):
    ap = argparse.ArgumentParser(description="ONC RPC test client (NFSv3/MOUNTv3)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True, help="NFS port")
    ap.add_argument("--mount-port", type=int, help="MOUNT port (default: --port)")
    ap.add_argument("--export", default="/export")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per wait")
    ap.add_argument("--silent-wait", type=float, default=1.5,
                    help="seconds to wait for a reply that need not come")
    ap.add_argument("--uid", type=int, default=0)
    ap.add_argument("--gid", type=int, default=0)
    ap.add_argument("--auth", choices=("sys", "none"), default="sys",
                    help="credential flavor: AUTH_SYS (--uid/--gid) or AUTH_NONE")
    ap.add_argument("--fragments", type=int, default=1, help="fragments per call record")
    ap.add_argument("--src-addr", help="source address to bind")
    ap.add_argument("--src-port", type=lambda v: v if v == RESERVED else int(v),
                    help="source port to bind, or `reserved`")
    sub = ap.add_subparsers(dest="cmd", required=True)

    def callcmd(name, *pos):
        p = sub.add_parser(name)
        for a in pos:
            if a in ("offset", "count", "size"):
                p.add_argument(a, type=int)
            else:
                p.add_argument(a)
        p.add_argument("--xid", type=lambda s: int(s, 0))
        p.add_argument("--repeat", type=int, default=1)
        p.add_argument("--save")
        p.set_defaults(func=cmd_call)
        return p

    callcmd("null")
    callcmd("getattr", "fh")
    callcmd("lookup", "fh", "name")
    callcmd("create", "fh", "name")
    callcmd("remove", "fh", "name")
    callcmd("write", "fh", "offset", "text")
    p = callcmd("pwrite", "fh", "offset", "file")
    p.add_argument("--stable", default="file_sync", choices=("unstable", "data_sync", "file_sync"))
    p = callcmd("read", "fh", "offset", "count")
    p.add_argument("--out", help="write the data read to this file")
    callcmd("truncate", "fh", "size")
    p = callcmd("setattr", "fh")
    p.add_argument("--mode", type=_octal, help="mode to set (octal)")
    p.add_argument("--size", type=int, help="size to set")
    p = callcmd("commit", "fh")
    p.add_argument("offset", type=int, nargs="?", default=0)
    p.add_argument("count", type=int, nargs="?", default=0)
    callcmd("access", "fh", "mask")
    callcmd("readlink", "fh")
    p = callcmd("mkdir", "fh", "name")
    p.add_argument("--mode", type=_octal, default=0o755, help="mode (octal, default 755)")
    callcmd("symlink", "fh", "name", "target")
    p = callcmd("mknod", "fh", "name", "type")
    p.add_argument("--mode", type=_octal, default=0o644, help="mode (octal, default 644)")
    callcmd("rename", "fh", "name", "todir", "toname")
    p = callcmd("link", "fh", "dir", "name")
    callcmd("rmdir", "fh", "name")
    callcmd("fsstat", "fh")
    callcmd("fsinfo", "fh")
    callcmd("pathconf", "fh")
    for name in ("readdir", "readdirplus"):
        p = sub.add_parser(name)
        p.add_argument("fh")
        p.add_argument("--cookie", type=int, default=0, help="start from this cookie")
        p.add_argument("--verf", help="cookie verifier (16 hex digits) with --cookie")
        p.add_argument("--pages", type=int, help="stop after this many pages")
        p.add_argument("--names-out", help="write the names to this file, one a line")
        p.add_argument("--entries-out", help="write the entries to this file, one a line")
        if name == "readdir":
            p.add_argument("--count", type=int, default=4096)
            p.set_defaults(dircount=None, maxcount=None)
        else:
            p.add_argument("--dircount", type=int, default=8192)
            p.add_argument("--maxcount", type=int, default=32768)
            p.set_defaults(count=None)
        p.set_defaults(func=cmd_listing)
    p = sub.add_parser("statmany")
    p.add_argument("fh", help="directory fh (hex)")
    p.add_argument("names", nargs="*")
    p.add_argument("--names-file", help="more names, one a line")
    p.add_argument("--depth", type=int, default=32, help="calls in flight")
    p.add_argument("--out", help="one line per name: name, LOOKUP status, fh, "
                   "GETATTR status, type size fileid mtime")
    p.set_defaults(func=cmd_statmany)
    p = sub.add_parser("walk")
    p.add_argument("fh", help="directory fh (hex) the walk starts from")
    p.add_argument("--dircount", type=int, default=8192)
    p.add_argument("--maxcount", type=int, default=32768)
    p.add_argument("--read-size", type=int, default=65536, help="bytes per READ")
    p.add_argument("--dir-mask", type=_number, default=0x1f, help="ACCESS mask of directories")
    p.add_argument("--file-mask", type=_number, default=ACCESS3_READ,
                   help="ACCESS mask of regular files")
    p.set_defaults(func=cmd_walk)
    p = sub.add_parser("w1")
    p.add_argument("fh")
    p.add_argument("--size", type=int, help="bytes of the file the blocks are chosen in "
                   "(default: the size of the initial content)")
    p.add_argument("--writes", type=int, default=10000)
    p.add_argument("--reads", type=int, default=5000)
    p.add_argument("--block", type=int, default=1024)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--depth", type=int, default=16, help="calls in flight")
    p.add_argument("--page", type=int, default=4096,
                   help="page size for counting cold reads")
    p.add_argument("--model", help="file holding the initial content (no READs)")
    p.add_argument("--model-out", help="write the final model to this file")
    p.add_argument("--stable", default="unstable", choices=("unstable", "data_sync", "file_sync"))
    p.add_argument("--no-commit", action="store_true", help="end without the COMMIT")
    p.set_defaults(func=cmd_w1)
    p = sub.add_parser("writefile")
    p.add_argument("fh")
    p.add_argument("file")
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--chunk", type=int, default=65536)
    p.add_argument("--depth", type=int, default=8, help="WRITEs in flight")
    p.add_argument("--stable", default="unstable", choices=("unstable", "data_sync", "file_sync"))
    p.add_argument("--rounds", type=int, default=5, help="most rounds of WRITEs and COMMIT")
    p.add_argument("--no-commit", action="store_true", help="one round of WRITEs, no COMMIT")
    p.set_defaults(func=cmd_writefile)
    p = sub.add_parser("readmany")
    p.add_argument("fh", help="directory fh (hex)")
    p.add_argument("--prefix", default="f", help="names are PREFIX and a number")
    p.add_argument("--digits", type=int, default=5, help="digits of the number (zero padded)")
    p.add_argument("--first", type=int, default=0)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--read-size", type=int, default=65536, help="bytes per READ")
    p.add_argument("--depth", type=int, default=32, help="calls in flight")
    p.set_defaults(func=cmd_readmany)
    p = sub.add_parser("getattrloop")
    p.add_argument("fh")
    p.add_argument("--seconds", type=float, default=10.0, help="longest run")
    p.add_argument("--stop-file", help="stop once this file exists")
    p.add_argument("--slow-ms", type=float, default=50,
                   help="calls at least this slow are listed in `slow`")
    p.set_defaults(func=cmd_getattrloop)
    p = sub.add_parser("mnt")
    p.set_defaults(func=cmd_mnt)
    p = sub.add_parser("exports")
    p.set_defaults(func=cmd_exports)
    p = sub.add_parser("probe")
    p.set_defaults(func=cmd_probe)
    p = sub.add_parser("teardown")
    p.add_argument("name")
    p.add_argument("--conns", type=int, default=20)
    p.add_argument("--calls", type=int, default=50, help="calls per connection")
    p.add_argument("--hold", type=float, default=0,
                   help="reset every connection this many seconds after sending")
    p.add_argument("--root", help="root fh (hex): no MNT and LOOKUP, with --fh")
    p.add_argument("--fh", help="fh of NAME (hex), with --root")
    p.add_argument("--size", type=int, default=1 << 20, help="size of NAME, with --fh")
    p.set_defaults(func=cmd_teardown)
    p = sub.add_parser("partial")
    p.add_argument("name")
    p.add_argument("--piece", type=int, default=997, help="bytes per send of the WRITE")
    p.add_argument("--pause-ms", type=float, default=2.0, help="pause between pieces")
    p.add_argument("--fraction", type=float, default=0.5, help="part of the WRITE sent")
    p.add_argument("--reset", action="store_true", help="end with an RST, not a FIN")
    p.set_defaults(func=cmd_partial)
    p = sub.add_parser("send")
    p.add_argument("file")
    p.add_argument("--repeat", type=int, default=1)
    p.set_defaults(func=cmd_send)
    p = sub.add_parser("badinput")
    p.add_argument("cases", nargs="*")
    p.set_defaults(func=cmd_badinput)
    p = sub.add_parser("proc", help="any NFSv3 or MOUNTv3 procedure (see `procs`)")
    p.add_argument("name")
    p.add_argument("args", nargs="*")
    p.add_argument("--xid", type=lambda s: int(s, 0))
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--save")
    p.set_defaults(func=cmd_proc)
    p = sub.add_parser("procs", help="list the procedures of `proc`")
    p.set_defaults(func=lambda a: print("\n".join(" ".join([k] + [n for n, _ in v[2]])
                                                  for k, v in PROCS.items())) or 0)
    p = sub.add_parser("cases", help="list the badinput cases")
    p.set_defaults(func=lambda a: print("\n".join("%s: %s" % (k, v[1])
                                                  for k, v in BAD_CASES.items())) or 0)
    args = ap.parse_args(argv)
    if args.mount_port is None:
        args.mount_port = args.port
    return args


def main(argv):
    args = parse_args(argv)
    try:
        return args.func(args)
    except RpcError as e:
        print("error: %s" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
