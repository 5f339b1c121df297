#!/usr/bin/env python3
"""fault-relay.py: a TCP relay in front of an NFSv3 server that answers
chosen calls with NFS3ERR_JUKEBOX itself or drops the server's replies to
them, for end-to-end tests of how nfscached takes an upstream that is busy
or loses replies.

  fault-relay.py relay LISTEN_PORT TARGET_HOST:PORT CTL_SOCKET LOG
  fault-relay.py ctl CTL_SOCKET COMMAND...

relay: listens on 127.0.0.1:LISTEN_PORT; each connection gets one to TARGET.
Records (RFC 5531 record marking, section 11) are read whole both ways and
passed on whole, so that a reply the relay makes itself never lands inside
one of the server's.  Faults apply to NFS version 3 calls (program 100003)
by procedure, the next N calls of it on any connection:

    jukebox PROC N   answer them NFS3ERR_JUKEBOX (RFC 1813 section 2.6) with
                     empty attributes; the server never sees them
    drop PROC N      pass them on and drop the server's replies
    clear            no faults pending
    counts           "PROC calls C jukebox J dropped D" per procedure seen

PROC is a procedure name (READ, WRITE, COMMIT...).  Each command is answered
with lines ("ok" for the first three).  LOG gets one line per fault:
"jukebox CONN XID PROC" or "drop CONN XID PROC".  SIGTERM exits 0.
ctl: sends COMMAND, prints the answer.
"""
import asyncio
import os
import signal
import struct
import sys

NFS_PROGRAM, NFS_V3 = 100003, 3
NFS3ERR_JUKEBOX = 10008
LAST = 0x80000000
PROCS = ["NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ", "WRITE",
         "CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK",
         "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "COMMIT"]
# the words of each procedure's resfail after the status, all FALSE: one per
# post_op_attr, two per wcc_data (RFC 1813 section 3.3)
RESFAIL_WORDS = {"GETATTR": 0, "SETATTR": 2, "LOOKUP": 1, "ACCESS": 1, "READLINK": 1,
                 "READ": 1, "WRITE": 2, "CREATE": 2, "MKDIR": 2, "SYMLINK": 2, "MKNOD": 2,
                 "REMOVE": 2, "RMDIR": 2, "RENAME": 4, "LINK": 3, "READDIR": 1,
                 "READDIRPLUS": 1, "FSSTAT": 1, "FSINFO": 1, "PATHCONF": 1, "COMMIT": 2}


def jukebox_reply(xid, proc):
    """The record of an accepted reply to `xid`: NFS3ERR_JUKEBOX."""
    body = struct.pack(">IIIIII", xid, 1, 0, 0, 0, 0)   # REPLY, ACCEPTED, AUTH_NONE, SUCCESS
    body += struct.pack(">I", NFS3ERR_JUKEBOX) + b"\0\0\0\0" * RESFAIL_WORDS[proc]
    return struct.pack(">I", len(body) | LAST) + body


class Records:
    """Whole records out of a byte stream: feed() returns the complete ones
    (record marks included, fragments as they came)."""

    def __init__(self):
        self.buf = bytearray()
        self.pos = 0            # start of the record being assembled
        self.scan = 0           # next fragment header

    def feed(self, data):
        self.buf.extend(data)
        out = []
        while len(self.buf) - self.scan >= 4:
            (mark,) = struct.unpack_from(">I", self.buf, self.scan)
            end = self.scan + 4 + (mark & ~LAST)
            if len(self.buf) < end:
                break
            self.scan = end
            if mark & LAST:
                out.append(bytes(self.buf[:end]))
                del self.buf[:end]
                self.scan = 0
        return out


def payload(rec):
    """The record's bytes without its fragment headers."""
    out, pos = bytearray(), 0
    while pos < len(rec):
        (mark,) = struct.unpack_from(">I", rec, pos)
        n = mark & ~LAST
        out += rec[pos + 4:pos + 4 + n]
        pos += 4 + n
    return bytes(out)


class Relay:
    def __init__(self, target, log_path):
        self.target = target
        self.log = open(log_path, "a", buffering=1)
        self.faults = {}        # proc -> ["jukebox"|"drop", n]
        self.counts = {}        # proc -> [calls, jukebox, dropped]
        self.nconns = 0

    def count(self, proc, i):
        self.counts.setdefault(proc, [0, 0, 0])[i] += 1

    async def client(self, reader, writer):
        conn = self.nconns
        self.nconns += 1
        try:
            ureader, uwriter = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        drop_xids = set()

        async def calls():
            recs = Records()
            while True:
                data = await reader.read(256 * 1024)
                if not data:
                    break
                for rec in recs.feed(data):
                    p = payload(rec)
                    if len(p) >= 24:
                        xid, mtype, _rpcvers, prog, vers, procno = struct.unpack_from(">6I", p)
                        if mtype == 0 and prog == NFS_PROGRAM and vers == NFS_V3 and \
                                procno < len(PROCS):
                            proc = PROCS[procno]
                            self.count(proc, 0)
                            f = self.faults.get(proc)
                            if f and f[1] > 0:
                                f[1] -= 1
                                self.log.write("%s %d %08x %s\n" % (f[0], conn, xid, proc))
                                if f[0] == "jukebox":
                                    self.count(proc, 1)
                                    writer.write(jukebox_reply(xid, proc))
                                    await writer.drain()
                                    continue
                                drop_xids.add(xid)
                                self.count(proc, 2)
                    uwriter.write(rec)
                    await uwriter.drain()
            if uwriter.can_write_eof():
                uwriter.write_eof()

        async def replies():
            recs = Records()
            while True:
                data = await ureader.read(256 * 1024)
                if not data:
                    break
                for rec in recs.feed(data):
                    p = payload(rec)
                    if len(p) >= 4 and struct.unpack_from(">I", p)[0] in drop_xids:
                        drop_xids.discard(struct.unpack_from(">I", p)[0])
                        continue
                    writer.write(rec)
                    await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()

        try:
            await asyncio.gather(calls(), replies())
        except (ConnectionError, OSError):
            pass
        for w in (writer, uwriter):
            w.close()

    def command(self, words):
        if words == ["clear"]:
            self.faults.clear()
            return "ok\n"
        if words == ["counts"]:
            return "".join("%s calls %d jukebox %d dropped %d\n" % (p, c[0], c[1], c[2])
                           for p, c in sorted(self.counts.items()))
        if len(words) == 3 and words[0] in ("jukebox", "drop") and words[1] in RESFAIL_WORDS \
                and words[2].isdigit():
            self.faults[words[1]] = [words[0], int(words[2])]
            return "ok\n"
        return "error unknown command\n"

    async def control(self, reader, writer):
        words = (await reader.readline()).decode().split()
        try:
            writer.write(self.command(words).encode())
            await writer.drain()
        except (ConnectionError, OSError):
            pass
        writer.close()


async def relay_main(port, target, ctl_path, log_path):
    relay = Relay(target, log_path)
    server = await asyncio.start_server(relay.client, "127.0.0.1", port)
    if os.path.exists(ctl_path):
        os.unlink(ctl_path)
    ctl = await asyncio.start_unix_server(relay.control, ctl_path)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with ctl:
        await stop.wait()
    server.close()


async def ctl_main(path, words):
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write((" ".join(words) + "\n").encode())
    await writer.drain()
    sys.stdout.write((await reader.read()).decode())
    writer.close()


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "relay":
        host, tport = sys.argv[3].rsplit(":", 1)
        asyncio.run(relay_main(int(sys.argv[2]), (host, int(tport)), sys.argv[4], sys.argv[5]))
        return 0
    if len(sys.argv) >= 4 and sys.argv[1] == "ctl":
        asyncio.run(ctl_main(sys.argv[2], sys.argv[3:]))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
