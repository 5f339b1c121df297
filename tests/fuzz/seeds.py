#!/usr/bin/env python3
"""seeds.py - writes the seed corpora of the libFuzzer targets in tests/fuzz/.

  seeds.py OUTDIR

writes OUTDIR/fuzz_record, OUTDIR/fuzz_call, OUTDIR/fuzz_args, OUTDIR/fuzz_drc
and OUTDIR/fuzz_ctl, one file per seed, in the input layout each target
documents at its top: valid calls of every NFSv3 and MOUNTv3 procedure
(encoded by tests/rpc.py), their records split into fragments several ways,
call headers with AUTH_SYS and AUTH_NONE credentials, sequences of duplicate
request cache operations, and every control command.  Deterministic: the
same files every run.
"""
import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import rpc  # noqa: E402  (tests/rpc.py)

FH = bytes(range(1, 33))           # a 32-byte file handle
FH64 = bytes(range(64))            # the largest one
NFS3_PROC_COUNT = 22


def proc_args():
    """(name, program, procedure, argument bytes) for every procedure, some
    several times with their variants."""
    P = rpc.Packer
    nfs, mnt = rpc.NFS_PROGRAM, rpc.MOUNT_PROGRAM
    sattr_all = (P().boolean(True).u32(0o640).boolean(True).u32(1000).boolean(True).u32(100)
                 .boolean(True).u64(4096).u32(2).u32(5).u32(6).u32(1).bytes())
    guard = P().boolean(True).u32(7).u32(8).bytes()
    out = [
        ("NULL", nfs, 0, b""),
        ("GETATTR", nfs, 1, rpc.getattr_args(FH)),
        ("GETATTR", nfs, 1, rpc.getattr_args(FH64)),
        ("GETATTR", nfs, 1, rpc.getattr_args(b"")),
        ("SETATTR", nfs, 2, rpc.setattr_args(FH, mode=0o644, size=10)),
        ("SETATTR", nfs, 2, P().opaque(FH).raw(sattr_all).raw(guard).bytes()),
        ("LOOKUP", nfs, 3, rpc.lookup_args(FH, "name")),
        ("LOOKUP", nfs, 3, rpc.lookup_args(FH, "n" * 255)),
        ("LOOKUP", nfs, 3, rpc.lookup_args(FH, "")),
        ("ACCESS", nfs, 4, rpc.access_args(FH, 0x3f)),
        ("READLINK", nfs, 5, rpc.readlink_args(FH)),
        ("READ", nfs, 6, rpc.read_args(FH, 0, 4096)),
        ("READ", nfs, 6, rpc.read_args(FH, (1 << 63) - 1, 0x7fffffff)),
        ("WRITE", nfs, 7, rpc.write_args(FH, 0, b"hello, world", stable=rpc.UNSTABLE)),
        ("WRITE", nfs, 7, rpc.write_args(FH, 4096, b"x" * 333, stable=rpc.FILE_SYNC)),
        ("WRITE", nfs, 7, rpc.write_args(FH, 0, b"", stable=rpc.DATA_SYNC)),
        ("CREATE", nfs, 8, rpc.create_args(FH, "file")),
        ("CREATE", nfs, 8, rpc.diropargs3(FH, "g") + P().u32(rpc.GUARDED).raw(sattr_all).bytes()),
        ("CREATE", nfs, 8, rpc.diropargs3(FH, "x") + P().u32(rpc.EXCLUSIVE).fixed(b"verf0001").bytes()),
        ("MKDIR", nfs, 9, rpc.mkdir_args(FH, "dir")),
        ("SYMLINK", nfs, 10, rpc.symlink_args(FH, "link", "../target/path")),
        ("SYMLINK", nfs, 10, rpc.symlink_args(FH, "long", "t" * 1000, mode=0o777)),
        ("REMOVE", nfs, 12, rpc.remove_args(FH, "file")),
        ("RMDIR", nfs, 13, rpc.rmdir_args(FH, "dir")),
        ("RENAME", nfs, 14, rpc.rename_args(FH, "a", FH64, "b")),
        ("LINK", nfs, 15, rpc.link_args(FH, FH64, "hard")),
        ("READDIR", nfs, 16, rpc.readdir_args(FH)),
        ("READDIR", nfs, 16, rpc.readdir_args(FH, cookie=12, verf=b"cookieve", count=1 << 20)),
        ("READDIRPLUS", nfs, 17, rpc.readdirplus_args(FH)),
        ("FSSTAT", nfs, 18, rpc.fh3(FH)),
        ("FSINFO", nfs, 19, rpc.fh3(FH)),
        ("PATHCONF", nfs, 20, rpc.fh3(FH)),
        ("COMMIT", nfs, 21, rpc.commit_args(FH)),
        ("COMMIT", nfs, 21, rpc.commit_args(FH, 1 << 63, 0xffffffff)),
        ("MOUNT_NULL", mnt, 0, b""),
        ("MNT", mnt, 1, rpc.dirpath_args("/export")),
        ("MNT", mnt, 1, rpc.dirpath_args("/" + "p" * 1000)),
        ("DUMP", mnt, 2, b""),
        ("UMNT", mnt, 3, rpc.dirpath_args("/export")),
        ("UMNTALL", mnt, 4, b""),
        ("EXPORT", mnt, 5, b""),
        # names holding a NUL byte: refused, never forwarded cut short
        ("LOOKUP", nfs, 3, rpc.lookup_args(FH, "victim\0JUNK")),
        ("SYMLINK", nfs, 10, rpc.symlink_args(FH, "link", "a\0b")),
        ("MNT", mnt, 1, rpc.dirpath_args("/export\0x")),
    ]
    for ftype in (rpc.NF3REG, rpc.NF3DIR, rpc.NF3BLK, rpc.NF3CHR, rpc.NF3LNK, rpc.NF3SOCK,
                  rpc.NF3FIFO):
        out.append(("MKNOD", nfs, 11, rpc.mknod_args(FH, "node", ftype, spec=(1, 3))))
    return out


def calls():
    """Whole call records (header and arguments) of every procedure."""
    out = []
    for i, (name, prog, proc, args) in enumerate(proc_args()):
        xid = 0x1000 + i
        out.append((name + "-sys", rpc.call_header(xid, prog, 3, proc, uid=1000, gid=100,
                                                   gids=(4, 24, 27)) + args))
        out.append((name + "-none", rpc.call_header(xid, prog, 3, proc,
                                                    cred_flavor=rpc.AUTH_NONE) + args))
    hdr = rpc.call_header
    out += [
        ("gids16", hdr(1, rpc.NFS_PROGRAM, 3, 0, gids=tuple(range(16)))),
        ("gids17", hdr(2, rpc.NFS_PROGRAM, 3, 0, gids=tuple(range(17)))),
        ("name255", hdr(3, rpc.NFS_PROGRAM, 3, 0,
                        cred_body=rpc.auth_sys_body(machinename="m" * 255))),
        ("name-nul", hdr(4, rpc.NFS_PROGRAM, 3, 0,
                         cred_body=rpc.auth_sys_body(machinename=b"ab\0cd"))),
        ("rpcvers3", hdr(5, rpc.NFS_PROGRAM, 3, 0, rpcvers=3)),
        ("reply", hdr(6, rpc.NFS_PROGRAM, 3, 0, msg_type=1)),
        ("auth-dh", hdr(7, rpc.NFS_PROGRAM, 3, 1, cred_flavor=rpc.AUTH_DH, cred_body=b"\x11" * 24,
                        verf_flavor=rpc.AUTH_DH, verf_body=b"\x22" * 12)),
        ("verf-sys", hdr(8, rpc.NFS_PROGRAM, 3, 0, verf_flavor=rpc.AUTH_SYS, verf_body=b"\0" * 8)),
        ("nfs4", hdr(9, rpc.NFS_PROGRAM, 4, 0)),
        ("truncated", hdr(10, rpc.NFS_PROGRAM, 3, 1)[:36]),
    ]
    return out


def write(outdir, target, name, data):
    d = os.path.join(outdir, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def record_seed(stream, max_record=4096, sizes=b""):
    """fuzz_record's layout: max_record - 1 (2 bytes), k, stream, k sizes."""
    return struct.pack(">HB", (max_record - 1) % 65536, len(sizes)) + stream + sizes


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: seeds.py OUTDIR")
    outdir = sys.argv[1]
    rnd = random.Random(5531)
    all_calls = calls()

    for name, rec in all_calls:
        write(outdir, "fuzz_call", name, rec)

    for i, (name, prog, proc, args) in enumerate(proc_args()):
        pick = proc if prog == rpc.NFS_PROGRAM else NFS3_PROC_COUNT + proc
        write(outdir, "fuzz_args", "%s-%d" % (name, i), bytes([pick]) + args)

    # records: one call in 1..5 fragments, aligned or not; several records
    # back to back; an empty first fragment; read in pieces of many sizes
    small = [c for c in all_calls if len(c[1]) < 600]
    for i, (name, rec) in enumerate(small[::3]):
        for frags, align in ((1, 4), (3, 4), (5, 1), (2, 7)):
            stream = rpc.record(rec, fragments=frags, align=align)
            sizes = bytes(rnd.randrange(256) for _ in range(rnd.randrange(16)))
            write(outdir, "fuzz_record", "%s-%dx%d" % (name, frags, align),
                  record_seed(stream, sizes=sizes))
    pipeline = b"".join(rpc.record(rec, fragments=2) for _, rec in small[:6])
    write(outdir, "fuzz_record", "pipeline", record_seed(pipeline, sizes=b"\x00\x03\x10\xff"))
    write(outdir, "fuzz_record", "empty-first",
          record_seed(struct.pack(">I", 0) + rpc.record(small[0][1], 4)))
    write(outdir, "fuzz_record", "empty-record", record_seed(struct.pack(">I", rpc.LAST_FRAGMENT) * 3))
    write(outdir, "fuzz_record", "too-big",
          record_seed(rpc.record(small[1][1]), max_record=64, sizes=b"\x01"))
    write(outdir, "fuzz_record", "frag-2g", record_seed(struct.pack(">I", 0xffffffff) + b"abcd"))

    # duplicate request cache: op (lookup 0/1, complete 2, abandon 3) and
    # their bytes, retransmissions included
    for i in range(12):
        ops = bytearray([rnd.randrange(1, 17)])
        for _ in range(rnd.randrange(10, 60)):
            op = rnd.randrange(4)
            if op < 2:
                ops += bytes([op, rnd.randrange(8), rnd.randrange(256), rnd.randrange(40)])
            elif op == 2:
                n = rnd.randrange(64)
                ops += bytes([2, rnd.randrange(256), n]) + bytes(rnd.randrange(256) for _ in range(n))
            else:
                ops += bytes([3, rnd.randrange(256)])
        write(outdir, "fuzz_drc", "ops-%d" % i, bytes(ops))

    # control commands, whole and in pieces; k = 0: one read
    cmds = [b"status\n", b"stats\n", b"stats reset\n", b"stats --json\n", b"stats --prometheus\n",
            b"stats exports\n", b"stats exports --json\n", b"flush\n", b"invalidate --all\n",
            b"invalidate /export/dir/file\n", b"cull\n", b"  status \t\r\n", b"status",
            b"bogus command\n", b"\n", b"a b c d e f g h i j\n", b"stats\0reset\n",
            b"x" * 1100]
    for i, c in enumerate(cmds):
        write(outdir, "fuzz_ctl", "cmd-%d" % i, b"\x00" + c)
        write(outdir, "fuzz_ctl", "cmd-%d-split" % i, b"\x03" + c + b"\x00\x02\x05")


if __name__ == "__main__":
    main()
