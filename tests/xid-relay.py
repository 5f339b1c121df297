#!/usr/bin/env python3
"""xid-relay.py: a TCP relay in front of an ONC RPC server (NFS over TCP) that
records the XID of every call per connection and resets a chosen connection
on command, for end-to-end tests of nfscached's upstream connections.

  xid-relay.py relay LISTEN_PORT TARGET_HOST:PORT DELAY_MS RATE_MIB_S LOG CTL_SOCKET
  xid-relay.py ctl CTL_SOCKET COMMAND...

relay: listens on 127.0.0.1:LISTEN_PORT; every connection it accepts gets the
next number from 0 and a connection to TARGET.  Bytes go both ways, each chunk
DELAY_MS after it was read (a one-way delay; order kept, any number in flight),
and the server's bytes, all connections together, at most RATE_MIB_S MiB/s
(0: no limit), so that a copy lasts long enough whatever the client keeps in
flight.
Every call record from the client (RFC 5531 record marking, section 11) is
written to LOG as one line

    call CONN XID SIG

where SIG is a digest of the program, version, procedure and arguments (the
credential and verifier left out: a call sent again carries a new AUTH_SYS
stamp), so that two lines with one XID and two SIGs are two different calls
under one XID.  "accept CONN" and "reset CONN" lines say when connections come
and go.  Commands on the control socket, one line each, answered with lines:

    conns          "CONN calls N open 0|1" per connection
    reset CONN [HOLD_MS]
                   when the next call arrives on CONN, drop it and close both
                   sides of CONN with a TCP reset (so that a call is in flight
                   there); with HOLD_MS, stop listening that long from then
                   on (new connections are refused).  "ok" once done, or
                   "error ..." (no such open connection, no call within 5 s)

SIGTERM exits 0.  ctl: sends COMMAND, prints the answer.
"""
import asyncio
import hashlib
import os
import signal
import socket
import struct
import sys


class Relay:
    def __init__(self, target, delay_s, rate_bps, log_path, port):
        self.target = target
        self.rate_bps = rate_bps
        self.free_at = 0.0       # when the server's bytes queued so far are paced out
        self.port = port
        self.server = None
        self.delay_s = delay_s
        self.log = open(log_path, "a", buffering=1)
        self.conns = []          # [{"calls": n, "open": bool, "socks": [...]}]

    def record(self, line):
        self.log.write(line + "\n")

    async def pump(self, reader, writer, parse=None, rate_bps=0):
        """Copy reader to writer, each chunk delay_s after it was read, at
        most rate_bps bytes a second (0: no limit)."""
        loop = asyncio.get_running_loop()
        queue = asyncio.Queue()

        async def deliver():
            while True:
                due, data = await queue.get()
                if data is None:
                    break
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()

        task = asyncio.ensure_future(deliver())
        try:
            while True:
                data = await reader.read(256 * 1024)
                if not data:
                    break
                if parse:
                    parse(data)
                due = loop.time() + self.delay_s
                if rate_bps:
                    due = max(due, self.free_at)
                    self.free_at = due + len(data) / rate_bps
                queue.put_nowait((due, data))
        except (ConnectionError, OSError):
            pass
        queue.put_nowait((0, None))
        try:
            await task
        except (ConnectionError, OSError):
            pass

    def parser(self, conn):
        """A parse function for the client's bytes on connection `conn`."""
        buf = bytearray()
        record = bytearray()
        entry = self.conns[conn]

        def parse(data):
            buf.extend(data)
            while len(buf) >= 4:
                (mark,) = struct.unpack(">I", buf[:4])
                size = mark & 0x7FFFFFFF
                if len(buf) < 4 + size:
                    return
                record.extend(buf[4:4 + size])
                del buf[:4 + size]
                if mark & 0x80000000:
                    self.call(conn, entry, bytes(record))
                    record.clear()
        return parse

    def call(self, conn, entry, rec):
        if len(rec) < 32:
            self.record("short %d %d" % (conn, len(rec)))
            return
        xid, direction = struct.unpack(">II", rec[:8])
        if direction != 0:
            return
        head = rec[8:24]                       # rpcvers, prog, vers, proc
        off = 24
        for _ in range(2):                     # cred, then verf: flavor, length, body
            (length,) = struct.unpack(">I", rec[off + 4:off + 8])
            off += 8 + ((length + 3) & ~3)
        sig = hashlib.md5(head + rec[off:]).hexdigest()[:16]
        entry["calls"] += 1
        self.record("call %d %08x %s" % (conn, xid, sig))
        if entry.get("armed"):
            self.reset(conn)

    async def client(self, reader, writer):
        conn = len(self.conns)
        entry = {"calls": 0, "open": True, "socks": [writer.get_extra_info("socket")]}
        self.conns.append(entry)
        self.record("accept %d" % conn)
        try:
            ureader, uwriter = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            entry["open"] = False
            return
        entry["socks"].append(uwriter.get_extra_info("socket"))
        entry["writers"] = [writer, uwriter]
        await asyncio.gather(self.pump(reader, uwriter, self.parser(conn)),
                             self.pump(ureader, writer, rate_bps=self.rate_bps))
        for w in (writer, uwriter):
            w.close()
        entry["open"] = False

    def reset(self, conn):
        entry = self.conns[conn]
        entry["armed"] = None
        for s in entry["socks"]:
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
        for w in entry.get("writers", []):
            w.transport.abort()
        entry["open"] = False
        self.record("reset %d" % conn)
        if entry.get("hold_s"):
            self.server.close()
            self.record("refusing")
            asyncio.get_running_loop().call_later(
                entry["hold_s"], lambda: asyncio.ensure_future(self.listen()))
        entry["done"].set_result(True)

    async def listen(self):
        self.server = await asyncio.start_server(self.client, "127.0.0.1", self.port)
        self.record("listening")

    async def arm(self, conn, hold_ms):
        if conn < 0 or conn >= len(self.conns) or not self.conns[conn]["open"]:
            return "error no open connection %d" % conn
        entry = self.conns[conn]
        entry["hold_s"] = hold_ms / 1000.0
        entry["done"] = asyncio.get_running_loop().create_future()
        entry["armed"] = True
        try:
            await asyncio.wait_for(entry["done"], 5)
        except asyncio.TimeoutError:
            entry["armed"] = None
            return "error no call on %d within 5 s" % conn
        return "ok"

    async def control(self, reader, writer):
        line = (await reader.readline()).decode().split()
        if line == ["conns"]:
            out = "".join("%d calls %d open %d\n" % (i, e["calls"], 1 if e["open"] else 0)
                          for i, e in enumerate(self.conns))
        elif len(line) in (2, 3) and line[0] == "reset" and all(w.isdigit() for w in line[1:]):
            out = await self.arm(int(line[1]), int(line[2]) if len(line) == 3 else 0) + "\n"
        else:
            out = "error unknown command\n"
        try:
            writer.write(out.encode())
            await writer.drain()
        except (ConnectionError, OSError):
            pass
        writer.close()


async def relay_main(port, target, delay_ms, rate_mib_s, log_path, ctl_path):
    relay = Relay(target, delay_ms / 1000.0, rate_mib_s * 1048576.0, log_path, port)
    await relay.listen()
    if os.path.exists(ctl_path):
        os.unlink(ctl_path)
    ctl = await asyncio.start_unix_server(relay.control, ctl_path)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with ctl:
        await stop.wait()
    relay.server.close()


async def ctl_main(path, words):
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write((" ".join(words) + "\n").encode())
    await writer.drain()
    sys.stdout.write((await reader.read()).decode())
    writer.close()


def main():
    if len(sys.argv) == 8 and sys.argv[1] == "relay":
        host, tport = sys.argv[3].rsplit(":", 1)
        asyncio.run(relay_main(int(sys.argv[2]), (host, int(tport)), float(sys.argv[4]),
                               float(sys.argv[5]), sys.argv[6], sys.argv[7]))
        return 0
    if len(sys.argv) >= 4 and sys.argv[1] == "ctl":
        asyncio.run(ctl_main(sys.argv[2], sys.argv[3:]))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
