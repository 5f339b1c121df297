#!/usr/bin/env python3
"""resident_races.py - READs of many small files through nfscached while
the files change in the export and an administrator drops and culls the
cache, for tests/e2e/86-resident-races.sh.

    resident_races.py --port P --nfscachectl BIN --ctl SOCK --export-dir DIR
                      [--dir NAME] [--count N] [--seed S] [--change N]
                      round [--conns N] [--depth N] [--admin]
    resident_races.py ... reread

The export (DIR as /export) holds NAME/f00000.. (--count files).  First
--change of them, picked by --seed, are rewritten in the export itself
with random bytes (sizes 0, 100, 4096, 5000, 9000: smaller, the same and
larger than a page, and over two pages); then the md5 of every file as the
export holds it is taken.

round   --conns connections each READ every file whole (offset 0, 16384
        bytes: beyond the largest size) in an order of its own (seeded),
        --depth calls in flight on each.  With --admin another thread runs
        `nfscachectl invalidate --all`, `nfscachectl cull` and
        `nfscachectl invalidate /export/NAME/FILE` (a file picked by the
        seed) in turns, 20 ms apart, until the readers are done.
reread  one connection READs every file whole in name order, one call in
        flight.

Output, "KEY: value" lines: changed (files rewritten), reads (replies),
read_errors (replies other than NFS3_OK, transport errors), wrong_bytes
(NFS3_OK replies whose bytes are not the export's), first_error; for round
--admin: admin_calls, admin_errors, first_admin_error.  Exit status 0 when
every reply was NFS3_OK with the export's bytes and every nfscachectl call
succeeded, 1 otherwise, 2 on a usage or set-up error.
"""

import argparse
import hashlib
import os
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rpc  # noqa: E402

SIZES = (0, 100, 4096, 5000, 9000)
READ_COUNT = 16384


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--nfscachectl", required=True)
    p.add_argument("--ctl", required=True)
    p.add_argument("--export-dir", required=True)
    p.add_argument("--dir", default="r")
    p.add_argument("--count", type=int, default=300)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--change", type=int, default=0)
    p.add_argument("--timeout", type=float, default=30.0)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("round")
    r.add_argument("--conns", type=int, default=4)
    r.add_argument("--depth", type=int, default=16)
    r.add_argument("--admin", action="store_true")
    sub.add_parser("reread")
    return p.parse_args(argv)


class Tally:
    """Replies of all readers: counts and the first error (thread safe)."""

    def __init__(self, want):
        self.want = want
        self.lock = threading.Lock()
        self.reads = self.errors = self.wrong = 0
        self.first = ""

    def bad(self, what, wrong=False):
        with self.lock:
            if wrong:
                self.wrong += 1
            else:
                self.errors += 1
            if not self.first:
                self.first = what

    def reply(self, name, rep):
        d = rpc.decode_read(rep.body)
        with self.lock:
            self.reads += 1
        if d["nfs_status"] != "NFS3_OK":
            self.bad("%s: %s" % (name, d["nfs_status"]))
        elif d["md5"] != self.want[name][0]:
            self.bad("%s: %d bytes with md5 %s, the export holds %d with md5 %s" %
                     (name, d["data_len"], d["md5"], self.want[name][1],
                      self.want[name][0]), wrong=True)


def change(args, names, rnd):
    """--change files rewritten in the export; their names."""
    d = os.path.join(args.export_dir, args.dir)
    picked = sorted(rnd.sample(names, min(args.change, len(names))))
    for n in picked:
        with open(os.path.join(d, n), "wb") as f:
            f.write(os.urandom(rnd.choice(SIZES)))
    return picked


def export_md5(args, names):
    want = {}
    for n in names:
        with open(os.path.join(args.export_dir, args.dir, n), "rb") as f:
            data = f.read()
        want[n] = (hashlib.md5(data).hexdigest(), len(data))
    return want


def handles(args, names):
    c = rpc.Conn("127.0.0.1", args.port, timeout=args.timeout)
    st, root = c.mnt("/export")
    if st != 0:
        raise rpc.RpcError("MNT /export: status %d" % st)
    fhs = {}
    rep, st = c.nfs(rpc.NFSPROC3_LOOKUP, rpc.lookup_args(root, args.dir))
    if st != "NFS3_OK":
        raise rpc.RpcError("LOOKUP %s: %s" % (args.dir, st))
    dirfh = bytes.fromhex(rpc.decode_lookup(rep.body)["fh"])
    for n in names:
        rep, st = c.nfs(rpc.NFSPROC3_LOOKUP, rpc.lookup_args(dirfh, n))
        if st != "NFS3_OK":
            raise rpc.RpcError("LOOKUP %s/%s: %s" % (args.dir, n, st))
        fhs[n] = bytes.fromhex(rpc.decode_lookup(rep.body)["fh"])
    c.close()
    return fhs


def reader(args, fhs, order, depth, tally):
    try:
        c = rpc.Conn("127.0.0.1", args.port, timeout=args.timeout)
        p = rpc.Pipeline(c, depth, tally.reply)
        for n in order:
            p.send(rpc.NFSPROC3_READ, rpc.read_args(fhs[n], 0, READ_COUNT), n)
        p.drain()
        c.close()
    except (rpc.RpcError, OSError) as e:
        tally.bad("connection: %s" % e)


class Admin(threading.Thread):
    """invalidate --all, cull, invalidate PATH in turns until stopped."""

    def __init__(self, args, names, rnd):
        super().__init__()
        self.args, self.names, self.rnd = args, names, rnd
        self.stop = threading.Event()
        self.calls = self.errors = 0
        self.first = ""

    def run(self):
        k = 0
        while not self.stop.is_set():
            turn = k % 3
            if turn == 0:
                a = ["invalidate", "--all"]
            elif turn == 1:
                a = ["cull"]
            else:
                a = ["invalidate", "/export/%s/%s" % (self.args.dir, self.rnd.choice(self.names))]
            try:
                r = subprocess.run([self.args.nfscachectl, "-s", self.args.ctl] + a,
                                   capture_output=True, text=True, timeout=30)
                rc, msg = r.returncode, (r.stdout + r.stderr).strip()
            except subprocess.TimeoutExpired:
                rc, msg = -1, "no answer in 30 s"
            self.calls += 1
            if rc != 0:
                self.errors += 1
                if not self.first:
                    self.first = "%s: exit %d: %s" % (" ".join(a), rc, msg)
            k += 1
            self.stop.wait(0.02)


def main(argv):
    args = parse(argv)
    names = ["f%05d" % i for i in range(args.count)]
    rnd = random.Random(args.seed)
    picked = change(args, names, rnd)
    want = export_md5(args, names)
    try:
        fhs = handles(args, names)
    except (rpc.RpcError, OSError) as e:
        print("error: %s" % e)
        return 2
    tally = Tally(want)
    admin = None
    if args.cmd == "round":
        orders = []
        for k in range(args.conns):
            o = list(names)
            random.Random(args.seed * 100 + k).shuffle(o)
            orders.append(o)
        threads = [threading.Thread(target=reader, args=(args, fhs, o, args.depth, tally))
                   for o in orders]
        if args.admin:
            admin = Admin(args, names, rnd)
            admin.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if admin:
            admin.stop.set()
            admin.join()
    else:
        reader(args, fhs, names, 1, tally)
    print("changed: %s" % " ".join("%s=%d" % (n, want[n][1]) for n in picked))
    print("reads: %d" % tally.reads)
    print("read_errors: %d" % tally.errors)
    print("wrong_bytes: %d" % tally.wrong)
    print("first_error: %s" % tally.first)
    if admin:
        print("admin_calls: %d" % admin.calls)
        print("admin_errors: %d" % admin.errors)
        print("first_admin_error: %s" % admin.first)
    bad = tally.errors or tally.wrong or (admin and admin.errors)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
